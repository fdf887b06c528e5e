package verify

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/shardgate/shardgate/gsi"
	"github.com/shardgate/shardgate/internal/proxytest"
	"github.com/shardgate/shardgate/internal/testenv"
	"github.com/shardgate/shardgate/keyexpr"
	"github.com/shardgate/shardgate/topology"
	"github.com/shardgate/shardgate/vschema"
)

func TestMain(m *testing.M) { testenv.Run(m, testenv.Options{N: 2}, nil) }

// fleet is a main database and two shard databases (s0 on the first
// server, s1 on the second) holding, consistently:
//   - vf_orders (customer_id, id), xxhash on customer_id, id drawn from
//     main's vf_orders_id_seq, with the unique index vf_orders_by_id
//     backfilled;
//   - vf_events (id), range 0-1000 on s0, 1000- on s1;
//   - vf_items (sku), xxhash on lower(sku);
//   - vf_countries, a reference table of the orders' group;
//   - vf_notes in main, its id a serial.
type fleet struct {
	t     *testing.T
	topo  *topology.Topology
	vs    *vschema.VSchema
	file  string
	conns map[string]*pgx.Conn
}

const fleetGroups = `groups:
  main:
    unsharded: true
    cluster: main
    tables: [vf_notes]
    sequences: [vf_orders_id_seq]
  by_customer:
    index: { column: customer_id, type: bigint, function: xxhash }
    shards: { "-80": s0, "80-": s1 }
    tables:
      vf_orders: { sequence: { column: id, name: vf_orders_id_seq } }
    reference: [vf_countries]
    secondary_indexes:
      vf_orders_by_id: { table: vf_orders, column: id, type: bigint, unique: true }
  by_range:
    index: { column: id, type: bigint, function: range }
    shards: [ { from: 0, to: 1000, cluster: s0 }, { from: 1000, cluster: s1 } ]
    tables: { vf_events: {} }
  by_sku:
    index: { expression: lower(sku), type: text, function: xxhash }
    shards: { "-80": s0, "80-": s1 }
    tables: { vf_items: {} }
`

func newFleet(t *testing.T, prefix string, orders int) *fleet {
	t.Helper()
	env := testenv.Shared(t)
	ctx := context.Background()
	pg := map[string]*testenv.Cluster{"main": env.Clusters[0], "s0": env.Clusters[0], "s1": env.Clusters[1]}
	f := &fleet{t: t, conns: map[string]*pgx.Conn{}}
	yaml := "version: 1\nclusters:\n"
	for _, c := range []string{"main", "s0", "s1"} {
		db := prefix + "_" + c
		_ = pg[c].Exec(ctx, "", "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)")
		if err := pg[c].Exec(ctx, "", "CREATE DATABASE "+db); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = pg[c].Exec(ctx, "", "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)") })
		conn, err := pg[c].Conn(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close(ctx) })
		f.conns[c] = conn
		yaml += fmt.Sprintf("  %s: { dsn: %q }\n", c, pg[c].DSN(db))
	}
	yaml += fleetGroups
	f.topo = proxytest.Parse(t, yaml)
	var err error
	if f.vs, err = vschema.Build(f.topo); err != nil {
		t.Fatal(err)
	}
	f.file = filepath.Join(t.TempDir(), "topology.yaml")
	if err := os.WriteFile(f.file, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	f.exec("main", "CREATE TABLE vf_notes (id serial PRIMARY KEY, body text)",
		"INSERT INTO vf_notes (body) SELECT 'n' || g FROM generate_series(1, 50) g",
		fmt.Sprintf("CREATE SEQUENCE vf_orders_id_seq; SELECT setval('vf_orders_id_seq', %d)", orders))
	for _, c := range []string{"s0", "s1"} {
		f.exec(c, "CREATE TABLE vf_orders (customer_id bigint NOT NULL, id bigint NOT NULL, note text, PRIMARY KEY (customer_id, id))",
			"CREATE TABLE vf_events (id bigint PRIMARY KEY, what text)",
			"CREATE TABLE vf_items (sku text PRIMARY KEY, price int)",
			"CREATE TABLE vf_countries (code text PRIMARY KEY, name text, pop bigint)",
			"INSERT INTO vf_countries SELECT 'c' || g, 'country ' || g, g * 1000 FROM generate_series(1, 300) g")
	}
	var rows [][]any
	for i := 1; i <= orders; i++ {
		rows = append(rows, []any{int64(i % 997), int64(i), fmt.Sprintf("note %d", i)})
	}
	f.load("vf_orders", []string{"customer_id", "id", "note"}, rows)
	rows = nil
	for i := 1; i <= 2000; i++ {
		rows = append(rows, []any{int64(i), fmt.Sprintf("event %d", i)})
	}
	f.load("vf_events", []string{"id", "what"}, rows)
	rows = nil
	for i := 1; i <= 500; i++ {
		rows = append(rows, []any{fmt.Sprintf("SKU-%d", i), int32(i)})
	}
	f.load("vf_items", []string{"sku", "price"}, rows)
	b, err := gsi.Open(ctx, f.topo, "vf_orders_by_id", true, gsi.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Run(ctx); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fleet) exec(cluster string, sqls ...string) {
	f.t.Helper()
	for _, q := range sqls {
		if _, err := f.conns[cluster].Exec(context.Background(), q); err != nil {
			f.t.Fatalf("%s: %s: %v", cluster, q, err)
		}
	}
}

// cluster is where a row of table with these column values lives.
func (f *fleet) cluster(table string, cols map[string]string) string {
	f.t.Helper()
	c, err := f.vs.Table("", table).ClusterOfRow(func(col string) (keyexpr.Value, bool) {
		v, ok := cols[col]
		return keyexpr.Text(v), ok
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return c
}

// load copies rows into table, each on its shard's cluster.
func (f *fleet) load(table string, cols []string, rows [][]any) {
	f.t.Helper()
	by := map[string][][]any{}
	for _, r := range rows {
		vals := map[string]string{}
		for i, c := range cols {
			vals[c] = fmt.Sprint(r[i])
		}
		c := f.cluster(table, vals)
		by[c] = append(by[c], r)
	}
	for c, rs := range by {
		if _, err := f.conns[c].CopyFrom(context.Background(), pgx.Identifier{table}, cols, pgx.CopyFromRows(rs)); err != nil {
			f.t.Fatal(err)
		}
	}
}

// other is the shard cluster that is not c.
func other(c string) string {
	if c == "s0" {
		return "s1"
	}
	return "s0"
}

// run runs a verify over the fleet.
func (f *fleet) run(opts Options) *Report {
	f.t.Helper()
	rep, err := Run(context.Background(), f.topo, opts)
	if err != nil {
		f.t.Fatal(err)
	}
	return rep
}

// unit is the report's unit of that name.
func unit(t *testing.T, rep *Report, name string) *Unit {
	t.Helper()
	for _, u := range rep.Units {
		if u.Name == name {
			return u
		}
	}
	var names []string
	for _, u := range rep.Units {
		names = append(names, u.Name)
	}
	t.Fatalf("no unit %q in %v", name, names)
	return nil
}
