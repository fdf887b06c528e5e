package proxy

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/shardgate/shardgate/gsi"
	"github.com/shardgate/shardgate/internal/proxytest"
	"github.com/shardgate/shardgate/keyexpr"
	"github.com/shardgate/shardgate/topology"
)

// gmTopology: gm_items sharded by customer_id, with a unique index on
// (sku, size) and a non-unique one on (sku, color), one type for both.
func gmTopology() string {
	return proxytest.Topology("shop", `groups:
  main: { unsharded: true, cluster: pg0 }
  by_customer:
    index: { name: by_customer, column: customer_id, type: bigint, function: xxhash }
    shards: { "-80": pg0, "80-": pg1 }
    tables: { gm_items: {} }
    secondary_indexes:
      gm_items_by_sku_size: { table: gm_items, columns: [sku, size], type: [text, integer], unique: true, state: active }
      gm_items_by_sku_color: { table: gm_items, columns: [sku, color], type: text, state: active }
`, env.Clusters...)
}

const gmColumns = "(customer_id bigint NOT NULL, id bigint NOT NULL, sku text, size int, color text, qty int, PRIMARY KEY (customer_id, id))"

// gmExact fails unless both lookup tables hold exactly the projection of
// gm_items (rows with a NULL column have no entry), each entry on the
// cluster its value maps to, with its generated columns equal to the
// owner's; it returns the number of unique entries.
func gmExact(t *testing.T, p *testProxy) int {
	t.Helper()
	ctx := context.Background()
	owner, lookup := map[string]int{}, map[string]int{}
	for _, cl := range env.Clusters {
		d := connect(t, cl.DSN("shop"))
		for q, m := range map[string]map[string]int{
			"SELECT 'u|' || sku || '|' || size || '|' || customer_id, 1 FROM gm_items WHERE sku IS NOT NULL AND size IS NOT NULL":   owner,
			"SELECT 'n|' || sku || '|' || color || '|' || customer_id, 1 FROM gm_items WHERE sku IS NOT NULL AND color IS NOT NULL": owner,
			"SELECT 'u|' || sku || '|' || size || '|' || customer_id, 1 FROM gm_items_by_sku_size":                                  lookup,
			"SELECT 'n|' || sku || '|' || color || '|' || customer_id, n::int FROM gm_items_by_sku_color":                           lookup,
		} {
			rows, err := d.Query(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var k string
				var n int
				if err := rows.Scan(&k, &n); err != nil {
					t.Fatal(err)
				}
				m[k] += n
			}
		}
		for _, name := range []string{"gm_items_by_sku_size", "gm_items_by_sku_color"} {
			rows, err := d.Query(ctx, "SELECT value FROM "+name)
			if err != nil {
				t.Fatal(err)
			}
			values, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				t.Fatal(err)
			}
			si := p.vs.Table("", name).LookupOf
			for _, v := range values {
				key, err := si.KeyFromValue(keyexpr.Text(v))
				if err != nil {
					t.Fatal(err)
				}
				if sh, _ := si.Lookup.Group.ShardFor(key); sh.Cluster != cl.Name {
					t.Errorf("%s entry %s is on %s, its shard is on %s", name, v, cl.Name, sh.Cluster)
				}
			}
		}
	}
	if fmt.Sprint(owner) != fmt.Sprint(lookup) {
		t.Errorf("lookup %v\nowner projection %v", lookup, owner)
	}
	n := 0
	for k := range lookup {
		if strings.HasPrefix(k, "u|") {
			n++
		}
	}
	return n
}

