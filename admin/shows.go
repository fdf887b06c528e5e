package admin

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/routestate"
	"github.com/shardgate/shardgate/sqlerr"
	"github.com/shardgate/shardgate/topology"
	"github.com/shardgate/shardgate/twopc"
)

var clientCols = []string{"client_id", "user", "database", "address", "tls", "connected_at", "state", "transaction_age", "prepared_statements"}

func showClients(c *console) ([][]*string, error) {
	clients := c.src.Clients().List()
	sort.Slice(clients, func(i, j int) bool { return clients[i].Since.Before(clients[j].Since) })
	var rows [][]*string
	for _, cl := range clients {
		var txAge *string
		if !cl.TxSince.IsZero() {
			txAge = seconds(time.Since(cl.TxSince))
		}
		rows = append(rows, []*string{num(cl.ID), str(cl.User), str(cl.Database), str(cl.Addr), boolean(cl.TLS),
			timestamp(cl.Since), str(cl.State), txAge, num(cl.Prepared)})
	}
	return rows, nil
}

var serverCols = []string{"cluster", "backend_pid", "state", "age", "client_id", "user", "host", "role"}

func showServers(c *console) ([][]*string, error) {
	var rows [][]*string
	r := c.src.Routing()
	for _, name := range poolNames(c) {
		for _, p := range hostPools(r, name) {
			conns := p.Conns()
			sort.Slice(conns, func(i, j int) bool { return conns[i].Created.Before(conns[j].Created) })
			role := hostRole(p)
			for _, b := range conns {
				state, client := "idle", (*string)(nil)
				if b.Active {
					state = "active"
				}
				if b.Client != 0 {
					client = num(b.Client)
				}
				rows = append(rows, []*string{str(b.Cluster), num(b.BackendPID), str(state), seconds(time.Since(b.Created)), client,
					str(loginUser(p, b.User)), nullable(p.Host()), str(role)})
			}
		}
	}
	return rows, nil
}

// hostPools are a cluster's pools: its primary's, then its standbys'.
func hostPools(r Routing, cluster string) []*backend.Pool {
	out := []*backend.Pool{r.Pools[cluster]}
	if rs := r.Replicas[cluster]; rs != nil {
		for _, sb := range rs.Standbys() {
			out = append(out, sb.Pool)
		}
	}
	return out
}

func hostRole(p *backend.Pool) string {
	if p.IsStandby() {
		return backend.RoleStandby
	}
	return backend.RolePrimary
}

// loginUser is the role a connection of p logged in as user is: the DSN's
// user for "" (the proxy's own work, sessions under identity service).
func loginUser(p *backend.Pool, user string) string {
	if user == "" {
		return backend.DSNUser(p.DSN())
	}
	return user
}

// poolNames are the clusters of the topology in force, in file order.
func poolNames(c *console) []string {
	var out []string
	for _, cl := range c.src.Routing().Topology.Clusters {
		out = append(out, cl.Name)
	}
	return out
}

var poolCols = []string{"cluster", "mode", "size", "open", "active", "idle", "waiting", "max_wait", "paused", "user", "role", "host"}

// showPools answers one row per host of a cluster (its primary, then
// each standby) and role holding connections there (the DSN's user for
// the proxy's own and identity-service sessions), or one row with user
// NULL for a host no role holds any on.
func showPools(c *console) ([][]*string, error) {
	r := c.src.Routing()
	var rows [][]*string
	for _, name := range poolNames(c) {
		for _, p := range hostPools(r, name) {
			rows = append(rows, poolRows(r, name, p)...)
		}
	}
	return rows, nil
}

