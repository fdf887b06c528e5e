package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/shardgate/shardgate/sqlerr"
	"github.com/shardgate/shardgate/workflows"
)

// switchFlags are the flags of switch and reverse.
func switchFlags(cmd *cobra.Command, o *workflows.SwitchOptions, asJSON *bool) {
	cmd.Flags().BoolVar(&o.DryRun, "dry-run", false, "print the steps and change nothing")
	cmd.Flags().DurationVar(&o.MaxLag, "max-lag", time.Second, "start when the stream lags less than this")
	cmd.Flags().DurationVar(&o.AckTimeout, "ack-timeout", time.Second, "abort unless every live proxy holds the writes within this")
	cmd.Flags().DurationVar(&o.TxWait, "tx-wait", time.Second, "abort unless the transactions open on the tables end within this")
	cmd.Flags().DurationVar(&o.Hold, "hold", 5*time.Second, "the longest the proxies hold writes: the switch is decided within it or aborted")
	cmd.Flags().BoolVar(asJSON, "json", false, "print the switch's record as JSON")
}

func printSwitch(cmd *cobra.Command, rec *workflows.SwitchRecord, asJSON bool) error {
	if asJSON {
		return printJSON(cmd, rec)
	}
	fmt.Fprint(cmd.OutOrStdout(), rec.Text())
	return nil
}

func workflowSwitchCmd(open storeFunc) *cobra.Command {
	var o workflows.SwitchOptions
	var readsOnly, asJSON bool
	cmd := idCommand(&cobra.Command{
		Use:   "switch ID",
		Short: "Move a streaming workflow's traffic to its new shards, with a measured write pause",
		Long: `switch holds the writes to the workflow's tables in every live proxy, blocks
them on the serving clusters, waits until the stream applied the last of them,
starts the stream back (new shards -> old ones), and flips the routing
revision every proxy follows; the held writes then run on the new shards.
Any step that fails or times out puts everything back on the old shards.
Reads are not held. --reads-only is refused: a table's reads and writes
route with one layout.`,
		Example: "  shardgate workflow switch 3 --topology topology.yaml --dry-run\n  shardgate workflow switch 3 --topology topology.yaml",
	}, open, func(cmd *cobra.Command, ctx context.Context, s *workflows.Store, id int64) error {
		if readsOnly {
			return sqlerr.New(sqlerr.FeatureNotSupported, "switching reads without writes is not supported: the proxy routes a table's reads and writes with one layout").
				WithHint("Switch reads and writes together: reads are never held by a switch.")
		}
		o.Logf = func(f string, a ...any) { fmt.Fprintf(cmd.ErrOrStderr(), f+"\n", a...) }
		rec, err := workflows.Switch(ctx, s, id, o)
		if rec != nil {
			_ = printSwitch(cmd, rec, asJSON)
		}
		return err
	})
	switchFlags(cmd, &o, &asJSON)
	cmd.Flags().BoolVar(&readsOnly, "reads-only", false, "refused (0A000): reads and writes switch together")
	return cmd
}

func workflowReverseCmd(open storeFunc) *cobra.Command {
	var o workflows.SwitchOptions
	var asJSON bool
	cmd := idCommand(&cobra.Command{
		Use:     "reverse ID",
		Short:   "Move a switched workflow's traffic back to its old shards (kept current by the stream back)",
		Example: "  shardgate workflow reverse 3 --topology topology.yaml",
	}, open, func(cmd *cobra.Command, ctx context.Context, s *workflows.Store, id int64) error {
		o.Logf = func(f string, a ...any) { fmt.Fprintf(cmd.ErrOrStderr(), f+"\n", a...) }
		rec, err := workflows.Reverse(ctx, s, id, o)
		if rec != nil {
			_ = printSwitch(cmd, rec, asJSON)
		}
		return err
	})
	switchFlags(cmd, &o, &asJSON)
	return cmd
}

func workflowCompleteCmd(topoFile *string, open storeFunc) *cobra.Command {
	var keep bool
	cmd := idCommand(&cobra.Command{
		Use:   "complete ID",
		Short: "End a switched workflow: drop the old copies, slots and publications, write the topology file",
		Long: `complete drops the stream back and its slots and publications, the old
shards' copies of the tables (kept, writable again, with --keep-data), and
writes the routing in force into the --topology file; when the file cannot be
written it prints the edit to make.`,
		Example: "  shardgate workflow complete 3 --topology topology.yaml [--keep-data]",
	}, open, func(cmd *cobra.Command, ctx context.Context, s *workflows.Store, id int64) error {
		edit, err := workflows.Complete(ctx, s, id, workflows.CompleteOptions{KeepData: keep, File: *topoFile})
		if edit != nil {
			fmt.Fprintf(cmd.OutOrStdout(), "# the topology file to write:\n%s", edit)
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "workflow %d completed; %s written\n", id, *topoFile)
		return nil
	})
	cmd.Flags().BoolVar(&keep, "keep-data", false, "keep the old shards' copies of the tables")
	return cmd
}
