// Command scatter is shardgate's cross-shard benchmark (run it with
// `bash bench/run.sh -scenario scatter`). In one run it
//
//   - starts throwaway PostgreSQL clusters with internal/testenv: one plain
//     server (the "single" baseline) and the shard clusters;
//   - loads the same rows of an orders-like table (and of a wider table,
//     big) into the single server and, routed with vschema exactly as the
//     proxy routes them, into a group of four shards (xxhash of
//     customer_id) on the shard clusters;
//   - builds ./cmd/shardgate and runs `shardgate serve` over the shards;
//   - times cross-shard queries (count, ORDER BY ... LIMIT, GROUP BY with
//     aggregates) through the proxy and on the single server, and checks
//     that the answers are the same;
//   - times COPY FROM STDIN of the same rows into both, checking where the
//     rows landed;
//   - streams a large scatter result through a proxy process of its own,
//     sampling its resident memory every 100 ms;
//   - prints a Markdown report, which -write-doc puts into
//     docs/benchmarks.md as "## Across shards (issue 4)";
//   - stops everything it started, also on error, on Ctrl-C and on -timeout.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/shardgate/shardgate/bench/internal/benchkit"
	"github.com/shardgate/shardgate/internal/testenv"
)

const shardsPerGroup = 4

type config struct {
	rows          int // orders rows
	copyRows      int
	streamRows    int
	runs          int // measured runs per query and side
	copyRounds    int
	streamRounds  int
	shardClusters int
	protocols     []string
	poolSize      int
	writeDoc      bool
	docPath       string
	repo          string
	shardgateBin  string
	keep          bool
	timeout       time.Duration
}

