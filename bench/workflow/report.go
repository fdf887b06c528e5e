package main

import (
	"fmt"
	"os"
	"strings"
	"time"
)

// rate is rows per second over d.
func rate(rows int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(rows) / d.Seconds()
}

// markdown renders the section "## Workflows (issue 10)".
func (r *result) markdown(machine, version string) string {
	var b strings.Builder
	n := int64(r.cfg.rows)
	b.WriteString("## Workflows (issue 10)\n\n")
	cmd := os.Getenv("BENCH_INVOKED_AS")
	if cmd == "" {
		cmd = fmt.Sprintf("bash bench/run.sh -scenario workflow -rows %d -load %s -writers %d", r.cfg.rows, r.cfg.load, r.cfg.writers)
	}
	fmt.Fprintf(&b, "Command: `%s`; shardgate %s; %s; %s.\n\n", cmd, version, machine, time.Now().UTC().Format("2006-01-02"))
	b.WriteString("Three clusters on this machine: the source (main group) and the two clusters of a group sharded by\n" +
		"`xxhash(customer_id)`. The table has 5 columns (bigint key, bigint, text, numeric, timestamptz).\n\n")
	b.WriteString("| copy of the table | time | rows/s | vs raw |\n| --- | --- | --- | --- |\n")
	var raw time.Duration
	for _, d := range r.raw {
		raw += d
	}
	if len(r.raw) > 0 {
		raw /= time.Duration(len(r.raw))
	}
	for i, d := range r.raw {
		when := []string{"before", "after"}[min(i, 1)]
		fmt.Fprintf(&b, "| raw `COPY … TO STDOUT (FORMAT binary)` piped into `COPY … FROM STDIN` on one target, %s the workflow | %s | %.0f | |\n",
			when, d.Round(time.Millisecond), rate(n, d))
	}
	fmt.Fprintf(&b, "| MoveTables copy phase (slot + exported snapshot, %d-row chunks, rows routed to 2 targets) | %s | %.0f | %.0f %% of the raw mean |\n\n",
		r.cfg.chunkRows, r.copyTime.Round(time.Millisecond), rate(n, r.copyTime), 100*raw.Seconds()/r.copyTime.Seconds())
	fmt.Fprintf(&b, "Stream under a write load of %d connections for %s (inserts, non-key updates, shard-key updates, deletes, one statement per transaction):\n\n",
		r.cfg.writers, r.cfg.load)
	b.WriteString("| source rows changed | statements | all applied after | apply rate (rows/s) | catch-up after the load | max lag |\n| --- | --- | --- | --- | --- | --- |\n")
	fmt.Fprintf(&b, "| %d | %d | %s | %.0f | %s | %d bytes, %.1f s |\n\n", r.loadRows, r.loadStatement, r.applyTime.Round(time.Millisecond),
		rate(r.loadRows, r.applyTime), r.catchUp.Round(time.Millisecond), r.maxLagBytes, r.maxLagSeconds)
	b.WriteString("The raw baseline writes every row to one cluster; the workflow splits them over two, so it can pass 100 %.\n")
	verdict := "the stream kept up with the load (the catch-up after it is the last group's wait)"
	if r.catchUp > 5*time.Second {
		verdict = "the stream fell behind while the load ran"
	}
	fmt.Fprintf(&b, "The stream applies consecutive source transactions together (up to 2000 changes or 50 ms) as one transaction per target:\n"+
		"%.0f rows/s applied here against the load's %.0f rows/s written; %s.\n\n",
		rate(r.loadRows, r.applyTime), rate(r.loadRows, r.cfg.load), verdict)
	fmt.Fprintf(&b, "VDiff after the stream caught up: %s.\n", r.vdiff)
	return b.String()
}
