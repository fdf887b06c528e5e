package workflows

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/shardgate/shardgate/sqlerr"
	"github.com/shardgate/shardgate/topology"
	"github.com/shardgate/shardgate/vschema"
)

const reshardSchema = `CREATE TABLE customers (id bigint PRIMARY KEY, name text);
	CREATE TABLE orders (id bigint PRIMARY KEY, customer_id bigint NOT NULL, note text);
	CREATE TABLE countries (code text PRIMARY KEY, name text);
	INSERT INTO countries VALUES ('fr', 'France'), ('de', 'Germany'), ('jp', 'Japan');`

// reshardFixture: by_customer on s0 (-80) and s1 (80-), to be split onto
// t0..t3; customers and orders are placed on their shard's source.
func reshardFixture(t *testing.T, customers int) (*fixture, Spec, *vschema.VSchema) {
	f := newFixture(t, "main", "s0", "s1", "t0", "t1", "t2", "t3")
	group := "  by_customer:\n    index: { name: by_customer, column: customer_id, type: bigint, function: xxhash }\n" +
		"    tables: { customers: { column: id }, orders: {} }\n    reference: [countries]\n"
	from := f.clustersYAML("main", "s0", "s1", "t0", "t1", "t2", "t3") + "groups:\n  main: { unsharded: true, cluster: main }\n" +
		group + "    shards: { \"-80\": s0, \"80-\": s1 }\n"
	to := strings.Replace(from, `shards: { "-80": s0, "80-": s1 }`, `shards: { "-40": t0, "40-80": t1, "80-c0": t2, "c0-": t3 }`, 1)
	top, err := topology.Parse("from.yaml", []byte(from))
	if err != nil {
		t.Fatal(err)
	}
	vs, err := vschema.Build(top)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"s0", "s1"} {
		f.exec(c, reshardSchema)
	}
	rows := map[string][][]any{}
	orders := map[string][][]any{}
	for id := 1; id <= customers; id++ {
		c := sourceOf(vs, int64(id))
		rows[c] = append(rows[c], []any{int64(id), fmt.Sprintf("customer %d", id)})
		for o := 0; o < 2; o++ {
			orders[c] = append(orders[c], []any{int64(id*10 + o), int64(id), "order"})
		}
	}
	for c := range rows {
		conn := f.conn(c)
		if _, err := conn.CopyFrom(context.Background(), pgx.Identifier{"customers"}, []string{"id", "name"}, pgx.CopyFromRows(rows[c])); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.CopyFrom(context.Background(), pgx.Identifier{"orders"}, []string{"id", "customer_id", "note"}, pgx.CopyFromRows(orders[c])); err != nil {
			t.Fatal(err)
		}
	}
	return f, Spec{Kind: Reshard, From: from, To: to, FromFile: "from.yaml", ToFile: "to.yaml", Group: "by_customer", ChunkRows: 300}, vs
}

func sourceOf(vs *vschema.VSchema, customer int64) string {
	s, _ := vs.Group("by_customer").ShardFor(vschema.IntegerKey(customer))
	return s.Cluster
}

// reshardLoad writes orders through the old topology's routing: inserts,
// note updates, customer changes (a delete on one source and an insert on
// the other when the new customer lives elsewhere, as the proxy does it)
// and deletes.
func reshardLoad(t *testing.T, f *fixture, vs *vschema.VSchema, customers int) *load {
	conns := map[string]*pgx.Conn{"s0": f.conn("s0"), "s1": f.conn("s1")}
	next := int64(customers*10 + 10)
	return runLoad(t, func(ctx context.Context, i int) error {
		cust := int64(1 + (i*7919)%customers)
		src := conns[sourceOf(vs, cust)]
		var err error
		switch i % 4 {
		case 0:
			next++
			_, err = src.Exec(ctx, "INSERT INTO orders VALUES ($1, $2, 'new')", next, cust)
		case 1:
			_, err = src.Exec(ctx, "UPDATE orders SET note = note || '+' WHERE customer_id = $1", cust)
		case 2:
			to := cust%int64(customers) + 1
			var id int64
			err = src.QueryRow(ctx, "DELETE FROM orders WHERE id = (SELECT min(id) FROM orders WHERE customer_id = $1) RETURNING id", cust).Scan(&id)
			if err == pgx.ErrNoRows {
				return nil
			}
			if err == nil {
				_, err = conns[sourceOf(vs, to)].Exec(ctx, "INSERT INTO orders VALUES ($1, $2, 'moved')", id, to)
			}
		case 3:
			_, err = src.Exec(ctx, "DELETE FROM orders WHERE id = (SELECT max(id) FROM orders WHERE customer_id = $1)", cust)
		}
		return err
	})
}

