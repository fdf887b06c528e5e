package proxy

import (
	"context"
	"testing"
	"time"
)

// LISTEN pins a session to a main connection; notifications reach it while
// it is idle and while it runs statements; UNLISTEN * gives the
// connection back.
func TestListenNotify(t *testing.T) {
	p := startProxy(t, shopTopology(""), func(c *Config) { c.PoolSize = 2; c.MaxWait = 300 * time.Millisecond })
	ctx := context.Background()
	l := connect(t, p.dsn())
	n := connect(t, p.dsn())
	mustExec(t, l, "LISTEN chat")
	// Idle: the notification arrives while the listener waits.
	mustExec(t, n, "NOTIFY chat, 'one'")
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	note, err := l.WaitForNotification(wctx)
	if err != nil || note.Channel != "chat" || note.Payload != "one" {
		t.Fatalf("idle notification: %+v %v", note, err)
	}
	// Busy: read along with a statement's answer.
	mustExec(t, n, "NOTIFY chat, 'two'")
	time.Sleep(50 * time.Millisecond)
	mustExec(t, l, "SELECT 1")
	cctx, ccancel := context.WithCancel(ctx)
	ccancel()
	if note, err := l.WaitForNotification(cctx); err != nil || note.Payload != "two" {
		t.Fatalf("busy notification: %+v %v", note, err)
	}
	// Self-notification in a transaction arrives at COMMIT.
	mustExec(t, l, "BEGIN")
	mustExec(t, l, "NOTIFY chat, 'three'")
	mustExec(t, l, "COMMIT")
	wctx2, cancel2 := context.WithTimeout(ctx, 5*time.Second)
	defer cancel2()
	if note, err := l.WaitForNotification(wctx2); err != nil || note.Payload != "three" {
		t.Fatalf("self notification: %+v %v", note, err)
	}
	// The pinned connection is the listener's: the other client still
	// runs (pool of 2); after UNLISTEN * both connections are free again.
	mustExec(t, l, "UNLISTEN *")
	x := connect(t, p.dsn())
	mustExec(t, x, "BEGIN")
	mustExec(t, x, "SELECT 1")
	mustExec(t, n, "SELECT 1")
	mustExec(t, x, "COMMIT")
}

// LISTEN and UNLISTEN inside a transaction take effect at its commit, as
// in Postgres: rolled back (or rolled back to a savepoint before them, or
// in a failed implicit transaction) they leave the session as it was, so
// a LISTEN that never happened does not keep the main connection pinned,
// and an UNLISTEN that never happened does not stop the notifications.
func TestListenFollowsTransaction(t *testing.T) {
	p := startProxy(t, shopTopology(""), func(c *Config) { c.PoolSize = 1; c.MaxWait = 300 * time.Millisecond })
	ctx := context.Background()
	l := connect(t, p.dsn())
	other := connect(t, p.dsn())
	free := func(step string) {
		t.Helper()
		if _, err := other.Exec(ctx, "SELECT 1"); err != nil {
			t.Fatalf("%s: the main connection is still pinned: %v", step, err)
		}
	}
	mustExec(t, l, "BEGIN")
	mustExec(t, l, "LISTEN gone")
	mustExec(t, l, "ROLLBACK")
	free("LISTEN rolled back")

	mustExec(t, l, "BEGIN")
	mustExec(t, l, "SAVEPOINT a")
	mustExec(t, l, "LISTEN gone")
	mustExec(t, l, "ROLLBACK TO SAVEPOINT a")
	mustExec(t, l, "COMMIT")
	free("LISTEN rolled back to a savepoint")

	if _, err := l.Exec(ctx, "LISTEN gone; SELECT 1/0"); sqlstate(err) != "22012" {
		t.Fatalf("implicit transaction: %v", err)
	}
	free("LISTEN in a failed implicit transaction")

	mustExec(t, l, "BEGIN")
	mustExec(t, l, "SAVEPOINT a")
	mustExec(t, l, "LISTEN kept")
	mustExec(t, l, "RELEASE SAVEPOINT a")
	mustExec(t, l, "COMMIT")
	mustExec(t, l, "BEGIN")
	mustExec(t, l, "UNLISTEN *")
	mustExec(t, l, "ROLLBACK")
	if _, err := other.Exec(ctx, "SELECT 1"); sqlstate(err) != "53300" {
		t.Fatalf("a committed LISTEN must keep the main connection: %v", err)
	}
	// Still listening: notify from the listener's own connection.
	mustExec(t, l, "NOTIFY kept, 'still'")
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if note, err := l.WaitForNotification(wctx); err != nil || note.Payload != "still" {
		t.Fatalf("notification after a rolled-back UNLISTEN: %+v %v", note, err)
	}
	mustExec(t, l, "BEGIN")
	mustExec(t, l, "UNLISTEN kept")
	mustExec(t, l, "COMMIT")
	free("UNLISTEN committed")
}
