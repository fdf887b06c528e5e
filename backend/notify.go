package backend

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/shardgate/shardgate/pgwire"
)

// Notifications: a backend connection that LISTENs gets NotificationResponse
// messages whenever it is idle or ends a transaction. Read keeps them aside
// (Conn.Notifications) so that no reader of the connection meets them in
// the middle of a response; the session hands them to its client.

// keepNotification stores a NotificationResponse body (copied: the read
// buffer is reused).
func (b *Conn) keepNotification(body []byte) {
	b.Notifications = append(b.Notifications, append([]byte(nil), body...))
}

// TakeNotifications returns the NotificationResponse bodies read so far
// and forgets them.
func (b *Conn) TakeNotifications() [][]byte {
	n := b.Notifications
	b.Notifications = nil
	return n
}

// ReadAsync reads the messages an idle connection has received (see
// Pending; at least one, for the caller saw input) without waiting for
// more: notifications are kept for
// TakeNotifications, parameter changes recorded, notices dropped. Anything
// else (a FATAL error, a closed socket) marks the connection broken and is
// returned as an error.
func (b *Conn) ReadAsync() error {
	for first := true; first || b.Pending(); first = false {
		m, err := b.in.Next()
		if err != nil {
			b.Broken = true
			return err
		}
		switch m.Type {
		case 'A':
			b.keepNotification(m.Body)
		case 'S':
			b.Observe(m)
		case 'N':
		case 'E':
			b.Broken = true
			var e pgproto3.ErrorResponse
			if err := e.Decode(m.Body); err != nil {
				return err
			}
			return pgwire.PgErrorFrom(&e)
		default:
			b.Broken = true
			return errors.New("unexpected message from an idle backend connection")
		}
	}
	return nil
}

// Watch waits, in a goroutine of its own, for an idle connection to
// receive something and then calls onInput once. The owner must not use
// the connection until Stop returns.
type Watch struct {
	b     *Conn
	done  chan struct{}
	input bool
}

// Watch starts watching b (see type Watch).
func (b *Conn) Watch(onInput func()) *Watch {
	w := &Watch{b: b, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		if b.waitReadable() {
			w.input = true
			onInput()
		}
	}()
	return w
}

// Stop ends the watch, waits for its goroutine and reports whether input
// arrived (onInput then ran).
func (w *Watch) Stop() bool {
	_ = w.b.netConn.SetReadDeadline(time.Now())
	<-w.done
	_ = w.b.netConn.SetReadDeadline(time.Time{})
	return w.input || w.b.in.Buffered() > 0
}

// waitReadable blocks until the socket has input (or is closed) or its
// read deadline passes.
func (b *Conn) waitReadable() bool {
	if b.in.Buffered() > 0 {
		return true
	}
	raw, ok := rawSocketOf(b.netConn)
	if !ok {
		return false
	}
	var buf [1]byte
	err := raw.Read(func(fd uintptr) bool {
		_, _, rerr := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		// Not ready: wait for the poller. Otherwise there are bytes, an
		// EOF or an error, all of which the owner must read.
		return rerr != syscall.EAGAIN && rerr != syscall.EWOULDBLOCK && rerr != syscall.EINTR
	})
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}

// TypeOID looks up the OID of a type named as SQL ("public.mood",
// "numeric(10,2)") on an idle connection (or one in a transaction, which
// sees the transaction's own types).
func (b *Conn) TypeOID(typ string) (uint32, error) {
	rows, err := b.Query("SELECT " + pgwire.QuoteLiteral(typ) + "::pg_catalog.regtype::pg_catalog.oid")
	if err != nil {
		return 0, err
	}
	if len(rows) != 1 || len(rows[0]) != 1 {
		return 0, fmt.Errorf("type lookup of %s returned no row", typ)
	}
	oid, err := strconv.ParseUint(string(rows[0][0]), 10, 32)
	return uint32(oid), err
}
