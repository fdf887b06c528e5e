package main

// Clients at scale (issue 13): many idle clients — the memory each costs
// a proxy, and how fast they connect and run a first query — and a
// connection storm, many clients connecting at once while an existing
// session keeps querying.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/shardgate/shardgate/bench/internal/benchkit"
)

// idleResult is one round of the idle-clients scenario on one target.
type idleResult struct {
	n          int     // clients connected
	rss0, rss1 int64   // the proxy's resident memory before and with them, bytes
	rate       float64 // connects + first query per second
	err        string
}

// stormResult is the connection storm on one target.
type stormResult struct {
	n, failed  int
	firstErr   string
	took       time.Duration
	busyOps    int64         // statements the existing session ran meanwhile
	busyMax    time.Duration // its slowest statement
	busyFailed string
}

// clientTargets are the proxies measured: pgbouncer and shardgate, those
// that are up.
func (h *harness) clientTargets() []*target {
	var ts []*target
	for _, name := range h.cfg.targets {
		if t := h.targets[name]; name != tDirect && t.err == nil && t.proc != nil && !t.proc.Exited() {
			ts = append(ts, t)
		}
	}
	return ts
}

func (h *harness) clientConfig(t *target) (*pgconn.Config, error) {
	return pgconn.ParseConfig(fmt.Sprintf("postgres://postgres@127.0.0.1:%d/bench?sslmode=disable&connect_timeout=20", t.port))
}

// rssBytes reads a process's resident memory from /proc/PID/statm.
func rssBytes(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/statm", pid))
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0, fmt.Errorf("/proc/%d/statm: %q", pid, b)
	}
	pages, err := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize()), err
}

// idleRun connects n clients to t one after another, each running one
// query and then staying idle, and measures the proxy's memory with them.
func (h *harness) idleRun(ctx context.Context, t *target, n int) idleResult {
	var r idleResult
	cfg, err := h.clientConfig(t)
	if err != nil {
		r.err = err.Error()
		return r
	}
	var conns []*pgconn.PgConn
	defer func() {
		for _, c := range conns {
			_ = c.Close(context.Background())
		}
		time.Sleep(2 * time.Second) // let the proxy see them go before the next target
	}()
	if r.rss0, err = rssBytes(t.proc.Pid()); err != nil {
		r.err = err.Error()
		return r
	}
	start := time.Now()
	for i := 0; i < n && ctx.Err() == nil; i++ {
		c, err := pgconn.ConnectConfig(ctx, cfg)
		if err == nil {
			_, err = c.Exec(ctx, "SELECT 1").ReadAll()
			conns = append(conns, c)
		}
		if err != nil {
			r.err = fmt.Sprintf("client %d: %v", i+1, err)
			break
		}
	}
	took := time.Since(start)
	r.n = len(conns)
	r.rate = float64(r.n) / took.Seconds()
	time.Sleep(time.Second)
	if r.rss1, err = rssBytes(t.proc.Pid()); err != nil && r.err == "" {
		r.err = err.Error()
	}
	h.logf("  %d idle clients: %.0f connects/s, RSS %.1f → %.1f MiB (%.2f KiB per client)%s",
		r.n, r.rate, mib(r.rss0), mib(r.rss1), float64(r.rss1-r.rss0)/float64(max(r.n, 1))/1024, errSuffix(r.err))
	return r
}

// stormRun connects n clients to t at once, each running one query, while
// one session that was there before keeps running point reads.
func (h *harness) stormRun(ctx context.Context, t *target, n int) stormResult {
	r := stormResult{n: n}
	cfg, err := h.clientConfig(t)
	if err != nil {
		r.firstErr = err.Error()
		return r
	}
	busy, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		r.busyFailed = err.Error()
		return r
	}
	defer busy.Close(context.Background())
	stop := make(chan struct{})
	busyDone := make(chan struct{})
	go func() {
		defer close(busyDone)
		for i := 1; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			s := time.Now()
			_, err := busy.Exec(ctx, "SELECT abalance FROM pgbench_accounts WHERE aid = "+strconv.Itoa(1+i%1000)).ReadAll()
			if err != nil {
				r.busyFailed = err.Error()
				return
			}
			r.busyMax = max(r.busyMax, time.Since(s))
			r.busyOps++
		}
	}()
	time.Sleep(200 * time.Millisecond)
	var failed atomic.Int64
	var errMu sync.Mutex
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-gate
			c, err := pgconn.ConnectConfig(ctx, cfg)
			if err == nil {
				_, err = c.Exec(ctx, "SELECT 1").ReadAll()
				_ = c.Close(context.Background())
			}
			if err != nil {
				failed.Add(1)
				errMu.Lock()
				if r.firstErr == "" {
					r.firstErr = err.Error()
				}
				errMu.Unlock()
			}
		}()
	}
	start := time.Now()
	close(gate)
	wg.Wait()
	r.took = time.Since(start)
	close(stop)
	<-busyDone
	r.failed = int(failed.Load())
	h.logf("  storm of %d: %d failed, %s; the busy session ran %d statements, slowest %s%s",
		n, r.failed, r.took.Round(time.Millisecond), r.busyOps, r.busyMax.Round(time.Microsecond), errSuffix(r.firstErr+r.busyFailed))
	time.Sleep(2 * time.Second)
	return r
}

