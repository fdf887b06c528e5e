package proxy

import (
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
// stats), and logs it when slower than proxy.log.slow_statement.
func (ss *session) observe(r *routing, plan *planner.Plan, n int, cluster func(int) string, start time.Time, err error) {
	d, kind := time.Since(start), plan.RouteKind(n)
	ss.srv.metrics.Statement(plan.GroupName(), int(kind), d, err != nil)
	ss.srv.metrics.ClusterStatements(n, cluster, int(kind), d, err != nil)
	if slow := r.topo.Proxy.Log.SlowStatement; slow > 0 && d >= slow {
		ss.srv.log.Warn("slow statement", "client_id", ss.pid, "user", ss.user, "duration", d, "route", kind.String(),
			"group", plan.GroupName(), "clusters", n, "statement", planner.Redact(plan.SQL))
	}
}

// refused logs a statement the planner refused, without its values.
func (ss *session) refused(sql string, err error) error {
	ss.srv.log.Info("statement refused", "client_id", ss.pid, "user", ss.user, "sqlstate", sqlerr.Code(err),
		"statement", planner.Redact(sql))
	return err
}
