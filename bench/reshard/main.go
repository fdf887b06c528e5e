// Command reshard is the benchmark of a Reshard under write load (run it
// with `bash bench/run.sh -scenario reshard`). In one run it
//
//   - starts three throwaway PostgreSQL servers with internal/testenv
//     holding main (database bench), the two source clusters of group
//     by_customer (s0 -80, s1 80-) and the four target clusters (t0..t3:
//     -40, 40-80, 80-c0, c0-), each cluster a database of its own, main, s0
//     and s1 on different servers;
//   - loads -orders orders (co-located with -customers customers) and a
//     reference table of countries onto the sources, each row on its shard;
//   - starts `shardgate serve` over the topology in effect and runs a
//     pgbench custom script through it (write.sql): inserts, updates of a
//     non-key column, shard-key changes (delete and insert in one
//     transaction, as the proxy refuses an UPDATE of the key) and deletes,
//     each transaction also writing a row of a ledger in main;
//   - creates and runs the Reshard 2 → 4 while pgbench writes, keeps the
//     load on for -load-after once it streams, stops it and waits until
//     every change is applied;
//   - checks with VDiff, then the oracle (oracle.go): every table on the
//     sources and on the targets against the state computed in main from
//     the initial rows and the ledger alone — lost, duplicated and
//     different rows;
//   - prints a Markdown report, which -write-doc puts into
//     docs/benchmarks.md as "## Reshard under load (issue 10)".
//
// With -switch (`bash bench/run.sh -scenario switch`) the load starts once
// the reshard streams instead, on two proxies, while the traffic is
// switched, reversed and switched again (switch.go); the report is
// "## Traffic switch under pgbench (issue 11)".
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/shardgate/shardgate/bench/internal/benchkit"
	"github.com/shardgate/shardgate/internal/testenv"
)

type config struct {
	orders, customers int
	clients           int
	chunkRows         int
	loadAfter         time.Duration
	pgbench           string
	writeDoc          bool
	docPath, repo     string
	keep              bool
	timeout           time.Duration
	// switches: the -switch scenario (switch.go), its load lasting
	// switchLoad.
	switches   bool
	switchLoad time.Duration
}

func parseFlags(args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet("bench/reshard", flag.ContinueOnError)
	fs.IntVar(&c.orders, "orders", 1000000, "orders in the group (the co-located child table)")
	fs.IntVar(&c.customers, "customers", 0, "customers (default: orders / 4)")
	fs.IntVar(&c.clients, "clients", 4, "pgbench clients writing through the proxy")
	fs.IntVar(&c.chunkRows, "chunk-rows", 10000, "the workflow's copy chunk")
	fs.DurationVar(&c.loadAfter, "load-after", 20*time.Second, "how long the load goes on once the workflow streams")
	fs.StringVar(&c.pgbench, "pgbench", "", "the pgbench binary (default: next to the PostgreSQL server binaries, else $PATH)")
	fs.BoolVar(&c.writeDoc, "write-doc", false, "also write the report into docs/benchmarks.md")
	fs.StringVar(&c.docPath, "doc", "", "the file -write-doc writes (default: REPO/docs/benchmarks.md)")
	fs.StringVar(&c.repo, "repo", "", "the shardgate repository (default: found from the working directory)")
	fs.BoolVar(&c.keep, "keep", false, "keep the temporary directory (topology, logs)")
	fs.DurationVar(&c.timeout, "timeout", time.Hour, "bound on the whole run")
	fs.BoolVar(&c.switches, "switch", false, "once the reshard streams: two proxies, a pgbench on each, switch, reverse, switch (`-scenario switch`)")
	fs.DurationVar(&c.switchLoad, "switch-load", 40*time.Second, "with -switch: how long the two pgbench run (the switches at 1/4, 2/4, 3/4)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if c.customers == 0 {
		c.customers = max(c.orders/4, 1)
	}
	// Each client owns the orders whose id/4 is its number modulo the
	// clients (write.sql): the quarter of the orders must divide evenly.
	all := max(c.clients, 1)
	if c.switches {
		all *= 2 // two pgbench
	}
	c.orders -= c.orders % (4 * all)
	if c.orders < 4*c.clients || c.customers < 1 || c.clients < 1 || c.chunkRows < 1 || c.loadAfter <= 0 || c.timeout <= 0 {
		return c, errors.New("-orders (at least 4 per client), -customers, -clients, -chunk-rows, -load-after and -timeout must be positive")
	}
	return c, benchkit.DocPaths(&c.repo, &c.docPath)
}

