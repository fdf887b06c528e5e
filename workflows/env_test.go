package workflows

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/shardgate/shardgate/internal/testenv"
)

func TestMain(m *testing.M) {
	testenv.Run(m, testenv.Options{N: 1}, nil)
}

var dbSeq atomic.Int64

// fixture is a set of databases on the shared server, each standing for
// one cluster of a topology.
type fixture struct {
	t   *testing.T
	env *testenv.Env
	dbs map[string]string // cluster name -> database
}

// newFixture creates one fresh database per cluster name; they (and any
// slot left in them) are dropped when the test ends.
func newFixture(t *testing.T, clusters ...string) *fixture {
	t.Helper()
	return newFixtureOn(t, testenv.Shared(t), clusters...)
}

// newFixtureOn is newFixture on the server of env.
func newFixtureOn(t *testing.T, env *testenv.Env, clusters ...string) *fixture {
	t.Helper()
	f := &fixture{t: t, env: env, dbs: map[string]string{}}
	n := dbSeq.Add(1)
	ctx := context.Background()
	for _, c := range clusters {
		db := fmt.Sprintf("wf%d_%s", n, c)
		if err := f.env.Clusters[0].Exec(ctx, "", "CREATE DATABASE "+db); err != nil {
			t.Fatal(err)
		}
		f.dbs[c] = db
	}
	t.Cleanup(func() {
		for _, db := range f.dbs {
			_ = f.env.Clusters[0].Exec(ctx, "", `SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE database = $1 AND active_pid IS NOT NULL`, db)
			_ = f.env.Clusters[0].Exec(ctx, "", `SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE database = $1`, db)
			_ = f.env.Clusters[0].Exec(ctx, "", "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)")
		}
	})
	return f
}

func (f *fixture) dsn(cluster string) string { return f.env.Clusters[0].DSN(f.dbs[cluster]) }

// clustersYAML is the clusters section of a topology over the fixture.
func (f *fixture) clustersYAML(names ...string) string {
	var b strings.Builder
	b.WriteString("version: 1\nclusters:\n")
	for _, n := range names {
		fmt.Fprintf(&b, "  %s: { dsn: %q }\n", n, f.dsn(n))
	}
	return b.String()
}

func (f *fixture) exec(cluster, sql string, args ...any) {
	f.t.Helper()
	if err := f.env.Clusters[0].Exec(context.Background(), f.dbs[cluster], sql, args...); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) conn(cluster string) *pgx.Conn {
	f.t.Helper()
	c, err := pgx.Connect(context.Background(), f.dsn(cluster))
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func (f *fixture) count(cluster, sql string, args ...any) int64 {
	f.t.Helper()
	var n int64
	if err := f.conn(cluster).QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		f.t.Fatal(err)
	}
	return n
}

func (f *fixture) store() *Store {
	f.t.Helper()
	s, err := OpenStore(context.Background(), f.dsn("main"))
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { s.Close() })
	return s
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// moveTablesFixture: main holds public.orders (and public.noauth without a
// primary key); by_customer has shards -80 on t0 and 80- on t1.
func moveTablesFixture(t *testing.T, rows int) (*fixture, Spec) {
	return moveTablesFixtureOn(newFixture(t, "main", "t0", "t1"), rows)
}

// moveTablesFixtureOn is moveTablesFixture in the databases of f.
func moveTablesFixtureOn(f *fixture, rows int) (*fixture, Spec) {
	f.exec("main", `CREATE TABLE orders (id bigint PRIMARY KEY, customer_id bigint NOT NULL, note text, amount numeric(10,2));
		CREATE INDEX orders_customer ON orders (customer_id);
		CREATE TABLE nopk (a int, customer_id bigint);`)
	f.exec("main", `INSERT INTO orders SELECT g, g % 97, 'note ' || g, g / 10.0 FROM generate_series(1, $1::int) g`, rows)
	clusters := f.clustersYAML("main", "t0", "t1")
	from := clusters + "groups:\n  main: { unsharded: true, cluster: main }\n" +
		"  by_customer:\n    index: { name: by_customer, column: customer_id, type: bigint, function: xxhash }\n" +
		"    shards: { \"-80\": t0, \"80-\": t1 }\n    tables: { customers: { column: id } }\n"
	to := strings.Replace(from, "tables: { customers: { column: id } }", "tables: { customers: { column: id }, orders: {}, nopk: {} }", 1)
	return f, Spec{Kind: MoveTables, From: from, To: to, FromFile: "from.yaml", ToFile: "to.yaml", Group: "by_customer",
		Tables: []string{"orders"}, ChunkRows: 500}
}
