package main

// The proxy's CPU time per statement: utime + stime of the proxy process
// (pgbouncer, shardgate) from /proc/<pid>/stat before and after each
// measured pgbench run, over the statements pgbench ran. Under load it is
// steadier than tps: another process taking the CPUs slows every target's
// tps, but not the CPU the proxy spends on a statement. The PostgreSQL
// servers behind the target (their postmasters and every child) are
// measured the same way, so a target whose tps is lower for the servers'
// sake (two clusters sharing the CPUs) shows it there, not in the proxy's
// figure.

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/shardgate/shardgate/bench/internal/benchkit"
)

// cpuRun is a proxy's CPU time at the start of one pgbench run.
type cpuRun struct {
	pid   int // 0: the target is no proxy process (direct), or it could not be read
	cpu0  time.Duration
	load0 string
	// servers are the postmasters of the clusters behind the target, pg0
	// their CPU time (with their children's) at the start; nil if one
	// could not be read.
	servers []int
	pg0     time.Duration
}

func (h *harness) startCPU(t *target) cpuRun {
	c := cpuRun{load0: benchkit.LoadAvg()}
	c.servers, c.pg0 = h.serverCPU(t)
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
	if statements <= 0 {
		return
	}
	if c.servers != nil {
		if pg, err := treeCPU(c.servers); err == nil {
			r.pgPerStmt = float64((pg - c.pg0).Microseconds()) / float64(statements)
		}
	}
	if c.pid == 0 {
		return
	}
	cpu, err := benchkit.ReadCPU(c.pid)
	if err != nil {
		return
	}
	r.cpu = cpu - c.cpu0
	r.cpuPerStmt = float64(r.cpu.Microseconds()) / float64(statements)
}

// serverCPU finds the postmasters behind t (A; B and C for the sharded
// target) and reads their CPU time.
func (h *harness) serverCPU(t *target) ([]int, time.Duration) {
	clusters := h.env.Clusters[:1]
	if t.name == tTwo {
		clusters = h.env.Clusters[1:3]
	}
	var pids []int
	for _, cl := range clusters {
		b, err := os.ReadFile(filepath.Join(cl.DataDir, "postmaster.pid"))
		if err != nil {
			return nil, 0
		}
		first, _, _ := strings.Cut(string(b), "\n")
		pid, err := strconv.Atoi(strings.TrimSpace(first))
		if err != nil {
			return nil, 0
		}
		pids = append(pids, pid)
	}
	cpu, err := treeCPU(pids)
	if err != nil {
		return nil, 0
	}
	return pids, cpu
}

// treeCPU sums benchkit.ReadTreeCPU over servers.
func treeCPU(servers []int) (time.Duration, error) {
	var total time.Duration
	for _, pid := range servers {
		cpu, err := benchkit.ReadTreeCPU(pid)
		if err != nil {
			return 0, err
		}
		total += cpu
	}
	return total, nil
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
	var s string
	if r.cpuPerStmt > 0 {
		s = fmt.Sprintf(", proxy CPU %.1f µs per statement (%s in all)", r.cpuPerStmt, r.cpu.Round(10*time.Millisecond))
	}
	if r.pgPerStmt > 0 {
		s += fmt.Sprintf(", PostgreSQL CPU %.1f µs per statement", r.pgPerStmt)
	}
	return s
}
