package workflows

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/shardgate/shardgate/sqlerr"
)

// TestStopAndStart stops a run during the copy (at a committed chunk) and
// again while it streams, starts it again each time, and ends clean.
// The status of the stopped copy has a copy rate and an ETA.
func TestStopAndStart(t *testing.T) {
	f, spec := moveTablesFixture(t, 3000)
	store := f.store()
	ctx := testCtx(t)
	id, _, err := Create(ctx, store, spec, false)
	if err != nil {
		t.Fatal(err)
	}
	slow := func(r *Runner) { r.chunkHook = func(string) error { time.Sleep(30 * time.Millisecond); return nil } }
	rn := startRun(t, store, id, slow)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		st, err := store.Status(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if st.Tables[0].RowsCopied >= 1000 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("copy did not start")
		}
	}
	if err := Stop(ctx, store, id, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := <-rn.done; err != nil {
		t.Fatalf("stopped run: %v", err)
	}
	rn.once.Do(func() {})
	st, err := store.Status(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	tb := st.Tables[0]
	if st.Phase != PhaseStopped || !st.StopRequested || tb.Done || tb.RowsCopied%500 != 0 || tb.RowsCopied >= 3000 {
		t.Fatalf("after stop mid-copy: %s %+v", st.Phase, tb)
	}
	if tb.RowsPerSec <= 0 || tb.ETASeconds <= 0 {
		t.Errorf("no copy rate or ETA: %+v", tb)
	}
	// A stopped workflow does not run until started.
	var se *sqlerr.Error
	if _, err := NewRunner(ctx, store, id); !errors.As(err, &se) || se.Code != sqlerr.ObjectNotInPrerequisiteState {
		t.Fatalf("run of a stopped workflow: %v", err)
	}
	if err := Start(ctx, store, id); err != nil {
		t.Fatal(err)
	}
	if w, _ := store.Get(ctx, id); w.Phase != PhaseCopying || w.StopRequested {
		t.Fatalf("after start: %s stop=%v", w.Phase, w.StopRequested)
	}
	l := startLoad(f, "main", "orders", 3001)
	rn = startRun(t, store, id)
	waitPhase(t, store, rn, id, PhaseStreaming)
	time.Sleep(300 * time.Millisecond)
	if err := Stop(ctx, store, id, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := <-rn.done; err != nil {
		t.Fatalf("stopped stream: %v", err)
	}
	rn.once.Do(func() {})
	if w, _ := store.Get(ctx, id); w.Phase != PhaseStopped {
		t.Fatalf("after stop while streaming: %s", w.Phase)
	}
	if err := Start(ctx, store, id); err != nil {
		t.Fatal(err)
	}
	if w, _ := store.Get(ctx, id); w.Phase != PhaseStreaming {
		t.Fatalf("after start: %s", w.Phase)
	}
	rn = startRun(t, store, id)
	time.Sleep(300 * time.Millisecond)
	l.finish(t)
	waitCaughtUp(t, f, rn, "main")
	checkClean(t, store, id)
	// Nobody runs it: stop marks it stopped at once.
	rn.stop(t)
	if err := Stop(ctx, store, id, time.Second); err != nil {
		t.Fatal(err)
	}
	if w, _ := store.Get(ctx, id); w.Phase != PhaseStopped {
		t.Fatalf("stop without a runner: %s", w.Phase)
	}
}

// TestStreamLagSeconds: the lag in seconds is the time between a
// transaction's commit on the source and its application while the stream
// is behind, and 0 once it has applied what the source wrote.
func TestStreamLagSeconds(t *testing.T) {
	f, spec := moveTablesFixture(t, 10)
	store := f.store()
	ctx := testCtx(t)
	id, _, err := Create(ctx, store, spec, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.streamProgress(ctx, id, "main", "0/100", "0/200", time.Now().Add(-3*time.Second)); err != nil {
		t.Fatal(err)
	}
	st, err := store.Status(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if s := st.Streams[0]; s.LagSeconds < 2.9 || s.LagSeconds > 4 || s.LagBytes != 256 || s.CommitTime == nil {
		t.Fatalf("behind: %+v", s)
	}
	if err := store.streamProgress(ctx, id, "main", "0/200", "0/200", time.Time{}); err != nil {
		t.Fatal(err)
	}
	if st, _ = store.Status(ctx, id); st.Streams[0].LagSeconds != 0 || st.Streams[0].CommitTime == nil {
		t.Fatalf("caught up: %+v", st.Streams[0])
	}
}

// TestStreamLagWhileBehind: a backlog written while no runner ran shows
// as lag (bytes and seconds) in the status while the next run applies it,
// and as none once it is applied.
func TestStreamLagWhileBehind(t *testing.T) {
	f, spec := moveTablesFixture(t, 100)
	store := f.store()
	ctx := testCtx(t)
	id, _, err := Create(ctx, store, spec, false)
	if err != nil {
		t.Fatal(err)
	}
	rn := startRun(t, store, id)
	waitPhase(t, store, rn, id, PhaseStreaming)
	rn.stop(t)
	c := f.conn("main")
	for i := range 3000 {
		if _, err := c.Exec(ctx, "UPDATE orders SET note = note || '+' WHERE id = $1", 1+i%100); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(time.Second) // the backlog's commits are at least a second old when applied
	// Applied in small groups, slowly enough for the status to see it.
	rn = startRun(t, store, id, func(r *Runner) {
		r.groupLimit = 100
		r.flushHook = func() { time.Sleep(60 * time.Millisecond) }
	})
	var maxBytes int64
	var maxSeconds float64
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		st, err := store.Status(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		s := st.Streams[0]
		maxBytes, maxSeconds = max(maxBytes, s.LagBytes), max(maxSeconds, s.LagSeconds)
		if maxBytes > 0 && s.LagBytes == 0 && s.LagSeconds == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("lag never seen or never gone: %+v (max %d bytes)", s, maxBytes)
		}
	}
	if maxSeconds < 1 {
		t.Errorf("max lag %d bytes, %.2f s: want at least a second", maxBytes, maxSeconds)
	}
	t.Logf("max lag %d bytes, %.1f s", maxBytes, maxSeconds)
}

// A statement of the store cancelled by its context closes the store's
// connection (pgx does); the next user of the store — another runner,
// status, a command — reconnects instead of failing.
func TestStoreOutlivesACancelledStatement(t *testing.T) {
	f := newFixture(t, "main")
	store := f.store()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := store.exec(ctx, "SELECT pg_sleep(5)"); err == nil {
		t.Fatal("pg_sleep(5) ended within 100 ms")
	}
	if _, err := store.List(context.Background()); err != nil {
		t.Fatalf("after a cancelled statement: %v", err)
	}
}
