package backend

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/shardgate/shardgate/sqlerr"
	"github.com/shardgate/shardgate/stats"
)

// DSNDatabase is the database a connection with dsn opens: its dbname,
// or else (as Postgres does) its user name.
func DSNDatabase(dsn string) (string, error) {
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return "", fmt.Errorf("main cluster dsn: %w", err)
	}
	if cfg.Database != "" {
		return cfg.Database, nil
	}
	return cfg.User, nil
}

// Pool holds the backend connections of one cluster. Connections are lent to
// sessions for one transaction (transaction pooling) or for a session's life
// (session pooling) and must come back clean: no open transaction, no
// pending results.
type Pool struct {
	cluster string
	// dsn and addr (host:port for CancelRequest) are where the pool dials:
	// the configured DSN until a failover moves the pool to another host
	// (Retarget, failover.go); cfgDSN stays the configured one. gen counts
	// the moves. All three are written under mu.
	dsn            string
	addr           string
	cfgDSN         string
	gen            uint64
	size           int
	maxWait        time.Duration
	connectTimeout time.Duration
	idleTimeout    time.Duration

	mu   sync.Mutex
	idle []*Conn
	open int // connections open or being dialed
	// waiters are the Acquires waiting for a connection, longest waiting
	// first. Each has a channel of its own (capacity 1) that wake sends on
	// once, after taking it out of the queue: every release wakes one
	// waiter, and no wake-up is lost however many arrive at once.
	waiters []waiter
	// pair is held by the LeasePairAs taking its two connections, freed
	// closed by the next wake (pair.go).
	pair   chan struct{}
	freed  chan struct{}
	closed bool
	// all are the connections open (idle or lent), for SHOW SERVERS.
	all map[*Conn]struct{}
	// paused: Acquire holds until resumed is closed (Pause, Resume).
	paused  bool
	resumed chan struct{}
	held    []time.Time // when each Acquire held by the pause began waiting
	// lastErr is the last dial failure, version the server_version the
	// last dial reported (SHOW CLUSTERS).
	lastErr   error
	lastErrAt time.Time
	version   string
	counters  *stats.PoolCounters
	log       *slog.Logger
	// misuses counts Releases of a connection already idle, and uses of
	// one (usedWhilePooled): bugs of the caller, made harmless (a bug
	// of the caller, made harmless; see Release).
	misuses int

	// downUntil makes statements fail fast after a dial failure instead of
	// every one of them waiting for a connect timeout.
	downUntil time.Time
	downErr   error

	// coll caches what the cluster's catalog says about collations
	// (collation.go), for merges of text.
	coll collationCache

	forget forgetLog // forget.go

	// users are the roles whose connections the pool holds (users.go):
	// how many each has open and the Login its next dial uses. The
	// service identity (the DSN's user) is "".
	users map[string]*userConns
	// userSize bounds one role's connections (0: only size).
	userSize int
	// suspect: a dial failed, a lent connection broke or an idle one was
	// found dead since the last successful dial — the cluster may have
	// been down. The next successful dial runs reachable (OnReachable).
	suspect   bool
	reachable func()
	// standby: the pool is of one of the cluster's standbys (replicas.go).
	standby atomic.Bool

	// failoverBuffer > 0: the cluster has standbys to fail over to; a
	// dial failure holds statements (hold) instead of failing them, up
	// to failoverBuffer (failover.go).
	failoverBuffer time.Duration
	hold           *failoverHold
}

// Host is the pool's host:port ("" for a Unix socket).
func (p *Pool) Host() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.addr
}

// IsStandby reports whether the pool is of one of the cluster's standbys.
func (p *Pool) IsStandby() bool { return p.standby.Load() }

// Down reports whether the last dial failed a moment ago (statements
// fail fast).
func (p *Pool) Down() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return time.Now().Before(p.downUntil)
}

// Busy is how many connections are lent, being dialed or waited for.
func (p *Pool) Busy() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.open - len(p.idle) + len(p.waiters)
}

