package proxy

import (
	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/sqlerr"
)

// joined reports whether the session's transaction holds a connection to
// cluster (intermediate.Statement.Joined: a write's source read then
// needs no second connection there).
func (ss *session) joined(cluster string) bool {
	if ss.tx == nil {
		return false
	}
	_, ok := ss.tx.conns[cluster]
	return ok
}

// keepScratch takes back a write's source coordinator once its statement
// ended there (intermediate.Statement.Release). When the write runs (not
// only is described) and the session's
// transaction has no connection to its cluster yet, it becomes that
// connection, and the rows are written over it: the statement never
// holds two connections to one cluster, nor gives one back to take
// another from the same pool while it holds others (which two sessions
// could do crosswise and wait for each other). Otherwise it goes back to
// the pool.
func (ss *session) keepScratch(b *backend.Conn, run bool) {
	if b.TxStatus != 'I' && !b.Broken {
		_ = b.SimpleExec("ROLLBACK", nil)
	}
	if run && ss.tx != nil && !b.Broken && b.TxStatus == 'I' && !ss.joined(b.Cluster()) {
		_ = ss.joinTx(b) // it gives b back if it fails
		return
	}
	ss.releaseConn(b)
}

// scratchNeedsTwo refuses at once a write's source coordinator on a
// cluster whose pool has one connection that the session's transaction
// holds already: the lease would wait for the session itself.
func (ss *session) scratchNeedsTwo(r *routing, cluster string) error {
	if !ss.joined(cluster) || r.poolSize > 1 {
		return nil
	}
	return sqlerr.New(sqlerr.TooManyConnections,
		"this statement needs a second connection to cluster %s, whose pool has one, held by this transaction", cluster).
		WithDetail("A write whose rows are read over intermediate results keeps its temporary tables on a connection of the coordinator %s outside the transaction, which already used %s.", cluster, cluster).
		WithHint("Run the statement first in its transaction, or outside one, or raise proxy.pool.size.")
}
