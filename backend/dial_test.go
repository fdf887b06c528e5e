package backend

import (
	"context"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/shardgate/shardgate/internal/testenv"
)

// slowWriteConn returns from its first Write (the start-up message) a
// while after the bytes went out, as a write does on a machine too loaded
// to run the writer at once.
type slowWriteConn struct {
	net.Conn
	writes int
}

func (c *slowWriteConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if c.writes++; c.writes == 1 {
		time.Sleep(40 * time.Millisecond)
	}
	return n, err
}

// A start-up write slower than pgconn's 15 ms starts its background reader,
// which can be left in a Read of the socket when the connection is handed
// over; it then took the answer to the proxy's first statement, and the
// statement waited forever (seen as rare hangs of the proxy tests under
// load). dialBackend syncs the connection first.
func TestDialLeavesNoReaderBehind(t *testing.T) {
	env := testenv.Shared(t)
	testHookDial = func(dial pgconn.DialFunc) pgconn.DialFunc {
		return func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dial(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &slowWriteConn{Conn: c}, nil
		}
	}
	defer func() { testHookDial = nil }()
	p := NewPool("pg0", env.Clusters[0].DSN(""), 4, 5*time.Second, 5*time.Second, 0)
	defer p.Close()
	for i := 0; i < 4; i++ {
		b, err := p.Acquire(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		_ = b.netConn.SetReadDeadline(time.Now().Add(5 * time.Second))
		rows, err := b.Query("SELECT 1")
		if err != nil || len(rows) != 1 {
			t.Fatalf("connection %d: first query: %v %v (its answer went to another reader)", i, rows, err)
		}
		_ = b.netConn.SetReadDeadline(time.Time{})
		defer b.Release()
	}
}

// A connection reserved for a cancel (HoldForCancel) and given back goes to
// the pool only once the cancel is delivered, and Release does not wait
// for that.
func TestReleaseWaitsForCancelInTheBackground(t *testing.T) {
	p, b := lentPool(t, 1, 300*time.Millisecond)
	held := HoldForCancel([]*Conn{b, b}) // a connection listed twice is held once
	if len(held) != 1 {
		t.Fatalf("held %d, want 1", len(held))
	}
	if again := HoldForCancel([]*Conn{b}); len(again) != 0 {
		t.Fatalf("a connection already held for a cancel was held again")
	}
	done := make(chan struct{})
	go func() { b.Release(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("Release waited for the cancel's delivery")
	}
	if c, err := p.Acquire(context.Background()); err == nil {
		c.Release()
		t.Fatal("the connection was back in the pool before its cancel was delivered")
	}
	DeliverCancels(held, slog.Default())
	c, err := p.Acquire(context.Background())
	if err != nil {
		t.Fatalf("after the cancel: %v", err)
	}
	if _, err := c.Query("SELECT 1"); err != nil {
		t.Fatalf("the connection after a cancel of nothing: %v", err)
	}
	c.Release()
}
