// Command failover measures issue 21's failover and switchover under
// pgbench: two `shardgate serve` over three clusters (pg0 main, pg1 with
// a synchronous standby, pg2 with an asynchronous one), a table sharded
// over the three, pgbench write lanes (testenv.StartLanes: single-client
// pgbench started again after an error, per-transaction logs) spread
// over both proxies. First pg1's primary is killed (kill -9 of its
// postmaster) and its standby promoted; then pg2 is switched over
// (SWITCHOVER on one proxy, the other PAUSEd for it). pgbench's logs are
// the oracle of the writes acknowledged.
//
//	bash bench/run.sh -scenario failover [-c 4] [-T 30] [-write-doc]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/shardgate/shardgate/bench/internal/benchkit"
	"github.com/shardgate/shardgate/internal/testenv"
)

const section = "## Failover and switchover under pgbench (issue 21)"

// script inserts row base + lane*1e9 + run*1e6 + n per transaction.
const script = `\set n :n + 1
\set id :base + :lane * 1000000000 + :run * 1000000 + :n
INSERT INTO customers (id, name) VALUES (:id, 'pgbench');
`

func main() {
	repo := flag.String("repo", "", "the shardgate repository (default: found from the working directory)")
	doc := flag.String("doc", "", "the document -write-doc updates (default: REPO/docs/benchmarks.md)")
	write := flag.Bool("write-doc", false, "put the report into the document's "+section+" section")
	clients := flag.Int("c", 4, "pgbench lanes per proxy")
	secs := flag.Int("T", 30, "seconds of load per phase")
	flag.Parse()
	if err := benchkit.DocPaths(repo, doc); err != nil {
		log.Fatal(err)
	}
	if err := run(*repo, *doc, *write, *clients, time.Duration(*secs)*time.Second); err != nil {
		log.Fatal(err)
	}
}

func logf(f string, a ...any) { log.Printf("failover: "+f, a...) }

// bench is the running set-up.
type bench struct {
	env      *testenv.Env
	sb1, sb2 *testenv.Cluster
	ports    [2]int
	pgbench  string
	tmp      string
	lanes    int
	load     time.Duration
}

func run(repo, doc string, write bool, clients int, load time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	tmp, err := os.MkdirTemp("", "shardgate-bench-failover-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	env, err := testenv.Start(ctx, testenv.Options{N: 3, Databases: []string{"bench"},
		Settings: map[string]string{"max_connections": "100"}})
	if err != nil {
		return err
	}
	defer env.Stop()
	release := env.StopOnSignal()
	defer release()
	b := &bench{env: env, tmp: tmp, lanes: 2 * clients, load: load}
	if b.sb1, err = env.Clusters[1].StartStandby(ctx, testenv.StandbyOptions{Sync: true}); err != nil {
		return err
	}
	if b.sb2, err = env.Clusters[2].StartStandby(ctx, testenv.StandbyOptions{}); err != nil {
		return err
	}
	for _, c := range env.Clusters {
		if err := c.Exec(ctx, "bench", "CREATE TABLE customers (id bigint PRIMARY KEY, name text NOT NULL)"); err != nil {
			return err
		}
	}
	topo := filepath.Join(tmp, "failover.yaml")
	if err := os.WriteFile(topo, []byte(b.topology()), 0o644); err != nil {
		return err
	}
	sg, err := benchkit.BuildShardgate(ctx, repo, tmp)
	if err != nil {
		return err
	}
	for i := range b.ports {
		if b.ports[i], err = benchkit.FreePort(); err != nil {
			return err
		}
		name := fmt.Sprintf("shardgate%d", i+1)
		proc, err := benchkit.StartShardgate(ctx, benchkit.Shardgate{Name: name, Bin: sg, Topology: topo, Port: b.ports[i],
			LogPath: filepath.Join(tmp, name+".log")})
		if err != nil {
			return err
		}
		defer proc.Stop(10 * time.Second)
	}
	time.Sleep(2 * time.Second) // the health checkers' first rounds
	if b.pgbench, err = pgbenchPath(); err != nil {
		return err
	}
	fo, err := b.failover(ctx)
	if err != nil {
		return err
	}
	sw, err := b.switchover(ctx)
	if err != nil {
		return err
	}
	return benchkit.Publish(b.report(repo, fo, sw), write, doc, logf)
}

