package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"

	"github.com/shardgate/shardgate/examples/ecommerce"
	"github.com/shardgate/shardgate/vschema"
)

func demoLoadCmd() *cobra.Command {
	var topoFile string
	var customers int
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "load --topology FILE",
		Short: "Load the e-commerce example into the clusters of a topology (what docker-compose.yml's loader runs)",
		Long: `Create the e-commerce example's schema on the clusters of a topology with
the example's groups (main, by_customer, catalog) and load its generated
data, every row on the cluster its shard key maps to and every reference
row on each cluster of its group. The example's tables are dropped first:
each run starts from fresh data. Clusters that do not accept connections
yet are retried for --wait.`,
		Example: `  shardgate demo load --topology examples/compose/topology.yaml --customers 1000`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			t, err := loadTopology(cmd.ErrOrStderr(), topoFile)
			if err != nil {
				return err
			}
			vs, err := vschema.Build(t)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			dsns := map[string]string{}
			for _, c := range t.Clusters {
				dsns[c.Name] = c.DSN
				if err := waitForCluster(ctx, c.Name, c.DSN, wait); err != nil {
					return err
				}
			}
			return loadAndReport(ctx, cmd.OutOrStdout(), vs, dsns, customers)
		},
	}
	cmd.Flags().StringVar(&topoFile, "topology", "", "topology YAML file with the example's groups")
	cmd.Flags().IntVar(&customers, "customers", 1000, "customers in the example data set")
	cmd.Flags().DurationVar(&wait, "wait", time.Minute, "how long to retry a cluster that does not accept connections yet")
	_ = cmd.MarkFlagRequired("topology")
	return cmd
}

// loadAndReport loads the example data set with the given number of
// customers into the clusters (loadExample) and prints the rows of each
// table.
func loadAndReport(ctx context.Context, out io.Writer, vs *vschema.VSchema, dsns map[string]string, customers int) error {
	cfg := ecommerce.Small()
	cfg.Customers = customers
	start := time.Now()
	stats, err := loadExample(ctx, vs, dsns, cfg)
	if err != nil {
		return err
	}
	if err := analyze(ctx, dsns); err != nil {
		return err
	}
	fmt.Fprintf(out, "loaded the example data in %s:\n", time.Since(start).Round(time.Millisecond))
	for _, t := range ecommerce.Tables() {
		fmt.Fprintf(out, "  %-14s %8d rows", t, stats.Rows[t])
		if si := vs.Table("public", t).LookupOf; si != nil && !si.Active {
			fmt.Fprintf(out, " (index %s is backfilling: `shardgate gsi backfill %s` fills it)", si.Name, si.Name)
		}
		fmt.Fprintln(out)
	}
	return nil
}

// waitForCluster connects to dsn until it answers or wait has passed.
func waitForCluster(ctx context.Context, name, dsn string, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		c, err := pgx.Connect(ctx, dsn)
		if err == nil {
			return c.Close(ctx)
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("cluster %s: %w", name, err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}
