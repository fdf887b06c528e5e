package main

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"

	"github.com/shardgate/shardgate/examples/ecommerce"
	"github.com/shardgate/shardgate/topology"
)

func demoAddShardsCmd() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "add-shards",
		Short: "Create the databases of the example's 4-shard topology on the demo's servers; write DIR/topology-4.yaml",
		Long: `add-shards prepares the README's tour "Reshard the demo from 2 to 4 shards"
on a running demo: it creates four empty databases for by_customer's new
shards (shop_2 and shop_3 on the server of pg0, shop_4 and shop_5 on that
of pg1; dropped first if an earlier tour left them, with their replication
slots) and writes examples/ecommerce/topology-4.yaml, with the addresses of
the demo's servers, to DIR/topology-4.yaml: the --to of the reshard.`,
		Example: `  shardgate demo add-shards
  shardgate workflow create reshard --topology .shardgate-demo/topology.yaml \
      --to .shardgate-demo/topology-4.yaml --group by_customer`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return addShards(cmd.Context(), cmd.OutOrStdout(), dir)
		},
	}
	cmd.Flags().StringVar(&dir, "dir", ".shardgate-demo", "the running demo's directory")
	return cmd
}

// addShards creates the databases of Topology4YAML's new clusters on the
// servers of the demo in dir and writes dir/topology-4.yaml with their
// addresses.
func addShards(ctx context.Context, out io.Writer, dir string) error {
	demoFile := filepath.Join(dir, "topology.yaml")
	demo, err := topology.Load(demoFile)
	if err != nil {
		return fmt.Errorf("%w (is the demo running? start it with make demo)", err)
	}
	four, err := topology.Parse("topology-4.yaml", []byte(ecommerce.Topology4YAML))
	if err != nil {
		return err
	}
	// The demo's server of each port of the example's files.
	servers := map[string]*url.URL{}
	for i, port := range ecommerce.DemoPorts() {
		name := fmt.Sprintf("pg%d", i)
		c := demo.Cluster(name)
		if c == nil {
			return fmt.Errorf("%s has no cluster %s: not the demo's topology", demoFile, name)
		}
		u, err := url.Parse(c.DSN)
		if err != nil {
			return fmt.Errorf("cluster %s: %w", name, err)
		}
		servers[fmt.Sprint(port)] = u
	}
	dsns := map[string]string{}
	for _, c := range four.Clusters {
		u, err := url.Parse(c.DSN)
		if err != nil {
			return err
		}
		server, ok := servers[u.Port()]
		if !ok {
			return fmt.Errorf("cluster %s of topology-4.yaml is on none of the demo's servers", c.Name)
		}
		dsn := *server
		dsn.Path = u.Path
		dsns[c.Name] = dsn.String()
		db := strings.TrimPrefix(u.Path, "/")
		if db == ecommerce.Database {
			continue // pg0 and pg1: the demo's own
		}
		if demo.Cluster(c.Name) != nil {
			return fmt.Errorf("%s already has cluster %s: the demo runs on the new shards; restart it (it resets its data) for another tour", demoFile, c.Name)
		}
		if err := freshDatabase(ctx, dsn, db); err != nil {
			return fmt.Errorf("cluster %s: %w", c.Name, err)
		}
		fmt.Fprintf(out, "created database %s on %s (cluster %s)\n", db, dsn.Host, c.Name)
	}
	yaml, err := ecommerce.Topology4For(dsns)
	if err != nil {
		return err
	}
	file := filepath.Join(dir, "topology-4.yaml")
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(out, "wrote %s: examples/ecommerce/topology-4.yaml on the demo's servers, by_customer on 4 shards (pg2..pg5)\n", file)
	return nil
}

// freshDatabase drops database db on the server of dsn (its replication
// slots first) and creates it empty.
func freshDatabase(ctx context.Context, dsn url.URL, db string) error {
	dsn.Path = "/postgres"
	c, err := pgx.Connect(ctx, dsn.String())
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	for _, sql := range []string{
		`SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE database = $1 AND active_pid IS NOT NULL`,
		`SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE database = $1`,
	} {
		if _, err := c.Exec(ctx, sql, db); err != nil {
			return err
		}
	}
	for _, sql := range []string{"DROP DATABASE IF EXISTS " + pgx.Identifier{db}.Sanitize() + " WITH (FORCE)", "CREATE DATABASE " + pgx.Identifier{db}.Sanitize()} {
		if _, err := c.Exec(ctx, sql); err != nil {
			return err
		}
	}
	return nil
}
