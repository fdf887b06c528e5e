package proxy

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardgate/shardgate/admin"
	"github.com/shardgate/shardgate/auth"
	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/clientwait"
	"github.com/shardgate/shardgate/pgwire"
	"github.com/shardgate/shardgate/planner"
	"github.com/shardgate/shardgate/routestate"
	"github.com/shardgate/shardgate/seqblock"
	"github.com/shardgate/shardgate/sessionstate"
	"github.com/shardgate/shardgate/stats"
	"github.com/shardgate/shardgate/topology"
	"github.com/shardgate/shardgate/twopc"
	"github.com/shardgate/shardgate/vschema"
)

// PoolMode says how long a session keeps a backend connection.
type PoolMode string

// Pool modes, as in pgbouncer.
const (
	PoolTransaction PoolMode = "transaction"
	PoolSession     PoolMode = "session"
)

// Config is the proxy's run-time configuration (the topology's `proxy:` section, after defaults).
type Config struct {
	Listen     string
	AuthMethod auth.Method // trust (default), md5 or scram-sha-256
	// Users are the client logins. With trust and no users any user name
	// is let in (and NewServer logs a warning); otherwise a name not listed
	// is refused, unless AuthQuery.
	Users []auth.User
	// AuthQuery: a user not in Users is looked up in main's pg_authid
	// (md5 and scram-sha-256 only).
	AuthQuery bool
	// Identity is who backend sessions run as (identity.go): client (the
	// default under md5 and scram-sha-256) or service (the default under
	// trust).
	Identity Identity
	// UserSize bounds one role's connections per cluster (0: PoolSize).
	UserSize int
	// Database is the one database name clients may ask for. Empty: the
	// database of the main group's cluster DSN.
	Database string
	// TLS answers SSLRequest; nil: it is answered 'N'. Versions below TLS
	// 1.2 are never accepted, whatever MinVersion says.
	TLS *tls.Config
	// AuthTimeout bounds the start-up and authentication of a client
	// connection (default 10s): a client that has not finished by then is
	// disconnected.
	AuthTimeout    time.Duration
	PoolMode       PoolMode
	PoolSize       int
	MaxWait        time.Duration
	ConnectTimeout time.Duration
	IdleTimeout    time.Duration
	QueryTimeout   time.Duration
	// CodeRefresh bounds how long the catalog of relations that run code
	// serves (unseenrel.go): one created on a cluster directly is seen
	// within it (default 10s).
	CodeRefresh time.Duration
	// Commit is how a transaction that wrote on several clusters ends:
	// two_phase (default) or best_effort.
	Commit CommitMode
	// InDoubtTimeout is how old a prepared transaction without a recorded
	// decision must be before recovery rolls it back (default 1 minute:
	// longer than any commit in flight). A commit decision is recorded only
	// within twice this after the first PREPARE; abort decisions are kept
	// at least ten times this (package twopc).
	InDoubtTimeout time.Duration
	// RecoverEvery is how often recovery runs (default 30s; <0 disables
	// the background loop).
	RecoverEvery time.Duration
	// SequenceBlock is how many values of a main-group sequence the proxy
	// reserves at a time, at first (default 100); SequenceBlockMax bounds
	// how far the block grows under load (default 10000). See seqblock.
	SequenceBlock    int
	SequenceBlockMax int
	Logger           *slog.Logger
	// TopologyFile is what the admin console's RELOAD reads; Reload, if
	// set, installs it (routestate.Follower.SetFile), else Server.Reload.
	TopologyFile string
	Reload       func(*topology.Topology) error
	// Gate holds statements on tables a traffic switch moves (routestate).
	Gate *routestate.Gate

	// Limits bound client connections and the memory their messages
	// take (proxy.limits); zero fields take topology.DefaultLimits.
	Limits topology.LimitsConfig
	// TLSRequired refuses clients that do not negotiate TLS (28000); it
	// needs TLS.
	TLSRequired bool

	// twopcTune adjusts two-phase commit's configuration (tests: simulated
	// clock, retry backoff).
	twopcTune func(*twopc.Config)
}

// routing is everything derived from one topology: replaced whole on reload,
// so a statement plans and runs against one consistent view.
type routing struct {
	topo    *topology.Topology
	vs      *vschema.VSchema
	planner *planner.Planner
	// columns is the planner's store of tables' column orders (columns.go).
	columns *tableColumns
	// code is the catalog of relations that run code (unseenrel.go).
	code  codeRelations
	pools map[string]*backend.Pool
	// replicas are the standbys of the clusters that have some, with
	// their health checkers (replicas.go, standbys.go).
	replicas map[string]*backend.ReplicaSet
	// database is the name clients must ask for: Config.Database, or the
	// database the main group's cluster DSN connects to.
	database string
	// poolSize is the size of every pool (Config.PoolSize, then
	// proxy.pool.size as reloaded).
	poolSize int
	// tls serves new TLS handshakes (Config.TLS, then the certificate
	// files of proxy.tls as reloaded); nil without TLS.
	tls *tls.Config
	rev int // 1, then one more per reload (SHOW TOPOLOGY)
}

