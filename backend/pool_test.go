package backend

import (
	"context"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/testenv"
	"github.com/shardgate/shardgate/sqlerr"
)

// The pool is tested against a real backend: one throwaway cluster for
// the package.
func TestMain(m *testing.M) {
	testenv.Run(m, testenv.Options{N: 1}, nil)
}

// TestPoolWakesEveryWaiter: connections released while several Acquires
// are about to wait must reach all of them. None may sit until max_wait
// while a connection is idle.
func TestPoolWakesEveryWaiter(t *testing.T) {
	env := testenv.Shared(t)
	const size, waiters = 4, 4
	const maxWait = 5 * time.Second
	p := NewPool("pg0", env.Clusters[0].DSN(""), size, maxWait, 5*time.Second, 0)
	defer p.Close()
	ctx := context.Background()
	held := make([]*Conn, size)
	for i := range held {
		b, err := p.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		held[i] = b
	}

	// Every waiter stops between deciding to wait and waiting until all
	// the connections are back.
	arrived := make(chan struct{}, 100)
	proceed := make(chan struct{})
	testHookWaiting = func() {
		select {
		case arrived <- struct{}{}:
		default:
		}
		<-proceed
	}
	type result struct {
		b    *Conn
		err  error
		took time.Duration
	}
	results := make(chan result, waiters)
	for range waiters {
		go func() {
			start := time.Now()
			b, err := p.Acquire(ctx)
			results <- result{b, err, time.Since(start)}
		}()
	}
	for range waiters {
		<-arrived
	}
	for _, b := range held {
		b.Release()
	}
	close(proceed)
	// Each waiter keeps its connection: no release after these four may
	// make up for a wake-up that got lost.
	for range waiters {
		r := <-results
		if r.err != nil {
			t.Errorf("Acquire: %v", r.err)
			continue
		}
		if r.took > maxWait/2 {
			t.Errorf("a waiter got its connection after %s, with connections idle", r.took.Round(time.Millisecond))
		}
		defer r.b.Release()
	}
	testHookWaiting = nil
	if open, idle := p.Stats(); open != size || idle != 0 {
		t.Errorf("pool: %d open, %d idle; want %d and none", open, idle, size)
	}
}

// TestPoolCloseWakesWaiters: an Acquire waiting on a pool that closes
// (a reload dropped its cluster) fails at once, not after max_wait.
func TestPoolCloseWakesWaiters(t *testing.T) {
	env := testenv.Shared(t)
	const maxWait = 5 * time.Second
	p := NewPool("pg0", env.Clusters[0].DSN(""), 1, maxWait, 5*time.Second, 0)
	b, err := p.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release()
	waiting := make(chan struct{})
	testHookWaiting = func() { close(waiting) }
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := p.Acquire(context.Background())
		done <- err
	}()
	<-waiting
	p.Close()
	err = <-done
	testHookWaiting = nil
	if code := sqlerr.Code(err); code != "08006" {
		t.Fatalf("Acquire on a closed pool: %v (SQLSTATE %s), want 08006", err, code)
	}
	if took := time.Since(start); took > maxWait/2 {
		t.Fatalf("the waiter learnt of the close after %s", took.Round(time.Millisecond))
	}
}

// TestPoolDoubleReleaseLendsOnce: a connection released twice must not be
// lent to two users at once (each would read the other's answers).
func TestPoolDoubleReleaseLendsOnce(t *testing.T) {
	env := testenv.Shared(t)
	p := NewPool("pg0", env.Clusters[0].DSN(""), 2, time.Second, 5*time.Second, 0)
	defer p.Close()
	ctx := context.Background()
	b, err := p.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p.Release(b)
	p.Release(b)
	x, err := p.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	y, err := p.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if x == y {
		t.Fatal("one connection lent twice after a double Release")
	}
	if p.misuses != 1 {
		t.Errorf("misuses = %d, want 1", p.misuses)
	}
	if open, _ := p.Stats(); open != 2 {
		t.Errorf("open = %d, want 2", open)
	}
	p.Release(x)
	p.Release(y)
}

// After a crash-restart of the cluster (pg_ctl restart -m immediate) the
// connections idle in the pool are dead; the next statement succeeds
// however recently they were given back (a pool under load lends them
// again within microseconds): the dead one is found before anything is
// sent on it, and a fresh one serves the statement.
func TestStatementAfterCrashRestart(t *testing.T) {
	p, b := poolOfOne(t)
	if err := b.SimpleExec("SELECT 1", nil); err != nil {
		t.Fatal(err)
	}
	b.Release()
	if err := testenv.Shared(t).Clusters[0].RestartImmediate(context.Background()); err != nil {
		t.Fatal(err)
	}
	// As if given back a moment before the crash.
	p.mu.Lock()
	for _, idle := range p.idle {
		idle.idleSince = time.Now()
	}
	p.mu.Unlock()
	b, err := p.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release()
	if err := b.SimpleExec("SELECT 1", nil); err != nil {
		t.Fatalf("the first statement after a crash-restart: %v", err)
	}
}

// A lend of an idle connection costs no system call: the hang-up watch's
// flag says whether its server is still there, where every lend used to
// peek at the socket (one recvfrom per statement on a busy pool).
func TestLendMakesNoPeek(t *testing.T) {
	p, b := poolOfOne(t)
	if !b.watched {
		t.Fatal("a TCP backend connection is not in the hang-up watch")
	}
	for range 100 {
		if err := b.SimpleExec("SELECT 1", nil); err != nil {
			t.Fatal(err)
		}
		b.Release()
		var err error
		if b, err = p.Acquire(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	defer b.Release()
	if b.peeks != 0 {
		t.Fatalf("%d peeks at the socket in 100 lends, want none", b.peeks)
	}
}

// A connection whose server was terminated while it sat idle in the pool
// (pg_terminate_backend: FATAL, then the backend exits) is not lent: the
// hang-up watch saw the close, and a fresh connection runs the statement.
func TestLendAfterTerminateWhileIdle(t *testing.T) {
	p, b := poolOfOne(t)
	pid := b.pid
	b.Release()
	env := testenv.Shared(t)
	ctx := context.Background()
	conn, err := env.Clusters[0].Conn(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "SELECT pg_terminate_backend($1::int, 30000)", int(pid)); err != nil {
		t.Fatal(err)
	}
	// pg_terminate_backend with a timeout returns once the backend has
	// exited; the watch marks the connection when its goroutine runs.
	deadline := time.Now().Add(30 * time.Second)
	for !b.hungUp.Load() {
		if time.Now().After(deadline) {
			t.Fatal("the hang-up watch did not see the terminated backend's close in 30 s")
		}
		time.Sleep(time.Millisecond)
	}
	nb, err := p.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer nb.Release()
	if nb == b {
		t.Fatal("the terminated backend's connection was lent")
	}
	if err := nb.SimpleExec("SELECT 1", nil); err != nil {
		t.Fatalf("the statement after the terminate: %v", err)
	}
}
