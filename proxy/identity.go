package proxy

import (
	"context"
	"log/slog"
	"sync"

	"github.com/shardgate/shardgate/auth"
	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/pgwire"
	"github.com/shardgate/shardgate/sqlerr"
)

// Who a session's statements run as on the backends (docs/sessions.md,
// "Who runs what").
//
// Under IdentityClient a session's backend connections are logged in as
// its own role on every cluster (ss.login): the pools lend each role only
// its own connections (backend.AcquireAs), so Postgres checks every
// privilege, row-level security policy and ownership, and current_user
// and session_user are the client's. The proxy logs in as the role with
// the user's server_password, else its plain-text password from the
// topology, else by SCRAM pass-through with the ClientKey the client's
// own SCRAM login proved (package auth). The DSN's user is the proxy's
// service identity, for its own work only: two-phase commit decisions and
// recovery, sequence blocks, the routing state, workflows, the console's
// probes, the lookup of unlisted roles (auth_query), and GSI entries: the
// pre-transactions under best_effort, and under two_phase a connection
// per lookup cluster that joins the transaction's two-phase commit, also
// reading through an index where the role may not read the lookup table
// (gsisvc.go).
//
// Under IdentityService every session runs as the DSN's user, as before
// per-role sessions existed: the proxy's user list only decides who may
// connect. It is the default under trust, where the proxy has no secret
// of the client's to log in as it with, and it is logged as a warning.

// Identity says who backend sessions run as.
type Identity string

// Backend identities (proxy.auth.identity).
const (
	IdentityClient  Identity = "client"
	IdentityService Identity = "service"
)

// identityOf is cfg's identity after defaults: client, but service under
// trust.
func identityOf(id Identity, method auth.Method) Identity {
	if id != "" {
		return id
	}
	if method == "" || method == auth.Trust {
		return IdentityService
	}
	return IdentityClient
}

// warnIdentity logs, loudly, the set-ups where clients do not run as
// their own roles, or where the proxy logs in as them without a secret.
func warnIdentity(log *slog.Logger, id Identity, method auth.Method) {
	switch {
	case id == IdentityService:
		log.Warn("EVERY CLIENT RUNS AS THE CLUSTER DSNs' USER: proxy.auth.identity is service, so Postgres " +
			"checks the privileges, row-level security and ownership of that user, not the client's; " +
			"set proxy.auth.identity: client (docs/sessions.md)")
	case method == "" || method == auth.Trust:
		log.Warn("proxy.auth.method is trust with identity client: the proxy logs in to every cluster as the " +
			"client's role with no password (or the user's configured one), which only clusters that trust " +
			"the proxy accept; for local demos only")
	}
}

// newAuthenticator builds the client authentication of a configuration;
// query: users not listed are looked up in main's pg_authid.
func (s *Server) newAuthenticator(method auth.Method, users []auth.User, query bool) (*auth.Authenticator, error) {
	cfg := auth.Config{Method: method, Users: users, Secret: s.authSecret, Logger: s.log}
	if query {
		cfg.Lookup = s.lookUpRole
	}
	return auth.New(cfg)
}

// lookUpRole reads a role's secret from main's pg_authid, through the
// service identity, as pgbouncer's auth_query: a role that may not log in
// or whose password expired is not found.
func (s *Server) lookUpRole(user string) (string, bool, error) {
	r := s.cur.Load()
	main := r.vs.Main().Clusters[0]
	ctx, cancel := context.WithTimeout(context.Background(), s.live.Load().connectTimeout)
	defer cancel()
	b, err := r.pools[main].Acquire(ctx)
	if err != nil {
		return "", false, err
	}
	defer r.pools[main].Release(b)
	rows, err := b.Query("SELECT rolpassword FROM pg_catalog.pg_authid WHERE rolname = " + pgwire.QuoteLiteral(user) +
		" AND rolcanlogin AND (rolvaliduntil IS NULL OR rolvaliduntil > now())")
	if err != nil {
		return "", false, sqlerr.New("28000", "proxy.auth.query: cannot read role %q from pg_authid on cluster %s: %v", user, main, err)
	}
	if len(rows) == 0 || rows[0][0] == nil {
		return "", false, nil
	}
	return string(rows[0][0]), true, nil
}

// backendLogin is who a session of user, logged in with proof, runs as
// on the backends.
func (s *Server) backendLogin(user string, proof auth.Proof) backend.Login {
	if s.live.Load().identity != IdentityClient {
		return backend.Login{}
	}
	l := backend.Login{User: user, Password: proof.Password}
	if k := proof.SCRAM; k != nil && l.Password == "" {
		l.SCRAM = &backend.SCRAMKeys{Salt: k.Salt, Iters: k.Iters, ClientKey: k.ClientKey, ServerKey: k.ServerKey}
	}
	return l
}

// decisions is the pool of main's cluster that records two-phase commit
// decisions for sessions running as their own roles, and checks their
// roles' rights on sequences (seqpriv.go): always the service identity (a
// client role may not write shardgate.commit_decisions), and a pool
// apart, so that sessions holding all of main's connections while they
// commit never wait for one to record their decision.
type decisions struct {
	mu   sync.Mutex
	pool *backend.Pool
}

// of is the decisions pool for r's main cluster (a new one when its DSN
// changed; the old one is closed, its lent connections on release).
func (d *decisions) of(s *Server, r *routing) *backend.Pool {
	main := r.vs.Main().Clusters[0]
	dsn := r.pools[main].DSN()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.pool != nil && d.pool.Cluster() == main && d.pool.DSN() == dsn {
		return d.pool
	}
	if d.pool != nil {
		d.pool.Close()
	}
	live := s.live.Load()
	d.pool = backend.NewPool(main, dsn, r.poolSize, live.maxWait, live.connectTimeout, s.cfg.IdleTimeout)
	return d.pool
}

// each runs f on the pool, if there is one.
func (d *decisions) each(f func(*backend.Pool)) {
	d.mu.Lock()
	p := d.pool
	d.mu.Unlock()
	if p != nil {
		f(p)
	}
}
