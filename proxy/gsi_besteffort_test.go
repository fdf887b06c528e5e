package proxy

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/gsi"
	"github.com/shardgate/shardgate/internal/proxytest"
	"github.com/shardgate/shardgate/keyexpr"
)

// lookupClusterOf is the cluster of the lookup shard of gs_orders_by_id's
// value id.
func lookupClusterOf(t *testing.T, p *testProxy, id int64) string {
	t.Helper()
	si := p.vs.Table("", "gs_orders_by_id").LookupOf
	key, err := si.KeyFromValue(keyexpr.Text(fmt.Sprint(id)))
	if err != nil {
		t.Fatal(err)
	}
	sh, err := si.Lookup.Group.ShardFor(key)
	if err != nil {
		t.Fatal(err)
	}
	return sh.Cluster
}

// failOwnerAtCommit plants a deferred constraint trigger on gs_orders
// that refuses, at COMMIT, a row whose total is negative: its entry is
// then committed and the owner row is not.
func failOwnerAtCommit(t *testing.T) {
	t.Helper()
	for _, cl := range env.Clusters {
		d := connect(t, cl.DSN("shop"))
		mustExec(t, d, `CREATE OR REPLACE FUNCTION gs_owner_fail() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN IF NEW.total < 0 THEN RAISE EXCEPTION 'owner refused at commit'; END IF; RETURN NULL; END $$`)
		mustExec(t, d, `CREATE CONSTRAINT TRIGGER gs_owner_fail AFTER INSERT ON gs_orders
			DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION gs_owner_fail()`)
		t.Cleanup(func() { _, _ = d.Exec(context.Background(), "DROP FUNCTION IF EXISTS gs_owner_fail() CASCADE") })
	}
}

