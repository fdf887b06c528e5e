package workflows

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"
)

// load writes to a source table until stop is closed: inserts, updates
// of a non-key column, updates of the shard key, deletes.
type load struct {
	stop chan struct{}
	once sync.Once
	wg   sync.WaitGroup
	ops  int
	err  error
}

// runLoad calls step(0), step(1), ... in a goroutine until halted or
// step fails.
func runLoad(t *testing.T, step func(ctx context.Context, i int) error) *load {
	l := &load{stop: make(chan struct{})}
	l.wg.Add(1)
	t.Cleanup(l.halt)
	go func() {
		defer l.wg.Done()
		for i := 0; ; i++ {
			select {
			case <-l.stop:
				return
			default:
			}
			if l.err = step(context.Background(), i); l.err != nil {
				return
			}
			l.ops++
			time.Sleep(time.Millisecond)
		}
	}()
	return l
}

func startLoad(f *fixture, cluster, table string, firstID int) *load {
	conn := f.conn(cluster)
	r := rand.New(rand.NewPCG(1, 2))
	next := firstID
	return runLoad(f.t, func(ctx context.Context, i int) error {
		id := 1 + r.IntN(next)
		var err error
		switch i % 4 {
		case 0:
			_, err = conn.Exec(ctx, fmt.Sprintf("INSERT INTO %s (id, customer_id, note) VALUES ($1, $2, 'new')", table), next, r.IntN(1000))
			next++
		case 1:
			_, err = conn.Exec(ctx, fmt.Sprintf("UPDATE %s SET note = note || '+' WHERE id = $1", table), id)
		case 2:
			_, err = conn.Exec(ctx, fmt.Sprintf("UPDATE %s SET customer_id = customer_id + 1 WHERE id = $1", table), id)
		case 3:
			_, err = conn.Exec(ctx, fmt.Sprintf("DELETE FROM %s WHERE id = $1", table), id)
		}
		return err
	})
}

func (l *load) halt() {
	l.once.Do(func() { close(l.stop) })
	l.wg.Wait()
}

func (l *load) finish(t *testing.T) {
	l.halt()
	if l.err != nil {
		t.Fatal(l.err)
	}
	t.Logf("write load: %d statements", l.ops)
}

// running is a Runner in the background.
type running struct {
	r      *Runner
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
	failed atomic.Pointer[error]
}

func startRun(t *testing.T, store *Store, id int64, setup ...func(*Runner)) *running {
	t.Helper()
	r, err := NewRunner(context.Background(), store, id)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range setup {
		f(r)
	}
	ctx, cancel := context.WithCancel(context.Background())
	rn := &running{r: r, cancel: cancel, done: make(chan error, 1)}
	go func() {
		err := r.Run(ctx)
		if err != nil {
			rn.failed.Store(&err)
		}
		rn.done <- err
	}()
	t.Cleanup(func() { rn.stop(t) })
	return rn
}

func (rn *running) stop(t *testing.T) {
	rn.once.Do(func() {
		rn.cancel()
		if err := <-rn.done; err != nil {
			t.Error(err)
		}
	})
}

