package main

import (
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/shardgate/shardgate/bench/internal/benchkit"
)

// markdown is the backfill scenario's section of docs/benchmarks.md.
func (b *backfillRun) markdown(runErr error) string {
	h := b.h
	c := h.cfg
	var s strings.Builder
	s.WriteString("## Global secondary index backfill under load (issue 9)\n\n")
	fmt.Fprintf(&s, "`bash bench/run.sh -scenario gsi-backfill` on %s; %s; PostgreSQL %s, %s, shardgate %s. "+
		"Four clusters from internal/testenv, one shard of by_customer each, main on pg0; orders: %d rows over %d customers, "+
		"copied in through `shardgate serve` (no index yet) in %.1f s. The topology file then adds orders_by_id "+
		"(unique, on id, `backfilling`): the proxy's reload creates the lookup tables. "+
		"pgbench -c %d -M simple through the proxy, for the whole backfill: inserts of new orders, updates of id "+
		"(the indexed column) and deletes, a third each. `shardgate gsi backfill orders_by_id --batch-rows %d` "+
		"is killed with SIGKILL once half the rows are done, and run again: it resumes, verifies and makes the index active. "+
		"Everything shares the machine's CPUs; 1-minute load average at the two starts: %s.\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 MST"), benchkit.Machine(), h.pgVer, runtime.Version(), benchkit.GitDescribe(c.repo),
		c.rows, c.customers, b.copySecs, c.clients, c.batchRows, strings.Join(b.loadAvg, ", "))
	if b.firstSecs > 0 {
		fmt.Fprintf(&s, "| run | duration (s) | rows done | rows/s |\n| --- | ---: | ---: | ---: |\n")
		fmt.Fprintf(&s, "| first, killed | %.1f | %d | %.0f |\n", b.firstSecs, b.killedAt, float64(b.killedAt)/b.firstSecs)
	}
	if b.restSec > 0 {
		rest := int64(c.rows) - b.killedAt
		fmt.Fprintf(&s, "| resumed, to active (copy, verify, activate) | %.1f | %d (about) | %.0f |\n\n", b.restSec, rest, float64(rest)/b.restSec)
	}
	for i, title := range []string{"First run (killed)", "Resumed run"} {
		if len(b.progress[i]) == 0 {
			continue
		}
		fmt.Fprintf(&s, "%s, its output (a progress line every 2 s when not on a terminal):\n\n```\n%s\n```\n\n", title, strings.Join(shorten(b.progress[i], 24), "\n"))
	}
	if b.exact != "" {
		fmt.Fprintf(&s, "Writes through the proxy during the run, counted from the table afterwards: %d orders inserted, %d ids changed, %d orders deleted.\n\n", b.inserted, b.moved, b.deleted)
		fmt.Fprintf(&s, "Exact at the end: `shardgate gsi verify orders_by_id` clean:\n\n```\n%s\n```\n\nand over all clusters %s.\n", b.verify, b.exact)
	}
	if runErr != nil {
		fmt.Fprintf(&s, "\n**Run failed**: %s\n", benchkit.Cell(runErr.Error()))
	}
	return s.String()
}

// shorten keeps the first and last n/2 lines.
func shorten(lines []string, n int) []string {
	if len(lines) <= n {
		return lines
	}
	out := append([]string{}, lines[:n/2]...)
	out = append(out, fmt.Sprintf("... (%d lines)", len(lines)-n))
	return append(out, lines[len(lines)-n/2:]...)
}
