package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestQueryHistogramP99: the p99 of the log-linear histogram is within
// 1/16 of the exact p99, across six decades of durations.
func TestQueryHistogramP99(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, scale := range []time.Duration{20 * time.Microsecond, time.Millisecond, 80 * time.Millisecond, 3 * time.Second} {
		e := &Query{}
		var all []time.Duration
		for i := 0; i < 20000; i++ {
			d := time.Duration(float64(scale) * (0.5 + rng.ExpFloat64()))
			all = append(all, d)
			e.Observe(Call{Duration: d, Now: time.Now()})
		}
		slices.Sort(all)
		exact := all[int(math.Ceil(0.99*float64(len(all))))-1] // nearest rank
		got := e.snapshot().P99
		if diff := float64(got-exact) / float64(exact); diff > 1.0/16 || diff < -1.0/16 {
			t.Errorf("scale %v: p99 %v, exact %v (%.1f%% off)", scale, got, exact, 100*diff)
		}
	}
	for i := 0; i < histBuckets; i++ {
		low, width := histLow(i)
		if histBucket(low) != i || histBucket(low+width-1) != i {
			t.Fatalf("bucket %d: [%d, %d) maps to %d and %d", i, low, low+width, histBucket(low), histBucket(low+width-1))
		}
	}
}

// TestQueriesBounded: a new fingerprint over the bound evicts a least
// recently used one of a sample, the evicted entry reports it is no
// longer live, and a reset forgets them all.
func TestQueriesBounded(t *testing.T) {
	q := NewQueries(50)
	old := q.Get("SELECT old")
	old.last.Store(1) // long unused
	for i := 0; i < 49; i++ {
		q.Get("SELECT " + string(rune('a'+i)))
	}
	if len(q.Snapshot()) != 50 || !old.Live() {
		t.Fatalf("%d entries before the bound, old live %v", len(q.Snapshot()), old.Live())
	}
	for i := 0; i < 200; i++ {
		q.Get("SELECT new " + string(rune('a'+i)))
		if n := len(q.Snapshot()); n > 50 {
			t.Fatalf("%d entries kept, bound 50", n)
		}
	}
	if old.Live() {
		t.Error("the entry unused longest survived 200 evictions")
	}
	if q.Get("SELECT old") == old {
		t.Error("an evicted fingerprint got its old entry back")
	}
	e := q.Get("SELECT x")
	e.Observe(Call{Duration: time.Millisecond, Shards: 4, Rows: 10, SQLState: "23505", Now: time.Now()})
	e.Observe(Call{Duration: 3 * time.Millisecond, Shards: 1, Rows: 2, Route: 2, Now: time.Now()})
	var s QuerySnapshot
	for _, x := range q.Snapshot() {
		if x.Text == "SELECT x" {
			s = x
		}
	}
	if s.P99 != s.Max { // of two calls, the larger (nearest rank)
		t.Errorf("p99 of two calls %v, max %v", s.P99, s.Max)
	}
	if s.Calls != 2 || s.Errors != 1 || s.ErrorClasses["23"] != 1 || s.Rows != 12 || s.Shards != 5 || s.MaxShards != 4 ||
		s.Total != 4*time.Millisecond || s.Max != 3*time.Millisecond || s.Mean() != 2*time.Millisecond || s.Routes != 1|1<<2 {
		t.Errorf("figures %+v", s)
	}
	q.Reset()
	if e.Live() || len(q.Snapshot()) != 0 {
		t.Errorf("after reset: live %v, %d entries", e.Live(), len(q.Snapshot()))
	}
	var off *Queries = NewQueries(0)
	off.Reset()
	if off.Snapshot() != nil || off.Max() != 0 {
		t.Error("statistics off keep something")
	}
}

// TestQueryObserveWithoutAllocating: counting a call of a known
// fingerprint is atomic adds only.
func TestQueryObserveWithoutAllocating(t *testing.T) {
	e := NewQueries(10).Get("SELECT 1")
	now := time.Now()
	if n := testing.AllocsPerRun(1000, func() {
		e.Observe(Call{Duration: time.Millisecond, Shards: 1, Rows: 1, Now: now})
	}); n != 0 {
		t.Errorf("%v allocations per call", n)
	}
}

// BenchmarkQueryObserve is what a statement pays for its statistics: the
// entry kept in the plan, checked live, and one call counted.
func BenchmarkQueryObserve(b *testing.B) {
	e := NewQueries(10).Get("SELECT abalance FROM pgbench_accounts WHERE aid = $1")
	now := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if e.Live() {
				e.Observe(Call{Duration: 300 * time.Microsecond, Shards: 1, Rows: 1, Route: 1, Now: now})
			}
		}
	})
}