// poolRows are SHOW POOLS' rows of one host's pool.
func poolRows(r Routing, name string, p *backend.Pool) [][]*string {
	pi := p.Info()
	mode := str(r.Topology.Proxy.Pool.Mode)
	host := []*string{str(hostRole(p)), nullable(p.Host())}
	users := p.Users()
	if len(users) == 0 {
		row := []*string{str(name), mode, num(pi.Size), num(0), num(0), num(0), num(pi.Waiting), seconds(pi.MaxWait), boolean(pi.Paused), nil}
		return [][]*string{append(row, host...)}
	}
	size := pi.Size
	if pi.UserSize > 0 {
		size = min(pi.UserSize, pi.Size)
	}
	var rows [][]*string
	for _, u := range users {
		row := []*string{str(name), mode, num(size), num(u.Open), num(u.Active),
			num(u.Idle), num(pi.Waiting), seconds(pi.MaxWait), boolean(pi.Paused), str(loginUser(p, u.User))}
		rows = append(rows, append(row, host...))
	}
	return rows
}

var clusterCols = []string{"cluster", "dsn", "health", "version", "last_error", "last_error_at", "role", "host", "state", "lag_bytes", "lag", "bans", "epoch", "fenced"}

// probeTimeout bounds one query the console sends a cluster.
const probeTimeout = 3 * time.Second

// showClusters answers a row per host: each cluster's primary, then its
// standbys, with what the health checker saw of them.
func showClusters(c *console) ([][]*string, error) {
	r := c.src.Routing()
	var rows [][]*string
	for _, cl := range r.Topology.Clusters {
		rs := r.Replicas[cl.Name]
		for i, p := range hostPools(r, cl.Name) {
			health := "up"
			if p.Info().Paused {
				health = "paused"
			} else if _, err := query(p, "SELECT 1"); err != nil {
				health = "down"
			}
			pi := p.Info() // after the probe: its version and error
			dsn := cl.DSN
			var st *backend.HostState
			var epoch, fenced *string
			switch {
			case rs != nil && i == 0:
				ps := rs.PrimaryState()
				st = &ps
				f := rs.FailoverState()
				dsn, epoch = p.DSN(), num(f.Epoch)
				if len(f.Fenced) > 0 {
					fenced = str(strings.Join(f.Fenced, ","))
				}
				if f.Held {
					health = "held"
				}
			case rs != nil:
				sb := rs.Standbys()[i-1]
				dsn = sb.Pool.DSN()
				ss := sb.State()
				st = &ss
			}
			row := []*string{str(cl.Name), str(topology.RedactDSN(dsn)), str(health), nullable(pi.Version),
				nullable(pi.LastError), timestamp(pi.LastErrorAt), str(hostRole(p)), nullable(p.Host())}
			row = append(row, hostHealth(st)...)
			rows = append(rows, append(row, epoch, fenced))
		}
	}
	return rows, nil
}

// hostHealth is what SHOW CLUSTERS says of the checker's view of a host:
// state, lag_bytes, lag, bans (NULL for a cluster without standbys,
// which the checker does not watch).
func hostHealth(st *backend.HostState) []*string {
	if st == nil {
		return []*string{nil, nil, nil, nil}
	}
	state := "up"
	switch {
	case !st.Checked:
		state = "unchecked"
	case time.Now().Before(st.BannedUntil):
		state = "banned"
	case !st.Up:
		state = "down"
	case st.Role == backend.RoleStandby && !st.InRecovery:
		state = "promoted"
	case st.Role == backend.RolePrimary && st.InRecovery:
		state = "in_recovery"
	case st.OverLag:
		state = "lagging"
	}
	var lagBytes, lag *string
	if st.LagKnown {
		lagBytes, lag = num(st.LagBytes), seconds(st.Lag)
	}
	return []*string{str(state), lagBytes, lag, num(st.Bans)}
}

// query runs sql on a connection of p, unless p is paused.
func query(p *backend.Pool, sql string) ([][][]byte, error) {
	if p.Info().Paused {
		return nil, sqlerr.New("55000", "cluster %s is paused", p.Cluster())
	}
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	b, err := p.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer b.Release()
	return b.Query(sql)
}

var shardCols = []string{"group", "shard", "cluster", "tables", "rows_estimate"}

