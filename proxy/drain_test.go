package proxy

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
)

// rawSession is a raw client past start-up (trust, user app).
func rawSession(t *testing.T, addr string) *rawConn {
	t.Helper()
	r := dialRaw(t, addr)
	r.startup(t, "app")
	r.untilReady(t)
	return r
}

// untilReady reads up to ReadyForQuery and returns the messages before it.
func (r *rawConn) untilReady(t *testing.T) []pgproto3.BackendMessage {
	t.Helper()
	var out []pgproto3.BackendMessage
	for {
		m, err := r.fe.Receive()
		if err != nil {
			t.Fatalf("receive: %v after %d messages", err, len(out))
		}
		if _, ok := m.(*pgproto3.ReadyForQuery); ok {
			return out
		}
		if e, ok := m.(*pgproto3.ErrorResponse); ok {
			cp := *e
			m = &cp
		}
		out = append(out, m)
	}
}

// query runs one simple query and fails the test on an ErrorResponse.
func (r *rawConn) query(t *testing.T, sql string) {
	t.Helper()
	r.send(t, &pgproto3.Query{String: sql})
	for _, m := range r.untilReady(t) {
		if e, ok := m.(*pgproto3.ErrorResponse); ok {
			t.Fatalf("%s: %s %s", sql, e.Code, e.Message)
		}
	}
}

// expectTerminated waits up to within for FATAL 57P01 and then the end of
// the connection.
func (r *rawConn) expectTerminated(t *testing.T, who string, within time.Duration) {
	t.Helper()
	_ = r.SetReadDeadline(time.Now().Add(within))
	m, err := r.fe.Receive()
	if err != nil {
		t.Fatalf("%s: want FATAL 57P01, got %v", who, err)
	}
	e, ok := m.(*pgproto3.ErrorResponse)
	if !ok || e.Severity != "FATAL" || e.Code != "57P01" || e.Message != "terminating connection due to administrator command" {
		t.Fatalf("%s: want FATAL 57P01, got %#v", who, m)
	}
	if m, err := r.fe.Receive(); err == nil {
		t.Fatalf("%s: connection still open after 57P01: %T", who, m)
	}
}

func ordersOnClusters(t *testing.T) int {
	n := 0
	for _, c := range env.Clusters {
		n += count(t, c.DSN("shop"), "SELECT count(*) FROM orders")
	}
	return n
}

// TestShutdownDrain: Shutdown ends an idle session at once with 57P01,
// refuses new connections, lets a session in a transaction commit and
// only then ends it with 57P01, and returns once no session is left.
func TestShutdownDrain(t *testing.T) {
	p := startProxy(t, shopTopology(""), nil)
	setupShop(t, p)
	idle := rawSession(t, p.addr)
	busy := rawSession(t, p.addr)
	busy.query(t, "BEGIN")
	busy.query(t, "INSERT INTO orders (id, customer_id, total) VALUES (1, 7, 10)")

	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		done <- p.srv.Shutdown(ctx)
	}()
	idle.expectTerminated(t, "idle session", 3*time.Second)
	if c, err := net.DialTimeout("tcp", p.addr, time.Second); err == nil {
		c.Close()
		t.Fatal("a new connection was accepted while draining")
	}
	select {
	case err := <-done:
		t.Fatalf("Shutdown returned while a transaction was open: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	busy.query(t, "INSERT INTO orders (id, customer_id, total) VALUES (2, 8, 20)")
	busy.query(t, "COMMIT")
	busy.expectTerminated(t, "session after COMMIT", 3*time.Second)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Shutdown did not return after the last session ended")
	}
	if n := ordersOnClusters(t); n != 2 {
		t.Fatalf("committed rows: %d, want 2", n)
	}
}

// TestShutdownTimeout: a transaction still open when Shutdown's context
// ends is rolled back, and its session gets 57P01, also while a statement
// of it runs.
func TestShutdownTimeout(t *testing.T) {
	p := startProxy(t, shopTopology(""), nil)
	setupShop(t, p)
	open := rawSession(t, p.addr)
	open.query(t, "BEGIN")
	open.query(t, "INSERT INTO orders (id, customer_id, total) VALUES (1, 7, 10)")
	sleeping := rawSession(t, p.addr)
	sleeping.query(t, "BEGIN")
	sleeping.query(t, "INSERT INTO orders (id, customer_id, total) VALUES (2, 8, 10)")
	sleeping.send(t, &pgproto3.Query{String: "SELECT pg_sleep(60)"})
	time.Sleep(200 * time.Millisecond) // let the sleep start

	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := p.srv.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown: %v, want the context's deadline", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("Shutdown took %s", d)
	}
	open.expectTerminated(t, "idle in transaction", time.Second)
	// The cancelled sleep's error comes first.
	_ = sleeping.SetReadDeadline(time.Now().Add(time.Second))
	var last *pgproto3.ErrorResponse
	for {
		m, err := sleeping.fe.Receive()
		if err != nil {
			break
		}
		if e, ok := m.(*pgproto3.ErrorResponse); ok {
			cp := *e
			last = &cp
		}
	}
	if last == nil || last.Code != "57P01" || last.Severity != "FATAL" {
		t.Fatalf("running statement: last error %+v, want FATAL 57P01", last)
	}
	if n := ordersOnClusters(t); n != 0 {
		t.Fatalf("rows of rolled back transactions: %d", n)
	}
}
