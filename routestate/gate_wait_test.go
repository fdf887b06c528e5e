package routestate

import (
	"sync"
	"testing"
	"time"
)

// The gate reports the wait each held statement's client felt, from the
// hold to the answer after the release (Answered), as p50/p99/max and the
// first answer, and calls its settled callback once every held statement
// is answered.
func TestGateReportsClientWaits(t *testing.T) {
	g := NewGate()
	settled := make(chan struct{}, 1)
	g.OnSettled(func() { settled <- struct{}{} })
	g.Request(&BufferRequest{ID: "a", Tables: []string{"public.t"}, Deadline: time.Now().Add(10 * time.Second)})
	write := func() []string { return []string{"INSERT INTO t VALUES (1)"} }
	var wg sync.WaitGroup
	var mu sync.Mutex
	var longest time.Duration // the longest wait the writers saw, held to answered
	// Three writes held; each is answered some time after the release, the
	// last 60 ms after it: the clients' waits exceed the hold.
	for i, answer := range []time.Duration{0, 20 * time.Millisecond, 60 * time.Millisecond} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(i) * 5 * time.Millisecond)
			heldAt := g.Hold(false, write)
			if heldAt.IsZero() {
				t.Error("a write was not held")
				return
			}
			time.Sleep(answer)
			mu.Lock()
			longest = max(longest, time.Since(heldAt))
			mu.Unlock()
			g.Answered(heldAt)
		}()
	}
	if at := g.Hold(false, func() []string { return []string{"SELECT * FROM t"} }); !at.IsZero() {
		t.Error("a read was held")
	}
	time.Sleep(50 * time.Millisecond)
	released := time.Now() // taken before the release: an answer may come at once
	g.Request(nil)
	wg.Wait()
	select {
	case <-settled:
	case <-time.After(time.Second):
		t.Fatal("settled not called once every held statement was answered")
	}
	st := g.Stats()
	t.Logf("held %d, answered %d, p50 %v p99 %v max %v, longest hold %v", st.Buffered, st.Answered, st.WaitP50, st.WaitP99, st.WaitMax, st.MaxHeld)
	if st.Buffered != 3 || st.Answered != 3 {
		t.Fatalf("held %d, answered %d, want 3 and 3", st.Buffered, st.Answered)
	}
	// The reported max is the writers' own longest wait (not the hold, which
	// ended before the last two answers): timing-free bounds, as the machine
	// may be loaded.
	if st.WaitMax < longest || st.WaitMax < st.MaxHeld || st.WaitMax < 60*time.Millisecond || st.WaitP50 > st.WaitMax || st.WaitP99 != st.WaitMax {
		t.Errorf("waits p50 %v p99 %v max %v, longest hold %v: the answers' waits are not reported", st.WaitP50, st.WaitP99, st.WaitMax, st.MaxHeld)
	}
	if st.FirstAnswered.Before(released) || st.FirstAnswered.Sub(st.ArmedAt) < 40*time.Millisecond {
		t.Errorf("first answered %v after the arming, %v after the release", st.FirstAnswered.Sub(st.ArmedAt), st.FirstAnswered.Sub(released))
	}
	// A statement held by an earlier request is not counted in the next.
	g.Request(&BufferRequest{ID: "b", Tables: []string{"public.t"}, Deadline: time.Now().Add(10 * time.Second)})
	g.Answered(st.ArmedAt)
	if st := g.Stats(); st.Answered != 0 || st.WaitMax != 0 {
		t.Errorf("request b counts an answer of a: %+v", st)
	}
	g.Request(nil)
}

// Arming runs the OnArm callback with the request (its clusters: the
// proxy warms its connections to them before the release).
func TestGateOnArm(t *testing.T) {
	g := NewGate()
	got := make(chan []string, 1)
	g.OnArm(func(r *BufferRequest) { got <- r.Clusters })
	g.Request(&BufferRequest{ID: "a", Tables: []string{"public.t"}, Clusters: []string{"t0", "t1"}, Deadline: time.Now().Add(10 * time.Second)})
	select {
	case c := <-got:
		if len(c) != 2 || c[0] != "t0" || c[1] != "t1" {
			t.Errorf("OnArm got %v", c)
		}
	case <-time.After(time.Second):
		t.Fatal("OnArm not called")
	}
	g.Request(nil)
}
