package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shardgate/shardgate/bench/internal/benchkit"
	"github.com/shardgate/shardgate/workflows"
)

// The -switch scenario: once the reshard streams, two `shardgate serve`
// take the pgbench write script (one pgbench each, per-transaction logs)
// while the workflow's traffic is switched to the new shards, reversed and
// switched again. The write pause is read from pgbench's logs: the
// latency of the transactions that started while a switch ran.

// switchRun is one switch as measured.
type switchRun struct {
	op         string
	start, end time.Time
	rec        *workflows.SwitchRecord
	// Of the transactions that started between start and end.
	n             int
	p50, p99, max time.Duration
	// Of those that started while writes were held: from the end of the
	// steps before the hold (the record's start plus that step) to end.
	hn               int
	hp50, hp99, hmax time.Duration
}

// holdStart is when the switch began to hold writes: its start plus the
// steps before the hold (the first step, "before the hold").
func (sw *switchRun) holdStart() time.Time {
	t := sw.rec.StartedAt
	if len(sw.rec.Steps) > 0 && strings.HasPrefix(sw.rec.Steps[0].Name, "before") {
		t = t.Add(time.Duration(sw.rec.Steps[0].MS * float64(time.Millisecond)))
	}
	return t
}

// txn is one transaction of a pgbench log.
type txn struct {
	start   time.Time
	latency time.Duration
	failed  bool
}

// readPgbenchLogs reads pgbench's per-transaction logs (-l; the fields
// client_id transaction_no time script_no time_epoch time_us ...; time is
// the latency in microseconds, or "failed"/"skipped").
func readPgbenchLogs(prefix string) ([]txn, error) {
	files, err := filepath.Glob(prefix + ".*")
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no pgbench log %s.*: %v", prefix, err)
	}
	var out []txn
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			t, ok := parseLogLine(sc.Text())
			if ok {
				out = append(out, t)
			}
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func parseLogLine(line string) (txn, bool) {
	f := strings.Fields(line)
	if len(f) < 6 {
		return txn{}, false
	}
	sec, err1 := strconv.ParseInt(f[4], 10, 64)
	us, err2 := strconv.ParseInt(f[5], 10, 64)
	if err1 != nil || err2 != nil {
		return txn{}, false
	}
	end := time.Unix(sec, us*1000)
	lat, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil { // failed, skipped
		return txn{start: end, failed: true}, true
	}
	d := time.Duration(lat) * time.Microsecond
	return txn{start: end.Add(-d), latency: d}, true
}

// latencies returns the percentiles of the latencies of the transactions
// that started within [from, to] (all when from is zero).
func latencies(ts []txn, from, to time.Time) (n int, p50, p99, mx time.Duration) {
	var ds []time.Duration
	for _, t := range ts {
		if !t.failed && (from.IsZero() || !t.start.Before(from) && !t.start.After(to)) {
			ds = append(ds, t.latency)
		}
	}
	if len(ds) == 0 {
		return 0, 0, 0, 0
	}
	slices.Sort(ds)
	return len(ds), ds[len(ds)/2], ds[len(ds)*99/100], ds[len(ds)-1]
}

func (h *harness) runSwitches(ctx context.Context, store *workflows.Store, id int64, file string, port int) error {
	cfg := h.cfg
	port2, err := benchkit.FreePort()
	if err != nil {
		return err
	}
	second, err := benchkit.StartShardgate(ctx, benchkit.Shardgate{Name: "shardgate-b", Bin: h.shardgate, Topology: file, Port: port2,
		LogPath: filepath.Join(h.tmp, "shardgate-b.log")})
	if err != nil {
		return err
	}
	defer second.Stop(10 * time.Second)
	runner, err := workflows.NewRunner(ctx, store, id)
	if err != nil {
		return err
	}
	runCtx, stopRun := context.WithCancel(ctx)
	runErr := make(chan error, 1)
	start := time.Now()
	go func() { runErr <- runner.Run(runCtx) }()
	defer func() { stopRun(); <-runErr }()
	if err := h.waitStreaming(ctx, store, id, nil); err != nil {
		return err
	}
	h.r.copyTime = time.Since(start)
	logf("copy done in %s; two pgbench, one per proxy, for %s", h.r.copyTime.Round(time.Millisecond), cfg.switchLoad)
	h.r.loadBefore = benchkit.LoadAvg()
	var loads []*benchkit.Proc
	for i, p := range []int{port, port2} {
		pgb, err := h.startLoadOn(p, i, fmt.Sprintf("pgbench-%c", 'a'+i))
		if err != nil {
			return err
		}
		defer pgb.Stop(5 * time.Second)
		loads = append(loads, pgb)
	}
	loadStart := time.Now()
	gap := cfg.switchLoad / 4
	for i, op := range []string{"switch", "reverse", "switch"} {
		if err := sleepUntil(ctx, loadStart.Add(time.Duration(i+1)*gap)); err != nil {
			return err
		}
		o := workflows.SwitchOptions{Author: "bench", Logf: func(string, ...any) {}}
		sw := &switchRun{op: op, start: time.Now()}
		if op == "switch" {
			sw.rec, err = workflows.Switch(ctx, store, id, o)
		} else {
			sw.rec, err = workflows.Reverse(ctx, store, id, o)
		}
		sw.end = time.Now()
		if err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		logf("%s", strings.TrimSpace(sw.rec.Text()))
		h.r.switches = append(h.r.switches, sw)
	}
	h.r.loadAfter = benchkit.LoadAvg()
	for _, pgb := range loads {
		for !pgb.Exited() {
			if err := sleepUntil(ctx, time.Now().Add(200*time.Millisecond)); err != nil {
				return err
			}
		}
		if pgb.Err() != nil {
			return pgb.ExitError()
		}
		h.r.pgbenchErrors += countErrors(pgb.LogPath)
	}
	h.r.loadTime = time.Since(loadStart)
	var all []txn
	for _, name := range []string{"pgbench-a", "pgbench-b"} {
		ts, err := readPgbenchLogs(filepath.Join(h.tmp, name))
		if err != nil {
			return err
		}
		all = append(all, ts...)
	}
	for _, t := range all {
		if t.failed {
			h.r.pgbenchErrors++
		}
	}
	h.r.txns, h.r.p50, h.r.p99, h.r.maxLat = latencies(all, time.Time{}, time.Time{})
	for _, sw := range h.r.switches {
		sw.n, sw.p50, sw.p99, sw.max = latencies(all, sw.start, sw.end)
		sw.hn, sw.hp50, sw.hp99, sw.hmax = latencies(all, sw.holdStart(), sw.end)
	}
	// The traffic is on the targets: the stream runs back to the sources.
	if err := h.waitAppliedFrom(ctx, runner, store, id, targetNames); err != nil {
		return err
	}
	if err := h.vdiff(ctx, store, id); err != nil {
		return err
	}
	return h.oracle(ctx)
}

