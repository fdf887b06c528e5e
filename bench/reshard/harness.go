package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"

	"github.com/shardgate/shardgate/bench/internal/benchkit"
	"github.com/shardgate/shardgate/internal/testenv"
	"github.com/shardgate/shardgate/topology"
	"github.com/shardgate/shardgate/vschema"
	"github.com/shardgate/shardgate/workflows"
)

type harness struct {
	cfg       config
	env       *testenv.Env
	tmp       string
	shardgate string
	r         *result
}

const groupSchema = `CREATE TABLE customers (id bigint PRIMARY KEY, name text NOT NULL);
CREATE TABLE orders (id bigint PRIMARY KEY, customer_id bigint NOT NULL, note text NOT NULL, amount numeric(12,2) NOT NULL);
CREATE INDEX orders_customer ON orders (customer_id);
CREATE TABLE countries (code text PRIMARY KEY, name text NOT NULL);
INSERT INTO countries SELECT 'c' || g, 'country ' || g FROM generate_series(1, 200) g;`

// The initial rows, as generated here and recomputed by the oracle.
func initialOrder(id int64, customers int) []any {
	return []any{id, 1 + id%int64(customers), "order " + strconv.FormatInt(id, 10), id % 1000}
}

func (h *harness) run(ctx context.Context) error {
	cfg := h.cfg
	for _, c := range append(sourceNames, targetNames...) {
		if err := h.env.Clusters[clusterDB[c].server].Exec(ctx, "", "CREATE DATABASE "+clusterDB[c].db); err != nil {
			return err
		}
	}
	port, err := benchkit.FreePort()
	if err != nil {
		return err
	}
	from, to := h.topologies(fmt.Sprintf("127.0.0.1:%d", port))
	top, err := topology.Parse("from.yaml", []byte(from))
	if err != nil {
		return err
	}
	vs, err := vschema.Build(top)
	if err != nil {
		return err
	}
	if err := h.load(ctx, vs); err != nil {
		return err
	}
	if err := h.exec(ctx, "main", ledgerSchema); err != nil {
		return err
	}
	file := filepath.Join(h.tmp, "topology.yaml")
	if err := os.WriteFile(file, []byte(from), 0o644); err != nil {
		return err
	}
	proxy, err := benchkit.StartShardgate(ctx, benchkit.Shardgate{Name: "shardgate", Bin: h.shardgate, Topology: file, Port: port,
		LogPath: filepath.Join(h.tmp, "shardgate.log")})
	if err != nil {
		return err
	}
	defer proxy.Stop(10 * time.Second)

	store, err := workflows.OpenStore(ctx, h.dsn("main"))
	if err != nil {
		return err
	}
	defer store.Close()
	id, _, err := workflows.Create(ctx, store, workflows.Spec{Kind: workflows.Reshard, From: from, To: to,
		FromFile: "from.yaml", ToFile: "to.yaml", Group: "by_customer", ChunkRows: cfg.chunkRows}, false)
	if err != nil {
		return err
	}
	if cfg.switches {
		defer func() {
			if _, err := workflows.Complete(context.Background(), store, id, workflows.CompleteOptions{}); err != nil {
				logf("complete: %v", err)
			}
		}()
		return h.runSwitches(ctx, store, id, file, port)
	}
	defer func() {
		if err := workflows.Cancel(context.Background(), store, id); err != nil {
			logf("cancel: %v", err)
		}
	}()

	pgb, err := h.startLoadOn(port, 0, "pgbench")
	if err != nil {
		return err
	}
	defer pgb.Stop(5 * time.Second)
	runner, err := workflows.NewRunner(ctx, store, id)
	if err != nil {
		return err
	}
	runCtx, stopRun := context.WithCancel(ctx)
	runErr := make(chan error, 1)
	loadStart := time.Now()
	time.Sleep(2 * time.Second) // the load is running when the copy starts
	start := time.Now()
	go func() { runErr <- runner.Run(runCtx) }()
	defer func() { stopRun(); <-runErr }()
	if err := h.waitStreaming(ctx, store, id, pgb); err != nil {
		return err
	}
	h.r.copyTime = time.Since(start)
	logf("copy done in %s; the load goes on for %s", h.r.copyTime.Round(time.Millisecond), cfg.loadAfter)
	for end := time.Now().Add(cfg.loadAfter); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
		if pgb.Exited() {
			return fmt.Errorf("pgbench ended early: %v: %s", pgb.ExitError(), benchkit.FileTail(filepath.Join(h.tmp, "pgbench.log"), 10))
		}
		h.sampleLag(ctx, store, id)
	}
	pgb.Stop(10 * time.Second)
	loadEnd := time.Now()
	h.r.loadTime = loadEnd.Sub(loadStart)
	time.Sleep(time.Second) // transactions the proxy was finishing
	if err := h.waitAppliedFrom(ctx, runner, store, id, sourceNames); err != nil {
		return err
	}
	h.r.catchUp = time.Since(loadEnd)
	logf("everything applied %s after the load ended", h.r.catchUp.Round(time.Millisecond))
	if err := h.vdiff(ctx, store, id); err != nil {
		return err
	}
	return h.oracle(ctx)
}

