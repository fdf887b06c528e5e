package main

import (
	"strings"
	"testing"
	"time"
)

func TestMarkdownVerdict(t *testing.T) {
	r := &result{cfg: config{orders: 100, customers: 25, clients: 4, loadAfter: time.Second}, copyTime: time.Second, loadTime: 2 * time.Second,
		ledger: 40, checks: []tableCheck{{table: "orders", side: "targets", expected: 100, got: 100}}}
	if md := r.markdown("machine", "v"); !r.oracleClean() || !strings.Contains(md, "Result: 0 lost, 0 duplicated, 0 different.") ||
		!strings.Contains(md, "| orders | targets | 100 | 100 | 0 | 0 | 0 |") || !strings.Contains(md, "| 20 tx/s |") {
		t.Fatalf("clean run:\n%s", md)
	}
	r.checks = append(r.checks, tableCheck{table: "customers", side: "sources", expected: 25, got: 24, lost: 1})
	if md := r.markdown("machine", "v"); r.oracleClean() || !strings.Contains(md, "the oracle found differences") {
		t.Fatalf("a lost row:\n%s", md)
	}
	r.checks = r.checks[:1]
	r.vdiffProblems = []string{"public.orders on t0: 1 missing"}
	if md := r.markdown("machine", "v"); r.oracleClean() || !strings.Contains(md, "**1 differences**") {
		t.Fatalf("a vdiff difference:\n%s", md)
	}
}

// TestPgbenchLogLatencies: a transaction of pgbench's -l log starts at
// its end (time_epoch, time_us) minus its latency; the pause of a switch
// is read from the transactions that started while it ran.
func TestPgbenchLogLatencies(t *testing.T) {
	var ts []txn
	for _, l := range []string{
		"0 1 1500 0 1700000000 2000",     // 1.5 ms, started at .0005
		"1 7 250000 0 1700000001 100000", // 250 ms, started at 0.85
		"1 8 failed 0 1700000001 200000", // an error
		"2 3 3000 0 1700000002 0",        // 3 ms, started at 1.997
		"not a log line",
	} {
		if tx, ok := parseLogLine(l); ok {
			ts = append(ts, tx)
		}
	}
	if len(ts) != 4 || !ts[2].failed || ts[1].latency != 250*time.Millisecond {
		t.Fatalf("parsed %+v", ts)
	}
	from, to := time.Unix(1700000000, 800_000_000), time.Unix(1700000001, 0)
	if n, p50, _, mx := latencies(ts, from, to); n != 1 || mx != 250*time.Millisecond || p50 != mx {
		t.Fatalf("during the switch: %d, p50 %v, max %v", n, p50, mx)
	}
	if n, _, _, mx := latencies(ts, time.Time{}, time.Time{}); n != 3 || mx != 250*time.Millisecond {
		t.Fatalf("all: %d, max %v", n, mx)
	}
}