// OnReachable makes the pool run f, in a goroutine of its own, on its
// first successful dial after a failure (a dial that failed, a connection
// that broke or was found dead): the cluster is reachable again, and what
// waited for it (two-phase commit's decided transactions) can go on.
func (p *Pool) OnReachable(f func()) {
	p.mu.Lock()
	p.reachable = f
	p.mu.Unlock()
}

// Cluster names the pool's cluster.
func (p *Pool) Cluster() string { return p.cluster }

// DSN is the pool's connection string.
func (p *Pool) DSN() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dsn
}

// testHookWaiting, set by tests, runs in Acquire after it decided to wait
// and before it waits.
var testHookWaiting func()

// NewPool makes the pool of a cluster; it dials nothing until Acquire. size
// bounds the connections open at once (10 if not positive), maxWait how
// long Acquire waits for one when all are lent, connectTimeout one dial,
// idleTimeout how long an idle connection is kept (ReapIdle; 0 keeps
// them).
func NewPool(cluster, dsn string, size int, maxWait, connectTimeout, idleTimeout time.Duration) *Pool {
	addr, _ := backendAddr(dsn)
	if size <= 0 {
		size = 10
	}
	return &Pool{
		cluster: cluster, dsn: dsn, cfgDSN: dsn, addr: addr, size: size,
		maxWait: maxWait, connectTimeout: connectTimeout, idleTimeout: idleTimeout,
		all: map[*Conn]struct{}{}, counters: stats.New(nil).Pool(cluster), users: map[string]*userConns{},
		pair: make(chan struct{}, 1),
	}
}

// waiter is an Acquire waiting for a connection.
type waiter struct {
	ch    chan struct{}
	since time.Time
}

// Count makes the pool count its dials and waits in c and log failed
// dials to log.
func (p *Pool) Count(c *stats.PoolCounters, log *slog.Logger) {
	p.mu.Lock()
	p.counters, p.log = c, log
	p.mu.Unlock()
}

// SetTimeouts changes how long Acquire waits for a connection, how long a
// dial may take and how long an idle connection is kept (a reload).
func (p *Pool) SetTimeouts(maxWait, connectTimeout, idleTimeout time.Duration) {
	p.mu.Lock()
	p.maxWait, p.connectTimeout, p.idleTimeout = maxWait, connectTimeout, idleTimeout
	p.mu.Unlock()
}

// Acquire lends a connection. The caller owns it until Release.
func (p *Pool) Acquire(ctx context.Context) (*Conn, error) {
	return p.acquire(ctx, ctx.Done(), Login{})
}

// AcquireUntil is Acquire for a caller without a context: a value sent
// on (or the close of) stop ends a wait for a connection — while the pool
// is exhausted or paused — with 57014, as a client's CancelRequest ends a
// statement waiting in Postgres. A value already in stop is dropped first:
// it was meant for an earlier wait. A dial is bounded by connect_timeout.
func (p *Pool) AcquireUntil(stop chan struct{}) (*Conn, error) {
	select {
	case <-stop:
	default:
	}
	return p.acquire(context.Background(), stop, Login{})
}

// TryAcquire is Acquire that never waits for a connection: an idle one,
// or a new one while the pool has room (a dial is bounded by
// connect_timeout); an exhausted or paused pool answers 57014 at once.
func (p *Pool) TryAcquire() (*Conn, error) {
	return p.acquire(context.Background(), closedStop, Login{})
}

// closedStop ends every wait of TryAcquire at once.
var closedStop = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// acquire lends a connection of the role login.User ("": the DSN's
// user), dialing one logged in with login if none is idle.
func (p *Pool) acquire(ctx context.Context, stop <-chan struct{}, login Login) (*Conn, error) {
	return p.acquireBy(ctx, stop, login, time.Time{})
}