// verifyIndex runs verify of gs_orders_by_id (repair or not) and returns
// the values of the extra entries it reported.
func verifyIndex(t *testing.T, repair bool) []string {
	t.Helper()
	ctx := context.Background()
	b, err := gsi.Open(ctx, proxytest.Parse(t, gsiTopology()), "gs_orders_by_id", false, gsi.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	res, err := b.Verify(ctx, repair)
	if err != nil {
		t.Fatal(err)
	}
	var extra []string
	for _, r := range res {
		for _, d := range r.Diffs {
			if d.Kind != gsi.DiffExtra {
				t.Errorf("verify: %s", d)
			}
			extra = append(extra, d.Value)
		}
	}
	return extra
}

// TestGSIBestEffortDangling: under commit: best_effort an entry is
// committed before its owner row, so an owner write that fails at COMMIT
// leaves a dangling entry. Reads through the index stay exact, a later
// write of the value takes the entry over (a live owner row still makes
// a duplicate 23505), a transaction reads its own entries, removals
// happen after the owner commits, verify reports the dangling entry and
// --repair removes it, and COPY FROM takes an entry over as INSERT does.
func TestGSIBestEffortDangling(t *testing.T) {
	p := startProxy(t, gsiTopology(), func(c *Config) { c.Commit = CommitBestEffort })
	c := setupGSI(t, p)
	ctx := context.Background()
	failOwnerAtCommit(t)
	other := keyOn(t, p, 1, false) // a customer on the other cluster
	id := int64(700)
	for lookupClusterOf(t, p, id) == clusterOf(t, p, 1) {
		id++
	}
	count := func(q string, args ...any) int {
		t.Helper()
		var n int
		if err := c.QueryRow(ctx, q, args...).Scan(&n); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return n
	}
	dangle := func(id, cust int64) {
		t.Helper()
		_, err := c.Exec(ctx, "INSERT INTO gs_orders (id, customer_id, total) VALUES ($1, $2, -1)", simple, id, cust)
		wantPgError(t, err, "P0001", "owner refused at commit")
	}

	dangle(id, 1)
	if got := verifyIndex(t, false); len(got) != 1 || got[0] != fmt.Sprint(id) {
		t.Fatalf("verify reported %v, want the dangling entry %d", got, id)
	}
	for _, mode := range []any{simple, nil} {
		args := []any{id}
		if mode != nil {
			args = []any{mode, id}
		}
		if n := count("SELECT count(*) FROM gs_orders WHERE id = $1", args...); n != 0 {
			t.Errorf("read through a dangling entry: %d rows", n)
		}
	}
	if tag, err := c.Exec(ctx, "UPDATE gs_orders SET note = 'x' WHERE id = $1", id); err != nil || tag.RowsAffected() != 0 {
		t.Errorf("update through a dangling entry: %v %v", tag, err)
	}
	// Taken over by another customer's row, on another cluster.
	mustExec(t, c, fmt.Sprintf("INSERT INTO gs_orders (id, customer_id, total) VALUES (%d, %d, 1)", id, other), simple)
	var cust int64
	if err := c.QueryRow(ctx, "SELECT customer_id FROM gs_orders WHERE id = $1", id).Scan(&cust); err != nil || cust != other {
		t.Fatalf("after the takeover: customer %d, %v; want %d", cust, err, other)
	}
	// A live owner row is still a duplicate (of the same key, the owner
	// table's own primary key finds it first).
	for k, name := range map[int64]string{1: "gs_orders_by_id", other: "gs_orders_pkey"} {
		_, err := c.Exec(ctx, "INSERT INTO gs_orders (id, customer_id) VALUES ($1, $2)", id, k)
		wantPgError(t, err, "23505", name)
	}
	// A dangling entry of the same key is taken over as well.
	dangle(id+1, 1)
	mustExec(t, c, fmt.Sprintf("INSERT INTO gs_orders (id, customer_id, total) VALUES (%d, 1, 1)", id+1), simple)
	if n := checkLookups(t, p); n != 2 {
		t.Fatalf("%d owner rows, want 2", n)
	}

	// A transaction reads the entries it wrote; rolled back, they go.
	tx, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "INSERT INTO gs_orders (id, customer_id) VALUES ($1, 1)", id+2); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := tx.QueryRow(ctx, "SELECT count(*) FROM gs_orders WHERE id = $1", id+2).Scan(&n); err != nil || n != 1 {
		t.Fatalf("own row through the index: %d, %v", n, err)
	}
	// Deleted and written again with another key in the same transaction.
	if _, err := tx.Exec(ctx, "DELETE FROM gs_orders WHERE id = $1", id+2); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "INSERT INTO gs_orders (id, customer_id) VALUES ($1, $2)", id+2, other); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	tx, err = c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "INSERT INTO gs_orders (id, customer_id) VALUES ($1, 1)", id+3); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	// Removals after the owner's commit: DELETE, and UPDATE of the value.
	mustExec(t, c, fmt.Sprintf("DELETE FROM gs_orders WHERE id = %d", id+1), simple)
	mustExec(t, c, fmt.Sprintf("UPDATE gs_orders SET id = %d WHERE id = %d", id+4, id), simple)
	if n := checkLookups(t, p); n != 2 {
		t.Fatalf("%d owner rows, want 2", n)
	}

	// verify reports a dangling entry; --repair removes it.
	dangle(id+5, other)
	if got := verifyIndex(t, true); len(got) != 1 || got[0] != fmt.Sprint(id+5) {
		t.Fatalf("verify --repair reported %v, want the dangling entry %d", got, id+5)
	}
	if got := verifyIndex(t, false); len(got) != 0 {
		t.Fatalf("after the repair, verify reported %v", got)
	}
	if n := checkLookups(t, p); n != 2 {
		t.Fatalf("%d owner rows, want 2", n)
	}
	// COPY FROM takes a dangling entry over too.
	dangle(id+6, 1)
	data := fmt.Sprintf("%d\t%d\tc\n%d\t1\tc\n", id+6, other, id+7)
	if _, err := c.PgConn().CopyFrom(ctx, strings.NewReader(data), "COPY gs_orders (id, customer_id, note) FROM STDIN"); err != nil {
		t.Fatal(err)
	}
	if n := checkLookups(t, p); n != 4 {
		t.Fatalf("%d owner rows, want 4", n)
	}
}
