package proxy

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/shardgate/shardgate/keyexpr"
)

// TestGSIUpdate: UPDATE of an indexed column, through both protocols,
// replaces the rows' entries (old ones gone, new ones there, on the
// clusters their values map to); a duplicate is the index's 23505 and
// changes nothing; a rollback undoes the owner rows and the entries.
func TestGSIUpdate(t *testing.T) {
	p := startProxy(t, gsiTopology(), nil)
	c := setupGSI(t, p)
	ctx := context.Background()
	other := keyOn(t, p, 1, false)
	mustExec(t, c, fmt.Sprintf("INSERT INTO gs_orders (id, customer_id, note) VALUES (1, 1, 'a'), (2, %d, 'a'), (3, 3, 'b'), (4, 4, NULL)", other), simple)
	count := func(sql string) int64 {
		t.Helper()
		var n int64
		if err := c.QueryRow(ctx, sql, simple).Scan(&n); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return n
	}
	exec := func(sql string, args ...any) string {
		t.Helper()
		tag, err := c.Exec(ctx, sql, args...)
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return tag.String()
	}
	if tag := exec("UPDATE gs_orders SET id = 11 WHERE id = 1", simple); tag != "UPDATE 1" {
		t.Errorf("tag %q", tag)
	}
	if count("SELECT count(*) FROM gs_orders WHERE id = 11") != 1 || count("SELECT count(*) FROM gs_orders WHERE id = 1") != 0 {
		t.Errorf("reads through the index after SET id = 11 WHERE id = 1")
	}
	checkLookups(t, p)
	// Both indexes, several rows on both clusters, RETURNING.
	r, err := c.Query(ctx, "UPDATE gs_orders o SET note = 'z', id = o.id + 100 WHERE o.note = 'a' RETURNING id, note", simple)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for r.Next() {
		var id int64
		var note string
		if err := r.Scan(&id, &note); err != nil {
			t.Fatal(err)
		}
		if note != "z" || id < 100 || len(r.FieldDescriptions()) != 2 {
			t.Errorf("RETURNING row %d %q", id, note)
		}
		n++
	}
	if r.Err() != nil || n != 2 {
		t.Errorf("RETURNING: %d rows, %v", n, r.Err())
	}
	checkLookups(t, p)
	// Swapping two values: the old entries go before the new come.
	exec("UPDATE gs_orders SET id = CASE id WHEN 111 THEN 102 ELSE 111 END WHERE id IN (111, 102)", simple)
	exec("UPDATE gs_orders o SET note = v.n FROM (VALUES (3, 'from')) v(i, n) WHERE o.id = v.i", simple)
	if tag := exec("UPDATE gs_orders SET id = 5 WHERE id = 999", simple); tag != "UPDATE 0" {
		t.Errorf("no row: tag %q", tag)
	}
	checkLookups(t, p)
	// The extended protocol, in every pgx mode.
	for m, mode := range extModes {
		id := int64(200 + m)
		if tag := exec("UPDATE gs_orders SET id = $1, note = $2 WHERE customer_id = $3 AND total IS NULL", mode, id, fmt.Sprint("e", m), 4); tag != "UPDATE 1" {
			t.Errorf("%v: tag %q", mode, tag)
		}
		var got int64
		if err := c.QueryRow(ctx, "UPDATE gs_orders SET note = $2 WHERE id = $1 RETURNING id", mode, id, "r").Scan(&got); err != nil || got != id {
			t.Errorf("%v: RETURNING %d, %v", mode, got, err)
		}
		_, err := c.Exec(ctx, "UPDATE gs_orders SET id = $1 WHERE id = $2", mode, int64(3), id)
		wantPgError(t, err, "23505", `duplicate key value violates unique constraint "gs_orders_by_id"`)
	}
	rows := checkLookups(t, p)
	// Duplicates, on the other cluster and within the statement.
	for _, sql := range []string{
		"UPDATE gs_orders SET id = 3 WHERE customer_id = 4",
		"UPDATE gs_orders SET id = 7 WHERE id IN (102, 3)",
	} {
		_, err := c.Exec(ctx, sql, simple)
		pe := wantPgError(t, err, "23505", `duplicate key value violates unique constraint "gs_orders_by_id"`)
		if pe.ConstraintName != "gs_orders_by_id" {
			t.Errorf("%s: %+v", sql, pe)
		}
	}
	if count("SELECT count(*) FROM gs_orders WHERE id = 7") != 0 || checkLookups(t, p) != rows {
		t.Errorf("a refused UPDATE changed rows")
	}
	// Rolled back: the owner rows and the entries as before.
	exec("BEGIN", simple)
	exec("UPDATE gs_orders SET id = 300, note = 'rb' WHERE id = 102", simple)
	exec("UPDATE gs_orders SET id = $1 WHERE id = $2", int64(301), int64(3))
	exec("ROLLBACK", simple)
	if count("SELECT count(*) FROM gs_orders WHERE id IN (102, 3)") != 2 || count("SELECT count(*) FROM gs_orders WHERE id IN (300, 301)") != 0 {
		t.Errorf("after ROLLBACK")
	}
	checkLookups(t, p)
	// Committed in a transaction with other writes.
	exec("BEGIN", simple)
	exec("UPDATE gs_orders SET id = 400 WHERE id = 102", simple)
	exec("INSERT INTO gs_orders (id, customer_id) VALUES (102, 5)", simple)
	exec("COMMIT", simple)
	if count("SELECT count(*) FROM gs_orders WHERE id IN (102, 400)") != 2 {
		t.Errorf("after COMMIT")
	}
	checkLookups(t, p)
	_, err = c.Exec(ctx, "WITH c AS (SELECT 1 AS n) UPDATE gs_orders SET id = 9 FROM c WHERE customer_id = c.n", pgx.QueryExecModeSimpleProtocol)
	wantPgError(t, err, "0A000", "gs_orders_by_id")
}