// acquireBy is acquire waiting until deadline at the latest (zero: max_wait from now).
func (p *Pool) acquireBy(ctx context.Context, stop <-chan struct{}, login Login, deadline time.Time) (lent *Conn, _ error) {
	user := login.User
	p.mu.Lock()
	start := time.Now()
	if deadline.IsZero() {
		deadline = start.Add(p.maxWait)
	}
	counters := p.counters
	p.mu.Unlock()
	waited := false
	defer func() {
		var d time.Duration
		if waited {
			d = time.Since(start)
			counters.Waits.Inc()
			counters.WaitSeconds.Add(d.Seconds())
		}
		if lent != nil {
			lent.LeaseWait = d
		}
	}()
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, sqlerr.New("08006", "cluster %s: connection pool is closed", p.cluster)
		}
		if h := p.hold; h != nil {
			p.mu.Unlock()
			waited = true
			if err := p.waitHold(h, stop); err != nil {
				return nil, err
			}
			deadline = time.Now().Add(p.maxWait)
			continue
		}
		if p.paused {
			// PAUSE: held until RESUME; max_wait counts from then.
			resumed, since := p.resumed, time.Now()
			p.held = append(p.held, since)
			p.mu.Unlock()
			waited = true
			var done bool
			select {
			case <-resumed:
				deadline = time.Now().Add(p.maxWait)
			case <-stop:
				done = true
			}
			p.mu.Lock()
			p.held = slices.Delete(p.held, slices.Index(p.held, since), slices.Index(p.held, since)+1)
			p.mu.Unlock()
			if done {
				return nil, sqlerr.New("57014", "canceling statement while waiting for paused cluster %s", p.cluster)
			}
			continue
		}
		for b := p.takeIdle(user); b != nil; b = p.takeIdle(user) {
			b.pooled.Store(false)
			p.mu.Unlock()
			// Every lend is checked, however short the connection was
			// idle: after a crash-restart of the cluster every idle
			// connection is dead, and a statement written to one is lost
			// without an error until a second write (broken pipe) or the
			// read (EOF) — too late to know it never ran. The check reads
			// the flag the hang-up watch sets (no system call), or peeks
			// at a connection it does not watch; a dead connection is
			// closed here and the next one (or a fresh dial) tried, so the
			// statement runs.
			if b.lendable() {
				return b, nil
			}
			b.close()
			p.mu.Lock()
			p.opened(b.user, -1)
			p.suspect = true
		}
		if time.Now().Before(p.downUntil) {
			err := p.downErr
			p.mu.Unlock()
			return nil, err
		}
		if victim, ok := p.slotFor(user); ok {
			p.opened(user, 1)
			p.mu.Unlock()
			if victim != nil {
				victim.close() // another role's idle connection made room
			}
			b, err := dialBackend(ctx, p, login)
			p.mu.Lock()
			if err == nil {
				b.user = user
				p.all[b] = struct{}{}
				p.version = b.Params["server_version"]
				p.counters.Connects.Inc()
				back := p.suspect && p.reachable != nil
				p.suspect = false
				reachable := p.reachable
				p.mu.Unlock()
				if back {
					go reachable()
				}
				return b, nil
			}
			p.counters.ConnectFailures.Inc()
			if p.log != nil {
				p.log.Warn("backend connection failed", "cluster", p.cluster, "err", err)
			}
			p.lastErr, p.lastErrAt = err, time.Now()
			p.opened(user, -1)
			if lerr := loginRefused(p.cluster, user, err); lerr != nil {
				p.wake()
				p.mu.Unlock()
				return nil, lerr
			}
			p.suspect = true
			if p.failoverBuffer > 0 && !p.closed {
				// The primary may be gone: hold until a failover or
				// its return (failover.go); an expired hold fails the
				// statement.
				if p.hold == nil {
					p.startHold()
				}
				p.wake()
				p.mu.Unlock()
				continue
			}
			serr := sqlerr.New("08006", "cluster %s is unreachable: %v", p.cluster, err)
			serr.Hint = "Statements for other clusters keep working; shardgate reconnects when the cluster is back."
			p.downUntil = time.Now().Add(200 * time.Millisecond)
			p.downErr = serr
			p.wake() // the slot is free again
			p.mu.Unlock()
			return nil, serr
		}
		wait := time.Until(deadline)
		if wait <= 0 {
			err := p.exhausted(user)
			p.mu.Unlock()
			return nil, err
		}
		// Queue up under the lock that saw the pool exhausted: whatever
		// is released from now on wakes this Acquire or an older one.
		w := make(chan struct{}, 1)
		p.waiters = append(p.waiters, waiter{w, time.Now()})
		waited = true
		p.mu.Unlock()
		if testHookWaiting != nil {
			testHookWaiting()
		}
		t := time.NewTimer(wait)
		select {
		case <-w:
			t.Stop()
		case <-t.C:
			p.leave(w)
		case <-stop:
			t.Stop()
			p.leave(w)
			return nil, sqlerr.New("57014", "canceling statement while waiting for a connection to cluster %s", p.cluster)
		}
	}
}

