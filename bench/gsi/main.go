// Command gsi is shardgate's benchmark of reads through a global secondary
// index (run it with `bash bench/run.sh -scenario gsi`). In one run it
//
//   - starts four throwaway PostgreSQL clusters with internal/testenv, one
//     shard of a group (xxhash of customer_id) on each;
//   - builds ./cmd/shardgate and runs two `shardgate serve` over them: one
//     whose topology declares orders_by_id (orders by id) active, one
//     whose topology declares it backfilling (maintained, never read);
//   - creates orders through the first proxy (which creates the lookup
//     tables) and loads it with COPY FROM STDIN through it (which writes
//     the entries);
//   - runs pgbench with three one-row reads of the same rows: by id through
//     the index, by id scattering over the four shards (the second proxy),
//     and by the shard key (customer_id and id), for each query mode;
//   - prints a Markdown report, which -write-doc puts into
//     docs/benchmarks.md as "## Global secondary index reads (issue 9)".
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/shardgate/shardgate/bench/internal/benchkit"
	"github.com/shardgate/shardgate/internal/testenv"
)

type config struct {
	rows, customers, seconds, clients, jobs, pool int
	backfill                                      bool
	batchRows                                     int
	modes                                         []string
	writeDoc                                      bool
	repo                                          string
	timeout                                       time.Duration
}

// read is one pgbench workload: the same row read a different way.
type read struct {
	name, proxy, script string
}

func reads(c config) []read {
	pick := fmt.Sprintf("\\set id random(1, %d)\n\\set c :id %% %d\n", c.rows, c.customers)
	return []read{
		{"by id through the index", "active", pick + "SELECT id, customer_id, total FROM orders WHERE id = :id;\n"},
		{"by id scattering (index backfilling)", "backfilling", pick + "SELECT id, customer_id, total FROM orders WHERE id = :id;\n"},
		{"by shard key (customer_id, id)", "active", pick + "SELECT id, customer_id, total FROM orders WHERE customer_id = :c AND id = :id;\n"},
	}
}

type result struct {
	read, mode   string
	tps, latency float64
	err          string
}

func main() { os.Exit(run()) }

func run() int {
	var c config
	var modes string
	fs := flag.NewFlagSet("bench/gsi", flag.ContinueOnError)
	fs.IntVar(&c.rows, "rows", 0, "rows of orders (default 200000; with -backfill 1000000)")
	fs.BoolVar(&c.backfill, "backfill", false, "the backfill of 1 M rows under a write load, killed and resumed, instead of the reads (-scenario gsi-backfill)")
	fs.IntVar(&c.batchRows, "batch-rows", 5000, "with -backfill: gsi backfill --batch-rows")
	fs.IntVar(&c.customers, "customers", 20000, "distinct customer_id values")
	defSecs := 15
	if s, err := strconv.Atoi(os.Getenv("BENCH_SECONDS")); err == nil && s > 0 {
		defSecs = s
	}
	fs.IntVar(&c.seconds, "T", defSecs, "seconds per pgbench run; $BENCH_SECONDS sets the default")
	fs.IntVar(&c.clients, "c", 8, "pgbench clients")
	fs.IntVar(&c.jobs, "j", 2, "pgbench threads")
	fs.IntVar(&c.pool, "pool", 16, "shardgate's backend pool size per cluster")
	fs.StringVar(&modes, "modes", "simple,prepared", "pgbench query modes (-M)")
	fs.BoolVar(&c.writeDoc, "write-doc", false, "also write the report into docs/benchmarks.md")
	fs.StringVar(&c.repo, "repo", "", "the shardgate repository (default: found from the working directory)")
	fs.DurationVar(&c.timeout, "timeout", 20*time.Minute, "bound on the whole run")
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	c.modes = benchkit.SplitList(modes)
	if c.rows == 0 {
		c.rows = 200000
		if c.backfill {
			c.rows = 1000000
		}
	}
	if c.rows < 3 || c.batchRows < 1 || c.customers < 1 || c.seconds < 1 || c.clients < 1 || c.jobs < 1 || c.pool < 1 || len(c.modes) == 0 {
		fmt.Fprintln(os.Stderr, "gsi: -rows (at least 3), -batch-rows, -customers, -T, -c, -j, -pool and -modes must be positive")
		return 2
	}
	if c.repo == "" {
		r, err := benchkit.FindRepo()
		if err != nil {
			fmt.Fprintln(os.Stderr, "gsi:", err)
			return 2
		}
		c.repo = r
	}
	sigCtx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(sigCtx, c.timeout)
	defer cancel()
	h := &harness{cfg: c}
	var md string
	if c.backfill {
		b, err := h.runBackfill(ctx)
		h.cleanup()
		md = b.markdown(err)
		return h.publish(md, err)
	}
	err := h.run(ctx)
	h.cleanup()
	md = h.markdown(err)
	return h.publish(md, err)
}

