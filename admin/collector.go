package admin

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

var (
	poolOpenDesc = prometheus.NewDesc("shardgate_pool_connections_open",
		"Backend connections open (or being dialed), per cluster.", []string{"cluster"}, nil)
	poolIdleDesc = prometheus.NewDesc("shardgate_pool_connections_idle",
		"Backend connections idle in the pool, per cluster.", []string{"cluster"}, nil)
	poolActiveDesc = prometheus.NewDesc("shardgate_pool_connections_active",
		"Backend connections lent to client sessions, per cluster.", []string{"cluster"}, nil)
	poolWaitingDesc = prometheus.NewDesc("shardgate_pool_waiting_clients",
		"Leases waiting for a connection (pool exhausted or paused), per cluster.", []string{"cluster"}, nil)
	poolPausedDesc = prometheus.NewDesc("shardgate_pool_paused",
		"1 while the cluster is paused by the admin console's PAUSE.", []string{"cluster"}, nil)
	sessionsDesc = prometheus.NewDesc("shardgate_client_sessions",
		"Client sessions connected.", nil, nil)

	workflowLabels     = []string{"id", "kind", "group", "phase"}
	workflowCopiedDesc = prometheus.NewDesc("shardgate_workflow_rows_copied",
		"Rows a workflow has copied (all its tables and sources), per workflow not cancelled.", workflowLabels, nil)
	workflowTotalDesc = prometheus.NewDesc("shardgate_workflow_rows_total",
		"Rows a workflow's copy has to copy, counted when each table's copy starts.", workflowLabels, nil)
	workflowPauseDesc = prometheus.NewDesc("shardgate_workflow_switch_pause_seconds",
		"The write pause of a workflow's last traffic switch or reverse: its first statement held to its release, the longest of the proxies'.", workflowLabels, nil)
	workflowHeldDesc = prometheus.NewDesc("shardgate_workflow_switch_held_statements",
		"The statements the proxies held during a workflow's last traffic switch or reverse.", workflowLabels, nil)
	workflowLagDesc = prometheus.NewDesc("shardgate_workflow_lag_bytes",
		"WAL bytes between a workflow's sources and what its targets applied (the largest stream's).", workflowLabels, nil)
)

// The top queries on /metrics: the MetricsTopQueries fingerprints of
// largest total time, labelled with their id and their text cut to
// metricsQueryText characters, so the series stay few.
const (
	MetricsTopQueries = 20
	metricsQueryText  = 80
)

var (
	queryLabels    = []string{"id", "query"}
	queryCallsDesc = prometheus.NewDesc("shardgate_query_calls_total",
		"Statements run, per fingerprint (the top ones by total time, SHOW QUERIES).", queryLabels, nil)
	queryErrorsDesc = prometheus.NewDesc("shardgate_query_errors_total",
		"Statements that failed, per fingerprint (top by total time).", queryLabels, nil)
	querySecondsDesc = prometheus.NewDesc("shardgate_query_seconds_total",
		"Time the statements of a fingerprint took, as the proxy sees it (top by total time).", queryLabels, nil)
	queryRowsDesc = prometheus.NewDesc("shardgate_query_rows_total",
		"Rows the statements of a fingerprint returned or changed, by their command tags (top by total time).", queryLabels, nil)
	queryShardsDesc = prometheus.NewDesc("shardgate_query_shards_total",
		"Targets (shards or clusters) the statements of a fingerprint ran on, summed (top by total time).", queryLabels, nil)
	queryP99Desc = prometheus.NewDesc("shardgate_query_p99_seconds",
		"The 99th percentile of a fingerprint's statement time, from its histogram (top by total time).", queryLabels, nil)
)

type collector struct{ src Source }

// Collector exposes the pools' and sessions' gauges of src to Prometheus
// (the counters are package stats').
func Collector(src Source) prometheus.Collector { return collector{src} }

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{poolOpenDesc, poolIdleDesc, poolActiveDesc, poolWaitingDesc, poolPausedDesc, sessionsDesc,
		workflowCopiedDesc, workflowTotalDesc, workflowLagDesc, workflowPauseDesc, workflowHeldDesc,
		queryCallsDesc, queryErrorsDesc, querySecondsDesc, queryRowsDesc, queryShardsDesc, queryP99Desc} {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	for name, p := range c.src.Routing().Pools {
		pi := p.Info()
		paused := 0.0
		if pi.Paused {
			paused = 1
		}
		for d, v := range map[*prometheus.Desc]float64{poolOpenDesc: float64(pi.Open), poolIdleDesc: float64(pi.Idle),
			poolActiveDesc: float64(pi.Active), poolWaitingDesc: float64(pi.Waiting), poolPausedDesc: paused} {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, name)
		}
	}
	ch <- prometheus.MustNewConstMetric(sessionsDesc, prometheus.GaugeValue, float64(len(c.src.Clients().List())))
	if qs := c.src.Metrics().Queries; qs != nil {
		for _, q := range TopQueries(qs, "total_time", true, MetricsTopQueries) {
			text := q.Text
			if r := []rune(text); len(r) > metricsQueryText {
				text = string(r[:metricsQueryText-1]) + "…"
			}
			for d, v := range map[*prometheus.Desc]float64{queryCallsDesc: float64(q.Calls), queryErrorsDesc: float64(q.Errors),
				querySecondsDesc: q.Total.Seconds(), queryRowsDesc: float64(q.Rows), queryShardsDesc: float64(q.Shards)} {
				ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, q.ID, text)
			}
			ch <- prometheus.MustNewConstMetric(queryP99Desc, prometheus.GaugeValue, q.P99.Seconds(), q.ID, text)
		}
	}
	// Workflows as main records them (SHOW WORKFLOWS); none if main cannot
	// be asked.
	rows, _ := showWorkflows(&console{src: c.src})
	for _, r := range rows {
		if r[3] == nil || *r[3] == "cancelled" {
			continue
		}
		labels := []string{deref(r[0]), deref(r[1]), deref(r[2]), deref(r[3])}
		for d, v := range map[*prometheus.Desc]*string{workflowCopiedDesc: r[5], workflowTotalDesc: r[6], workflowLagDesc: r[7],
			workflowPauseDesc: r[13], workflowHeldDesc: r[14]} {
			n, err := strconv.ParseFloat(deref(v), 64)
			if err != nil {
				n = 0
			}
			if d == workflowPauseDesc {
				n /= 1000
			}
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, n, labels...)
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
