package workflows

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestSnapshotVisibility(t *testing.T) {
	s, err := parseSnapshot("100:110:103,105")
	if err != nil {
		t.Fatal(err)
	}
	for xid, want := range map[uint32]bool{99: true, 100: true, 103: false, 104: true, 105: false, 110: false, 200: false} {
		if got := s.visible(xid); got != want {
			t.Errorf("xid %d visible: %v, want %v", xid, got, want)
		}
	}
	// Ids past a wraparound: the snapshot's epoch 1 is 1<<32.
	w, _ := parseSnapshot("4294967396:4294967406:")                  // xmin 1<<32+100
	if !w.visible(0xffffff00) || !w.visible(100) || w.visible(110) { // 0xffffff00 is from epoch 0
		t.Errorf("wraparound visibility wrong")
	}
	if _, err := parseSnapshot("1:2"); err == nil {
		t.Errorf("bad snapshot parsed")
	}
	s0, _ := parseSnapshot("10:20:")
	s1, _ := parseSnapshot("30:40:35")
	tc := &tableCycles{cycles: []cycle{{snap: s0, upto: []string{"100"}}, {snap: s1, upto: []string{"200"}}}}
	for _, c := range []struct {
		xid  uint32
		skip bool
		upto []string
	}{
		{5, true, nil},               // every copy saw it
		{25, false, []string{"100"}}, // the first cycle did not
		{35, false, []string{"200"}}, // running when both were taken
		{50, false, []string{"200"}}, // after both; the rest is not copied yet
	} {
		skip, upto := tc.bound(c.xid)
		if skip != c.skip || !slices.Equal(upto, c.upto) {
			t.Errorf("xid %d: skip %v upto %v, want %v %v", c.xid, skip, upto, c.skip, c.upto)
		}
	}
	tc.cycles[1].done = true
	if skip, upto := tc.bound(50); skip || upto != nil {
		t.Errorf("after the last cycle: skip %v upto %v, want every row", skip, upto)
	}
	if skip, _ := (*tableCycles)(nil).bound(50); !skip {
		t.Errorf("a table nothing was copied of takes no change")
	}
}

// twiceTrigger logs, on a target, every update that writes a row version
// the row already has: a source change applied to a row whose copy had it.
const twiceTrigger = `CREATE TABLE twice (id bigint, v xid8);
	CREATE FUNCTION note_twice() RETURNS trigger LANGUAGE plpgsql AS $$
	BEGIN IF NEW.v = OLD.v THEN INSERT INTO twice VALUES (NEW.id, NEW.v); END IF; RETURN NEW; END $$;
	CREATE TRIGGER note_twice BEFORE UPDATE ON orders FOR EACH ROW EXECUTE FUNCTION note_twice()`

func TestCopyCyclesUnderLoadApplyEachChangeOnce(t *testing.T) {
	f, spec := moveTablesFixture(t, 2400)
	// Every write stamps the row with its transaction id.
	f.exec("main", `ALTER TABLE orders ADD COLUMN v xid8 NOT NULL DEFAULT pg_current_xact_id();
		CREATE FUNCTION stamp() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN NEW.v := pg_current_xact_id(); RETURN NEW; END $$;
		CREATE TRIGGER stamp BEFORE UPDATE ON orders FOR EACH ROW EXECUTE FUNCTION stamp()`)
	spec.ChunkRows = 150
	spec.SnapshotMax = 150 * time.Millisecond
	store := f.store()
	id, _, err := Create(testCtx(t), store, spec, false)
	if err != nil {
		t.Fatal(err)
	}
	f.exec("t0", twiceTrigger)
	f.exec("t1", twiceTrigger)
	l := startLoad(f, "main", "orders", 2401)
	var caughtUp atomic.Bool
	start := time.Now()
	rn := startRun(t, store, id, func(r *Runner) {
		r.Logf = func(format string, args ...any) {
			t.Logf("%v "+format, append([]any{time.Since(start).Round(time.Millisecond)}, args...)...)
		}
		r.chunkHook = func(string) error {
			time.Sleep(40 * time.Millisecond)
			if r.Processed()["main"] > 0 {
				caughtUp.Store(true)
			}
			return nil
		}
	})
	waitPhase(t, store, rn, id, PhaseStreaming)
	if !caughtUp.Load() {
		t.Errorf("the stream never caught up between copy cycles")
	}
	time.Sleep(200 * time.Millisecond)
	l.finish(t)
	waitCaughtUp(t, f, rn, "main")
	checkClean(t, store, id)
	for _, c := range []string{"t0", "t1"} {
		if n := f.count(c, "SELECT count(DISTINCT snap) FROM shardgate.workflow_target_cycles"); n < 3 {
			t.Errorf("%s: %d copy cycles, want at least 3", c, n)
		}
		if n := f.count(c, "SELECT count(*) FROM twice"); n != 0 {
			t.Errorf("%s: %d changes applied to rows whose copy had them", c, n)
		}
	}
	if src, got := f.count("main", "SELECT count(*) FROM orders"), f.count("t0", "SELECT count(*) FROM orders")+f.count("t1", "SELECT count(*) FROM orders"); src != got {
		t.Fatalf("source %d rows, targets %d", src, got)
	}
}

func TestCopyParallelTables(t *testing.T) {
	f, spec := moveTablesFixture(t, 2000)
	f.exec("main", `CREATE TABLE events (id bigint PRIMARY KEY, customer_id bigint NOT NULL, what text);
		INSERT INTO events SELECT g, g % 31, 'e' || g FROM generate_series(1, 2000) g`)
	spec.To = strings.Replace(spec.To, "orders: {}", "orders: {}, events: {}", 1)
	spec.Tables = []string{"orders", "events"}
	spec.CopyParallel = 2
	store := f.store()
	id, _, err := Create(testCtx(t), store, spec, false)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []string
	rn := startRun(t, store, id, func(r *Runner) {
		r.chunkHook = func(table string) error {
			mu.Lock()
			seen = append(seen, table)
			mu.Unlock()
			time.Sleep(20 * time.Millisecond)
			return nil
		}
	})
	waitPhase(t, store, rn, id, PhaseStreaming)
	checkClean(t, store, id)
	mu.Lock()
	defer mu.Unlock()
	// Both tables are copied at once: the first chunks are of both.
	if first := seen[:len(seen)/2]; !slices.Contains(first, "public.orders") || !slices.Contains(first, "public.events") {
		t.Errorf("chunks in order %v: the tables were not copied in parallel", seen)
	}
	for _, c := range []string{"t0", "t1"} {
		if n := f.count(c, "SELECT count(*) FROM events"); n == 0 {
			t.Errorf("%s: no events", c)
		}
	}
}