func (b *bench) topology() string {
	return fmt.Sprintf(`version: 1
clusters:
  pg0:
    dsn: %q
  pg1:
    dsn: %q
    replicas: [%q]
    failover_buffer: 10s
  pg2:
    dsn: %q
    replicas: [%q]
    failover_buffer: 10s
groups:
  main: { unsharded: true, cluster: pg0 }
  by_id:
    index: { name: by_id, column: id, type: bigint, function: xxhash }
    shards: { "-55": pg0, "55-aa": pg1, "aa-": pg2 }
    tables:
      customers: {}
proxy:
  pool: { size: 16 }
  auth:
    users:
      postgres: { password: x, admin: true }
`, b.env.Clusters[0].DSN("bench"), b.env.Clusters[1].DSN("bench"), b.sb1.DSN("bench"),
		b.env.Clusters[2].DSN("bench"), b.sb2.DSN("bench"))
}

func pgbenchPath() (string, error) {
	dir, err := testenv.FindBinaries()
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, "pgbench")
	if _, err := os.Stat(p); err != nil {
		return "", errors.New("pgbench not found next to the server binaries (Debian: apt-get install postgresql)")
	}
	return p, nil
}

// startLoad starts the lanes over both proxies; ids begin at base.
func (b *bench) startLoad(ctx context.Context, name string, base int64) (*testenv.Lanes, error) {
	dir := filepath.Join(b.tmp, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, err
	}
	var dsns []string
	for _, p := range b.ports {
		dsns = append(dsns, fmt.Sprintf("postgres://postgres@127.0.0.1:%d/bench?sslmode=disable", p))
	}
	logf("%s: %d pgbench lanes (-n -c 1 -M simple, -l) over 2 proxies for %s", name, b.lanes, b.load)
	return testenv.StartLanes(ctx, testenv.LanesOptions{Pgbench: b.pgbench, Dir: dir, Script: script, DSNs: dsns,
		Lanes: b.lanes, Duration: b.load, Env: []string{"PGPASSWORD=x"}, Args: []string{"-M", "simple", "-D", fmt.Sprint("base=", base)}})
}

func laneID(base int64) func(testenv.LaneTxn) int64 {
	return func(t testenv.LaneTxn) int64 {
		return base + int64(t.Lane)*1_000_000_000 + int64(t.Run)*1_000_000 + t.N
	}
}

// failoverResult is what the failover phase measured.
type failoverResult struct {
	check              testenv.LanesCheck
	runs, errors       int
	inFlight           int           // errors of transactions begun before the old primary's processes were gone
	killTook, promote  time.Duration // kill -9 to the processes gone; pg_ctl promote -w
	resumed            time.Duration
	epochs             [2]string
	oldBefore, oldLast int
}

func (b *bench) failover(ctx context.Context) (*failoverResult, error) {
	const base = 0
	l, err := b.startLoad(ctx, "failover", base)
	if err != nil {
		return nil, err
	}
	r := &failoverResult{}
	time.Sleep(b.load / 3)
	old := b.env.Clusters[1]
	killStart := time.Now()
	logf("kill -9 of pg1's primary")
	if err := old.Kill9(); err != nil {
		return nil, err
	}
	killedAt := time.Now()
	time.Sleep(500 * time.Millisecond)
	// pg_ctl promote -w returns some time after the promotion (it polls):
	// the resume counts from its start.
	promoteStart := time.Now()
	if err := b.sb1.Promote(ctx); err != nil {
		return nil, err
	}
	r.killTook, r.promote = killedAt.Sub(killStart), time.Since(promoteStart)
	logf("pg1's standby promoted; the old primary restarts as a primary in 3 s")
	time.Sleep(3 * time.Second)
	if err := old.Start(ctx); err != nil {
		return nil, err
	}
	if r.oldBefore, err = count(ctx, old.DSN("bench")); err != nil {
		return nil, err
	}
	res, err := l.Wait()
	if err != nil {
		return nil, err
	}
	if r.oldLast, err = count(ctx, old.DSN("bench")); err != nil {
		return nil, err
	}
	r.runs, r.errors = res.Runs, len(res.Errors)
	for _, e := range res.Errors {
		logf("lane %d run %d: %s", e.Lane, e.Run, e.Message)
		if e.BeganBefore(killedAt) {
			r.inFlight++
		}
	}
	c := b.env.Clusters
	if r.check, err = testenv.FindAcked(ctx, res, laneID(base), "customers", c[0].DSN("bench"), b.sb1.DSN("bench"), c[2].DSN("bench")); err != nil {
		return nil, err
	}
	r.resumed = -1
	for _, tx := range res.Txns {
		if r.check.On[laneID(base)(tx)] != 1 || !tx.Start.After(killedAt) {
			continue
		}
		if d := tx.End.Sub(promoteStart); r.resumed < 0 || d < r.resumed {
			r.resumed = d
		}
	}
	for i, p := range b.ports {
		if r.epochs[i], err = primaryRow(ctx, p, "pg1"); err != nil {
			return nil, err
		}
	}
	logf("failover: %d acknowledged, %d lost, %d errors (%d in flight at the kill), resumed %s after pg_ctl promote began, epochs %v",
		r.check.Acked, r.check.Lost, r.errors, r.inFlight, r.resumed, r.epochs)
	return r, nil
}

