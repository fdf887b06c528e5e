package proxy

import (
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/merge"
	"github.com/shardgate/shardgate/pgwire"
	"github.com/shardgate/shardgate/planner"
	"github.com/shardgate/shardgate/sessionstate"
	"github.com/shardgate/shardgate/sqlerr"
)

// Cursors (DECLARE, FETCH, MOVE, CLOSE) live on the backend connection
// where they were declared (registry: package sessionstate); cursors WITH
// HOLD and LISTEN (listen.go) keep the session's connections until gone.

// live reports whether a cursor may still exist on its connection, which the session still owns.
func (ss *session) live(c *sessionstate.Cursor) bool {
	if c.Conn.Broken {
		return false
	}
	if c.Hold {
		return ss.held[c.Cluster] == c.Conn
	}
	return c.Tx != nil && c.Tx == ss.tx && ss.tx.conns[c.Cluster] == c.Conn
}

func (ss *session) cursorTargets(r *routing, plan *planner.Plan) ([]planner.Target, error) {
	if ss.mcursors.Has(plan.Cursor.Name, ss.txKey()) {
		return nil, sqlerr.New("0A000", "cursor \"%s\" reads a merge across shards: FETCH it with a simple query", plan.Cursor.Name)
	}
	return ss.cursors.Targets(plan, r.vs.Main().Clusters[0], ss.live)
}

// missingCursorError is the Execute of a portal whose cursor did not
// exist at Bind (portal.missingCursor): Postgres's 34000 while it still
// does not; a cursor DECLAREd between the Bind and the Execute is not
// followed.
func (ss *session) missingCursorError(r *routing, plan *planner.Plan) error {
	if ss.tx != nil && ss.tx.failed {
		return errTxAborted
	}
	if _, err := ss.cursorTargets(r, plan); err != nil {
		return err
	}
	return sqlerr.New("0A000", "cursor \"%s\" was declared after a statement using it was bound: shardgate does not follow it", plan.Cursor.Name).
		WithHint("Bind the statement again.")
}

// mergedCursor runs DECLARE of a cursor merged across clusters and FETCH,
// MOVE and CLOSE of one (merge.Cursors); done is false for others. In the
// extended protocol (ext) a FETCH's RowDescription is Describe's.
func (ss *session) mergedCursor(r *routing, plan *planner.Plan, params []planner.Param, ext *portal) (done bool, err error) {
	mc, ok := plan.Root.(*planner.MergedCursor)
	if !ok {
		send := ss.send
		if ext != nil {
			send = func(m pgwire.Encodable) error {
				if _, ok := m.(*pgproto3.RowDescription); ok {
					return nil
				}
				return ss.send(m)
			}
		}
		return ss.mcursors.Run(plan, ss.txKey(), ss.outputSettings(), send)
	}
	conn := func(c string) (*backend.Conn, error) { return ss.connFor(r, c) }
	tag, err := ss.mcursors.Declare(plan, params, ss.txKey(), ss.seqSource(plan.SQL), conn, func(colls []*backend.CollationInfo) *merge.Exec {
		return ss.newMerge(mc.Read, params, colls, nil)
	})
	if err == nil {
		err = ss.complete(tag)
	}
	return true, err
}

// txKey is the session's transaction, nil outside one.
func (ss *session) txKey() any {
	if ss.tx == nil {
		return nil
	}
	return ss.tx
}

// pinFor keeps the connections the statement is about to lease when it
// makes state that must stay on them (a cursor WITH HOLD, LISTEN).
func (ss *session) pinFor(plan *planner.Plan) {
	if plan.Kind == planner.DeclareCursor && plan.Cursor.WithHold || plan.Session&planner.SessionListen != 0 {
		ss.pinning = true
	}
}

// pinnedNow says whether the session must keep its connections.
func (ss *session) pinnedNow() bool {
	return ss.pinned || ss.locked || ss.pinning || len(ss.listening) > 0 || ss.cursors.AnyHold()
}

// trackState records what a successful statement did to the session's
// cursors and channels. It ran on cluster, on b; b is nil for the simple
// protocol, where a DECLARE ran on the transaction's or a held connection.
func (ss *session) trackState(plan *planner.Plan, cluster string, b *backend.Conn) {
	if ss.tx != nil && plan.Session&(planner.SessionListen|planner.SessionUnlisten) != 0 {
		ss.tx.replay.Listen(plan) // applied if the transaction commits (endTx)
	} else {
		ss.listening.Track(plan)
	}
	switch plan.Kind {
	case planner.ClosePortal:
		ss.cursors.Closed(plan)
	case planner.DeclareCursor:
		if b == nil && ss.tx != nil {
			b = ss.tx.conns[cluster]
		}
		if b == nil {
			b = ss.held[cluster]
		}
		if b == nil {
			return
		}
		c := &sessionstate.Cursor{Conn: b, Cluster: b.Cluster(), Hold: plan.Cursor.WithHold, Unsure: plan.Cursor.WithHold && ss.tx != nil}
		if !c.Hold {
			c.Tx = ss.tx
		} else if ss.held != nil {
			ss.held[c.Cluster] = b
		}
		put(&ss.cursors, plan.Cursor.Name, c)
	}
}

// settle runs before every ReadyForQuery: it forgets cursors that ended
// with their transaction and gives back held connections that nothing pins any more.
func (ss *session) settle() {
	ss.pinning = false
	if ss.tx != nil || len(ss.batchOrder) > 0 {
		return
	}
	ss.cursors.Prune(ss.live)
	ss.cursors.CheckUnsure()
	if ss.unlocked { // the last advisory lock may be gone: ask
		ss.locked, ss.unlocked = sessionstate.AdvisoryLocksHeld(ss.attached()), false
	}
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
