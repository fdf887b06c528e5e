package proxy

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

// fillShop puts one customer, order, product and setting in the tables
// setupShop created, rows on both clusters of the sharded groups.
func fillShop(t *testing.T, c *pgx.Conn) {
	t.Helper()
	for _, s := range []string{
		"TRUNCATE customers, orders, countries",
		"TRUNCATE products",
		"TRUNCATE settings",
		"INSERT INTO orders (id, customer_id, total) VALUES (1, 1, 1), (2, 2, 2), (3, 3, 3), (4, 4, 4), (5, 5, 5), (6, 6, 6)",
		"INSERT INTO products (sku, name) VALUES ('a', 'a'), ('b', 'b'), ('c', 'c'), ('d', 'd'), ('e', 'e'), ('f', 'f')",
		"INSERT INTO settings VALUES ('k', 'v')",
	} {
		mustExec(t, c, s)
	}
}

// tableRows counts a table's rows on each cluster; -1 where it does not
// exist.
func tableRows(t *testing.T, table string) []int {
	t.Helper()
	out := make([]int, len(env.Clusters))
	for i, cl := range env.Clusters {
		out[i] = -1
		if count(t, cl.DSN("shop"), "SELECT count(*) FROM pg_tables WHERE schemaname = 'public' AND tablename = $1", table) == 1 {
			out[i] = count(t, cl.DSN("shop"), "SELECT count(*) FROM "+table)
		}
	}
	return out
}

func noPreparedLeft(t *testing.T) {
	t.Helper()
	for _, cl := range env.Clusters {
		if n := count(t, cl.DSN("shop"), "SELECT count(*) FROM pg_prepared_xacts"); n != 0 {
			t.Fatalf("%d prepared transactions left on %s", n, cl.Name)
		}
	}
}

// TestMultiGroupTruncateAndDrop: TRUNCATE and DROP TABLE naming tables of
// three groups (by_customer and catalog on both clusters, main's settings
// on pg0) run on every cluster with that cluster's tables, in the simple
// and the extended protocol (unnamed, and prepared with Describe), in a
// transaction block or alone.
func TestMultiGroupTruncateAndDrop(t *testing.T) {
	p := startProxy(t, shopTopology(""), nil)
	c := setupShop(t, p)
	ctx := context.Background()
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeExec, pgx.QueryExecModeCacheStatement} {
		t.Run("truncate/"+mode.String(), func(t *testing.T) {
			fillShop(t, c)
			if orders := tableRows(t, "orders"); orders[0] == 0 || orders[1] == 0 {
				t.Fatalf("orders rows per cluster %v: the test needs rows on both", orders)
			}
			// Rolled back in a transaction block: nothing changes.
			tx, err := c.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Exec(ctx, "TRUNCATE orders, products, settings RESTART IDENTITY", mode); err != nil {
				t.Fatal(err)
			}
			if err := tx.Rollback(ctx); err != nil {
				t.Fatal(err)
			}
			if got := tableRows(t, "settings"); got[0] != 1 {
				t.Fatalf("settings after ROLLBACK: %v", got)
			}
			tag, err := c.Exec(ctx, "TRUNCATE orders, products, settings RESTART IDENTITY", mode)
			if err != nil {
				t.Fatal(err)
			}
			if tag.String() != "TRUNCATE TABLE" {
				t.Fatalf("tag %q", tag)
			}
			for table, want := range map[string][]int{"orders": {0, 0}, "products": {0, 0}, "settings": {0, -1}} {
				if got := tableRows(t, table); got[0] != want[0] || got[1] != want[1] {
					t.Fatalf("%s rows per cluster %v, want %v", table, got, want)
				}
			}
			noPreparedLeft(t)
		})
	}
	t.Run("drop", func(t *testing.T) {
		fillShop(t, c)
		tag, err := c.Exec(ctx, "DROP TABLE orders, products, settings")
		if err != nil {
			t.Fatal(err)
		}
		if tag.String() != "DROP TABLE" {
			t.Fatalf("tag %q", tag)
		}
		for _, table := range []string{"orders", "products", "settings"} {
			if got := tableRows(t, table); got[0] != -1 || got[1] != -1 {
				t.Fatalf("%s per cluster after DROP: %v", table, got)
			}
		}
		// pgbench -i's first statement, when nothing is there.
		mustExec(t, c, "DROP TABLE IF EXISTS orders, products, settings")
		noPreparedLeft(t)
	})
}

// TestMultiGroupDDLFailureIsAtomic: when one cluster's part fails (a
// table missing there), the parts that ran elsewhere are rolled back:
// every table and row is still in place on every cluster.
func TestMultiGroupDDLFailureIsAtomic(t *testing.T) {
	p := startProxy(t, shopTopology(""), nil)
	c := setupShop(t, p)
	fillShop(t, c)
	// products disappears from pg1 only: pg0, which runs first, succeeds.
	pg1 := connect(t, env.Clusters[1].DSN("shop"))
	mustExec(t, pg1, "DROP TABLE products")
	before := map[string][]int{}
	for _, table := range []string{"orders", "products", "settings"} {
		before[table] = tableRows(t, table)
	}
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeExec} {
		for _, sql := range []string{
			"TRUNCATE orders, products, settings",
			"DROP TABLE orders, products, settings",
			"DROP TABLE settings, products CASCADE",
		} {
			_, err := c.Exec(context.Background(), sql, mode)
			if sqlstate(err) != "42P01" {
				t.Fatalf("%s (%s): %v, want 42P01 from pg1", sql, mode, err)
			}
			for table, want := range before {
				if got := tableRows(t, table); got[0] != want[0] || got[1] != want[1] {
					t.Fatalf("%s (%s): %s rows per cluster %v, want %v", sql, mode, table, got, want)
				}
			}
		}
	}
	noPreparedLeft(t)
	// The session carries on.
	mustExec(t, c, "SELECT 1")
}
