package proxy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/shardgate/shardgate/internal/proxytest"
	"github.com/shardgate/shardgate/keyexpr"
)

// gsiTopology: gs_orders sharded by customer_id, with a unique active
// index on id and a non-unique one on note.
func gsiTopology() string {
	return proxytest.Topology("shop", `groups:
  main:
    unsharded: true
    cluster: pg0
    sequences: [gs_orders_id_seq]
  by_customer:
    index: { name: by_customer, column: customer_id, type: bigint, function: xxhash }
    shards: { "-80": pg0, "80-": pg1 }
    tables:
      gs_orders: { sequence: { column: id, name: gs_orders_id_seq } }
    secondary_indexes:
      gs_orders_by_id: { table: gs_orders, column: id, type: bigint, unique: true, state: active }
      gs_orders_by_note: { table: gs_orders, column: note, type: text }
`, env.Clusters...)
}

var simple = pgx.QueryExecModeSimpleProtocol

func setupGSI(t testing.TB, p *testProxy) *pgx.Conn {
	t.Helper()
	c := connect(t, p.dsn())
	ctx := context.Background()
	for _, s := range []string{
		"DROP TABLE IF EXISTS gs_orders",
		"DROP SEQUENCE IF EXISTS gs_orders_id_seq",
		"CREATE SEQUENCE gs_orders_id_seq START 1000",
		"CREATE TABLE gs_orders (id bigint NOT NULL, customer_id bigint NOT NULL, note text, total int, PRIMARY KEY (customer_id, id))",
	} {
		if _, err := c.Exec(ctx, s, simple); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	return c
}

// checkLookups checks that every lookup table holds exactly the (value,
// key) projection of gs_orders, each entry on the cluster its value maps
// to, and returns the number of owner rows.
func checkLookups(t *testing.T, p *testProxy) int {
	t.Helper()
	ctx := context.Background()
	owner := map[string]int{} // "index|value|key" -> rows
	got := map[string]int{}
	rows := 0
	for _, cl := range env.Clusters {
		d := connect(t, cl.DSN("shop"))
		r, err := d.Query(ctx, "SELECT id::text, customer_id::text, note FROM gs_orders")
		if err != nil {
			t.Fatal(err)
		}
		for r.Next() {
			var id, cust string
			var note *string
			if err := r.Scan(&id, &cust, &note); err != nil {
				t.Fatal(err)
			}
			rows++
			owner["gs_orders_by_id|"+id+"|"+cust]++
			if note != nil {
				owner["gs_orders_by_note|"+*note+"|"+cust]++
			}
		}
		for _, q := range []string{
			"SELECT 'gs_orders_by_id', id::text, customer_id::text, 1 FROM gs_orders_by_id",
			"SELECT 'gs_orders_by_note', note, customer_id::text, n FROM gs_orders_by_note",
		} {
			r, err := d.Query(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			for r.Next() {
				var name, v, k string
				var n int
				if err := r.Scan(&name, &v, &k, &n); err != nil {
					t.Fatal(err)
				}
				got[name+"|"+v+"|"+k] += n
				si := p.vs.Table("", name).LookupOf
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
	for k, n := range owner {
		if got[k] != n {
			t.Errorf("entry %s: %d in the lookup table, %d owner rows", k, got[k], n)
		}
	}
	for k, n := range got {
		if owner[k] == 0 {
			t.Errorf("entry %s (%d) has no owner row", k, n)
		}
	}
	return rows
}

// keyOn returns the first customer after from on the same cluster
// as from (same) or on another.
func keyOn(t *testing.T, p *testProxy, from int64, same bool) int64 {
	t.Helper()
	c := from + 1
	for (clusterOf(t, p, c) == clusterOf(t, p, from)) != same {
		c++
	}
	return c
}

func wantPgError(t *testing.T, err error, code, contains string) *pgconn.PgError {
	t.Helper()
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != code || !strings.Contains(pe.Message, contains) {
		t.Fatalf("error %v, want %s containing %q", err, code, contains)
	}
	return pe
}

// TestGSIMaintained: INSERT and DELETE through the proxy keep both lookup
// tables exact, on the clusters their values map to, and the client sees
// its own statement's answer.
func TestGSIMaintained(t *testing.T) {
	p := startProxy(t, gsiTopology(), nil)
	c := setupGSI(t, p)
	ctx := context.Background()
	exec := func(sql string) pgconn.CommandTag {
		t.Helper()
		tag, err := c.Exec(ctx, sql, simple)
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return tag
	}
	exec("INSERT INTO gs_orders (id, customer_id, note) VALUES (1, 1, 'a')")
	if tag := exec("INSERT INTO gs_orders (id, customer_id, note) VALUES (2, 2, 'a'), (3, 3, NULL), (4, 4, 'b'), (5, 1, 'a')"); tag.String() != "INSERT 0 4" {
		t.Errorf("tag %q", tag)
	}
	exec("INSERT INTO gs_orders (customer_id, note) VALUES (7, 'seq'), (8, 'seq')") // ids drawn by the proxy
	exec("INSERT INTO gs_orders AS o (id, customer_id, note) VALUES (DEFAULT, 9, 'd')")
	if tag := exec("INSERT INTO gs_orders (id, customer_id, note) VALUES (1, 1, 'dup'), (6, 6, 'c') ON CONFLICT DO NOTHING"); tag.String() != "INSERT 0 1" {
		t.Errorf("ON CONFLICT DO NOTHING tag %q", tag)
	}
	r, err := c.Query(ctx, "INSERT INTO gs_orders (id, customer_id, note) VALUES (10, 10, 'r'), (11, 11, 'r'), (12, 12, 'r') RETURNING id, note", simple)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(r.FieldDescriptions()); n != 2 {
		t.Errorf("RETURNING id, note: %d columns", n)
	}
	var ids []int64
	for r.Next() {
		var id int64
		var note string
		if err := r.Scan(&id, &note); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if !slices.Equal(ids, []int64{10, 11, 12}) {
		t.Errorf("RETURNING ids %v, want statement order", ids)
	}
	if n := checkLookups(t, p); n != 12 {
		t.Errorf("%d owner rows, want 12", n)
	}

	// DELETE by key, by indexed column, by anything; RETURNING.
	exec("DELETE FROM gs_orders WHERE customer_id = 1 AND id = 1")
	exec("DELETE FROM gs_orders WHERE id IN (2, 3)")
	if tag := exec("DELETE FROM gs_orders o WHERE o.note = 'seq'"); tag.String() != "DELETE 2" {
		t.Errorf("tag %q", tag)
	}
	var got []string
	r, err = c.Query(ctx, "DELETE FROM gs_orders WHERE note = 'r' RETURNING *", simple)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(r.FieldDescriptions()); n != 4 {
		t.Errorf("RETURNING *: %d columns, want the table's 4", n)
	}
	for r.Next() {
		v, _ := r.Values()
		got = append(got, fmt.Sprint(v))
	}
	if len(got) != 3 {
		t.Errorf("DELETE RETURNING rows %v", got)
	}
	if n := checkLookups(t, p); n != 4 {
		t.Errorf("%d owner rows, want 4", n)
	}
	// In a client transaction, rolled back: nothing changes.
	exec("BEGIN")
	exec("INSERT INTO gs_orders (id, customer_id, note) VALUES (100, 100, 'x'), (101, 101, 'x')")
	exec("DELETE FROM gs_orders WHERE note = 'b'")
	exec("ROLLBACK")
	if n := checkLookups(t, p); n != 4 {
		t.Errorf("after ROLLBACK: %d owner rows, want 4", n)
	}
}

// TestGSIUnique: a duplicate of a unique index anywhere in the group is
// Postgres's unique violation named after the index, and the owner row is
// not stored.
func TestGSIUnique(t *testing.T) {
	p := startProxy(t, gsiTopology(), nil)
	c := setupGSI(t, p)
	ctx := context.Background()
	mustExec(t, c, "INSERT INTO gs_orders (id, customer_id) VALUES (42, 1)", simple)
	// Find a customer on the other cluster than customer 1.
	other := keyOn(t, p, 1, false)
	for _, sql := range []string{
		fmt.Sprintf("INSERT INTO gs_orders (id, customer_id) VALUES (42, %d)", other),
		fmt.Sprintf("INSERT INTO gs_orders (id, customer_id) VALUES (43, %d), (43, 1)", other),
	} {
		_, err := c.Exec(ctx, sql, simple)
		pe := wantPgError(t, err, "23505", `duplicate key value violates unique constraint "gs_orders_by_id"`)
		if pe.ConstraintName != "gs_orders_by_id" || !strings.HasPrefix(pe.Detail, "Key (id)=(4") || !strings.HasSuffix(pe.Detail, ") already exists.") || pe.TableName != "gs_orders" {
			t.Errorf("%s: %+v", sql, pe)
		}
	}
	if n := checkLookups(t, p); n != 1 {
		t.Errorf("%d owner rows, want 1", n)
	}
	// In a transaction, the failure aborts it as Postgres would.
	mustExec(t, c, "BEGIN", simple)
	_, err := c.Exec(ctx, fmt.Sprintf("INSERT INTO gs_orders (id, customer_id) VALUES (42, %d)", other), simple)
	wantPgError(t, err, "23505", "gs_orders_by_id")
	_, err = c.Exec(ctx, "SELECT 1", simple)
	wantPgError(t, err, "25P02", "aborted")
	mustExec(t, c, "ROLLBACK", simple)
}

// TestGSIRefusals: what this slice does not maintain is refused, naming
// the index, and changes nothing.
func TestGSIRefusals(t *testing.T) {
	p := startProxy(t, gsiTopology(), nil)
	c := setupGSI(t, p)
	ctx := context.Background()
	mustExec(t, c, "INSERT INTO gs_orders (id, customer_id, note) VALUES (1, 1, 'a')", simple)
	for _, sql := range []string{
		"WITH c AS (SELECT 1 AS n) UPDATE gs_orders SET id = 5 FROM c WHERE customer_id = c.n",
		"WITH d AS (DELETE FROM gs_orders RETURNING id) SELECT count(*) FROM d",
	} {
		_, err := c.Exec(ctx, sql, simple)
		wantPgError(t, err, "0A000", "gs_orders_by_")
	}
	// UPDATE of other columns is fine.
	mustExec(t, c, "UPDATE gs_orders SET customer_id = 1 WHERE customer_id = 1 AND id = 1", simple)
	if n := checkLookups(t, p); n != 1 {
		t.Errorf("%d owner rows, want 1", n)
	}
}

// TestGSIDDL: CREATE TABLE of the owner creates the lookup tables on every
// cluster of the group; DROP TABLE drops them.
func TestGSIDDL(t *testing.T) {
	p := startProxy(t, gsiTopology(), nil)
	setupGSI(t, p)
	ctx := context.Background()
	count := func() int {
		n := 0
		for _, cl := range env.Clusters {
			d := connect(t, cl.DSN("shop"))
			var k int
			if err := d.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE tablename IN ('gs_orders_by_id', 'gs_orders_by_note')").Scan(&k); err != nil {
				t.Fatal(err)
			}
			n += k
		}
		return n
	}
	if n := count(); n != 4 {
		t.Fatalf("%d lookup tables after CREATE TABLE, want 2 on each of 2 clusters", n)
	}
	c := connect(t, p.dsn())
	if _, err := c.Exec(ctx, "CREATE TABLE IF NOT EXISTS gs_orders (id bigint)", simple); err != nil {
		t.Fatal(err)
	}
	mustExec(t, c, "DROP TABLE gs_orders", simple)
	if n := count(); n != 0 {
		t.Fatalf("%d lookup tables after DROP TABLE, want 0", n)
	}
}

// TestGSIReads: SELECT, UPDATE and DELETE by an active index's column run
// on the owners' clusters only; a backfilling index is never read.
func TestGSIReads(t *testing.T) {
	p := startProxy(t, gsiTopology(), nil)
	c := setupGSI(t, p)
	ctx := context.Background()
	mustExec(t, c, "INSERT INTO gs_orders (id, customer_id, note) VALUES (1, 1, 'a'), (2, 2, 'a'), (3, 3, 'b')", simple)
	// A stray row the index does not know, on the cluster that does not
	// own customer 1: a scatter would find it, a lookup does not.
	stray := env.Clusters[0]
	if clusterOf(t, p, 1) == stray.Name {
		stray = env.Clusters[1]
	}
	d := connect(t, stray.DSN("shop"))
	mustExec(t, d, "INSERT INTO gs_orders (id, customer_id, note) VALUES (1, 999999, 'stray')")
	count := func(sql string) int64 {
		t.Helper()
		var n int64
		if err := c.QueryRow(ctx, sql, simple).Scan(&n); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return n
	}
	if n := count("SELECT count(*) FROM gs_orders WHERE id = 1"); n != 1 {
		t.Errorf("WHERE id = 1 through the index: %d rows, want 1", n)
	}
	if n := count("SELECT count(*) FROM gs_orders o WHERE o.id IN (1, 77)"); n != 1 {
		t.Errorf("WHERE id IN: %d rows, want 2", n)
	}
	if n := count("SELECT count(*) FROM gs_orders WHERE id = 77"); n != 0 {
		t.Errorf("WHERE id = 77: %d rows", n)
	}
	if n := count("SELECT count(*) FROM gs_orders WHERE note = 'stray'"); n != 1 {
		t.Errorf("backfilling index read: %d rows, want the scatter's 1", n)
	}
	var lines []string
	r, err := c.Query(ctx, "EXPLAIN (ROUTE) SELECT * FROM gs_orders WHERE id = 3", simple)
	if err != nil {
		t.Fatal(err)
	}
	for r.Next() {
		var l string
		_ = r.Scan(&l)
		lines = append(lines, l)
	}
	if len(lines) < 2 || !strings.HasPrefix(lines[0], "Lookup gs_orders_by_id(id) IN (3)") || !strings.Contains(lines[1], "Route") {
		t.Errorf("EXPLAIN (ROUTE):\n%s", strings.Join(lines, "\n"))
	}
	if tag, err := c.Exec(ctx, "UPDATE gs_orders SET total = 5 WHERE id = 1", simple); err != nil || tag.String() != "UPDATE 1" {
		t.Errorf("UPDATE through the index: %v %v", tag, err)
	}
	if tag, err := c.Exec(ctx, "DELETE FROM gs_orders WHERE id = 1", simple); err != nil || tag.String() != "DELETE 1" {
		t.Errorf("DELETE through the index: %v %v", tag, err)
	}
	mustExec(t, d, "DELETE FROM gs_orders WHERE customer_id = 999999")
	if n := checkLookups(t, p); n != 2 {
		t.Errorf("%d owner rows, want 2", n)
	}
}
