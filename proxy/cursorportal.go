package proxy

import (
	"strconv"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/shardgate/shardgate/pgwire"
	"github.com/shardgate/shardgate/planner"
)

// In Postgres a DECLAREd cursor is a portal: the extended protocol's
// Describe and Execute of the cursor's name work on it (psycopg 3's named
// cursors Describe the portal right after DECLARE). A cursor on one
// backend is that backend's portal, so both go to its connection; a
// cursor merged across shards (merge.Cursors) is described from its
// merge and executed as FETCH FORWARD would run it; the protocol's Close
// of the portal closes the cursor, as CLOSE does. FETCH, MOVE and CLOSE
// of a merged cursor sent through the extended protocol run as they do in
// a simple query, with the RowDescription given by Describe.

// mergedCursorStmt reports whether plan is FETCH, MOVE or CLOSE of one of
// the session's merged cursors.
func (ss *session) mergedCursorStmt(plan *planner.Plan) bool {
	return plan.Mode() == planner.ModeCursor && plan.Cursor != nil && !plan.Cursor.All && ss.mcursors.Has(plan.Cursor.Name, ss.txKey())
}

// describeCursorStmt answers Describe of a statement or portal that is
// FETCH, MOVE or CLOSE of a merged cursor (withParams: of a statement).
func (bt *batch) describeCursorStmt(plan *planner.Plan, withParams bool) {
	if withParams {
		bt.synth(&pgproto3.ParameterDescription{ParameterOIDs: make([]uint32, plan.NumParams)})
	}
	if fields, ok := bt.ss.mcursors.Fields(plan.Cursor.Name, bt.ss.txKey()); ok && plan.Kind == planner.Fetch {
		bt.synth(&pgproto3.RowDescription{Fields: fields})
		return
	}
	bt.synth(&pgproto3.NoData{})
}

// describeCursor answers Describe of portal name when name is no portal
// of the extended protocol but one of the session's cursors; handled is
// false otherwise.
func (bt *batch) describeCursor(name string) (handled bool) {
	ss := bt.ss
	if fields, ok := ss.mcursors.Fields(name, ss.txKey()); ok {
		bt.synth(&pgproto3.RowDescription{Fields: fields})
		return true
	}
	c, ok := ss.cursors[name]
	if !ok || !ss.live(c) {
		return false
	}
	bt.adopt(c.Conn)
	if err := c.Conn.SendDescribe('P', name); err != nil {
		bt.fail(pgwire.ConnLost(c.Cluster, err))
		return true
	}
	bt.step(c.Conn, expect{until: "Tn", relay: true})
	return true
}

// executeCursor runs Execute of portal m.Portal when it is one of the
// session's cursors (see above); handled is false otherwise.
func (bt *batch) executeCursor(m *pgproto3.Execute) (handled bool, err error) {
	ss := bt.ss
	if ss.mcursors.Has(m.Portal, ss.txKey()) {
		bt.flushBackends() // what came before is answered first
		if bt.drain(); bt.dropping {
			return true, nil
		}
		ss.setRunning(ss.attached())
		defer ss.setRunning(nil)
		n, more, err := ss.mcursors.Execute(m.Portal, ss.txKey(), int64(m.MaxRows))
		if err != nil {
			return true, err
		}
		if more {
			return true, ss.send(&pgproto3.PortalSuspended{})
		}
		return true, ss.complete("SELECT " + strconv.FormatInt(n, 10))
	}
	c, ok := ss.cursors[m.Portal]
	if !ok || !ss.live(c) {
		return false, nil
	}
	bt.adopt(c.Conn)
	if err := c.Conn.SendExecute(m.Portal, m.MaxRows); err != nil {
		return true, pgwire.ConnLost(c.Cluster, err)
	}
	bt.step(c.Conn, expect{until: "CIs", relay: true})
	return true, nil
}

// closeCursor answers the client's Close of portal name when name is no
// portal of the extended protocol: Postgres closes the cursor of that
// name, if there is one. A merged cursor's shard cursors are closed once
// what came before in the batch is answered; a cursor on one backend is
// closed there, in the batch, the backend's CloseComplete being the client's.
func (bt *batch) closeCursor(name string) error {
	ss := bt.ss
	if ss.mcursors.Has(name, ss.txKey()) {
		bt.flushBackends() // what came before is answered first
		if bt.drain(); bt.dropping {
			return nil
		}
		if _, err := ss.mcursors.Close(name, ss.txKey()); err != nil {
			return err
		}
		bt.synth(&pgproto3.CloseComplete{})
		return nil
	}
	c, ok := ss.cursors[name]
	if !ok || !ss.live(c) {
		bt.synth(&pgproto3.CloseComplete{}) // as Postgres answers for no portal
		return nil
	}
	bt.adopt(c.Conn)
	if err := c.Conn.Send(&pgproto3.Close{ObjectType: 'P', Name: name}); err != nil {
		return pgwire.ConnLost(c.Cluster, err)
	}
	delete(ss.cursors, name) // now: a DECLARE later in the batch may reuse the name
	bt.step(c.Conn, expect{until: "3", relay: !bt.quiet})
	return nil
}
