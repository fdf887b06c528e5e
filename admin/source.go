package admin

import (
	"crypto/tls"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/planner"
	"github.com/shardgate/shardgate/stats"
	"github.com/shardgate/shardgate/topology"
)

// Database is the database name that opens the console.
const Database = "shardgate"

// Version is shardgate's version, as SHOW VERSION reports it.
var Version = "0.1.0-dev"

// Source is the server as the console sees it.
type Source interface {
	// Routing is the topology in force with its pools and planner.
	Routing() Routing
	// Clients are the client sessions.
	Clients() *Registry
	// Reload applies an edited topology (as SIGHUP does).
	Reload(t *topology.Topology) error
	// Metrics are the server's counters.
	Metrics() *stats.Metrics
}

// Routing is one topology in force.
type Routing struct {
	Topology *topology.Topology
	Pools    map[string]*backend.Pool
	// Replicas are the standbys of the clusters that have some.
	Replicas map[string]*backend.ReplicaSet
	Planner  *planner.Planner
	// Revision counts the topologies installed: 1 at start, one more per
	// successful reload.
	Revision int
	// File is the topology file RELOAD reads; "" if none.
	File string
}

// Client is a snapshot of one client session.
type Client struct {
	ID             uint32
	User, Database string
	Addr           string
	TLS            bool
	Since          time.Time
	// State is "active" (running a statement), "idle" or "idle in
	// transaction".
	State string
	// TxSince is when its open transaction began, zero if none.
	TxSince time.Time
	// Prepared counts its prepared statements (protocol and SQL level) as
	// of its last ReadyForQuery.
	Prepared int
}

// ClientState is the part of a session the console reads while the
// session runs: the session writes it with atomics, the console reads it
// from any goroutine.
type ClientState struct {
	id             uint32
	user, database string
	addr           string
	tls            bool
	since          time.Time

	waiting  atomic.Uint32 // 0 active, 1 idle, 2 idle in transaction
	txSince  atomic.Int64  // unix nanoseconds, 0: none
	prepared atomic.Int32
}

// Start records who the session is; call it before the session is
// visible to other goroutines.
func (c *ClientState) Start(id uint32, user, database string, conn net.Conn) {
	c.id, c.user, c.database, c.since = id, user, database, time.Now()
	c.addr = conn.RemoteAddr().String()
	_, c.tls = conn.(*tls.Conn)
}

// Waiting says the session waits for its client's next message, in a
// transaction or not.
func (c *ClientState) Waiting(inTx bool) {
	if inTx {
		c.waiting.Store(2)
	} else {
		c.waiting.Store(1)
	}
}

// Running says the session runs what its client sent.
func (c *ClientState) Running() { c.waiting.Store(0) }

// Ready records, at ReadyForQuery, the number of prepared statements and
// whether a transaction is open.
func (c *ClientState) Ready(prepared int, inTx bool) {
	c.prepared.Store(int32(prepared))
	switch since := c.txSince.Load(); {
	case inTx && since == 0:
		c.txSince.Store(time.Now().UnixNano())
	case !inTx && since != 0:
		c.txSince.Store(0)
	}
}

// Snapshot is the session as the console shows it.
func (c *ClientState) Snapshot() Client {
	cl := Client{ID: c.id, User: c.user, Database: c.database, Addr: c.addr, TLS: c.tls, Since: c.since,
		State: [...]string{"active", "idle", "idle in transaction"}[c.waiting.Load()], Prepared: int(c.prepared.Load())}
	if ns := c.txSince.Load(); ns != 0 {
		cl.TxSince = time.Unix(0, ns)
	}
	return cl
}

// Registry lists the client sessions of a server.
type Registry struct {
	mu sync.Mutex
	m  map[*ClientState]func()
}

// Add lists a session; kill ends it as pg_terminate_backend does.
func (r *Registry) Add(c *ClientState, kill func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[*ClientState]func(){}
	}
	r.m[c] = kill
}

// Remove takes a session off the list.
func (r *Registry) Remove(c *ClientState) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, c)
}

// List describes the sessions.
func (r *Registry) List() []Client {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Client, 0, len(r.m))
	for c := range r.m {
		out = append(out, c.Snapshot())
	}
	return out
}

// Kill ends session id; false if there is none.
func (r *Registry) Kill(id uint32) bool {
	r.mu.Lock()
	var kill func()
	for c, k := range r.m {
		if c.id == id {
			kill = k
		}
	}
	r.mu.Unlock()
	if kill != nil {
		kill()
	}
	return kill != nil
}