// Server accepts client connections and serves them over the backend
// clusters of the current topology.
type Server struct {
	cfg Config
	log *slog.Logger
	// baselines are the settings of unchanged connections (unseen.go).
	baselines baselines

	cur      atomic.Pointer[routing]
	reloadMu sync.Mutex // one Reload at a time

	// record is main's record of the clusters' primaries (failover).
	recordMu sync.Mutex
	record   *backend.PrimaryRecord

	mu       sync.Mutex
	sessions map[uint32]*session
	conns    map[net.Conn]struct{}
	closed   bool
	wg       sync.WaitGroup

	draining atomic.Bool         // Shutdown began (drain.go)
	idle     *clientwait.Sweeper // parks sessions waiting for their client
	params   sessionstate.ParamSets
	startups sessionstate.ParamSets // sessions' start-up parameters, shared while equal
	// startParams caches start-up ParameterStatus sets (startparams.go).
	startParams paramCache
	listeners   []net.Listener // what Serve accepts on, for Shutdown

	// auth checks client logins; a reload that changes proxy.auth swaps
	// it (new connections use the new one).
	auth atomic.Pointer[auth.Authenticator]
	// authSecret seeds the salts of mock SCRAM exchanges: kept across
	// reloads, so an unknown user's salt never changes.
	authSecret []byte
	// live are the proxy settings a reload may change (reload.go).
	live atomic.Pointer[liveConfig]

	twopc       *twoPhase
	stopRecover context.CancelFunc
	decide      decisions // identity.go

	seqs *seqblock.Source // values of main-group sequences

	// budget bounds the bytes of client messages held at once (limits.go).
	budget *pgwire.Budget
	// refusedClients and refusedMessages count what the limits refused;
	// limitLog spaces out the log lines about them (limits.go).
	refusedClients, refusedMessages atomic.Int64
	limitLog                        [2]onePerSecond

	metrics *stats.Metrics // counters, for /metrics and the admin console
	// queries are the statistics by fingerprint (SHOW QUERIES); nil with
	// proxy.query_stats.max 0.
	queries *stats.Queries
	clients admin.Registry // sessions, for the admin console
}

// NewServer builds a server for a topology. It does not connect to any
// backend until a client needs one.
func NewServer(cfg Config, topo *topology.Topology) (*Server, error) {
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())
	cfg.PoolMode, cfg.Commit = cmp.Or(cfg.PoolMode, PoolTransaction), cmp.Or(cfg.Commit, CommitTwoPhase)
	cfg.PoolSize = positiveOr(cfg.PoolSize, 10)
	cfg.MaxWait = positiveOr(cfg.MaxWait, 5*time.Second)
	cfg.ConnectTimeout = positiveOr(cfg.ConnectTimeout, 5*time.Second)
	cfg.InDoubtTimeout = positiveOr(cfg.InDoubtTimeout, time.Minute)
	cfg.RecoverEvery = cmp.Or(cfg.RecoverEvery, 30*time.Second) // <0 stays: no recovery loop
	cfg.AuthTimeout = positiveOr(cfg.AuthTimeout, 10*time.Second)
	cfg.Limits = withDefaultLimits(cfg.Limits)
	if cfg.TLSRequired && cfg.TLS == nil {
		return nil, errors.New("proxy.tls.required needs proxy.tls (a certificate and key)")
	}
	if cfg.TLS != nil && cfg.TLS.MinVersion < tls.VersionTLS12 {
		cfg.TLS = cfg.TLS.Clone()
		cfg.TLS.MinVersion = tls.VersionTLS12
	}
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	cfg.Identity = identityOf(cfg.Identity, cfg.AuthMethod)
	s := &Server{
		cfg: cfg, log: cfg.Logger, authSecret: secret, budget: pgwire.NewBudget(cfg.Limits.MaxBufferedBytes),
		sessions: map[uint32]*session{},
		conns:    map[net.Conn]struct{}{}, metrics: stats.New(planner.RouteKindNames), idle: clientwait.NewSweeper(parkAfter),
	}
	a, err := s.newAuthenticator(cfg.AuthMethod, cfg.Users, cfg.AuthQuery)
	if err != nil {
		return nil, fmt.Errorf("proxy.auth: %w", err)
	}
	warnAuth(cfg.Logger, a, "")
	warnIdentity(cfg.Logger, cfg.Identity, cfg.AuthMethod)
	s.queries = stats.NewQueries(topo.Proxy.QueryStats.Max)
	s.metrics.Queries = s.queries
	s.metrics.Registry().MustRegister(admin.Collector(adminSource{s}))
	s.metrics.SetHosts(s.hostSamples) // standbys.go
	s.auth.Store(a)
	s.live.Store(&liveConfig{maxWait: cfg.MaxWait, connectTimeout: cfg.ConnectTimeout, queryTimeout: cfg.QueryTimeout, commit: cfg.Commit,
		identity: cfg.Identity})
	s.twopc = newTwoPhase(s)
	s.seqs = seqblock.New(mainOf{s}, seqblock.Config{Block: cfg.SequenceBlock, BlockMax: cfg.SequenceBlockMax, ConnectTimeout: cfg.ConnectTimeout})
	served := cfg.TLS
	if served != nil {
		// Each handshake takes the certificate in force, so a reload can
		// replace it without a restart.
		s.cfg.TLS = &tls.Config{GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return s.cur.Load().tls, nil
		}}
	}
	vs, err := vschema.Build(topo)
	if err != nil {
		return nil, err
	}
	db, err := s.databaseOf(topo, vs)
	if err != nil {
		return nil, err
	}
	s.install(topo, vs, db, cfg.PoolSize, served)
	return s, nil
}

