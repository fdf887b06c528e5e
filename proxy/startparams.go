package proxy

import (
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/sqlerr"
)

// Start-up needs no pooled backend (as pgbouncer's): the ParameterStatus
// set a session reports at start-up (server_version, encodings, DateStyle,
// IntervalStyle, TimeZone, integer_datetimes, standard_conforming_strings,
// application_name, ...) is what main's backend reports under the
// session's settings, and it is cached per settings key, read from main's
// pool. A key seen before is answered from the cache, so a client connects
// at once however busy the pool, and waits for a connection only at its
// first statement. A key not seen before is probed on a main connection
// when one is free at once (which also checks the start-up parameters, as
// Postgres does); when the pool is exhausted the set is another key's with
// the client's start-up values for the parameters it set, as pgbouncer
// reports them, and a bad value is the first statement's error instead of
// start-up's. An entry older than paramsFresh is probed again when a
// connection is free (a restarted main may run another server_version);
// a reload that replaces main's pool starts an empty cache.

// paramsFresh is how long a cached ParameterStatus set is used without
// asking main again (when a connection is free at once).
const paramsFresh = time.Minute

// maxParamSets bounds the settings keys cached; past it an arbitrary
// entry makes room.
const maxParamSets = 1024

// paramCache is the server's cache of start-up ParameterStatus sets.
type paramCache struct {
	mu    sync.Mutex
	pool  *backend.Pool // main's pool the entries were read from
	byKey map[string]paramSet
}

type paramSet struct {
	params map[string]string // read only
	at     time.Time
}

// get returns the set cached for key, whether it is fresh, and any set
// (another key's) to derive one from; all for pool.
func (c *paramCache) get(pool *backend.Pool, key string) (hit map[string]string, fresh bool, other map[string]string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pool != pool {
		c.pool, c.byKey = pool, nil
	}
	if e, ok := c.byKey[key]; ok {
		return e.params, time.Since(e.at) < paramsFresh, e.params
	}
	for _, e := range c.byKey {
		return nil, false, e.params
	}
	return nil, false, nil
}

func (c *paramCache) put(pool *backend.Pool, key string, params map[string]string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pool != pool {
		c.pool, c.byKey = pool, nil
	}
	if c.byKey == nil {
		c.byKey = map[string]paramSet{}
	}
	if _, ok := c.byKey[key]; !ok && len(c.byKey) >= maxParamSets {
		for k := range c.byKey {
			delete(c.byKey, k)
			break
		}
	}
	c.byKey[key] = paramSet{params: params, at: time.Now()}
}

// startupParams is the ParameterStatus set the session reports at
// start-up (see above).
func (ss *session) startupParams() (map[string]string, error) {
	r := ss.srv.cur.Load()
	pool := r.pools[r.vs.Main().Clusters[0]]
	if pool == nil {
		return ss.probeParams()
	}
	cache := &ss.srv.startParams
	hit, fresh, other := cache.get(pool, ss.settingsKey)
	if hit != nil && fresh {
		return hit, nil
	}
	// With something to answer with, only a connection free at once.
	ss.noWait = hit != nil || other != nil
	params, err := ss.probeParams()
	ss.noWait = false
	switch {
	case err == nil:
		cache.put(pool, ss.settingsKey, params)
		return params, nil
	case !errBusy(err):
		return nil, err
	case hit != nil:
		return hit, nil
	}
	return ss.derivedParams(other), nil
}

// errBusy reports the error of a pool that had no connection free at
// once (TryAcquire's 57014).
func errBusy(err error) bool { return sqlerr.Code(err) == "57014" }

// derivedParams is another settings key's set with the client's start-up
// values for the parameters it set (names match whatever their case).
func (ss *session) derivedParams(base map[string]string) map[string]string {
	out := maps.Clone(base)
	for k := range out {
		for name, v := range ss.startup {
			if strings.EqualFold(name, k) {
				out[k] = v
			}
		}
	}
	return out
}
