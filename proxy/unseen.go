package proxy

import (
	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/planner"
	"github.com/shardgate/shardgate/sessionstate"
)

// Settings changed unseen (package sessionstate, unseen.go): a statement
// that may run code the proxy cannot see into marks the connections it
// runs on (connFor, or MarkUnseen in the extended protocol), and each is
// checked once before it leaves the session (releaseConn): outside a
// transaction right after the statement, inside one at its end, when what
// the code did is committed or undone. A plain point read is never
// marked and costs nothing.

// runsUnseen marks the connections the statement leases from now on when
// plan may change settings unseen; the function it returns ends that.
func (ss *session) runsUnseen(plan *planner.Plan) func() {
	was := ss.unseen
	ss.unseen = was || plan.Unseen(sessionstate.Settings(ss.settings).PathChanged())
	return func() { ss.unseen = was }
}

// checkUnseen compares the settings of a connection that ran unseen code
// with the session's and adopts the difference as the session's own; the
// connection is left carrying the tracked settings (both in one round
// trip). A connection whose settings cannot be read — a statement_timeout
// too short for the check — keeps them and stays with the session, as a
// pin does; one left in an unknown state is closed.
func (ss *session) checkUnseen(b *backend.Conn) {
	if b.Broken || b.TxStatus != 'I' || ss.settings == nil {
		return // closed by its pool, or reset there (Pool.Release)
	}
	s := sessionstate.Settings(ss.settings)
	rows, err := b.Query(s.UnseenCheckSQL())
	if b.Broken {
		return
	}
	c := sessionstate.ReadUnseen(rows)
	held, isHeld := ss.held[b.Cluster()]
	switch {
	case err == nil && c.Complete:
		b.SettingsUnseen = false
		b.SettingsKey = ss.settingsKey
		if len(c.Dropped) > 0 {
			ss.srv.log.Warn("settings a function changed cannot be kept by shardgate; reset", "client", ss.pid, "cluster", b.Cluster(), "settings", c.Dropped)
		}
		if len(c.Changed) > 0 {
			ss.settings = s.Adopt(c)
			ss.recomputeSettingsKey()
		}
	case !c.Read && ss.held != nil && (!isHeld || held == b):
		b.SettingsUnseen = false
		ss.pinned = true
		ss.held[b.Cluster()] = b
		ss.srv.log.Info("session pinned: the settings a function changed could not be read", "client", ss.pid, "cluster", b.Cluster(), "err", err)
	default:
		ss.srv.log.Warn("connection closed: the settings a function changed could not be checked", "client", ss.pid, "cluster", b.Cluster(), "err", err)
		b.Broken = true
	}
}
