package backend

import (
	"context"
	"errors"
	"sort"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/shardgate/shardgate/pgwire"
	"github.com/shardgate/shardgate/sqlerr"
)

// One pool per cluster holds the connections of every role that uses the
// cluster, each connection logged in as one role and lent only to
// sessions of that role (AcquireAs, LeaseAs): the pool's size bounds the
// cluster's connections of all roles together, SetUserSize one role's.
// A role that needs a connection while the pool is full takes the slot of
// another role's longest-idle connection, which is closed; with none
// idle it waits like any Acquire. A role's connections are reaped when
// idle past the idle timeout like any other, so a role that stopped
// using a cluster holds none there.

// RoleIdleTimeout is how long a client role's idle connection is kept
// when the pool has no idle timeout (proxy.pool.idle_timeout 0), so that
// roles that stopped using a cluster do not keep connections there.
var RoleIdleTimeout = time.Minute

// userConns is what the pool knows of one role.
type userConns struct {
	open int // connections open or being dialed
}

// AcquireAs is AcquireUntil for a session of the role login.User: it lends
// an idle connection of that role, or dials one logged in with login.
// login.User "" is the DSN's user (AcquireUntil).
func (p *Pool) AcquireAs(stop chan struct{}, login Login) (*Conn, error) {
	select {
	case <-stop:
	default:
	}
	return p.acquire(context.Background(), stop, login)
}

// LeaseAs is Lease for a session of the role login.User.
func (p *Pool) LeaseAs(client uint32, settings string, login Login) (*Conn, error) {
	return p.leaseAs(nil, client, settings, login)
}

// TryLeaseAs is LeaseAs that never waits for a connection (TryAcquire):
// an exhausted or paused pool answers 57014 at once.
func (p *Pool) TryLeaseAs(client uint32, settings string, login Login) (*Conn, error) {
	return p.leaseAs(closedStop, client, settings, login)
}

func (p *Pool) leaseAs(stop <-chan struct{}, client uint32, settings string, login Login) (*Conn, error) {
	b, err := p.acquire(context.Background(), stop, login)
	if err != nil {
		return nil, err
	}
	return b, p.lent(b, client, settings)
}

// lent makes b, just acquired, client's with settings applied; on
// failure b is given back.
func (p *Pool) lent(b *Conn, client uint32, settings string) error {
	b.SetClient(client)
	b.SettingsKey = ""
	if settings != "" {
		if err := b.SimpleExec(settings, nil); err != nil {
			p.Release(b)
			return pgwire.Annotate(err, p.cluster)
		}
	}
	return nil
}

// SetUserSize bounds the connections one role may hold in the pool (0:
// only the pool's size). Connections above it close as they come back.
func (p *Pool) SetUserSize(n int) {
	p.mu.Lock()
	p.userSize = n
	p.mu.Unlock()
}

// Size is the pool's size: the connections it may hold open, of every
// role.
func (p *Pool) Size() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.size
}

// User is the role the connection is logged in as ("": the DSN's user).
func (b *Conn) User() string { return b.user }

// takeIdle takes the most recently released idle connection of user out
// of the idle list, or returns nil. p.mu is held.
func (p *Pool) takeIdle(user string) *Conn {
	for i := len(p.idle) - 1; i >= 0; i-- {
		if b := p.idle[i]; b.user == user {
			copy(p.idle[i:], p.idle[i+1:])
			p.idle[len(p.idle)-1] = nil
			p.idle = p.idle[:len(p.idle)-1]
			return b
		}
	}
	return nil
}

// slotFor reports whether user may open one more connection: under its
// own bound, and under the pool's size or by closing victim, another
// role's longest-idle connection (taken out of the pool here, to be
// closed by the caller without p.mu). p.mu is held.
func (p *Pool) slotFor(user string) (victim *Conn, ok bool) {
	if p.userSize > 0 && p.userOpen(user) >= p.userSize {
		return nil, false
	}
	if p.open < p.size {
		return nil, true
	}
	for i, b := range p.idle { // the longest idle first
		if b.user != user {
			p.idle = append(p.idle[:i], p.idle[i+1:]...)
			p.opened(b.user, -1)
			b.pooled.Store(false)
			return b, true
		}
	}
	return nil, false
}

func (p *Pool) userOpen(user string) int {
	if u := p.users[user]; u != nil {
		return u.open
	}
	return 0
}

// overUserSize: user holds more connections than SetUserSize allows.
// p.mu is held.
func (p *Pool) overUserSize(user string) bool {
	return p.userSize > 0 && p.userOpen(user) > p.userSize
}

// opened counts n more (or fewer) open connections of user. p.mu is held.
func (p *Pool) opened(user string, n int) {
	p.open += n
	u := p.users[user]
	if u == nil {
		u = &userConns{}
		p.users[user] = u
	}
	u.open += n
	if u.open <= 0 {
		delete(p.users, user)
	}
}

// exhausted is the 53300 of an Acquire that waited max_wait in vain.
// p.mu is held.
func (p *Pool) exhausted(user string) error {
	if p.userSize > 0 && p.userOpen(user) >= p.userSize {
		return sqlerr.New("53300", "too many connections for role %q: its %d connections to cluster %s (proxy.pool.user_size) stayed busy for %s", user, p.userSize, p.cluster, p.maxWait)
	}
	return sqlerr.New("53300", "too many connections: the pool of cluster %s (size %d) stayed exhausted for %s", p.cluster, p.size, p.maxWait)
}

// DSNUser is the user a connection with dsn logs in as (the service
// identity), "" if the DSN does not parse.
func DSNUser(dsn string) string {
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return ""
	}
	return cfg.User
}

// UserPoolInfo is what one role holds of a pool (SHOW POOLS).
type UserPoolInfo struct {
	User   string // "": the DSN's user
	Open   int
	Idle   int
	Active int
}

// Users describes the roles holding connections in the pool, by name.
func (p *Pool) Users() []UserPoolInfo {
	p.mu.Lock()
	defer p.mu.Unlock()
	by := map[string]*UserPoolInfo{}
	get := func(u string) *UserPoolInfo {
		if by[u] == nil {
			by[u] = &UserPoolInfo{User: u}
		}
		return by[u]
	}
	for u, c := range p.users {
		get(u).Open = c.open
	}
	for _, b := range p.idle {
		get(b.user).Idle++
	}
	for b := range p.all {
		if !b.pooled.Load() {
			get(b.user).Active++
		}
	}
	out := make([]UserPoolInfo, 0, len(by))
	for _, u := range by {
		out = append(out, *u)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].User < out[j].User })
	return out
}

// loginRefused is the error of a dial as a client's role (user) that the
// cluster refused for the role's sake (a class 28 error: a wrong password,
// a role that may not log in, SCRAM pass-through impossible): the client
// gets it with its SQLSTATE, and the cluster is not marked unreachable.
// Nil for any other error, and for the service identity (user "").
func loginRefused(cluster, user string, err error) error {
	if user == "" {
		return nil
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && len(pe.Code) == 5 && pe.Code[:2] == "28" {
		return sqlerr.New(pe.Code, "cluster %s refused the login of role %q: %s", cluster, user, pe.Message).
			WithHint("The proxy logs in to every cluster as the client's role (docs/sessions.md).")
	}
	if se, ok := sqlerr.As(err); ok && len(se.Code) == 5 && se.Code[:2] == "28" {
		out := *se
		out.Message = "cluster " + cluster + ": " + se.Message
		return &out
	}
	return nil
}