// wake wakes the Acquire that has waited longest, if any, and every
// LeasePairAs waiting for a connection to come free (pair.go). p.mu is held.
func (p *Pool) wake() {
	if p.freed != nil {
		close(p.freed)
		p.freed = nil
	}
	if len(p.waiters) == 0 {
		return
	}
	w := p.waiters[0].ch
	p.waiters[0] = waiter{}
	p.waiters = p.waiters[1:]
	w <- struct{}{} // never blocks: w has room for the one send it gets
}

// leave takes a waiter that stops waiting (timeout, cancel) out of the
// queue. One that was woken meanwhile passes the wake-up on, so that it
// is not lost.
func (p *Pool) leave(w chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, x := range p.waiters {
		if x.ch == w {
			p.waiters = append(p.waiters[:i], p.waiters[i+1:]...)
			return
		}
	}
	p.wake()
}

// Release takes a connection back. A broken one, or one left inside a
// transaction, is closed instead of reused.
func (p *Pool) Release(b *Conn) {
	if b == nil {
		return
	}
	if !b.cancelMu.TryLock() {
		// A cancel for its last statement is being delivered: it goes back
		// once the backend has it, without holding up the caller.
		go func() {
			b.cancelMu.Lock()
			b.cancelMu.Unlock()
			p.release(b)
		}()
		return
	}
	b.cancelMu.Unlock()
	p.release(b)
}

func (p *Pool) release(b *Conn) {
	p.mu.Lock()
	if b.pooled.Load() {
		// Released twice: a second copy in the idle list would lend one
		// connection to two sessions at once. Ignore it.
		p.misuses++
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	if b.Broken || b.TxStatus != 'I' || !b.resetUnseen() {
		p.discard(b)
		return
	}
	b.idleSince = time.Now()
	b.Notifications = nil
	b.client.Store(0)
	p.mu.Lock()
	if p.closed || p.open > p.size || p.overUserSize(b.user) || b.gen != p.gen {
		// Closed, shrunk by Resize or moved to another host by a
		// failover while this one was lent.
		p.mu.Unlock()
		p.discard(b)
		return
	}
	b.pooled.Store(true)
	p.idle = append(p.idle, b)
	p.wake()
	p.mu.Unlock()
}

// resetUnseen resets the settings of a connection that ran code the
// proxy cannot see into and comes back unchecked (SettingsUnseen): they
// may be another client's. Its settings are then unknown (SettingsKey
// ""), so the next session replays its own. false: the reset failed, the
// connection must go.
func (b *Conn) resetUnseen() bool {
	if !b.SettingsUnseen {
		return true
	}
	b.SettingsUnseen = false
	b.SettingsKey = ""
	return b.SimpleExec(ResetSettingsSQL, nil) == nil && b.TxStatus == 'I'
}

// ResetSettingsSQL returns a connection's settings to its defaults: RESET
// ALL resets neither session authorization nor role.
const ResetSettingsSQL = "RESET SESSION AUTHORIZATION;RESET ROLE;RESET ALL"

// Misuses counts the Releases of a connection already back in the pool
// and the uses of one (Send, Flush, Read): each is a bug of the caller,
// made harmless (ErrReleased).
func (p *Pool) Misuses() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.misuses
}

// ErrReleased is the error of a connection used after it was given back.
var ErrReleased = sqlerr.New("XX000", "internal error in shardgate: a backend connection was used after it was given back to its pool")

func (p *Pool) usedWhilePooled() error {
	p.mu.Lock()
	p.misuses++
	p.mu.Unlock()
	return ErrReleased
}