// publish prints the report and writes it into docs/benchmarks.md if
// asked (and the run succeeded).
func (h *harness) publish(md string, err error) int {
	c := h.cfg
	fmt.Print("\n" + md)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gsi:", err)
		return 1
	}
	if c.writeDoc {
		if err := benchkit.WriteSection(filepath.Join(c.repo, "docs", "benchmarks.md"), md); err != nil {
			fmt.Fprintln(os.Stderr, "gsi:", err)
			return 1
		}
	}
	return 0
}

type harness struct {
	cfg     config
	tmp     string
	env     *testenv.Env
	procs   []*benchkit.Proc
	ports   map[string]int // topology state -> proxy port
	pgbench string
	results []result
	loads   []string
	pgVer   string
}

func (h *harness) logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "gsi: "+format+"\n", args...)
}

func (h *harness) cleanup() {
	for _, p := range h.procs {
		p.Stop(10 * time.Second)
	}
	if h.env != nil {
		_ = h.env.Stop()
	}
	if h.tmp != "" {
		_ = os.RemoveAll(h.tmp)
	}
}

func (h *harness) run(ctx context.Context) error {
	c := h.cfg
	if err := h.setup(ctx); err != nil {
		return err
	}
	bin, err := benchkit.BuildShardgate(ctx, c.repo, h.tmp)
	if err != nil {
		return err
	}
	h.ports = map[string]int{}
	for _, state := range []string{"active", "backfilling"} {
		port, err := benchkit.FreePort()
		if err != nil {
			return err
		}
		file := filepath.Join(h.tmp, state+".yaml")
		if err := os.WriteFile(file, []byte(h.topology(port, state)), 0o644); err != nil {
			return err
		}
		p, err := benchkit.StartShardgate(ctx, benchkit.Shardgate{Name: "shardgate-" + state, Bin: bin, Topology: file,
			Port: port, LogPath: filepath.Join(h.tmp, state+".log")})
		if err != nil {
			return err
		}
		h.procs = append(h.procs, p)
		h.ports[state] = port
	}
	if err := h.load(ctx); err != nil {
		return err
	}
	for _, mode := range c.modes {
		for _, r := range reads(c) {
			h.loads = append(h.loads, benchkit.LoadAvg())
			res := h.pgbenchRun(ctx, r, mode)
			h.results = append(h.results, res)
			h.logf("%s, %s: %.0f tps, %.3f ms %s", r.name, mode, res.tps, res.latency, res.err)
		}
	}
	return nil
}

func fileExists(p string) bool { fi, err := os.Stat(p); return err == nil && !fi.IsDir() }

func (h *harness) topology(port int, state string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "version: 1\nproxy:\n  listen: \"127.0.0.1:%d\"\n  pool: { mode: transaction, size: %d }\nclusters:\n", port, h.cfg.pool)
	for _, cl := range h.env.Clusters {
		fmt.Fprintf(&b, "  %s: { dsn: %q }\n", cl.Name, cl.DSN("bench"))
	}
	fmt.Fprintf(&b, `groups:
  main:
    unsharded: true
    cluster: pg0
  by_customer:
    index: { name: by_customer, column: customer_id, type: bigint, function: xxhash }
    shards: { "-40": pg0, "40-80": pg1, "80-c0": pg2, "c0-": pg3 }
    tables:
      orders: {}
`)
	if state != "" {
		fmt.Fprintf(&b, "    secondary_indexes:\n      orders_by_id: { table: orders, column: id, type: bigint, unique: true, state: %s }\n", state)
	}
	return b.String()
}

// load creates orders through the active proxy and copies the rows in.
func (h *harness) load(ctx context.Context) error {
	c := h.cfg
	conn, err := pgx.Connect(ctx, fmt.Sprintf("postgres://postgres@127.0.0.1:%d/bench?sslmode=disable", h.ports["active"]))
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	took, err := h.createOrders(ctx, conn)
	if err != nil {
		return err
	}
	h.logf("copied %d rows (and their entries) in %s", c.rows, took.Round(time.Millisecond))
	var n int64
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM orders_by_id").Scan(&n); err != nil || n != int64(c.rows) {
		return fmt.Errorf("orders_by_id holds %d entries (%v), want %d", n, err, c.rows)
	}
	_, err = conn.Exec(ctx, "ANALYZE")
	return err
}

