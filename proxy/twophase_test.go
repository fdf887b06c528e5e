package proxy

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardgate/shardgate/sqlerr"
	"github.com/shardgate/shardgate/twopc"
)

// simClock is real time plus an offset tests move forward.
type simClock struct{ offset atomic.Int64 }

func (c *simClock) Now() time.Time          { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *simClock) Advance(d time.Duration) { c.offset.Add(int64(d)) }

// errCrash is what a failpoint returns to stop a commit as if the proxy
// died.
var errCrash = sqlerr.New(sqlerr.AdminShutdown, "shardgate stopped during two-phase commit (test failpoint)")

// start2PC starts a proxy whose two-phase commit runs on clock, retries a
// failed COMMIT PREPARED after backoff, and resolves only when told to.
func start2PC(t *testing.T, clock *simClock, backoff time.Duration) *testProxy {
	t.Helper()
	p := startProxy(t, shopTopology(""), func(c *Config) {
		c.RecoverEvery = -1
		c.twopcTune = func(tc *twopc.Config) {
			tc.Now = clock.Now
			tc.RetryBackoff = backoff
		}
	})
	t.Cleanup(func() { rollbackLeftovers(t) })
	return p
}

// rollbackLeftovers rolls back what a failed test left prepared, so the
// next test's DROP TABLE does not wait for it.
func rollbackLeftovers(t *testing.T) {
	ctx := context.Background()
	for _, cl := range env.Clusters {
		_ = cl.Start(ctx)
		c, err := cl.Conn(ctx, "shop")
		if err != nil {
			t.Log(err)
			continue
		}
		rows, _ := c.Query(ctx, `SELECT gid FROM pg_prepared_xacts WHERE gid LIKE 'shardgate\_%'`)
		var gids []string
		for rows != nil && rows.Next() {
			var g string
			if rows.Scan(&g) == nil {
				gids = append(gids, g)
			}
		}
		for _, g := range gids {
			_, _ = c.Exec(ctx, "ROLLBACK PREPARED '"+g+"'")
		}
		c.Close(ctx)
	}
}

func preparedCount(t *testing.T) int {
	n := 0
	for _, cl := range env.Clusters {
		n += count(t, cl.DSN("shop"), "SELECT count(*) FROM pg_prepared_xacts WHERE gid LIKE 'shardgate\\_%'")
	}
	return n
}

func preparedOn(t *testing.T, cluster int, gid string) bool {
	return count(t, env.Clusters[cluster].DSN("shop"), "SELECT count(*) FROM pg_prepared_xacts WHERE split_part(gid, '@', 1) = $1", gid) > 0
}

func customersEverywhere(t *testing.T) int {
	n := 0
	for _, cl := range env.Clusters {
		n += count(t, cl.DSN("shop"), "SELECT count(*) FROM customers")
	}
	return n
}

// decisionOf is gid's recorded outcome on main, "" when there is none.
func decisionOf(t *testing.T, gid string) string {
	c := connect(t, env.Clusters[0].DSN("shop"))
	var o string
	err := c.QueryRow(context.Background(), "SELECT outcome FROM shardgate.commit_decisions WHERE gid = $1", gid).Scan(&o)
	if err != nil && !strings.Contains(err.Error(), "no rows") {
		t.Fatal(err)
	}
	return o
}

// wantDecision fails unless gid's recorded outcome is want ("": none).
func wantDecision(t *testing.T, gid, want string) {
	t.Helper()
	if o := decisionOf(t, gid); o != want {
		t.Fatalf("decision of %s: %q, want %q", gid, o, want)
	}
}

// mustRecover runs p's resolver and checks how many prepared transactions
// it committed and rolled back.
func mustRecover(t *testing.T, p *testProxy, committed, rolledBack int) {
	t.Helper()
	if c, rb, err := p.srv.Recover(context.Background()); err != nil || c != committed || rb != rolledBack {
		t.Fatalf("recover: committed %d rolled back %d err %v, want %d and %d", c, rb, err, committed, rolledBack)
	}
}

