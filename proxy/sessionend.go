package proxy

import (
	"time"

	"github.com/shardgate/shardgate/clientwait"
)

// No session holds backends with nobody waiting. A session that must end
// (admin KILL, pg_terminate_backend of its pid, a drain's timeout, a
// client gone while a statement runs) is first asked to, as Postgres asks
// a backend: its wait for the client is cut short, its running statement
// cancelled, and it ends at its next message boundary with FATAL 57P01,
// its transaction rolled back. What a cancel cannot reach is then cut:
// after hardStopAfter its lent backend connections are closed
// (backend.Pool.Interrupt: a merge's readers, a read of a backend idle in
// transaction, a backend blocked sending rows all fail at once), and so is
// its client's socket (a write to a client that does not read; such a
// client could not read its FATAL either). Postgres rolls back what the
// closed connections ran.
//
// A client that goes away while its session runs a statement is not read
// until the statement ends, so the server's maintenance tick peeks at the
// socket of every session not waiting for its client
// (clientwait.Gone) and ends those whose client is gone the same way.
// (A TLS client that sent close_notify before closing looks present
// until its session reads again.)

// hardStopAfter is how long a session that must end gets to do so on its
// own before its backend connections are closed.
const hardStopAfter = time.Second

// stopHard closes what a session that did not end in time still holds:
// its backend connections and its client's socket.
func (s *Server) stopHard(ss *session) {
	if !s.alive(ss) {
		return
	}
	n := 0
	for _, p := range s.cur.Load().allPools() {
		n += p.Interrupt(ss.pid)
	}
	if n > 0 {
		s.log.Warn("session did not end in time: its backend connections are closed", "client_id", ss.pid, "connections", n)
	}
	if ss.sock != nil {
		_ = ss.sock.Close()
	}
}

// alive reports whether ss is still one of the server's sessions.
func (s *Server) alive(ss *session) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions[ss.pid] == ss
}

// reapDeparted ends the sessions whose client went away while they run a
// statement (see above).
func (s *Server) reapDeparted() {
	s.mu.Lock()
	var gone []*session
	for _, ss := range s.sessions {
		if ss.sock != nil && !ss.ending.Load() && !ss.wait.Waiting() && clientwait.Gone(ss.sock) {
			gone = append(gone, ss)
		}
	}
	s.mu.Unlock()
	for _, ss := range gone {
		s.log.Info("client went away while its statement ran: ending the session", "client_id", ss.pid, "user", ss.user)
		s.terminateSession(ss)
	}
}
