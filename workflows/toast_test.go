package workflows

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

// bigNote is a text value stored out of line (TOASTed): 19200 characters
// of md5 digests, which pglz does not shrink below the 2 kB threshold.
const bigNote = "(SELECT string_agg(md5(g::text || $1::text), '') FROM generate_series(1, 600) g)"

// TestStreamKeepsUnchangedToastedValues: an UPDATE that leaves a TOASTed
// value as it was (pgoutput sends no value for it) keeps it on the target;
// one that moves the row to another shard takes it from the row where it
// was, or from an earlier change of the same transaction.
func TestStreamKeepsUnchangedToastedValues(t *testing.T) {
	f, spec := moveTablesFixture(t, 200)
	vs := buildVSchema(t, spec.To)
	// Customers 1.. on each target cluster.
	on := map[string][]int64{}
	for c := int64(1); len(on["t0"]) < 3 || len(on["t1"]) < 3; c++ {
		cl := sourceOf(vs, c)
		on[cl] = append(on[cl], c)
	}
	f.exec("main", "UPDATE orders SET customer_id = $2, note = "+bigNote+" WHERE id IN (1, 2, 3)", "a", on["t0"][0])
	if n := f.count("main", "SELECT pg_relation_size(reltoastrelid) FROM pg_class WHERE oid = 'orders'::regclass"); n == 0 {
		t.Fatalf("the notes are not stored out of line")
	}
	store, id, rn := createAndStream(t, f, spec)
	// In place: the note is not sent, the amount is.
	f.exec("main", "UPDATE orders SET amount = 7 WHERE id = 1")
	// Moved to t1 with the note unchanged: read from t0.
	f.exec("main", "UPDATE orders SET customer_id = $1 WHERE id = 2", on["t1"][0])
	// Moved in the transaction that changed the note: the change's value.
	ctx := context.Background()
	if err := pgx.BeginFunc(ctx, f.conn("main"), func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "UPDATE orders SET note = "+bigNote+" WHERE id = 3", "b"); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "UPDATE orders SET customer_id = $1 WHERE id = 3", on["t1"][1])
		return err
	}); err != nil {
		t.Fatal(err)
	}
	waitCaughtUp(t, f, rn, "main")
	checkClean(t, store, id)
	if n := f.count("t1", "SELECT count(*) FROM orders WHERE id IN (2, 3) AND length(note) = 19200"); n != 2 {
		t.Errorf("moved rows on t1 with their notes: %d, want 2", n)
	}
	if n := f.count("t0", "SELECT count(*) FROM orders WHERE id = 1 AND amount = 7 AND length(note) = 19200"); n != 1 {
		t.Errorf("order 1 updated in place on t0: %d", n)
	}
}
