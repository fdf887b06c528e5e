package stats

import (
	"errors"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// TestStatementCountsWithoutAllocating: once a group is known, counting a
// statement is atomic adds only (issue 13 measures the hot path).
func TestStatementCountsWithoutAllocating(t *testing.T) {
	m := New([]string{"proxy", "single"})
	m.Statement("by_customer", 1, time.Millisecond, false)
	if n := testing.AllocsPerRun(1000, func() {
		m.Statement("by_customer", 1, time.Millisecond, false)
		m.Error("42P01")
	}); n != 0 {
		t.Errorf("%v allocations per statement counted", n)
	}
	m.Statement("", 0, 2*time.Millisecond, true)
	m.TwoPhaseEnd("08007")
	m.Reload(errors.New("refused"))
	got := map[string]float64{}
	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		for _, x := range f.Metric {
			key := f.GetName()
			for _, l := range x.Label {
				key += "/" + l.GetValue()
			}
			got[key] = value(x)
		}
	}
	for key, want := range map[string]float64{
		"shardgate_statements_total/by_customer/ok/single": 1002,
		"shardgate_statements_total/none/error/proxy":      1,
		"shardgate_errors_total/42":                        1001,
		"shardgate_twopc_transactions_total/in_doubt":      1,
		"shardgate_reloads_total/failure":                  1,
		"shardgate_statement_duration_seconds/single":      1002,
	} {
		if got[key] != want {
			t.Errorf("%s = %v, want %v", key, got[key], want)
		}
	}
}

func value(m *dto.Metric) float64 {
	if m.Histogram != nil {
		return float64(m.Histogram.GetSampleCount())
	}
	return m.GetCounter().GetValue()
}
