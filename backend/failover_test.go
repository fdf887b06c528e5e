package backend

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/shardgate/shardgate/sqlerr"
)

// closedAddr is a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// A pool with a failover buffer holds a statement whose dial fails, up to
// the buffer, then fails it with 08006; Unhold ends the hold at once.
func TestFailoverBufferHoldsThenFails(t *testing.T) {
	p := NewPool("pg1", "postgres://postgres@"+closedAddr(t)+"/shop?connect_timeout=1", 2, time.Second, time.Second, 0)
	p.SetFailoverBuffer(400 * time.Millisecond)
	start := time.Now()
	_, err := p.Acquire(context.Background())
	held := time.Since(start)
	var se *sqlerr.Error
	if !errors.As(err, &se) || se.Code != "08006" || !p.Held() {
		t.Fatalf("after the buffer: %v (held %v)", err, p.Held())
	}
	if held < 400*time.Millisecond || held > 3*time.Second {
		t.Fatalf("held %s, want about the 400ms buffer", held)
	}
	t.Logf("held %s, then: %v", held.Round(time.Millisecond), err)
	// A statement after the buffer passed fails at once, until the hold
	// ends.
	start = time.Now()
	if _, err := p.Acquire(context.Background()); err == nil || time.Since(start) > 200*time.Millisecond {
		t.Fatalf("after an expired hold: %v in %s", err, time.Since(start))
	}
	if d := p.Unhold(); d < 400*time.Millisecond || p.Held() {
		t.Fatalf("Unhold reports %s", d)
	}
	// Without a buffer the dial failure fails the statement at once.
	q := NewPool("pg1", "postgres://postgres@"+closedAddr(t)+"/shop", 2, time.Second, time.Second, 0)
	start = time.Now()
	if _, err := q.Acquire(context.Background()); !errors.As(err, &se) || se.Code != "08006" || time.Since(start) > 200*time.Millisecond {
		t.Fatalf("no buffer: %v (%T) in %s", err, err, time.Since(start))
	}
}