// showShards lists every shard with its tables and the planner's row
// estimate (pg_class.reltuples) of those tables on its cluster: shards
// that share a cluster share the estimate; NULL when the cluster cannot
// be asked or has never analyzed the tables.
func showShards(c *console) ([][]*string, error) {
	r := c.src.Routing()
	estimates := map[string]map[string]int64{}
	for _, cl := range r.Topology.Clusters {
		res, err := query(r.Pools[cl.Name], `SELECT n.nspname || '.' || c.relname, c.reltuples::bigint FROM pg_catalog.pg_class c
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind IN ('r', 'p') AND c.reltuples >= 0`)
		if err != nil {
			continue
		}
		m := map[string]int64{}
		for _, row := range res {
			var n int64
			for _, ch := range row[1] {
				n = n*10 + int64(ch-'0')
			}
			m[string(row[0])] = n
		}
		estimates[cl.Name] = m
	}
	var rows [][]*string
	for _, g := range r.Topology.Groups {
		tables := groupTables(g)
		estimate := func(cluster string) *string {
			m, ok := estimates[cluster]
			if !ok {
				return nil
			}
			var sum int64
			found := false
			for _, t := range tables {
				if n, ok := m[qualified(t)]; ok {
					sum, found = sum+n, true
				}
			}
			if !found {
				return nil
			}
			return num(sum)
		}
		list := str(strings.Join(tables, ", "))
		if g.Unsharded {
			rows = append(rows, []*string{str(g.Name), str("-"), str(g.Cluster), list, estimate(g.Cluster)})
			continue
		}
		for _, s := range g.Shards {
			rows = append(rows, []*string{str(g.Name), str(s.Name), str(s.Cluster), list, estimate(s.Cluster)})
		}
	}
	return rows, nil
}

// groupTables names a group's member and reference tables.
func groupTables(g *topology.Group) []string {
	var out []string
	for _, t := range g.Tables {
		out = append(out, t.QualifiedName.String())
	}
	for _, t := range g.Reference {
		out = append(out, t.String())
	}
	return out
}

// qualified is a table name with its schema, public by default.
func qualified(name string) string {
	if strings.Contains(name, ".") {
		return name
	}
	return "public." + name
}

var topologyCols = []string{"group", "table", "role", "key", "function", "clusters", "revision", "file", "origin"}

// origin says where the routing of a part comes from: the file, or the
// routing revision that decided the first of keys (Topology.Overrides).
func origin(t *topology.Topology, keys ...string) *string {
	for _, k := range keys {
		if o := t.OverrideOf(k); o != nil {
			return str(o.Origin)
		}
	}
	return str("file")
}

func showTopology(c *console) ([][]*string, error) {
	r := c.src.Routing()
	rev, file := num(r.Revision), nullable(r.File)
	var rows [][]*string
	for _, g := range r.Topology.Groups {
		key, fn, clusters := (*string)(nil), (*string)(nil), str(g.Cluster)
		if !g.Unsharded {
			k := g.Index.Column
			if g.Index.Expression != nil {
				k = g.Index.Expression.String()
			}
			key, fn = str(k), str(g.Index.Function)
			seen := map[string]bool{}
			var cs []string
			for _, s := range g.Shards {
				if !seen[s.Cluster] {
					seen[s.Cluster] = true
					cs = append(cs, s.Cluster)
				}
			}
			clusters = str(strings.Join(cs, ", "))
		}
		gk := "groups." + g.Name
		if len(g.Tables)+len(g.Reference)+len(g.Sequences) == 0 {
			rows = append(rows, []*string{str(g.Name), nil, str("group"), key, fn, clusters, rev, file, origin(r.Topology, gk)})
		}
		for _, t := range g.Tables {
			k := key
			if t.Column != "" {
				k = str(t.Column)
			}
			rows = append(rows, []*string{str(g.Name), str(t.QualifiedName.String()), str("member"), k, fn, clusters, rev, file,
				origin(r.Topology, "tables."+t.QualifiedName.String(), gk)})
		}
		for _, t := range g.Reference {
			rows = append(rows, []*string{str(g.Name), str(t.String()), str("reference"), nil, nil, clusters, rev, file, origin(r.Topology, gk)})
		}
		for _, s := range g.Sequences {
			rows = append(rows, []*string{str(g.Name), str(s.String()), str("sequence"), nil, nil, clusters, rev, file, str("file")})
		}
	}
	return rows, nil
}

