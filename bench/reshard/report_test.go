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
