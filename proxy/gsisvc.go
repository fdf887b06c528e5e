package proxy

import (
	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/pgwire"
	"github.com/shardgate/shardgate/sqlerr"
)

// GSI entries as the service identity (docs/sessions.md, "Who runs
// what"): a session running as the client's role writes its two_phase
// transaction's lookup-table entries on a connection of the DSN's user per
// lookup cluster (txState.svc), which begins with the transaction, follows
// its savepoints and is one more two-phase participant, prepared under a
// name of its own (gsiPart); reads through an index where the role may
// not read the lookup table run as the service identity too.

// gsiPart is a service connection as a two-phase participant: a second
// one on its cluster beside the client's, prepared as gid#gsi@cluster.
type gsiPart struct{ *backend.Conn }

func (gsiPart) Part() string { return "gsi" }

// LookupConn is the transaction's service connection to cluster, opened
// and joined on first use; the session's own under identity service.
func (g gsiSession) LookupConn(cluster string) (*backend.Conn, error) {
	ss, tx := g.ss, g.ss.tx
	if ss.login.User == "" || tx == nil {
		return g.Conn(cluster)
	}
	tx.gsi = true
	if b := tx.svc[cluster]; b != nil {
		return b, nil
	}
	b, err := ss.serviceConn(g.r, cluster, nil)
	if err != nil {
		return nil, err
	}
	// BEGIN with the client's modes (its isolation level), and savepoints.
	if err := b.SimpleExec(tx.replay.Savepoints(tx.begin), nil); err != nil {
		b.Broken = b.Broken || b.TxStatus != 'I'
		ss.releaseConn(b)
		return nil, b.ClusterErr(err)
	}
	if tx.svc == nil {
		tx.svc = map[string]*backend.Conn{}
	}
	tx.svc[cluster] = b
	tx.svcOrder = append(tx.svcOrder, cluster)
	return b, nil
}

// LookupRead reads through an index on the transaction's service
// connection to the cluster, if it has one (it holds the entries the
// transaction wrote), else, where the role may not SELECT from the lookup
// table, on a service connection leased for the read. Both are refused
// inside a REPEATABLE READ or SERIALIZABLE transaction (snapshot.go).
func (g gsiSession) LookupRead(lent *backend.Conn, table string) (*backend.Conn, func(), error) {
	ss, cluster := g.ss, lent.Cluster()
	if ss.login.User == "" {
		return nil, nil, nil
	}
	if tx := ss.tx; tx != nil && tx.svc[cluster] != nil {
		if err := ss.inSnapshot(lent, table); err != nil {
			return nil, nil, err
		}
		return tx.svc[cluster], func() {}, nil
	}
	may, err := ss.maySelect(lent, table)
	if err != nil || may {
		return nil, nil, err
	}
	if err := ss.inSnapshot(lent, table); err != nil {
		return nil, nil, err
	}
	b, err := ss.serviceConn(g.r, cluster, lent)
	if err != nil {
		return nil, nil, err
	}
	return b, func() { ss.releaseConn(b) }, nil
}

// maySelect reports whether the session's current role (SET ROLE's, SET
// SESSION AUTHORIZATION's, else the login's) may read table, asked on its
// connection b, which runs as that role, once per session, current role
// and table.
func (ss *session) maySelect(b *backend.Conn, table string) (bool, error) {
	key := ss.currentRole() + "\x00" + b.Cluster() + "\x00" + table
	if may, ok := ss.lookupGrants[key]; ok {
		return may, nil
	}
	rows, err := b.Query("SELECT pg_catalog.has_table_privilege(" + pgwire.QuoteLiteral(table) + ", 'SELECT')")
	if err != nil {
		return false, b.ClusterErr(err)
	}
	may := len(rows) == 1 && string(rows[0][0]) == "t"
	if ss.lookupGrants == nil {
		ss.lookupGrants = map[string]bool{}
	}
	ss.lookupGrants[key] = may
	return may, nil
}

// serviceConn leases a connection of the service identity to cluster. A
// session already holding one of its own there while the pool has no room
// for a second is refused at once: waiting would wait for itself. lent:
// a connection to cluster leased for the statement, if any.
func (ss *session) serviceConn(r *routing, cluster string, lent *backend.Conn) (*backend.Conn, error) {
	p := r.pools[cluster]
	if p == nil {
		return nil, errUnknownCluster(cluster)
	}
	var b *backend.Conn
	var err error
	if held := ss.heldOn(cluster, lent); held > 0 && held >= p.Size() {
		return nil, sqlerr.New("53300", "too many connections: the pool of cluster %s (size %d) has no room for the connection of the service identity that writes and reads global secondary index entries beside this session's own", cluster, p.Size()).
			WithHint("Raise proxy.pool.size to at least 2.")
	}
	ss.waiting.Store(true)
	b, err = p.AcquireUntil(ss.stopWait)
	ss.waiting.Store(false)
	if err != nil {
		return nil, err
	}
	b.SetClient(ss.pid)
	return b, nil
}

// heldOn counts the connections to cluster the session holds now, lent
// among them.
func (ss *session) heldOn(cluster string, lent *backend.Conn) int {
	held := map[*backend.Conn]bool{}
	if tx := ss.tx; tx != nil {
		held[tx.conns[cluster]], held[tx.svc[cluster]] = true, true
	}
	held[ss.held[cluster]], held[lent] = true, true
	delete(held, nil)
	return len(held)
}

// all are the transaction's connections: its own in join order, then the
// service identity's.
func (tx *txState) all() []*backend.Conn {
	out := make([]*backend.Conn, 0, len(tx.order)+len(tx.svcOrder))
	for _, c := range tx.order {
		out = append(out, tx.conns[c])
	}
	for _, c := range tx.svcOrder {
		out = append(out, tx.svc[c])
	}
	return out
}
