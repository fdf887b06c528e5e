package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"

	"github.com/shardgate/shardgate/topoinit"
	"github.com/shardgate/shardgate/topology"
)

func topologyInitCmd() *cobra.Command {
	var dsn, cluster, out string
	cmd := &cobra.Command{
		Use:   "init --dsn DSN [--cluster NAME] [-o FILE]",
		Short: "Write a starting topology for an existing database",
		Long: `Inspect a live database and write a topology that serves it unchanged:
one cluster, every table in the main group, every sequence listed, and,
as comments, shard groups suggested by foreign keys and by key columns
that several tables share (customer_id, ...). The file is checked before
it is written.`,
		Example: `  shardgate topology init --dsn postgres://postgres@127.0.0.1:5432/shop -o topology.yaml
  shardgate serve --topology topology.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
			defer cancel()
			conn, err := pgx.Connect(ctx, dsn)
			if err != nil {
				return err
			}
			defer conn.Close(context.Background())
			s, err := topoinit.Inspect(ctx, conn)
			if err != nil {
				return err
			}
			yaml := topoinit.Render(s, topoinit.Options{Cluster: cluster, DSN: dsn})
			name := out
			if name == "" {
				name = "topology.yaml"
			}
			if _, err := topology.Parse(name, []byte(yaml)); err != nil {
				return fmt.Errorf("the topology written for this database does not validate: %w", err)
			}
			if out == "" {
				_, err := fmt.Fprint(cmd.OutOrStdout(), yaml)
				return err
			}
			if err := os.WriteFile(out, []byte(yaml), 0o600); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "%s: %d tables, %d sequences, %d suggested groups\n", out, len(s.Tables), len(s.Sequences), len(topoinit.Suggest(s)))
			return nil
		},
	}
	cmd.Flags().StringVar(&dsn, "dsn", "", "the database to inspect, also the cluster's DSN in the file (postgres://user@host:port/db)")
	cmd.Flags().StringVar(&cluster, "cluster", "pg0", "the cluster's name in the file")
	cmd.Flags().StringVarP(&out, "output", "o", "", "file to write (default: standard output)")
	_ = cmd.MarkFlagRequired("dsn")
	return cmd
}