func parseFlags(args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet("bench/scatter", flag.ContinueOnError)
	var protocols string
	fs.IntVar(&c.rows, "rows", 2000000, "rows of the orders table the queries read")
	fs.IntVar(&c.copyRows, "copy-rows", 1000000, "rows each COPY FROM STDIN sends")
	fs.IntVar(&c.streamRows, "stream-rows", 5000000, "rows of the big table the streaming test reads")
	fs.IntVar(&c.runs, "runs", 15, "measured runs of each query on each side (the table shows medians)")
	fs.IntVar(&c.copyRounds, "copy-rounds", 3, "COPY runs per target (the table shows the median)")
	fs.IntVar(&c.streamRounds, "stream-rounds", 3, "streaming runs per query and target (the table shows the median rate and the highest peak)")
	fs.IntVar(&c.shardClusters, "shard-clusters", 4, "clusters the 4 shards are placed on: 4 (one each) or 2 (two each) or 1")
	fs.StringVar(&protocols, "protocols", "simple,extended", "query protocols measured, comma-separated")
	fs.IntVar(&c.poolSize, "pool", 16, "shardgate's backend pool size per cluster")
	fs.BoolVar(&c.writeDoc, "write-doc", false, "also write the report into docs/benchmarks.md")
	fs.StringVar(&c.docPath, "doc", "", "the file -write-doc writes (default: REPO/docs/benchmarks.md)")
	fs.StringVar(&c.repo, "repo", "", "the shardgate repository (default: found from the working directory)")
	fs.StringVar(&c.shardgateBin, "shardgate", "", "a prebuilt shardgate binary (default: go build ./cmd/shardgate)")
	fs.BoolVar(&c.keep, "keep", false, "keep the temporary directory (proxy logs, topology files)")
	fs.DurationVar(&c.timeout, "timeout", 40*time.Minute, "bound on the whole run")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if c.rows < 1 || c.copyRows < 1 || c.streamRows < 1 || c.runs < 1 || c.copyRounds < 1 || c.streamRounds < 1 || c.poolSize < 1 || c.timeout <= 0 {
		return c, errors.New("-rows, -copy-rows, -stream-rows, -runs, -copy-rounds, -stream-rounds, -pool and -timeout must be positive")
	}
	if c.shardClusters != 1 && c.shardClusters != 2 && c.shardClusters != 4 {
		return c, fmt.Errorf("-shard-clusters %d: want 1, 2 or 4", c.shardClusters)
	}
	for _, p := range benchkit.SplitList(protocols) {
		if p != "simple" && p != "extended" {
			return c, fmt.Errorf("-protocols: unknown protocol %q (simple, extended)", p)
		}
		c.protocols = append(c.protocols, p)
	}
	if len(c.protocols) == 0 {
		return c, errors.New("-protocols: none")
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
	return c, nil
}

type harness struct {
	cfg   config
	tmp   string
	env   *testenv.Env
	procs []*benchkit.Proc
	bin   string

	single     *testenv.Cluster
	shards     []*testenv.Cluster // the shard clusters, pg1 ...
	shardIndex map[string]int     // cluster name -> index in shards
	place      *placement
	rep        *report
}

func (h *harness) logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "scatter: "+format+"\n", args...)
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
		fmt.Fprintln(os.Stderr, "scatter:", err)
		return 2
	}
	sigCtx, stopSignals := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stopSignals()
	go func() {
		<-sigCtx.Done()
		stopSignals() // a second Ctrl-C kills at once; testenv's watchdog and Pdeathsig still clean up
	}()
	ctx, cancel := context.WithTimeout(sigCtx, cfg.timeout)
	defer cancel()

	h := &harness{cfg: cfg, rep: newReport(cfg)}
	defer h.cleanup()
	err = h.run(ctx)
	if ctx.Err() != nil {
		h.rep.notes = append(h.rep.notes, "**Incomplete run**: "+context.Cause(ctx).Error()+"; the later parts were skipped.")
	} else if err != nil {
		h.rep.notes = append(h.rep.notes, "**Run failed**: "+err.Error())
	}
	md := h.rep.markdown()
	fmt.Print("\n" + md)
	if cfg.writeDoc && err == nil && ctx.Err() == nil {
		if werr := os.MkdirAll(filepath.Dir(cfg.docPath), 0o755); werr != nil {
			err = werr
		} else if werr := benchkit.WriteSection(cfg.docPath, md); werr != nil {
			err = werr
		} else {
			h.logf("wrote %s", cfg.docPath)
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

// cleanup stops the proxies and the clusters and removes the temporary
// directory; every stop is bounded.
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

func (h *harness) run(ctx context.Context) error {
	cfg := h.cfg
	var err error
	if h.tmp, err = os.MkdirTemp("", "shardgate-scatter-"); err != nil {
		return err
	}

	// Build the proxy while the clusters start and load.
	var buildErr error
	built := make(chan struct{})
	go func() {
		defer close(built)
		if cfg.shardgateBin != "" {
			h.bin = cfg.shardgateBin
			return
		}
		t0 := time.Now()
		h.bin, buildErr = benchkit.BuildShardgate(ctx, cfg.repo, h.tmp)
		if buildErr == nil {
			h.logf("built shardgate in %s", time.Since(t0).Round(time.Second))
		}
	}()
	defer func() { <-built }()

	n := 1 + cfg.shardClusters
	h.logf("starting %d PostgreSQL clusters (1 single + %d for the shards)", n, cfg.shardClusters)
	env, err := testenv.Start(ctx, testenv.Options{
		N:         n,
		Databases: []string{"bench"},
		Settings: map[string]string{
			"shared_buffers":     "256MB",
			"max_wal_size":       "8GB",
			"checkpoint_timeout": "30min",
		},
		Log: benchkit.PrefixWriter{Prefix: "scatter: "},
	})
	if err != nil {
		return fmt.Errorf("start clusters: %w", err)
	}
	h.env = env
	h.single = env.Clusters[0]
	h.shards = env.Clusters[1:]
	h.shardIndex = map[string]int{}
	var names, dsns []string
	for i, c := range h.shards {
		h.shardIndex[c.Name] = i
		names = append(names, c.Name)
		dsns = append(dsns, c.DSN("bench"))
	}
	h.rep.topology = topologyYAML("127.0.0.1:0", cfg.poolSize, names, dsns, shardsPerGroup)
	if h.place, err = newPlacement(h.rep.topology, "orders"); err != nil {
		return fmt.Errorf("the benchmark's topology: %w", err)
	}
	if conn, err := h.single.Conn(ctx, "bench"); err == nil {
		_ = conn.QueryRow(ctx, "SHOW server_version").Scan(&h.rep.pgVersion)
		conn.Close(context.Background())
	}

	if err := h.load(ctx); err != nil {
		return err
	}
	<-built
	if buildErr != nil {
		return buildErr
	}

	p, port, err := h.startProxy(ctx, "queries")
	if err != nil {
		return err
	}
	if err := h.routingCheck(ctx, port); err != nil {
		return fmt.Errorf("routing check: %w", err)
	}

	h.rep.loadQueries = benchkit.LoadAvg()
	for _, proto := range cfg.protocols {
		h.logf("queries, %s protocol: %d runs per query and side", proto, cfg.runs)
		rs, err := h.runQueries(ctx, proto, proxyDSN(port))
		h.rep.queries = append(h.rep.queries, rs...)
		if err != nil {
			return err
		}
	}

	h.rep.loadCopy = benchkit.LoadAvg()
	h.logf("COPY: %d rounds of %d rows per target", cfg.copyRounds, cfg.copyRows)
	cr, err := h.runCopy(ctx, proxyDSN(port))
	h.rep.copies = cr
	if err != nil {
		return err
	}
	p.Stop(10 * time.Second)

	h.rep.loadStream = benchkit.LoadAvg()
	for _, sc := range streamCases {
		h.logf("streaming %s (%d rows)", sc.name, cfg.streamRows)
		rs, err := h.runStream(ctx, sc)
		h.rep.streams = append(h.rep.streams, rs...)
		if err != nil {
			return err
		}
	}
	h.rep.loadEnd = benchkit.LoadAvg()
	return nil
}

func proxyDSN(port int) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/bench?sslmode=disable", port)
}

// startProxy writes the topology with a fresh port and starts `shardgate
// serve` on it. The process is stopped at cleanup if the caller does not
// stop it first.
func (h *harness) startProxy(ctx context.Context, name string) (*benchkit.Proc, int, error) {
	port, err := benchkit.FreePort()
	if err != nil {
		return nil, 0, err
	}
	file := filepath.Join(h.tmp, name+".yaml")
	yaml := strings.Replace(h.rep.topology, `listen: "127.0.0.1:0"`, `listen: "127.0.0.1:`+strconv.Itoa(port)+`"`, 1)
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		return nil, 0, err
	}
	p, err := benchkit.StartShardgate(ctx, benchkit.Shardgate{
		Name: "shardgate-" + name, Bin: h.bin, Topology: file, Port: port,
		LogPath: filepath.Join(h.tmp, "shardgate-"+name+".log"),
	})
	if err != nil {
		return nil, 0, err
	}
	h.procs = append(h.procs, p)
	h.logf("shardgate (%s) listening on 127.0.0.1:%d, pid %d", name, port, p.Pid())
	return p, port, nil
}