var preparedCols = []string{"client_id", "user", "prepared_statements"}

func showPrepared(c *console) ([][]*string, error) {
	var rows [][]*string
	for _, cl := range c.src.Clients().List() {
		if cl.Prepared > 0 {
			rows = append(rows, []*string{num(cl.ID), str(cl.User), num(cl.Prepared)})
		}
	}
	return rows, nil
}

var transactionCols = []string{"kind", "id", "cluster", "age", "state"}

// showTransactions lists the clients' open transactions, then the
// prepared transactions of two-phase commit on each cluster (pg_prepared_xacts,
// shardgate's gids) with the decision main holds for each.
func showTransactions(c *console) ([][]*string, error) {
	var rows [][]*string
	for _, cl := range c.src.Clients().List() {
		if !cl.TxSince.IsZero() {
			rows = append(rows, []*string{str("client"), num(cl.ID), nil, seconds(time.Since(cl.TxSince)), str(cl.State)})
		}
	}
	r := c.src.Routing()
	decisions := map[string]string{}
	if main := r.Topology.Main(); main != nil {
		res, _ := query(r.Pools[main.Cluster], "SELECT gid, outcome FROM shardgate.commit_decisions")
		for _, row := range res {
			decisions[string(row[0])] = string(row[1])
		}
	}
	for _, cl := range r.Topology.Clusters {
		res, err := query(r.Pools[cl.Name], `SELECT gid, extract(epoch FROM now() - prepared)::text FROM pg_catalog.pg_prepared_xacts
WHERE gid LIKE 'shardgate\_%' AND database = current_database() ORDER BY prepared`)
		if err != nil {
			rows = append(rows, []*string{str("prepared"), nil, str(cl.Name), nil, str("unknown: " + err.Error())})
			continue
		}
		for _, row := range res {
			state := "prepared, no decision yet"
			if d, ok := decisions[twopc.DecisionGID(string(row[0]), cl.Name)]; ok {
				state = "prepared, decided " + d
			}
			rows = append(rows, []*string{str("prepared"), str(string(row[0])), str(cl.Name), str(string(row[1])), str(state)})
		}
	}
	return rows, nil
}

var planCacheCols = []string{"entries", "bytes", "hits", "misses"}

func showPlanCache(c *console) ([][]*string, error) {
	entries, bytes := c.src.Routing().Planner.CacheSize()
	pc := &c.src.Metrics().PlanCache
	return [][]*string{{num(entries), num(bytes), num(pc.Hits.Load()), num(pc.Misses.Load())}}, nil
}

var workflowCols = []string{"id", "kind", "group", "state", "tables", "rows_copied", "rows_total", "lag_bytes", "updated_at", "error",
	"traffic", "switches", "last_switch", "last_pause_ms", "last_held"}

// workflowsSQL reads the workflows recorded in main (package workflows),
// newest first; nothing when none was ever created there.
const workflowsSQL = `SELECT w.id, w.kind, w.spec->>'group', w.phase,
	(SELECT string_agg(DISTINCT t.table_name, ', ') FROM shardgate.workflow_tables t WHERE t.workflow_id = w.id),
	(SELECT sum(t.rows_copied) FROM shardgate.workflow_tables t WHERE t.workflow_id = w.id),
	(SELECT sum(t.rows_total) FROM shardgate.workflow_tables t WHERE t.workflow_id = w.id),
	(SELECT max((s.source_lsn - s.applied_lsn)::bigint) FROM shardgate.workflow_streams s WHERE s.workflow_id = w.id),
	w.updated_at, nullif(w.error, ''),
	w.traffic, (SELECT count(*) FROM shardgate.workflow_switches x WHERE x.workflow_id = w.id AND x.outcome = 'done'),
	l.op || ' #' || l.n || ' ' || l.outcome, round(l.pause_ms::numeric, 1), l.held
FROM shardgate.workflows w
LEFT JOIN LATERAL (SELECT * FROM shardgate.workflow_switches x WHERE x.workflow_id = w.id ORDER BY x.n DESC LIMIT 1) l ON true
ORDER BY w.id DESC`

