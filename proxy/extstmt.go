package proxy

import (
	"slices"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/planner"
)

// Client statements: planned again after a reload, parsed on the backend
// at Parse when they can run on one cluster only.

// replan plans st again when the topology was reloaded since it was
// planned (each reload makes a new planner): a statement Parsed before the
// reload runs where the new topology says.
func (bt *batch) replan(st *clientStmt) error {
	p, gen := bt.ss.planning(bt.r), bt.ss.columnsGen(bt.r)
	if st.planner == p && st.columns == gen {
		return nil
	}
	plan, err := planReadingColumns(bt.ss, bt.r, bt.idle, func(p *planner.Planner) (*planner.Plan, error) { return p.Plan(st.sql) })
	if err != nil {
		return err
	}
	st.plan, st.planner, st.columns = plan, p, gen
	return nil
}

// parseOn sends the client's Parse to the one cluster st can run on, so
// that the backend's ParseComplete, or its error, answers it where
// Postgres would: a statement that fails to parse is not kept.
func (bt *batch) parseOn(st *clientStmt, cluster string) error {
	ss := bt.ss
	b, err := bt.txConn(cluster)
	if err != nil {
		delete(ss.stmts, st.name)
		return err
	}
	n := len(bt.queue)
	bt.ensurePrepared(b, st, planner.Target{Cluster: cluster})
	if len(bt.queue) == n {
		bt.synth(&pgproto3.ParseComplete{}) // already prepared there
		return nil
	}
	e := bt.queue[n]
	e.relay = true
	backendErr := e.onErr
	e.onErr = func() {
		if backendErr != nil {
			backendErr()
		}
		if ss.stmts[st.name] == st {
			delete(ss.stmts, st.name)
		}
	}
	return nil
}

// stmtSeq numbers client statements over every session: each has its own
// backend statements (see stmtKey), never one another client prepared
// before DDL changed its result type.
var stmtSeq atomic.Int64

// maxBackendStmts bounds the statements the proxy keeps prepared on one
// backend connection; past it the oldest is closed.
const maxBackendStmts = 500

// evictOldest closes the oldest of b's statements.
func (bt *batch) evictOldest(b *backend.Conn) {
	_ = b.Send(&pgproto3.Close{ObjectType: 'S', Name: b.EvictOldest()})
	bt.queue = append(bt.queue, &expect{conns: []*backend.Conn{b}, until: "3"})
}

// preparedOn notes that st is prepared on a connection of pool under key.
func (st *clientStmt) preparedOn(pool *backend.Pool, key string) {
	if !slices.Contains(st.keys, key) {
		st.keys = append(st.keys, key)
	}
	if !slices.Contains(st.pools, pool) {
		st.pools = append(st.pools, pool)
	}
}

// dropStmt removes the client statement name; its copies on backend
// connections are closed when those connections are next used (closeForgotten).
func (ss *session) dropStmt(name string) {
	st, ok := ss.stmts[name]
	if !ok {
		return
	}
	delete(ss.stmts, name)
	for _, p := range st.pools {
		p.Forget(st.keys...)
	}
}

// closeForgotten closes b's statements whose client statements are gone
// (backend.Pool.Forget), as b joins the batch.
func (bt *batch) closeForgotten(b *backend.Conn) {
	for _, name := range b.Forgotten() {
		_ = b.Send(&pgproto3.Close{ObjectType: 'S', Name: name})
		bt.queue = append(bt.queue, &expect{conns: []*backend.Conn{b}, until: "3"})
	}
}

// stmtSQL is the text of prepared statement name, "" if none.
func (ss *session) stmtSQL(name string) string {
	if st := ss.stmts[name]; st != nil {
		return st.sql
	}
	return ""
}
