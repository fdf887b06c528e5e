package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"

	"github.com/shardgate/shardgate/examples/ecommerce"
	"github.com/shardgate/shardgate/internal/testenv"
	"github.com/shardgate/shardgate/keyexpr"
	"github.com/shardgate/shardgate/topology"
	"github.com/shardgate/shardgate/vschema"
)

// demoOptions are the flags of `shardgate demo`.
type demoOptions struct {
	dir, listen, metrics string
	ports                []int
	customers            int
	noProxy              bool
	standbys             bool
}

func demoCmd() *cobra.Command {
	var o demoOptions
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Start local clusters with the e-commerce example and serve the proxy",
		Long: `demo starts two local PostgreSQL clusters (data under --dir, kept between
runs), creates the e-commerce example's schema and loads its data, every
row on the cluster its shard key maps to, writes the example topology to
DIR/topology.yaml and serves the proxy over it; the second cluster is
reached over TLS (sslmode=verify-full) with a certificate of a CA the demo
makes in DIR (DIR/ca.crt). It runs the workflows
recorded in its main group in the background, as serve --workflows does
(demo add-shards prepares a reshard). The example tables are dropped and
loaded again, and the topology file written anew, on every start: changes
made in a previous run are gone. Editing DIR/topology.yaml while the demo
runs reloads it. --standbys also starts one streaming standby of each
cluster (pg_basebackup -R, asynchronous, on a free port, in a temporary
directory made anew on every start) and lists it under the cluster's
replicas in the topology, for reads with SET shardgate.target = replica.
Ctrl-C stops the proxy and the clusters and exits with status 0.`,
		Example: `  shardgate demo
  shardgate demo --dir /tmp/sg-demo --customers 100 --metrics ""
  shardgate demo --ports 6441,6442 --listen 127.0.0.1:7432
  shardgate demo --standbys`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runDemo(ctx, cmd.OutOrStdout(), o)
		},
	}
	cmd.Flags().StringVar(&o.dir, "dir", ".shardgate-demo", "directory for the clusters (kept between runs; the example tables are reloaded on every start)")
	cmd.Flags().StringVar(&o.listen, "listen", "127.0.0.1:6432", "address the proxy listens on")
	cmd.Flags().StringVar(&o.metrics, "metrics", "127.0.0.1:9187", "address for Prometheus metrics (/metrics); empty: none")
	cmd.Flags().IntSliceVar(&o.ports, "ports", ecommerce.DemoPorts(), "ports of the two clusters (0: a free port)")
	cmd.Flags().IntVar(&o.customers, "customers", 1000, "customers in the example data set")
	cmd.Flags().BoolVar(&o.noProxy, "no-proxy", false, "start the clusters and data only")
	cmd.Flags().BoolVar(&o.standbys, "standbys", false, "also start one streaming standby of each cluster, listed as its replica")
	cmd.AddCommand(demoLoadCmd(), demoAddShardsCmd())
	return cmd
}

// runDemo runs the demo until ctx is cancelled (SIGINT or SIGTERM), then
// stops the proxy and the clusters. An interruption is a normal end: it
// returns nil, so the process (and `make demo`) exits 0.
func runDemo(ctx context.Context, out io.Writer, o demoOptions) error {
	abs, err := filepath.Abs(o.dir)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "starting 2 PostgreSQL clusters under %s (ports %v) ...\n", abs, o.ports)
	// pg1 serves TLS with a certificate of a CA made in the demo's
	// directory; the topology reaches it with sslmode=verify-full.
	env, err := testenv.Start(ctx, testenv.Options{N: 2, Ports: o.ports, BaseDir: abs, Databases: []string{ecommerce.Database}, TLS: []int{1}, Log: os.Stderr})
	if err != nil {
		return interrupted(ctx, out, err)
	}
	defer func() {
		fmt.Fprintln(out, "stopping the clusters ...")
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "shardgate demo:", err)
			return
		}
		fmt.Fprintln(out, "stopped")
	}()
	var standbys map[string]*testenv.Cluster
	if o.standbys {
		if standbys, err = startDemoStandbys(ctx, out, env); err != nil {
			return interrupted(ctx, out, err)
		}
	}
	if err := serveDemo(ctx, out, env, abs, o, standbys); err != nil {
		return interrupted(ctx, out, err)
	}
	return nil
}