func errSuffix(s string) string {
	if s == "" {
		return ""
	}
	return "; error: " + s
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// clientScenarios runs the idle-clients rounds (interleaved over the
// targets) and the storms, and renders their section of the report.
func (h *harness) clientScenarios(ctx context.Context) string {
	cfg := h.cfg
	targets := h.clientTargets()
	var b strings.Builder
	b.WriteString("### Idle clients and a connection storm (issue 13)\n\n")
	if len(targets) == 0 {
		b.WriteString("No proxy target was up: not measured.\n")
		return b.String()
	}
	load0 := benchkit.LoadAvg()
	if cfg.idle > 0 {
		idle := map[string][]idleResult{}
		for round := 1; round <= cfg.rounds && ctx.Err() == nil; round++ {
			for _, t := range targets {
				h.logf("idle clients, round %d: %s", round, t.name)
				idle[t.name] = append(idle[t.name], h.idleRun(ctx, t, cfg.idle))
			}
		}
		fmt.Fprintf(&b, "%d clients connect one after another to each proxy (pgconn, no TLS), each runs `SELECT 1` and stays connected; "+
			"then the proxy's resident memory (VmRSS) is read. **per client** = (RSS with the clients − RSS before) ÷ clients, from the first round "+
			"(later rounds reuse memory the first one made the process take). **rate** = clients ÷ seconds to connect them all, each with its first query: "+
			"the median of %d interleaved round(s) (min–max).\n\n", cfg.idle, cfg.rounds)
		b.WriteString("| target | clients | RSS before (MiB) | RSS with them (MiB) | per client (KiB) | connect + first query per s | vs pgbouncer |\n")
		b.WriteString("| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n")
		var bouncerRate float64
		if rs := idle[tPgbouncer]; len(rs) > 0 {
			bouncerRate = medianRate(rs)
		}
		for _, t := range targets {
			rs := idle[t.name]
			if len(rs) == 0 {
				continue
			}
			first := rs[0]
			if first.err != "" {
				fmt.Fprintf(&b, "| %s | %d | | | | error: %s | |\n", t.name, first.n, benchkit.Cell(first.err))
				continue
			}
			rates := make([]float64, 0, len(rs))
			for _, r := range rs {
				rates = append(rates, r.rate)
			}
			vs := ""
			if bouncerRate > 0 && t.name != tPgbouncer {
				vs = fmt.Sprintf("%.2f×", medianRate(rs)/bouncerRate)
			}
			fmt.Fprintf(&b, "| %s | %d | %.1f | %.1f | %.2f | %.0f (%.0f–%.0f) | %s |\n", t.name, first.n, mib(first.rss0), mib(first.rss1),
				float64(first.rss1-first.rss0)/float64(first.n)/1024, medianRate(rs), slices.Min(rates), slices.Max(rates), vs)
		}
		b.WriteString("\n")
	}
	if cfg.storm > 0 && ctx.Err() == nil {
		fmt.Fprintf(&b, "Connection storm: %d clients connect to the proxy at the same moment, each runs `SELECT 1` and disconnects, "+
			"while a session connected before keeps running point reads on pgbench_accounts.\n\n", cfg.storm)
		b.WriteString("| target | clients at once | failed | all done after | the existing session: statements meanwhile, slowest |\n")
		b.WriteString("| --- | ---: | ---: | ---: | --- |\n")
		for _, t := range targets {
			h.logf("connection storm: %s", t.name)
			r := h.stormRun(ctx, t, cfg.storm)
			failed := strconv.Itoa(r.failed)
			if r.firstErr != "" {
				failed += " (" + benchkit.Cell(r.firstErr) + ")"
			}
			existing := fmt.Sprintf("%d, slowest %s", r.busyOps, r.busyMax.Round(time.Microsecond))
			if r.busyFailed != "" {
				existing += "; failed: " + benchkit.Cell(r.busyFailed)
			}
			fmt.Fprintf(&b, "| %s | %d | %s | %s | %s |\n", t.name, r.n, failed, r.took.Round(time.Millisecond), existing)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "Load average (1 min) before these runs: %s; after: %s.\n", load0, benchkit.LoadAvg())
	return b.String()
}

func medianRate(rs []idleResult) float64 {
	var xs []float64
	for _, r := range rs {
		if r.err == "" {
			xs = append(xs, r.rate)
		}
	}
	if len(xs) == 0 {
		return 0
	}
	return benchkit.Median(xs)
}

var errNoDebug = errors.New("the shardgate binary serves no --metrics (pprof) listener")
