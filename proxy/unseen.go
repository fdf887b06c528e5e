package proxy

import (
	"sync"

	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/planner"
	"github.com/shardgate/shardgate/sessionstate"
)

// Settings changed unseen (package sessionstate, unseen.go): a statement
// that may run code the proxy cannot see into marks the connections it
// runs on (connFor, or markUnseen in the extended protocol), and each is
// checked once before it leaves the session (releaseConn): outside a
// transaction right after the statement, inside one at its end, when what
// the code did is committed or undone. A plain point read is never
// marked and costs nothing; a statement naming a relation that runs code
// (a view, trigger, rule, policy, default: unseenrel.go) is marked too.

// runsUnseen marks the connections the statement leases from now on when
// plan may change settings unseen.
// It returns the mark before, which the caller puts back when the
// statement ends (a value, not a closure: the hot path allocates nothing).
func (ss *session) runsUnseen(plan *planner.Plan) (was bool) {
	was = ss.unseen
	ss.unseen = was || ss.unseenPlan(plan)
	return was
}

// unseenPlan says whether plan may change settings unseen: by what it
// shows (Plan.Unseen) or by the relations it names (unseenrel.go).
func (ss *session) unseenPlan(plan *planner.Plan) bool {
	if plan.Unseen(sessionstate.Settings(ss.settings).PathChanged()) {
		return true
	}
	if len(plan.Relations) == 0 {
		return false
	}
	if ss.tx != nil && ss.tx.columns != nil {
		return true // the transaction ran DDL: the catalog may be stale
	}
	r := ss.srv.cur.Load()
	return r.code.runCode(r, plan.Relations)
}

// markUnseen marks conns for the check when plan may change settings
// unseen (the extended protocol's portals).
func (ss *session) markUnseen(plan *planner.Plan, conns []*backend.Conn) {
	if ss.unseenPlan(plan) {
		for _, b := range conns {
			b.SettingsUnseen = true
		}
	}
}

// endUnseen puts back the mark runsUnseen returned.
func (ss *session) endUnseen(was bool) { ss.unseen = was }

// checkUnseen compares the settings of a connection that ran unseen code
// with the session's and adopts the difference as the session's own; the
// connection is left carrying the tracked settings. The common case —
// nothing changed — is one read, compared with the baseline of the
// session's settings on that cluster; a difference (or no baseline yet)
// costs a second round trip that replays the tracked settings and reads
// the baseline. A connection whose settings cannot be read — a
// statement_timeout too short for the check — keeps them and stays with
// the session, as a pin does; one left in an unknown state is closed.
func (ss *session) checkUnseen(b *backend.Conn) {
	if b.Broken || b.TxStatus != 'I' || ss.settings == nil {
		return // closed by its pool, or reset there (Pool.Release)
	}
	s := sessionstate.Settings(ss.settings)
	rows, err := b.Query(s.UnseenReadSQL())
	if b.Broken {
		return
	}
	before, ok := sessionstate.ReadSettings(rows)
	if err != nil || !ok {
		// A failed read changed nothing: the settings stay the session's.
		if held, isHeld := ss.held[b.Cluster()]; ss.held != nil && (!isHeld || held == b) {
			b.SettingsUnseen = false
			ss.pinned = true
			ss.held[b.Cluster()] = b
			ss.srv.log.Info("session pinned: the settings a function changed could not be read", "client", ss.pid, "cluster", b.Cluster(), "err", err)
			return
		}
		ss.closeUnchecked(b, err)
		return
	}
	key := b.Cluster() + "\x00" + ss.settingsKey
	if base, ok := ss.srv.baselines.get(key); ok && sessionstate.Same(before, base) {
		b.SettingsUnseen = false
		b.SettingsKey = ss.settingsKey
		return
	}
	rows, err = b.Query(s.UnseenResetSQL())
	if b.Broken {
		return
	}
	after, ok := sessionstate.ReadSettings(rows)
	if err != nil || !ok {
		ss.closeUnchecked(b, err)
		return
	}
	ss.srv.baselines.put(key, after)
	b.SettingsUnseen = false
	b.SettingsKey = ss.settingsKey
	c := sessionstate.Diff(before, after)
	if len(c.Dropped) > 0 {
		ss.srv.log.Warn("settings a function changed cannot be kept by shardgate; reset", "client", ss.pid, "cluster", b.Cluster(), "settings", c.Dropped)
	}
	if len(c.Changed) > 0 {
		ss.settings = s.Adopt(c)
		ss.recomputeSettingsKey()
	}
}

// closeUnchecked closes a connection whose settings could not be checked:
// nobody may get it.
func (ss *session) closeUnchecked(b *backend.Conn, err error) {
	ss.srv.log.Warn("connection closed: the settings a function changed could not be checked", "client", ss.pid, "cluster", b.Cluster(), "err", err)
	b.Broken = true
}

// baselines are what the settings of an unchanged connection read
// (sessionstate.UnseenReadSQL), by cluster and settings key: one read then
// tells a connection that unseen code left alone. Bounded: past
// maxBaselines keys it starts afresh.
type baselines struct {
	mu sync.Mutex
	m  map[string]map[string]string
}

const maxBaselines = 4096

func (bl *baselines) get(key string) (map[string]string, bool) {
	bl.mu.Lock()
	defer bl.mu.Unlock()
	v, ok := bl.m[key]
	return v, ok
}

func (bl *baselines) put(key string, v map[string]string) {
	bl.mu.Lock()
	defer bl.mu.Unlock()
	if bl.m == nil || len(bl.m) >= maxBaselines {
		bl.m = map[string]map[string]string{}
	}
	bl.m[key] = v
}
