package backend

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Statements the proxy prepares on backend connections serve one client
// statement each (the key in Conn.Prepared names it). When the client
// closes its statement, the copies on every connection of the cluster are
// dead: Pool.Forget records their keys in a log, and each connection
// closes its own the next time it is used (Conn.Forgotten), so nothing
// lent to another session is touched.

// forgetLogLen bounds the log. A connection more than this many keys
// behind (idle while many statements were closed) closes every statement
// it has: they are prepared again when needed.
const forgetLogLen = 1024

type forgetLog struct {
	n    atomic.Int64 // keys logged since the pool opened
	mu   sync.Mutex
	keys [forgetLogLen]string // the i-th key logged is keys[i%forgetLogLen]
}

// Forget logs that the statements prepared under keys serve no one any
// more.
func (p *Pool) Forget(keys ...string) {
	if len(keys) == 0 {
		return
	}
	f := &p.forget
	f.mu.Lock()
	n := f.n.Load()
	for _, k := range keys {
		f.keys[n%forgetLogLen] = k
		n++
	}
	f.n.Store(n)
	f.mu.Unlock()
}

// Forgotten removes from b.Prepared the statements forgotten since b last
// asked and returns their names on b, for the caller to close (nil, with
// no allocation, when there are none).
func (b *Conn) Forgotten() []string {
	f := &b.pool.forget
	if f.n.Load() == b.forgetSeen {
		return nil
	}
	f.mu.Lock()
	n := f.n.Load()
	var dead map[string]bool
	if n-b.forgetSeen > forgetLogLen {
		dead = make(map[string]bool, len(b.Prepared))
		for _, name := range b.Prepared {
			dead[name] = true
		}
	} else {
		for i := b.forgetSeen; i < n; i++ {
			if name, ok := b.Prepared[f.keys[i%forgetLogLen]]; ok {
				if dead == nil {
					dead = map[string]bool{}
				}
				dead[name] = true
			}
		}
	}
	f.mu.Unlock()
	b.forgetSeen = n
	if len(dead) == 0 {
		return nil
	}
	// A statement may be known under more than one key (its parameter
	// types learnt later): drop every key of a dead name.
	for k, name := range b.Prepared {
		if dead[name] {
			delete(b.Prepared, k)
		}
	}
	names := make([]string, 0, len(dead))
	for name := range dead {
		names = append(names, name)
	}
	return names
}

// EvictOldest removes the oldest statement the proxy prepared on b (named
// "sg" and a number, the lowest) from b.Prepared and returns its name, for
// the caller to close.
func (b *Conn) EvictOldest() string {
	oldest, low := "", -1
	for _, name := range b.Prepared {
		if n, err := strconv.Atoi(strings.TrimPrefix(name, "sg")); err == nil && (low < 0 || n < low) {
			oldest, low = name, n
		}
	}
	for k, v := range b.Prepared {
		if v == oldest {
			delete(b.Prepared, k)
		}
	}
	return oldest
}
