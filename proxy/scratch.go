package proxy

import (
	"slices"

	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/planner"
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

// pairOn reports whether the statement write, whose source is coordinated
// on cluster outside the transaction, also needs the transaction's
// connection there while it reads (an UPDATE ... FROM or DELETE ... USING
// locking its target's rows there) and takes both together
// (leasePair): the transaction has none there yet, nor the session one it
// keeps (session mode).
func (ss *session) pairOn(write *planner.Plan, cluster string) bool {
	if ss.tx == nil || write == nil || ss.joined(cluster) {
		return false
	}
	if _, held := ss.held[cluster]; held {
		return false
	}
	rw, ok := write.Root.(*planner.RowWrite)
	return ok && slices.Contains(rw.Group.Clusters, cluster)
}

// leasePair leases two connections to cluster together
// (backend.Pool.LeasePairAs): the first becomes the transaction's there,
// the second, returned, is the scratch coordinator.
func (ss *session) leasePair(p *backend.Pool, cluster string) (*backend.Conn, error) {
	if p == nil {
		return nil, errUnknownCluster(cluster)
	}
	if err := ss.suspended.BusyOn(cluster); err != nil {
		return nil, err
	}
	ss.waiting.Store(true)
	txb, scratch, err := p.LeasePairAs(ss.stopWait, ss.pid, ss.settingsSQL(), ss.login)
	ss.waiting.Store(false)
	if err != nil {
		return nil, err
	}
	if _, err = ss.withSettings(txb, false, cluster); err == nil {
		_, err = ss.useConn(txb) // joins the transaction (or gives txb back)
	}
	if err != nil {
		ss.releaseConn(scratch)
		return nil, err
	}
	return scratch, nil
}

// sourceOnTx reports whether a write's source (write: the whole plan,
// read: its source) is read on the transaction's own connection to the
// coordinator instead of a scratch one outside the transaction: when the
// transaction holds that cluster already (an INSERT ... SELECT), or when
// the target has shards there (UPDATE ... FROM, DELETE ... USING: their
// pulls lock the target's rows in the transaction), a scratch connection
// would be a second one to the cluster. It is taken when the commit is
// not two-phase (nothing then stops temporary tables in the transaction),
// or when the pool has one connection (a second could never come); the
// temporary tables then make the transaction one that cannot PREPARE, so
// it is checked as a read over intermediate results is
// (intermediate.CheckReadInTx, MarkWrites: 0A000 at once, never a wait).
func (ss *session) sourceOnTx(r *routing, write, read *planner.Plan) bool {
	im, ok := read.Root.(*planner.Intermediate)
	if !ok || ss.tx == nil || write == nil {
		return false
	}
	if ss.srv.live.Load().commit == CommitTwoPhase && r.poolSize > 1 {
		return false
	}
	if ss.joined(im.Coordinator) {
		return true
	}
	rw, ok := write.Root.(*planner.RowWrite)
	return ok && slices.Contains(rw.Group.Clusters, im.Coordinator)
}

// leaseScratch leases the scratch coordinator on cluster for the source
// of write. When the statement would then hold two connections to the
// cluster (the transaction has one there, or will take one to lock the
// target's rows), it never waits for the second while holding the first:
// with none free at once it is refused with 53300 (N such statements on a
// pool of N would otherwise wait for each other).
func (ss *session) leaseScratch(r *routing, write *planner.Plan, cluster string) (*backend.Conn, error) {
	p := r.pools[cluster]
	if p == nil {
		return nil, errUnknownCluster(cluster)
	}
	rw, _ := write.Root.(*planner.RowWrite)
	if ss.tx == nil || !ss.joined(cluster) && (rw == nil || !slices.Contains(rw.Group.Clusters, cluster)) {
		return p.LeaseAs(ss.pid, ss.settingsSQL(), ss.login)
	}
	if ss.pairOn(write, cluster) {
		// The target's rows are locked on the transaction's connection,
		// the source read on another: both taken at once, while the
		// statement holds nothing there, waiting (up to max_wait) for
		// neither while holding the other.
		return ss.leasePair(p, cluster)
	}
	if !ss.joined(cluster) {
		// Session mode: the session's own connection is the transaction's.
		if _, err := ss.connFor(r, cluster); err != nil {
			return nil, err
		}
	}
	b, err := p.TryLeaseAs(ss.pid, ss.settingsSQL(), ss.login)
	if sqlerr.Code(err) == "57014" {
		return nil, sqlerr.New(sqlerr.TooManyConnections,
			"this statement needs a second connection to cluster %s, and its pool has none free", cluster).
			WithDetail("Under proxy.commit two_phase a write whose rows are read over intermediate results keeps its temporary tables on a connection of the coordinator %s outside the transaction, which uses %s too; it does not wait for one while holding the other.", cluster, cluster).
			WithHint("Run the statement first in its transaction, or outside one, or raise proxy.pool.size.")
	}
	return b, err
}
