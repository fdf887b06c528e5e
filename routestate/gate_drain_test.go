package routestate

import (
	"testing"
	"time"
)

// An arming waits for the statements that passed the gate before it (they
// could reach the old shards after the switch's write block) before it
// acknowledges, at most drainWait.
func TestGateArmingWaitsForStatementsInFlight(t *testing.T) {
	g := NewGate()
	req := func(id string) *BufferRequest {
		return &BufferRequest{ID: id, Tables: []string{"public.t"}, Deadline: time.Now().Add(10 * time.Second)}
	}
	s := g.Enter() // in flight before the arming
	go func() {
		time.Sleep(100 * time.Millisecond)
		g.Leave(s)
	}()
	start := time.Now()
	g.Request(req("a"))
	if d := time.Since(start); d < 90*time.Millisecond || d >= drainWait {
		t.Fatalf("the arming returned after %v, want when the statement left (~100ms)", d)
	}
	if !g.Armed() {
		t.Fatal("not armed")
	}
	// A statement entering while armed is the gate's to hold; it left
	// before the next arming, which then does not wait.
	g.Leave(g.Enter())
	g.Request(nil)
	start = time.Now()
	g.Request(req("b"))
	if d := time.Since(start); d > 50*time.Millisecond {
		t.Fatalf("an arming with nothing in flight waited %v", d)
	}
	// A statement never leaving delays an arming by drainWait at most.
	g.Request(nil)
	stuck := g.Enter()
	defer g.Leave(stuck)
	start = time.Now()
	g.Request(req("c"))
	if d := time.Since(start); d < drainWait || d > drainWait+200*time.Millisecond {
		t.Fatalf("a stuck statement delayed the arming %v, want %v", d, drainWait)
	}
}