// positiveOr returns v, or def when v is not positive (a default of
// Config).
func positiveOr[T int | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// Reload switches to an edited topology, unless the edit would route
// statements to shards that do not hold the rows: topology.Diff lists
// every change, tables that change group are checked for rows where they
// live, and one refused change refuses the whole reload with a
// *topology.RefusedError (the topology in force stays). Otherwise every
// change is logged, one line each, and the new topology applies to new
// statements; statements already running finish on the old one and no
// client connection is dropped. Of the proxy: section, proxy.pool.size
// and the proxy.tls certificate and key (re-read on every reload) apply
// at once; the other settings are read at start-up and are logged as
// needing a restart (see reload.go).
func (s *Server) Reload(topo *topology.Topology) error {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	err := s.reload(topo)
	s.metrics.Reload(err)
	return err
}

// databaseOf is the database name clients must ask for under topo.
func (s *Server) databaseOf(topo *topology.Topology, vs *vschema.VSchema) (string, error) {
	if s.cfg.Database != "" {
		return s.cfg.Database, nil
	}
	return backend.DSNDatabase(topo.Cluster(vs.Main().Clusters[0]).DSN)
}

// install makes a topology the one in force. Pools of clusters whose DSN
// did not change are kept (resized if need be); the others are closed,
// their connections still lent out closed on release.
func (s *Server) install(topo *topology.Topology, vs *vschema.VSchema, db string, poolSize int, tlsConfig *tls.Config) {
	old := s.cur.Load()
	columns := newTableColumns()
	r := &routing{topo: topo, vs: vs, planner: planner.New(vs).WithCounters(&s.metrics.PlanCache).WithColumns(columns), columns: columns,
		pools: map[string]*backend.Pool{}, database: db, poolSize: poolSize, tls: tlsConfig, rev: 1}
	r.code.every = cmp.Or(s.cfg.CodeRefresh, defaultCodeRefresh)
	for _, c := range topo.Clusters {
		if old != nil {
			// ConfiguredDSN: a pool a failover moved to a standby is kept.
			if p, ok := old.pools[c.Name]; ok && p.ConfiguredDSN() == c.DSN {
				p.Resize(poolSize)
				r.pools[c.Name] = p
				continue
			}
		}
		r.pools[c.Name] = backend.NewPool(c.Name, c.DSN, poolSize, s.cfg.MaxWait, s.cfg.ConnectTimeout, s.cfg.IdleTimeout)
		r.pools[c.Name].Count(s.metrics.Pool(c.Name), s.log)
		s.resolveWhenBack(r.pools[c.Name])
		r.pools[c.Name].SetUserSize(s.cfg.UserSize)
	}
	if old != nil {
		r.rev = old.rev + 1
	}
	stale, closed := s.installReplicas(old, r, topo)
	s.cur.Store(r)
	for _, rs := range stale {
		rs.Stop()
	}
	for _, p := range closed {
		p.Close() // connections still lent out are closed on release
	}
	if old != nil {
		for name, p := range old.pools {
			if r.pools[name] != p {
				// Connections still lent out are closed on release.
				p.Close()
			}
		}
	}
}

// Serve accepts connections on ln until Close. Each connection gets its own
// goroutine; a failing session never affects others.
func (s *Server) Serve(ln net.Listener) error {
	if !s.trackListener(ln) {
		return nil
	}
	go s.maintain(ln)
	if s.cfg.RecoverEvery > 0 {
		ctx, cancel := context.WithCancel(context.Background())
		s.mu.Lock()
		s.stopRecover = cancel
		s.mu.Unlock()
		go s.recoverLoop(ctx, s.cfg.RecoverEvery)
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed || s.draining.Load() {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			return err
		}
		s.mu.Lock()
		if s.closed || s.draining.Load() {
			s.mu.Unlock()
			c.Close()
			return nil
		}
		refuse := s.tooManyClients(len(s.conns)) // limits.go
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serveConn(c, refuse) // its end says s.wg.Done (session.go)
	}
}

// maintain closes idle backend connections past their idle timeout.
func (s *Server) maintain(ln net.Listener) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for range t.C {
		s.mu.Lock()
		closed := s.closed
		s.mu.Unlock()
		if closed {
			return
		}
		for _, p := range s.cur.Load().pools {
			p.ReapIdle()
		}
		for _, p := range s.cur.Load().standbyPools() {
			p.ReapIdle()
		}
		s.reapDeparted() // sessionend.go
		s.decide.each((*backend.Pool).ReapIdle)
	}
}

