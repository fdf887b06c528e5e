package backend

import (
	"context"
	"time"

	"github.com/shardgate/shardgate/sqlerr"
)

// What the admin console reads of a pool, and PAUSE / RESUME.

// PoolInfo is a snapshot of one pool (SHOW POOLS, SHOW CLUSTERS).
type PoolInfo struct {
	Cluster string
	Size    int
	// UserSize bounds one role's connections (0: only Size).
	UserSize int
	Open     int // connections open or being dialed
	Idle     int
	Active   int // lent to a session
	Waiting  int // Acquires waiting (pool exhausted or paused)
	// MaxWait is how long the longest-waiting Acquire has waited.
	MaxWait time.Duration
	Paused  bool
	// Down: the last dial failed less than a moment ago (statements fail
	// fast); LastError is the last dial failure, at LastErrorAt.
	Down        bool
	LastError   string
	LastErrorAt time.Time
	// Version is the server_version the last connection opened reported.
	Version string
}

// ConnInfo describes one open backend connection (SHOW SERVERS).
type ConnInfo struct {
	Cluster    string
	BackendPID uint32
	Active     bool // lent to a session; false: idle in the pool
	Created    time.Time
	// Client is the id of the client session it serves, 0 if none.
	Client uint32
	// User is the role it is logged in as; "" for the DSN's user.
	User string
}

// Info is a snapshot of the pool.
func (p *Pool) Info() PoolInfo {
	p.mu.Lock()
	defer p.mu.Unlock()
	pi := PoolInfo{Cluster: p.cluster, Size: p.size, UserSize: p.userSize, Open: p.open, Idle: len(p.idle),
		Active: len(p.all) - len(p.idle), Waiting: len(p.waiters) + len(p.held),
		Paused: p.paused, Down: time.Now().Before(p.downUntil), LastErrorAt: p.lastErrAt, Version: p.version}
	if p.lastErr != nil {
		pi.LastError = p.lastErr.Error()
	}
	var oldest time.Time
	if len(p.held) > 0 {
		oldest = p.held[0]
	}
	for _, w := range p.waiters {
		if oldest.IsZero() || w.since.Before(oldest) {
			oldest = w.since
		}
	}
	if !oldest.IsZero() && pi.Waiting > 0 {
		pi.MaxWait = time.Since(oldest)
	}
	return pi
}

// Conns describes the pool's open connections.
func (p *Pool) Conns() []ConnInfo {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]ConnInfo, 0, len(p.all))
	for b := range p.all {
		out = append(out, ConnInfo{Cluster: p.cluster, BackendPID: b.pid, Active: !b.pooled.Load(),
			Created: b.created, Client: b.client.Load(), User: b.user})
	}
	return out
}

// Pause holds every new lease of the pool until Resume, then waits for the
// connections lent out (transactions in flight) to come back, and closes
// the idle ones, so that the cluster can be restarted while clients wait
// instead of failing. When ctx ends first the pause is undone and the
// error is 57014.
func (p *Pool) Pause(ctx context.Context) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return sqlerr.New("08006", "cluster %s: connection pool is closed", p.cluster)
	}
	if !p.paused {
		p.paused, p.resumed = true, make(chan struct{})
	}
	p.mu.Unlock()
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for {
		p.mu.Lock()
		lent := len(p.all) - len(p.idle)
		if lent == 0 && p.open == len(p.idle) {
			idle := p.idle
			p.idle = nil
			for _, b := range idle {
				p.opened(b.user, -1)
			}
			p.mu.Unlock()
			for _, b := range idle {
				b.close()
			}
			return nil
		}
		p.mu.Unlock()
		select {
		case <-ctx.Done():
			p.Resume()
			return sqlerr.New("57014", "PAUSE of cluster %s canceled: %d connections still in use", p.cluster, lent)
		case <-t.C:
		}
	}
}

// Resume ends a Pause: the leases held are served.
func (p *Pool) Resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.paused {
		p.paused = false
		close(p.resumed)
	}
}
