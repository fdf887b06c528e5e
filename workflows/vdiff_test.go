package workflows

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
)

// startKeyedLoad writes orders rows with ids from lowID on: inserts, updates
// of a non-key column, updates of the shard key, deletes. Rows below
// lowID are never touched.
func startKeyedLoad(f *fixture, lowID, firstNew int) *load {
	conn := f.conn("main")
	r := rand.New(rand.NewPCG(3, 4))
	next := firstNew
	return runLoad(f.t, func(ctx context.Context, i int) error {
		id := lowID + r.IntN(next-lowID)
		var err error
		switch i % 4 {
		case 0:
			_, err = conn.Exec(ctx, "INSERT INTO orders (id, customer_id, note) VALUES ($1, $2, 'new')", next, r.IntN(1000))
			next++
		case 1:
			_, err = conn.Exec(ctx, "UPDATE orders SET note = note || '+' WHERE id = $1", id)
		case 2:
			_, err = conn.Exec(ctx, "UPDATE orders SET customer_id = customer_id + 1 WHERE id = $1", id)
		case 3:
			_, err = conn.Exec(ctx, "DELETE FROM orders WHERE id = $1", id)
		}
		return err
	})
}

func sumDiffs(diffs []TableDiff) (total TableDiff) {
	for _, d := range diffs {
		total.Matching += d.Matching
		total.Missing += d.Missing
		total.Extra += d.Extra
		total.Mismatched += d.Mismatched
		total.Samples = append(total.Samples, d.Samples...)
	}
	return total
}

// TestVDiffUnderWriteLoad runs vdiff while writes go on: the streams stop
// at the position the sources are read at, so nothing in flight shows as a
// difference; a row damaged on a target is reported, and nothing else.
func TestVDiffUnderWriteLoad(t *testing.T) {
	f, spec := moveTablesFixture(t, 3000)
	store := f.store()
	id, _, err := Create(testCtx(t), store, spec, false)
	if err != nil {
		t.Fatal(err)
	}
	rn := startRun(t, store, id)
	waitPhase(t, store, rn, id, PhaseStreaming)
	l := startKeyedLoad(f, 1000, 3001)
	maxID := func() int64 { return f.count("main", "SELECT max(id) FROM orders") }
	for range 2 {
		before := maxID()
		diffs, err := RunVDiff(testCtx(t), store, id, VDiffOptions{Parallel: 2, Logf: t.Logf})
		if err != nil {
			t.Fatal(err)
		}
		if d := sumDiffs(diffs); d.Missing+d.Extra+d.Mismatched != 0 || d.Matching < 2000 {
			t.Fatalf("vdiff under load: %+v", diffs)
		}
		if after := maxID(); after <= before {
			t.Fatalf("no write during the vdiff (max id %d, then %d)", before, after)
		}
	}
	// Damage below the rows the load touches, on whichever target holds them.
	for _, tc := range []string{"t0", "t1"} {
		f.exec(tc, "UPDATE orders SET note = 'damaged' WHERE id = 5")
		f.exec(tc, "DELETE FROM orders WHERE id = 7")
	}
	f.exec("t0", "INSERT INTO orders (id, customer_id, note) VALUES (9999999, 1, 'extra')")
	diffs, err := RunVDiff(testCtx(t), store, id, VDiffOptions{Parallel: 2})
	if err != nil {
		t.Fatal(err)
	}
	d := sumDiffs(diffs)
	samples := strings.Join(d.Samples, " ")
	if d.Mismatched != 1 || d.Missing != 1 || d.Extra != 1 || !strings.Contains(samples, "mismatched ({5})") ||
		!strings.Contains(samples, "missing ({7})") || !strings.Contains(samples, "extra ({9999999})") {
		t.Fatalf("vdiff after damage: %+v", diffs)
	}
	l.finish(t)
	// The streams resumed: the stops are cleared and the targets catch up.
	if n := f.count("main", "SELECT count(*) FROM shardgate.workflow_streams WHERE vdiff_stop IS NOT NULL OR vdiff_stopped IS NOT NULL"); n != 0 {
		t.Fatalf("%d stops left", n)
	}
	waitCaughtUp(t, f, rn, "main")
	src := f.count("main", "SELECT count(*) FROM orders")
	got := f.count("t0", "SELECT count(*) FROM orders") + f.count("t1", "SELECT count(*) FROM orders")
	if got != src { // one missing, one extra
		t.Fatalf("source %d rows, targets %d", src, got)
	}
}

