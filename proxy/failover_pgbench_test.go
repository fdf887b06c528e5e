package proxy

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/shardgate/shardgate/auth"
	"github.com/shardgate/shardgate/internal/testenv"
)

// Failover and switchover under pgbench (issue 21's must-shows): lanes
// of single-client pgbench (testenv.StartLanes, started again after a
// connection error) insert one customer per transaction whose id names
// the lane, the run and the transaction; pgbench's per-transaction logs
// are the oracle of the writes acknowledged.

// laneScript inserts customer lane*1e9 + run*1e6 + n: half of them live
// on pg1, the cluster that fails over.
const laneScript = `\set n :n + 1
\set id :lane * 1000000000 + :run * 1000000 + :n
INSERT INTO customers (id, name) VALUES (:id, 'pgbench');
`

func laneID(t testenv.LaneTxn) int64 {
	return int64(t.Lane)*1_000_000_000 + int64(t.Run)*1_000_000 + t.N
}

// startWriteLanes runs laneScript in lanes spread over the proxies for d.
func startWriteLanes(t *testing.T, lanes int, d time.Duration, proxies ...*testProxy) *testenv.Lanes {
	t.Helper()
	var dsns []string
	for _, p := range proxies {
		dsns = append(dsns, p.dsn())
	}
	l, err := testenv.StartLanes(context.Background(), testenv.LanesOptions{
		Pgbench: testenv.Pgbench(t), Dir: t.TempDir(), Script: laneScript, DSNs: dsns, Lanes: lanes, Duration: d,
		Env: []string{"PGPASSWORD=x"}, Args: []string{"-M", "simple"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// checkLaneWrites finds every acknowledged id of laneScript on the
// clusters (straight, not through a proxy).
func checkLaneWrites(t *testing.T, res testenv.LanesResult, clusters ...*testenv.Cluster) testenv.LanesCheck {
	t.Helper()
	var dsns []string
	for _, c := range clusters {
		dsns = append(dsns, c.DSN("shop"))
	}
	c, err := testenv.FindAcked(context.Background(), res, laneID, "customers", dsns...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestFailoverUnderPgbench: 8 pgbench lanes over two proxies write
// through an unplanned failover of pg1 (synchronous standby): kill -9 of
// its primary's postmaster, the standby promoted. Writes resume within
// 2 s of the promotion, only the transactions in flight at the kill
// fail, no acknowledged write is lost, both proxies follow main's epoch,
// and the old primary restarted as a primary gets no write.
func TestFailoverUnderPgbench(t *testing.T) {
	ctx := context.Background()
	p1 := startStandby(t, env.Clusters[1], testenv.StandbyOptions{})
	if err := p1.Promote(ctx); err != nil {
		t.Fatal(err)
	}
	sb := startStandby(t, p1, testenv.StandbyOptions{Sync: true})
	yaml := failoverTopology(p1, sb, "10s") + adminUsers
	users := func(c *Config) {
		c.Users = []auth.User{{Name: "app", Password: "x"}, {Name: "boss", Password: "x", Admin: true}}
	}
	pa := startProxy(t, yaml, users)
	pb := startProxy(t, yaml, users)
	setupShop(t, pa)
	t.Cleanup(func() {
		_ = env.Clusters[0].Exec(context.Background(), "shop", "DELETE FROM shardgate.primaries WHERE cluster = 'pg1'")
	})

	const lanes = 8
	load := startWriteLanes(t, lanes, 16*time.Second, pa, pb)
	time.Sleep(4 * time.Second)
	killStart := time.Now()
	if err := p1.Kill9(); err != nil {
		t.Fatal(err)
	}
	killedAt := time.Now()
	time.Sleep(500 * time.Millisecond) // statements are held meanwhile
	// pg_ctl promote -w returns some time after the promotion (it polls):
	// the times below count from its start.
	promoteStart := time.Now()
	if err := sb.Promote(ctx); err != nil {
		t.Fatal(err)
	}
	promotedAt := time.Now()
	time.Sleep(3 * time.Second)
	if err := p1.Start(ctx); err != nil {
		t.Fatal(err)
	}
	oldRows := rowsOn(t, p1)
	res, err := load.Wait()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("kill -9: the old primary's processes gone after %s; pg_ctl promote -w started %s after that and took %s",
		killedAt.Sub(killStart).Round(time.Millisecond), promoteStart.Sub(killedAt).Round(time.Millisecond), promotedAt.Sub(promoteStart).Round(time.Millisecond))

	check := checkLaneWrites(t, res, env.Clusters[0], sb)
	resumed := time.Duration(-1)
	early := 0
	for _, tx := range res.Txns {
		if check.On[laneID(tx)] != 1 || !tx.End.After(killedAt) {
			continue // pg0's, or before the kill
		}
		if tx.Start.After(killedAt) && tx.End.Before(promoteStart) {
			early++ // pg1 acknowledged a write without a primary
			continue
		}
		if d := tx.End.Sub(promoteStart); resumed < 0 || d < resumed {
			resumed = d
		}
	}
	for _, e := range res.Errors {
		t.Logf("lane %d run %d failed (last ack %s before the kill): %s", e.Lane, e.Run, killedAt.Sub(e.LastAck).Round(time.Millisecond), e.Message)
		if !e.BeganBefore(killedAt) {
			t.Errorf("lane %d run %d: a transaction that began after the old primary's processes were gone failed: %s", e.Lane, e.Run, e.Message)
		}
	}
	t.Logf("failover under pgbench: %d lanes over 2 proxies, %d runs, %d transactions acknowledged, %d failed; pg1 writes resumed %s after pg_ctl promote began; %d acknowledged lost, %d duplicated",
		lanes, res.Runs, check.Acked, len(res.Errors), resumed.Round(time.Millisecond), check.Lost, check.Dup)
	if check.Lost != 0 || check.Dup != 0 {
		t.Fatalf("%d acknowledged writes lost, %d duplicated", check.Lost, check.Dup)
	}
	if early != 0 {
		t.Fatalf("%d writes to pg1 acknowledged between the kill and the promotion", early)
	}
	if resumed < 0 || resumed > 2*time.Second {
		t.Fatalf("pg1's writes resumed %s after pg_ctl promote began (goal: within 2s of the promotion)", resumed)
	}
	checkFollowed(t, sb, p1, 1, pa, pb)
	if n := rowsOn(t, p1); n != oldRows {
		t.Fatalf("the old primary restarted as a primary got writes: %d rows, then %d", oldRows, n)
	}
}

// checkFollowed checks that every proxy sends pg1's writes to the
// promoted standby sb at epoch, with old fenced, as main records.
func checkFollowed(t *testing.T, sb, old *testenv.Cluster, epoch int64, proxies ...*testProxy) {
	t.Helper()
	var host string
	var recorded int64
	mc := connect(t, env.Clusters[0].DSN("shop"))
	if err := mc.QueryRow(context.Background(), "SELECT host, epoch FROM shardgate.primaries WHERE cluster = 'pg1'").Scan(&host, &recorded); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("127.0.0.1:%d", sb.Port)
	if host != want || recorded != epoch {
		t.Errorf("main records pg1's primary %s at epoch %d, want %s at %d", host, recorded, want, epoch)
	}
	for i, p := range proxies {
		rs := p.srv.cur.Load().replicas["pg1"]
		if got := rs.Primary().Host(); got != want {
			t.Errorf("proxy %d: pg1's writes go to %s, not the promoted standby %s", i, got, want)
		}
		f := rs.FailoverState()
		if f.Epoch != epoch || len(f.Fenced) != 1 || f.Fenced[0] != fmt.Sprintf("127.0.0.1:%d", old.Port) {
			t.Errorf("proxy %d: failover state %+v, want epoch %d and the old primary fenced", i, f, epoch)
		}
	}
}

// TestStandbyKilledUnderPgbench: 8 pgbench read lanes with
// PGOPTIONS='-c shardgate.target=replica' over pg0's two standbys; one
// standby is killed (kill -9 of its postmaster). The reads running on it
// fail, every read begun after its processes are gone succeeds on the
// other standby, and none goes to the primary (the script fails one
// that does).
func TestStandbyKilledUnderPgbench(t *testing.T) {
	ctx := context.Background()
	sa := startStandby(t, env.Clusters[0], testenv.StandbyOptions{})
	sk := startStandby(t, env.Clusters[0], testenv.StandbyOptions{})
	p := startProxy(t, replicaTopology("", []*testenv.Cluster{sa, sk})+adminUsers, func(c *Config) {
		c.Users = []auth.User{{Name: "app", Password: "x"}, {Name: "boss", Password: "x", Admin: true}}
	})
	admin := setupShop(t, p)
	mustExec(t, admin, "INSERT INTO settings VALUES ('k', 'v')")
	waitReplay(t, sa, sk)
	rs := p.srv.cur.Load().replicas["pg0"]
	waitFor(t, "both standbys checked", 30*time.Second, func() bool {
		return rs.Standbys()[0].State().Checked && rs.Standbys()[1].State().Checked
	})
	// A read that lands on the primary fails on purpose: pgbench counts
	// it as an error naming it.
	script := fmt.Sprintf(`\set n :n + 1
SELECT inet_server_port() AS port FROM settings, pg_sleep(0.02) WHERE k = 'k' \gset
\if :port = %d
SELECT 'a replica read ran on the primary'::int;
\endif
`, env.Clusters[0].Port)
	l, err := testenv.StartLanes(ctx, testenv.LanesOptions{
		Pgbench: testenv.Pgbench(t), Dir: t.TempDir(), Lanes: 8, Duration: 10 * time.Second, DSNs: []string{p.dsn()},
		Script: script,
		Env:    []string{"PGPASSWORD=x", "PGOPTIONS=-c shardgate.target=replica"}, Args: []string{"-M", "prepared"},
	})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	busyAtKill := [2]int{rs.Standbys()[0].Pool.Busy(), rs.Standbys()[1].Pool.Busy()}
	if err := sk.Kill9(); err != nil {
		t.Fatal(err)
	}
	killedAt := time.Now()
	res, err := l.Wait()
	if err != nil {
		t.Fatal(err)
	}
	after := 0
	for _, tx := range res.Txns {
		if tx.Start.After(killedAt) {
			after++
		}
	}
	for _, e := range res.Errors {
		t.Logf("lane %d run %d failed: %s", e.Lane, e.Run, e.Message)
		if !e.BeganBefore(killedAt) {
			t.Errorf("lane %d run %d: a read begun after the standby's processes were gone failed: %s", e.Lane, e.Run, e.Message)
		}
	}
	t.Logf("standby killed under pgbench reads: busy connections at the kill %v (standby kept, standby killed); %d runs, %d reads acknowledged (%d begun after the kill), %d failed",
		busyAtKill, res.Runs, len(res.Txns), after, len(res.Errors))
	if len(res.Errors) == 0 || len(res.Errors) > busyAtKill[1]+1 {
		t.Errorf("%d reads failed; %d were running on the killed standby", len(res.Errors), busyAtKill[1])
	}
	if after == 0 {
		t.Fatal("no read succeeded after the kill")
	}
	if st := rs.Standbys()[1].State(); st.Bans == 0 {
		t.Errorf("the killed standby was not banned: %+v", st)
	}
}
