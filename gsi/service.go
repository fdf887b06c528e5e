package gsi

import (
	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/planner"
)

// A session whose statements run as the client's own role (the proxy's
// proxy.auth.identity: client) writes and reads its lookup tables as the
// proxy's service identity, as Postgres needs no grant on an index: the
// role needs no rights on the lookup tables (docs/sessions.md, "Who runs
// what").

// ServiceWriter is a Session that writes the lookup-table entries of its
// transaction on connections of the service identity, one per lookup
// cluster, which take part in the transaction's two-phase commit.
type ServiceWriter interface {
	// LookupConn returns the transaction's service connection to cluster.
	LookupConn(cluster string) (*backend.Conn, error)
}

// entryConn is the connection the entries of s on cluster are written on.
func entryConn(s Session, cluster string) (*backend.Conn, error) {
	if w, ok := s.(ServiceWriter); ok {
		return w.LookupConn(cluster)
	}
	return s.Conn(cluster)
}

// ServiceReader is a Lender whose reads through an index may run as the
// service identity: the transaction's service connection to the cluster
// (which sees the entries it wrote), or one of its own where the role may
// not read the lookup table. The owner's statement stays the client's.
type ServiceReader interface {
	// LookupRead returns the connection to read table (the lookup table,
	// quoted and qualified) on, lent being the session's own, and the
	// function that gives it back; nil: read on lent.
	LookupRead(lent *backend.Conn, table string) (*backend.Conn, func(), error)
}

// readConn is the connection a Lookup's read of q runs on (and its
// release), lent being the session's own connection to q's cluster.
func readConn(s Lender, lk *planner.Lookup, lent *backend.Conn) (*backend.Conn, func(), error) {
	if r, ok := s.(ServiceReader); ok {
		b, done, err := r.LookupRead(lent, tableName(lk.Index))
		if err != nil || b != nil {
			return b, done, err
		}
	}
	return lent, func() {}, nil
}