// TestVDiffWithoutRunnerStreamsItself: with no runner, vdiff streams the
// workflow for its own duration, so the targets it compares have every
// change the source had at the position it reads.
func TestVDiffWithoutRunnerStreamsItself(t *testing.T) {
	f, spec := moveTablesFixture(t, 1000)
	store := f.store()
	id, _, err := Create(testCtx(t), store, spec, false)
	if err != nil {
		t.Fatal(err)
	}
	rn := startRun(t, store, id)
	waitPhase(t, store, rn, id, PhaseStreaming)
	rn.stop(t)
	f.exec("main", "UPDATE orders SET note = 'later' WHERE id <= 100; DELETE FROM orders WHERE id > 900")
	diffs, err := RunVDiff(testCtx(t), store, id, VDiffOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d := sumDiffs(diffs); d.Missing+d.Extra+d.Mismatched != 0 || d.Matching != 900 {
		t.Fatalf("vdiff: %+v", diffs)
	}
	// A stopped workflow has no stream to stop: refused.
	if err := Stop(testCtx(t), store, id, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := VDiff(testCtx(t), store, id); err == nil || !strings.Contains(err.Error(), "is stopped") {
		t.Fatalf("vdiff of a stopped workflow: %v", err)
	}
}

// TestVDiffParallelResume compares (table, target) pairs in parallel,
// records its progress per chunk, and resumes an interrupted vdiff where
// it stopped; a plain run starts over.
func TestVDiffParallelResume(t *testing.T) {
	f, spec := moveTablesFixture(t, 3000)
	store := f.store()
	id, _, err := Create(testCtx(t), store, spec, false)
	if err != nil {
		t.Fatal(err)
	}
	rn := startRun(t, store, id)
	waitPhase(t, store, rn, id, PhaseStreaming)

	var mu sync.Mutex
	var seen []string
	ctx, cancel := context.WithCancel(testCtx(t))
	hook := func(table, target string) error {
		mu.Lock()
		defer mu.Unlock()
		if seen = append(seen, target); len(seen) == 5 {
			cancel() // as if the process were killed mid-way
		}
		return nil
	}
	_, err = RunVDiff(ctx, store, id, VDiffOptions{Parallel: 2, chunkHook: hook})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted vdiff: %v", err)
	}
	if !strings.Contains(strings.Join(seen[:4], " "), "t0") || !strings.Contains(strings.Join(seen[:4], " "), "t1") {
		t.Errorf("both targets should be compared at once: %v", seen)
	}
	rep, err := store.LastVDiff(context.Background(), id)
	if err != nil || rep.State != VDiffInterrupted || rep.Clean() || len(rep.Tables) != 2 {
		t.Fatalf("last vdiff: %+v %v", rep, err)
	}
	compared := rep.Tables[0].Matching + rep.Tables[1].Matching
	if compared == 0 || compared >= 3000 || rep.Tables[0].Done && rep.Tables[1].Done {
		t.Fatalf("progress after the interruption: %+v", rep.Tables)
	}
	st, err := store.Status(context.Background(), id)
	if err != nil || !strings.Contains(st.Text(), "last vdiff interrupted") {
		t.Fatalf("status: %v\n%s", err, st.Text())
	}

	count := func(opts VDiffOptions) (int, []TableDiff) {
		t.Helper()
		n := 0
		opts.chunkHook = func(string, string) error { mu.Lock(); n++; mu.Unlock(); return nil }
		diffs, err := RunVDiff(testCtx(t), store, id, opts)
		if err != nil {
			t.Fatal(err)
		}
		if d := sumDiffs(diffs); d.Matching != 3000 || d.Missing+d.Extra+d.Mismatched != 0 {
			t.Fatalf("vdiff: %+v", diffs)
		}
		return n, diffs
	}
	// 3000 rows in chunks of 500 (the last one empty): 7 per target.
	if n, _ := count(VDiffOptions{Parallel: 2, Resume: true}); n != 14-len(seen) {
		t.Errorf("resumed vdiff compared %d chunks, want %d", n, 14-len(seen))
	}
	if rep, _ := store.LastVDiff(context.Background(), id); rep.State != VDiffDone || rep.Runs != 2 || !rep.Clean() {
		t.Errorf("last vdiff: %+v", rep)
	}
	if n, _ := count(VDiffOptions{Parallel: 1, Resume: true}); n != 0 {
		t.Errorf("resume of a finished vdiff compared %d chunks", n)
	}
	if n, _ := count(VDiffOptions{Parallel: 1}); n != 14 {
		t.Errorf("a new vdiff compared %d chunks, want 14", n)
	}
}
