package proxy

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/shardgate/shardgate/internal/proxytest"
	"github.com/shardgate/shardgate/twopc"
)

// TestMetricsAfterMixedWorkload runs every kind of statement, errors,
// two-phase commits and a recovery, pool waits, a backend failure and a
// reload, then scrapes /metrics: every family the dashboard and
// docs/metrics.md promise is there and non-zero, and every query of
// examples/monitoring/grafana-dashboard.json names a metric the proxy
// exports.
func TestMetricsAfterMixedWorkload(t *testing.T) {
	clock := &simClock{}
	p := start2PC(t, clock, time.Hour)
	c := setupShop(t, p)
	ctx := context.Background()
	for _, q := range []string{
		"INSERT INTO customers (id, name) VALUES (1, 'a'), (42, 'b')",
		"SELECT * FROM customers WHERE id = 1",                          // single
		"SELECT * FROM customers WHERE id IN (1, 2, 3, 4, 5, 6, 7, 42)", // multi
		"SELECT * FROM customers",                                       // scatter
		"SELECT count(*) FROM customers",                                // merge
		"SELECT * FROM customers WHERE id = 1",                          // a plan cache hit
	} {
		mustExec(t, c, q)
	}
	if _, err := c.Exec(ctx, "SELECT * FROM no_such_table"); sqlstate(err) != "42P01" {
		t.Fatalf("want 42P01, got %v", err)
	}
	if _, err := c.Exec(ctx, "SELECT * FROM orders o JOIN products p ON p.sku = o.id::text WHERE o.customer_id = 1 FOR UPDATE"); sqlstate(err) != "0A000" {
		t.Fatalf("want 0A000, got %v", err)
	}
	if err := insertOnBothClusters(t, p, 100); err != nil { // two-phase, committed
		t.Fatal(err)
	}
	p.srv.twopc.coord.SetHooks(twopc.Hooks{AfterPrepare: func(string) error { return errCrash }})
	if err := insertOnBothClusters(t, p, 200); sqlstate(err) != "57P01" {
		t.Fatalf("failpoint: want 57P01, got %v", err)
	}
	p.srv.twopc.coord.SetHooks(twopc.Hooks{})
	clock.Advance(2 * time.Minute)
	mustRecover(t, p, 0, 2)
	// Pool waits: more concurrent statements than pg0 has connections (5).
	// The clients connect first and then start together, and settings has
	// a row, so that each statement sleeps (it was empty: pg_sleep never
	// ran, and a wait happened only when eight instant statements
	// overlapped by chance, CI).
	mustExec(t, c, "INSERT INTO settings (k, v) VALUES ('sleep', 'one row')")
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < 8; i++ {
		w := connect(t, p.dsn())
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			if _, err := w.Exec(ctx, "SELECT pg_sleep(0.5) FROM settings LIMIT 1"); err != nil {
				t.Error(err)
			}
		}()
	}
	close(start)
	wg.Wait()
	// SHOW QUERIES has the waits of the statement that waited.
	waited := false
	for _, q := range p.srv.queries.Snapshot() {
		if q.Text == "SELECT pg_sleep($1) FROM settings LIMIT $2" {
			waited = q.Calls == 8 && q.PoolWait > 0
			t.Logf("%s: %d calls, %v waiting for a pool", q.Text, q.Calls, q.PoolWait)
		}
	}
	if !waited {
		t.Error("SHOW QUERIES has no pool wait of the 8 pg_sleep statements")
	}
	failOnStoppedPg1(t, c)
	if err := p.srv.Reload(proxytest.Parse(t, shopTopology(""))); err != nil {
		t.Fatal(err)
	}

	families := scrape(t, p)
	mustBeNonZero := []string{
		"shardgate_statements_total", "shardgate_statement_duration_seconds", "shardgate_errors_total",
		"shardgate_transactions_total", "shardgate_twopc_transactions_total", "shardgate_twopc_recovered_total",
		"shardgate_pool_waits_total", "shardgate_pool_wait_seconds_total", "shardgate_backend_connects_total",
		"shardgate_backend_connect_failures_total", "shardgate_plan_cache_hits_total", "shardgate_plan_cache_misses_total",
		"shardgate_client_bytes_received_total", "shardgate_client_bytes_sent_total", "shardgate_client_sessions",
		"shardgate_client_sessions_total", "shardgate_reloads_total", "shardgate_pool_connections_open",
		"go_goroutines", "process_cpu_seconds_total",
	}
	for _, name := range mustBeNonZero {
		if sum := familySum(families[name]); sum <= 0 {
			t.Errorf("%s: %v after the workload, want > 0", name, sum)
		}
	}
	byRoute := map[string]float64{}
	for _, m := range families["shardgate_statements_total"].GetMetric() {
		for _, l := range m.Label {
			if l.GetName() == "route" {
				byRoute[l.GetValue()] += m.GetCounter().GetValue()
			}
		}
	}
	for _, route := range []string{"proxy", "single", "multi", "scatter", "merge"} {
		if byRoute[route] == 0 {
			t.Errorf("no statement counted with route %s: %v", route, byRoute)
		}
	}
	for _, class := range []string{"42", "0A", "08", "57"} {
		if !hasLabel(families["shardgate_errors_total"], "class", class) {
			t.Errorf("no error of class %s counted", class)
		}
	}

	// The dashboard: every expression names metrics the proxy exports.
	// The workflow gauges exist only while a workflow is recorded in main:
	// TestAdminConsoleAnswersEveryShow checks those.
	if exprs := checkDashboard(t, families, func(name string) bool { return !strings.HasPrefix(name, workflowMetricPrefix) }); exprs < 20 {
		t.Errorf("the dashboard has %d queries", exprs)
	}
}

