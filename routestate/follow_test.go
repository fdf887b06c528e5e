package routestate

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/shardgate/shardgate/internal/testenv"
	"github.com/shardgate/shardgate/sqlerr"
	"github.com/shardgate/shardgate/topology"
)

func TestMain(m *testing.M) {
	testenv.Run(m, testenv.Options{N: 1}, nil)
}

var dbSeq atomic.Int64

// mainDB creates a fresh database standing for the main group's cluster.
func mainDB(t *testing.T) (dsn string, conn *pgx.Conn) {
	t.Helper()
	env := testenv.Shared(t)
	ctx := context.Background()
	db := fmt.Sprintf("rs%d", dbSeq.Add(1))
	if err := env.Clusters[0].Exec(ctx, "", "CREATE DATABASE "+db); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Clusters[0].Exec(ctx, "", "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)") })
	dsn = env.Clusters[0].DSN(db)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(ctx) })
	return dsn, conn
}

func TestCommitIsOptimistic(t *testing.T) {
	_, conn := mainDB(t)
	ctx := context.Background()
	r, err := Load(ctx, conn)
	if err != nil || r.Rev != 0 {
		t.Fatalf("empty: %+v %v", r, err)
	}
	r1, err := Commit(ctx, conn, 0, "alice", "activate", func(s *State) error {
		s.GSI = map[string]string{"orders_by_sku": GSIActive}
		return nil
	})
	if err != nil || r1.Rev != 1 {
		t.Fatalf("commit: %+v %v", r1, err)
	}
	if _, err := Commit(ctx, conn, 0, "bob", "stale", func(*State) error { return nil }); sqlerr.Code(err) != sqlerr.SerializationFailure {
		t.Fatalf("stale commit: %v", err)
	}
	r2, err := Commit(ctx, conn, 1, "bob", "switch", func(s *State) error {
		s.Switched = map[string]*Switch{"1": {Workflow: 1, Kind: "reshard", Group: "g"}}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := Load(ctx, conn)
	if err != nil || got.Rev != 2 || got.State.GSI["orders_by_sku"] != GSIActive || got.State.Switched["1"].Group != "g" || got.Author != "bob" {
		t.Fatalf("load: %+v %v", got, err)
	}
	if r2.Origin() != "revision 2 by bob (switch)" {
		t.Fatal(r2.Origin())
	}
}

// follower is one Follow over the test's main database, recording what it
// installs.
type follower struct {
	*Follower
	mu       sync.Mutex
	topo     *topology.Topology
	installs int
}

func (f *follower) installed() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.installs
}

func (f *follower) state() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.topo == nil {
		return ""
	}
	return f.topo.Group("by_customer").SecondaryIndexes[0].State
}

