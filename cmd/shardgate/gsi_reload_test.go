package main

import (
	"context"
	"testing"

	"github.com/shardgate/shardgate/gsi"
	"github.com/shardgate/shardgate/internal/proxytest"
)

// TestGSIAddedByReload: a proxy serving gb_orders (with rows) without
// indexes reloads the topology that adds two backfilling ones. Writes
// through it keep working at once, entries and all (the reload created
// the lookup tables where gb_orders exists), and the backfill then makes
// both indexes exact.
func TestGSIAddedByReload(t *testing.T) {
	f := newGSIFixture(t, "gbreload", 3000, "")
	srv, dsn := f.serve(f.base, false)
	c := proxytest.Connect(t, dsn)
	if err := srv.Reload(proxytest.Parse(t, readFile(t, f.file))); err != nil {
		t.Fatal(err)
	}
	exec1(t, c, "INSERT INTO gb_orders (id, customer_id, note, email) VALUES (5000001, 11, 'new', 'x'), (5000002, 12, 'new', 'y')")
	exec1(t, c, "UPDATE gb_orders SET id = 5000003 WHERE customer_id = 12 AND id = 5000002")
	exec1(t, c, "UPDATE gb_orders SET note = 'moved' WHERE customer_id = 7 AND id = 7")
	exec1(t, c, "DELETE FROM gb_orders WHERE customer_id = 8 AND id = 8")
	var entries int
	for _, cl := range []string{"s0", "s1"} {
		var n int
		if err := f.conn(cl).QueryRow(context.Background(), "SELECT count(*) FROM gb_orders_by_id WHERE id > 5000000").Scan(&n); err != nil {
			t.Fatal(err)
		}
		entries += n
	}
	if entries != 2 {
		t.Fatalf("%d entries of the new rows, want 2", entries)
	}
	ctx := context.Background()
	topo := proxytest.Parse(t, readFile(t, f.file))
	for _, name := range []string{"gb_orders_by_id", "gb_orders_by_note"} {
		b, err := gsi.Open(ctx, topo, name, true, gsi.Options{BatchRows: 500})
		if err != nil {
			t.Fatal(err)
		}
		err = b.Run(ctx)
		b.Close()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		f.checkExact(name)
	}
}