// Resize sets the number of connections the pool may open (10 if not
// positive). Growing wakes as many waiters as it adds slots; shrinking
// closes idle connections above the new size at once, and the others as
// they come back.
func (p *Pool) Resize(size int) {
	if size <= 0 {
		size = 10
	}
	p.mu.Lock()
	for i := p.size; i < size; i++ {
		p.wake()
	}
	p.size = size
	var drop []*Conn
	for p.open > p.size && len(p.idle) > 0 {
		drop = append(drop, p.idle[0]) // the longest idle first
		p.idle = p.idle[1:]
		p.opened(drop[len(drop)-1].user, -1)
	}
	p.mu.Unlock()
	for _, b := range drop {
		b.close()
	}
}

// discard closes a connection for good, freeing its slot.
func (p *Pool) discard(b *Conn) {
	b.close()
	p.mu.Lock()
	p.opened(b.user, -1)
	p.suspect = p.suspect || b.Broken
	p.wake()
	p.mu.Unlock()
}

// ReapIdle closes connections idle for longer than the idle timeout (a
// client role's after RoleIdleTimeout when there is none).
func (p *Pool) ReapIdle() {
	p.mu.Lock()
	// A client role's connections are reaped after RoleIdleTimeout when
	// the pool keeps its idle connections (users.go).
	cut, roleCut := time.Now().Add(-p.idleTimeout), time.Now().Add(-RoleIdleTimeout)
	if p.idleTimeout > 0 {
		roleCut = cut
	}
	keep := p.idle[:0]
	var drop []*Conn
	for _, b := range p.idle {
		if b.user != "" && b.idleSince.Before(roleCut) || b.user == "" && p.idleTimeout > 0 && b.idleSince.Before(cut) {
			drop = append(drop, b)
			p.opened(b.user, -1)
		} else {
			keep = append(keep, b)
		}
	}
	p.idle = keep
	p.mu.Unlock()
	for _, b := range drop {
		b.close()
	}
}

// Close closes the idle connections and makes Acquire fail, waiting ones
// included; connections still lent are closed when they come back.
func (p *Pool) Close() {
	p.mu.Lock()
	p.closed = true
	if p.paused {
		p.paused = false
		close(p.resumed) // held Acquires fail: the pool is closed
	}
	idle := p.takeAllIdle()
	for len(p.waiters) > 0 {
		p.wake() // they fail at once: the pool is closed
	}
	p.mu.Unlock()
	for _, b := range idle {
		b.close()
	}
}

// takeAllIdle empties the idle list, freeing the slots; the caller
// closes the connections returned (p.mu held).
func (p *Pool) takeAllIdle() []*Conn {
	idle := p.idle
	p.idle = nil
	for _, b := range idle {
		p.opened(b.user, -1)
	}
	return idle
}

// Stats reports open and idle counts, for metrics and tests.
func (p *Pool) Stats() (open, idle int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.open, len(p.idle)
}

// Lease lends a connection for client (its process ID) with the session
// settings replayed by settings (SQL; "" for none). The caller owns it
// until Release.
func (p *Pool) Lease(client uint32, settings string) (*Conn, error) {
	return p.leaseAs(nil, client, settings, Login{}) // the DSN's user, no stop
}

// Borrow is Acquire with the function that gives the connection back.
func (p *Pool) Borrow(ctx context.Context) (*Conn, func(), error) {
	b, err := p.Acquire(ctx)
	if err != nil {
		return nil, nil, err
	}
	return b, func() { p.Release(b) }, nil
}

// Warm opens connections, at once and concurrently, until the pool holds
// at least n (at most its size), and leaves them idle: the statements a
// switch releases onto this cluster then find connections instead of
// dialing them one by one. A dial failure ends the warming quietly (the
// statements dial and report it).
func (p *Pool) Warm(n int) {
	p.mu.Lock()
	n = min(n, p.size)
	p.mu.Unlock()
	// n leases at once: the idle connections first, dials for the rest.
	conns := make([]*Conn, max(n, 0))
	var wg sync.WaitGroup
	for i := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conns[i], _ = p.TryAcquire()
		}()
	}
	wg.Wait()
	for _, c := range conns {
		p.Release(c)
	}
}