// insertOnBothClusters writes ten customers, which the xxhash spreads over
// both clusters, in one transaction.
func insertOnBothClusters(t *testing.T, p *testProxy, first int) error {
	c := connect(t, p.dsn())
	ctx := context.Background()
	mustExec(t, c, "BEGIN")
	for id := first; id < first+10; id++ {
		mustExec(t, c, "INSERT INTO customers (id, name) VALUES ($1, 'x')", id)
	}
	_, err := c.Exec(ctx, "COMMIT")
	return err
}

// checkAtomic fails unless the transaction that inserted ids [first,
// first+10) is committed on both clusters (want true) or on none, and
// nothing of shardgate is left prepared.
func checkAtomic(t *testing.T, first int, want bool) {
	t.Helper()
	var n [2]int
	for i, cl := range env.Clusters {
		n[i] = count(t, cl.DSN("shop"), "SELECT count(*) FROM customers WHERE id >= $1 AND id < $2", first, first+10)
	}
	switch {
	case n[0]+n[1] == 0 && !want:
	case n[0]+n[1] == 10 && n[0] > 0 && n[1] > 0 && want:
	default:
		t.Fatalf("transaction %d: %d rows on pg0 and %d on pg1, want it committed=%v on both", first, n[0], n[1], want)
	}
	if n := preparedCount(t); n != 0 {
		t.Fatalf("%d prepared transactions left", n)
	}
}

// recordGID makes p's coordinator store each gid it prepares into gid.
func recordGID(p *testProxy, gid *string, then func(string) error) {
	p.srv.twopc.coord.SetHooks(twopc.Hooks{AfterPrepare: func(g string) error {
		*gid = g
		if then != nil {
			return then(g)
		}
		return nil
	}})
}

func TestTwoPhaseCommit(t *testing.T) {
	clock := &simClock{}
	p := start2PC(t, clock, time.Hour)
	setupShop(t, p)

	// A normal multi-cluster commit leaves nothing prepared behind, and
	// its decision is forgotten.
	var gid string
	recordGID(p, &gid, nil)
	if err := insertOnBothClusters(t, p, 1); err != nil {
		t.Fatal(err)
	}
	checkAtomic(t, 1, true)
	for deadline := time.Now().Add(5 * time.Second); decisionOf(t, gid) != ""; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("decision of %s never forgotten", gid)
		}
	}

	// Crash after PREPARE, before the decision: recovery rolls back, but
	// only once the in-doubt timeout has passed.
	p.srv.twopc.coord.SetHooks(twopc.Hooks{AfterPrepare: func(string) error { return errCrash }})
	if err := insertOnBothClusters(t, p, 100); sqlstate(err) != "57P01" {
		t.Fatalf("failpoint: want 57P01, got %v", err)
	}
	if n := preparedCount(t); n != 2 {
		t.Fatalf("want 2 in-doubt transactions, got %d", n)
	}
	restartedClock := &simClock{}
	restarted := start2PC(t, restartedClock, time.Hour)
	mustRecover(t, restarted, 0, 0)
	restartedClock.Advance(2 * time.Minute)
	mustRecover(t, restarted, 0, 2)
	checkAtomic(t, 100, false)

	// Crash after the decision: recovery commits everywhere at once, and
	// forgets the decision.
	hooks := twopc.Hooks{
		AfterPrepare:  func(g string) error { gid = g; return nil },
		AfterDecision: func(string) error { return errCrash },
	}
	p.srv.twopc.coord.SetHooks(hooks)
	if err := insertOnBothClusters(t, p, 200); sqlstate(err) != "57P01" {
		t.Fatalf("failpoint: want 57P01, got %v", err)
	}
	if n := customersEverywhere(t); n != 10 {
		t.Fatalf("before recovery: %d rows visible, want 10", n)
	}
	mustRecover(t, restarted, 2, 0)
	checkAtomic(t, 200, true)
	wantDecision(t, gid, "")
}

