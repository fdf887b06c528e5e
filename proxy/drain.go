package proxy

import (
	"context"
	"errors"
	"net"
	"os"
	"time"

	"github.com/shardgate/shardgate/sqlerr"
)

// Draining (SIGTERM): Shutdown stops accepting, ends idle sessions at once
// and lets a session in a transaction finish it; each session learns it
// must end only at a message boundary of its own goroutine (loop), so the
// goroutine that owns the client connection is the only one writing to it.

// forceGrace is how long Shutdown waits, once its context is done, for
// sessions to roll back and say goodbye before their connections are cut.
const forceGrace = 3 * time.Second

// errAdminShutdown is what a session ended by a drain tells its client.
var errAdminShutdown = sqlerr.New("57P01", "terminating connection due to administrator command")

// ShutdownTimeout is proxy.timeouts.shutdown of the topology in force: how
// long a SIGTERM lets open transactions finish (0: no limit).
func (s *Server) ShutdownTimeout() time.Duration {
	return s.cur.Load().topo.Proxy.Timeouts.Shutdown
}

// Shutdown drains the server: it stops accepting connections, ends every
// session not in a transaction at once with FATAL 57P01, and ends each
// session in a transaction the same way once the transaction ends. When
// ctx is done first, the transactions still open are rolled back, their
// sessions get 57P01, and the result is ctx's error. The server is closed
// (as by Close) when Shutdown returns.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.draining.Store(true)
	for _, ln := range s.listeners {
		ln.Close()
	}
	s.mu.Unlock()
	s.log.Info("draining: idle sessions end now, the others when their transaction ends")
	s.wakeSessions(false)
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = ctx.Err()
		s.log.Warn("drain timed out: rolling back the transactions still open")
		s.wakeSessions(true)
		select {
		case <-done:
		case <-time.After(forceGrace):
		}
	}
	s.Close()
	return err
}

// wakeSessions marks the sessions that must end (all with force, else the
// idle ones) and interrupts their wait for the client; with force the
// statements they are running are cancelled too.
func (s *Server) wakeSessions(force bool) {
	s.mu.Lock()
	sessions := make([]*session, 0, len(s.sessions))
	for _, ss := range s.sessions {
		sessions = append(sessions, ss)
	}
	s.mu.Unlock()
	for _, ss := range sessions {
		s.wake(ss, force)
	}
}

// wake marks ss to end if it is idle, or with force in any case, and
// interrupts its wait for the client (clientwait.Wait); with force the statement it is running is cancelled too.
func (s *Server) wake(ss *session, force bool) {
	if !ss.wait.Wake(force) && force {
		s.cancelRunning(ss)
	}
}

// drainBeforeRead is called by the session's loop before it reads the next
// client message; boundary says no extended-protocol batch is pending. It
// reports whether the session must end now (and then has told the client).
func (ss *session) drainBeforeRead(boundary bool) bool {
	end := ss.wait.Begin(boundary, ss.tx != nil, ss.srv.draining.Load(), boundary && ss.raw != nil && ss.listenConn(true) == nil)
	ss.info.Waiting(ss.tx != nil)
	if end {
		ss.terminate()
	}
	return end
}

// drainAfterRead is called by the loop once the read returns (err); it
// reports whether a drain woke the session (it has then told the client;
// the message read, if any, is not run), and notes a park (receive).
func (ss *session) drainAfterRead(err error) bool {
	killed, park := ss.wait.End()
	ss.parking = park && errors.Is(err, os.ErrDeadlineExceeded) // errors.As would allocate per message
	ss.info.Running()
	if killed {
		ss.terminate()
	}
	return killed
}

// terminate rolls back the session's transaction and sends FATAL 57P01.
func (ss *session) terminate() {
	if ss.tx != nil {
		ss.abortTx()
	}
	_ = ss.sendFatal(errAdminShutdown)
}

// trackListener records a listener Serve accepts on, for Shutdown to
// close; it reports false (and closes ln) when the server is already draining or closed.
func (s *Server) trackListener(ln net.Listener) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.draining.Load() || s.closed {
		ln.Close()
		return false
	}
	s.listeners = append(s.listeners, ln)
	return true
}