// startDemoStandbys starts a streaming standby of each of the demo's
// clusters, by cluster name.
func startDemoStandbys(ctx context.Context, out io.Writer, env *testenv.Env) (map[string]*testenv.Cluster, error) {
	fmt.Fprintln(out, "starting a streaming standby of each cluster (pg_basebackup -R, in a temporary directory) ...")
	standbys := map[string]*testenv.Cluster{}
	for _, c := range env.Clusters {
		s, err := c.StartStandby(ctx, testenv.StandbyOptions{})
		if err != nil {
			return nil, err
		}
		standbys[c.Name] = s
	}
	return standbys, nil
}

// demoClusterLine is a cluster of the example topology: "  pg0: { dsn: "..." }".
var demoClusterLine = regexp.MustCompile(`(?m)^(\s+)([A-Za-z0-9_]+): \{ dsn: ("[^"]*") \}$`)

// withReplicas lists each cluster's standby (by cluster name) under its
// replicas in the example topology.
func withReplicas(yaml string, standbys map[string]*testenv.Cluster) string {
	return demoClusterLine.ReplaceAllStringFunc(yaml, func(line string) string {
		m := demoClusterLine.FindStringSubmatch(line)
		s, ok := standbys[m[2]]
		if !ok {
			return line
		}
		return fmt.Sprintf("%s%s: { dsn: %s, replicas: [%q] }", m[1], m[2], m[3], demoDSN(s))
	})
}

// interrupted turns the error of a step that Ctrl-C cut short into a
// normal end.
func interrupted(ctx context.Context, out io.Writer, err error) error {
	if ctx.Err() != nil {
		fmt.Fprintln(out, "interrupted")
		return nil
	}
	return err
}

// serveDemo loads the example into the running clusters and serves the
// proxy over them until ctx is done.
func serveDemo(ctx context.Context, out io.Writer, env *testenv.Env, dir string, o demoOptions, standbys map[string]*testenv.Cluster) error {
	dsns := map[string]string{}
	for _, c := range env.Clusters {
		dsns[c.Name] = demoDSN(c)
	}
	yaml, err := ecommerce.TopologyFor(dsns)
	if err != nil {
		return err
	}
	yaml = withReplicas(yaml, standbys) + demoLogins
	topoFile := filepath.Join(dir, "topology.yaml")
	if err := os.WriteFile(topoFile, []byte(yaml), 0o600); err != nil {
		return err
	}
	topo, err := topology.Load(topoFile)
	if err != nil {
		return err
	}
	vs, err := vschema.Build(topo)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "resetting the example data (it is reset on every start: tables dropped, created and loaded again) ...")
	if err := loadAndReport(ctx, out, vs, dsns, o.customers); err != nil {
		return err
	}
	for _, c := range env.Clusters {
		fmt.Fprintf(out, "cluster %s: psql %q\n", c.Name, demoDSN(c))
		if s := standbys[c.Name]; s != nil {
			if err := s.WaitReplay(ctx); err != nil {
				return err
			}
			fmt.Fprintf(out, "  its standby (127.0.0.1:%d): psql %q\n", s.Port, demoDSN(s))
		}
	}
	if o.noProxy {
		fmt.Fprintln(out, "clusters are running; Ctrl-C stops them")
		<-ctx.Done()
		return nil
	}
	// Info: reloads and each applied topology change are logged.
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	srv, ln, err := startServer(ctx, log, topoFile, o.listen)
	if err != nil {
		return err
	}
	defer func() {
		ln.Close()
		srv.Close()
	}()
	// Workflows (a reshard of the tour) run in the demo's background, as
	// with serve --workflows; their progress goes to the log.
	if err := startWorkflows(ctx, log, topoFile, time.Second); err != nil {
		return err
	}
	fmt.Fprintf(out, "\nshardgate is serving the example on %s\n", ln.Addr())
	fmt.Fprintf(out, "  psql \"postgres://postgres@%s/%s?sslmode=disable\"\n", ln.Addr(), ecommerce.Database)
	fmt.Fprintf(out, "admin console (docs/admin.md): psql \"postgres://admin@%s/shardgate?sslmode=disable\" -c 'SHOW POOLS'\n", ln.Addr())
	fmt.Fprintf(out, "topology: %s (edit it and the proxy reloads it; every reload is logged)\n", topoFile)
	if len(standbys) > 0 {
		fmt.Fprintln(out, "reads on the standbys: SET shardgate.target = replica; SELECT inet_server_port() FROM customers WHERE id = 42;")
	}
	fmt.Fprintln(out, "workflows (docs/workflows.md) created on it run in the background; their progress is logged")
	if o.metrics != "" {
		addr, err := serveMetrics(o.metrics, srv, false)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "metrics: http://%s/metrics\n", addr)
	}
	fmt.Fprintln(out, "Ctrl-C stops the proxy and the clusters.")
	go func() { _ = srv.Serve(ln) }()
	<-ctx.Done()
	fmt.Fprintln(out, "\nstopping the proxy ...")
	return nil
}