func TestReshardTwoToFourUnderLoadThenCancel(t *testing.T) {
	const customers = 1000
	f, spec, vs := reshardFixture(t, customers)
	store := f.store()
	id, _, err := Create(testCtx(t), store, spec, false)
	if err != nil {
		t.Fatal(err)
	}
	l := reshardLoad(t, f, vs, customers)
	rn := startRun(t, store, id)
	waitPhase(t, store, rn, id, PhaseStreaming)
	time.Sleep(500 * time.Millisecond)
	l.finish(t)
	waitCaughtUp(t, f, rn, "s0", "s1")
	checkClean(t, store, id)
	for _, table := range []string{"customers", "orders"} {
		src := f.count("s0", "SELECT count(*) FROM "+table) + f.count("s1", "SELECT count(*) FROM "+table)
		var got int64
		for _, c := range []string{"t0", "t1", "t2", "t3"} {
			n := f.count(c, "SELECT count(*) FROM "+table)
			if n == 0 {
				t.Errorf("%s: no %s", c, table)
			}
			got += n
		}
		if src != got {
			t.Errorf("%s: sources %d rows, targets %d", table, src, got)
		}
	}
	for _, c := range []string{"t0", "t1", "t2", "t3"} {
		if n := f.count(c, "SELECT count(*) FROM countries"); n != 3 {
			t.Errorf("%s: %d countries", c, n)
		}
	}
	rn.stop(t)

	if err := Cancel(context.Background(), store, id); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"s0", "s1"} {
		if n := f.count(c, "SELECT count(*) FROM pg_replication_slots WHERE database = current_database()"); n != 0 {
			t.Errorf("%s: %d slots left", c, n)
		}
		if n := f.count(c, "SELECT count(*) FROM pg_publication"); n != 0 {
			t.Errorf("%s: %d publications left", c, n)
		}
	}
	for _, c := range []string{"t0", "t3"} {
		if n := f.count(c, "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"); n != 0 {
			t.Errorf("%s: %d tables left", c, n)
		}
	}
	if w, _ := store.Get(context.Background(), id); w.Phase != PhaseCancelled {
		t.Errorf("phase %s", w.Phase)
	}
	if _, err := NewRunner(context.Background(), store, id); err == nil {
		t.Error("a cancelled workflow runs again")
	}
}

func TestCancelWhileStreamingDropsTheActiveSlot(t *testing.T) {
	f, spec := moveTablesFixture(t, 200)
	store := f.store()
	id, _, err := Create(testCtx(t), store, spec, false)
	if err != nil {
		t.Fatal(err)
	}
	rn := startRun(t, store, id)
	waitPhase(t, store, rn, id, PhaseStreaming)
	if err := Cancel(context.Background(), store, id); err != nil {
		t.Fatal(err)
	}
	if n := f.count("main", "SELECT count(*) FROM pg_replication_slots WHERE database = current_database()"); n != 0 {
		t.Errorf("%d slots left", n)
	}
	rn.cancel()
	<-rn.done
	rn.once.Do(func() {})
	if w, _ := store.Get(context.Background(), id); w.Phase != PhaseCancelled {
		t.Errorf("phase %s after the stream ended", w.Phase)
	}
}

func TestReshardRefusesAMerge(t *testing.T) {
	_, spec, _ := reshardFixture(t, 10)
	spec.To = strings.Replace(spec.To, `shards: { "-40": t0, "40-80": t1, "80-c0": t2, "c0-": t3 }`, `shards: { "-": t0 }`, 1)
	_, err := NewPlan(spec)
	if sqlerr.Code(err) != sqlerr.FeatureNotSupported || !strings.Contains(err.Error(), "target cluster t0 would take rows of public.customers from several source clusters") {
		t.Fatalf("err = %v", err)
	}
}

func TestStatusShowsCopyAndStream(t *testing.T) {
	f, spec := moveTablesFixture(t, 1200)
	store := f.store()
	id, _, err := Create(testCtx(t), store, spec, false)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Status(context.Background(), id)
	if err != nil || st.Phase != PhaseCreated || len(st.Tables) != 1 || st.Tables[0].RowsCopied != 0 {
		t.Fatalf("before run: %+v %v", st, err)
	}
	rn := startRun(t, store, id)
	waitPhase(t, store, rn, id, PhaseStreaming)
	f.exec("main", "INSERT INTO orders VALUES (5000, 1, 'late', 1)")
	waitCaughtUp(t, f, rn, "main")
	time.Sleep(1500 * time.Millisecond) // progress reaches main once a second
	st, err = store.Status(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	tb := st.Tables[0]
	if tb.RowsCopied != 1200 || tb.RowsTotal != 1200 || !tb.Done || st.Streams[0].AppliedLSN == "" || st.Streams[0].Slot != slotName(id, "main") {
		t.Fatalf("status: %+v %+v", tb, st.Streams)
	}
	if txt := st.Text(); !strings.Contains(txt, "streaming") || !strings.Contains(txt, "1200/1200 rows  copied") {
		t.Fatalf("text:\n%s", txt)
	}
}

func TestStreamAppliesTruncate(t *testing.T) {
	f, spec := moveTablesFixture(t, 300)
	store := f.store()
	id, _, err := Create(testCtx(t), store, spec, false)
	if err != nil {
		t.Fatal(err)
	}
	rn := startRun(t, store, id)
	waitPhase(t, store, rn, id, PhaseStreaming)
	f.exec("main", "TRUNCATE orders; INSERT INTO orders VALUES (1, 1, 'after', 1)")
	waitCaughtUp(t, f, rn, "main")
	if n := f.count("t0", "SELECT count(*) FROM orders") + f.count("t1", "SELECT count(*) FROM orders"); n != 1 {
		t.Fatalf("%d rows on the targets after TRUNCATE and one insert", n)
	}
	checkClean(t, store, id)
}
