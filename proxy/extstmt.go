package proxy

import (
	"hash/fnv"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/shardgate/shardgate/planner"
)

// Client statements: planned again after a reload, parsed on the backend
// at Parse when they can run on one cluster only.

// replan plans st again when the topology was reloaded since it was
// planned (each reload makes a new planner): a statement Parsed before the
// reload runs where the new topology says.
func (bt *batch) replan(st *clientStmt) error {
	if st.planner == bt.r.planner {
		return nil
	}
	plan, err := bt.r.planner.Plan(st.sql)
	if err != nil {
		return err
	}
	st.plan, st.planner = plan, bt.r.planner
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

// oneCluster names the cluster of a plan that can run on one cluster
// only (a group of one cluster, such as main).
func oneCluster(pl *planner.Plan) (string, bool) {
	r, ok := pl.Root.(*planner.Route)
	if !ok || len(r.Group.Clusters) != 1 {
		return "", false
	}
	return r.Group.Clusters[0], true
}

// stmtGens count the closes of client statements of every session, by a
// hash of their text (see stmtKey). Backend statements are shared by the
// sessions that prepare the same text on a connection, so a count of one
// session's own closes could lead it to a statement another session left
// there, prepared before DDL changed its result type. Buckets bound the
// memory; two texts sharing one only re-prepare more often.
var stmtGens [1024]atomic.Int64

func stmtGen(sql string) *atomic.Int64 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(sql))
	return &stmtGens[h.Sum32()%uint32(len(stmtGens))]
}
