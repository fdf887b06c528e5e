package proxy

import (
	"math/rand/v2"
	"time"

	"github.com/shardgate/shardgate/admin"
	"github.com/shardgate/shardgate/auth"
	"github.com/shardgate/shardgate/planner"
	"github.com/shardgate/shardgate/sqlerr"
	"github.com/shardgate/shardgate/stats"
	"github.com/shardgate/shardgate/topology"
)

// adminSource is the server as the admin console (package admin) reads it.
type adminSource struct{ s *Server }

func (a adminSource) Routing() admin.Routing {
	r := a.s.cur.Load()
	return admin.Routing{Topology: r.topo, Pools: r.pools, Replicas: r.replicas, Planner: r.planner, Revision: r.rev, File: a.s.cfg.TopologyFile}
}

func (a adminSource) Clients() *admin.Registry { return &a.s.clients }
func (a adminSource) Metrics() *stats.Metrics  { return a.s.metrics }
func (s *Server) Metrics() *stats.Metrics      { return s.metrics }
func (a adminSource) Reload(t *topology.Topology) error {
	if a.s.cfg.Reload != nil {
		return a.s.cfg.Reload(t)
	}
	return a.s.Reload(t)
}

// serveAdmin runs the admin console for an authenticated session that
// asked for database shardgate: admin users only.
func (ss *session) serveAdmin() error {
	if !ss.srv.auth.Load().IsAdmin(ss.user) {
		return sqlerr.New("28000", "user %q may not open the admin console (proxy.auth.users: admin: true)", ss.user)
	}
	if ss.srv.auth.Load().Method() == auth.Trust {
		ss.srv.log.Warn("admin console opened without a password (proxy.auth.method is trust)", "user", ss.user, "remote", ss.conn.RemoteAddr().String())
	}
	_ = ss.conn.SetDeadline(time.Time{})
	if err := ss.out.Flush(); err == nil {
		_ = admin.Serve(adminSource{ss.srv}, ss.rd, ss.conn, ss.srv.log, ss.user)
	}
	return errQuietClose
}

// observe counts a statement that ran on n targets, on cluster(i) (package
// stats), adds it to its fingerprint's statistics (SHOW QUERIES), and logs
// it when slower than proxy.log.slow_statement or sampled by
// proxy.log.sample_statements.
func (ss *session) observe(r *routing, plan *planner.Plan, n int, cluster func(int) string, start time.Time, err error) {
	now := time.Now()
	d, kind := now.Sub(start), plan.RouteKind(n)
	ss.srv.metrics.Statement(plan.GroupName(), int(kind), d, err != nil)
	ss.srv.metrics.ClusterStatements(n, cluster, int(kind), d, err != nil)
	// What the client was sent since the last statement counted, and the
	// pool waits since, are this statement's.
	rows, wait := ss.enc.TagRows-ss.rowsMark, ss.poolWait
	ss.rowsMark, ss.poolWait = ss.enc.TagRows, 0
	q := ss.srv.queryStatsOf(plan)
	if q != nil {
		q.Observe(stats.Call{Duration: d, Shards: n, Rows: rows, PoolWait: wait, Route: int(kind), SQLState: sqlerr.Code(err), Now: now})
	}
	if slow := r.topo.Proxy.Log.SlowStatement; slow > 0 && d >= slow {
		ss.srv.log.Warn("slow statement", "client_id", ss.pid, "user", ss.user, "duration", d, "route", kind.String(),
			"group", plan.GroupName(), "clusters", n, "statement", planner.Redact(plan.SQL))
	}
	if share := r.topo.Proxy.Log.SampleStatements; share > 0 && rand.Float64() < share {
		ss.logSampled(plan, q, d, kind, n, rows, err)
	}
}

// logSampled logs one statement proxy.log.sample_statements picked: no
// literal value, its fingerprint only.
func (ss *session) logSampled(plan *planner.Plan, q *stats.Query, d time.Duration, kind planner.RouteKind, n int, rows int64, err error) {
	text, id := "", ""
	if q != nil {
		text, id = q.Text, q.ID
	} else {
		text = planner.Fingerprint(plan.SQL)
	}
	ss.srv.log.Info("statement", "client_id", ss.pid, "user", ss.user, "duration", d, "route", kind.String(),
		"group", plan.GroupName(), "shards", n, "rows", rows, "sqlstate", sqlerr.Code(err), "fingerprint_id", id, "fingerprint", text)
}

// queryStatsOf is the statistics entry of plan's fingerprint: the one the
// plan keeps, looked up (and kept) the first time and again after an
// eviction or RESET QUERIES; nil with statistics off.
func (s *Server) queryStatsOf(plan *planner.Plan) *stats.Query {
	if s.queries == nil || plan.Kind == planner.Empty {
		return nil
	}
	if q := plan.QueryStats(); q != nil && q.Live() {
		return q
	}
	q := s.queries.Get(planner.Fingerprint(plan.SQL))
	plan.SetQueryStats(q)
	return q
}

// refused logs a statement the planner refused, without its values.
func (ss *session) refused(sql string, err error) error {
	ss.srv.log.Info("statement refused", "client_id", ss.pid, "user", ss.user, "sqlstate", sqlerr.Code(err),
		"statement", planner.Redact(sql))
	return err
}

// Readiness probes the clusters for /readyz (admin.CheckReady): not ready
// while draining or with a cluster down.
func (s *Server) Readiness() admin.Readiness {
	return admin.CheckReady(adminSource{s}, s.draining.Load())
}
