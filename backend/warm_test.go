package backend

import (
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/testenv"
)

// Warm leaves n idle connections open (at most the pool's size), which a
// statement then takes without dialing.
func TestPoolWarm(t *testing.T) {
	env := testenv.Shared(t)
	p := NewPool("pg0", env.Clusters[0].DSN(""), 4, time.Second, 5*time.Second, 0)
	defer p.Close()
	p.Warm(3)
	if open, idle := p.Stats(); open != 3 || idle != 3 {
		t.Fatalf("after Warm(3): %d open, %d idle, want 3 and 3", open, idle)
	}
	p.Warm(10) // capped at the size
	if open, idle := p.Stats(); open != 4 || idle != 4 {
		t.Fatalf("after Warm(10) of a pool of 4: %d open, %d idle", open, idle)
	}
	c, err := p.TryAcquire()
	if err != nil {
		t.Fatal(err)
	}
	if c.LeaseWait != 0 {
		t.Errorf("lease waited %v", c.LeaseWait)
	}
	p.Release(c)
	if open, _ := p.Stats(); open != 4 {
		t.Errorf("a statement after the warming dialed: %d open", open)
	}
}
