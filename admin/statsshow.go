package admin

import (
	"math"
	"sort"
	"strconv"

	dto "github.com/prometheus/client_model/go"
)

var statsCols = []string{"group", "cluster", "route", "statements", "errors", "transactions", "bytes_received", "bytes_sent", "avg_ms", "p99_ms"}

// showStats reads the server's Prometheus counters (package stats), so it
// says what /metrics says: one row per shard group and route kind with
// statements and errors (cluster "*"); one row per cluster and route kind
// (group "*") with statements, errors and the latency average and 99th
// percentile of the statements that ran there; one row per route kind
// (group and cluster "*") with the same over all; one total row with
// transactions and bytes.
func showStats(c *console) ([][]*string, error) {
	families, err := c.src.Metrics().Registry().Gather()
	if err != nil {
		return nil, err
	}
	byName := map[string]*dto.MetricFamily{}
	for _, f := range families {
		byName[f.GetName()] = f
	}
	type key struct{ group, route string }
	counts := map[key][2]float64{} // statements, errors
	routeTotals := map[string][2]float64{}
	var all [2]float64
	if f := byName["shardgate_statements_total"]; f != nil {
		for _, m := range f.Metric {
			l := labels(m)
			k := key{l["group"], l["route"]}
			v := counts[k]
			rt := routeTotals[k.route]
			n := m.GetCounter().GetValue()
			v[0], rt[0], all[0] = v[0]+n, rt[0]+n, all[0]+n
			if l["outcome"] == "error" {
				v[1], rt[1], all[1] = v[1]+n, rt[1]+n, all[1]+n
			}
			counts[k], routeTotals[k.route] = v, rt
		}
	}
	var keys []key
	for k, v := range counts {
		if v[0] > 0 {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].group != keys[j].group {
			return keys[i].group < keys[j].group
		}
		return routeIndex(c, keys[i].route) < routeIndex(c, keys[j].route)
	})
	var rows [][]*string
	for _, k := range keys {
		v := counts[k]
		rows = append(rows, []*string{str(k.group), str("*"), str(k.route), count(v[0]), count(v[1]), nil, nil, nil, nil, nil})
	}
	rows = append(rows, clusterRows(c, byName)...)
	hists := map[string]*dto.Histogram{}
	if f := byName["shardgate_statement_duration_seconds"]; f != nil {
		for _, m := range f.Metric {
			hists[labels(m)["route"]] = m.GetHistogram()
		}
	}
	for _, route := range c.src.Metrics().Routes() {
		rt := routeTotals[route]
		if rt[0] == 0 {
			continue
		}
		avg, p99 := latency(hists[route])
		rows = append(rows, []*string{str("*"), str("*"), str(route), count(rt[0]), count(rt[1]), nil, nil, nil, avg, p99})
	}
	scalar := func(name string) *string {
		if f := byName[name]; f != nil && len(f.Metric) > 0 {
			return count(f.Metric[0].GetCounter().GetValue())
		}
		return str("0")
	}
	rows = append(rows, []*string{str("*"), str("*"), str("*"), count(all[0]), count(all[1]), scalar("shardgate_transactions_total"),
		scalar("shardgate_client_bytes_received_total"), scalar("shardgate_client_bytes_sent_total"), nil, nil})
	return rows, nil
}

func labels(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.Label {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

func routeIndex(c *console, route string) int {
	for i, r := range c.src.Metrics().Routes() {
		if r == route {
			return i
		}
	}
	return len(c.src.Metrics().Routes())
}

func count(v float64) *string { return str(strconv.FormatFloat(v, 'f', 0, 64)) }

// latency is a histogram's mean and 99th percentile in milliseconds; the
// percentile is interpolated within its bucket, as PromQL's
// histogram_quantile does.
func latency(h *dto.Histogram) (avg, p99 *string) {
	if h == nil || h.GetSampleCount() == 0 {
		return nil, nil
	}
	ms := func(s float64) *string { return str(strconv.FormatFloat(s*1000, 'f', 3, 64)) }
	total := float64(h.GetSampleCount())
	rank := 0.99 * total
	lower, below := 0.0, 0.0
	q := math.Inf(1)
	for _, b := range h.Bucket {
		n := float64(b.GetCumulativeCount())
		if n >= rank {
			q = lower + (b.GetUpperBound()-lower)*(rank-below)/math.Max(n-below, 1)
			break
		}
		lower, below = b.GetUpperBound(), n
	}
	if math.IsInf(q, 1) {
		q = lower // beyond the last bucket: its bound, as histogram_quantile
	}
	return ms(h.GetSampleSum() / total), ms(q)
}

// clusterRows are SHOW STATS's rows per cluster and route kind.
func clusterRows(c *console, byName map[string]*dto.MetricFamily) [][]*string {
	type key struct{ cluster, route string }
	counts := map[key][2]float64{}
	if f := byName["shardgate_cluster_statements_total"]; f != nil {
		for _, m := range f.Metric {
			l := labels(m)
			k := key{l["cluster"], l["route"]}
			v := counts[k]
			v[0] += m.GetCounter().GetValue()
			if l["outcome"] == "error" {
				v[1] += m.GetCounter().GetValue()
			}
			counts[k] = v
		}
	}
	hists := map[key]*dto.Histogram{}
	if f := byName["shardgate_cluster_statement_duration_seconds"]; f != nil {
		for _, m := range f.Metric {
			l := labels(m)
			hists[key{l["cluster"], l["route"]}] = m.GetHistogram()
		}
	}
	var keys []key
	for k, v := range counts {
		if v[0] > 0 {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].cluster != keys[j].cluster {
			return keys[i].cluster < keys[j].cluster
		}
		return routeIndex(c, keys[i].route) < routeIndex(c, keys[j].route)
	})
	var rows [][]*string
	for _, k := range keys {
		v := counts[k]
		avg, p99 := latency(hists[k])
		rows = append(rows, []*string{str("*"), str(k.cluster), str(k.route), count(v[0]), count(v[1]), nil, nil, nil, avg, p99})
	}
	return rows
}
