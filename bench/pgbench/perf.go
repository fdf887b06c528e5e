package main

// System calls and context switches per statement (-perf): while pgbench
// runs, `perf stat` counts the proxy process's system calls (all, and the
// kinds a relay makes) and context switches from the kernel's tracepoints,
// for the middle of the run (from a second after pgbench starts, for T-2
// seconds); the counts are divided by the statements run in that window
// (tps × its length). The tracepoints cost the proxy a little CPU, the
// same for every target; leave -perf off for the CPU and tps figures
// that matter.

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shardgate/shardgate/bench/internal/benchkit"
)

// perfEvents are what -perf counts: every system call, the context
// switches, then the kinds of system call shown one by one (Go's
// read/write/epoll_pwait, pgbouncer's recvfrom/sendto/epoll_wait).
var perfEvents = []string{
	"raw_syscalls:sys_enter",
	"sched:sched_switch",
	"syscalls:sys_enter_read",
	"syscalls:sys_enter_write",
	"syscalls:sys_enter_recvfrom",
	"syscalls:sys_enter_sendto",
	"syscalls:sys_enter_epoll_pwait",
	"syscalls:sys_enter_epoll_wait",
	"syscalls:sys_enter_futex",
	"syscalls:sys_enter_nanosleep",
	"syscalls:sys_enter_sched_yield",
}

// perfCounts are one perf stat window's counts, by event, and its length.
type perfCounts struct {
	counts map[string]float64
	window time.Duration
	err    error
}

// startPerf counts t's proxy process during the run of secs seconds; the
// channel delivers the counts when the window ends (nil channel: not
// measured).
func (h *harness) startPerf(ctx context.Context, t *target, secs int) <-chan perfCounts {
	if !h.cfg.perf || t.proc == nil || t.proc.Exited() || secs < 3 {
		return nil
	}
	pid := t.proc.Pid()
	window := time.Duration(secs-2) * time.Second
	ch := make(chan perfCounts, 1)
	go func() {
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
			ch <- perfCounts{err: ctx.Err()}
			return
		}
		args := []string{"stat", "-x", ",", "-p", strconv.Itoa(pid), "-e", strings.Join(perfEvents, ","),
			"--", "sleep", strconv.FormatFloat(window.Seconds(), 'f', -1, 64)}
		out, err := exec.CommandContext(ctx, "perf", args...).CombinedOutput()
		if err != nil {
			ch <- perfCounts{err: fmt.Errorf("perf stat: %v: %s", err, benchkit.LastLines(string(out), 2))}
			return
		}
		ch <- parsePerf(string(out), window)
	}()
	return ch
}

// parsePerf reads perf stat -x, output: count,unit,event,...
func parsePerf(out string, window time.Duration) perfCounts {
	pc := perfCounts{counts: map[string]float64{}, window: window}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Split(line, ",")
		if len(f) < 3 || !slices.Contains(perfEvents, f[2]) {
			continue
		}
		n, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			pc.err = fmt.Errorf("perf stat: %s: %q", f[2], f[0])
			return pc
		}
		pc.counts[f[2]] = n
	}
	if len(pc.counts) == 0 {
		pc.err = fmt.Errorf("perf stat printed no counts: %s", benchkit.LastLines(out, 2))
	}
	return pc
}

// finishPerf waits for the counts and records them per statement in r.
func (h *harness) finishPerf(ch <-chan perfCounts, r *result, tps float64) {
	if ch == nil {
		return
	}
	pc := <-ch
	if pc.err != nil {
		h.logf("  %v", pc.err)
		return
	}
	stmts := tps * pc.window.Seconds() * float64(h.statementsPerTxn())
	if stmts <= 0 {
		return
	}
	r.perStmt = map[string]float64{}
	for ev, n := range pc.counts {
		r.perStmt[ev] = n / stmts
	}
}

// perfShort names the events in the report.
func perfShort(ev string) string {
	switch ev {
	case "raw_syscalls:sys_enter":
		return "syscalls"
	case "sched:sched_switch":
		return "switches"
	}
	return strings.TrimPrefix(ev, "syscalls:sys_enter_")
}

// perfNote is the log's and the report's mention of the counts per
// statement: "syscalls 8.8, switches 1.9, read 3.4, ...".
func (r result) perfNote() string {
	if len(r.perStmt) == 0 {
		return ""
	}
	var parts []string
	for _, ev := range perfEvents {
		if n, ok := r.perStmt[ev]; ok {
			parts = append(parts, fmt.Sprintf("%s %.2f", perfShort(ev), n))
		}
	}
	return strings.Join(parts, ", ")
}
