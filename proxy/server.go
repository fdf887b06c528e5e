package proxy

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shardgate/shardgate/planner"
	"github.com/shardgate/shardgate/topology"
	"github.com/shardgate/shardgate/vschema"
)

// PoolMode says how long a session keeps a backend connection.
type PoolMode string

// Pool modes, as in pgbouncer.
const (
	PoolTransaction PoolMode = "transaction"
	PoolSession     PoolMode = "session"
)

// Config is the proxy's run-time configuration (the topology's `proxy:`
// section, after defaults).
type Config struct {
	Listen         string
	AuthMethod     AuthMethod
	Users          map[string]User
	TLS            *tls.Config // nil: SSLRequest is answered 'N'
	PoolMode       PoolMode
	PoolSize       int
	MaxWait        time.Duration
	ConnectTimeout time.Duration
	IdleTimeout    time.Duration
	QueryTimeout   time.Duration
	// Commit is how a transaction that wrote on several clusters ends:
	// two_phase (default) or best_effort.
	Commit CommitMode
	// InDoubtTimeout is how old a prepared transaction without a recorded
	// decision must be before recovery rolls it back (default 1 minute:
	// longer than any commit in flight).
	InDoubtTimeout time.Duration
	// RecoverEvery is how often recovery runs (default 30s; <0 disables
	// the background loop).
	RecoverEvery time.Duration
	// SequenceBlock is how many values of a main-group sequence the proxy
	// reserves at a time, at first (default 100); SequenceBlockMax bounds
	// how far the block grows under load (default 10000). See sequence.go.
	SequenceBlock    int
	SequenceBlockMax int
	Logger           *slog.Logger
}

// routing is everything derived from one topology: replaced whole on reload,
// so a statement plans and runs against one consistent view.
type routing struct {
	topo    *topology.Topology
	vs      *vschema.VSchema
	planner *planner.Planner
	pools   map[string]*pool
	// poolSize is the size of every pool (Config.PoolSize, then
	// proxy.pool.size as reloaded).
	poolSize int
	// tls serves new TLS handshakes (Config.TLS, then the certificate
	// files of proxy.tls as reloaded); nil without TLS.
	tls *tls.Config
}

// Server accepts client connections and serves them over the backend
// clusters of the current topology.
type Server struct {
	cfg Config
	log *slog.Logger

	cur      atomic.Pointer[routing]
	reloadMu sync.Mutex // one Reload at a time

	mu       sync.Mutex
	sessions map[uint32]*session
	conns    map[net.Conn]struct{}
	closed   bool
	wg       sync.WaitGroup

	scramMu    sync.Mutex
	scramCache map[string]*scramVerifier

	twopc       *twoPhase
	stopRecover context.CancelFunc

	seqs *sequences // values of main-group sequences, see sequence.go
}

// NewServer builds a server for a topology. It does not connect to any
// backend until a client needs one.
func NewServer(cfg Config, topo *topology.Topology) (*Server, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.PoolMode == "" {
		cfg.PoolMode = PoolTransaction
	}
	if cfg.PoolSize <= 0 {
		cfg.PoolSize = 10
	}
	if cfg.MaxWait <= 0 {
		cfg.MaxWait = 5 * time.Second
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = 5 * time.Second
	}
	if cfg.Commit == "" {
		cfg.Commit = CommitTwoPhase
	}
	if cfg.InDoubtTimeout <= 0 {
		cfg.InDoubtTimeout = time.Minute
	}
	if cfg.RecoverEvery == 0 {
		cfg.RecoverEvery = 30 * time.Second
	}
	s := &Server{
		cfg: cfg, log: cfg.Logger,
		sessions:   map[uint32]*session{},
		conns:      map[net.Conn]struct{}{},
		scramCache: map[string]*scramVerifier{},
	}
	s.twopc = newTwoPhase(s)
	s.seqs = newSequences(s)
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
	s.install(topo, vs, cfg.PoolSize, served)
	return s, nil
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
	return s.reload(topo)
}

// install makes a topology the one in force. Pools of clusters whose DSN
// did not change are kept (resized if need be); the others are closed,
// their connections still lent out closed on release.
func (s *Server) install(topo *topology.Topology, vs *vschema.VSchema, poolSize int, tlsConfig *tls.Config) {
	old := s.cur.Load()
	r := &routing{topo: topo, vs: vs, planner: planner.New(vs), pools: map[string]*pool{}, poolSize: poolSize, tls: tlsConfig}
	for _, c := range topo.Clusters {
		if old != nil {
			if p, ok := old.pools[c.Name]; ok && p.dsn == c.DSN {
				resizePool(p, poolSize)
				r.pools[c.Name] = p
				continue
			}
		}
		r.pools[c.Name] = newPool(c.Name, c.DSN, poolSize, s.cfg.MaxWait, s.cfg.ConnectTimeout, s.cfg.IdleTimeout)
	}
	s.cur.Store(r)
	if old != nil {
		for name, p := range old.pools {
			if r.pools[name] != p {
				p.close()
			}
		}
	}
}

// Serve accepts connections on ln until Close. Each connection gets its own
// goroutine; a failing session never affects others.
func (s *Server) Serve(ln net.Listener) error {
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
			if closed {
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
		if s.closed {
			s.mu.Unlock()
			c.Close()
			return nil
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			s.serveConn(c)
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
		}()
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
			p.reapIdle()
			trimPool(p)
		}
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
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	for _, p := range s.cur.Load().pools {
		p.close()
	}
	s.seqs.close()
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
}

func (s *Server) unregisterSession(ss *session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sessions[ss.pid] == ss {
		delete(s.sessions, ss.pid)
	}
}

// cancel forwards a CancelRequest to the backends running the session's
// current statement.
func (s *Server) cancel(pid uint32, secret []byte) {
	s.mu.Lock()
	ss := s.sessions[pid]
	s.mu.Unlock()
	if ss == nil || !constantTimeEqual(ss.secret, secret) {
		return
	}
	for _, b := range ss.runningConns() {
		if b.pool.addr == "" {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		if err := sendCancel(ctx, b.pool.addr, b.pid, b.secret); err != nil {
			s.log.Warn("cancel request failed", "cluster", b.pool.cluster, "err", err)
		}
		cancel()
	}
}

func constantTimeEqual(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	var v byte
	for i := range a {
		v |= a[i] ^ b[i]
	}
	return v == 0
}

func (s *Server) scramFor(u User) (*scramVerifier, error) {
	s.scramMu.Lock()
	defer s.scramMu.Unlock()
	key := u.Name + "\x00" + u.Password
	if v, ok := s.scramCache[key]; ok {
		return v, nil
	}
	salt := make([]byte, 16)
	_, _ = rand.Read(salt)
	v, err := scramFromPassword(u.Password, salt, 4096)
	if err != nil {
		return nil, err
	}
	s.scramCache[key] = v
	return v, nil
}

// PoolStats reports open and idle backend connections per cluster.
func (s *Server) PoolStats() map[string][2]int {
	out := map[string][2]int{}
	for name, p := range s.cur.Load().pools {
		o, i := p.stats()
		out[name] = [2]int{o, i}
	}
	return out
}
