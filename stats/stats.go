package stats

import (
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Outcomes of a statement, as the outcome label says them.
const (
	OutcomeOK    = 0
	OutcomeError = 1
)

var outcomeNames = [2]string{"ok", "error"}

// LatencyBuckets are the upper bounds, in seconds, of the statement
// latency histograms.
var LatencyBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}

// Metrics are one server's counters.
type Metrics struct {
	reg    *prometheus.Registry
	routes []string

	statements   *prometheus.CounterVec
	latency      *prometheus.HistogramVec
	latencyBy    []prometheus.Observer
	errors       *prometheus.CounterVec
	transactions prometheus.Counter
	twopc        *prometheus.CounterVec
	recovered    *prometheus.CounterVec
	bytesIn      prometheus.Counter
	bytesOut     prometheus.Counter
	sessions     prometheus.Counter
	reloads      *prometheus.CounterVec

	poolWaits, poolWaitSeconds *prometheus.CounterVec
	connects, connectFailures  *prometheus.CounterVec

	hostHealth *hostCollector // hosts.go

	// Plan cache lookups, counted by the planner (PlanCache).
	PlanCache PlanCacheCounters
	// Queries are the statistics by fingerprint, nil when off (the
	// server sets them).
	Queries *Queries

	clusterStatements *prometheus.CounterVec
	clusterLatency    *prometheus.HistogramVec
	clusters          atomic.Pointer[map[string]*clusterCounters]

	mu      sync.Mutex // writers of groups, clusters and classes
	groups  atomic.Pointer[map[string]*groupCounters]
	classes atomic.Pointer[map[string]prometheus.Counter]
}

// PlanCacheCounters count plan cache lookups; the planner adds to them.
type PlanCacheCounters struct {
	Hits, Misses atomic.Uint64
}

type groupCounters [][2]prometheus.Counter // [route][outcome]

type clusterCounters struct {
	n   [][2]prometheus.Counter // [route][outcome]
	lat []prometheus.Observer   // [route]
}

// New makes a server's metrics. routes names the route kinds, in the
// order of the indexes Statement is given.
func New(routes []string) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), routes: routes}
	m.statements = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shardgate_statements_total",
		Help: "Client statements run, by shard group, route kind and outcome."}, []string{"group", "route", "outcome"})
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "shardgate_statement_duration_seconds",
		Help: "Statement latency as the proxy sees it (plan, run, relay), by route kind.", Buckets: LatencyBuckets}, []string{"route"})
	m.errors = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shardgate_errors_total",
		Help: "Errors sent to clients, by SQLSTATE class (the first two characters)."}, []string{"class"})
	m.transactions = prometheus.NewCounter(prometheus.CounterOpts{Name: "shardgate_transactions_total",
		Help: "Client transactions ended (explicit, implicit multi-statement and multi-cluster write transactions)."})
	m.twopc = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shardgate_twopc_transactions_total",
		Help: "Two-phase commits: prepared (started), committed, aborted, in_doubt (outcome left to recovery)."}, []string{"event"})
	m.recovered = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shardgate_twopc_recovered_total",
		Help: "Prepared transactions recovery finished, by outcome (commit, abort)."}, []string{"outcome"})
	m.bytesIn = prometheus.NewCounter(prometheus.CounterOpts{Name: "shardgate_client_bytes_received_total",
		Help: "Bytes read from client connections."})
	m.bytesOut = prometheus.NewCounter(prometheus.CounterOpts{Name: "shardgate_client_bytes_sent_total",
		Help: "Bytes written to client connections."})
	m.sessions = prometheus.NewCounter(prometheus.CounterOpts{Name: "shardgate_client_sessions_total",
		Help: "Client sessions authenticated since start."})
	m.reloads = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shardgate_reloads_total",
		Help: "Topology reloads, by result (success, failure)."}, []string{"result"})
	m.poolWaits = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shardgate_pool_waits_total",
		Help: "Connection leases that had to wait (pool exhausted or paused), per cluster."}, []string{"cluster"})
	m.poolWaitSeconds = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shardgate_pool_wait_seconds_total",
		Help: "Time leases spent waiting for a connection, per cluster."}, []string{"cluster"})
	m.connects = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shardgate_backend_connects_total",
		Help: "Backend connections opened, per cluster."}, []string{"cluster"})
	m.connectFailures = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shardgate_backend_connect_failures_total",
		Help: "Backend connection attempts that failed, per cluster."}, []string{"cluster"})
	hits := prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "shardgate_plan_cache_hits_total",
		Help: "Plan cache lookups that found a plan."}, func() float64 { return float64(m.PlanCache.Hits.Load()) })
	misses := prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "shardgate_plan_cache_misses_total",
		Help: "Plan cache lookups that had to plan."}, func() float64 { return float64(m.PlanCache.Misses.Load()) })
	m.clusterStatements = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shardgate_cluster_statements_total",
		Help: "Client statements by cluster they ran on (a statement on several clusters counts on each), route kind and outcome."}, []string{"cluster", "route", "outcome"})
	m.clusterLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "shardgate_cluster_statement_duration_seconds",
		Help: "Latency of the statements that ran on a cluster (the whole statement's, as the proxy sees it), by cluster and route kind.", Buckets: LatencyBuckets}, []string{"cluster", "route"})
	m.hostHealth = newHostCollector()
	m.reg.MustRegister(m.clusterStatements, m.clusterLatency, m.hostHealth)
	noClusters := map[string]*clusterCounters{}
	m.clusters.Store(&noClusters)
	m.reg.MustRegister(m.statements, m.latency, m.errors, m.transactions, m.twopc, m.recovered, m.bytesIn, m.bytesOut,
		m.sessions, m.reloads, m.poolWaits, m.poolWaitSeconds, m.connects, m.connectFailures, hits, misses)
	for _, r := range routes {
		m.latencyBy = append(m.latencyBy, m.latency.WithLabelValues(r))
	}
	empty := map[string]*groupCounters{}
	m.groups.Store(&empty)
	classes := map[string]prometheus.Counter{}
	m.classes.Store(&classes)
	return m
}