func waitPhase(t *testing.T, store *Store, rn *running, id int64, phase string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if err := rn.failed.Load(); err != nil {
			t.Fatalf("workflow failed: %v", *err)
		}
		w, err := store.Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if w.Phase == phase {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("workflow %d never reached phase %s", id, phase)
}

// waitCaughtUp waits until the runner has applied everything each source
// had written when it was called: up to its WAL insert position (testenv
// runs with synchronous_commit off, where the write position can still be
// before the last commit's record).
func waitCaughtUp(t *testing.T, f *fixture, rn *running, sources ...string) {
	t.Helper()
	want := map[string]pglogrepl.LSN{}
	for _, s := range sources {
		var lsn string
		if err := f.conn(s).QueryRow(context.Background(), "SELECT pg_current_wal_insert_lsn()::text").Scan(&lsn); err != nil {
			t.Fatal(err)
		}
		want[s], _ = pglogrepl.ParseLSN(lsn)
	}
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		got := rn.r.Processed()
		ok := true
		for s, l := range want {
			ok = ok && got[s] >= l
		}
		if ok {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("stream did not catch up: want %v, have %v", want, rn.r.Processed())
}

func checkClean(t *testing.T, store *Store, id int64) {
	t.Helper()
	diffs, err := VDiff(context.Background(), store, id)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range diffs {
		if !d.Clean() {
			t.Errorf("vdiff %s on %s: %+v", d.Table, d.Target, d)
		}
	}
}

func TestMoveTablesCopyAndStreamUnderLoad(t *testing.T) {
	f, spec := moveTablesFixture(t, 3000)
	store := f.store()
	id, _, err := Create(testCtx(t), store, spec, false)
	if err != nil {
		t.Fatal(err)
	}
	l := startLoad(f, "main", "orders", 3001)
	rn := startRun(t, store, id)
	waitPhase(t, store, rn, id, PhaseStreaming)
	time.Sleep(300 * time.Millisecond)
	// A restart while streaming resumes from the targets' applied LSNs.
	rn.stop(t)
	rn = startRun(t, store, id)
	time.Sleep(300 * time.Millisecond)
	l.finish(t)
	waitCaughtUp(t, f, rn, "main")
	checkClean(t, store, id)
	src := f.count("main", "SELECT count(*) FROM orders")
	got := f.count("t0", "SELECT count(*) FROM orders") + f.count("t1", "SELECT count(*) FROM orders")
	if src != got || src < 2000 {
		t.Fatalf("source has %d rows, targets %d", src, got)
	}
	// The secondary index was built after the copy.
	if n := f.count("t1", "SELECT count(*) FROM pg_indexes WHERE indexname = 'orders_customer'"); n != 1 {
		t.Errorf("orders_customer index on t1: %d", n)
	}
	// VDiff notices a difference.
	f.exec("t0", "UPDATE orders SET note = 'changed' WHERE id = (SELECT min(id) FROM orders)")
	f.exec("t1", "DELETE FROM orders WHERE id = (SELECT min(id) FROM orders)")
	diffs, err := VDiff(context.Background(), store, id)
	if err != nil {
		t.Fatal(err)
	}
	if diffs[0].Mismatched != 1 || diffs[1].Missing != 1 || len(diffs[0].Samples) != 1 {
		t.Fatalf("vdiff after damage: %+v", diffs)
	}
}

func TestMoveTablesResumesMidCopyWithoutDuplicates(t *testing.T) {
	f, spec := moveTablesFixture(t, 3000)
	store := f.store()
	id, _, err := Create(testCtx(t), store, spec, false)
	if err != nil {
		t.Fatal(err)
	}
	l := startLoad(f, "main", "orders", 3001)
	r, err := NewRunner(context.Background(), store, id)
	if err != nil {
		t.Fatal(err)
	}
	chunks := 0
	crash := errors.New("crash")
	r.chunkHook = func(string) error {
		if chunks++; chunks == 3 {
			return crash
		}
		return nil
	}
	if err := r.Run(context.Background()); !errors.Is(err, crash) {
		t.Fatalf("run: %v", err)
	}
	if w, _ := store.Get(context.Background(), id); w.Phase != PhaseError {
		t.Fatalf("phase %s", w.Phase)
	}
	copied := f.count("t0", "SELECT count(*) FROM orders") + f.count("t1", "SELECT count(*) FROM orders")
	if copied != 1500 {
		t.Fatalf("%d rows copied before the crash, want 3 chunks of 500", copied)
	}
	var resumed atomic.Int32
	rn := startRun(t, store, id, func(r *Runner) { r.chunkHook = func(string) error { resumed.Add(1); return nil } })
	waitPhase(t, store, rn, id, PhaseStreaming)
	if resumed := resumed.Load(); resumed != 4 { // chunks 4-6 and the empty last one
		t.Errorf("resume copied %d chunks, want 4", resumed)
	}
	l.finish(t)
	waitCaughtUp(t, f, rn, "main")
	checkClean(t, store, id)
	if src, got := f.count("main", "SELECT count(*) FROM orders"), f.count("t0", "SELECT count(*) FROM orders")+f.count("t1", "SELECT count(*) FROM orders"); src != got {
		t.Fatalf("source %d rows, targets %d", src, got)
	}
}