// load creates the tables everywhere and loads orders and big: every row
// into the single server, and each row into the shard cluster its
// customer_id routes to. The loads run in parallel, one COPY stream per
// cluster and table. Then primary keys, VACUUM ANALYZE, and the counts are
// checked against the routing.
func (h *harness) load(ctx context.Context) error {
	cfg := h.cfg
	t0 := time.Now()
	cl := h.env.Clusters
	for _, c := range cl {
		if err := c.Exec(ctx, "bench", schemaSQL); err != nil {
			return err
		}
	}
	errs := make([]error, len(cl))
	var wg sync.WaitGroup
	for i, c := range cl {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var keep func(int64) bool
			if i > 0 {
				keep = func(customer int64) bool { return h.place.cluster(customer) == c.Name }
			}
			errs[i] = func() error {
				conn, err := c.Conn(ctx, "bench")
				if err != nil {
					return err
				}
				defer conn.Close(context.Background())
				for _, t := range []struct {
					name string
					seed uint64
					n    int
				}{{"orders", seedOrders, cfg.rows}, {"big", seedBig, cfg.streamRows}} {
					if _, err := copyIn(ctx, conn.PgConn(), t.name, t.seed, int64(t.n), t.name == "big", keep); err != nil {
						return fmt.Errorf("load %s into %s: %w", t.name, c.Name, err)
					}
				}
				for _, sql := range addKeysSQL {
					if _, err := conn.Exec(ctx, sql); err != nil {
						return fmt.Errorf("%s: %s: %w", c.Name, sql, err)
					}
				}
				// Into shared buffers (or at least the OS cache), so the
				// first measured run does not read from disk.
				if _, err := conn.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_prewarm"); err == nil {
					_, _ = conn.Exec(ctx, "SELECT pg_prewarm('orders')")
				} else {
					_, _ = conn.Exec(ctx, "SELECT count(*) FROM orders")
				}
				return nil
			}()
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}

	// Every row is where the routing puts it, exactly once.
	for _, t := range []struct {
		name string
		seed uint64
		n    int
	}{{"orders", seedOrders, cfg.rows}, {"big", seedBig, cfg.streamRows}} {
		if err := checkCount(ctx, h.single.DSN("bench"), t.name, int64(t.n), -1); err != nil {
			return fmt.Errorf("single: %w", err)
		}
		rows, sums := h.clusterTally(t.seed, int64(t.n))
		for k, c := range h.shards {
			if err := checkCount(ctx, c.DSN("bench"), t.name, rows[k], sums[k]); err != nil {
				return fmt.Errorf("shard cluster %s: %w", c.Name, err)
			}
		}
		if t.name == "orders" {
			h.rep.shardRows, _ = h.place.tally(t.seed, int64(t.n))
		}
	}
	h.rep.loadTime = time.Since(t0)
	h.logf("loaded %d orders and %d big rows into the single server and the shards in %s",
		cfg.rows, cfg.streamRows, h.rep.loadTime.Round(time.Second))
	return nil
}