// Registry holds every metric of m.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Gatherer is what /metrics serves: m's metrics, the Go runtime's and the
// process's.
func (m *Metrics) Gatherer() prometheus.Gatherer {
	runtime := prometheus.NewRegistry()
	runtime.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return prometheus.Gatherers{runtime, m.reg}
}

// Routes names the route kinds.
func (m *Metrics) Routes() []string { return m.routes }

// Statement counts one statement of group (the empty string for none)
// with route kind route, its latency and whether it failed.
func (m *Metrics) Statement(group string, route int, d time.Duration, failed bool) {
	g := (*m.groups.Load())[group]
	if g == nil {
		g = m.group(group)
	}
	o := OutcomeOK
	if failed {
		o = OutcomeError
	}
	(*g)[route][o].Inc()
	m.latencyBy[route].Observe(d.Seconds())
}

// ClusterStatements counts a statement on each distinct cluster of the
// n that cluster(i) names (ClusterStatement).
func (m *Metrics) ClusterStatements(n int, cluster func(int) string, route int, d time.Duration, failed bool) {
	for i := 0; i < n; i++ {
		c, seen := cluster(i), false
		for j := 0; j < i && !seen; j++ {
			seen = cluster(j) == c
		}
		if !seen {
			m.ClusterStatement(c, route, d, failed)
		}
	}
}

// ClusterStatement counts a statement that ran on cluster (among others,
// maybe) with route kind route, its latency and whether it failed.
func (m *Metrics) ClusterStatement(cluster string, route int, d time.Duration, failed bool) {
	c := (*m.clusters.Load())[cluster]
	if c == nil {
		c = m.cluster(cluster)
	}
	o := OutcomeOK
	if failed {
		o = OutcomeError
	}
	c.n[route][o].Inc()
	c.lat[route].Observe(d.Seconds())
}

// cluster resolves the counters of a cluster seen for the first time.
func (m *Metrics) cluster(name string) *clusterCounters {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur := *m.clusters.Load()
	if c := cur[name]; c != nil {
		return c
	}
	c := &clusterCounters{n: make([][2]prometheus.Counter, len(m.routes)), lat: make([]prometheus.Observer, len(m.routes))}
	for i, r := range m.routes {
		for o, on := range outcomeNames {
			c.n[i][o] = m.clusterStatements.WithLabelValues(name, r, on)
		}
		c.lat[i] = m.clusterLatency.WithLabelValues(name, r)
	}
	next := make(map[string]*clusterCounters, len(cur)+1)
	for k, v := range cur {
		next[k] = v
	}
	next[name] = c
	m.clusters.Store(&next)
	return c
}

