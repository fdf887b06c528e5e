// Package pgbench runs PostgreSQL's pgbench, initialisation and the TPC-B
// like workload, through shardgate over two clusters laid out by
// topology.yaml (branches and tellers on main) and by
// topology_reference.yaml (a copy of them on every cluster; see
// README.md), and checks the TPC-B invariant on the backends afterwards.
package pgbench

import (
	"context"
	_ "embed"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/shardgate/shardgate/internal/proxytest"
	"github.com/shardgate/shardgate/internal/testenv"
	"github.com/shardgate/shardgate/planner"
	"github.com/shardgate/shardgate/proxy"
	"github.com/shardgate/shardgate/topology"
	"github.com/shardgate/shardgate/vschema"
)

//go:embed topology.yaml
var topologyYAML string

//go:embed topology_reference.yaml
var referenceYAML string

// layout is one topology of pgbench's tables.
type layout struct {
	name string
	yaml string
	// reference: branches and tellers are reference tables of group
	// bench (a copy on each cluster); otherwise they are main's, on pg0.
	reference bool
}

// layouts are run in this order: the reference layout's first DROP
// removes all four tables everywhere, the main layout's only where they
// live under it.
var layouts = []layout{{"main", topologyYAML, false}, {"reference", referenceYAML, true}}

var (
	seconds = flag.Int("pgbench.seconds", 10, "pgbench -T: seconds of TPC-B workload (simple protocol; then half as long with -M prepared)")
	scale   = flag.Int("pgbench.scale", 4, "pgbench -i -s: scale factor (100000 accounts each)")
	clients = flag.Int("pgbench.clients", 8, "pgbench -c")
)

var env *testenv.Env

func TestMain(m *testing.M) {
	flag.Parse()
	testenv.Run(m, testenv.Options{N: 2, Databases: []string{"bench"}}, func(e *testenv.Env) error {
		env = e
		return nil
	})
}

// topologyFor is a layout's file with the test clusters' DSNs.
func topologyFor(t *testing.T, l layout) *topology.Topology {
	t.Helper()
	return proxytest.Parse(t, proxytest.Retarget(l.yaml, env, "bench"))
}

// run runs pgbench against the proxy at addr, logging its output.
func run(t *testing.T, bin, addr string, timeout time.Duration, args ...string) string {
	t.Helper()
	host, port, _ := net.SplitHostPort(addr)
	full := append([]string{"-h", host, "-p", port, "-U", "postgres"}, args...)
	full = append(full, "bench")
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, full...)
	cmd.Env = append(os.Environ(), "PGSSLMODE=disable", "PGCONNECT_TIMEOUT=10")
	start := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("pgbench %s (%s):\n%s", strings.Join(args, " "), time.Since(start).Round(time.Millisecond), out)
	if err != nil {
		t.Fatalf("pgbench %s: %v", strings.Join(args, " "), err)
	}
	return string(out)
}