func (h *harness) vdiff(ctx context.Context, store *workflows.Store, id int64) error {
	diffs, err := workflows.VDiff(ctx, store, id)
	if err != nil {
		return err
	}
	for _, d := range diffs {
		h.r.vdiffRows += d.Matching
		if !d.Clean() {
			h.r.vdiffProblems = append(h.r.vdiffProblems, fmt.Sprintf("%s on %s: %+v", d.Table, d.Target, d))
		}
	}
	return nil
}

// load fills the sources: customers and orders on the shard of their
// customer, countries on both.
func (h *harness) load(ctx context.Context, vs *vschema.VSchema) error {
	cfg := h.cfg
	logf("loading %d orders of %d customers", cfg.orders, cfg.customers)
	start := time.Now()
	g := vs.Group("by_customer")
	shard := func(customer int64) string {
		s, _ := g.ShardFor(vschema.IntegerKey(customer))
		return s.Cluster
	}
	schema := groupSchema
	if cfg.switches {
		// The stream back after a split merges two new shards into each
		// old one: exact with the shard key in the primary key.
		schema = strings.Replace(schema, "orders (id bigint PRIMARY KEY, customer_id bigint NOT NULL,", "orders (id bigint NOT NULL, customer_id bigint NOT NULL,", 1)
		schema = strings.Replace(schema, "amount numeric(12,2) NOT NULL);", "amount numeric(12,2) NOT NULL, PRIMARY KEY (customer_id, id));", 1)
	}
	for _, c := range sourceNames {
		if err := h.exec(ctx, c, schema); err != nil {
			return err
		}
		conn, err := pgx.Connect(ctx, h.dsn(c))
		if err != nil {
			return err
		}
		var id int64
		next := func(n int64, row func(int64) []any) func() bool {
			id = 0
			return func() bool {
				for id++; id <= n; id++ {
					if r := row(id); shard(r[1].(int64)) == c {
						return true
					}
				}
				return false
			}
		}
		custRow := func(id int64) []any { return []any{id, id, "customer " + strconv.FormatInt(id, 10)} }
		more := next(int64(cfg.customers), custRow)
		_, err = conn.CopyFrom(ctx, pgx.Identifier{"customers"}, []string{"id", "name"}, pgx.CopyFromFunc(func() ([]any, error) {
			if !more() {
				return nil, nil
			}
			r := custRow(id)
			return []any{r[0], r[2]}, nil
		}))
		if err == nil {
			orderRow := func(id int64) []any { return initialOrder(id, cfg.customers) }
			more = next(int64(cfg.orders), orderRow)
			_, err = conn.CopyFrom(ctx, pgx.Identifier{"orders"}, []string{"id", "customer_id", "note", "amount"}, pgx.CopyFromFunc(func() ([]any, error) {
				if !more() {
					return nil, nil
				}
				return orderRow(id), nil
			}))
		}
		if err == nil {
			_, err = conn.Exec(ctx, "VACUUM ANALYZE")
		}
		conn.Close(ctx)
		if err != nil {
			return fmt.Errorf("%s: load: %w", c, err)
		}
	}
	logf("loaded in %s", time.Since(start).Round(time.Millisecond))
	return nil
}

func (h *harness) waitStreaming(ctx context.Context, store *workflows.Store, id int64, pgb *benchkit.Proc) error {
	for {
		w, err := store.Get(ctx, id)
		if err != nil {
			return err
		}
		switch {
		case w.Phase == workflows.PhaseStreaming:
			return nil
		case w.Phase == workflows.PhaseError:
			return fmt.Errorf("workflow: %s", w.Error)
		case pgb != nil && pgb.Exited():
			return fmt.Errorf("pgbench ended early: %v: %s", pgb.ExitError(), benchkit.FileTail(filepath.Join(h.tmp, "pgbench.log"), 10))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (h *harness) sampleLag(ctx context.Context, store *workflows.Store, id int64) {
	st, err := store.Status(ctx, id)
	if err != nil {
		return
	}
	for _, s := range st.Streams {
		h.r.maxLagBytes = max(h.r.maxLagBytes, s.LagBytes)
		h.r.maxLagSeconds = max(h.r.maxLagSeconds, s.LagSeconds)
	}
}

// waitAppliedFrom waits until the runner has applied everything the
// clusters its stream reads (the sources, or the targets once the traffic
// is on them) had written.
func (h *harness) waitAppliedFrom(ctx context.Context, runner *workflows.Runner, store *workflows.Store, id int64, from []string) error {
	want := map[string]pglogrepl.LSN{}
	for _, c := range from {
		conn, err := pgx.Connect(ctx, h.dsn(c))
		if err != nil {
			return err
		}
		var s string
		err = conn.QueryRow(ctx, "SELECT pg_current_wal_insert_lsn()::text").Scan(&s)
		conn.Close(ctx)
		if err != nil {
			return err
		}
		want[c], _ = pglogrepl.ParseLSN(s)
	}
	for {
		got := runner.Processed()
		done := true
		for c, l := range want {
			done = done && got[c] >= l
		}
		if done {
			return nil
		}
		if w, err := store.Get(ctx, id); err == nil && w.Phase == workflows.PhaseError {
			return fmt.Errorf("workflow: %s", w.Error)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		h.sampleLag(ctx, store, id)
		time.Sleep(50 * time.Millisecond)
	}
}