// A cluster that goes down between PREPARE and COMMIT PREPARED keeps the
// transaction prepared; its decision must survive any amount of time until
// the cluster is back and recovery commits there too. (Before package
// twopc, recovery deleted decisions older than an hour, and the returning
// cluster's part was rolled back: a half commit.)
func TestTwoPhaseClusterDownAcrossRecovery(t *testing.T) {
	clock := &simClock{}
	p := start2PC(t, clock, time.Hour)
	setupShop(t, p)
	ctx := context.Background()
	pg1 := env.Clusters[1]
	t.Cleanup(func() { _ = pg1.Start(ctx) })

	var gid string
	hooks := twopc.Hooks{
		AfterPrepare:  func(g string) error { gid = g; return nil },
		AfterDecision: func(string) error { return pg1.Stop(ctx) },
	}
	p.srv.twopc.coord.SetHooks(hooks)
	if err := insertOnBothClusters(t, p, 1); err != nil {
		t.Fatalf("COMMIT after the decision must succeed: %v", err)
	}
	if preparedOn(t, 0, gid) {
		t.Fatal("pg0 not committed")
	}
	clock.Advance(2 * time.Hour)
	mustRecover(t, p, 0, 0)
	wantDecision(t, gid, "commit")
	if err := pg1.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if !preparedOn(t, 1, gid) {
		t.Fatal("pg1 lost its prepared transaction")
	}
	mustRecover(t, p, 1, 0)
	checkAtomic(t, 1, true)
	wantDecision(t, gid, "")
}

// terminateClients kills every client connection to the shop database of
// cluster i (the proxy's pooled ones among them).
func terminateClients(i int) error {
	return env.Clusters[i].Exec(context.Background(), "shop", `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = 'shop' AND pid <> pg_backend_pid() AND backend_type = 'client backend'`)
}

// A COMMIT PREPARED that fails (the participant's connection killed after
// PREPARE) keeps the decision: the transaction is committed later, never
// rolled back. (Before package twopc the decision was deleted regardless,
// and recovery rolled back pg1's part: a half commit.)
func TestTwoPhaseFailedCommitPrepared(t *testing.T) {
	clock := &simClock{}
	p := start2PC(t, clock, time.Hour) // no background retry during the test
	setupShop(t, p)

	var gid string
	recordGID(p, &gid, func(string) error { return terminateClients(1) })
	if err := insertOnBothClusters(t, p, 1); err != nil {
		t.Fatalf("COMMIT after the decision must succeed: %v", err)
	}
	time.Sleep(200 * time.Millisecond) // room for a wrong forget to happen
	if !preparedOn(t, 1, gid) {
		t.Fatal("pg1's COMMIT PREPARED was expected to fail")
	}
	wantDecision(t, gid, "commit")
	clock.Advance(2 * time.Hour)
	mustRecover(t, p, 1, 0)
	checkAtomic(t, 1, true)
	wantDecision(t, gid, "")
}

// Without recovery, the coordinator retries a failed COMMIT PREPARED in the
// background and then forgets the decision.
func TestTwoPhaseCommitRetriedInBackground(t *testing.T) {
	p := start2PC(t, &simClock{}, 20*time.Millisecond)
	setupShop(t, p)
	var gid string
	recordGID(p, &gid, func(string) error { return terminateClients(1) })
	if err := insertOnBothClusters(t, p, 1); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); preparedOn(t, 1, gid) || decisionOf(t, gid) != ""; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not finished in the background: prepared on pg1 %v, decision %q", preparedOn(t, 1, gid), decisionOf(t, gid))
		}
	}
	checkAtomic(t, 1, true)
}

