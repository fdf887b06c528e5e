package workflows

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/shardgate/shardgate/keyexpr"
	"github.com/shardgate/shardgate/sqlerr"
	"github.com/shardgate/shardgate/vschema"
)

// layout describes a reshard fixture: the shards of by_customer before
// and after (YAML mappings), the clusters besides main, the primary key
// of orders, and an optional unique global secondary index on
// customers.name (customers_by_name).
type layout struct {
	from, to string
	clusters []string
	ordersPK string
	gsi      bool
}

var twoToFour = layout{
	from:     `{ "-80": s0, "80-": s1 }`,
	to:       `{ "-40": t0, "40-80": t1, "80-c0": t2, "c0-": t3 }`,
	clusters: []string{"s0", "s1", "t0", "t1", "t2", "t3"},
	ordersPK: "id",
}

// reshardFixture: by_customer on s0 (-80) and s1 (80-), to be split onto
// t0..t3; customers and orders are placed on their shard's source.
func reshardFixture(t *testing.T, customers int) (*fixture, Spec, *vschema.VSchema) {
	return groupFixture(t, twoToFour, customers)
}

// groupFixture builds the clusters of a layout and fills its sources
// (the clusters of the shards before) with customers, two orders each
// and three countries, each row on its shard's cluster; the lookup rows
// of the secondary index too, on the shard of their value.
func groupFixture(t *testing.T, l layout, customers int) (*fixture, Spec, *vschema.VSchema) {
	f := newFixture(t, append([]string{"main"}, l.clusters...)...)
	group := "  by_customer:\n    index: { name: by_customer, column: customer_id, type: bigint, function: xxhash }\n" +
		"    tables: { customers: { column: id }, orders: {} }\n    reference: [countries]\n"
	if l.gsi {
		group += "    secondary_indexes: { customers_by_name: { table: customers, column: name, type: text, unique: true, state: active } }\n"
	}
	from := f.clustersYAML(append([]string{"main"}, l.clusters...)...) + "groups:\n  main: { unsharded: true, cluster: main }\n" +
		group + "    shards: " + l.from + "\n"
	to := strings.Replace(from, "shards: "+l.from, "shards: "+l.to, 1)
	vs := buildVSchema(t, from)
	schema := fmt.Sprintf(`CREATE TABLE customers (id bigint PRIMARY KEY, name text);
		CREATE TABLE orders (id bigint NOT NULL, customer_id bigint NOT NULL, note text, PRIMARY KEY (%s));
		CREATE TABLE countries (code text PRIMARY KEY, name text);
		INSERT INTO countries VALUES ('fr', 'France'), ('de', 'Germany'), ('jp', 'Japan');`, l.ordersPK)
	if l.gsi {
		schema += "CREATE TABLE customers_by_name (name text NOT NULL PRIMARY KEY, id bigint NOT NULL);"
	}
	for _, c := range vs.Group("by_customer").Clusters {
		f.exec(c, schema)
	}
	rows, orders, lookup := map[string][][]any{}, map[string][][]any{}, map[string][][]any{}
	for id := 1; id <= customers; id++ {
		c := sourceOf(vs, int64(id))
		name := fmt.Sprintf("customer %d", id)
		rows[c] = append(rows[c], []any{int64(id), name})
		for o := 0; o < 2; o++ {
			orders[c] = append(orders[c], []any{int64(id*10 + o), int64(id), "order"})
		}
		if l.gsi {
			lc := lookupOf(vs, name)
			lookup[lc] = append(lookup[lc], []any{name, int64(id)})
		}
	}
	ctx := context.Background()
	for c := range rows {
		conn := f.conn(c)
		if _, err := conn.CopyFrom(ctx, pgx.Identifier{"customers"}, []string{"id", "name"}, pgx.CopyFromRows(rows[c])); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.CopyFrom(ctx, pgx.Identifier{"orders"}, []string{"id", "customer_id", "note"}, pgx.CopyFromRows(orders[c])); err != nil {
			t.Fatal(err)
		}
	}
	for c := range lookup {
		if _, err := f.conn(c).CopyFrom(ctx, pgx.Identifier{"customers_by_name"}, []string{"name", "id"}, pgx.CopyFromRows(lookup[c])); err != nil {
			t.Fatal(err)
		}
	}
	return f, Spec{Kind: Reshard, From: from, To: to, FromFile: "from.yaml", ToFile: "to.yaml", Group: "by_customer", ChunkRows: 300}, vs
}

func sourceOf(vs *vschema.VSchema, customer int64) string {
	s, _ := vs.Group("by_customer").ShardFor(vschema.IntegerKey(customer))
	return s.Cluster
}