// countErrors counts the lines of a pgbench output that report an error.
func countErrors(path string) int {
	data, _ := os.ReadFile(path)
	n := 0
	for _, l := range strings.Split(string(data), "\n") {
		if strings.Contains(l, "ERROR") || strings.Contains(l, "aborted") {
			n++
		}
	}
	return n
}

func sleepUntil(ctx context.Context, t time.Time) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Until(t)):
		return nil
	}
}

// switchMarkdown renders the section "## Traffic switch under pgbench
// (issue 11)".
func (r *result) switchMarkdown(machine, version string) string {
	var b strings.Builder
	cfg := r.cfg
	b.WriteString("## Traffic switch under pgbench (issue 11)\n\n")
	cmd := os.Getenv("BENCH_INVOKED_AS")
	if cmd == "" {
		cmd = fmt.Sprintf("bash bench/run.sh -scenario switch -orders %d -clients %d", cfg.orders, cfg.clients)
	}
	fmt.Fprintf(&b, "Command: `%s`; shardgate %s; %s; %s.\n\n", cmd, version, machine, time.Now().UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&b, "The reshard of \"Reshard under load\" (%d orders, %d customers, 2 → 4 shards), once it streams: two `shardgate\n"+
		"serve`, one pgbench on each (%d clients each, `-M simple`, per-transaction logs `-l`) running the same write script\n"+
		"(insert; non-key update; shard-key change as delete + insert; delete; each with its ledger row in main) for %s;\n"+
		"switch, reverse and switch again at a quarter, half and three quarters of it. 1-minute load average: %s before the\n"+
		"load, %s after the last switch.\n\n", cfg.orders, cfg.customers, cfg.clients, cfg.switchLoad, r.loadBefore, r.loadAfter)
	b.WriteString("| | transactions started during it | p50 ms | p99 ms | max ms | started while writes were held | their p50 / p99 / max ms (pause seen) | client pause ms (proxies) | held writes' waits p50 / p99 / max ms (proxies) | gate pause ms | held | steps (ms) |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n")
	msf := func(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d.Microseconds())/1000) }
	for i, sw := range r.switches {
		var steps []string
		for _, st := range sw.rec.Steps {
			steps = append(steps, fmt.Sprintf("%s %.0f", st.Name, st.MS))
		}
		fmt.Fprintf(&b, "| %s #%d | %d | %s | %s | %s | %d | %s / %s / %s | %.1f | %.1f / %.1f / %.1f | %.1f | %d | %s |\n", sw.op, i+1, sw.n, msf(sw.p50), msf(sw.p99), msf(sw.max),
			sw.hn, msf(sw.hp50), msf(sw.hp99), msf(sw.hmax), sw.rec.ClientPauseMS, sw.rec.WaitP50MS, sw.rec.WaitP99MS, sw.rec.WaitMaxMS, sw.rec.PauseMS, sw.rec.Held, strings.Join(steps, ", "))
	}
	fmt.Fprintf(&b, "\nAll %d transactions of both pgbench: p50 %s ms, p99 %s ms, max %s ms; %d errors. A transaction \"started during\" a\n"+
		"switch began between the call and its return, so those rows include the steps before the hold (the stream back's slots),\n"+
		"which do not pause writes; \"started while writes were held\" are those that began from the end of those steps to the\n"+
		"switch's return: their latency is the pause the clients saw. The client pause is the proxies' own figure (the longest\n"+
		"of the two: a proxy's hold to its first held write answered on the new shards), with the p50 / p99 (the worse proxy's)\n"+
		"and max of the held writes' waits from the hold to their answer; the gate pause is a proxy's first statement held to\n"+
		"its release (the longest of the two), which leaves out the answer.\n\n",
		r.txns, msf(r.p50), msf(r.p99), msf(r.maxLat), r.pgbenchErrors)
	if len(r.vdiffProblems) == 0 {
		fmt.Fprintf(&b, "VDiff once everything was applied (the stream back, to the old shards): clean, %d rows matching.\n", r.vdiffRows)
	} else {
		fmt.Fprintf(&b, "VDiff: **%d differences**: %s.\n", len(r.vdiffProblems), strings.Join(r.vdiffProblems, "; "))
	}
	verdict := "0 lost, 0 duplicated, 0 different on the new shards and on the old ones"
	if !r.oracleClean() {
		verdict = "**the oracle found differences**"
	}
	fmt.Fprintf(&b, "Oracle (the tables recomputed from the ledger): %s.\n", verdict)
	return b.String()
}