// demoDSN is how the demo reaches a cluster: over TLS, verifying its
// certificate against the demo's CA, when it serves TLS.
func demoDSN(c *testenv.Cluster) string {
	if c.TLS() {
		return c.TLSDSN(ecommerce.Database, "verify-full")
	}
	return c.DSN(ecommerce.Database)
}

// demoLogins is the proxy section of the demo's topology: trust (no
// password is asked) for two names only; admin also opens the console.
const demoLogins = `
# Added by shardgate demo: who may log in. With trust no password is asked,
# but only the names listed here are let in; admin may also open the admin
# console (database shardgate).
proxy:
  auth:
    method: trust
    users:
      postgres: { password: "demo" }
      admin: { password: "demo", admin: true }
`

// dropWorkflowSlots ends the sessions streaming from the workflow slots
// (shardgate_wf...) of the current database and drops them.
const dropWorkflowSlots = `SELECT pg_terminate_backend(active_pid), pg_sleep(0.1) FROM pg_replication_slots
	WHERE database = current_database() AND slot_name LIKE 'shardgate\_wf%' AND active_pid IS NOT NULL;
SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots
	WHERE database = current_database() AND slot_name LIKE 'shardgate\_wf%' AND active_pid IS NULL`

// dropWorkflowPublications drops the workflow publications (shardgate_wf...).
const dropWorkflowPublications = `DO $$DECLARE p name; BEGIN
	FOR p IN SELECT pubname FROM pg_publication WHERE pubname LIKE 'shardgate\_wf%' LOOP
		EXECUTE format('DROP PUBLICATION %I', p);
	END LOOP;
END$$`

// analyze updates the planner statistics of every cluster after the load
// (the console's SHOW SHARDS reports their row estimates).
func analyze(ctx context.Context, dsns map[string]string) error {
	for name, dsn := range dsns {
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return err
		}
		_, err = c.Exec(ctx, "ANALYZE")
		c.Close(ctx)
		if err != nil {
			return fmt.Errorf("analyze %s: %w", name, err)
		}
	}
	return nil
}