func backend(t *testing.T, i int) *pgx.Conn {
	t.Helper()
	c, err := env.Clusters[i].Conn(context.Background(), "bench")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func queryInt(t *testing.T, c *pgx.Conn, sql string) int64 {
	t.Helper()
	var n int64
	if err := c.QueryRow(context.Background(), sql).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// routes are the statements pgbench sends (PostgreSQL 15's pgbench -i, the
// start of a run, and the TPC-B like script) and the first line of their
// plan under topology.yaml (main) and topology_reference.yaml (reference;
// "" when the same).
var routes = []struct{ sql, main, reference string }{
	{"drop table if exists pgbench_accounts, pgbench_branches, pgbench_history, pgbench_tellers", "DDLSplit groups=bench,main", "Route AllClusters group=bench"},
	{"create table pgbench_accounts(aid int not null,bid int,abalance int,filler char(84)) with (fillfactor=100)", "Route AllClusters group=bench", ""},
	{"create table pgbench_branches(bid int not null,bbalance int,filler char(88)) with (fillfactor=100)", "Route Unsharded group=main", "Route AllClusters group=bench"},
	{"truncate table pgbench_accounts, pgbench_branches, pgbench_history, pgbench_tellers", "DDLSplit groups=bench,main", "Route AllClusters group=bench"},
	{"insert into pgbench_branches(bid,bbalance) values(1,0)", "Route Unsharded group=main", "Route AllClusters group=bench"},
	{"insert into pgbench_tellers(tid,bid,tbalance) values (1,1,0)", "Route Unsharded group=main", "Route AllClusters group=bench"},
	{"copy pgbench_accounts from stdin with (freeze on)", "CopyIn group=bench table=pgbench_accounts index=by_aid(aid) format=text", ""},
	{"vacuum analyze pgbench_accounts", "Route AllClusters group=bench", ""},
	{"alter table pgbench_accounts add primary key (aid)", "Route AllClusters group=bench", ""},
	{"alter table pgbench_tellers add primary key (tid)", "Route Unsharded group=main", "Route AllClusters group=bench"},
	{"select count(*) from pgbench_branches", "Route Unsharded group=main", "Route AnyShard group=bench"},
	{"select o.n, p.partstrat, pg_catalog.count(i.inhparent) from pg_catalog.pg_class as c join pg_catalog.pg_namespace as n on (n.oid = c.relnamespace) cross join lateral (select pg_catalog.array_position(pg_catalog.current_schemas(true), n.nspname)) as o(n) left join pg_catalog.pg_partitioned_table as p on (p.partrelid = c.oid) left join pg_catalog.pg_inherits as i on (c.oid = i.inhparent) where c.relname = 'pgbench_accounts' and o.n is not null group by 1, 2 order by 1 asc limit 1", "Route Unsharded group=main", ""},
	{"truncate pgbench_history", "Route AllClusters group=bench", ""},
	{"UPDATE pgbench_accounts SET abalance = abalance + -4711 WHERE aid = 31415;", "Route EqualUnique group=bench index=by_aid key=31415", ""},
	{"SELECT abalance FROM pgbench_accounts WHERE aid = 31415;", "Route EqualUnique group=bench index=by_aid key=31415", ""},
	{"UPDATE pgbench_tellers SET tbalance = tbalance + -4711 WHERE tid = 7;", "Route Unsharded group=main", "Route AllClusters group=bench"},
	{"UPDATE pgbench_branches SET bbalance = bbalance + -4711 WHERE bid = 1;", "Route Unsharded group=main", "Route AllClusters group=bench"},
	{"INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (7, 1, 31415, -4711, CURRENT_TIMESTAMP);", "Route EqualUnique group=bench index=by_aid key=31415", ""},
}

// TestRoutes checks where each statement pgbench sends goes, under both
// layouts.
func TestRoutes(t *testing.T) {
	for _, l := range layouts {
		vs, err := vschema.Build(topologyFor(t, l))
		if err != nil {
			t.Fatal(err)
		}
		p := planner.New(vs)
		for _, r := range routes {
			want := r.main
			if l.reference && r.reference != "" {
				want = r.reference
			}
			pl, err := p.Plan(strings.TrimSuffix(r.sql, ";"))
			if err != nil {
				t.Errorf("%s: %s: %v", l.name, r.sql, err)
				continue
			}
			if got := pl.Explain()[0]; !strings.HasPrefix(got, want) {
				t.Errorf("%s: %s:\n got %s\nwant %s", l.name, r.sql, got, want)
			}
		}
	}
}

// TestPgbench initialises pgbench's tables through the proxy (DROP and
// TRUNCATE of all four tables, split per cluster under topology.yaml;
// CREATE, INSERT, COPY ... FREEZE, VACUUM, ALTER TABLE ... ADD PRIMARY KEY),
// runs the TPC-B like workload, and checks on the backends that every
// account and history row is on the shard of its aid, where branches and
// tellers are (main's cluster only, or identical copies on both), and the
// TPC-B invariant: the sums of abalance, tbalance, bbalance and history's
// delta are all equal. Once per layout.
func TestPgbench(t *testing.T) {
	bin := testenv.Pgbench(t)
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) { runPgbench(t, bin, l) })
	}
}

