// Command pgbench is shardgate's benchmark harness (run it with
// `bash bench/run.sh`, or `make bench`). In one run it
//
//   - starts throwaway PostgreSQL clusters with internal/testenv: A (the
//     direct and single-shard target) and, for the sharded target, B and C;
//   - loads pgbench's tables (pgbench -i) into each, and removes from B the
//     accounts whose aid hashes to shard 80- and from C those of -80, so the
//     sharded target only answers right if it routes right;
//   - starts pgbouncer (transaction mode) in front of A and shardgate twice:
//     one.yaml (everything on A) and two.yaml (pgbench_accounts sharded by
//     xxhash(aid) over B and C);
//   - runs pgbench for every target and query mode (simple, extended,
//     prepared) and prints a Markdown table of tps, latency and ratios,
//     which -write-doc also puts into docs/benchmarks.md;
//   - stops everything it started, also on error and on Ctrl-C.
//
// A target that cannot be set up (shardgate not built yet, a topology the
// proxy refuses, a proxy that crashes) shows its error in the table; the
// other targets are still measured.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/shardgate/shardgate/bench/internal/benchkit"
	"github.com/shardgate/shardgate/internal/testenv"
)

// Targets.
const (
	tDirect    = "direct"
	tPgbouncer = "pgbouncer"
	tOne       = "shardgate-one"
	tTwo       = "shardgate-two"
	// tBase is shardgate-one served by the -baseline binary: a build of an
	// older commit, measured in the same interleaved rounds, so a change
	// is compared with what came before it on one machine at one time.
	tBase = "shardgate-base"
	// tRole is shardgate-one with clients logging in by SCRAM as their own
	// role (proxy.auth.identity: client): each backend session runs as
	// that role, from a per-role pool. Asked for with -targets.
	tRole = "shardgate-role"
	// tNoStats is shardgate-one with the query statistics off
	// (proxy.query_stats.max: 0), to measure what SHOW QUERIES costs a
	// point read. Asked for with -targets.
	tNoStats = "shardgate-nostats"
)

// Roles of target tRole: the client's and backend's role and its password.
const (
	roleUser     = "sg_bench"
	rolePassword = "sg-bench-password"
)

var allTargets = []string{tDirect, tPgbouncer, tOne, tTwo}

// Scenarios.
const (
	scSelect = "select" // pgbench -S
	scTPCB   = "tpcb"   // pgbench's default TPC-B-like script
)

const bouncerNoPrepared = "pgbouncer < 1.21 has no prepared statements in transaction mode"

type config struct {
	seconds      int
	scale        int
	clients      []int // pgbench -c: the table is measured at each
	jobs         int
	poolSize     int
	scenario     string
	modes        []string
	targets      []string
	writeDoc     bool
	docPath      string
	repo         string
	shardgateBin string
	baselineBin  string
	pgbenchBin   string
	keep         bool
	idle         int    // idle clients per proxy (idle.go; 0: not measured)
	storm        int    // clients connecting at once per proxy (idle.go)
	profile      string // directory for the proxy's CPU and allocation profiles (profile.go)
	perf         bool   // count the proxies' system calls and context switches per statement (perf.go)
	warmup       int
	rounds       int
	timeout      time.Duration
}

