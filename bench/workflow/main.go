// Command workflow is the benchmark of shardgate's workflow engine (run it
// with `bash bench/run.sh -scenario workflow`). In one run it
//
//   - starts three throwaway PostgreSQL clusters with internal/testenv: the
//     source (main group) and the two clusters of a sharded group;
//   - loads -rows rows into a table of the source;
//   - times a raw `COPY orders TO STDOUT (FORMAT binary)` on the source
//     piped into `COPY ... FROM STDIN` on a target cluster, before and after
//     the workflow (the baseline);
//   - times the copy phase of a MoveTables of the table into the group (the
//     workflows package, as `shardgate workflow run` runs it: slot, exported
//     snapshot, chunked binary COPY, each row routed to its shard);
//   - runs a write load on the source for -load while the workflow streams,
//     sampling the stream lag, and times until everything is applied: the
//     apply rate in source rows changed per second;
//   - checks the targets with VDiff and cancels the workflow;
//   - prints a Markdown report, which -write-doc puts into
//     docs/benchmarks.md as "## Workflows (issue 10)".
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"

	"github.com/shardgate/shardgate/bench/internal/benchkit"
	"github.com/shardgate/shardgate/internal/testenv"
	"github.com/shardgate/shardgate/workflows"
)

type config struct {
	rows      int
	chunkRows int
	load      time.Duration
	writers   int
	writeDoc  bool
	docPath   string
	repo      string
	timeout   time.Duration
}

func parseFlags(args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet("bench/workflow", flag.ContinueOnError)
	fs.IntVar(&c.rows, "rows", 1000000, "rows of the table moved")
	fs.IntVar(&c.chunkRows, "chunk-rows", 10000, "the workflow's copy chunk")
	fs.DurationVar(&c.load, "load", 20*time.Second, "how long the write load runs while the workflow streams")
	fs.IntVar(&c.writers, "writers", 4, "connections of the write load")
	fs.BoolVar(&c.writeDoc, "write-doc", false, "also write the report into docs/benchmarks.md")
	fs.StringVar(&c.docPath, "doc", "", "the file -write-doc writes (default: REPO/docs/benchmarks.md)")
	fs.StringVar(&c.repo, "repo", "", "the shardgate repository (default: found from the working directory)")
	fs.DurationVar(&c.timeout, "timeout", 30*time.Minute, "bound on the whole run")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if c.rows < 1 || c.chunkRows < 1 || c.load <= 0 || c.writers < 1 || c.timeout <= 0 {
		return c, errors.New("-rows, -chunk-rows, -load, -writers and -timeout must be positive")
	}
	return c, benchkit.DocPaths(&c.repo, &c.docPath)
}

func logf(format string, args ...any) { fmt.Fprintf(os.Stderr, "workflow: "+format+"\n", args...) }

func main() {
	cfg, err := parseFlags(os.Args[1:])
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "workflow:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	env, err := testenv.Start(ctx, testenv.Options{N: 3, Databases: []string{"bench"},
		Settings: map[string]string{"shared_buffers": "256MB", "max_wal_size": "8GB", "checkpoint_timeout": "30min"},
		Log:      benchkit.PrefixWriter{Prefix: "workflow: "}})
	if err != nil {
		logf("start clusters: %v", err)
		os.Exit(1)
	}
	r := &result{cfg: cfg}
	err = measure(ctx, cfg, env, r)
	if serr := env.Stop(); serr != nil {
		logf("stop clusters: %v", serr)
	}
	if err != nil {
		logf("%v", err)
		os.Exit(1)
	}
	md := r.markdown(benchkit.Machine(), benchkit.GitDescribe(cfg.repo))
	if err := benchkit.Publish(md, cfg.writeDoc, cfg.docPath, logf); err != nil {
		logf("%v", err)
		os.Exit(1)
	}
}

// result is what one run measured.
type result struct {
	cfg           config
	raw           []time.Duration // raw COPY pipe, before and after
	copyTime      time.Duration   // the workflow's copy phase
	loadRows      int64           // source rows changed by the load
	loadStatement int64
	applyTime     time.Duration // load start until everything applied
	catchUp       time.Duration // load end until everything applied
	maxLagBytes   int64
	maxLagSeconds float64
	vdiff         string
}