// loadExample creates the example schema and loads its data straight into
// the clusters, every row on the cluster its shard key maps to and every
// reference row on each cluster of its group.
func loadExample(ctx context.Context, vs *vschema.VSchema, dsns map[string]string, cfg ecommerce.Config) (ecommerce.Stats, error) {
	conns := map[string]*pgx.Conn{}
	defer func() {
		for _, c := range conns {
			c.Close(context.Background())
		}
	}()
	for name, dsn := range dsns {
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return ecommerce.Stats{}, err
		}
		conns[name] = c
	}
	// A fresh start: the demo owns these tables, and a schema left behind
	// by an older run (or edited by hand) must not break the load. Its
	// routing revisions and backfill progress go too: an index an older
	// run made active has an empty lookup table now.
	// The replication slots and publications of a workflow left unfinished
	// (a reshard of the tour) go with its records: a slot kept would hold
	// WAL for ever, and the next workflow 1 reuses their names.
	for _, c := range conns {
		for _, sql := range []string{dropWorkflowSlots, dropWorkflowPublications, "DROP SCHEMA IF EXISTS shardgate CASCADE"} {
			if _, err := c.Exec(ctx, sql); err != nil {
				return ecommerce.Stats{}, err
			}
		}
	}
	tables := ecommerce.Tables()
	for _, si := range vs.SecondaryIndexes() { // lookup tables the schema does not create
		tables = append(tables, si.Lookup.Name)
	}
	for _, t := range tables {
		tab := vs.Table("public", t)
		for _, cl := range tab.Group.Clusters {
			if _, err := conns[cl].Exec(ctx, "DROP TABLE IF EXISTS "+t+" CASCADE"); err != nil {
				return ecommerce.Stats{}, err
			}
		}
	}
	// Schema: main's on main, each sharded group's on every cluster of it.
	for _, g := range vs.Groups() {
		ddl := ecommerce.GroupSchema(g.Name)
		if ddl == "" {
			continue
		}
		for _, cl := range g.Clusters {
			if _, err := conns[cl].Exec(ctx, ddl); err != nil {
				return ecommerce.Stats{}, fmt.Errorf("schema of %s on %s: %w", g.Name, cl, err)
			}
		}
	}
	type dest struct{ cluster, table string }
	buf := map[dest][][]any{}
	cols := map[string][]string{}
	flush := func(d dest) error {
		rows := buf[d]
		if len(rows) == 0 {
			return nil
		}
		_, err := conns[d.cluster].CopyFrom(ctx, pgx.Identifier{d.table}, cols[d.table], pgx.CopyFromRows(rows))
		buf[d] = rows[:0]
		if err != nil {
			return fmt.Errorf("copy %s into %s: %w", d.table, d.cluster, err)
		}
		return nil
	}
	stats, err := ecommerce.Generate(cfg, func(table string, c []string, row []any) error {
		cols[table] = c
		tab := vs.Table("public", table)
		if tab.LookupOf != nil && !tab.LookupOf.Active {
			return nil // a backfilling index's entries: `shardgate gsi backfill` writes them
		}
		var targets []string
		switch {
		case tab.Group.Unsharded || tab.Reference:
			targets = tab.Group.Clusters
		default:
			key, err := tab.KeyFromColumns(func(col string) (keyexpr.Value, bool) {
				for i, name := range c {
					if strings.EqualFold(name, col) {
						return valueOf(row[i]), true
					}
				}
				return keyexpr.Value{}, false
			})
			if err != nil {
				return fmt.Errorf("%s: %w", table, err)
			}
			sh, err := tab.Group.ShardFor(key)
			if err != nil {
				return err
			}
			targets = []string{sh.Cluster}
		}
		for _, cl := range targets {
			d := dest{cl, table}
			buf[d] = append(buf[d], row)
			if len(buf[d]) >= 5000 {
				if err := flush(d); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return stats, err
	}
	for _, si := range vs.SecondaryIndexes() {
		if !si.Active {
			stats.Rows[si.Lookup.Name] = 0
		}
	}
	for d := range buf {
		if err := flush(d); err != nil {
			return stats, err
		}
	}
	main := vs.Main().Clusters[0]
	if _, err := conns[main].Exec(ctx, stats.SetvalSQL()); err != nil {
		return stats, fmt.Errorf("sequences: %w", err)
	}
	return stats, nil
}

// valueOf converts a generated value to an index-expression value.
func valueOf(v any) keyexpr.Value {
	switch x := v.(type) {
	case int64:
		return keyexpr.Int(x)
	case int32:
		return keyexpr.Int(int64(x))
	case int:
		return keyexpr.Int(int64(x))
	case string:
		return keyexpr.Text(x)
	case nil:
		return keyexpr.Null()
	}
	return keyexpr.Text(fmt.Sprint(v))
}