// TestGSIMultiColumn: indexes over two columns are maintained by INSERT
// (VALUES and SELECT), upsert, UPDATE of either column, DELETE and
// TRUNCATE; a duplicate (sku, size) anywhere in the group is the 23505 a
// Postgres unique index on (sku, size) gives (message, detail, constraint)
// while rows with a NULL column never conflict; WHERE sku = x AND size = y
// reads through the lookup in both protocols (text with quotes,
// backslashes, control characters and non-ASCII letters too); verify
// repairs a lost entry and a backfill rewrites them all (COPY:
// TestGSIMultiColumnCopy).
func TestGSIMultiColumn(t *testing.T) {
	p := startProxy(t, gmTopology(), nil)
	c := connect(t, p.dsn())
	ctx := context.Background()
	mustExec(t, c, "DROP TABLE IF EXISTS gm_items", simple)
	mustExec(t, c, "CREATE TABLE gm_items "+gmColumns, simple)
	o := connect(t, env.Clusters[0].DSN("shop"))
	for _, s := range []string{
		"DROP SCHEMA IF EXISTS gm_oracle CASCADE", "CREATE SCHEMA gm_oracle",
		"CREATE TABLE gm_oracle.gm_items " + gmColumns,
		"CREATE UNIQUE INDEX gm_items_by_sku_size ON gm_oracle.gm_items (sku, size)",
	} {
		mustExec(t, o, s)
	}
	t.Cleanup(func() { _, _ = o.Exec(context.Background(), "DROP SCHEMA IF EXISTS gm_oracle CASCADE") })
	other := keyOn(t, p, 1, false)
	both := func(sql string) (proxyErr, oracleErr error) {
		_, proxyErr = c.Exec(ctx, sql, simple)
		_, oracleErr = o.Exec(ctx, strings.Replace(sql, "gm_items", "gm_oracle.gm_items", 1))
		return
	}
	weird := "a\"b\\c\nd\te\x01 é"
	for _, sql := range []string{
		"INSERT INTO gm_items (customer_id, id, sku, size, color, qty) VALUES (1, 1, 'tee', 1, 'red', 5), (1, 2, 'tee', 2, 'red', 5), (1, 3, 'tee', NULL, 'blue', 1)",
		fmt.Sprintf("INSERT INTO gm_items (customer_id, id, sku, size, color, qty) VALUES (%d, 4, 'tee', NULL, NULL, 1), (%d, 5, NULL, 1, 'red', 1)", other, other),
		fmt.Sprintf("INSERT INTO gm_items (customer_id, id, sku, size, color, qty) VALUES (%d, 6, %s, 7, 'red', 1)", other, keyexpr.Text(weird)),
	} {
		if pe, oe := both(sql); pe != nil || oe != nil {
			t.Fatalf("%s: %v / oracle %v", sql, pe, oe)
		}
	}
	if n := gmExact(t, p); n != 3 {
		t.Fatalf("%d unique entries, want 3", n)
	}
	for _, sql := range []string{
		fmt.Sprintf("INSERT INTO gm_items (customer_id, id, sku, size, color, qty) VALUES (%d, 7, 'tee', 2, 'green', 1)", other),
		fmt.Sprintf("INSERT INTO gm_items (customer_id, id, sku, size, color, qty) VALUES (%d, 8, 'cap', 3, 'red', 1), (%d, 9, 'cap', 3, 'blue', 1)", other, other),
		"UPDATE gm_items SET size = 1 WHERE customer_id = 1 AND id = 2",
		"UPDATE gm_items SET sku = 'tee', size = 2 WHERE customer_id = 1 AND id = 3",
	} {
		pErr, oErr := both(sql)
		sameError(t, sql, pErr, oErr)
	}
	// NULLs are distinct: another (tee, NULL) and (NULL, 1) are fine.
	mustExec(t, c, fmt.Sprintf("INSERT INTO gm_items (customer_id, id, sku, size, color, qty) VALUES (%d, 10, 'tee', NULL, 'red', 1), (1, 11, NULL, 4, NULL, 1)", other), simple)

	// Reads through the index, both protocols.
	var plan []string
	rows, err := c.Query(ctx, "EXPLAIN (ROUTE) SELECT id FROM gm_items WHERE sku = 'tee' AND size = 2", simple)
	if err == nil {
		plan, err = pgx.CollectRows(rows, pgx.RowTo[string])
	}
	if err != nil || len(plan) == 0 || !strings.HasPrefix(plan[0], "Lookup gm_items_by_sku_size(sku, size) IN (('tee', 2))") {
		t.Fatalf("EXPLAIN: %v %q", err, plan)
	}
	// A stray row the index does not know, on the cluster that does not
	// own customer 1: a scatter would find it, a lookup does not.
	stray := env.Clusters[0]
	if clusterOf(t, p, 1) == stray.Name {
		stray = env.Clusters[1]
	}
	mustExec(t, connect(t, stray.DSN("shop")), "INSERT INTO gm_items VALUES (999999, 99, 'tee', 2, 'red', 1)")
	ids := func(mode pgx.QueryExecMode, sql string, args ...any) []int64 {
		t.Helper()
		rows, err := c.Query(ctx, sql, append([]any{mode}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		out, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	for _, mode := range bothModes {
		if got := ids(mode, "SELECT id FROM gm_items WHERE sku = $1 AND size = $2", "tee", 2); fmt.Sprint(got) != "[2]" {
			t.Errorf("%v: (tee, 2): ids %v, want [2]", mode, got)
		}
		if got := ids(mode, "SELECT i.id FROM gm_items i WHERE i.size = $1 AND i.sku = $2 AND qty > 0", 7, weird); fmt.Sprint(got) != "[6]" {
			t.Errorf("%v: the text with escapes: ids %v, want [6]", mode, got)
		}
		if got := ids(mode, "SELECT id FROM gm_items WHERE sku = 'tee' AND color = 'red' ORDER BY id"); fmt.Sprint(got) != "[1 2 10]" {
			t.Errorf("%v: (tee, red): ids %v, want [1 2 10]", mode, got)
		}
	}
	mustExec(t, connect(t, stray.DSN("shop")), "DELETE FROM gm_items WHERE customer_id = 999999")
	if n := gmExact(t, p); n != 3 {
		t.Fatalf("%d unique entries, want 3", n)
	}

	// Writes of either column, through the index too.
	mustExec(t, c, "UPDATE gm_items SET size = 3 WHERE sku = 'tee' AND size = 2", simple)
	mustExec(t, c, "UPDATE gm_items SET color = 'black' WHERE customer_id = 1 AND id = 1", simple)
	mustExec(t, c, "UPDATE gm_items SET sku = 'cap' WHERE customer_id = 1", simple)
	mustExec(t, c, "DELETE FROM gm_items WHERE sku = 'cap' AND size = 1", simple)
	mustExec(t, c, "INSERT INTO gm_items (customer_id, id, sku, size, color) VALUES (1, 1, 'x', 1, 'y') ON CONFLICT (customer_id, id) DO UPDATE SET qty = 9", simple)
	mustExec(t, c, "INSERT INTO gm_items (customer_id, id, sku, size, color) VALUES (1, 1, 'z', 2, 'y') ON CONFLICT (customer_id, id) DO UPDATE SET qty = 9", simple)
	mustExec(t, c, "INSERT INTO gm_items (customer_id, id, sku, size, color) SELECT g, 100 + g, 'gen', g, 'c' || (g % 2) FROM generate_series(1, 30) g", simple)
	if n := gmExact(t, p); n != 34 {
		t.Fatalf("%d unique entries, want 34", n)
	}

	// Verify repairs a lost entry; a backfill writes them all again.
	topo := proxytest.Parse(t, gmTopology())
	for _, cl := range env.Clusters {
		mustExec(t, connect(t, cl.DSN("shop")), "DELETE FROM gm_items_by_sku_size WHERE sku = 'gen' AND size = 5")
	}
	missing := verifyRepair(t, topo, "gm_items_by_sku_size", `["gen", 5]`)
	if n := gmExact(t, p); n != 34 || missing != 1 {
		t.Errorf("after verify --repair: %d entries, want 34; %d missing (gen, 5) reported", n, missing)
	}
	backfillAgain(t, topo, "gm_items_by_sku_size", 7)
	if n := gmExact(t, p); n != 34 {
		t.Errorf("after the backfill: %d entries, want 34", n)
	}
	mustExec(t, c, "TRUNCATE gm_items", simple)
	if n := gmExact(t, p); n != 0 {
		t.Errorf("after TRUNCATE: %d entries", n)
	}
}

// sameError fails unless the proxy's error and the oracle's (one Postgres)
// are the same error: code, message, detail, constraint and table.
func sameError(t *testing.T, sql string, pErr, oErr error) {
	t.Helper()
	var pe, oe *pgconn.PgError
	if !errors.As(pErr, &pe) || !errors.As(oErr, &oe) {
		t.Fatalf("%s: %v / oracle %v", sql, pErr, oErr)
	}
	if pe.Code != oe.Code || pe.Message != oe.Message || pe.Detail != oe.Detail || pe.ConstraintName != oe.ConstraintName || pe.TableName != oe.TableName {
		t.Errorf("%s:\n proxy  %s %q %q %q\n oracle %s %q %q %q", sql, pe.Code, pe.Message, pe.Detail, pe.ConstraintName, oe.Code, oe.Message, oe.Detail, oe.ConstraintName)
	}
}

// verifyRepair runs verify --repair of index name and returns how many
// missing entries of value it reported.
func verifyRepair(t *testing.T, topo *topology.Topology, name, value string) int {
	t.Helper()
	ctx := context.Background()
	b, err := gsi.Open(ctx, topo, name, false, gsi.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := b.Verify(ctx, true)
	b.Close()
	if err != nil || len(res) == 0 {
		t.Fatal(err)
	}
	missing := 0
	for _, r := range res {
		for _, d := range r.Diffs {
			if d.Kind == "missing" && d.Value == value {
				missing++
			}
		}
	}
	return missing
}

// backfillAgain empties the lookup table of index name and backfills it
// in batches of rows.
func backfillAgain(t *testing.T, topo *topology.Topology, name string, rows int) {
	t.Helper()
	ctx := context.Background()
	for _, cl := range env.Clusters {
		mustExec(t, connect(t, cl.DSN("shop")), "TRUNCATE "+name)
	}
	b, err := gsi.Open(ctx, topo, name, true, gsi.Options{BatchRows: rows})
	if err != nil {
		t.Fatal(err)
	}
	err = b.Run(ctx)
	b.Close()
	if err != nil {
		t.Fatal(err)
	}
}
