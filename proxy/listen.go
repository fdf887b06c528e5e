package proxy

import (
	"errors"
	"io"
	"net"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/clientwait"
	"github.com/shardgate/shardgate/pgwire"
)

// LISTEN/NOTIFY: a session that LISTENs keeps its main-cluster connection
// (pinFor, settle in cursors.go) until it stops listening. Notifications
// the connection receives while the session runs statements are kept by
// package backend and delivered before ReadyForQuery; while the session
// waits for its client, a watch on the connection interrupts that wait to
// deliver them at once.

// deliverNotifications passes on the notifications the session's held
// connections received.
func (ss *session) deliverNotifications() {
	for _, b := range ss.held {
		for _, body := range b.TakeNotifications() {
			_ = pgwire.WriteRaw(ss.out, 'A', body)
		}
	}
}

// listenConn is the connection to watch while the session waits for its
// client: the main cluster's, if the session listens and is idle.
func (ss *session) listenConn(idle bool) *backend.Conn {
	if !idle || len(ss.listening) == 0 || ss.tx != nil || len(ss.batchOrder) > 0 {
		return nil
	}
	b := ss.held[ss.srv.cur.Load().vs.Main().Clusters[0]]
	if b == nil || b.Broken || b.TxStatus != 'I' {
		return nil
	}
	return b
}

// receive reads the client's next message, or parks the session when a
// sweep cut its wait short (clientwait.ErrParked). While the session listens and
// is idle, notifications arriving meanwhile are delivered at once: a
// watch on the backend connection cuts the client read short, the
// notifications go out and the read resumes (the reader keeps a partly
// read message).
func (ss *session) receive(idle bool) (pgproto3.FrontendMessage, error) {
	if ss.parking && ss.rd.Buffered() == 0 { // parks: its buffers go back
		ss.parking = false
		ss.rd.Release()
		pgwire.PutClientWriter(ss.out)
		ss.setOut(nil)
		return nil, clientwait.ErrParked
	}
	b := ss.listenConn(idle)
	if b == nil {
		return ss.rd.Receive()
	}
	conn := ss.conn
	for {
		w := b.Watch(func() { _ = conn.SetReadDeadline(time.Now()) })
		msg, err := ss.rd.Receive()
		input := w.Stop()
		_ = conn.SetReadDeadline(time.Time{})
		if input {
			if aerr := b.ReadAsync(); aerr != nil {
				// The connection, and with it the session's LISTEN, is gone.
				_ = ss.sendFatal(pgwire.ConnLost(b.Cluster(), aerr))
				return nil, io.EOF
			}
			ss.deliverNotifications()
			if ferr := ss.out.Flush(); ferr != nil {
				return nil, ferr
			}
		}
		var ne net.Error
		if err != nil && input && errors.As(err, &ne) && ne.Timeout() && !ss.wait.Killed() {
			continue
		}
		return msg, err
	}
}