// group resolves the counters of a group seen for the first time.
func (m *Metrics) group(name string) *groupCounters {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur := *m.groups.Load()
	if g := cur[name]; g != nil {
		return g
	}
	label := name
	if label == "" {
		label = "none"
	}
	g := make(groupCounters, len(m.routes))
	for i, r := range m.routes {
		for o, on := range outcomeNames {
			g[i][o] = m.statements.WithLabelValues(label, r, on)
		}
	}
	next := make(map[string]*groupCounters, len(cur)+1)
	for k, v := range cur {
		next[k] = v
	}
	next[name] = &g
	m.groups.Store(&next)
	return &g
}

// Error counts an error sent to a client by its SQLSTATE.
func (m *Metrics) Error(sqlstate string) {
	class := "XX"
	if len(sqlstate) >= 2 {
		class = sqlstate[:2]
	}
	c := (*m.classes.Load())[class]
	if c == nil {
		m.mu.Lock()
		cur := *m.classes.Load()
		if c = cur[class]; c == nil {
			c = m.errors.WithLabelValues(class)
			next := make(map[string]prometheus.Counter, len(cur)+1)
			for k, v := range cur {
				next[k] = v
			}
			next[class] = c
			m.classes.Store(&next)
		}
		m.mu.Unlock()
	}
	c.Inc()
}

// Transaction counts one client transaction ended.
func (m *Metrics) Transaction() { m.transactions.Inc() }

// TwoPhase counts a two-phase commit event: "prepared", "committed",
// "aborted" or "in_doubt".
func (m *Metrics) TwoPhase(event string) { m.twopc.WithLabelValues(event).Inc() }

// TwoPhaseEnd counts how a two-phase commit ended, by the SQLSTATE it
// returned: committed (none), in_doubt (08007: the outcome is left to
// recovery) or aborted (any other).
func (m *Metrics) TwoPhaseEnd(sqlstate string) {
	switch sqlstate {
	case "":
		m.TwoPhase("committed")
	case "08007":
		m.TwoPhase("in_doubt")
	default:
		m.TwoPhase("aborted")
	}
}

// Recovered counts prepared transactions recovery committed and rolled back.
func (m *Metrics) Recovered(committed, rolledBack int) {
	m.recovered.WithLabelValues("commit").Add(float64(committed))
	m.recovered.WithLabelValues("abort").Add(float64(rolledBack))
}

// BytesIn counts bytes read from clients.
func (m *Metrics) BytesIn(n int) { m.bytesIn.Add(float64(n)) }

// BytesOut counts bytes written to clients.
func (m *Metrics) BytesOut(n int) { m.bytesOut.Add(float64(n)) }

// Session counts a client session authenticated.
func (m *Metrics) Session() { m.sessions.Inc() }

// Reload counts a topology reload.
func (m *Metrics) Reload(err error) {
	if err != nil {
		m.reloads.WithLabelValues("failure").Inc()
		return
	}
	m.reloads.WithLabelValues("success").Inc()
}

// Pool returns the counters of one cluster's pool.
func (m *Metrics) Pool(cluster string) *PoolCounters {
	return &PoolCounters{
		Waits:           m.poolWaits.WithLabelValues(cluster),
		WaitSeconds:     m.poolWaitSeconds.WithLabelValues(cluster),
		Connects:        m.connects.WithLabelValues(cluster),
		ConnectFailures: m.connectFailures.WithLabelValues(cluster),
	}
}

// PoolCounters are one cluster's pool counters.
type PoolCounters struct {
	Waits, WaitSeconds, Connects, ConnectFailures prometheus.Counter
}

// Conn counts the bytes read from and written to a client connection.
func (m *Metrics) Conn(c net.Conn) net.Conn { return countedConn{c, m} }

type countedConn struct {
	net.Conn
	m *Metrics
}

func (c countedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.m.bytesIn.Add(float64(n))
	return n, err
}

func (c countedConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.m.bytesOut.Add(float64(n))
	return n, err
}
