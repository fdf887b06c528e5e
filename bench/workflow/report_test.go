package main

import (
	"strings"
	"testing"
	"time"
)

func TestMarkdown(t *testing.T) {
	t.Setenv("BENCH_INVOKED_AS", "bash bench/run.sh -scenario workflow -rows 1000")
	r := &result{cfg: config{rows: 1000, chunkRows: 100, load: 10 * time.Second, writers: 2},
		raw: []time.Duration{time.Second, 3 * time.Second}, copyTime: 4 * time.Second,
		loadRows: 5000, loadStatement: 6000, applyTime: 20 * time.Second, catchUp: 10 * time.Second,
		maxLagBytes: 123, maxLagSeconds: 4.5, vdiff: "public.orders on t0: 500 rows match"}
	md := r.markdown("m", "v")
	for _, want := range []string{
		"## Workflows (issue 10)\n",
		"Command: `bash bench/run.sh -scenario workflow -rows 1000`; shardgate v; m;",
		"before the workflow | 1s | 1000 |",
		"after the workflow | 3s | 333 |",
		"100-row chunks, rows routed to 2 targets) | 4s | 250 | 50 % of the raw mean |",
		"| 5000 | 6000 | 20s | 250 | 10s | 123 bytes, 4.5 s |",
		"250 rows/s applied here against the load's 500 rows/s written",
		"VDiff after the stream caught up: public.orders on t0: 500 rows match.",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("no %q in\n%s", want, md)
		}
	}
}
