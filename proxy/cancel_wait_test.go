package proxy

import (
	"context"
	"testing"
	"time"
)

// A CancelRequest for a session waiting for a pool connection ends the
// wait with 57014 at once, as Postgres cancels a statement waiting for a
// lock; the session carries on.
func TestCancelEndsPoolWait(t *testing.T) {
	p := startProxy(t, shopTopology(""), func(c *Config) { c.PoolSize = 1; c.MaxWait = 20 * time.Second })
	setupShop(t, p).Close(context.Background())
	holder := connect(t, p.dsn())
	waiter := connect(t, p.dsn())
	mustExec(t, holder, "BEGIN")
	mustExec(t, holder, "SELECT * FROM settings") // holds main's only connection
	done := make(chan error, 1)
	go func() {
		_, err := waiter.Exec(context.Background(), "SELECT * FROM settings")
		done <- err
	}()
	time.Sleep(300 * time.Millisecond) // waiting in the pool by now
	start := time.Now()
	if err := waiter.PgConn().CancelRequest(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if sqlstate(err) != "57014" {
			t.Fatalf("want 57014, got %v", err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("the cancel took %s", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the cancel did not end the wait for a pool connection")
	}
	mustExec(t, holder, "COMMIT")
	// The session carries on, and no stale cancel ends its next wait.
	mustExec(t, holder, "BEGIN")
	mustExec(t, holder, "SELECT * FROM settings")
	committed := make(chan error, 1)
	go func() {
		time.Sleep(300 * time.Millisecond)
		_, err := holder.Exec(context.Background(), "COMMIT")
		committed <- err
	}()
	mustExec(t, waiter, "SELECT * FROM settings")
	if err := <-committed; err != nil {
		t.Fatal(err)
	}
}
