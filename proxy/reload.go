package proxy

import (
	"fmt"
	"slices"
	"time"

	"github.com/shardgate/shardgate/auth"
	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/gsi"
	"github.com/shardgate/shardgate/topology"
	"github.com/shardgate/shardgate/vschema"
)

// liveConfig are the proxy settings a reload can change, read by sessions at the moment they need them.
type liveConfig struct {
	maxWait, connectTimeout, queryTimeout time.Duration
	commit                                CommitMode
	identity                              Identity // for new sessions (identity.go)
}

// applyProxy makes the changed, live settings of topo's proxy: section
// the ones in force: only keys the reload plan lists as changed, so a
// server configured in code keeps its settings across reloads of a file that does not mention them.
func (s *Server) applyProxy(plan *topology.ReloadPlan, topo *topology.Topology) error {
	changed := plan.AppliedKeys()
	p := &topo.Proxy
	if changed["proxy.auth.method"] || changed["proxy.auth.users"] || changed["proxy.auth.query"] {
		a, err := s.newAuthenticator(auth.Method(p.Auth.Method), p.Auth.AuthUsers(), p.Auth.Query)
		if err != nil {
			return fmt.Errorf("proxy.auth: %w", err)
		}
		warnAuth(s.log, a, " after reload")
		s.auth.Store(a)
	}
	live := *s.live.Load()
	if changed["proxy.pool.max_wait"] {
		live.maxWait = p.Pool.MaxWait
	}
	if changed["proxy.timeouts.connect"] {
		live.connectTimeout = p.Timeouts.Connect
	}
	if changed["proxy.timeouts.query"] {
		live.queryTimeout = p.Timeouts.Query
	}
	if changed["proxy.commit"] {
		live.commit = CommitMode(p.Commit)
	}
	if changed["proxy.auth.identity"] {
		live.identity = Identity(p.Auth.Identity)
		warnIdentity(s.log, live.identity, auth.Method(p.Auth.Method))
	}
	if changed["proxy.pool.user_size"] {
		for _, pl := range s.cur.Load().allPools() {
			pl.SetUserSize(p.Pool.UserSize)
		}
	}
	s.live.Store(&live)
	if changed["proxy.pool.max_wait"] || changed["proxy.pool.idle_timeout"] || changed["proxy.timeouts.connect"] {
		for _, pl := range s.cur.Load().allPools() {
			pl.SetTimeouts(live.maxWait, live.connectTimeout, p.Pool.IdleTimeout)
		}
	}
	return nil
}

// checkTimeout bounds one empty-table check of a reload.
const checkTimeout = 10 * time.Second

func (s *Server) reload(topo *topology.Topology) error {
	vs, err := vschema.Build(topo)
	if err != nil {
		return err
	}
	old := s.cur.Load()
	plan := topology.Diff(old.topo, topo)
	if err := plan.Verify(s.tableHasRows(old.topo)); err != nil {
		s.log.Error("topology reload refused: cannot check that no rows move", "err", err)
		return err
	}
	plan.RestartUnlessLive(topology.LiveProxyKeys)
	if err := plan.Err(); err != nil {
		for _, c := range plan.Refused() {
			s.log.Error("topology change refused", "change", c.Message, "key", c.Key)
		}
		return err
	}
	poolSize := old.poolSize
	if old.topo.Proxy.Pool.Size != topo.Proxy.Pool.Size {
		poolSize = topo.Proxy.Pool.Size
	}
	served := old.tls
	if served != nil && old.topo.Proxy.TLS != nil && topo.Proxy.TLS != nil {
		// Re-read even when the paths did not change: a renewed
		// certificate is usually written over the old files.
		if served, err = topo.Proxy.TLS.Load(); err != nil {
			s.log.Error("topology reload refused: cannot load the TLS certificate", "err", err)
			return err
		}
	}
	db, err := s.databaseOf(topo, vs)
	if err == nil { // writes maintain an added index from now on: its lookup table must exist
		err = gsi.CreateLookupTables(topo, gsi.Added(old.vs, vs))
	}
	if err != nil {
		return err
	}
	s.install(topo, vs, db, poolSize, served)
	keepCodeCatalog(old, s.cur.Load())
	if err := s.applyProxy(plan, topo); err != nil {
		// Checked by topology validation already; log, keep the rest.
		s.log.Error("proxy settings not applied", "err", err)
	}
	for _, c := range plan.Changes {
		if c.Class == topology.ChangeRestart {
			s.log.Warn("topology change needs a restart", "change", c.Message, "key", c.Key)
		} else {
			s.log.Info("topology change applied", "change", c.Message, "key", c.Key)
		}
	}
	return nil
}

// keepCodeCatalog carries the catalog of relations that run code
// (unseenrel.go) over to a routing that a routing revision changed (its
// overrides differ) over the same pools, with the time its read started
// (it goes stale as before): it was read from the same clusters. Without
// it each statement naming a relation right after the revision — the
// writes a switch releases onto its new routing — would be checked (a
// round trip more) while every cluster reads the catalog again. A reload
// of the file alone (RELOAD) reads it again, as an operator expects after
// DDL run on the clusters directly.
func keepCodeCatalog(old, r *routing) {
	names := old.code.names.Load()
	if names == nil || slices.Equal(old.topo.Overrides, r.topo.Overrides) || len(old.pools) != len(r.pools) {
		return
	}
	for name, p := range r.pools {
		if old.pools[name] != p {
			return
		}
	}
	r.code.readAt.Store(old.code.readAt.Load())
	r.code.names.Store(names)
}

// tableHasRows answers a reload's empty-table checks on the clusters of
// the topology in force (backend.TableHasRows).
func (s *Server) tableHasRows(t *topology.Topology) func(string, topology.QualifiedName) (bool, error) {
	return func(cluster string, table topology.QualifiedName) (bool, error) {
		c := t.Cluster(cluster)
		if c == nil {
			return false, fmt.Errorf("unknown cluster %s", cluster)
		}
		return backend.TableHasRows(c.DSN, table.String(), s.cfg.ConnectTimeout, checkTimeout)
	}
}