// createOrders creates orders through a proxy and copies -rows rows in
// (customer_id = id mod -customers); it returns how long the copy took.
func (h *harness) createOrders(ctx context.Context, conn *pgx.Conn) (time.Duration, error) {
	c := h.cfg
	if _, err := conn.Exec(ctx, "CREATE TABLE orders (id bigint NOT NULL, customer_id bigint NOT NULL, total int, note text, PRIMARY KEY (customer_id, id))"); err != nil {
		return 0, fmt.Errorf("create orders: %w", err)
	}
	pr, pw := io.Pipe()
	go func() {
		for id := 1; id <= c.rows; id++ {
			if _, err := fmt.Fprintf(pw, "%d\t%d\t%d\tnote %d\n", id, id%c.customers, id%997, id); err != nil {
				return
			}
		}
		pw.Close()
	}()
	t0 := time.Now()
	if _, err := conn.PgConn().CopyFrom(ctx, pr, "COPY orders (id, customer_id, total, note) FROM STDIN"); err != nil {
		return 0, fmt.Errorf("copy orders: %w", err)
	}
	_ = conn.QueryRow(ctx, "SHOW server_version").Scan(&h.pgVer)
	return time.Since(t0), nil
}

var (
	tpsRE     = regexp.MustCompile(`tps = ([0-9.]+)`)
	latencyRE = regexp.MustCompile(`latency average = ([0-9.]+) ms`)
)

func (h *harness) pgbenchRun(ctx context.Context, r read, mode string) result {
	res := result{read: r.name, mode: mode}
	script := filepath.Join(h.tmp, strings.NewReplacer(" ", "_", "(", "", ")", "", ",", "").Replace(r.name)+".sql")
	if err := os.WriteFile(script, []byte(r.script), 0o644); err != nil {
		res.err = err.Error()
		return res
	}
	c := h.cfg
	args := []string{"-n", "-f", script, "-c", strconv.Itoa(c.clients), "-j", strconv.Itoa(c.jobs), "-T", strconv.Itoa(c.seconds),
		"-M", mode, "-h", "127.0.0.1", "-p", strconv.Itoa(h.ports[r.proxy]), "-U", "postgres", "bench"}
	out, err := benchkit.RunCmd(ctx, time.Duration(c.seconds)*time.Second+30*time.Second, filepath.Join(h.tmp, "pgbench.log"),
		append(benchkit.ChildEnv(), "PGSSLMODE=disable"), h.pgbench, args...)
	if m := tpsRE.FindStringSubmatch(out); m != nil {
		res.tps, _ = strconv.ParseFloat(m[1], 64)
	}
	if m := latencyRE.FindStringSubmatch(out); m != nil {
		res.latency, _ = strconv.ParseFloat(m[1], 64)
	}
	if err != nil || res.tps == 0 {
		res.err = fmt.Sprintf("pgbench failed (%v): %s", err, benchkit.LastLines(strings.TrimSpace(out), 3))
	}
	return res
}

func (h *harness) markdown(runErr error) string {
	c := h.cfg
	var b strings.Builder
	b.WriteString("## Global secondary index reads (issue 9)\n\n")
	fmt.Fprintf(&b, "`bash bench/run.sh -scenario gsi` on %s; %s; PostgreSQL %s, %s, shardgate %s. "+
		"Four clusters from internal/testenv, one shard of by_customer each; orders: %d rows over %d customers, "+
		"loaded with COPY through the proxy (which wrote the %d entries of orders_by_id). "+
		"pgbench -c %d -j %d -T %d -n with one-row reads of random ids; pgbench, two proxies and the four servers share the machine's CPUs. "+
		"1-minute load average before each run: %s.\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 MST"), benchkit.Machine(), h.pgVer, runtime.Version(), benchkit.GitDescribe(c.repo),
		c.rows, c.customers, c.rows, c.clients, c.jobs, c.seconds, strings.Join(h.loads, ", "))
	b.WriteString("| mode | read | tps | latency (ms) |\n| --- | --- | ---: | ---: |\n")
	byKey := map[string]result{}
	for _, r := range h.results {
		byKey[r.mode+"|"+r.read] = r
		cell := fmt.Sprintf("%.0f | %.3f", r.tps, r.latency)
		if r.err != "" {
			cell = "failed: " + benchkit.Cell(r.err) + " | "
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", r.mode, r.read, cell)
	}
	rs := reads(c)
	b.WriteString("\nGoals: through the index ≥ 3× the scatter's tps, and ≤ 2.2× the latency of the read by shard key.\n\n")
	for _, mode := range c.modes {
		g, s, k := byKey[mode+"|"+rs[0].name], byKey[mode+"|"+rs[1].name], byKey[mode+"|"+rs[2].name]
		if g.tps > 0 && s.tps > 0 && k.latency > 0 {
			fmt.Fprintf(&b, "- %s: %.2f× the scatter's tps (goal ≥ 3: %s); %.2f× the key read's latency (goal ≤ 2.2: %s)\n",
				mode, g.tps/s.tps, met(g.tps/s.tps >= 3), g.latency/k.latency, met(g.latency/k.latency <= 2.2))
		}
	}
	if runErr != nil {
		fmt.Fprintf(&b, "\n**Run failed**: %s\n", benchkit.Cell(runErr.Error()))
	}
	return b.String()
}

func met(ok bool) string {
	if ok {
		return "met"
	}
	return "not met"
}
