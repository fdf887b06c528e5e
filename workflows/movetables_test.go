package workflows

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/shardgate/shardgate/vschema"
)

// TestMoveTablesBetweenGroupsUnderLoad moves orders from by_customer
// (two shards, keyed by customer) into by_order (two other clusters, keyed
// by order id) while orders are written on their by_customer shards.
func TestMoveTablesBetweenGroupsUnderLoad(t *testing.T) {
	const customers = 400
	l := layout{from: `{ "-80": s0, "80-": s1 }`, to: `{ "-80": s0, "80-": s1 }`, clusters: []string{"s0", "s1", "t0", "t1"}, ordersPK: "customer_id, id"}
	f, spec, vs := groupFixture(t, l, customers)
	spec.Kind, spec.Group, spec.Tables = MoveTables, "by_order", []string{"orders"}
	spec.To = strings.Replace(spec.From, "tables: { customers: { column: id }, orders: {} }", "tables: { customers: { column: id } }", 1) +
		"  by_order:\n    index: { name: by_order, column: order_id, type: bigint, function: xxhash }\n" +
		"    tables: { orders: { column: id } }\n    shards: { \"-80\": t0, \"80-\": t1 }\n"
	conns := map[string]*pgx.Conn{"s0": f.conn("s0"), "s1": f.conn("s1")}
	r := rand.New(rand.NewPCG(3, 4))
	next := int64(customers*10 + 10)
	ld := runLoad(t, func(ctx context.Context, i int) error {
		c := int64(1 + r.IntN(customers))
		conn := conns[sourceOf(vs, c)]
		var err error
		switch i % 3 {
		case 0:
			_, err = conn.Exec(ctx, "INSERT INTO orders (id, customer_id, note) VALUES ($1, $2, 'new')", next, c)
			next++
		case 1:
			_, err = conn.Exec(ctx, "UPDATE orders SET note = note || '+' WHERE customer_id = $1", c)
		case 2:
			_, err = conn.Exec(ctx, "DELETE FROM orders WHERE id = (SELECT min(id) FROM orders WHERE customer_id = $1)", c)
		}
		return err
	})
	store, id, rn := createAndStream(t, f, spec)
	ld.finish(t)
	waitCaughtUp(t, f, rn, "s0", "s1")
	checkClean(t, store, id)
	sameCounts(t, f, []string{"s0", "s1"}, []string{"t0", "t1"}, "orders")
	// Each order is on the shard of its id in by_order.
	to := buildVSchema(t, spec.To).Group("by_order")
	for _, c := range []string{"t0", "t1"} {
		rows, err := f.conn(c).Query(context.Background(), "SELECT id FROM orders")
		if err != nil {
			t.Fatal(err)
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range ids {
			if s, _ := to.ShardFor(vschema.IntegerKey(o)); s.Cluster != c {
				t.Fatalf("order %d on %s, its shard is on %s", o, c, s.Cluster)
			}
		}
	}
	// No table of the other group moved.
	if n := f.count("t0", "SELECT count(*) FROM pg_tables WHERE tablename = 'customers'"); n != 0 {
		t.Errorf("customers created on t0")
	}
}

// TestMoveTablesLoadsAReferenceTable copies a table of main onto every
// cluster of by_customer as a reference table, streaming every change to
// every one of them.
func TestMoveTablesLoadsAReferenceTable(t *testing.T) {
	f, spec := moveTablesFixture(t, 1500)
	spec.To = strings.Replace(spec.From, "tables: { customers: { column: id } }", "tables: { customers: { column: id } }\n    reference: [orders]", 1)
	l := startLoad(f, "main", "orders", 1501)
	store, id, rn := createAndStream(t, f, spec)
	l.finish(t)
	waitCaughtUp(t, f, rn, "main")
	checkClean(t, store, id)
	src := f.count("main", "SELECT count(*) FROM orders")
	for _, c := range []string{"t0", "t1"} {
		if n := f.count(c, "SELECT count(*) FROM orders"); n != src {
			t.Errorf("%s: %d orders, main %d", c, n, src)
		}
		if n := f.count(c, "SELECT count(*) FROM orders WHERE note LIKE '%+%'"); n == 0 {
			t.Errorf("%s: no streamed update", c)
		}
	}
}
