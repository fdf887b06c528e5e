package main

import (
	"fmt"
	"os"
	"strings"
	"time"
)

// result is what one run measured.
type result struct {
	cfg           config
	copyTime      time.Duration // workflow start until it streams
	loadTime      time.Duration // pgbench start until stopped
	catchUp       time.Duration // load end until everything applied
	maxLagBytes   int64
	maxLagSeconds float64
	ledger        int64 // committed write transactions
	keyMoves      int64
	vdiffRows     int64
	vdiffProblems []string
	checks        []tableCheck
	// The -switch scenario.
	switches              []*switchRun
	loadBefore, loadAfter string // 1-minute load averages
	pgbenchErrors         int
	txns                  int
	p50, p99, maxLat      time.Duration
}

func (r *result) oracleClean() bool {
	if len(r.vdiffProblems) > 0 || len(r.checks) == 0 {
		return false
	}
	for _, c := range r.checks {
		if !c.clean() {
			return false
		}
	}
	return true
}

func perSecond(n int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// markdown renders the section "## Reshard under load (issue 10)".
func (r *result) markdown(machine, version string) string {
	var b strings.Builder
	cfg := r.cfg
	b.WriteString("## Reshard under load (issue 10)\n\n")
	cmd := os.Getenv("BENCH_INVOKED_AS")
	if cmd == "" {
		cmd = fmt.Sprintf("bash bench/run.sh -scenario reshard -orders %d -clients %d", cfg.orders, cfg.clients)
	}
	fmt.Fprintf(&b, "Command: `%s`; shardgate %s; %s; %s.\n\n", cmd, version, machine, time.Now().UTC().Format("2006-01-02"))
	fmt.Fprintf(&b, "Group `by_customer` (xxhash of `customer_id`) on two source clusters resharded onto four (2 → 4), each cluster a database\n"+
		"on one of three local PostgreSQL servers: %d orders (the co-located child table, key `customer_id` outside its primary key),\n"+
		"%d customers and a reference table of 200 countries. A pgbench custom script writes through `shardgate serve` during the whole\n"+
		"copy and for %s after it (%d clients, one transaction each: insert; non-key update; shard-key change as delete + insert;\n"+
		"delete), each transaction also writing a ledger row in main (two-phase commit).\n\n", cfg.orders, cfg.customers, cfg.loadAfter, cfg.clients)
	copied := int64(cfg.orders + cfg.customers + 200)
	b.WriteString("| copy phase | copy rows/s | write transactions committed | of which key changes | write rate | max stream lag | caught up after the load |\n| --- | --- | --- | --- | --- | --- | --- |\n")
	fmt.Fprintf(&b, "| %s | %.0f | %d | %d | %.0f tx/s | %d bytes, %.1f s | %s |\n\n", r.copyTime.Round(time.Millisecond),
		perSecond(copied, r.copyTime), r.ledger, r.keyMoves, perSecond(r.ledger, r.loadTime), r.maxLagBytes, r.maxLagSeconds,
		r.catchUp.Round(time.Millisecond))
	b.WriteString("Copy rows/s counts the rows there were when the copy started over the time until the workflow streamed; the\n" +
		"copy reads under one snapshot per source while the load goes on. The max lag is sampled while the load goes on after\n" +
		"the copy: it includes the backlog of the writes made during the copy, applied when the stream starts; the stream\n" +
		"then keeps up with the load (the last column: from the end of the load until everything is applied).\n\n")
	if len(r.vdiffProblems) == 0 {
		fmt.Fprintf(&b, "VDiff once everything was applied: clean, %d rows matching.\n\n", r.vdiffRows)
	} else {
		fmt.Fprintf(&b, "VDiff once everything was applied: **%d differences**: %s.\n\n", len(r.vdiffProblems), strings.Join(r.vdiffProblems, "; "))
	}
	b.WriteString("Oracle: the tables recomputed in main from the initial rows and the ledger alone, against the sources (what the proxy\n" +
		"wrote) and the targets (what the workflow copied and streamed):\n\n")
	b.WriteString("| table | on | expected | rows | lost | duplicated or extra | different |\n| --- | --- | --- | --- | --- | --- | --- |\n")
	for _, c := range r.checks {
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %d | %d | %d |\n", c.table, c.side, c.expected, c.got, c.lost, c.dup, c.mismatch)
	}
	verdict := "0 lost, 0 duplicated, 0 different"
	if !r.oracleClean() {
		verdict = "**the oracle found differences**"
	}
	fmt.Fprintf(&b, "\nResult: %s.\n", verdict)
	return b.String()
}