// switchoverResult is what the switchover phase measured.
type switchoverResult struct {
	check        testenv.LanesCheck
	runs, errors int
	pauseMS      string
	pauseOther   time.Duration // from PAUSE on the other proxy to its RESUME
	maxA, maxB   time.Duration // the longest transaction begun during it, per proxy
	epochs       [2]string
}

func (b *bench) switchover(ctx context.Context) (*switchoverResult, error) {
	const base = 100_000_000_000
	l, err := b.startLoad(ctx, "switchover", base)
	if err != nil {
		return nil, err
	}
	r := &switchoverResult{}
	time.Sleep(b.load / 3)
	ca, err := console(ctx, b.ports[0])
	if err != nil {
		return nil, err
	}
	defer ca.Close(ctx)
	cb, err := console(ctx, b.ports[1])
	if err != nil {
		return nil, err
	}
	defer cb.Close(ctx)
	start := time.Now()
	if _, err := cb.Exec(ctx, "PAUSE pg2", pgx.QueryExecModeSimpleProtocol); err != nil {
		return nil, fmt.Errorf("PAUSE pg2 on the second proxy: %w", err)
	}
	logf("SWITCHOVER pg2 on the first proxy, the second one paused")
	var cluster, host, epoch string
	cmd := fmt.Sprintf("SWITCHOVER pg2 TO 127.0.0.1:%d", b.sb2.Port)
	if err := ca.QueryRow(ctx, cmd, pgx.QueryExecModeSimpleProtocol).Scan(&cluster, &host, &epoch, &r.pauseMS); err != nil {
		return nil, fmt.Errorf("%s: %w", cmd, err)
	}
	for {
		e, err := primaryRow(ctx, b.ports[1], "pg2")
		if err != nil {
			return nil, err
		}
		if strings.HasSuffix(e, " epoch "+epoch) {
			break
		}
		if time.Since(start) > time.Minute {
			return nil, fmt.Errorf("the second proxy did not follow pg2's epoch %s: %s", epoch, e)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := cb.Exec(ctx, "RESUME pg2", pgx.QueryExecModeSimpleProtocol); err != nil {
		return nil, fmt.Errorf("RESUME pg2 on the second proxy: %w", err)
	}
	end := time.Now()
	r.pauseOther = end.Sub(start)
	res, err := l.Wait()
	if err != nil {
		return nil, err
	}
	r.runs, r.errors = res.Runs, len(res.Errors)
	for _, e := range res.Errors {
		logf("lane %d run %d: %s", e.Lane, e.Run, e.Message)
	}
	for _, tx := range res.Txns {
		if tx.Start.Before(start) || tx.Start.After(end) {
			continue
		}
		if d := tx.End.Sub(tx.Start); tx.Lane%2 == 0 {
			r.maxA = max(r.maxA, d)
		} else {
			r.maxB = max(r.maxB, d)
		}
	}
	c := b.env.Clusters
	if r.check, err = testenv.FindAcked(ctx, res, laneID(base), "customers", c[0].DSN("bench"), b.sb1.DSN("bench"), b.sb2.DSN("bench")); err != nil {
		return nil, err
	}
	for i, p := range b.ports {
		if r.epochs[i], err = primaryRow(ctx, p, "pg2"); err != nil {
			return nil, err
		}
	}
	logf("switchover: pause_ms %s, %d acknowledged, %d lost, %d errors, epochs %v", r.pauseMS, r.check.Acked, r.check.Lost, r.errors, r.epochs)
	return r, nil
}

func console(ctx context.Context, port int) (*pgx.Conn, error) {
	return pgx.Connect(ctx, fmt.Sprintf("postgres://postgres:x@127.0.0.1:%d/shardgate?sslmode=disable", port))
}

// primaryRow is SHOW CLUSTERS' primary row of cluster on the proxy at
// port: "host epoch N".
func primaryRow(ctx context.Context, port int, cluster string) (string, error) {
	rows, err := benchkit.ConsoleRows(ctx, fmt.Sprintf("postgres://postgres:x@127.0.0.1:%d/shardgate?sslmode=disable", port), "SHOW CLUSTERS")
	if err != nil {
		return "", err
	}
	for _, r := range rows {
		if r[0] == cluster && r[6] == "primary" {
			return r[7] + " epoch " + r[12], nil
		}
	}
	return "", nil
}

func count(ctx context.Context, dsn string) (int, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	var n int
	err = conn.QueryRow(ctx, "SELECT count(*) FROM customers").Scan(&n)
	return n, err
}

func (b *bench) report(repo string, fo *failoverResult, sw *switchoverResult) string {
	var s strings.Builder
	s.WriteString(section + "\n\n")
	invoked := os.Getenv("BENCH_INVOKED_AS")
	if invoked == "" {
		invoked = "bench/failover"
	}
	fmt.Fprintf(&s, "`%s` on %s; %s; shardgate %s. Three clusters from internal/testenv (pg0 main; pg1 with a "+
		"synchronous standby, pg2 with an asynchronous one, both `failover_buffer: 10s`), a table sharded over the "+
		"three, two `shardgate serve`. %d pgbench lanes (`pgbench -n -c 1 -M simple -l`, each started again after an "+
		"error; half on each proxy) insert one row per transaction whose id names the lane, its run and the "+
		"transaction, for %s per phase; the per-transaction logs are the oracle of the acknowledged writes, looked up "+
		"on the servers afterwards. 1-minute load average at the end: %s.\n\n",
		invoked, time.Now().UTC().Format("2006-01-02 15:04 UTC"), benchkit.Machine(), benchkit.GitDescribe(repo),
		b.lanes, b.load, benchkit.LoadAvg())
	s.WriteString("| phase | figure | value |\n| --- | --- | --- |\n")
	row := func(phase, fig, val string) { fmt.Fprintf(&s, "| %s | %s | %s |\n", phase, fig, val) }
	fp := fmt.Sprintf("pg1: `kill -9` of the primary's postmaster at %s, `pg_ctl promote` of the standby 0.5 s after its processes were gone", (b.load / 3).Round(100*time.Millisecond))
	row(fp, "first pg1 write acknowledged, counted from the start of `pg_ctl promote -w`", fmt.Sprintf("%s (pg_ctl took %s)", fo.resumed.Round(time.Millisecond), fo.promote.Round(time.Millisecond)))
	row("", "transactions acknowledged / lost / duplicated", fmt.Sprintf("%d / %d / %d", fo.check.Acked, fo.check.Lost, fo.check.Dup))
	row("", "failed transactions (pgbench runs that ended in an error)", fmt.Sprintf("%d, of which %d begun before the old primary's processes were gone (%s after the kill)", fo.errors, fo.inFlight, fo.killTook.Round(time.Millisecond)))
	row("", "pg1's primary on each proxy (SHOW CLUSTERS)", strings.Join(fo.epochs[:], "; "))
	row("", "rows on the old primary, restarted as a primary 3 s after the promotion: then / at the end", fmt.Sprintf("%d / %d", fo.oldBefore, fo.oldLast))
	row("pg2: `PAUSE pg2` on proxy 2, `SWITCHOVER pg2 TO` its standby on proxy 1, `RESUME pg2` on proxy 2 once it shows the new epoch", "writes held (`pause_ms`)", sw.pauseMS+" ms")
	row("", "PAUSE to RESUME on proxy 2", sw.pauseOther.Round(time.Millisecond).String())
	row("", "longest transaction begun in that window: proxy 1 / proxy 2", fmt.Sprintf("%s / %s", sw.maxA.Round(time.Millisecond), sw.maxB.Round(time.Millisecond)))
	row("", "transactions acknowledged / lost / failed", fmt.Sprintf("%d / %d / %d", sw.check.Acked, sw.check.Lost, sw.errors))
	row("", "pg2's primary on each proxy", strings.Join(sw.epochs[:], "; "))
	return s.String()
}
