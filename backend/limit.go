package backend

import (
	"errors"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/shardgate/shardgate/sqlerr"
)

// ClusterLimit bounds the connections that several pools of one cluster
// (one per user) open together. A pool that would open one more past the
// limit first closes an idle connection of another of the cluster's pools,
// the longest idle; if none is idle it waits for a slot, as long as its
// max_wait, then gets 53300. Nil is no limit. Safe for concurrent use.
type ClusterLimit struct {
	mu    sync.Mutex
	max   int
	open  int
	pools map[*Pool]struct{}
	freed chan struct{} // closed (and replaced) whenever a slot is freed
}

// NewClusterLimit bounds a cluster's connections to max (no bound if not
// positive).
func NewClusterLimit(max int) *ClusterLimit {
	return &ClusterLimit{max: max, pools: map[*Pool]struct{}{}, freed: make(chan struct{})}
}

// SetMax changes the bound (a reload); connections above it close as
// they come back idle and are reaped.
func (l *ClusterLimit) SetMax(max int) {
	l.mu.Lock()
	l.max = max
	l.mu.Unlock()
	l.give(0)
}

// Open is how many connections the cluster's pools hold together.
func (l *ClusterLimit) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open
}

// Limit makes p one of the pools the limit bounds together.
func (p *Pool) Limit(l *ClusterLimit) {
	l.mu.Lock()
	l.pools[p] = struct{}{}
	l.mu.Unlock()
	p.mu.Lock()
	p.limit = l
	p.mu.Unlock()
}

// take reserves a slot for a dial; when none is free it returns the
// channel closed when one is.
func (l *ClusterLimit) take() (bool, <-chan struct{}) {
	if l == nil {
		return true, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.max > 0 && l.open >= l.max {
		return false, l.freed
	}
	l.open++
	return true, nil
}

// give frees n slots.
func (l *ClusterLimit) give(n int) {
	if l == nil {
		return
	}
	l.mu.Lock()
	l.open -= n
	close(l.freed)
	l.freed = make(chan struct{})
	l.mu.Unlock()
}

func (l *ClusterLimit) remove(p *Pool) {
	if l == nil {
		return
	}
	l.mu.Lock()
	delete(l.pools, p)
	l.mu.Unlock()
}

// waitForSlot makes room for p's dial: it closes the longest-idle
// connection of another pool, or waits for a slot until deadline (53300)
// or stop (57014).
func (l *ClusterLimit) waitForSlot(p *Pool, deadline time.Time, freed <-chan struct{}, stop <-chan struct{}) error {
	if l.closeIdle(p) {
		return nil
	}
	wait := time.Until(deadline)
	if wait <= 0 {
		l.mu.Lock()
		max := l.max
		l.mu.Unlock()
		p.mu.Lock()
		maxWait := p.maxWait
		p.mu.Unlock()
		return sqlerr.New("53300", "too many connections: the pools of cluster %s hold its limit of %d connections (proxy.pool.cluster_size) and none came free for %s", p.cluster, max, maxWait)
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-freed:
	case <-t.C:
	case <-stop:
		return sqlerr.New("57014", "canceling statement while waiting for a connection to cluster %s", p.cluster)
	}
	return nil
}

// closeIdle closes the longest-idle connection of the cluster's pools
// other than p, if any is idle.
func (l *ClusterLimit) closeIdle(p *Pool) bool {
	l.mu.Lock()
	others := make([]*Pool, 0, len(l.pools))
	for o := range l.pools {
		if o != p {
			others = append(others, o)
		}
	}
	l.mu.Unlock()
	var victim *Pool
	var since time.Time
	for _, o := range others {
		o.mu.Lock()
		if len(o.idle) > 0 && (victim == nil || o.idle[0].idleSince.Before(since)) {
			victim, since = o, o.idle[0].idleSince
		}
		o.mu.Unlock()
	}
	if victim == nil {
		return false
	}
	victim.mu.Lock()
	if len(victim.idle) == 0 {
		victim.mu.Unlock()
		return false
	}
	b := victim.idle[0]
	victim.idle = victim.idle[1:]
	victim.open--
	victim.mu.Unlock()
	b.close()
	l.give(1)
	return true
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
