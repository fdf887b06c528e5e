package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"

	"github.com/shardgate/shardgate/examples/ecommerce"
	"github.com/shardgate/shardgate/internal/testenv"
	"github.com/shardgate/shardgate/keyexpr"
	"github.com/shardgate/shardgate/topology"
	"github.com/shardgate/shardgate/vschema"
)

func demoCmd() *cobra.Command {
	var dir, listen string
	var customers int
	var noProxy bool
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Start local clusters with the e-commerce example and serve the proxy",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runDemo(ctx, dir, listen, customers, noProxy)
		},
	}
	cmd.Flags().StringVar(&dir, "dir", ".shardgate-demo", "directory for the clusters' data (kept between runs)")
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:6432", "address the proxy listens on")
	cmd.Flags().IntVar(&customers, "customers", 1000, "customers in the example data set")
	cmd.Flags().BoolVar(&noProxy, "no-proxy", false, "start the clusters and data only")
	cmd.AddCommand(demoLoadCmd())
	return cmd
}

func runDemo(ctx context.Context, dir, listen string, customers int, noProxy bool) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	fmt.Printf("starting 2 PostgreSQL clusters under %s (ports %v) ...\n", abs, ecommerce.DemoPorts())
	env, err := testenv.Start(ctx, testenv.Options{N: 2, Ports: ecommerce.DemoPorts(), BaseDir: abs, Databases: []string{ecommerce.Database}, Log: os.Stderr})
	if err != nil {
		return err
	}
	defer env.Stop()
	release := env.StopOnSignal()
	defer release()

	dsns := map[string]string{}
	for _, c := range env.Clusters {
		dsns[c.Name] = c.DSN(ecommerce.Database)
	}
	yaml, err := ecommerce.TopologyFor(dsns)
	if err != nil {
		return err
	}
	topoFile := filepath.Join(abs, "topology.yaml")
	if err := os.WriteFile(topoFile, []byte(yaml), 0o644); err != nil {
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
	if err := loadAndReport(ctx, os.Stdout, vs, dsns, customers); err != nil {
		return err
	}
	for _, c := range env.Clusters {
		fmt.Printf("cluster %s: psql %q\n", c.Name, c.DSN(ecommerce.Database))
	}
	if noProxy {
		fmt.Println("clusters are running; Ctrl-C stops them")
		<-ctx.Done()
		return nil
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	srv, ln, err := startServer(ctx, log, topoFile, listen)
	if err != nil {
		return err
	}
	fmt.Printf("\nshardgate is serving the example on %s (topology %s)\n", ln.Addr(), topoFile)
	fmt.Printf("  psql \"postgres://postgres@%s/%s?sslmode=disable\"\n", ln.Addr(), ecommerce.Database)
	fmt.Println("Ctrl-C stops the proxy and the clusters.")
	go func() { _ = srv.Serve(ln) }()
	<-ctx.Done()
	ln.Close()
	srv.Close()
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
	// by an older run (or edited by hand) must not break the load.
	for _, t := range ecommerce.Tables() {
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
