// Command join is shardgate's benchmark of a join across shard groups
// over intermediate results (run it with `bash bench/run.sh -scenario
// join`). In one run it
//
//   - starts three throwaway PostgreSQL clusters with internal/testenv: one
//     plain server (the "single" baseline) and two for the shards;
//   - loads the same rows of orders (-orders, group by_customer, 4 shards)
//     and products (-products, group by_product, 4 shards) into the single
//     server (COPY) and through the proxy (COPY FROM STDIN, routed by
//     shardgate), the main group on the first shard cluster (the
//     coordinator);
//   - times a join of the two groups with GROUP BY (which the proxy
//     answers over intermediate results: both tables pulled into the
//     coordinator, the statement run there) through the proxy and on the
//     single server, checks that the answers are equal, and samples the
//     proxy's resident memory every 100 ms while it runs;
//   - streams every order, ORDER BY id, through the proxy with pgx
//     (QueryExecModeExec), and with node's pg-query-stream (-node-modules)
//     and a psycopg2 named cursor (-python) when given, each checking the
//     rows come complete and in order, sampling the proxy's RSS;
//   - prints a Markdown report, which -write-doc puts into
//     docs/benchmarks.md as "## Join across groups (issue 12)".
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/shardgate/shardgate/bench/internal/benchkit"
	"github.com/shardgate/shardgate/internal/testenv"
)

const joinQuery = `SELECT p.category, count(*), sum(o.amount), sum(o.amount * p.price)
FROM orders o JOIN products p ON p.id = o.product_id
GROUP BY p.category ORDER BY p.category`

const schema = `CREATE TABLE orders (id bigint, customer_id bigint NOT NULL, product_id bigint NOT NULL, amount numeric(12,2), PRIMARY KEY (customer_id, id));
CREATE TABLE products (id bigint PRIMARY KEY, category int NOT NULL, price numeric(10,2))`

type config struct {
	orders, products, runs int
	writeDoc               bool
	repo, docPath          string
	nodeModules, python    string
	timeout                time.Duration
}

func main() { os.Exit(run()) }

func run() int {
	var c config
	fs := flag.NewFlagSet("bench/join", flag.ContinueOnError)
	fs.IntVar(&c.orders, "orders", 1000000, "rows of orders (group by_customer)")
	fs.IntVar(&c.products, "products", 100000, "rows of products (group by_product)")
	fs.IntVar(&c.runs, "runs", 3, "measured runs of the join on each side (the table shows medians)")
	fs.StringVar(&c.nodeModules, "node-modules", "", "a node_modules directory with pg and pg-query-stream: also stream orders ORDER BY id through the proxy with pg-query-stream")
	fs.StringVar(&c.python, "python", "", "a python3 with psycopg2: also stream orders ORDER BY id through the proxy with a psycopg2 named cursor")
	fs.BoolVar(&c.writeDoc, "write-doc", false, "also write the report into docs/benchmarks.md")
	fs.StringVar(&c.repo, "repo", "", "the shardgate repository (default: found from the working directory)")
	fs.DurationVar(&c.timeout, "timeout", 30*time.Minute, "bound on the whole run")
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if c.orders < 1 || c.products < 1 || c.runs < 1 {
		fmt.Fprintln(os.Stderr, "join: -orders, -products and -runs must be positive")
		return 2
	}
	if c.repo == "" {
		r, err := benchkit.FindRepo()
		if err != nil {
			fmt.Fprintln(os.Stderr, "join:", err)
			return 2
		}
		c.repo = r
	}
	c.docPath = filepath.Join(c.repo, "docs", "benchmarks.md")
	sigCtx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(sigCtx, c.timeout)
	defer cancel()
	md, err := bench(ctx, c)
	if err != nil {
		fmt.Fprintln(os.Stderr, "join:", err)
		return 1
	}
	fmt.Print("\n" + md)
	if c.writeDoc {
		if err := benchkit.WriteSection(c.docPath, md); err != nil {
			fmt.Fprintln(os.Stderr, "join:", err)
			return 1
		}
		logf("wrote %s", c.docPath)
	}
	return 0
}

func logf(format string, args ...any) { fmt.Fprintf(os.Stderr, "join: "+format+"\n", args...) }