func logf(format string, args ...any) { fmt.Fprintf(os.Stderr, "reshard: "+format+"\n", args...) }

func main() {
	cfg, err := parseFlags(os.Args[1:])
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "reshard:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	r, err := run(ctx, cfg)
	if err != nil {
		logf("%v", err)
		os.Exit(1)
	}
	md := r.markdown(benchkit.Machine(), benchkit.GitDescribe(cfg.repo))
	if cfg.switches {
		md = r.switchMarkdown(benchkit.Machine(), benchkit.GitDescribe(cfg.repo))
	}
	if err := benchkit.Publish(md, cfg.writeDoc, cfg.docPath, logf); err != nil {
		logf("%v", err)
		os.Exit(1)
	}
	if !r.oracleClean() || r.pgbenchErrors > 0 {
		os.Exit(1)
	}
}

func run(ctx context.Context, cfg config) (*result, error) {
	tmp, err := os.MkdirTemp("", "shardgate-reshard-")
	if err != nil {
		return nil, err
	}
	if cfg.keep {
		defer logf("kept %s", tmp)
	} else {
		defer os.RemoveAll(tmp)
	}
	bin := make(chan error, 1)
	var shardgateBin string
	go func() {
		var err error
		shardgateBin, err = benchkit.BuildShardgate(ctx, cfg.repo, tmp)
		bin <- err
	}()
	env, err := testenv.Start(ctx, testenv.Options{N: 3, Databases: []string{"bench"},
		Settings: map[string]string{"shared_buffers": "256MB", "max_wal_size": "8GB", "checkpoint_timeout": "30min"},
		Log:      benchkit.PrefixWriter{Prefix: "reshard: "}})
	if err != nil {
		<-bin
		return nil, fmt.Errorf("start clusters: %w", err)
	}
	defer func() {
		if err := env.Stop(); err != nil {
			logf("stop clusters: %v", err)
		}
	}()
	if err := <-bin; err != nil {
		return nil, err
	}
	h := &harness{cfg: cfg, env: env, tmp: tmp, shardgate: shardgateBin, r: &result{cfg: cfg}}
	return h.r, h.run(ctx)
}

// clusterDB places each cluster of the topologies: server and database.
// The proxy's two-phase commits name a transaction alike on every cluster
// it writes (main, s0, s1): those are on three different servers.
var clusterDB = map[string]struct {
	server int
	db     string
}{
	"main": {0, "bench"}, "t0": {0, "t0"}, "t1": {0, "t1"},
	"s0": {1, "s0"}, "t2": {1, "t2"},
	"s1": {2, "s1"}, "t3": {2, "t3"},
}

var (
	sourceNames = []string{"s0", "s1"}
	targetNames = []string{"t0", "t1", "t2", "t3"}
)

func (h *harness) dsn(cluster string) string {
	c := clusterDB[cluster]
	return h.env.Clusters[c.server].DSN(c.db)
}

func (h *harness) exec(ctx context.Context, cluster, sql string) error {
	c := clusterDB[cluster]
	if err := h.env.Clusters[c.server].Exec(ctx, c.db, sql); err != nil {
		return fmt.Errorf("%s: %w", cluster, err)
	}
	return nil
}

// topologies returns the topology in effect (with the proxy's listen
// address) and the one after the reshard.
func (h *harness) topologies(listen string) (from, to string) {
	var b strings.Builder
	fmt.Fprintf(&b, "version: 1\nproxy:\n  listen: %q\n  pool: { mode: transaction, size: %d }\nclusters:\n", listen, 2*h.cfg.clients+4)
	for _, c := range append(append([]string{"main"}, sourceNames...), targetNames...) {
		fmt.Fprintf(&b, "  %s: { dsn: %q }\n", c, h.dsn(c))
	}
	b.WriteString("groups:\n  main: { unsharded: true, cluster: main }\n" +
		"  by_customer:\n    index: { name: by_customer, column: customer_id, type: bigint, function: xxhash }\n" +
		"    tables: { customers: { column: id }, orders: {} }\n    reference: [countries]\n")
	from = b.String() + `    shards: { "-80": s0, "80-": s1 }` + "\n"
	to = b.String() + `    shards: { "-40": t0, "40-80": t1, "80-c0": t2, "c0-": t3 }` + "\n"
	return from, to
}