// workflowMetricPrefix begins the names of the workflow gauges.
const workflowMetricPrefix = "shardgate_workflow_"

// checkDashboard reports each metric named by an expression of
// examples/monitoring/grafana-dashboard.json that the scrape does not
// have, among the names wanted picks (the other names are not looked at).
// It returns how many expressions name a metric picked.
func checkDashboard(t *testing.T, families map[string]*dto.MetricFamily, wanted func(name string) bool) int {
	t.Helper()
	raw, err := os.ReadFile("../examples/monitoring/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	metricName := regexp.MustCompile(`\b(shardgate|go|process)_[a-z0-9_]+\b`)
	exprs := 0
	for _, panel := range dash.Panels {
		for _, target := range panel.Targets {
			names := metricName.FindAllString(target.Expr, -1)
			if len(names) == 0 {
				t.Errorf("panel %q: %q names no metric", panel.Title, target.Expr)
			}
			picked := false
			for _, n := range names {
				if !wanted(n) {
					continue
				}
				picked = true
				base := n
				for _, suffix := range []string{"_bucket", "_sum", "_count"} {
					if f := families[strings.TrimSuffix(n, suffix)]; f != nil && f.GetType() == dto.MetricType_HISTOGRAM {
						base = strings.TrimSuffix(n, suffix)
					}
				}
				if families[base] == nil {
					t.Errorf("panel %q: %s is not exported", panel.Title, n)
				}
			}
			if picked {
				exprs++
			}
		}
	}
	return exprs
}

// scrape serves the proxy's metrics over HTTP, as `serve --metrics` does,
// and parses one scrape.
func scrape(t *testing.T, p *testProxy) map[string]*dto.MetricFamily {
	t.Helper()
	hs := httptest.NewServer(promhttp.HandlerFor(p.srv.Metrics().Gatherer(), promhttp.HandlerOpts{}))
	defer hs.Close()
	resp, err := http.Get(hs.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return families
}

// familySum adds up a family's samples (a histogram's count).
func familySum(f *dto.MetricFamily) float64 {
	sum := 0.0
	for _, m := range f.GetMetric() {
		switch {
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		case m.Histogram != nil:
			sum += float64(m.GetHistogram().GetSampleCount())
		case m.Untyped != nil:
			sum += m.GetUntyped().GetValue()
		}
	}
	return sum
}

func hasLabel(f *dto.MetricFamily, name, value string) bool {
	for _, m := range f.GetMetric() {
		for _, l := range m.Label {
			if l.GetName() == name && l.GetValue() == value && m.GetCounter().GetValue() > 0 {
				return true
			}
		}
	}
	return false
}

// Statements sent through the extended protocol are counted like simple
// ones: by group, route kind and outcome, with their latency.
func TestMetricsCountExtendedStatements(t *testing.T) {
	p := startProxy(t, shopTopology(""), nil)
	c := setupShop(t, p)
	ctx := context.Background()
	mustExec(t, c, "INSERT INTO customers (id, name) VALUES (1, 'a'), (42, 'b')")
	statements := func(route, outcome string) float64 {
		n := 0.0
		for _, m := range scrape(t, p)["shardgate_statements_total"].GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			if l["group"] == "by_customer" && l["route"] == route && l["outcome"] == outcome {
				n += m.GetCounter().GetValue()
			}
		}
		return n
	}
	single, merged, failed := statements("single", "ok"), statements("merge", "ok"), statements("single", "error")
	var name string
	for i := 0; i < 3; i++ { // extended protocol: statements with parameters
		if err := c.QueryRow(ctx, "SELECT name FROM customers WHERE id = $1", 1).Scan(&name); err != nil {
			t.Fatal(err)
		}
	}
	var n int64
	if err := c.QueryRow(ctx, "SELECT count(*) FROM customers WHERE id > $1", 0).Scan(&n); err != nil || n != 2 {
		t.Fatalf("merged count: %d %v", n, err)
	}
	if _, err := c.Exec(ctx, "SELECT 1/(id - $2::int) FROM customers WHERE id = $1", 1, 1); sqlstate(err) != "22012" {
		t.Fatalf("want 22012, got %v", err)
	}
	if d := statements("single", "ok") - single; d != 3 {
		t.Errorf("%v single-shard extended statements counted, want 3", d)
	}
	if d := statements("merge", "ok") - merged; d != 1 {
		t.Errorf("%v merged extended statements counted, want 1", d)
	}
	if d := statements("single", "error") - failed; d != 1 {
		t.Errorf("%v failed extended statements counted, want 1", d)
	}
}
