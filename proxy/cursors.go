package proxy

import (
	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/planner"
	"github.com/shardgate/shardgate/sqlerr"
)

// Cursors (DECLARE, FETCH, MOVE, CLOSE) live on the backend connection
// where they were declared: the session remembers which, sends the
// statements about a cursor there, and keeps a connection holding a
// cursor WITH HOLD (or LISTENing, listen.go) until that state is gone.

// cursorRef is where one cursor of the session lives.
type cursorRef struct {
	conn *backend.Conn
	hold bool
	// tx is the transaction a cursor without hold belongs to.
	tx *txState
	// unsure: declared WITH HOLD inside a transaction, it survives only
	// if that commits (checked once the transaction is over).
	unsure bool
}

// live reports whether the cursor may still exist on its connection, which
// the session still owns.
func (ss *session) live(c *cursorRef) bool {
	if c.conn.Broken {
		return false
	}
	cluster := c.conn.Cluster()
	if c.hold {
		return ss.held[cluster] == c.conn
	}
	return c.tx != nil && c.tx == ss.tx && ss.tx.conns[cluster] == c.conn
}

// cursorTargets is where FETCH, MOVE or CLOSE of plan runs: the cluster of
// the cursor; for CLOSE ALL every cluster holding one, or main when none
// does (where Postgres answers it as a no-op).
func (ss *session) cursorTargets(r *routing, plan *planner.Plan) ([]planner.Target, error) {
	if plan.Cursor.All {
		var ts []planner.Target
		seen := map[string]bool{}
		for _, c := range ss.cursors {
			if cl := c.conn.Cluster(); ss.live(c) && !seen[cl] {
				seen[cl] = true
				ts = append(ts, planner.Target{Cluster: cl})
			}
		}
		if len(ts) == 0 {
			ts = append(ts, planner.Target{Cluster: r.vs.Main().Clusters[0]})
		}
		return ts, nil
	}
	if c, ok := ss.cursors[plan.Cursor.Name]; ok && ss.live(c) {
		return []planner.Target{{Cluster: c.conn.Cluster()}}, nil
	}
	return nil, sqlerr.New("34000", "cursor \"%s\" does not exist", plan.Cursor.Name)
}

// pinFor keeps the connections the statement is about to lease when it
// makes state that must stay on them (a cursor WITH HOLD, LISTEN).
func (ss *session) pinFor(plan *planner.Plan) {
	if plan.Kind == planner.DeclareCursor && plan.Cursor.WithHold || plan.Session&planner.SessionListen != 0 {
		ss.pinning = true
	}
}

// pinnedNow says whether the session must keep its connections: state on
// them (temporary objects; cursors WITH HOLD; LISTEN) or a statement about
// to make some.
func (ss *session) pinnedNow() bool {
	if ss.pinned || ss.pinning || len(ss.listening) > 0 {
		return true
	}
	for _, c := range ss.cursors {
		if c.hold {
			return true
		}
	}
	return false
}

// trackState records what a successful statement did to the cursors and
// notification channels of the session. b is the connection it ran on;
// nil for a single-cluster statement of the simple protocol, whose
// connection is the transaction's or a held one.
func (ss *session) trackState(r *routing, plan *planner.Plan, b *backend.Conn) {
	ss.trackListen(plan)
	if plan.Cursor == nil {
		return
	}
	switch plan.Kind {
	case planner.DeclareCursor:
		if b == nil {
			ts, err := plan.Targets(nil)
			if err != nil || len(ts) != 1 {
				return
			}
			if ss.tx != nil && ss.tx.conns[ts[0].Cluster] != nil {
				b = ss.tx.conns[ts[0].Cluster]
			} else if b = ss.held[ts[0].Cluster]; b == nil {
				return
			}
		}
		c := &cursorRef{conn: b, hold: plan.Cursor.WithHold, unsure: plan.Cursor.WithHold && ss.tx != nil}
		if !c.hold {
			c.tx = ss.tx
		} else if ss.held != nil {
			ss.held[b.Cluster()] = b
		}
		if ss.cursors == nil {
			ss.cursors = map[string]*cursorRef{}
		}
		ss.cursors[plan.Cursor.Name] = c
	case planner.ClosePortal:
		if plan.Cursor.All {
			ss.cursors = nil
		} else {
			delete(ss.cursors, plan.Cursor.Name)
		}
	}
}

// settle runs before every ReadyForQuery: it forgets cursors that ended
// with their transaction and gives back held connections that nothing
// pins any more.
func (ss *session) settle() {
	ss.pinning = false
	if ss.tx != nil || len(ss.batchOrder) > 0 {
		return
	}
	for name, c := range ss.cursors {
		if !ss.live(c) {
			delete(ss.cursors, name)
		}
	}
	ss.checkUnsure()
	if ss.srv.cfg.PoolMode == PoolSession || ss.pinnedNow() {
		return
	}
	for cluster, b := range ss.held {
		delete(ss.held, cluster)
		if b.TxStatus != 'I' && !b.Broken {
			_ = b.SimpleExec("ROLLBACK", nil)
		}
		b.Release()
	}
}

// checkUnsure asks the backends which cursors WITH HOLD declared inside a
// finished transaction survived it (not if it rolled back, or back to a
// savepoint before the DECLARE).
func (ss *session) checkUnsure() {
	for _, c := range ss.cursors {
		if !c.unsure {
			continue
		}
		rows, err := c.conn.Query("SELECT name FROM pg_catalog.pg_cursors WHERE is_holdable")
		kept := map[string]bool{}
		for _, row := range rows {
			kept[string(row[0])] = true
		}
		for n, o := range ss.cursors {
			if o.conn == c.conn && o.unsure {
				o.unsure = false
				if err != nil || !kept[n] {
					delete(ss.cursors, n)
				}
			}
		}
	}
}