// routingCheck compares, for a sample of customers, the orders the proxy
// finds (a single-shard read, pinned by customer_id) with the single
// server's. A row loaded into the wrong shard would be missing.
func (h *harness) routingCheck(ctx context.Context, port int) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	single, err := connect(ctx, h.single.DSN("bench"), "simple")
	if err != nil {
		return err
	}
	defer single.Close(context.Background())
	proxy, err := connect(ctx, proxyDSN(port), "simple")
	if err != nil {
		return err
	}
	defer proxy.Close(context.Background())
	const q = "SELECT count(*), coalesce(sum(id), 0)::bigint FROM orders WHERE customer_id = "
	perShard := make([]int, len(h.place.shards))
	for i := range 40 {
		c := int64(1 + mix(uint64(i)+1000)%customers)
		var n1, s1, n2, s2 int64
		if err := single.QueryRow(ctx, q+strconv.FormatInt(c, 10)).Scan(&n1, &s1); err != nil {
			return err
		}
		if err := proxy.QueryRow(ctx, q+strconv.FormatInt(c, 10)).Scan(&n2, &s2); err != nil {
			return fmt.Errorf("through shardgate: %w", err)
		}
		if n1 != n2 || s1 != s2 {
			return fmt.Errorf("customer_id %d (shard %s): shardgate finds %d orders (sum of ids %d), the single server %d (%d)",
				c, h.place.shards[h.place.shardOf[c]], n2, s2, n1, s1)
		}
		perShard[h.place.shardOf[c]]++
	}
	var parts []string
	for i, n := range perShard {
		parts = append(parts, fmt.Sprintf("%d on %s", n, h.place.shards[i]))
	}
	h.rep.check = fmt.Sprintf("40 customers' orders read through shardgate (one shard each: %s) equal the single server's", strings.Join(parts, ", "))
	h.logf("routing check: %s", h.rep.check)
	return nil
}