func parseFlags(args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet("bench/pgbench", flag.ContinueOnError)
	defSeconds := 15
	if s := os.Getenv("BENCH_SECONDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return c, fmt.Errorf("BENCH_SECONDS=%q: want a positive number of seconds", s)
		}
		defSeconds = n
	}
	var modes, targets, clients string
	fs.IntVar(&c.seconds, "T", defSeconds, "seconds per pgbench run; $BENCH_SECONDS sets the default")
	fs.IntVar(&c.scale, "scale", 10, "pgbench scale factor (-s) of the data")
	fs.StringVar(&clients, "c", "8,64", "pgbench clients (-c), comma-separated: the table is measured at each")
	fs.IntVar(&c.jobs, "j", 2, "pgbench threads (-j)")
	fs.IntVar(&c.poolSize, "pool", 16, "backend pool size of pgbouncer and shardgate")
	fs.StringVar(&c.scenario, "scenario", scSelect, "select (pgbench -S) or tpcb (pgbench's TPC-B-like default script)")
	fs.StringVar(&modes, "modes", "simple,extended,prepared", "pgbench query modes (-M), comma-separated")
	fs.StringVar(&targets, "targets", "", "comma-separated subset of "+strings.Join(allTargets, ",")+
		" (default: all for select; direct,pgbouncer,shardgate-one for tpcb)")
	fs.BoolVar(&c.writeDoc, "write-doc", false, "also write the table into docs/benchmarks.md")
	fs.StringVar(&c.docPath, "doc", "", "the file -write-doc writes (default: REPO/docs/benchmarks.md)")
	fs.StringVar(&c.repo, "repo", "", "the shardgate repository (default: found from the working directory)")
	fs.StringVar(&c.shardgateBin, "shardgate", "", "a prebuilt shardgate binary (default: go build ./cmd/shardgate)")
	fs.StringVar(&c.baselineBin, "baseline", "", "a shardgate binary of an older build: adds target "+tBase+" (one.yaml served by it)")
	fs.StringVar(&c.pgbenchBin, "pgbench", "", "the pgbench binary (default: next to the PostgreSQL server binaries, else $PATH)")
	fs.IntVar(&c.warmup, "warmup", 3, "seconds of unmeasured pgbench per target before the measured runs (0: none)")
	fs.IntVar(&c.rounds, "rounds", 1, "run the whole target × mode matrix this many times, interleaved, and report medians")
	fs.IntVar(&c.idle, "idle", 0, "also measure this many idle clients per proxy (pgbouncer, shardgate-one): memory per client, connect + first query rate")
	fs.IntVar(&c.storm, "storm", 0, "also connect this many clients at once per proxy, each running one query, while one session keeps querying")
	fs.StringVar(&c.profile, "profile", "", "write CPU and allocation profiles of each shardgate target under pgbench into this directory, and their merge (default.pgo)")
	fs.BoolVar(&c.perf, "perf", false, "count each proxy's system calls and context switches per statement with perf stat during every measured run")
	fs.BoolVar(&c.keep, "keep", false, "keep the temporary directory (logs, topology files, pgbouncer.ini)")
	fs.DurationVar(&c.timeout, "timeout", 0, "bound on the whole run (default: 15m of setup plus T+30s per pgbench run)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if c.warmup < 0 {
		return c, errors.New("-warmup must not be negative")
	}
	if c.seconds < 1 || c.scale < 1 || c.jobs < 1 || c.poolSize < 1 || c.rounds < 1 {
		return c, errors.New("-T, -scale, -j, -pool and -rounds must be positive")
	}
	if c.idle < 0 || c.storm < 0 {
		return c, errors.New("-idle and -storm must not be negative")
	}
	for _, s := range benchkit.SplitList(clients) {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return c, fmt.Errorf("-c: %q is not a positive number of clients", s)
		}
		c.clients = append(c.clients, n)
	}
	if len(c.clients) == 0 {
		return c, errors.New("-c: no client count")
	}
	if c.scenario != scSelect && c.scenario != scTPCB {
		return c, fmt.Errorf("-scenario %q: want select or tpcb", c.scenario)
	}
	for _, m := range benchkit.SplitList(modes) {
		if m != "simple" && m != "extended" && m != "prepared" {
			return c, fmt.Errorf("-modes: unknown mode %q", m)
		}
		c.modes = append(c.modes, m)
	}
	if len(c.modes) == 0 {
		return c, errors.New("-modes: no mode")
	}
	if targets == "" {
		c.targets = allTargets
		if c.scenario == scTPCB {
			c.targets = []string{tDirect, tPgbouncer, tOne}
		}
	} else {
		want := map[string]bool{}
		for _, t := range benchkit.SplitList(targets) {
			if !contains(allTargets, t) && t != tBase && t != tRole && t != tNoStats {
				return c, fmt.Errorf("-targets: unknown target %q", t)
			}
			want[t] = true
		}
		for _, t := range append(allTargets, tNoStats, tRole, tBase) { // keep the canonical order
			if want[t] {
				c.targets = append(c.targets, t)
			}
		}
	}
	switch {
	case c.baselineBin != "" && !contains(c.targets, tBase):
		c.targets = append(c.targets, tBase)
	case c.baselineBin == "" && contains(c.targets, tBase):
		return c, errors.New("-targets: " + tBase + " needs -baseline BINARY")
	}
	if c.repo == "" {
		r, err := benchkit.FindRepo()
		if err != nil {
			return c, err
		}
		c.repo = r
	}
	if c.docPath == "" {
		c.docPath = filepath.Join(c.repo, "docs", "benchmarks.md")
	}
	if c.timeout == 0 {
		runs := len(c.modes) * len(c.targets) * c.rounds * len(c.clients)
		c.timeout = 15*time.Minute + time.Duration(c.idle+c.storm)*20*time.Millisecond*time.Duration(c.rounds) + time.Duration(runs)*(time.Duration(c.seconds)*time.Second+30*time.Second) +
			time.Duration(len(c.targets))*(time.Duration(c.warmup)*time.Second+30*time.Second)
	}
	return c, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// target is one thing pgbench talks to.