// workflowsSQLBefore11 reads workflows recorded by a shardgate without
// traffic switches.
const workflowsSQLBefore11 = `SELECT w.id, w.kind, w.spec->>'group', w.phase,
	(SELECT string_agg(DISTINCT t.table_name, ', ') FROM shardgate.workflow_tables t WHERE t.workflow_id = w.id),
	(SELECT sum(t.rows_copied) FROM shardgate.workflow_tables t WHERE t.workflow_id = w.id),
	(SELECT sum(t.rows_total) FROM shardgate.workflow_tables t WHERE t.workflow_id = w.id),
	(SELECT max((s.source_lsn - s.applied_lsn)::bigint) FROM shardgate.workflow_streams s WHERE s.workflow_id = w.id),
	w.updated_at, nullif(w.error, ''), 'source', 0, NULL, NULL, NULL
FROM shardgate.workflows w ORDER BY w.id DESC`

// showWorkflows lists the MoveTables and Reshard workflows recorded in the
// main group with their copy progress and stream lag (docs/workflows.md).
func showWorkflows(c *console) ([][]*string, error) {
	rows, err := mainRows(c, "shardgate.workflow_switches", workflowsSQL)
	if err == nil && rows == nil {
		return mainRows(c, "shardgate.workflows", workflowsSQLBefore11)
	}
	return rows, err
}

var proxiesCols = []string{"id", "addr", "pid", "started_at", "heartbeat_at", "live", "revision", "acked"}

// showProxies lists the proxies registered in main (package routestate):
// live ones beat their heartbeat every second.
func showProxies(c *console) ([][]*string, error) {
	return mainRows(c, "shardgate.proxies", fmt.Sprintf(`SELECT id, addr, pid, started_at, heartbeat_at,
	heartbeat_at > now() - interval '%d ms', revision, acked FROM shardgate.proxies ORDER BY started_at, id`, routestate.Stale.Milliseconds()))
}

// mainRows answers sql on the main group's cluster as text; nothing when
// table was never created there.
func mainRows(c *console, table, sql string) ([][]*string, error) {
	r := c.src.Routing()
	main := r.Topology.Main()
	if main == nil {
		return nil, nil
	}
	p := r.Pools[main.Cluster]
	exists, err := query(p, "SELECT to_regclass('"+table+"') IS NOT NULL")
	if err != nil {
		return nil, err
	}
	if len(exists) == 0 || string(exists[0][0]) != "t" {
		return nil, nil
	}
	res, err := query(p, sql)
	if err != nil {
		return nil, err
	}
	rows := make([][]*string, 0, len(res))
	for _, row := range res {
		out := make([]*string, len(row))
		for i, v := range row {
			if v != nil {
				out[i] = str(string(v))
			}
		}
		rows = append(rows, out)
	}
	return rows, nil
}

func showVersion(*console) ([][]*string, error) {
	return [][]*string{{str("shardgate " + Version)}}, nil
}

var configCols = []string{"key", "value"}