func follow(t *testing.T, ctx context.Context, dsn string, file *topology.Topology, gate *Gate) *follower {
	t.Helper()
	f := &follower{}
	var err error
	f.Follower, err = Follow(ctx, dsn, "127.0.0.1:0", file, gate, func(tp *topology.Topology) error {
		f.mu.Lock()
		f.topo = tp
		f.installs++
		f.mu.Unlock()
		return nil
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// waitFor polls cond every 10 ms up to limit and returns how long it took.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > limit {
			t.Fatalf("%s: not within %v", what, limit)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return time.Since(start)
}

func setGSI(state string) func(*State) error {
	return func(s *State) error {
		s.GSI = map[string]string{"orders_by_sku": state}
		return nil
	}
}

func TestTwoProxiesFollowByListenAndByPolling(t *testing.T) {
	dsn, conn := mainDB(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	file := parse(t, fileYAML)
	a, b := follow(t, ctx, dsn, file, nil), follow(t, ctx, dsn, file, nil)
	waitFor(t, 5*time.Second, "LISTEN up", func() bool { return a.Listening() && b.Listening() })
	ps, err := Proxies(ctx, conn)
	if err != nil || len(ps) != 2 || !ps[0].Live || !ps[1].Live {
		t.Fatalf("proxies: %+v %v", ps, err)
	}

	// LISTEN: both within well under a second.
	if _, err := Commit(ctx, conn, 0, "t", "activate", setGSI(GSIActive)); err != nil {
		t.Fatal(err)
	}
	d := waitFor(t, time.Second, "revision 1 followed", func() bool { return a.state() == "active" && b.state() == "active" })
	if a.Learned(1) != "listen" || b.Learned(1) != "listen" {
		t.Fatalf("revision 1 learned by %s, %s", a.Learned(1), b.Learned(1))
	}
	t.Logf("revision 1 followed by LISTEN in %v", d)

	// LISTEN down (its connections killed): polling follows within a beat.
	if _, err := conn.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = 'LISTEN `+Channel+`' AND datname = current_database()`); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Second, "LISTEN down", func() bool { return !a.Listening() && !b.Listening() })
	if _, err := Commit(ctx, conn, 1, "t", "back", setGSI(GSIBackfilling)); err != nil {
		t.Fatal(err)
	}
	d = waitFor(t, Beat+500*time.Millisecond, "revision 2 followed", func() bool { return a.state() == "backfilling" && b.state() == "backfilling" })
	if a.Learned(2) != "poll" || b.Learned(2) != "poll" {
		t.Fatalf("revision 2 learned by %s, %s", a.Learned(2), b.Learned(2))
	}
	t.Logf("revision 2 followed by polling in %v", d)
	waitFor(t, 3*Beat, "heartbeats record revision 2", func() bool {
		ps, _ := Proxies(ctx, conn)
		return len(ps) == 2 && ps[0].Revision == 2 && ps[1].Revision == 2
	})

	// Stopped: deregistered.
	cancel()
	<-a.Done()
	<-b.Done()
	if ps, err := Proxies(context.Background(), conn); err != nil || len(ps) != 0 {
		t.Fatalf("after stop: %+v %v", ps, err)
	}
}

func TestGateHoldsUntilReleasedByARevision(t *testing.T) {
	dsn, conn := mainDB(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	gate := NewGate()
	f := follow(t, ctx, dsn, parse(t, fileYAML), gate)
	req := &BufferRequest{ID: "wf1-1", Tables: []string{"public.orders"}, Deadline: time.Now().Add(10 * time.Second)}
	if _, err := Commit(ctx, conn, 0, "t", "buffer", func(s *State) error { s.Buffer = req; return nil }); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Second, "armed", gate.Armed)
	waitFor(t, 3*Beat, "ack recorded", func() bool {
		ps, _ := Proxies(ctx, conn)
		return len(ps) == 1 && !ps[0].Acked[req.ID].IsZero()
	})
	// Not held: other tables, a transaction opened before.
	gate.Hold(false, func() []string { return []string{"SELECT * FROM orders_archive", "select reorders from t"} })
	gate.Hold(true, func() []string { return []string{"INSERT INTO orders VALUES (1)"} })
	held := make(chan time.Duration)
	go func() {
		start := time.Now()
		gate.Hold(false, func() []string { return []string{`UPDATE public."ORDERS" SET x = 1`, `insert into Orders values (1)`} })
		held <- time.Since(start)
	}()
	time.Sleep(200 * time.Millisecond)
	select {
	case <-held:
		t.Fatal("a statement on orders was not held")
	default:
	}
	if _, err := Commit(ctx, conn, 1, "t", "release", func(s *State) error { s.Buffer = nil; return nil }); err != nil {
		t.Fatal(err)
	}
	select {
	case d := <-held:
		if d < 200*time.Millisecond {
			t.Fatalf("held %v", d)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("not released by the revision")
	}
	if st := gate.Stats(); st.Buffered != 1 || st.Request != req.ID || st.FirstHeld.IsZero() {
		t.Fatalf("stats %+v", st)
	}
	_ = f
	if strings.Contains(gate.acked(), "null") {
		t.Fatal(gate.acked())
	}
}

func TestGateDeadlineReleases(t *testing.T) {
	g := NewGate()
	g.Request(&BufferRequest{ID: "x", Tables: []string{"public.orders"}, Deadline: time.Now().Add(300 * time.Millisecond)})
	start := time.Now()
	g.Hold(false, func() []string { return []string{"DELETE FROM orders"} })
	if d := time.Since(start); d < 250*time.Millisecond || d > 2*time.Second {
		t.Fatalf("held %v until a deadline of 300ms", d)
	}
	g.Request(&BufferRequest{ID: "x", Tables: []string{"public.orders"}, Deadline: time.Now().Add(-time.Second)})
	if g.Armed() {
		t.Fatal("armed past its deadline")
	}
}

// TestGateReleasesOntoTheInstalledRouting: the revision that withdraws a
// buffer request releases the held statements only once its routing is
// installed (a released statement plans on the routing the switch flipped
// to); reads of the moving tables are not held; the proxy reports its
// figures in shardgate.proxies.held.
func TestGateReleasesOntoTheInstalledRouting(t *testing.T) {
	dsn, conn := mainDB(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	gate := NewGate()
	f := follow(t, ctx, dsn, parse(t, fileYAML), gate)
	req := &BufferRequest{ID: "wf1-2", Tables: []string{"public.orders"}, Deadline: time.Now().Add(10 * time.Second)}
	if _, err := Commit(ctx, conn, 0, "t", "buffer", func(s *State) error { s.Buffer = req; return nil }); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Second, "armed", gate.Armed)
	start := time.Now()
	gate.Hold(false, func() []string { return []string{"SELECT count(*) FROM orders WHERE id = 1", "TABLE orders"} })
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Fatalf("a read of orders was held %v", d)
	}
	seen := make(chan string)
	go func() {
		gate.Hold(false, func() []string { return []string{"SELECT * FROM orders FOR UPDATE"} })
		seen <- f.state()
	}()
	time.Sleep(100 * time.Millisecond)
	if _, err := Commit(ctx, conn, 1, "t", "flip", func(s *State) error {
		s.Buffer = nil
		return setGSI(GSIActive)(s)
	}); err != nil {
		t.Fatal(err)
	}
	select {
	case st := <-seen:
		if st != GSIActive {
			t.Fatalf("released before the revision's routing was installed: state %q", st)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("not released")
	}
	waitFor(t, 3*Beat, "figures reported", func() bool {
		ps, _ := Proxies(ctx, conn)
		return len(ps) == 1 && ps[0].Held.Request == req.ID && ps[0].Held.Buffered == 1 && !ps[0].Held.Released.IsZero()
	})
}

func TestReadOnly(t *testing.T) {
	for sql, want := range map[string]bool{
		"SELECT * FROM orders":                         true,
		"with x as (select 1) select * from orders":    true,
		"select * from orders for update":              false,
		"select * from orders for key share":           false,
		"WITH d AS (DELETE FROM orders) SELECT 1":      false,
		"INSERT INTO orders VALUES (1)":                false,
		"select nextval('orders_id_seq')":              false,
		"select * into orders_copy from orders":        false,
		"UPDATE orders SET note = 'select' WHERE id=1": false,
	} {
		if got := readOnly(sql); got != want {
			t.Errorf("readOnly(%q) = %v", sql, got)
		}
	}
}

// TestBufferOnlyRevisionsSkipTheReload: a revision that only arms or
// withdraws a buffer request routes as the one in force: the proxy arms
// (and acknowledges) or releases its gate without reloading its routing;
// a revision that changes the routing is installed.
func TestBufferOnlyRevisionsSkipTheReload(t *testing.T) {
	dsn, conn := mainDB(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	gate := NewGate()
	f := follow(t, ctx, dsn, parse(t, fileYAML), gate)
	before := f.installed()
	req := &BufferRequest{ID: "wf1-3", Tables: []string{"public.orders"}, Deadline: time.Now().Add(10 * time.Second)}
	if _, err := Commit(ctx, conn, 0, "t", "buffer", func(s *State) error { s.Buffer = req; return nil }); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Second, "armed", gate.Armed)
	waitFor(t, 2*time.Second, "learned", func() bool { return f.Learned(1) != "" })
	if _, err := Commit(ctx, conn, 1, "t", "withdraw", func(s *State) error { s.Buffer = nil; return nil }); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Second, "released", func() bool { return !gate.Armed() })
	waitFor(t, 2*time.Second, "learned", func() bool { return f.Learned(2) != "" })
	if n := f.installed(); n != before {
		t.Fatalf("%d reloads for revisions that only arm and withdraw a buffer", n-before)
	}
	if _, err := Commit(ctx, conn, 2, "t", "activate", setGSI(GSIActive)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Second, "installed", func() bool { return f.state() == GSIActive })
	if n := f.installed(); n != before+1 {
		t.Fatalf("%d reloads for a revision that changes the routing", n-before)
	}
}

// TestEnsureSchemaTakesNoLockWhenDone: with the tables there, EnsureSchema
// only reads the catalog: it does not wait for a transaction writing the
// proxies' table (a heartbeat), as its DDL's exclusive lock would.
func TestEnsureSchemaTakesNoLockWhenDone(t *testing.T) {
	dsn, conn := mainDB(t)
	ctx := context.Background()
	if err := EnsureSchema(ctx, conn); err != nil {
		t.Fatal(err)
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, "UPDATE shardgate.proxies SET revision = revision"); err != nil {
		t.Fatal(err)
	}
	other, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(ctx)
	c, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := EnsureSchema(c, other); err != nil {
		t.Fatalf("EnsureSchema behind a heartbeat's transaction: %v", err)
	}
}
