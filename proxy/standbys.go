package proxy

import (
	"context"
	"slices"
	"time"

	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/stats"
	"github.com/shardgate/shardgate/topology"
)

// installReplicas gives r the standbys of topo's clusters: a cluster
// whose primary pool, standbys and max_lag did not change keeps its
// ReplicaSet (pools and checker); the others get new ones, standby pools
// of an unchanged DSN kept. What the old routing had and r does not is
// returned, to be stopped once r is in force.
func (s *Server) installReplicas(old, r *routing, topo *topology.Topology) (stale []*backend.ReplicaSet, closed []*backend.Pool) {
	r.replicas = map[string]*backend.ReplicaSet{}
	var oldSets map[string]*backend.ReplicaSet
	if old != nil {
		oldSets = old.replicas
	}
	kept := map[*backend.Pool]bool{}
	for _, c := range topo.Clusters {
		if len(c.Replicas) == 0 {
			continue
		}
		o := oldSets[c.Name]
		if o != nil && o.Primary() == r.pools[c.Name] && sameStandbys(o, c) {
			for _, sb := range o.Standbys() {
				sb.Pool.Resize(r.poolSize)
			}
			r.replicas[c.Name] = o
			continue
		}
		var cfgs []backend.StandbyConfig
		for _, rep := range c.Replicas {
			p := reusablePool(o, rep.DSN)
			if p != nil {
				p.Resize(r.poolSize)
				kept[p] = true
			} else {
				p = backend.NewPool(c.Name, rep.DSN, r.poolSize, s.cfg.MaxWait, s.cfg.ConnectTimeout, s.cfg.IdleTimeout)
				p.Count(s.metrics.Pool(c.Name), s.log)
				p.SetUserSize(s.cfg.UserSize)
			}
			cfgs = append(cfgs, backend.StandbyConfig{Pool: p, Zone: rep.Zone, Priority: rep.Priority})
		}
		rs := backend.NewReplicaSet(c.Name, r.pools[c.Name], cfgs, c.MaxLag.Time, c.MaxLag.Bytes, s.log)
		rs.SetFailover(c.FailoverBuffer, s.primaryRecord(r))
		if err := rs.Follow(context.Background()); err != nil && s.log != nil {
			s.log.Warn("failover: could not read main's record of the primaries", "cluster", c.Name, "err", err)
		}
		rs.Start()
		r.replicas[c.Name] = rs
	}
	for name, o := range oldSets {
		if r.replicas[name] == o {
			continue
		}
		stale = append(stale, o)
		for _, sb := range o.Standbys() {
			if !kept[sb.Pool] {
				closed = append(closed, sb.Pool)
			}
		}
	}
	return stale, closed
}

// primaryRecord is main's record of the clusters' primaries (one
// connection to main, shared by the clusters' checkers), made anew when
// main's DSN changes.
func (s *Server) primaryRecord(r *routing) *backend.PrimaryRecord {
	dsn := r.topo.Cluster(r.vs.Main().Clusters[0]).DSN
	s.recordMu.Lock()
	defer s.recordMu.Unlock()
	if s.record == nil || s.record.DSN != dsn {
		if s.record != nil {
			s.record.Close()
		}
		s.record = &backend.PrimaryRecord{DSN: dsn}
	}
	return s.record
}

// sameStandbys reports whether rs serves exactly c's replicas and max_lag.
func sameStandbys(rs *backend.ReplicaSet, c *topology.Cluster) bool {
	lag, bytes := rs.MaxLag()
	if lag != c.MaxLag.Time || bytes != c.MaxLag.Bytes || rs.Buffer() != c.FailoverBuffer || len(rs.Standbys()) != len(c.Replicas) {
		return false
	}
	for i, sb := range rs.Standbys() {
		rep := c.Replicas[i]
		if sb.Pool.DSN() != rep.DSN || sb.Zone != rep.Zone || sb.Priority != rep.Priority {
			return false
		}
	}
	return true
}

// reusablePool is rs's standby pool for dsn, if any.
func reusablePool(rs *backend.ReplicaSet, dsn string) *backend.Pool {
	if rs == nil {
		return nil
	}
	i := slices.IndexFunc(rs.Standbys(), func(sb *backend.Standby) bool { return sb.Pool.DSN() == dsn })
	if i < 0 {
		return nil
	}
	return rs.Standbys()[i].Pool
}

// standbyPools are every standby pool of r.
func (r *routing) standbyPools() []*backend.Pool {
	var out []*backend.Pool
	for _, rs := range r.replicas {
		for _, sb := range rs.Standbys() {
			out = append(out, sb.Pool)
		}
	}
	return out
}

// allPools are r's primary pools and its standby pools.
func (r *routing) allPools() []*backend.Pool {
	out := r.standbyPools()
	for _, p := range r.pools {
		out = append(out, p)
	}
	return out
}

// hostSamples are the health of every host of the clusters with
// standbys, for /metrics.
func (s *Server) hostSamples() []stats.HostSample {
	r := s.cur.Load()
	if r == nil {
		return nil
	}
	var out []stats.HostSample
	now := time.Now()
	for _, c := range r.topo.Clusters {
		rs := r.replicas[c.Name]
		if rs == nil {
			continue
		}
		sample := func(host string, st backend.HostState) stats.HostSample {
			return stats.HostSample{Cluster: c.Name, Host: host, Role: st.Role, Up: st.Up, Banned: now.Before(st.BannedUntil),
				Bans: st.Bans, LagKnown: st.LagKnown, LagBytes: st.LagBytes, LagSeconds: st.Lag.Seconds()}
		}
		primary := sample(rs.Primary().Host(), rs.PrimaryState())
		f := rs.FailoverState()
		primary.Epoch = f.Epoch
		out = append(out, primary)
		for _, h := range f.Fenced {
			out = append(out, stats.HostSample{Cluster: c.Name, Host: h, Role: "fenced", Fenced: true})
		}
		for _, sb := range rs.Standbys() {
			out = append(out, sample(sb.Pool.Host(), sb.State()))
		}
	}
	return out
}