const schema = `CREATE TABLE %s (id bigint PRIMARY KEY, customer_id bigint NOT NULL, note text, amount numeric(12,2), created timestamptz NOT NULL DEFAULT now())`

func measure(ctx context.Context, cfg config, env *testenv.Env, r *result) error {
	src, t0, t1 := env.Clusters[0], env.Clusters[1], env.Clusters[2]
	logf("loading %d rows", cfg.rows)
	if err := src.Exec(ctx, "bench", fmt.Sprintf(schema, "orders")); err != nil {
		return err
	}
	if err := src.Exec(ctx, "bench", fmt.Sprintf(`INSERT INTO orders (id, customer_id, note, amount)
		SELECT g, g %% 10007, 'order note ' || g, g / 100.0 FROM generate_series(1, %d) g`, cfg.rows)); err != nil {
		return err
	}
	if err := src.Exec(ctx, "bench", "VACUUM ANALYZE orders"); err != nil {
		return err
	}
	rawCopy := func() error {
		if err := t0.Exec(ctx, "bench", "DROP TABLE IF EXISTS orders_raw; "+fmt.Sprintf(schema, "orders_raw")); err != nil {
			return err
		}
		d, err := pipeCopy(ctx, src.DSN("bench"), t0.DSN("bench"))
		if err != nil {
			return fmt.Errorf("raw copy: %w", err)
		}
		logf("raw COPY pipe: %s", d.Round(time.Millisecond))
		r.raw = append(r.raw, d)
		return t0.Exec(ctx, "bench", "DROP TABLE orders_raw")
	}
	if err := rawCopy(); err != nil {
		return err
	}

	clusters := fmt.Sprintf("version: 1\nclusters:\n  src: { dsn: %q }\n  t0: { dsn: %q }\n  t1: { dsn: %q }\n",
		src.DSN("bench"), t0.DSN("bench"), t1.DSN("bench"))
	from := clusters + "groups:\n  main: { unsharded: true, cluster: src }\n" +
		"  by_customer:\n    index: { name: by_customer, column: customer_id, type: bigint, function: xxhash }\n" +
		"    shards: { \"-80\": t0, \"80-\": t1 }\n    tables: { customers: { column: id } }\n"
	to := strings.Replace(from, "tables: { customers: { column: id } }", "tables: { customers: { column: id }, orders: {} }", 1)
	store, err := workflows.OpenStore(ctx, src.DSN("bench"))
	if err != nil {
		return err
	}
	defer store.Close()
	id, _, err := workflows.Create(ctx, store, workflows.Spec{Kind: workflows.MoveTables, From: from, To: to,
		FromFile: "from.yaml", ToFile: "to.yaml", Group: "by_customer", Tables: []string{"orders"}, ChunkRows: cfg.chunkRows}, false)
	if err != nil {
		return err
	}
	defer func() {
		if err := workflows.Cancel(context.Background(), store, id); err != nil {
			logf("cancel: %v", err)
		}
	}()
	runner, err := workflows.NewRunner(ctx, store, id)
	if err != nil {
		return err
	}
	runCtx, stopRun := context.WithCancel(ctx)
	runErr := make(chan error, 1)
	start := time.Now()
	go func() { runErr <- runner.Run(runCtx) }()
	defer func() { stopRun(); <-runErr }()
	for {
		w, err := store.Get(ctx, id)
		if err != nil {
			return err
		}
		if w.Phase == workflows.PhaseStreaming {
			break
		}
		if w.Phase == workflows.PhaseError {
			return fmt.Errorf("workflow: %s", w.Error)
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.copyTime = time.Since(start)
	logf("workflow copy: %s", r.copyTime.Round(time.Millisecond))
	if err := rawCopy(); err != nil {
		return err
	}
	if err := streamUnderLoad(ctx, cfg, src, store, runner, id, r); err != nil {
		return err
	}
	diffs, err := workflows.VDiff(ctx, store, id)
	if err != nil {
		return err
	}
	var parts []string
	for _, d := range diffs {
		if !d.Clean() {
			return fmt.Errorf("vdiff %s on %s: %+v", d.Table, d.Target, d)
		}
		parts = append(parts, fmt.Sprintf("%s on %s: %d rows match", d.Table, d.Target, d.Matching))
	}
	r.vdiff = strings.Join(parts, "; ")
	return nil
}

// pipeCopy times COPY orders TO STDOUT on one cluster piped into COPY
// orders_raw FROM STDIN on another.
func pipeCopy(ctx context.Context, fromDSN, toDSN string) (time.Duration, error) {
	from, err := pgx.Connect(ctx, fromDSN)
	if err != nil {
		return 0, err
	}
	defer from.Close(ctx)
	to, err := pgx.Connect(ctx, toDSN)
	if err != nil {
		return 0, err
	}
	defer to.Close(ctx)
	pr, pw := io.Pipe()
	start := time.Now()
	errc := make(chan error, 1)
	go func() {
		_, err := from.PgConn().CopyTo(ctx, pw, "COPY orders TO STDOUT (FORMAT binary)")
		pw.CloseWithError(err)
		errc <- err
	}()
	_, err = to.PgConn().CopyFrom(ctx, pr, "COPY orders_raw FROM STDIN (FORMAT binary)")
	pr.Close()
	if werr := <-errc; err == nil {
		err = werr
	}
	return time.Since(start), err
}

// streamUnderLoad runs the write load while the workflow streams, samples
// the lag, and waits until the runner has applied everything.
func streamUnderLoad(ctx context.Context, cfg config, src *testenv.Cluster, store *workflows.Store, runner *workflows.Runner, id int64, r *result) error {
	logf("write load: %d connections for %s", cfg.writers, cfg.load)
	loadCtx, stopLoad := context.WithTimeout(ctx, cfg.load)
	defer stopLoad()
	var rows, stmts atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, cfg.writers)
	start := time.Now()
	for w := range cfg.writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := pgx.Connect(ctx, src.DSN("bench"))
			if err != nil {
				errs[w] = err
				return
			}
			defer c.Close(context.Background())
			next := int64(cfg.rows) + 1 + int64(w)
			for i := 0; loadCtx.Err() == nil; i++ {
				k := 1 + (int64(i)*7919+int64(w)*104729)%int64(cfg.rows)
				var sql string
				switch i % 4 {
				case 0:
					sql = fmt.Sprintf("INSERT INTO orders (id, customer_id, note, amount) VALUES (%d, %d, 'new', 1)", next, next%10007)
					next += int64(cfg.writers)
				case 1:
					sql = fmt.Sprintf("UPDATE orders SET amount = amount + 1 WHERE id = %d", k)
				case 2:
					sql = fmt.Sprintf("UPDATE orders SET customer_id = customer_id + 1 WHERE id = %d", k+1)
				case 3:
					sql = fmt.Sprintf("DELETE FROM orders WHERE id = %d", k+2)
				}
				tag, err := c.Exec(loadCtx, sql)
				if err != nil {
					if loadCtx.Err() == nil {
						errs[w] = err
					}
					return
				}
				stmts.Add(1)
				rows.Add(tag.RowsAffected())
			}
		}()
	}
	sample := func() {
		st, err := store.Status(ctx, id)
		if err != nil {
			return
		}
		for _, s := range st.Streams {
			r.maxLagBytes = max(r.maxLagBytes, s.LagBytes)
			r.maxLagSeconds = max(r.maxLagSeconds, s.LagSeconds)
		}
	}
	for loadCtx.Err() == nil {
		sample()
		time.Sleep(250 * time.Millisecond)
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("write load: %w", err)
	}
	loadEnd := time.Now()
	var lsnText string
	conn, err := src.Conn(ctx, "bench")
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	if err := conn.QueryRow(ctx, "SELECT pg_current_wal_insert_lsn()::text").Scan(&lsnText); err != nil {
		return err
	}
	lsn, _ := pglogrepl.ParseLSN(lsnText)
	for runner.Processed()["src"] < lsn {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		sample()
		time.Sleep(10 * time.Millisecond)
	}
	r.applyTime, r.catchUp = time.Since(start), time.Since(loadEnd)
	r.loadRows, r.loadStatement = rows.Load(), stmts.Load()
	logf("stream: %d rows changed by %d statements, applied %s after the load started (%s after it ended)",
		r.loadRows, r.loadStatement, r.applyTime.Round(time.Millisecond), r.catchUp.Round(time.Millisecond))
	return nil
}
