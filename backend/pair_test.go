package backend

import (
	"context"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/testenv"
	"github.com/shardgate/shardgate/sqlerr"
)

// LeasePairAs takes two connections together: with one of a pool of two
// busy it waits, holding neither (a TryAcquire meanwhile gets the free
// one), takes both once the busy one comes back, and a pool of one is
// refused at once with 53300 (it would wait for itself).
func TestLeasePairWaitsHoldingNone(t *testing.T) {
	p, busy := lentPool(t, 2, 10*time.Second)
	type pair struct {
		a, b *Conn
		err  error
	}
	got := make(chan pair, 1)
	go func() {
		a, b, err := p.LeasePairAs(nil, 7, "", Login{})
		got <- pair{a, b, err}
	}()
	// The free connection is not kept by the waiting pair: another
	// caller gets it (between the pair's tries).
	deadline := time.Now().Add(5 * time.Second)
	for {
		select {
		case r := <-got:
			t.Fatalf("the pair came back with one connection of two busy: %v", r.err)
		default:
		}
		if b, err := p.TryAcquire(); err == nil {
			p.Release(b)
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the waiting pair holds the free connection")
		}
		time.Sleep(5 * time.Millisecond)
	}
	p.Release(busy)
	r := <-got
	if r.err != nil || r.a == nil || r.b == nil || r.a == r.b {
		t.Fatalf("LeasePairAs once both were free: %v %p %p", r.err, r.a, r.b)
	}
	if r.a.client.Load() != 7 || r.b.client.Load() != 7 {
		t.Fatal("the pair is not lent to its client")
	}
	p.Release(r.a)
	p.Release(r.b)

	one, b := lentPool(t, 1, 10*time.Second)
	one.Release(b)
	start := time.Now()
	if _, _, err := one.LeasePairAs(nil, 7, "", Login{}); sqlerr.Code(err) != "53300" || time.Since(start) > time.Second {
		t.Fatalf("a pair from a pool of one: %v after %s, want 53300 at once", err, time.Since(start))
	}
}

// lentPool is a pool of size on the package's cluster, closed after the
// test, with one connection lent.
func lentPool(tb testing.TB, size int, maxWait time.Duration) (*Pool, *Conn) {
	tb.Helper()
	env := testenv.Shared(tb)
	p := NewPool("pg0", env.Clusters[0].DSN(""), size, maxWait, 5*time.Second, 0)
	tb.Cleanup(p.Close)
	b, err := p.Acquire(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	return p, b
}
