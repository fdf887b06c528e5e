package proxy

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestGSIReadPrepared: a client's prepared statement read through a GSI
// runs on the owner's cluster as one backend prepared statement, the
// owners' keys bound as a parameter, reused by every execution (so the
// backend parses it once); the answers are those of the statement as
// written, for one key, several, none and NULL, with binary and text
// parameters.
func TestGSIReadPrepared(t *testing.T) {
	p := startProxy(t, gsiTopology(), nil)
	c := setupGSI(t, p)
	ctx := context.Background()
	main := env.Clusters[0].Name // the cluster of pg_prepared_statements' reads
	// Three customers on main's cluster, one on the other.
	var here []int64
	for k := int64(1); len(here) < 3; k++ {
		if clusterOf(t, p, k) == main {
			here = append(here, k)
		}
	}
	there := keyOn(t, p, here[0], false)
	for i, k := range append(slices.Clone(here), there) {
		mustExec(t, c, fmt.Sprintf("INSERT INTO gs_orders (id, customer_id, note) VALUES (%d, %d, 'n%d')", 100+i, k, i), simple)
	}
	tx, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	const byID = "SELECT customer_id, note FROM gs_orders WHERE id = $1"
	for j := range 8 {
		i, k := j%len(here), here[j%len(here)]
		var cust int64
		var note string
		if err := tx.QueryRow(ctx, byID, 100+i).Scan(&cust, &note); err != nil || cust != k || note != fmt.Sprintf("n%d", i) {
			t.Fatalf("id %d: %d %q %v, want %d n%d", 100+i, cust, note, err, k, i)
		}
	}
	// A text parameter too (pgx sends a string as text).
	var note string
	if err := tx.QueryRow(ctx, byID, "101").Scan(new(int64), &note); err != nil || note != "n1" {
		t.Fatalf("id '101' as text: %q %v", note, err)
	}
	for _, id := range []any{nil, 77} {
		if err := tx.QueryRow(ctx, byID, id).Scan(new(int64), &note); err != pgx.ErrNoRows {
			t.Errorf("id %v: %q %v, want no rows", id, note, err)
		}
	}
	// The backend connection of the transaction on main's cluster holds
	// the owner's statement once, executed nine times (parsed once), and
	// its plan cache settled on a generic plan (planned once).
	var stmts, runs, generic int64
	if err := tx.QueryRow(ctx, `SELECT count(*), coalesce(sum(generic_plans + custom_plans), 0), coalesce(sum(generic_plans), 0) FROM pg_prepared_statements
		WHERE statement LIKE '%gs_orders.customer_id = $2::bigint%' AND statement NOT LIKE '%pg_prepared_statements%'`).Scan(&stmts, &runs, &generic); err != nil {
		t.Fatal(err)
	}
	if stmts != 1 || runs != 9 || generic == 0 {
		t.Errorf("%d backend statements narrowed by the owner's key, %d executions, %d of a generic plan; want 1, 9, some", stmts, runs, generic)
	}
	// Several keys, on both clusters, and one without an owner.
	rows, err := tx.Query(ctx, "SELECT id FROM gs_orders WHERE id = ANY($1) ORDER BY id", []int64{100, 102, 103, 999})
	if err != nil {
		t.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil || !slices.Equal(ids, []int64{100, 102, 103}) {
		t.Errorf("id = ANY: %v %v, want [100 102 103]", ids, err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}
