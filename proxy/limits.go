package proxy

import (
	"crypto/tls"
	"errors"
	"sync/atomic"
	"time"

	"github.com/shardgate/shardgate/pgwire"
	"github.com/shardgate/shardgate/sqlerr"
	"github.com/shardgate/shardgate/topology"
)

// proxy.limits: what clients may make the proxy hold.
//
//   - Client connections: past MaxClients, a new connection is still read
//     up to its StartupMessage (SSL negotiation and CancelRequest work as
//     usual) and then answered FATAL 53300 "sorry, too many clients
//     already", as Postgres answers past max_connections; a client sees
//     why instead of a reset.
//   - One message: past MaxMessageBytes, FATAL 54000 (session.go), as
//     pgbouncer's max_packet_size.
//   - All messages at once: every message larger than a reader's pooled
//     buffer reserves its buffer from one pgwire.Budget of
//     MaxBufferedBytes before it is allocated. A message the budget cannot
//     hold now is read through and dropped (never buffered), and the
//     client gets FATAL 53200 "out of memory", the code Postgres gives when
//     it cannot allocate. Refusing rather than waiting: a wait could
//     deadlock (a session holding a lock waits for budget held by a
//     statement waiting for that lock), and a pool or driver reconnects
//     on a FATAL and retries, which is what a client of an overloaded
//     Postgres does too.
//   - Start-up: the start-up packet is at most StartupBytes, and must
//     arrive (TLS negotiation included) within StartupTimeout; the rest of
//     authentication has until proxy.timeouts.auth.

// withDefaultLimits fills the zero fields of l.
func withDefaultLimits(l topology.LimitsConfig) topology.LimitsConfig {
	d := topology.DefaultLimits
	l.MaxClients = positiveOr(l.MaxClients, d.MaxClients)
	if l.MaxBufferedBytes <= 0 {
		l.MaxBufferedBytes = d.MaxBufferedBytes
	}
	l.MaxMessageBytes = positiveOr(l.MaxMessageBytes, d.MaxMessageBytes)
	l.StartupBytes = positiveOr(l.StartupBytes, d.StartupBytes)
	l.StartupTimeout = positiveOr(l.StartupTimeout, d.StartupTimeout)
	return l
}

// limitReader applies the message limits to a client reader.
func (s *Server) limitReader(rd *pgwire.ClientReader) {
	rd.SetMaxBodyLen(s.cfg.Limits.MaxMessageBytes)
	rd.SetMaxStartupLen(s.cfg.Limits.StartupBytes)
	rd.SetBudget(s.budget)
}

// startupDeadline is when a connection accepted now must have sent its
// start-up packet: StartupTimeout, within the authentication deadline.
func (s *Server) startupDeadline(auth time.Time) time.Time {
	if d := time.Now().Add(s.cfg.Limits.StartupTimeout); d.Before(auth) {
		return d
	}
	return auth
}

// tooManyClients is the answer of a connection accepted when open already
// are.
func (s *Server) tooManyClients(open int) error {
	if open < s.cfg.Limits.MaxClients {
		return nil
	}
	if n := s.refusedClients.Add(1); s.limitLog[0].allow() {
		s.log.Warn("client refused: too many clients (proxy.limits.max_clients)", "max_clients", s.cfg.Limits.MaxClients, "refused_so_far", n)
	}
	return sqlerr.New("53300", "sorry, too many clients already").
		WithDetail("shardgate serves at most %d client connections (proxy.limits.max_clients).", s.cfg.Limits.MaxClients)
}

// admit decides, once the StartupMessage arrived, whether the session may
// go on: not past max_clients, and over TLS when TLS is required (as a
// pg_hba.conf with hostssl lines only: 28000). The start-up packet is in:
// authentication has until the auth deadline.
func (ss *session) admit() error {
	if ss.refuse != nil {
		return ss.refuse
	}
	if _, isTLS := ss.conn.(*tls.Conn); ss.srv.cfg.TLSRequired && !isTLS {
		ss.srv.log.Info("client refused: no TLS (proxy.tls.required)", "remote", ss.conn.RemoteAddr().String())
		return sqlerr.New("28000", "connection without TLS refused").
			WithDetail("proxy.tls.required is set: connect with sslmode=require (or verify-ca, verify-full).")
	}
	return ss.conn.SetDeadline(ss.authDeadline)
}

// discardTimeout bounds the read of a refused message's body.
const discardTimeout = 30 * time.Second

// refuseBuffered answers a message the budget could not hold: its body is
// read through and dropped, then FATAL 53200. It reports whether err was
// that.
func (ss *session) refuseBuffered(err error) bool {
	var over *pgwire.BudgetExceededErr
	if !errors.As(err, &over) {
		return false
	}
	if n := ss.srv.refusedMessages.Add(1); ss.srv.limitLog[1].allow() {
		ss.srv.log.Warn("client message refused: proxy.limits.max_buffered_bytes reached", "client_id", ss.pid, "user", ss.user,
			"bytes", over.Size, "in_use", over.InUse, "limit", over.Limit, "refused_so_far", n)
	}
	_ = ss.conn.SetReadDeadline(time.Now().Add(discardTimeout))
	if ss.rd.Discard() == nil {
		_ = ss.sendFatal(sqlerr.New("53200", "out of memory").
			WithDetail("A message of %d bytes would exceed the %d bytes the proxy holds for all clients' messages at once (proxy.limits.max_buffered_bytes).", over.Size, over.Limit).
			WithHint("Retry later, or send smaller messages."))
	}
	return true
}

// onePerSecond lets one log line through per second: a storm of refused
// clients or messages is one event, not thousands of lines.
type onePerSecond struct{ logged atomic.Bool }

func (o *onePerSecond) allow() bool {
	if !o.logged.CompareAndSwap(false, true) {
		return false
	}
	time.AfterFunc(time.Second, func() { o.logged.Store(false) })
	return true
}