// Two proxies' resolvers race over the same in-doubt transactions: each is
// finished exactly once, the way its decision (or its absence) says.
func TestTwoPhaseResolversRace(t *testing.T) {
	clockA, clockB := &simClock{}, &simClock{}
	a := start2PC(t, clockA, time.Hour)
	b := start2PC(t, clockB, time.Hour)
	setupShop(t, a)
	ctx := context.Background()

	const n = 6 // even: crash before the decision; odd: after
	for i := 0; i < n; i++ {
		h := twopc.Hooks{AfterPrepare: func(string) error { return errCrash }}
		if i%2 == 1 {
			h = twopc.Hooks{AfterDecision: func(string) error { return errCrash }}
		}
		a.srv.twopc.coord.SetHooks(h)
		if err := insertOnBothClusters(t, a, 1000+100*i); sqlstate(err) != "57P01" {
			t.Fatalf("transaction %d: want the failpoint's 57P01, got %v", i, err)
		}
	}
	if got := preparedCount(t); got != 2*n {
		t.Fatalf("%d prepared, want %d", got, 2*n)
	}
	clockA.Advance(2 * time.Minute)
	clockB.Advance(2 * time.Minute)
	var committed, rolledBack atomic.Int64
	var wg sync.WaitGroup
	for _, p := range []*testProxy{a, b, a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, rb, err := p.srv.Recover(ctx)
			if err != nil {
				t.Error(err)
			}
			committed.Add(int64(c))
			rolledBack.Add(int64(rb))
		}()
	}
	wg.Wait()
	for i := 0; i < n; i++ {
		checkAtomic(t, 1000+100*i, i%2 == 1)
	}
	if c, rb := committed.Load(), rolledBack.Load(); c != n || rb != n {
		t.Fatalf("resolvers committed %d and rolled back %d prepared transactions, want %d each", c, rb, n)
	}
}

// coordinatorAndResolver starts two proxies over the same clusters: a
// commits, b resolves, with its clock past a's in-doubt timeout.
func coordinatorAndResolver(t *testing.T) (a, b *testProxy) {
	a = start2PC(t, &simClock{}, time.Hour)
	clockB := &simClock{}
	b = start2PC(t, clockB, time.Hour)
	setupShop(t, a)
	clockB.Advance(2 * time.Minute)
	return a, b
}

// The coordinator pauses after PREPARE until another proxy's resolver has
// decided 'abort' and rolled back: its commit decision loses, the client
// is told, and nothing is committed anywhere.
func TestTwoPhaseCoordinatorLosesToResolver(t *testing.T) {
	a, b := coordinatorAndResolver(t)
	ctx := context.Background()

	var gid string
	recordGID(a, &gid, func(string) error {
		c, rb, err := b.srv.Recover(ctx)
		if err != nil || c != 0 || rb != 2 {
			t.Errorf("resolver: committed %d rolled back %d err %v", c, rb, err)
		}
		return nil
	})
	err := insertOnBothClusters(t, a, 1)
	if sqlstate(err) != "40001" || !strings.Contains(err.Error(), "in-doubt resolution") {
		t.Fatalf("COMMIT: want 40001 aborted by in-doubt resolution, got %v", err)
	}
	checkAtomic(t, 1, false)
	wantDecision(t, gid, "abort")
}

// The resolver has decided 'abort' but not yet rolled back when the
// coordinator records its decision: the coordinator rolls back itself.
func TestTwoPhaseCoordinatorLosesBeforeResolverRollsBack(t *testing.T) {
	a, b := coordinatorAndResolver(t)
	ctx := context.Background()

	decided, proceed := make(chan struct{}), make(chan struct{})
	var once sync.Once
	b.srv.twopc.res.SetHooks(twopc.Hooks{BeforeFinish: func(_, _ string, o twopc.Outcome) {
		if o != twopc.Abort {
			t.Errorf("resolver found %q, want abort", o)
		}
		once.Do(func() { close(decided); <-proceed })
	}})
	resolved := make(chan error, 1)
	var gid string
	recordGID(a, &gid, func(string) error {
		go func() { _, _, err := b.srv.Recover(ctx); resolved <- err }()
		<-decided
		return nil
	})
	err := insertOnBothClusters(t, a, 1)
	close(proceed)
	if rerr := <-resolved; rerr != nil {
		t.Fatal(rerr)
	}
	if sqlstate(err) != "40001" {
		t.Fatalf("COMMIT: want 40001, got %v", err)
	}
	checkAtomic(t, 1, false)
}

