package workflows

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/shardgate/shardgate/sqlerr"
)

// lockHolder returns the main backend holding workflow id's lock (0: none).
func lockHolder(t *testing.T, f *fixture, id int64) int32 {
	t.Helper()
	var pid int32
	if err := f.conn("main").QueryRow(context.Background(), `SELECT coalesce(min(pid), 0) FROM pg_locks
		WHERE locktype = 'advisory' AND granted AND classid = $1 AND objid = $2`, uint32(lockClass), uint32(id)).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	return pid
}

// TestBackgroundRunnersExcludeEachOther: two background loops (two
// proxies) and a foreground run over one workflow: exactly one runs it,
// the foreground run is refused with 55P03, and when the loop running it
// stops the other takes over and the targets stay exact.
func TestBackgroundRunnersExcludeEachOther(t *testing.T) {
	f, spec := moveTablesFixture(t, 2000)
	store := f.store()
	id, _, err := Create(testCtx(t), store, spec, false)
	if err != nil {
		t.Fatal(err)
	}
	l := startLoad(f, "main", "orders", 2001)
	type loop struct {
		cancel context.CancelFunc
		done   chan struct{}
	}
	var logMu sync.Mutex
	var logs []string
	logf := func(format string, args ...any) {
		logMu.Lock()
		defer logMu.Unlock()
		logs = append(logs, format)
	}
	start := func() *loop {
		ctx, cancel := context.WithCancel(context.Background())
		lp := &loop{cancel: cancel, done: make(chan struct{})}
		s := f.store() // each proxy has its own store
		go func() { defer close(lp.done); Background(ctx, s, 100*time.Millisecond, logf) }()
		t.Cleanup(func() { cancel(); <-lp.done })
		return lp
	}
	a, b := start(), start()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		w, err := store.Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if w.Phase == PhaseStreaming {
			break
		}
		if w.Phase == PhaseError || time.Now().After(deadline) {
			t.Fatalf("phase %s %s", w.Phase, w.Error)
		}
	}
	first := lockHolder(t, f, id)
	if first == 0 {
		t.Fatal("nobody holds the workflow's lock")
	}
	// A foreground run is refused while a background runner holds it.
	r, err := NewRunner(context.Background(), store, id)
	if err != nil {
		t.Fatal(err)
	}
	var se *sqlerr.Error
	if err := r.Run(context.Background()); !errors.As(err, &se) || se.Code != sqlerr.LockNotAvailable {
		t.Fatalf("second runner: %v", err)
	}
	if w, _ := store.Get(context.Background(), id); w.Phase != PhaseStreaming {
		t.Fatalf("the refused run changed the phase to %s (%s)", w.Phase, w.Error)
	}
	// Stop both loops one after the other: the lock moves, the workflow
	// goes on.
	a.cancel()
	<-a.done
	time.Sleep(300 * time.Millisecond)
	second := lockHolder(t, f, id)
	if second == 0 {
		t.Fatal("no loop took the workflow over")
	}
	time.Sleep(300 * time.Millisecond)
	l.finish(t)
	// Catch up: wait until main records an applied LSN past the load.
	var lsn string
	if err := f.conn("main").QueryRow(context.Background(), "SELECT pg_current_wal_insert_lsn()::text").Scan(&lsn); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		var ok bool
		if err := f.conn("main").QueryRow(context.Background(), `SELECT coalesce(applied_lsn >= $1::pg_lsn, false)
			FROM shardgate.workflow_streams WHERE workflow_id = $2`, lsn, id).Scan(&ok); err != nil {
			t.Fatal(err)
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("stream did not catch up")
		}
	}
	b.cancel()
	<-b.done
	checkClean(t, store, id)
	if pid := lockHolder(t, f, id); pid != 0 {
		t.Errorf("lock still held by %d after both loops stopped", pid)
	}
	logMu.Lock()
	defer logMu.Unlock()
	if len(logs) == 0 {
		t.Error("no progress logged")
	}
}