// topology: main on the first shard cluster (the coordinator), both
// groups' four shards over the two shard clusters.
func topology(names, dsns []string) string {
	var b strings.Builder
	b.WriteString("# Written by bench/join.\nversion: 1\nproxy:\n  pool: { mode: transaction, size: 8 }\nclusters:\n")
	for i, n := range names {
		fmt.Fprintf(&b, "  %s: { dsn: %q }\n", n, dsns[i])
	}
	fmt.Fprintf(&b, "groups:\n  main:\n    unsharded: true\n    cluster: %s\n", names[0])
	for _, g := range []struct{ name, col, table string }{{"by_customer", "customer_id", "orders"}, {"by_product", "id", "products"}} {
		fmt.Fprintf(&b, "  %s:\n    index: { name: %s, column: %s, type: bigint, function: xxhash }\n    shards:\n", g.name, g.name, g.col)
		for i, r := range []string{"-40", "40-80", "80-c0", "c0-"} {
			fmt.Fprintf(&b, "      %q: %s\n", r, names[i%len(names)])
		}
		fmt.Fprintf(&b, "    tables:\n      %s: {}\n", g.table)
	}
	return b.String()
}

func mix(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	return x
}

// data is the COPY text of a table's rows.
func data(table string, n, products int) []byte {
	var b bytes.Buffer
	for i := 1; i <= n; i++ {
		u := uint64(i)
		if table == "orders" {
			fmt.Fprintf(&b, "%d\t%d\t%d\t%d.%02d\n", i, mix(u)%50000+1, mix(u+7)%uint64(products)+1, i%997, i%100)
		} else {
			fmt.Fprintf(&b, "%d\t%d\t%d.%02d\n", i, mix(u)%40, i%500, i%100)
		}
	}
	return b.Bytes()
}

