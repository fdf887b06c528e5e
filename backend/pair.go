package backend

import (
	"context"
	"time"

	"github.com/shardgate/shardgate/sqlerr"
)

// A statement that needs two connections to one cluster at once (a write
// whose source is read over intermediate results on a connection outside
// the two-phase transaction, which writes there too) takes them together:
// holding one while waiting for the other, N such statements on a pool
// of N would each hold one and wait for each other until max_wait.

// LeasePairAs leases two connections of the pool for client (LeaseAs's
// settings on the second; the first is returned as acquired, for the
// caller's own set-up, SetClient done). It never holds one while waiting:
// it takes a connection and tries for a second without waiting; with
// none free it gives the first back and waits for a connection to come
// free, up to max_wait in all (then 53300, as an exhausted pool answers).
// One LeasePairAs of the pool at a time, so that two of them never hold
// one each. A pool smaller than two connections (for the role) is
// refused at once: the statement would wait for itself.
func (p *Pool) LeasePairAs(stop <-chan struct{}, client uint32, settings string, login Login) (first, second *Conn, err error) {
	p.mu.Lock()
	size := p.size
	if p.userSize > 0 && p.userSize < size {
		size = p.userSize
	}
	deadline := time.Now().Add(p.maxWait)
	p.mu.Unlock()
	select { // a value already in stop was meant for an earlier wait
	case <-stop:
	default:
	}
	if size < 2 {
		return nil, nil, sqlerr.New("53300", "this statement needs two connections to cluster %s at once, and its pool has %d", p.cluster, size).
			WithHint("Raise proxy.pool.size.")
	}
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	select {
	case p.pair <- struct{}{}:
	case <-timer.C:
		return nil, nil, p.exhaustedFor(login.User)
	case <-stop:
		return nil, nil, sqlerr.New("57014", "canceling statement while waiting for a connection to cluster %s", p.cluster)
	}
	defer func() { <-p.pair }()
	for {
		first, err = p.acquireBy(context.Background(), stop, login, deadline)
		if err != nil {
			return nil, nil, err
		}
		first.SetClient(client)
		second, err = p.acquireBy(context.Background(), closedStop, login, deadline)
		if err == nil {
			if err := p.lent(second, client, settings); err != nil {
				p.Release(first)
				return nil, nil, err
			}
			return first, second, nil
		}
		p.Release(first)
		if sqlerr.Code(err) != "57014" { // a dial failed: not a wait
			return nil, nil, err
		}
		p.mu.Lock()
		if p.freed == nil {
			p.freed = make(chan struct{})
		}
		freed := p.freed
		p.mu.Unlock()
		// A connection that came free between the Release and here woke
		// nobody: the wait is cut short to look again.
		retry := time.NewTimer(50 * time.Millisecond)
		select {
		case <-freed:
		case <-retry.C:
		case <-timer.C:
			retry.Stop()
			return nil, nil, p.exhaustedFor(login.User)
		case <-stop:
			retry.Stop()
			return nil, nil, sqlerr.New("57014", "canceling statement while waiting for a connection to cluster %s", p.cluster)
		}
		retry.Stop()
	}
}

// exhaustedFor is exhausted, taking p.mu.
func (p *Pool) exhaustedFor(user string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exhausted(user)
}