func showConfig(c *console) ([][]*string, error) {
	p := c.src.Routing().Topology.Proxy
	var users []string
	for _, u := range p.Auth.Users {
		if u.Admin {
			users = append(users, u.Name+" (admin)")
		} else {
			users = append(users, u.Name)
		}
	}
	kv := [][2]string{
		{"proxy.listen", p.Listen}, {"proxy.database", p.Database},
		{"proxy.auth.method", p.Auth.Method}, {"proxy.auth.users", strings.Join(users, ", ")},
		{"proxy.pool.mode", p.Pool.Mode}, {"proxy.pool.size", strconv.Itoa(p.Pool.Size)},
		{"proxy.pool.max_wait", p.Pool.MaxWait.String()}, {"proxy.pool.idle_timeout", p.Pool.IdleTimeout.String()},
		{"proxy.timeouts.connect", p.Timeouts.Connect.String()}, {"proxy.timeouts.query", p.Timeouts.Query.String()},
		{"proxy.timeouts.auth", p.Timeouts.Auth.String()}, {"proxy.timeouts.shutdown", p.Timeouts.Shutdown.String()},
		{"proxy.commit", p.Commit},
		{"proxy.auth.identity", p.Auth.Identity}, {"proxy.auth.query", strconv.FormatBool(p.Auth.Query)},
		{"proxy.pool.user_size", strconv.Itoa(p.Pool.UserSize)},
		{"proxy.log.slow_statement", p.Log.SlowStatement.String()},
		{"proxy.log.sample_statements", strconv.FormatFloat(p.Log.SampleStatements, 'g', -1, 64)},
		// The bound in force: it is read at start-up only.
		{"proxy.query_stats.max", strconv.Itoa(c.src.Metrics().Queries.Max())},
	}
	if p.TLS != nil {
		kv = append(kv, [2]string{"proxy.tls.cert", p.TLS.Cert}, [2]string{"proxy.tls.key", p.TLS.Key},
			[2]string{"proxy.tls.required", strconv.FormatBool(p.TLS.Required)})
	}
	l := p.Limits
	kv = append(kv, [2]string{"proxy.limits.max_clients", strconv.Itoa(l.MaxClients)},
		[2]string{"proxy.limits.max_buffered_bytes", strconv.FormatInt(l.MaxBufferedBytes, 10)},
		[2]string{"proxy.limits.max_message_bytes", strconv.Itoa(l.MaxMessageBytes)},
		[2]string{"proxy.limits.startup_bytes", strconv.Itoa(l.StartupBytes)},
		[2]string{"proxy.limits.startup_timeout", l.StartupTimeout.String()})
	var rows [][]*string
	for _, e := range kv {
		rows = append(rows, []*string{str(e[0]), nullable(e[1])})
	}
	return rows, nil
}

// pauseTimeout bounds how long PAUSE waits for transactions in flight.
const pauseTimeout = time.Minute

// pauseResume pauses or resumes one cluster's pool, or all of them.
func (c *console) pauseResume(pause bool, cluster string) error {
	r := c.src.Routing()
	names := poolNames(c)
	if cluster != "" {
		if r.Pools[cluster] == nil {
			return sqlerr.New("42704", "cluster %q is not in the topology (clusters: %s)", cluster, strings.Join(names, ", "))
		}
		names = []string{cluster}
	}
	ctx, cancel := context.WithTimeout(context.Background(), pauseTimeout)
	defer cancel()
	// Every host of each cluster: its primary and its standbys.
	var pools []*backend.Pool
	for _, name := range names {
		pools = append(pools, hostPools(r, name)...)
	}
	if !pause {
		for _, p := range pools {
			p.Resume()
		}
		for _, name := range names {
			c.log.Info("admin console: cluster resumed", "cluster", name, "user", c.user)
		}
		return nil
	}
	for i, p := range pools {
		c.log.Info("admin console: pausing cluster: new leases wait, transactions in flight finish", "cluster", p.Cluster(), "host", p.Host(), "role", hostRole(p), "user", c.user)
		if err := p.Pause(ctx); err != nil {
			for _, done := range pools[:i] {
				done.Resume()
			}
			return err
		}
		c.log.Info("admin console: cluster paused", "cluster", p.Cluster(), "host", p.Host(), "role", hostRole(p))
	}
	return nil
}
