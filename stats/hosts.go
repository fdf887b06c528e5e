package stats

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// HostSample is what the health checker knows of one host of a cluster
// with standbys (the primary or a standby), for /metrics.
type HostSample struct {
	Cluster, Host, Role string
	Up, Banned          bool
	Bans                int
	// LagKnown: LagBytes and LagSeconds were measured (standbys, while
	// the primary answers).
	LagKnown   bool
	LagBytes   int64
	LagSeconds float64
	// Epoch is main's epoch of the primary (a primary's sample); Fenced
	// marks a host a failover moved the writes from (Role "fenced":
	// only shardgate_host_fenced is reported for it).
	Epoch  int64
	Fenced bool
}

// hostCollector reads the hosts' health when /metrics is scraped.
type hostCollector struct {
	hosts                        atomic.Pointer[func() []HostSample]
	up, banned, bans, lagB, lagS *prometheus.Desc
	epoch, fenced                *prometheus.Desc
}

func newHostCollector() *hostCollector {
	labels := []string{"cluster", "host", "role"}
	return &hostCollector{
		up:     prometheus.NewDesc("shardgate_host_up", "1 when the host's last health check answered, per host of a cluster with standbys.", labels, nil),
		banned: prometheus.NewDesc("shardgate_host_banned", "1 while a standby is banned after a failed check or connection.", labels, nil),
		bans:   prometheus.NewDesc("shardgate_host_bans_total", "Times a host was banned (failed check or connection error).", labels, nil),
		lagB:   prometheus.NewDesc("shardgate_host_lag_bytes", "WAL bytes between the primary's current position and the standby's replay position.", labels, nil),
		lagS:   prometheus.NewDesc("shardgate_host_lag_seconds", "How long ago the primary wrote the oldest WAL the standby has not replayed.", labels, nil),
		epoch:  prometheus.NewDesc("shardgate_host_primary_epoch", "Main's epoch of the cluster's primary (0: never failed over), on the primary's host.", labels, nil),
		fenced: prometheus.NewDesc("shardgate_host_fenced", "1 for a host a failover moved the cluster's writes from, until it answers from recovery.", labels, nil),
	}
}

func (c *hostCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.up, c.banned, c.bans, c.lagB, c.lagS, c.epoch, c.fenced} {
		ch <- d
	}
}

func (c *hostCollector) Collect(ch chan<- prometheus.Metric) {
	f := c.hosts.Load()
	if f == nil {
		return
	}
	b := func(v bool) float64 {
		if v {
			return 1
		}
		return 0
	}
	for _, h := range (*f)() {
		l := []string{h.Cluster, h.Host, h.Role}
		if h.Fenced {
			ch <- prometheus.MustNewConstMetric(c.fenced, prometheus.GaugeValue, 1, l...)
			continue
		}
		if h.Role == "primary" {
			ch <- prometheus.MustNewConstMetric(c.epoch, prometheus.GaugeValue, float64(h.Epoch), l...)
		}
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, b(h.Up), l...)
		ch <- prometheus.MustNewConstMetric(c.banned, prometheus.GaugeValue, b(h.Banned), l...)
		ch <- prometheus.MustNewConstMetric(c.bans, prometheus.CounterValue, float64(h.Bans), l...)
		if h.LagKnown {
			ch <- prometheus.MustNewConstMetric(c.lagB, prometheus.GaugeValue, float64(h.LagBytes), l...)
			ch <- prometheus.MustNewConstMetric(c.lagS, prometheus.GaugeValue, h.LagSeconds, l...)
		}
	}
}

// SetHosts makes /metrics report the hosts f returns.
func (m *Metrics) SetHosts(f func() []HostSample) { m.hostHealth.hosts.Store(&f) }
