package admin

import "github.com/prometheus/client_golang/prometheus"

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
)

type collector struct{ src Source }

// Collector exposes the pools' and sessions' gauges of src to Prometheus
// (the counters are package stats').
func Collector(src Source) prometheus.Collector { return collector{src} }

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{poolOpenDesc, poolIdleDesc, poolActiveDesc, poolWaitingDesc, poolPausedDesc, sessionsDesc} {
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
}
