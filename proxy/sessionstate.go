package proxy

import (
	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/planner"
	"github.com/shardgate/shardgate/sessionstate"
)

// Session state over pooled connections (docs/sessions.md): what pins a
// session, and how a change of settings reaches the connections the
// session keeps between statements.

// pin keeps the session on its connections when a statement makes state
// that lives there (Plan.Session has SessionPins): temporary objects,
// session advisory locks, untracked set_config. cleanup resets them.
func (ss *session) pin(plan *planner.Plan, conns []*backend.Conn) {
	// WITH HOLD cursors and LISTEN pin too, but only while they last:
	// cursors.go (pinFor, pinnedNow, settle) keeps and gives back those.
	lasting := plan.Kind != planner.DeclareCursor && plan.Session&planner.SessionListen == 0
	if plan.Session&planner.SessionPins != 0 && lasting {
		ss.pinned = true
	}
	ss.locked = ss.locked || plan.Session&planner.SessionLocks != 0
	ss.unlocked = ss.unlocked || ss.locked && (plan.Session&planner.SessionUnlocks != 0 || plan.DiscardAll)
	if (ss.pinned || ss.locked) && ss.held != nil {
		for _, b := range conns {
			ss.held[b.Cluster()] = b
		}
	}
}

// attached are the connections that keep the session's state between
// statements: the open transaction's, else the held ones. A held
// connection outside the transaction gets the settings replayed when it
// joins (acquire compares settings keys).
func (ss *session) attached() []*backend.Conn {
	var out []*backend.Conn
	if ss.tx != nil {
		for _, c := range ss.tx.order {
			out = append(out, ss.tx.conns[c])
		}
		return out
	}
	for _, b := range ss.held {
		out = append(out, b)
	}
	return out
}

// stateChanged records what a successful statement did to settings
// (noteState) and to the transaction's local state, and makes every
// attached connection carry it: the statement itself ran on one cluster
// (SET, set_config) or on its own targets only.
func (ss *session) stateChanged(plan *planner.Plan) error {
	return ss.spread(ss.noteState(plan))
}

// noteState records a successful statement's changes to settings
// (sessionstate.Apply) and to the transaction's local state and returns
// the SQL that makes an attached connection carry them (see spread).
func (ss *session) noteState(plan *planner.Plan) string {
	settings, sql, changed := sessionstate.Apply(ss.settings, ss.startup, plan)
	if changed {
		ss.settings = settings
		if plan.DiscardAll {
			// DISCARD ALL is also DEALLOCATE ALL, CLOSE ALL and UNLISTEN *.
			for name := range ss.stmts {
				ss.dropStmt(name)
			}
			clear(ss.portals)
			clear(ss.cursors)
			clear(ss.listening)
		}
		ss.recomputeSettingsKey()
		if ss.tx != nil {
			ss.tx.settingsDirty = true
			// Connections already in the transaction got the SET too (see
			// runTargets for Set plans), so they carry the new settings.
			for _, b := range ss.tx.conns {
				b.SettingsKey = ss.settingsKey
			}
		}
	}
	if ss.tx != nil {
		for _, tl := range plan.TxLocal {
			ss.tx.replay.Local(tl.SQL)
			sql += tl.SQL + ";"
		}
	}
	return sql
}

// spread runs sql on every attached connection.
func (ss *session) spread(sql string) error {
	if sql == "" {
		return nil
	}
	for _, b := range ss.attached() {
		if b.Broken {
			continue
		}
		if err := b.SimpleExec(sql, nil); err != nil {
			b.SettingsKey = ""
			return b.ClusterErr(err)
		}
		b.SettingsKey = ss.settingsKey
	}
	return nil
}