// Close stops accepting, closes client connections and backend pools.
func (s *Server) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	if s.stopRecover != nil {
		s.stopRecover()
	}
	s.idle.Close() // parked sessions run again, and find their connection closed
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	// Sessions blocked on a backend would not see their client go:
	// every lent connection is closed too (sessionend.go).
	for _, p := range s.cur.Load().pools {
		p.Interrupt(0)
	}
	for _, p := range s.cur.Load().standbyPools() {
		p.Interrupt(0)
	}
	s.wg.Wait()
	s.twopc.coord.Close()
	for _, p := range s.cur.Load().pools {
		p.Close()
	}
	for _, rs := range s.cur.Load().replicas {
		rs.Stop()
	}
	s.recordMu.Lock()
	if s.record != nil {
		s.record.Close() // the checkers are stopped: none uses it
	}
	s.recordMu.Unlock()
	for _, p := range s.cur.Load().standbyPools() {
		p.Close()
	}
	s.decide.each((*backend.Pool).Close)
	s.seqs.Close()
}

func (s *Server) registerSession(ss *session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		var b [4]byte
		_, _ = rand.Read(b[:])
		pid := binary.BigEndian.Uint32(b[:]) & 0x7fffffff
		if _, taken := s.sessions[pid]; pid != 0 && !taken {
			ss.pid = pid
			break
		}
	}
	ss.secret = make([]byte, 4)
	_, _ = rand.Read(ss.secret)
	s.sessions[ss.pid] = ss
	ss.info.Start(ss.pid, ss.user, ss.database, ss.conn)
	s.clients.Add(&ss.info, func() { s.terminateSession(ss) })
	s.idle.Add(&ss.wait)
	s.metrics.Session()
	s.log.Debug("client connected", "client_id", ss.pid, "user", ss.user, "remote", ss.conn.RemoteAddr().String())
}

func (s *Server) unregisterSession(ss *session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sessions[ss.pid] == ss {
		delete(s.sessions, ss.pid)
		s.idle.Remove(&ss.wait)
		s.clients.Remove(&ss.info)
		s.log.Debug("client disconnected", "client_id", ss.pid, "user", ss.user, "remote", ss.info.Snapshot().Addr)
	}
}

// cancel forwards a CancelRequest to the backends running the session's
// current statement.
func (s *Server) cancel(pid uint32, secret []byte) {
	s.mu.Lock()
	ss := s.sessions[pid]
	s.mu.Unlock()
	if ss == nil || subtle.ConstantTimeCompare(ss.secret, secret) != 1 {
		return
	}
	s.cancelRunning(ss)
}

// cancelRunning cancels the statement ss runs on its backends, if any.
// It holds ss.runMu until every cancel was delivered: the session clears
// its running connections (setRunning) under that lock before it gives
// them back, so a cancel can never reach a connection that already serves
// another session (Postgres ignores one that reaches an idle backend).
func (s *Server) cancelRunning(ss *session) {
	// Reserved while the session still runs on them (under runMu), then
	// delivered: the session goes on, and the pool takes the connections
	// back only once their backends have the cancel.
	ss.runMu.Lock()
	held := backend.HoldForCancel(ss.running)
	ss.runMu.Unlock()
	if ss.waiting.Load() { // ends a wait for a pool connection: 57014
		select {
		case ss.stopWait <- struct{}{}:
		default:
		}
	}
	backend.DeliverCancels(held, s.log)
}

// mainOf tells the sequence source where main is in the current routing.
type mainOf struct{ s *Server }

// MainDSN names main's cluster and its DSN.
func (m mainOf) MainDSN() (cluster, dsn string) {
	r := m.s.cur.Load()
	cluster = r.vs.Main().Clusters[0]
	if p := r.pools[cluster]; p != nil {
		dsn = p.DSN()
	}
	return cluster, dsn
}
