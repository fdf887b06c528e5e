package proxy

import "github.com/prometheus/client_golang/prometheus"

var (
	poolOpenDesc = prometheus.NewDesc("shardgate_pool_connections_open",
		"Backend connections open, per cluster.", []string{"cluster"}, nil)
	poolIdleDesc = prometheus.NewDesc("shardgate_pool_connections_idle",
		"Backend connections idle in the pool, per cluster.", []string{"cluster"}, nil)
	sessionsDesc = prometheus.NewDesc("shardgate_client_sessions",
		"Client sessions connected.", nil, nil)
)

type collector struct{ s *Server }

// Collector exposes pool and session gauges to Prometheus.
func (s *Server) Collector() prometheus.Collector { return collector{s} }

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- poolOpenDesc
	ch <- poolIdleDesc
	ch <- sessionsDesc
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	for name, st := range c.s.PoolStats() {
		ch <- prometheus.MustNewConstMetric(poolOpenDesc, prometheus.GaugeValue, float64(st[0]), name)
		ch <- prometheus.MustNewConstMetric(poolIdleDesc, prometheus.GaugeValue, float64(st[1]), name)
	}
	c.s.mu.Lock()
	n := len(c.s.sessions)
	c.s.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(sessionsDesc, prometheus.GaugeValue, float64(n))
}
