package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"
)

// statusCommands are what `shardgate status` shows without arguments.
var statusCommands = []string{"SHOW VERSION", "SHOW CLUSTERS", "SHOW POOLS", "SHOW CLIENTS", "SHOW STATS", "SHOW TRANSACTIONS"}

func statusCmd() *cobra.Command {
	var dsn, order, like string
	var limit int
	cmd := &cobra.Command{
		Use:   "status [--dsn DSN] [COMMAND...] | status queries [--order KEY] [--limit N] [--like PATTERN]",
		Short: "Print a running proxy's state through its admin console",
		Long: `Connects to the admin console (database shardgate, a user marked admin: true
under proxy.auth.users) and prints the answers of the given console commands,
or of ` + strings.Join(statusCommands, ", ") + ` by default.
'status queries' prints the statistics by fingerprint (SHOW QUERIES): the
--limit costliest by --order (total_time, calls, mean, max, p99, rows,
shards, errors, pool_wait), those whose text matches --like if given.`,
		Example: `  shardgate status --dsn 'postgres://admin:secret@127.0.0.1:6432/shardgate?sslmode=disable'
  shardgate status 'SHOW SERVERS' 'SHOW POOLS LIKE ''pg0'''
  shardgate status 'PAUSE pg0'
  shardgate status queries --order p99 --limit 10`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				args = statusCommands
			}
			if len(args) == 1 && args[0] == "queries" {
				args = []string{queriesCommand(order, limit, like)}
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), time.Minute+10*time.Second)
			defer cancel()
			return printStatus(ctx, cmd.OutOrStdout(), dsn, args)
		},
	}
	cmd.Flags().StringVar(&order, "order", "total_time", "status queries: the figure to order by, largest first")
	cmd.Flags().IntVar(&limit, "limit", 20, "status queries: how many fingerprints to print (0: all)")
	cmd.Flags().StringVar(&like, "like", "", "status queries: only fingerprints whose text matches this LIKE pattern")
	cmd.Flags().StringVar(&dsn, "dsn", "postgres://admin@127.0.0.1:6432/shardgate?sslmode=disable", "connection string of the admin console")
	return cmd
}

// queriesCommand is the SHOW QUERIES command of `status queries`.
func queriesCommand(order string, limit int, like string) string {
	q := fmt.Sprintf("SHOW QUERIES ORDER BY %s DESC LIMIT %d", order, limit)
	if like != "" {
		q += " LIKE '" + strings.ReplaceAll(like, "'", "''") + "'"
	}
	return q
}

// printStatus runs each console command and prints its answer as a table.
func printStatus(ctx context.Context, w io.Writer, dsn string, commands []string) error {
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	for i, q := range commands {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "== %s\n", q)
		rows, err := c.Query(ctx, q, pgx.QueryExecModeSimpleProtocol)
		if err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		var names []string
		for _, f := range rows.FieldDescriptions() {
			names = append(names, f.Name)
		}
		if len(names) > 0 {
			fmt.Fprintln(tw, strings.Join(names, "\t"))
		}
		for rows.Next() {
			var cells []string
			for _, v := range rows.RawValues() {
				if v == nil {
					cells = append(cells, "NULL")
				} else {
					cells = append(cells, string(v))
				}
			}
			fmt.Fprintln(tw, strings.Join(cells, "\t"))
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
		tw.Flush()
		fmt.Fprintln(w, rows.CommandTag().String())
	}
	return nil
}