// The resolver is about to propose 'abort' when the coordinator records
// 'commit': the resolver finds the commit and completes it, the
// coordinator's own COMMIT PREPARED finds the work done, the client is told
// it committed.
func TestTwoPhaseResolverLosesToCoordinator(t *testing.T) {
	a, b := coordinatorAndResolver(t)
	ctx := context.Background()

	proposing, committedDecision := make(chan struct{}), make(chan struct{})
	var once sync.Once
	b.srv.twopc.res.SetHooks(twopc.Hooks{BeforePropose: func(string) {
		once.Do(func() { close(proposing); <-committedDecision })
	}})
	type result struct{ c, rb int }
	resolved := make(chan result, 1)
	var gid string
	a.srv.twopc.coord.SetHooks(twopc.Hooks{
		AfterPrepare: func(g string) error {
			gid = g
			go func() {
				c, rb, err := b.srv.Recover(ctx)
				if err != nil {
					t.Error(err)
				}
				resolved <- result{c, rb}
			}()
			<-proposing
			return nil
		},
		AfterDecision: func(string) error {
			close(committedDecision)
			if r := <-resolved; r.c != 2 || r.rb != 0 {
				t.Errorf("resolver: committed %d rolled back %d, want 2 and 0", r.c, r.rb)
			}
			return nil
		},
	})
	if err := insertOnBothClusters(t, a, 1); err != nil {
		t.Fatalf("COMMIT: %v", err)
	}
	checkAtomic(t, 1, true)
	if o := decisionOf(t, gid); o != "commit" && o != "" {
		t.Fatalf("decision %q, want commit (or forgotten)", o)
	}
}

// A cluster that was down when its part of a two-phase commit was decided
// 'commit' has it committed as soon as it is reachable again — on the
// proxy's first successful connection to it — not at the next periodic
// recovery pass (an hour here; the background retry of COMMIT PREPARED
// too): a client waiting on the prepared transaction's locks waits for no
// timer.
func TestTwoPhaseResolvedWhenClusterReturns(t *testing.T) {
	p := startProxy(t, shopTopology(""), func(c *Config) {
		c.RecoverEvery = time.Hour
		c.twopcTune = func(tc *twopc.Config) { tc.RetryBackoff = time.Hour }
	})
	t.Cleanup(func() { rollbackLeftovers(t) })
	setupShop(t, p)
	ctx := context.Background()
	pg1 := env.Clusters[1]
	t.Cleanup(func() { _ = pg1.Start(ctx) })
	var gid string
	p.srv.twopc.coord.SetHooks(twopc.Hooks{
		AfterPrepare:  func(g string) error { gid = g; return nil },
		AfterDecision: func(string) error { return pg1.Stop(ctx) },
	})
	if err := insertOnBothClusters(t, p, 1); err != nil {
		t.Fatalf("COMMIT after the decision must succeed: %v", err)
	}
	p.srv.twopc.coord.SetHooks(twopc.Hooks{})
	if err := pg1.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if !preparedOn(t, 1, gid) {
		t.Fatal("pg1's part was expected to stay prepared while it was down")
	}
	// A read of a customer on pg1 (the transaction's rows are not locked
	// against reads) is the proxy's first connection to it since.
	c := connect(t, p.dsn())
	for id := 1; id < 11; id++ {
		mustExec(t, c, "SELECT * FROM customers WHERE id = $1", id)
	}
	direct := connect(t, pg1.DSN("shop"))
	prepared := func() bool {
		var n int
		if err := direct.QueryRow(ctx, "SELECT count(*) FROM pg_prepared_xacts WHERE split_part(gid, '@', 1) = $1", gid).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n > 0
	}
	start := time.Now()
	for prepared() {
		if time.Since(start) > 15*time.Second {
			t.Fatalf("pg1's decided transaction still prepared %s after the proxy reached it again", time.Since(start).Round(time.Millisecond))
		}
		time.Sleep(20 * time.Millisecond)
	}
	checkAtomic(t, 1, true)
}