func runPgbench(t *testing.T, bin string, l layout) {
	topo := topologyFor(t, l)
	vs, err := vschema.Build(topo)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := proxy.NewServer(proxy.Config{
		PoolSize: 2 * *clients, MaxWait: 30 * time.Second,
		Logger: proxytest.Logger(),
	}, topo)
	if err != nil {
		t.Fatal(err)
	}
	addr := proxytest.Serve(t, srv)

	run(t, bin, addr, 5*time.Minute, "-i", "-s", strconv.Itoa(*scale))
	c0, c1 := backend(t, 0), backend(t, 1)
	accounts := int64(*scale) * 100000
	checkPlacement(t, vs, "pgbench_accounts", accounts)
	// Branches and tellers: on main's pg0 only, or a copy on each.
	wantBranches := []int64{int64(*scale), -1}
	wantKeys := []int64{3, 1}
	if l.reference {
		wantBranches[1], wantKeys[1] = int64(*scale), 3
	}
	for i, c := range []*pgx.Conn{c0, c1} {
		n := int64(-1)
		if queryInt(t, c, "SELECT count(*) FROM pg_tables WHERE tablename = 'pgbench_branches'") == 1 {
			n = queryInt(t, c, "SELECT count(*) FROM pgbench_branches")
		}
		if n != wantBranches[i] {
			t.Fatalf("pg%d: %d branches (-1: no table), want %d", i, n, wantBranches[i])
		}
		if n := queryInt(t, c, "SELECT count(*) FROM pg_indexes WHERE tablename LIKE 'pgbench_%' AND indexname LIKE '%_pkey'"); n != wantKeys[i] {
			t.Fatalf("pg%d: %d primary keys, want %d", i, n, wantKeys[i])
		}
	}

	out := run(t, bin, addr, time.Duration(*seconds)*time.Second+2*time.Minute, "-c", strconv.Itoa(*clients), "-j", "2", "-T", strconv.Itoa(*seconds))
	processed := regexp.MustCompile(`number of transactions actually processed: (\d+)`).FindStringSubmatch(out)
	if processed == nil || processed[1] == "0" {
		t.Fatal("pgbench processed no transactions")
	}
	if m := regexp.MustCompile(`number of failed transactions: (\d+)`).FindStringSubmatch(out); m != nil && m[1] != "0" {
		t.Fatalf("%s failed transactions", m[1])
	}
	txns, _ := strconv.ParseInt(processed[1], 10, 64)
	// The extended protocol too; -n: no VACUUM and no TRUNCATE of history,
	// which keeps the invariant's sums comparable.
	out = run(t, bin, addr, time.Duration(*seconds)*time.Second+2*time.Minute, "-n", "-M", "prepared", "-c", strconv.Itoa(*clients), "-j", "2", "-T", strconv.Itoa(max(*seconds/2, 1)))
	processed = regexp.MustCompile(`number of transactions actually processed: (\d+)`).FindStringSubmatch(out)
	if processed == nil || processed[1] == "0" {
		t.Fatal("pgbench -M prepared processed no transactions")
	}
	if m := regexp.MustCompile(`number of failed transactions: (\d+)`).FindStringSubmatch(out); m != nil && m[1] != "0" {
		t.Fatalf("%s failed transactions", m[1])
	}
	more, _ := strconv.ParseInt(processed[1], 10, 64)
	txns += more

	// History: one row per transaction, each with its account's shard.
	checkPlacement(t, vs, "pgbench_history", txns)
	checkPlacement(t, vs, "pgbench_accounts", accounts)

	// Reference tables: both copies identical.
	var copies []string
	if l.reference {
		copies = []string{"pgbench_branches", "pgbench_tellers"}
	}
	for _, table := range copies {
		q := fmt.Sprintf("SELECT string_agg(t::text, ',' ORDER BY t::text) FROM %s t", table)
		var a, b string
		if err := c0.QueryRow(context.Background(), q).Scan(&a); err != nil {
			t.Fatal(err)
		}
		if err := c1.QueryRow(context.Background(), q).Scan(&b); err != nil {
			t.Fatal(err)
		}
		if a != b {
			t.Fatalf("the copies of %s differ", table)
		}
	}

	// The TPC-B invariant.
	abalance := queryInt(t, c0, "SELECT coalesce(sum(abalance), 0) FROM pgbench_accounts") +
		queryInt(t, c1, "SELECT coalesce(sum(abalance), 0) FROM pgbench_accounts")
	delta := queryInt(t, c0, "SELECT coalesce(sum(delta), 0) FROM pgbench_history") +
		queryInt(t, c1, "SELECT coalesce(sum(delta), 0) FROM pgbench_history")
	tbalance := queryInt(t, c0, "SELECT sum(tbalance) FROM pgbench_tellers")
	bbalance := queryInt(t, c0, "SELECT sum(bbalance) FROM pgbench_branches")
	t.Logf("%d transactions; sum(abalance) = %d, sum(tbalance) = %d, sum(bbalance) = %d, sum(delta) = %d",
		txns, abalance, tbalance, bbalance, delta)
	if abalance != tbalance || tbalance != bbalance || bbalance != delta {
		t.Fatal("TPC-B invariant violated")
	}
	if abalance == 0 && txns > 100 {
		t.Fatal("balances did not move")
	}
	// Every two-phase commit finished.
	for i, c := range []*pgx.Conn{c0, c1} {
		if n := queryInt(t, c, "SELECT count(*) FROM pg_prepared_xacts"); n != 0 {
			t.Fatalf("cluster pg%d has %d prepared transactions left", i, n)
		}
	}
}

// checkPlacement checks that table holds want rows over the clusters, each
// on the cluster its aid maps to.
func checkPlacement(t *testing.T, vs *vschema.VSchema, table string, want int64) {
	t.Helper()
	g := vs.Table("", table).Group
	var total int64
	for i, cl := range env.Clusters {
		c := backend(t, i)
		rows, err := c.Query(context.Background(), "SELECT aid FROM "+table)
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		for rows.Next() {
			var aid int64
			if err := rows.Scan(&aid); err != nil {
				t.Fatal(err)
			}
			s, err := g.ShardFor(vschema.IntegerKey(aid))
			if err != nil {
				t.Fatal(err)
			}
			if s.Cluster != cl.Name {
				t.Fatalf("%s: aid %d is on %s, but maps to %s", table, aid, cl.Name, s.Cluster)
			}
			n++
		}
		if rows.Err() != nil {
			t.Fatal(rows.Err())
		}
		t.Logf("%s: %d rows on %s", table, n, cl.Name)
		total += n
	}
	if total != want {
		t.Fatalf("%s: %d rows, want %d", table, total, want)
	}
}