func load(ctx context.Context, dsn string, c config) error {
	conn, err := pgconn.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	for _, s := range strings.Split(schema, ";\n") {
		if _, err := conn.Exec(ctx, s).ReadAll(); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	for _, t := range []string{"products", "orders"} {
		n := c.products
		if t == "orders" {
			n = c.orders
		}
		if _, err := conn.CopyFrom(ctx, bytes.NewReader(data(t, n, c.products)), "COPY "+t+" FROM STDIN"); err != nil {
			return fmt.Errorf("COPY %s: %w", t, err)
		}
	}
	return nil
}

// answer runs the join and returns its rows as text and the time it took.
func answer(ctx context.Context, dsn string) (string, time.Duration, error) {
	conn, err := pgconn.Connect(ctx, dsn)
	if err != nil {
		return "", 0, err
	}
	defer conn.Close(context.Background())
	t0 := time.Now()
	res, err := conn.Exec(ctx, joinQuery).ReadAll()
	d := time.Since(t0)
	if err != nil {
		return "", d, err
	}
	var b strings.Builder
	for _, row := range res[0].Rows {
		for _, v := range row {
			b.Write(v)
			b.WriteByte('|')
		}
		b.WriteByte('\n')
	}
	return b.String(), d, nil
}

func bench(ctx context.Context, c config) (string, error) {
	tmp, err := os.MkdirTemp("", "shardgate-join-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	logf("building shardgate")
	bin, err := benchkit.BuildShardgate(ctx, c.repo, tmp)
	if err != nil {
		return "", err
	}
	logf("starting 3 PostgreSQL clusters")
	env, err := testenv.Start(ctx, testenv.Options{N: 3, Databases: []string{"bench"},
		Settings: map[string]string{"shared_buffers": "256MB", "max_wal_size": "8GB"}, Log: benchkit.PrefixWriter{Prefix: "join: "}})
	if err != nil {
		return "", err
	}
	defer func() { _ = env.Stop() }()
	single := env.Clusters[0].DSN("bench")
	var names, dsns []string
	for _, cl := range env.Clusters[1:] {
		names, dsns = append(names, cl.Name), append(dsns, cl.DSN("bench"))
	}
	topo := filepath.Join(tmp, "topology.yaml")
	if err := os.WriteFile(topo, []byte(topology(names, dsns)), 0o644); err != nil {
		return "", err
	}
	port, err := benchkit.FreePort()
	if err != nil {
		return "", err
	}
	proc, err := benchkit.StartShardgate(ctx, benchkit.Shardgate{Name: "shardgate", Bin: bin, Topology: topo, Port: port, LogPath: filepath.Join(tmp, "shardgate.log")})
	if err != nil {
		return "", err
	}
	defer proc.Stop(10 * time.Second)
	proxy := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/bench?sslmode=disable", port)
	t0 := time.Now()
	if err := load(ctx, single, c); err != nil {
		return "", fmt.Errorf("load single: %w", err)
	}
	logf("loaded single in %s", time.Since(t0).Round(time.Millisecond))
	t0 = time.Now()
	if err := load(ctx, proxy, c); err != nil {
		return "", fmt.Errorf("load through the proxy: %w", err)
	}
	logf("loaded through the proxy in %s", time.Since(t0).Round(time.Millisecond))
	for _, dsn := range append([]string{single}, dsns...) {
		if conn, err := pgconn.Connect(ctx, dsn); err == nil {
			_, _ = conn.Exec(ctx, "VACUUM ANALYZE").ReadAll()
			conn.Close(context.Background())
		}
	}
	want, _, err := answer(ctx, single) // warm-up
	if err != nil {
		return "", fmt.Errorf("single: %w", err)
	}
	load := benchkit.LoadAvg()
	var ts, tp []float64
	var samples []int64
	m0, err := benchkit.ReadStatus(proc.Pid())
	if err != nil {
		return "", err
	}
	for i := 0; i < c.runs; i++ {
		_, d, err := answer(ctx, single)
		if err != nil {
			return "", fmt.Errorf("single: %w", err)
		}
		ts = append(ts, d.Seconds())
		smp := benchkit.StartSampler(ctx, proc.Pid(), 100*time.Millisecond)
		got, d, err := answer(ctx, proxy)
		s, _ := smp.Stop()
		samples = append(samples, s...)
		if err != nil {
			return "", fmt.Errorf("through the proxy: %w", err)
		}
		if got != want {
			return "", fmt.Errorf("the proxy's answer differs from the single server's:\n%s\nwant:\n%s", got, want)
		}
		tp = append(tp, d.Seconds())
		logf("run %d: single %.2f s, proxy %.2f s", i+1, ts[i], d.Seconds())
	}
	m1, err := benchkit.ReadStatus(proc.Pid())
	if err != nil {
		return "", err
	}
	flat, growth, _, why := benchkit.Flatness(m0.RSS, m1.HWM, samples)
	ms, mp := benchkit.Median(ts), benchkit.Median(tp)
	var b strings.Builder
	fmt.Fprintf(&b, "## Join across groups (issue 12)\n\n")
	fmt.Fprintf(&b, "`%s`, %s, %s; load average before the runs %s (the machine is shared with other work).\n\n",
		strings.TrimSpace(os.Getenv("BENCH_INVOKED_AS")+" "), benchkit.Machine(), benchkit.GitDescribe(c.repo), load)
	fmt.Fprintf(&b, "orders (%s rows, group by_customer) joined with products (%s rows, group by_product), both in 4 shards over 2 clusters, "+
		"main (the coordinator) on the first; the single baseline is one Postgres holding all rows. The statement:\n\n```sql\n%s\n```\n\n",
		strconv.Itoa(c.orders), strconv.Itoa(c.products), joinQuery)
	b.WriteString("runs over intermediate results: both tables pulled (the columns read) into temporary tables on the coordinator by binary COPY, the join run there.\n\n")
	b.WriteString("| | median of " + strconv.Itoa(c.runs) + " runs | answer |\n| --- | --- | --- |\n")
	fmt.Fprintf(&b, "| single Postgres | %.2f s | %d rows |\n", ms, strings.Count(want, "\n"))
	fmt.Fprintf(&b, "| through shardgate | %.2f s (%.1f×) | equal |\n\n", mp, mp/ms)
	verdict := "flat"
	if !flat {
		verdict = "not flat: " + why
	}
	fmt.Fprintf(&b, "Proxy RSS: %s before the runs, peak %s (+%s), %d samples every 100 ms during the runs (median %s): %s. "+
		"The rows go from the shards to the coordinator one at a time; the proxy holds none of them.\n",
		benchkit.MiB(m0.RSS), benchkit.MiB(m1.HWM), benchkit.MiB(growth), len(samples), benchkit.MiB(benchkit.MedianInt(samples)), verdict)
	type reader struct {
		what string
		read func() (string, error)
	}
	readers := []reader{{"pgx `QueryExecModeExec` (one Execute without a row limit; the merge streams, pgx reads rows as they come)", pgxExec(ctx, c, proxy)}}
	if c.nodeModules != "" {
		readers = append(readers, reader{"node `pg-query-stream` (batches of 100 rows: Execute with a row limit over the merge of 4 shards)",
			script(ctx, c, proxy, append(benchkit.ChildEnv(), "NODE_PATH="+c.nodeModules), "node", "querystream.js")})
	}
	if c.python != "" {
		readers = append(readers, reader{"psycopg2 named cursor (`DECLARE ... CURSOR`, then `FETCH FORWARD 1000`: the merge of 4 shards read from shard cursors 1,000 rows at a time)",
			script(ctx, c, proxy, benchkit.ChildEnv(), c.python, "namedcursor.py")})
	}
	for _, r := range readers {
		line, err := streamed(ctx, proc, r.what, r.read)
		if err != nil {
			return "", err
		}
		b.WriteString("\n" + line)
	}
	return b.String(), nil
}

// streamQuery is what the streaming readers read: every order, ordered,
// over the merge of the 4 shards.
const streamQuery = "SELECT id, customer_id, amount FROM orders ORDER BY id"

// streamed runs one streaming reader of streamQuery through the proxy
// (read returns its "rows=N seconds=S" line, having checked the rows
// come complete and in order), sampling the proxy's RSS, and returns the
// report's line about it.
func streamed(ctx context.Context, proc *benchkit.Proc, what string, read func() (string, error)) (string, error) {
	m0, err := benchkit.ReadStatus(proc.Pid())
	if err != nil {
		return "", err
	}
	smp := benchkit.StartSampler(ctx, proc.Pid(), 100*time.Millisecond)
	out, err := read()
	samples, _ := smp.Stop()
	if err != nil {
		return "", err
	}
	m1, err := benchkit.ReadStatus(proc.Pid())
	if err != nil {
		return "", err
	}
	// The peak of this reader's samples: the process's own peak (HWM) may
	// be the join's, before it.
	peak := m1.RSS
	for _, v := range samples {
		peak = max(peak, v)
	}
	flat, growth, trend, why := benchkit.Flatness(m0.RSS, peak, samples)
	verdict := "flat"
	if !flat {
		verdict = "not flat: " + why
	}
	logf("%s: %s", what, strings.TrimSpace(out))
	return fmt.Sprintf("%s of `%s`: %s, every row once and in order. "+
		"Proxy RSS %s before, sampled peak %s (+%s, trend %s), %d samples every 100 ms: %s.\n",
		what, streamQuery, strings.TrimSpace(out), benchkit.MiB(m0.RSS), benchkit.MiB(peak), benchkit.MiB(growth), benchkit.MiB(trend), len(samples), verdict), nil
}

// script runs a reader script of bench/join (node or python) with the
// proxy's DSN and the number of orders.
func script(ctx context.Context, c config, proxy string, env []string, bin, name string) func() (string, error) {
	return func() (string, error) {
		out, err := benchkit.RunCmd(ctx, 20*time.Minute, "", env, bin, filepath.Join(c.repo, "bench", "join", name), proxy, strconv.Itoa(c.orders))
		if err != nil {
			return "", fmt.Errorf("%s: %v: %s", name, err, benchkit.LastLines(out, 5))
		}
		return out, nil
	}
}

// pgxExec reads streamQuery with pgx in QueryExecModeExec (Parse, Bind,
// Describe, Execute of the unnamed statement; rows read as they come).
func pgxExec(ctx context.Context, c config, proxy string) func() (string, error) {
	return func() (string, error) {
		conn, err := pgx.Connect(ctx, proxy)
		if err != nil {
			return "", err
		}
		defer conn.Close(context.Background())
		t0 := time.Now()
		rows, err := conn.Query(ctx, streamQuery, pgx.QueryExecModeExec)
		if err != nil {
			return "", err
		}
		var n, last, id, customer int64
		var amount string
		for rows.Next() {
			if err := rows.Scan(&id, &customer, &amount); err != nil {
				rows.Close()
				return "", err
			}
			if id != last+1 {
				rows.Close()
				return "", fmt.Errorf("pgx: row %d: id %d after %d", n+1, id, last)
			}
			last = id
			n++
		}
		if err := rows.Err(); err != nil {
			return "", err
		}
		if n != int64(c.orders) {
			return "", fmt.Errorf("pgx: %d rows, want %d", n, c.orders)
		}
		return fmt.Sprintf("rows=%d seconds=%.2f", n, time.Since(t0).Seconds()), nil
	}
}
