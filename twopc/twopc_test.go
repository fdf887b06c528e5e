package twopc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/testenv"
	"github.com/shardgate/shardgate/sqlerr"
)

var env *testenv.Env

const db = "twopc"

// db2 is a second database on the first server: a cluster of its own.
const db2 = "twopc2"

func TestMain(m *testing.M) {
	testenv.Run(m, testenv.Options{N: 2, Databases: []string{db, db2}}, func(e *testenv.Env) error {
		env = e
		for _, c := range e.Clusters {
			for _, d := range []string{db, db2} {
				if err := c.Exec(context.Background(), d, "CREATE TABLE IF NOT EXISTS t (id int PRIMARY KEY)"); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// simClock is real time plus an offset tests move.
type simClock struct{ offset atomic.Int64 }

func (c *simClock) Now() time.Time          { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *simClock) Advance(d time.Duration) { c.offset.Add(int64(d)) }

func source(extra map[string]string) ClusterSource {
	return func() (string, map[string]string) {
		m := map[string]string{"pg0": env.Clusters[0].DSN(db), "pg1": env.Clusters[1].DSN(db)}
		for k, v := range extra {
			m[k] = v
		}
		return "pg0", m
	}
}

func testConfig(clock *simClock) Config {
	return Config{
		Clusters: source(nil), Now: clock.Now, RetryBackoff: time.Hour,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
}

func connTo(t *testing.T, i int) pgConn {
	t.Helper()
	c, err := dial(context.Background(), env.Clusters[i].DSN(db), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.close)
	return c
}

// one runs a query on cluster i and returns its first value.
func one(t *testing.T, i int, sql string) string {
	t.Helper()
	row, found, err := connTo(t, i).QueryRow(context.Background(), sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	if !found {
		return ""
	}
	return row[0]
}

func outcomeOf(t *testing.T, gid string) string {
	return one(t, 0, "SELECT outcome FROM shardgate.commit_decisions WHERE gid = "+quoteLiteral(gid))
}

// part is a participant on a connection of the test's.
type part struct {
	pgConn
	cluster string
}

func (p part) Cluster() string { return p.cluster }
func (p part) Failed() bool    { return p.c.TxStatus() == 'E' }

// emptyT empties table t on both clusters.
func emptyT(t *testing.T) {
	t.Helper()
	for _, c := range env.Clusters {
		if err := c.Exec(context.Background(), db, "TRUNCATE t"); err != nil {
			t.Fatal(err)
		}
	}
}

// begin opens a transaction inserting id on both clusters.
func begin(t *testing.T, id int) []Participant {
	t.Helper()
	var parts []Participant
	for i := range env.Clusters {
		c := connTo(t, i)
		if err := c.Exec(context.Background(), fmt.Sprintf("BEGIN; INSERT INTO t VALUES (%d)", id)); err != nil {
			t.Fatal(err)
		}
		parts = append(parts, part{c, fmt.Sprintf("pg%d", i)})
	}
	return parts
}

// mainConn lends a fresh connection to pg0.
func mainConn(t *testing.T) MainConn {
	return func(ctx context.Context) (DecisionConn, func(), error) {
		c, err := dial(ctx, env.Clusters[0].DSN(db), 5*time.Second)
		if err != nil {
			return nil, nil, err
		}
		return c, c.close, nil
	}
}

// checkAtomic fails unless id is on both clusters (want) or on none.
func checkAtomic(t *testing.T, id int, want bool) {
	t.Helper()
	var n [2]string
	for i := range n {
		n[i] = one(t, i, fmt.Sprintf("SELECT count(*) FROM t WHERE id = %d", id))
	}
	w := "0"
	if want {
		w = "1"
	}
	if n[0] != w || n[1] != w {
		t.Fatalf("id %d: %s rows on pg0, %s on pg1, want %s on both", id, n[0], n[1], w)
	}
	for i := range n {
		if p := one(t, i, "SELECT count(*) FROM pg_prepared_xacts WHERE gid LIKE 'shardgate\\_%'"); p != "0" {
			t.Fatalf("pg%d: %s prepared transactions left", i, p)
		}
	}
}

func TestSchemaUpgradeInPlace(t *testing.T) {
	ctx := context.Background()
	c := connTo(t, 0)
	// The decision log of older versions, with one of its (commit) rows.
	old := `DROP SCHEMA IF EXISTS shardgate CASCADE;
CREATE SCHEMA shardgate;
CREATE TABLE shardgate.commit_decisions (
    gid          text PRIMARY KEY,
    participants text[] NOT NULL,
    decided_at   timestamptz NOT NULL DEFAULT now());
INSERT INTO shardgate.commit_decisions (gid, participants) VALUES ('shardgate_old_1', '{pg0,pg1}')`
	for _, start := range []string{old, "DROP SCHEMA IF EXISTS shardgate CASCADE"} {
		if err := c.Exec(ctx, start); err != nil {
			t.Fatal(err)
		}
		// Several proxies upgrade or create it at once.
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for range 4 {
			conn := connTo(t, 0)
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- ensureSchema(ctx, conn)
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("concurrent ensureSchema: %v", err)
			}
		}
	}
	if err := c.Exec(ctx, old); err != nil {
		t.Fatal(err)
	}
	if err := ensureSchema(ctx, c); err != nil {
		t.Fatal(err)
	}
	if o := outcomeOf(t, "shardgate_old_1"); o != "commit" {
		t.Fatalf("an old row reads %q, want commit", o)
	}
	if o, err := propose(ctx, c, "shardgate_old_1", Abort, nil, time.Time{}); err != nil || o != Commit {
		t.Fatalf("proposing abort over an old row: %q %v", o, err)
	}
}

func TestProposeArbitration(t *testing.T) {
	ctx := context.Background()
	c := connTo(t, 0)
	if err := ensureSchema(ctx, c); err != nil {
		t.Fatal(err)
	}
	gid := GIDPrefix + "arb_" + fmt.Sprint(time.Now().UnixNano())
	if o, err := propose(ctx, c, gid, Abort, []string{"pg1"}, time.Time{}); err != nil || o != Abort {
		t.Fatalf("first proposal: %q %v", o, err)
	}
	if o, err := propose(ctx, c, gid, Commit, []string{"pg0", "pg1"}, time.Now().Add(time.Hour)); err != nil || o != Abort {
		t.Fatalf("second proposal: %q %v, want the first one's abort", o, err)
	}
	// Past its deadline, a commit proposal records nothing.
	late := gid + "_late"
	if o, err := propose(ctx, c, late, Commit, []string{"pg0", "pg1"}, time.Now().Add(-time.Second)); err != nil || o != "" {
		t.Fatalf("late proposal: %q %v, want no row", o, err)
	}
	if o := outcomeOf(t, late); o != "" {
		t.Fatalf("late proposal recorded %q", o)
	}
	if o, err := settle(ctx, c, late, nil); err != nil || o != Abort {
		t.Fatalf("settle: %q %v", o, err)
	}
}

func TestCoordinatorCommit(t *testing.T) {
	emptyT(t)
	coord := NewCoordinator(testConfig(&simClock{}))
	defer coord.Close()
	var gid string
	coord.SetHooks(Hooks{AfterPrepare: func(g string) error { gid = g; return nil }})
	if err := coord.Commit(context.Background(), begin(t, 1), mainConn(t)); err != nil {
		t.Fatal(err)
	}
	checkAtomic(t, 1, true)
	for deadline := time.Now().Add(5 * time.Second); outcomeOf(t, gid) != ""; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("decision never forgotten")
		}
	}

	// A participant whose transaction failed is not prepared: everything
	// rolls back.
	parts := begin(t, 2)
	if err := parts[1].Exec(context.Background(), "SELECT 1/0"); err == nil {
		t.Fatal("want division by zero")
	}
	if err := coord.Commit(context.Background(), parts, mainConn(t)); sqlerr.Code(err) != sqlerr.InFailedSQLTransaction {
		t.Fatalf("want 25P02, got %v", err)
	}
	checkAtomic(t, 2, false)
}

// A coordinator past its commit deadline cannot record 'commit' any more:
// it rolls back and says so.
func TestCoordinatorCommitWindow(t *testing.T) {
	emptyT(t)
	clock := &simClock{}
	clock.Advance(-CommitWindowFactor*time.Minute - time.Second)
	coord := NewCoordinator(testConfig(clock))
	defer coord.Close()
	var gid string
	coord.SetHooks(Hooks{AfterPrepare: func(g string) error { gid = g; return nil }})
	err := coord.Commit(context.Background(), begin(t, 3), mainConn(t))
	if sqlerr.Code(err) != sqlerr.SerializationFailure {
		t.Fatalf("want 40001, got %v", err)
	}
	checkAtomic(t, 3, false)
	if o := outcomeOf(t, gid); o != "abort" {
		t.Fatalf("decision %q, want abort", o)
	}
}

// lossy runs statements on a real connection but loses the answer of the
// first commit proposal, as a connection dying after the INSERT would.
type lossy struct {
	pgConn
	lost *atomic.Bool
}

func (l lossy) QueryRow(ctx context.Context, sql string) ([]string, bool, error) {
	row, found, err := l.pgConn.QueryRow(ctx, sql)
	if strings.Contains(sql, "'commit'") && l.lost.CompareAndSwap(false, true) {
		return nil, false, io.ErrUnexpectedEOF
	}
	return row, found, err
}

func TestCoordinatorLostDecisionAnswer(t *testing.T) {
	emptyT(t)
	ctx := context.Background()
	coord := NewCoordinator(testConfig(&simClock{}))
	defer coord.Close()

	// The decision was recorded, the answer lost: a second connection
	// finds it, and the transaction commits.
	var lost atomic.Bool
	calls := 0
	main := func(ctx context.Context) (DecisionConn, func(), error) {
		calls++
		c, err := dial(ctx, env.Clusters[0].DSN(db), 5*time.Second)
		if err != nil {
			return nil, nil, err
		}
		return lossy{c, &lost}, c.close, nil
	}
	if err := coord.Commit(ctx, begin(t, 4), main); err != nil {
		t.Fatal(err)
	}
	if calls != 2 {
		t.Fatalf("main connections: %d, want 2", calls)
	}
	checkAtomic(t, 4, true)

	// Main cannot be asked again: the outcome is unknown to the client,
	// and the resolver finishes it as recorded (commit).
	lost.Store(false)
	calls = 0
	unreachable := func(ctx context.Context) (DecisionConn, func(), error) {
		if calls++; calls > 1 {
			return nil, nil, errors.New("main is unreachable")
		}
		return main(ctx)
	}
	err := coord.Commit(ctx, begin(t, 5), unreachable)
	if sqlerr.Code(err) != sqlerr.TransactionResolutionUnknown {
		t.Fatalf("want 08007, got %v", err)
	}
	res, err := NewResolver(testConfig(&simClock{})).Resolve(ctx)
	if err != nil || res.Committed != 2 {
		t.Fatalf("resolver: %+v %v", res, err)
	}
	checkAtomic(t, 5, true)
}

// Decisions stay while a cluster that may hold their transaction cannot
// be asked, and abort rows stay for their retention.
func TestResolverForgetsOnlyWhatNobodyNeeds(t *testing.T) {
	ctx := context.Background()
	c := connTo(t, 0)
	if err := ensureSchema(ctx, c); err != nil {
		t.Fatal(err)
	}
	if err := c.Exec(ctx, "DELETE FROM shardgate.commit_decisions"); err != nil {
		t.Fatal(err)
	}
	for _, row := range []string{
		"('shardgate_f_c01', 'commit', '{pg0,pg1}')",
		"('shardgate_f_c09', 'commit', '{pg0,pg9}')",
		"('shardgate_f_a0', 'abort', '{pg0}')",
	} {
		if err := c.Exec(ctx, "INSERT INTO shardgate.commit_decisions (gid, outcome, participants) VALUES "+row); err != nil {
			t.Fatal(err)
		}
	}
	remaining := func() string {
		return one(t, 0, "SELECT string_agg(gid, ',' ORDER BY gid) FROM shardgate.commit_decisions")
	}
	clock := &simClock{}
	cfg := testConfig(clock)
	down := "postgres://postgres@127.0.0.1:1/twopc?sslmode=disable&connect_timeout=1"
	cfg.Clusters = source(map[string]string{"pg9": down})
	r := NewResolver(cfg)
	clock.Advance(24 * time.Hour)
	if _, err := r.Resolve(ctx); err != nil {
		t.Fatal(err)
	}
	// pg9 cannot be asked: its commit row stays, and so does the expired
	// abort row (pg9 might hold that gid).
	if got := remaining(); got != "shardgate_f_a0,shardgate_f_c09" {
		t.Fatalf("with pg9 down: %s", got)
	}
	// Without pg9 in the topology, the abort row goes; the commit row
	// naming it stays.
	cfg.Clusters = source(nil)
	if _, err := NewResolver(cfg).Resolve(ctx); err != nil {
		t.Fatal(err)
	}
	if got := remaining(); got != "shardgate_f_c09" {
		t.Fatalf("without pg9: %s", got)
	}

	// A fresh abort row outlives its transaction until its retention.
	clock.offset.Store(0)
	if err := c.Exec(ctx, "INSERT INTO shardgate.commit_decisions (gid, outcome, participants) VALUES ('shardgate_f_a1', 'abort', '{pg0}')"); err != nil {
		t.Fatal(err)
	}
	clock.Advance(AbortRetentionFactor*time.Minute - time.Minute)
	if _, err := NewResolver(cfg).Resolve(ctx); err != nil {
		t.Fatal(err)
	}
	if got := remaining(); got != "shardgate_f_a1,shardgate_f_c09" {
		t.Fatalf("abort row within its retention: %s", got)
	}
	clock.Advance(2 * time.Minute)
	if _, err := NewResolver(cfg).Resolve(ctx); err != nil {
		t.Fatal(err)
	}
	if got := remaining(); got != "shardgate_f_c09" {
		t.Fatalf("abort row past its retention: %s", got)
	}
}

// Two clusters that are databases of one Postgres server: prepared
// transactions are named per server, so each participant prepares under
// its own name, and the resolver finds the decision of each.
func TestTwoDatabasesOfOneServer(t *testing.T) {
	ctx := context.Background()
	clock := &simClock{}
	cfg := testConfig(clock)
	cfg.Clusters = source(map[string]string{"pg0b": env.Clusters[0].DSN(db2)})
	coord := NewCoordinator(cfg)
	defer coord.Close()
	begin2 := func(id int) []Participant {
		var parts []Participant
		for _, dsn := range []struct{ name, db string }{{"pg0", db}, {"pg0b", db2}} {
			c, err := dial(ctx, env.Clusters[0].DSN(dsn.db), 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(c.close)
			if err := c.Exec(ctx, fmt.Sprintf("BEGIN; INSERT INTO t VALUES (%d)", id)); err != nil {
				t.Fatal(err)
			}
			parts = append(parts, part{c, dsn.name})
		}
		return parts
	}
	count := func(d string, id int) string {
		c, err := dial(ctx, env.Clusters[0].DSN(d), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.close()
		row, _, err := c.QueryRow(ctx, fmt.Sprintf("SELECT count(*) FROM t WHERE id = %d", id))
		if err != nil {
			t.Fatal(err)
		}
		return row[0]
	}
	if err := coord.Commit(ctx, begin2(101), mainConn(t)); err != nil {
		t.Fatalf("commit over two databases of one server: %v", err)
	}
	if a, b := count(db, 101), count(db2, 101); a != "1" || b != "1" {
		t.Fatalf("committed row: %s in %s, %s in %s", a, db, b, db2)
	}

	// Abandoned after the decision: the resolver commits both halves.
	coord.SetHooks(Hooks{AfterDecision: func(string) error { return errors.New("crash") }})
	if err := coord.Commit(ctx, begin2(102), mainConn(t)); !errors.Is(err, ErrAbandoned) {
		t.Fatalf("want abandoned, got %v", err)
	}
	if p := one(t, 0, "SELECT count(*) FROM pg_prepared_xacts WHERE gid LIKE 'shardgate\\_%'"); p != "2" {
		t.Fatalf("prepared on the server: %s, want 2", p)
	}
	res, err := NewResolver(cfg).Resolve(ctx)
	if err != nil || res.Committed != 2 {
		t.Fatalf("resolver: %+v %v", res, err)
	}
	if a, b := count(db, 102), count(db2, 102); a != "1" || b != "1" {
		t.Fatalf("resolved row: %s in %s, %s in %s", a, db, b, db2)
	}
	if p := one(t, 0, "SELECT count(*) FROM pg_prepared_xacts WHERE gid LIKE 'shardgate\\_%'"); p != "0" {
		t.Fatalf("prepared left: %s", p)
	}
}