type target struct {
	name  string
	port  int
	desc  string
	proc  *benchkit.Proc // the proxy process, if any
	debug int            // shardgate's --metrics port (pprof), 0 if none
	err   error          // set-up failure: every run of the target reports it
	check string         // the routing check's verdict (shardgate)
}

// user is the role pgbench logs in as.
func (t *target) user() string {
	if t.name == tRole {
		return roleUser
	}
	return "postgres"
}

type harness struct {
	cfg     config
	tmp     string
	env     *testenv.Env
	procs   []*benchkit.Proc
	targets map[string]*target
	pgbench string

	shardgateBin string
	shardgateErr error

	bouncerVersion  string
	bouncerPrepared bool
	shardRows       []int64
	pgVersion       string
}

func (h *harness) logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
}

func main() {
	os.Exit(run())
}

func run() int {
	cfg, err := parseFlags(os.Args[1:])
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 2
	}
	sigCtx, stopSignals := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stopSignals()
	go func() {
		<-sigCtx.Done()
		// A second Ctrl-C kills the harness at once; the testenv watchdog
		// and Pdeathsig still take the servers down.
		stopSignals()
	}()
	ctx, cancel := context.WithTimeout(sigCtx, cfg.timeout)
	defer cancel()

	h := &harness{cfg: cfg, targets: map[string]*target{}}
	defer h.cleanup()
	rep, err := h.run(ctx)
	if rep != nil {
		md := rep.markdown()
		fmt.Print("\n" + md)
		if cfg.writeDoc && err == nil {
			if werr := os.MkdirAll(filepath.Dir(cfg.docPath), 0o755); werr != nil {
				err = werr
			} else if werr := benchkit.WriteSection(cfg.docPath, md); werr != nil {
				err = werr
			} else {
				h.logf("wrote %s", cfg.docPath)
			}
		}
	}
	switch {
	case sigCtx.Err() != nil:
		h.logf("interrupted; cleaning up")
		return 130
	case ctx.Err() != nil:
		h.logf("the run took longer than -timeout %s; cleaning up", cfg.timeout)
		return 1
	case err != nil:
		h.logf("%v", err)
		return 1
	}
	return 0
}

// cleanup stops proxies, pgbouncer and the clusters, and removes the
// temporary directory. It is bounded: every stop escalates to SIGKILL.
func (h *harness) cleanup() {
	for i := len(h.procs) - 1; i >= 0; i-- {
		h.procs[i].Stop(10 * time.Second)
	}
	if h.env != nil {
		if err := h.env.Stop(); err != nil {
			h.logf("stop clusters: %v", err)
		}
	}
	if h.tmp != "" {
		if h.cfg.keep {
			h.logf("kept %s", h.tmp)
		} else {
			_ = os.RemoveAll(h.tmp)
		}
	}
}

