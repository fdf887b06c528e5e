package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/shardgate/shardgate/internal/proxytest"
	"github.com/shardgate/shardgate/internal/testenv"
	"github.com/shardgate/shardgate/keyexpr"
	"github.com/shardgate/shardgate/routestate"
	"github.com/shardgate/shardgate/vschema"
)

// lookupFixture is a lookup group over real clusters: main and s0 on the
// first server, s1 and the private cluster pv on the second (two-phase
// commit ids are per server, and the tests commit across s0 and pv).
type lookupFixture struct {
	t    *testing.T
	dbs  map[string]string
	pg   map[string]*testenv.Cluster
	file string
	yaml string
}

var lookupClusters = []string{"main", "s0", "s1", "pv"}

func newLookupFixture(t *testing.T, prefix string) *lookupFixture {
	t.Helper()
	env := testenv.Shared(t)
	f := &lookupFixture{t: t, dbs: map[string]string{},
		pg: map[string]*testenv.Cluster{"main": env.Clusters[0], "s0": env.Clusters[0], "s1": env.Clusters[1], "pv": env.Clusters[1]}}
	ctx := context.Background()
	y := "version: 1\nclusters:\n"
	for _, c := range lookupClusters {
		db, pg := prefix+"_"+c, f.pg[c]
		_ = pg.Exec(ctx, "", "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)")
		if err := pg.Exec(ctx, "", "CREATE DATABASE "+db); err != nil {
			t.Fatal(err)
		}
		f.dbs[c] = db
		t.Cleanup(func() { _ = pg.Exec(ctx, "", "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)") })
		y += fmt.Sprintf("  %s: { dsn: %q }\n", c, pg.DSN(db))
	}
	y += `groups:
  main: { unsharded: true, cluster: main }
  by_tenant:
    index: { name: by_tenant, column: tenant_id, type: bigint, function: xxhash }
    shards: { "-80": s0, "80-": s1 }
    placement: lookup
    list: { "1001": pv }
    lookup_clusters: [pv]
    tables: { lk_accounts: {}, lk_events: {} }
    secondary_indexes:
      lk_accounts_by_email: { table: lk_accounts, column: email, type: text, unique: true, state: active }
`
	f.yaml = y
	f.file = filepath.Join(t.TempDir(), "topology.yaml")
	if err := os.WriteFile(f.file, []byte(y), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *lookupFixture) conn(cluster string) *pgx.Conn {
	return proxytest.Connect(f.t, f.pg[cluster].DSN(f.dbs[cluster]))
}

// where lists the clusters holding rows of table with tenant_id = key.
func (f *lookupFixture) where(table string, key int64) []string {
	f.t.Helper()
	var out []string
	for _, c := range lookupClusters[1:] {
		var n int
		if err := f.conn(c).QueryRow(context.Background(), "SELECT count(*) FROM "+table+" WHERE tenant_id = $1", key).Scan(&n); err != nil {
			f.t.Fatal(err)
		}
		if n > 0 {
			out = append(out, c)
		}
	}
	return out
}

// keyOn finds a key the function places on a cluster.
func keyOn(t *testing.T, vs *vschema.VSchema, cluster string, from int64) int64 {
	g := vs.Group("by_tenant")
	for k := from; ; k++ {
		if s, err := g.FunctionShard(vschema.IntegerKey(k)); err == nil && s.Cluster == cluster {
			return k
		}
	}
}

// emailOn finds an email for key k whose secondary index entry lives on
// a cluster.
func emailOn(t *testing.T, vs *vschema.VSchema, cluster string, k int64) string {
	si := vs.SecondaryIndexes()[0]
	for i := 0; ; i++ {
		e := fmt.Sprintf("a%d.%d@x", k, i)
		key, err := si.KeyFromValue(keyexpr.Text(e))
		if err != nil {
			t.Fatal(err)
		}
		if s, err := si.Lookup.Group.ShardFor(key); err == nil && s.Cluster == cluster {
			return e
		}
	}
}

func sqlState(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// TestLookupPlacement: through a proxy following main's routing
// revisions, a key placed with `tenant place` and a list value go to the
// private cluster for single-key statements, IN lists, COPY FROM, reads
// through a secondary index and a two-phase commit; scatters see them;
// EXPLAIN (ROUTE), `explain --effective` and `topology show --effective`
// name the lookup shard; a key with rows where it would leave is refused
// unless --force; a pending entry refuses its key with 55P03.
func TestLookupPlacement(t *testing.T) {
	f := newLookupFixture(t, "lk")
	ctx := context.Background()
	g := &gsiFixture{t: t, dbs: map[string]string{"main": f.dbs["main"]}}
	dsn := g.proxy(f.yaml, true)
	app := proxytest.Connect(t, dsn)
	exec1(t, app, "CREATE TABLE lk_accounts (tenant_id bigint NOT NULL, email text NOT NULL, PRIMARY KEY (tenant_id, email))")
	exec1(t, app, "CREATE TABLE lk_events (tenant_id bigint NOT NULL, n int NOT NULL)")
	var exists bool
	if err := f.conn("pv").QueryRow(ctx, "SELECT to_regclass('lk_accounts') IS NOT NULL AND to_regclass('lk_accounts_by_email') IS NOT NULL").Scan(&exists); err != nil || !exists {
		t.Fatalf("the DDL did not reach the lookup cluster pv: %v %v", exists, err)
	}
	vs, err := vschema.Build(proxytest.Parse(t, f.yaml))
	if err != nil {
		t.Fatal(err)
	}
	placed := keyOn(t, vs, "s0", 1)            // placed on pv by the directory
	other := keyOn(t, vs, "s0", placed+1)      // stays on s0
	elsewhere := keyOn(t, vs, "s1", 1)         // on s1
	refused := keyOn(t, vs, "s1", elsewhere+1) // gets rows on s1, then a placement

	out, _, err := run("tenant", "place", fmt.Sprint(placed), "--group", "by_tenant", "--to", "pv", "--topology", f.file)
	if err != nil || !strings.Contains(out, fmt.Sprintf("key %d of group by_tenant: pv instead of s0 (revision 2)", placed)) {
		t.Fatalf("tenant place: %q %v", out, err)
	}
	// Placed: every live proxy serves the revision already.
	// Each email's index entry lives on s0 (so no transaction prepares on
	// s1 and pv, one server, at once).
	emails := map[int64]string{}
	for _, k := range []int64{placed, other, elsewhere, 1001} {
		emails[k] = emailOn(t, vs, "s0", k)
		exec1(t, app, "INSERT INTO lk_accounts (tenant_id, email) VALUES ($1, $2)", k, emails[k])
	}
	want := map[int64]string{placed: "pv", other: "s0", elsewhere: "s1", 1001: "pv"}
	for k, c := range want {
		if got := f.where("lk_accounts", k); len(got) != 1 || got[0] != c {
			t.Errorf("lk_accounts rows of key %d on %v, want %s", k, got, c)
		}
	}
	var email string
	if err := app.QueryRow(ctx, "SELECT email FROM lk_accounts WHERE tenant_id = $1", placed).Scan(&email); err != nil || email != emails[placed] {
		t.Fatalf("point read of the placed key: %q %v", email, err)
	}
	var n int
	if err := app.QueryRow(ctx, fmt.Sprintf("SELECT count(*) FROM lk_accounts WHERE tenant_id IN (%d, %d, %d, 1001)", placed, other, elsewhere)).Scan(&n); err != nil || n != 4 {
		t.Fatalf("IN list: %d %v", n, err)
	}
	if err := app.QueryRow(ctx, "SELECT count(*) FROM lk_accounts").Scan(&n); err != nil || n != 4 {
		t.Fatalf("scatter: %d %v", n, err)
	}
	// The secondary index finds the owner key, which routes to pv.
	var owner int64
	if err := app.QueryRow(ctx, "SELECT tenant_id FROM lk_accounts WHERE email = $1", emails[placed]).Scan(&owner); err != nil || owner != placed {
		t.Fatalf("read through the secondary index: %d %v", owner, err)
	}
	explain := func(sql string) string {
		rows, err := app.Query(ctx, "EXPLAIN (ROUTE) "+sql)
		if err != nil {
			t.Fatal(err)
		}
		var lines []string
		for rows.Next() {
			var l string
			if err := rows.Scan(&l); err != nil {
				t.Fatal(err)
			}
			lines = append(lines, l)
		}
		return strings.Join(lines, "\n")
	}
	if e := explain(fmt.Sprintf("SELECT * FROM lk_accounts WHERE tenant_id = %d", placed)); !strings.Contains(e, "shards: lookup:pv (pv)") {
		t.Errorf("EXPLAIN of the placed key:\n%s", e)
	}
	if e := explain(fmt.Sprintf("SELECT * FROM lk_accounts WHERE tenant_id IN (%d, %d)", other, placed)); !strings.Contains(e, "shards: -80 (s0), lookup:pv (pv)") {
		t.Errorf("EXPLAIN of an IN list:\n%s", e)
	}
	out, _, err = run("explain", "--effective", "--topology", f.file, fmt.Sprintf("SELECT * FROM lk_accounts WHERE tenant_id = %d", placed))
	if err != nil || !strings.Contains(out, "shards: lookup:pv (pv)") {
		t.Errorf("explain --effective: %q %v", out, err)
	}
	out, _, err = run("topology", "show", "--effective", f.file)
	if err != nil || !strings.Contains(out, "list 1001") || !strings.Contains(out, fmt.Sprintf("directory %d", placed)) ||
		!strings.Contains(out, "groups.by_tenant.directory: revision 2") {
		t.Errorf("topology show --effective:\n%s %v", out, err)
	}

	// COPY FROM: each row to its key's cluster.
	copyIn := fmt.Sprintf("%d\t1\n%d\t2\n%d\t3\n1001\t4\n", placed, other, elsewhere)
	if _, err := app.PgConn().CopyFrom(ctx, strings.NewReader(copyIn), "COPY lk_events (tenant_id, n) FROM STDIN"); err != nil {
		t.Fatal(err)
	}
	for k, c := range want {
		if got := f.where("lk_events", k); len(got) != 1 || got[0] != c {
			t.Errorf("COPY: lk_events rows of key %d on %v, want %s", k, got, c)
		}
	}

	// Two-phase commit across s0 and pv.
	exec1(t, app, "BEGIN")
	exec1(t, app, "INSERT INTO lk_events (tenant_id, n) VALUES ($1, 10), ($2, 11)", placed, other)
	exec1(t, app, "COMMIT")
	if err := f.conn("pv").QueryRow(ctx, "SELECT count(*) FROM lk_events WHERE tenant_id = $1 AND n = 10", placed).Scan(&n); err != nil || n != 1 {
		t.Errorf("the two-phase commit's row on pv: %d %v", n, err)
	}
	// pv alone refuses the commit (a deferred constraint only it has):
	// the row on s0 is rolled back with it.
	exec1(t, f.conn("pv"), "ALTER TABLE lk_events ADD CONSTRAINT lk_events_once UNIQUE (tenant_id, n) DEFERRABLE INITIALLY DEFERRED")
	exec1(t, app, "BEGIN")
	exec1(t, app, "INSERT INTO lk_events (tenant_id, n) VALUES ($1, 12), ($2, 20), ($2, 20)", other, placed)
	if _, err := app.Exec(ctx, "COMMIT"); sqlState(err) != "23505" {
		t.Fatalf("COMMIT with pv's deferred violation: %v", err)
	}
	if err := f.conn("s0").QueryRow(ctx, "SELECT count(*) FROM lk_events WHERE tenant_id = $1 AND n = 12", other).Scan(&n); err != nil || n != 0 {
		t.Errorf("s0 kept %d rows of a transaction pv refused (%v)", n, err)
	}

	// A key with rows where it would leave is refused, and the entry is
	// restored; --force changes it without moving the rows.
	exec1(t, app, "INSERT INTO lk_events (tenant_id, n) VALUES ($1, 1)", refused)
	_, _, err = run("tenant", "place", fmt.Sprint(refused), "--group", "by_tenant", "--to", "pv", "--topology", f.file)
	if !strings.Contains(fmt.Sprint(err), "has rows in table public.lk_events on cluster s1") {
		t.Fatalf("placing a key with rows: %v", err)
	}
	exec1(t, app, "INSERT INTO lk_events (tenant_id, n) VALUES ($1, 2)", refused) // not pending any more
	if got := f.where("lk_events", refused); len(got) != 1 || got[0] != "s1" {
		t.Fatalf("after the refusal, rows of key %d on %v", refused, got)
	}
	_, _, err = run("tenant", "remove", fmt.Sprint(placed), "--group", "by_tenant", "--topology", f.file)
	if !strings.Contains(fmt.Sprint(err), "has rows in table public.lk_accounts on cluster pv") {
		t.Fatalf("removing a key with rows: %v", err)
	}
	if err := app.QueryRow(ctx, "SELECT count(*) FROM lk_events WHERE tenant_id = $1", placed).Scan(&n); err != nil || n != 2 {
		t.Fatalf("the placed key after a refused removal: %d %v", n, err)
	}
	out, _, err = run("tenant", "remove", fmt.Sprint(placed), "--group", "by_tenant", "--force", "--topology", f.file)
	if err != nil || !strings.Contains(out, "rows on pv not moved") {
		t.Fatalf("tenant remove --force: %q %v", out, err)
	}
	if err := app.QueryRow(ctx, "SELECT count(*) FROM lk_events WHERE tenant_id = $1", placed).Scan(&n); err != nil || n != 0 {
		t.Fatalf("the removed key reads its function's shard: %d %v", n, err)
	}
	for _, bad := range [][]string{
		{"tenant", "place", "1001", "--group", "by_tenant", "--to", "s0"},
		{"tenant", "place", "5", "--group", "by_tenant", "--to", "nowhere"},
		{"tenant", "place", "x", "--group", "by_tenant", "--to", "s0"},
		{"tenant", "place", "5", "--group", "main", "--to", "s0"},
	} {
		if _, _, err := run(append(bad, "--topology", f.file)...); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}

	// A pending entry refuses its key on every proxy that follows it.
	mainConn := f.conn("main")
	rev, err := routestate.Load(ctx, mainConn)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := routestate.Commit(ctx, mainConn, rev.Rev, "test", "pending", func(s *routestate.State) error {
		s.Directory = map[string]map[string]*routestate.Placed{"by_tenant": {fmt.Sprint(other): {Cluster: "pv", Pending: true, From: "s0"}}}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := routestate.WaitServed(ctx, mainConn, rev.Rev+1, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	_, err = app.Exec(ctx, "INSERT INTO lk_events (tenant_id, n) VALUES ($1, 5)", other)
	if sqlState(err) != "55P03" {
		t.Fatalf("a statement on a pending key: %v", err)
	}
	// Run again, place settles it (the key's rows on s0 refuse the move).
	_, _, err = run("tenant", "place", fmt.Sprint(other), "--group", "by_tenant", "--to", "s0", "--topology", f.file)
	if err != nil {
		t.Fatalf("settling a pending entry: %v", err)
	}
	exec1(t, app, "INSERT INTO lk_events (tenant_id, n) VALUES ($1, 5)", other)
}

// TestTopologyShowPlacements: topology show prints a group's placement,
// list values and lookup clusters; validate explains a bad list value
// with its line and column.
func TestTopologyShowPlacements(t *testing.T) {
	dir := t.TempDir()
	good := `version: 1
clusters:
  pg0: { dsn: "postgres://h:5432/db" }
  pg3: { dsn: "postgres://h:5433/db" }
  pg4: { dsn: "postgres://h:5434/db" }
groups:
  main: { unsharded: true, cluster: pg0 }
  by_region:
    index: { name: by_region, column: region, type: text, function: xxhash }
    shards: { "-": pg0 }
    placement: lookup
    list: { EU: pg3 }
    lookup_clusters: [pg4]
`
	file := filepath.Join(dir, "good.yaml")
	if err := os.WriteFile(file, []byte(good), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _, err := run("topology", "show", file)
	if err != nil {
		t.Fatal(err)
	}
	words := strings.Join(strings.Fields(out), " ")
	for _, want := range []string{"by_region: xxhash(region) text, placement lookup - pg0 list EU pg3 lookup cluster pg4"} {
		if !strings.Contains(words, want) {
			t.Errorf("topology show lacks %q:\n%s", want, out)
		}
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte(strings.Replace(strings.Replace(good, "type: text", "type: bigint", 1), "EU: pg3", "EU: pg9", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, stderr, err := run("topology", "validate", bad)
	if err == nil || !strings.Contains(stderr, `:12:13: list value "EU" is not a bigint (the index's type)`) {
		t.Errorf("validate: %v\n%s", err, stderr)
	}
}
