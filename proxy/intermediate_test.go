package proxy

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// interJoin joins two groups on a non-key column: the proxy computes it on
// the coordinator (pg0) over intermediate results. Pulls in order:
// customers from pg0 (INSERT ... SELECT on the coordinator) and pg1 (binary
// COPY), then products from pg0 and pg1.
const interJoin = "SELECT count(*) FROM customers c JOIN products p ON p.name = c.name"

// startInter starts a proxy with pool size 1 and the given
// proxy.intermediate section over the shop tables, loaded with 100
// customers and 100 products of the same names.
func startInter(t *testing.T, limits string) (*testProxy, *pgx.Conn) {
	t.Helper()
	extra := ""
	if limits != "" {
		extra = "proxy:\n  intermediate: { " + limits + " }\n"
	}
	p := startProxy(t, shopTopology(extra), func(c *Config) { c.PoolSize = 1 })
	c := setupShop(t, p)
	var vals, prods []string
	for id := 1; id <= 100; id++ {
		vals = append(vals, fmt.Sprintf("(%d, 'n%d')", id, id))
		prods = append(prods, fmt.Sprintf("('s%d', 'n%d')", id, id))
	}
	mustExec(t, c, "INSERT INTO customers (id, name) VALUES "+strings.Join(vals, ", "))
	mustExec(t, c, "INSERT INTO products (sku, name) VALUES "+strings.Join(prods, ", "))
	return p, c
}

// clusterCount runs a count on a cluster's shop database directly.
func clusterCount(t *testing.T, cluster int, sql string) int {
	t.Helper()
	c, err := env.Clusters[cluster].Conn(context.Background(), "shop")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	var n int
	if err := c.QueryRow(context.Background(), sql).Scan(&n); err != nil {
		t.Fatalf("%s on pg%d: %v", sql, cluster, err)
	}
	return n
}

// tempPulls counts the temporary tables of intermediate results any
// session holds on the coordinator.
func tempPulls(t *testing.T) int {
	return clusterCount(t, 0, `SELECT count(*) FROM pg_class WHERE relpersistence = 't' AND relname LIKE '\_sg\_pull\_%'`)
}

// checkCarriesOn checks that the session answers the next statements, in
// both protocols, that no temporary table is left and that no backend
// connection stays leased outside a transaction.
func checkCarriesOn(t *testing.T, p *testProxy, c *pgx.Conn, what string) {
	t.Helper()
	ctx := context.Background()
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
		var n int
		if err := c.QueryRow(ctx, "SELECT count(*) FROM customers", mode).Scan(&n); err != nil || n != 100 {
			t.Fatalf("%s: next statement (%v): %d %v", what, mode, n, err)
		}
	}
	if n := tempPulls(t); n != 0 {
		t.Errorf("%s: %d temporary tables left on the coordinator", what, n)
	}
	for name, st := range poolStats(p.srv) {
		if st[0] != st[1] {
			t.Errorf("%s: cluster %s has %d connections open, %d idle", what, name, st[0], st[1])
		}
	}
}

// wantLimit checks err is the 54000 refusal naming key.
func wantLimit(t *testing.T, what string, err error, key string) {
	t.Helper()
	if sqlstate(err) != "54000" || !strings.Contains(err.Error(), "proxy.intermediate."+key) {
		t.Fatalf("%s: want 54000 naming proxy.intermediate.%s, got %v", what, key, err)
	}
}

func TestIntermediateLimits(t *testing.T) {
	ctx := context.Background()
	// Without a limit in reach the join answers.
	p, c := startInter(t, "")
	var n int
	if err := c.QueryRow(ctx, interJoin).Scan(&n); err != nil || n != 100 {
		t.Fatalf("join: %d %v", n, err)
	}
	checkCarriesOn(t, p, c, "unlimited")
	local := clusterCount(t, 0, "SELECT count(*) FROM customers")
	cases := []struct {
		name, limits, key string
	}{
		// The coordinator's own rows (INSERT ... SELECT) pass max_rows.
		{"rows_local", "max_rows: 10", "max_rows"},
		// The rows copied from pg1 pass it.
		{"rows_copy", fmt.Sprintf("max_rows: %d", local+3), "max_rows"},
		{"bytes_copy", "max_bytes: 64", "max_bytes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, c := startInter(t, tc.limits)
			for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
				what := fmt.Sprintf("%s %v", tc.name, mode)
				var n int
				wantLimit(t, what, c.QueryRow(ctx, interJoin, mode).Scan(&n), tc.key)
				checkCarriesOn(t, p, c, what)
				// Inside a transaction block the error aborts it, as any
				// error does; after ROLLBACK the session goes on.
				tx, err := c.Begin(ctx)
				if err != nil {
					t.Fatal(err)
				}
				wantLimit(t, what+" in tx", tx.QueryRow(ctx, interJoin, mode).Scan(&n), tc.key)
				if err := tx.QueryRow(ctx, "SELECT 1", mode).Scan(&n); sqlstate(err) != "25P02" {
					t.Fatalf("%s: after the error in tx: %v", what, err)
				}
				if err := tx.Rollback(ctx); err != nil {
					t.Fatal(err)
				}
				checkCarriesOn(t, p, c, what+" after tx")
			}
		})
	}
}

// TestIntermediateLimitCancels checks that a pull beyond the limit stops the
// source cluster's query (cancelled, not read to its end) and aborts the
// COPY on the coordinator.
func TestIntermediateLimitCancels(t *testing.T) {
	ctx := context.Background()
	p, c := startInter(t, "max_bytes: 100000")
	// Many rows in pg1's products: read to the end they would take seconds.
	if err := env.Clusters[1].Exec(ctx, "shop", "INSERT INTO products SELECT 'x' || g, 'big' || g FROM generate_series(1, 1000000) g"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Clusters[1].Exec(ctx, "shop", "DELETE FROM products WHERE name LIKE 'big%'") })
	log := env.Clusters[1].LogFile
	before, err := os.Stat(log)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	start := time.Now()
	wantLimit(t, "big pull", c.QueryRow(ctx, interJoin).Scan(&n), "max_bytes")
	t.Logf("refused after %v", time.Since(start))
	checkCarriesOn(t, p, c, "big pull")
	var text string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		b, err := os.ReadFile(log)
		if err != nil {
			t.Fatal(err)
		}
		if text = string(b[before.Size():]); strings.Contains(text, "canceling statement due to user request") {
			return
		}
	}
	t.Fatalf("pg1 did not cancel the pull; its log since:\n%s", text)
}