// TestGSIBestEffortLookupCommitsFirst: under commit: best_effort, a
// transaction's lookup entries commit first, on connections of their own
// (the consistent-lookup order, gsi.Pending). A lookup cluster that fails
// at COMMIT (a deferred constraint trigger planted on the lookup table)
// then rolls the owner row back: no owner row is ever left without its
// entry.
func TestGSIBestEffortLookupCommitsFirst(t *testing.T) {
	p := startProxy(t, gsiTopology(), func(c *Config) { c.Commit = CommitBestEffort })
	c := setupGSI(t, p)
	ctx := context.Background()
	si := p.vs.Table("", "gs_orders_by_id").LookupOf
	home := clusterOf(t, p, 1)
	id := int64(666)
	for ; ; id++ {
		key, _ := si.KeyFromValue(keyexpr.Text(fmt.Sprint(id)))
		if sh, _ := si.Lookup.Group.ShardFor(key); sh.Cluster != home {
			break
		}
	}
	for _, cl := range env.Clusters {
		d := connect(t, cl.DSN("shop"))
		mustExec(t, d, fmt.Sprintf(`CREATE FUNCTION gs_fail_at_commit() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN IF NEW.id = %d THEN RAISE EXCEPTION 'refused at commit'; END IF; RETURN NULL; END $$`, id))
		mustExec(t, d, `CREATE CONSTRAINT TRIGGER gs_fail_at_commit AFTER INSERT ON gs_orders_by_id
			DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION gs_fail_at_commit()`)
		t.Cleanup(func() { _, _ = d.Exec(ctx, "DROP FUNCTION IF EXISTS gs_fail_at_commit() CASCADE") })
	}
	mustExec(t, c, "INSERT INTO gs_orders (id, customer_id) VALUES (1, 1)", simple)
	if _, err := c.Exec(ctx, "INSERT INTO gs_orders (id, customer_id) VALUES ($1, 1)", simple, id); err == nil || !strings.Contains(err.Error(), "refused at commit") {
		t.Fatalf("insert of %d: %v, want the lookup cluster's failure", id, err)
	}
	if n := checkLookups(t, p); n != 1 {
		t.Errorf("%d owner rows, want 1", n)
	}
}