// lookupOf is the cluster of the lookup row of a customer's name.
func lookupOf(vs *vschema.VSchema, name string) string {
	lt := vs.Table("public", "customers_by_name")
	key, err := lt.KeyFromColumns(func(string) (keyexpr.Value, bool) { return keyexpr.Text(name), true })
	if err != nil {
		panic(err)
	}
	s, _ := lt.Group.ShardFor(key)
	return s.Cluster
}

// reshardLoad writes through the old topology's routing: order inserts,
// note updates, customer changes (a delete on one source and an insert on
// the other when the new customer lives elsewhere, as the proxy does it),
// deletes, and with a secondary index renames of customers (the owner row
// updated, the old lookup row deleted and the new one inserted on the
// shards of their values).
func reshardLoad(t *testing.T, f *fixture, vs *vschema.VSchema, customers int) *load {
	conns := map[string]*pgx.Conn{}
	for _, c := range vs.Group("by_customer").Clusters {
		conns[c] = f.conn(c)
	}
	kinds := 4
	if len(vs.Group("by_customer").SecondaryIndexes) > 0 {
		kinds = 5
	}
	next := int64(customers*10 + 10)
	return runLoad(t, func(ctx context.Context, i int) error {
		cust := int64(1 + (i*7919)%customers)
		src := conns[sourceOf(vs, cust)]
		var err error
		switch i % kinds {
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
		case 4:
			var old string
			name := fmt.Sprintf("customer %d v%d", cust, i)
			if err = src.QueryRow(ctx, `UPDATE customers c SET name = $2 FROM (SELECT name FROM customers WHERE id = $1) o
				WHERE c.id = $1 RETURNING o.name`, cust, name).Scan(&old); err != nil {
				return err
			}
			if _, err = conns[lookupOf(vs, old)].Exec(ctx, "DELETE FROM customers_by_name WHERE name = $1", old); err == nil {
				_, err = conns[lookupOf(vs, name)].Exec(ctx, "INSERT INTO customers_by_name VALUES ($1, $2)", name, cust)
			}
		}
		return err
	})
}

// reshardUnderLoad creates the workflow and runs it under reshardLoad
// until it streams, then stops the load and waits until the stream has
// applied everything the sources wrote.
func reshardUnderLoad(t *testing.T, f *fixture, spec Spec, vs *vschema.VSchema, customers int) (*Store, int64, *running) {
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
	waitCaughtUp(t, f, rn, vs.Group("by_customer").Clusters...)
	return store, id, rn
}

// createAndStream creates the workflow and runs it until it streams.
func createAndStream(t *testing.T, f *fixture, spec Spec) (*Store, int64, *running) {
	store := f.store()
	id, _, err := Create(testCtx(t), store, spec, false)
	if err != nil {
		t.Fatal(err)
	}
	rn := startRun(t, store, id)
	waitPhase(t, store, rn, id, PhaseStreaming)
	return store, id, rn
}

func TestReshardTwoToFourUnderLoadThenCancel(t *testing.T) {
	const customers = 1000
	f, spec, vs := reshardFixture(t, customers)
	store, id, rn := reshardUnderLoad(t, f, spec, vs, customers)
	checkClean(t, store, id)
	sameCounts(t, f, []string{"s0", "s1"}, []string{"t0", "t1", "t2", "t3"}, "customers", "orders")
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
	store, id, rn := createAndStream(t, f, spec)
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

func TestReshardRefusesAMergeThatCouldLoseRows(t *testing.T) {
	f, spec, _ := reshardFixture(t, 10)
	spec.To = strings.Replace(spec.To, twoToFour.to, `{ "-": t0 }`, 1)
	_, _, err := Create(testCtx(t), f.store(), spec, false)
	want := `target cluster t0 would take rows of public.orders from several source clusters, and its shard key column "customer_id" is not in its primary key (id)`
	if sqlerr.Code(err) != sqlerr.FeatureNotSupported || !strings.Contains(err.Error(), want) {
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
	store, id, rn := createAndStream(t, f, spec)
	f.exec("main", "TRUNCATE orders; INSERT INTO orders VALUES (1, 1, 'after', 1)")
	waitCaughtUp(t, f, rn, "main")
	if n := f.count("t0", "SELECT count(*) FROM orders") + f.count("t1", "SELECT count(*) FROM orders"); n != 1 {
		t.Fatalf("%d rows on the targets after TRUNCATE and one insert", n)
	}
	checkClean(t, store, id)
}