func (h *harness) run(ctx context.Context) (*report, error) {
	cfg := h.cfg
	var err error
	if h.pgbench, err = findPgbench(cfg.pgbenchBin); err != nil {
		return nil, err
	}
	if h.tmp, err = os.MkdirTemp("", "shardgate-bench-"); err != nil {
		return nil, err
	}
	// pgbouncer runs as postgres and must reach its directory inside.
	if err := os.Chmod(h.tmp, 0o755); err != nil {
		return nil, err
	}
	needTwo := contains(cfg.targets, tTwo)
	needShardgate := needTwo || contains(cfg.targets, tOne) || contains(cfg.targets, tRole) || contains(cfg.targets, tNoStats)

	// Build the proxy while the clusters start.
	built := make(chan struct{})
	if needShardgate {
		go func() {
			defer close(built)
			h.buildShardgate(ctx)
		}()
	} else {
		close(built)
	}
	defer func() { <-built }()

	n := 1
	if needTwo {
		n = 3
	}
	setupCtx, cancelSetup := context.WithTimeout(ctx, 15*time.Minute)
	defer cancelSetup()
	h.logf("starting %d PostgreSQL cluster(s)", n)
	env, err := testenv.Start(setupCtx, testenv.Options{
		N:         n,
		Databases: []string{"bench"},
		Settings: map[string]string{
			"max_connections": "300",
			"shared_buffers":  "256MB",
		},
		Log: benchkit.PrefixWriter{Prefix: "bench: "},
	})
	if err != nil {
		return nil, fmt.Errorf("start clusters: %w", err)
	}
	h.env = env
	if err := h.initData(setupCtx); err != nil {
		return nil, err
	}
	if conn, err := env.Clusters[0].Conn(setupCtx, "bench"); err == nil {
		_ = conn.QueryRow(setupCtx, "SHOW server_version").Scan(&h.pgVersion)
		conn.Close(context.Background())
	}

	// Targets. Failures here belong to the target, not to the run.
	for _, name := range cfg.targets {
		t := &target{name: name}
		h.targets[name] = t
		switch name {
		case tDirect:
			t.port = env.Clusters[0].Port
			t.desc = "PostgreSQL A itself"
		case tPgbouncer:
			t.desc = "pgbouncer, pool_mode = transaction, in front of A"
			t.err = h.startPgbouncer(setupCtx, t)
		case tOne, tTwo, tBase, tRole, tNoStats:
			<-built
			if name == tNoStats {
				t.desc = "shardgate, one.yaml with proxy.query_stats.max: 0 (no statistics by fingerprint)"
			} else if name == tRole {
				t.desc = "shardgate, one.yaml with scram-sha-256 and identity: client: each client runs on A as its own role (" + roleUser + "), from a per-role pool"
			} else if name == tBase {
				t.desc = "shardgate built from an older commit (-baseline " + cfg.baselineBin + "), one.yaml"
			} else if name == tOne {
				t.desc = "shardgate, one.yaml: one cluster (A), only the main group: every statement goes to A"
			} else {
				t.desc = "shardgate, two.yaml: pgbench_accounts sharded by xxhash(aid), -80 on B and 80- on C; other tables on B (main)"
			}
			t.err = h.startShardgate(setupCtx, t)
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if t.err != nil {
			h.logf("target %s unavailable: %v", name, t.err)
		} else {
			h.logf("target %s ready on 127.0.0.1:%d", name, t.port)
		}
	}

	// Warm every target up once (backend pools filled, caches hot), so the
	// first measured run of a target does not pay for it.
	if cfg.warmup > 0 {
		for _, name := range cfg.targets {
			if t := h.targets[name]; t.err == nil && ctx.Err() == nil {
				h.pgbenchRun(ctx, t, "simple", cfg.clients[0], cfg.warmup, "warmup")
			}
		}
	}

	rep := h.newReport()
	load0 := benchkit.LoadAvg()
	// Rounds interleave targets and modes, so that a slow spell of the
	// machine hits every target alike; each round starts the targets one
	// further along, so that none is always the one run last (when other
	// work on the machine makes the load rise through a round).
	type cell struct {
		target, mode string
		clients      int
	}
	samples := map[cell][]result{}
runs:
	for round := 1; round <= cfg.rounds; round++ {
		for _, clients := range cfg.clients {
			for _, mode := range cfg.modes {
				for _, name := range roundOrder(cfg.targets, round) {
					key := cell{name, mode, clients}
					if prev := samples[key]; len(prev) > 0 && (prev[0].setupErr || prev[0].na != "") {
						continue // once is enough
					}
					r := h.runOne(ctx, h.targets[name], mode, clients)
					if ctx.Err() != nil { // interrupted or out of time: report what is complete
						rep.notes = append(rep.notes, "**Incomplete run**: "+context.Cause(ctx).Error()+"; later runs were skipped.")
						break runs
					}
					samples[key] = append(samples[key], r)
				}
			}
		}
	}
	for _, clients := range cfg.clients {
		for _, mode := range cfg.modes {
			for _, name := range cfg.targets {
				if s := samples[cell{name, mode, clients}]; len(s) > 0 {
					rep.results = append(rep.results, combine(s))
				}
			}
		}
	}
	rep.notes = append(rep.notes, fmt.Sprintf("Load average (1 min) before the measured runs: %s; after: %s. "+
		"Anything else running on the machine shows up in the figures.", load0, benchkit.LoadAvg()))
	if ctx.Err() == nil && (cfg.idle > 0 || cfg.storm > 0) {
		rep.clientsSection = h.clientScenarios(ctx) // idle.go
	}
	if ctx.Err() == nil && cfg.profile != "" {
		if err := h.profile(ctx); err != nil { // profile.go
			return rep, err
		}
	}
	if ctx.Err() != nil {
		return rep, ctx.Err()
	}
	for _, m := range cfg.modes {
		for _, c := range cfg.clients {
			if r := rep.find(tDirect, m, c); r != nil && !r.ok {
				return rep, fmt.Errorf("the direct baseline failed in mode %s at %d clients: %s", m, c, r.err)
			}
		}
	}
	return rep, nil
}

// roundOrder is the order of the targets in round (from 1): each round
// starts one further along.
func roundOrder(targets []string, round int) []string {
	k := (round - 1) % len(targets)
	return append(slices.Clone(targets[k:]), targets[:k]...)
}

// runOne runs pgbench once against a target.
func (h *harness) runOne(ctx context.Context, t *target, mode string, clients int) result {
	r := result{target: t.name, mode: mode, clients: clients}
	if t.name == tPgbouncer && mode == "prepared" && !h.bouncerPrepared && t.err == nil {
		r.na = bouncerNoPrepared
	}
	if t.err != nil {
		r.err, r.setupErr = t.err.Error(), true
		return r
	}
	if t.proc != nil && t.proc.Exited() {
		r.err = t.proc.ExitError().Error()
		return r
	}
	cpu := h.startCPU(t)                       // cpu.go
	perf := h.startPerf(ctx, t, h.cfg.seconds) // perf.go
	out, err := h.pgbenchRun(ctx, t, mode, clients, h.cfg.seconds, "run")
	r.ran = true
	tps, lat, txns, perr := parsePgbench(out)
	cpu.finish(&r, txns*h.statementsPerTxn())
	h.finishPerf(perf, &r, tps)
	switch {
	case err != nil:
		r.err = fmt.Sprintf("pgbench failed (%v): %s", err, pgbenchError(out))
		if t.proc != nil && t.proc.Exited() {
			r.err += "; " + t.proc.ExitError().Error()
		}
	case perr != nil && tps == 0:
		r.err = perr.Error() + ": " + benchkit.LastLines(strings.TrimSpace(out), 3)
	default:
		r.ok, r.tps, r.latency, r.txns = true, tps, lat, txns
		if perr != nil {
			r.err = perr.Error()
		}
	}
	if r.ok {
		h.logf("  %.0f tps, %.3f ms%s; load average %s → %s", r.tps, r.latency, r.cpuNote(), cpu.load0, benchkit.LoadAvg())
		if n := r.perfNote(); n != "" {
			h.logf("  per statement: %s", n)
		}
	} else {
		h.logf("  %s", r.err)
	}
	return r
}

// pgbenchRun runs the scenario's pgbench against t for secs seconds.
func (h *harness) pgbenchRun(ctx context.Context, t *target, mode string, clients, secs int, kind string) (string, error) {
	args := []string{}
	if h.cfg.scenario == scSelect {
		args = append(args, "-S")
	}
	args = append(args, "-c", strconv.Itoa(clients), "-j", strconv.Itoa(h.cfg.jobs),
		"-T", strconv.Itoa(secs), "-M", mode, "-n",
		"-h", "127.0.0.1", "-p", strconv.Itoa(t.port), "-U", t.user(), "bench")
	h.logf("%s %s, %s: pgbench %s", kind, t.name, mode, strings.Join(args, " "))
	logPath := filepath.Join(h.tmp, fmt.Sprintf("%s-%s-%s-c%d.log", kind, t.name, mode, clients))
	env := pgbenchEnv()
	if t.name == tRole {
		env = append(env, "PGPASSWORD="+rolePassword)
	}
	out, err := benchkit.RunCmd(ctx, time.Duration(secs)*time.Second+30*time.Second, logPath, env, h.pgbench, args...)
	if kind == "warmup" && err != nil {
		h.logf("  warm-up failed (%v): %s", err, pgbenchError(out))
	}
	return out, err
}

// newReport fills in everything but the results.
func (h *harness) newReport() *report {
	cfg := h.cfg
	r := &report{targets: cfg.targets, modes: cfg.modes, clients: cfg.clients, rounds: cfg.rounds, perf: cfg.perf}
	var wl string
	if cfg.scenario == scSelect {
		r.heading = "## pgbench -S (issue 3)"
		wl = "-S "
	} else {
		r.heading = "## pgbench TPC-B (-scenario tpcb)"
	}
	r.workload = fmt.Sprintf("pgbench %s-c <clients> -j %d -T %d -M <mode> -n", wl, cfg.jobs, cfg.seconds)
	r.date = time.Now().UTC().Format("2006-01-02 15:04 MST")
	r.machine = benchkit.Machine()
	r.versions = "PostgreSQL " + h.pgVersion
	if h.bouncerVersion != "" {
		r.versions += ", pgbouncer " + h.bouncerVersion
	}
	r.versions += ", " + runtime.Version() + ", shardgate " + benchkit.GitDescribe(cfg.repo)
	r.command = os.Getenv("BENCH_INVOKED_AS")
	if r.command == "" {
		r.command = "go run ./bench/pgbench " + strings.Join(os.Args[1:], " ")
	}
	r.command = strings.TrimSpace(r.command)
	r.setup = append(r.setup, fmt.Sprintf("Data: `pgbench -i -s %d` (%d accounts); clusters from internal/testenv "+
		"(fsync, synchronous_commit and full_page_writes off; shared_buffers 256MB; max_connections 300), warmed with pg_prewarm. "+
		"pgbench, the proxies and PostgreSQL share the machine's CPUs; all traffic is over 127.0.0.1.",
		cfg.scale, int64(cfg.scale)*accountsPerScale))
	for _, name := range cfg.targets {
		t := h.targets[name]
		line := fmt.Sprintf("%s: %s", name, t.desc)
		if t.err == nil && t.check != "" {
			line += "; routing check: " + t.check
		}
		if name == tTwo && len(h.shardRows) == 2 {
			line += fmt.Sprintf("; accounts: %d on B, %d on C", h.shardRows[0], h.shardRows[1])
		}
		if t.err != nil {
			line += " — unavailable, see the notes under the table"
		}
		r.setup = append(r.setup, benchkit.Cell(line))
	}
	if cfg.scenario == scSelect {
		r.goals = []goal{
			{text: "shardgate ≥ 1.0× pgbouncer on simple and extended", modes: []string{"simple", "extended"}, against: tPgbouncer, ratio: 1.0},
			{text: "shardgate ≥ 0.8× direct on prepared", modes: []string{"prepared"}, against: tDirect, ratio: 0.8},
		}
	}
	r.notes = append(r.notes, "tps excludes connection set-up; latency is pgbench's average per transaction.")
	return r
}

// findPgbench prefers the pgbench next to the server binaries testenv uses.
func findPgbench(flagValue string) (string, error) {
	if flagValue != "" {
		return flagValue, nil
	}
	if dir, err := testenv.FindBinaries(); err == nil {
		p := filepath.Join(dir, "pgbench")
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p, nil
		}
	}
	p, err := exec.LookPath("pgbench")
	if err != nil {
		return "", errors.New("pgbench not found (Debian: apt-get install postgresql-contrib or postgresql-client)")
	}
	return p, nil
}

// pgbenchEnv is the environment of pgbench: no inherited libpq settings, no
// TLS (every target is on loopback), a bounded connect.
func pgbenchEnv() []string {
	return append(benchkit.ChildEnv(), "PGSSLMODE=disable", "PGCONNECT_TIMEOUT=10", "PGAPPNAME=shardgate-bench")
}
