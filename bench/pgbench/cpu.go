package main

// The proxy's CPU time per statement: utime + stime of the proxy process
// (pgbouncer, shardgate) from /proc/<pid>/stat before and after each
// measured pgbench run, over the statements pgbench ran. Under load it is
// steadier than tps: another process taking the CPUs slows every target's
// tps, but not the CPU the proxy spends on a statement.

import (
	"fmt"
	"time"

	"github.com/shardgate/shardgate/bench/internal/benchkit"
)

// cpuRun is a proxy's CPU time at the start of one pgbench run.
type cpuRun struct {
	pid   int // 0: the target is no proxy process (direct), or it could not be read
	cpu0  time.Duration
	load0 string
}

func (h *harness) startCPU(t *target) cpuRun {
	c := cpuRun{load0: benchkit.LoadAvg()}
	if t.proc == nil || t.proc.Exited() {
		return c
	}
	cpu, err := benchkit.ReadCPU(t.proc.Pid())
	if err != nil {
		h.logf("  CPU time of %s: %v", t.name, err)
		return c
	}
	c.pid, c.cpu0 = t.proc.Pid(), cpu
	return c
}

// finish records in r the proxy's CPU time over the run and per statement.
func (c cpuRun) finish(r *result, statements int64) {
	if c.pid == 0 || statements <= 0 {
		return
	}
	cpu, err := benchkit.ReadCPU(c.pid)
	if err != nil {
		return
	}
	r.cpu = cpu - c.cpu0
	r.cpuPerStmt = float64(r.cpu.Microseconds()) / float64(statements)
}

// statementsPerTxn is how many statements one pgbench transaction sends:
// pgbench -S one SELECT; the TPC-B-like script BEGIN, three UPDATEs, a
// SELECT, an INSERT and END.
func (h *harness) statementsPerTxn() int64 {
	if h.cfg.scenario == scTPCB {
		return 7
	}
	return 1
}

// cpuNote is the log's mention of the proxy's CPU time, if measured.
func (r result) cpuNote() string {
	if r.cpuPerStmt == 0 {
		return ""
	}
	return fmt.Sprintf(", proxy CPU %.1f µs per statement (%s in all)", r.cpuPerStmt, r.cpu.Round(10*time.Millisecond))
}
