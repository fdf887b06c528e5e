package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/shardgate/shardgate/topology"
	"github.com/shardgate/shardgate/workflows"
)

// workflowCmd is `shardgate workflow ...`: MoveTables and Reshard.
func workflowCmd() *cobra.Command {
	var topoFile string
	cmd := &cobra.Command{
		Use:   "workflow",
		Short: "Move tables and reshard groups while the application writes",
		Long: `A workflow copies tables to new shards under a snapshot and then streams
the changes made since, until it is cancelled. Its state lives in the main
group's cluster (schema shardgate), so any machine with the topology file can
run, inspect or cancel it. switch moves the traffic to the new shards with a
pause of the writes measured in milliseconds, reverse moves it back, complete
ends the workflow (docs/workflows.md).`,
		Example: `  shardgate workflow create movetables --topology topology.yaml --to next.yaml --group by_customer --tables orders --dry-run
  shardgate workflow run 1 --topology topology.yaml
  shardgate workflow status 1 --topology topology.yaml`,
	}
	cmd.PersistentFlags().StringVar(&topoFile, "topology", "", "the topology in effect (locates the main group, where workflows are recorded)")
	store := func(ctx context.Context) (*workflows.Store, error) {
		if topoFile == "" {
			return nil, fmt.Errorf("--topology is required")
		}
		t, err := topology.Load(topoFile)
		if err != nil {
			return nil, err
		}
		return workflows.OpenStore(ctx, t.Cluster(t.Main().Cluster).DSN)
	}
	cmd.AddCommand(workflowCreateCmd(&topoFile, store), workflowRunCmd(store), workflowStatusCmd(store),
		workflowVDiffCmd(store), workflowCancelCmd(store), workflowListCmd(store), workflowStopCmd(store), workflowStartCmd(store),
		workflowSwitchCmd(store), workflowReverseCmd(store), workflowCompleteCmd(&topoFile, store))
	return cmd
}

type storeFunc func(context.Context) (*workflows.Store, error)

// withStore runs f with the store of --topology, closing it after.
func withStore(cmd *cobra.Command, open storeFunc, f func(context.Context, *workflows.Store) error) error {
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	s, err := open(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	return f(ctx, s)
}

// idCommand is a workflow subcommand taking one workflow ID.
func idCommand(cmd *cobra.Command, open storeFunc, f func(*cobra.Command, context.Context, *workflows.Store, int64) error) *cobra.Command {
	cmd.Args = cobra.ExactArgs(1)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		id, err := strconv.ParseInt(args[0], 10, 64)
		if err != nil || id <= 0 {
			return fmt.Errorf("workflow id must be a positive number, not %q", args[0])
		}
		return withStore(cmd, open, func(ctx context.Context, s *workflows.Store) error { return f(cmd, ctx, s, id) })
	}
	return cmd
}

func workflowCreateCmd(topoFile *string, open storeFunc) *cobra.Command {
	var toFile, group, tables string
	var chunkRows, copyParallel int
	var snapshotMax time.Duration
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "create movetables|reshard",
		Short: "Check and record a workflow (or, with --dry-run, only say what it would do)",
		Long: `create checks the clusters (wal_level=logical, a free replication slot and
WAL sender on every source, a primary key on every table, empty target
tables), creates the missing target tables from the source's columns and
primary key, and records the workflow. Nothing is copied until "run".

movetables moves --tables from the main group, or from one other sharded
group, into --group: the --to topology lists them in that group (under
its reference tables to load them on every shard). reshard moves every table of --group
onto the shards the --to topology gives it (splitting shards; the new
shards must be on other clusters or databases).`,
		Example: `  shardgate workflow create movetables --topology topology.yaml --to next.yaml --group by_customer --tables orders,payments
  shardgate workflow create reshard --topology topology.yaml --to four-shards.yaml --group by_customer --dry-run`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			kind := workflows.Kind(args[0])
			if kind != workflows.MoveTables && kind != workflows.Reshard {
				return fmt.Errorf("unknown workflow kind %q (movetables or reshard)", args[0])
			}
			from, err := os.ReadFile(*topoFile)
			if err != nil {
				return err
			}
			to, err := os.ReadFile(toFile)
			if err != nil {
				return err
			}
			spec := workflows.Spec{Kind: kind, From: string(from), To: string(to), FromFile: *topoFile, ToFile: toFile,
				Group: group, ChunkRows: chunkRows, SnapshotMax: snapshotMax, CopyParallel: copyParallel}
			if tables != "" {
				spec.Tables = strings.Split(tables, ",")
			}
			return withStore(cmd, open, func(ctx context.Context, s *workflows.Store) error {
				id, pf, err := workflows.Create(ctx, s, spec, dryRun)
				if err != nil {
					return err
				}
				fmt.Fprint(cmd.OutOrStdout(), pf.Describe())
				if !dryRun {
					fmt.Fprintf(cmd.OutOrStdout(), "created workflow %d; start it with: shardgate workflow run %d --topology %s\n", id, id, *topoFile)
				}
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&toFile, "to", "", "the topology after the move")
	cmd.Flags().StringVar(&group, "group", "", "the sharded group that receives the tables (movetables) or is resharded")
	cmd.Flags().StringVar(&tables, "tables", "", "movetables: comma-separated tables of main to move")
	cmd.Flags().IntVar(&chunkRows, "chunk-rows", 10000, "rows per copy chunk")
	cmd.Flags().DurationVar(&snapshotMax, "snapshot-max", 10*time.Minute, "hold one copy snapshot at most this long, then catch up and take a new one (0: no cap)")
	cmd.Flags().IntVar(&copyParallel, "copy-parallel", 2, "tables of one source cluster copied at once")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "check and print what would be created and copied; change nothing")
	_ = cmd.MarkFlagRequired("to")
	_ = cmd.MarkFlagRequired("group")
	return cmd
}

func workflowRunCmd(open storeFunc) *cobra.Command {
	return idCommand(&cobra.Command{
		Use:   "run ID",
		Short: "Run a workflow in the foreground: copy what is left, then stream until Ctrl-C",
		Long: `run resumes where the workflow stopped: tables or chunks already copied are
not copied again, and the stream restarts after the last change every
target applied. Stop it with Ctrl-C (or SIGTERM) and run it again later.`,
		Example: `  shardgate workflow run 3 --topology topology.yaml`,
	}, open, runForeground)
}

// runForeground runs workflow id until Ctrl-C, SIGTERM, a stop or an error.
func runForeground(cmd *cobra.Command, ctx context.Context, s *workflows.Store, id int64) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	r, err := workflows.NewRunner(ctx, s, id)
	if err != nil {
		return err
	}
	r.Logf = func(format string, args ...any) { fmt.Fprintf(cmd.ErrOrStderr(), format+"\n", args...) }
	return r.Run(ctx)
}

func workflowStopCmd(open storeFunc) *cobra.Command {
	var wait time.Duration
	cmd := idCommand(&cobra.Command{
		Use:   "stop ID",
		Short: "Stop a workflow's runner at its next consistent point (phase stopped)",
		Long: `stop asks the runner, wherever it runs (a workflow run, or a serve
--workflows), to stop after its current copy chunk or between two streamed
transactions, and waits until it has. start resumes it.`,
		Example: "  shardgate workflow stop 3 --topology topology.yaml",
	}, open, func(cmd *cobra.Command, ctx context.Context, s *workflows.Store, id int64) error {
		if err := workflows.Stop(ctx, s, id, wait); err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "workflow %d stopped\n", id)
		return nil
	})
	cmd.Flags().DurationVar(&wait, "wait", 30*time.Second, "how long to wait for the runner to stop")
	return cmd
}

func workflowStartCmd(open storeFunc) *cobra.Command {
	var background bool
	cmd := idCommand(&cobra.Command{
		Use:   "start ID",
		Short: "Resume a stopped (or failed) workflow: in the foreground, or with --background by a serve --workflows",
		Example: `  shardgate workflow start 3 --topology topology.yaml
  shardgate workflow start 3 --topology topology.yaml --background`,
	}, open, func(cmd *cobra.Command, ctx context.Context, s *workflows.Store, id int64) error {
		if err := workflows.Start(ctx, s, id); err != nil {
			return err
		}
		if background {
			fmt.Fprintf(cmd.OutOrStdout(), "workflow %d runnable: a serve --workflows will run it\n", id)
			return nil
		}
		return runForeground(cmd, ctx, s, id)
	})
	cmd.Flags().BoolVar(&background, "background", false, "only make it runnable, for a serve --workflows to pick up")
	return cmd
}

func workflowStatusCmd(open storeFunc) *cobra.Command {
	var asJSON bool
	cmd := idCommand(&cobra.Command{
		Use:     "status ID",
		Short:   "Show a workflow's phase, copy progress per table and stream lag",
		Example: "  shardgate workflow status 3 --topology topology.yaml\n  shardgate workflow status 3 --topology topology.yaml --json",
	}, open, func(cmd *cobra.Command, ctx context.Context, s *workflows.Store, id int64) error {
		st, err := s.Status(ctx, id)
		if err != nil {
			return err
		}
		if asJSON {
			return printJSON(cmd, st)
		}
		fmt.Fprint(cmd.OutOrStdout(), st.Text())
		return nil
	})
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func printJSON(cmd *cobra.Command, v any) error {
	enc := json.NewEncoder(cmd.OutOrStdout())
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func workflowVDiffCmd(open storeFunc) *cobra.Command {
	var asJSON, resume, status bool
	var parallel int
	cmd := idCommand(&cobra.Command{
		Use:   "vdiff ID",
		Short: "Compare every table on its targets with its sources, at one consistent position",
		Long: `vdiff stops each source's stream at a WAL position the source is then read
at (a temporary slot's exported snapshot), compares each table per target
cluster in primary-key chunks, with row hashes computed by Postgres, and
lists missing, extra and mismatched rows with sample keys; then the streams
go on. Writes need not pause. The runner may run anywhere (workflow run,
serve --workflows); when none does, vdiff streams for its own duration.
Progress is recorded in main after each chunk: --resume continues an
interrupted vdiff, --status shows the last one. It exits 1 when anything
differs.`,
		Example: `  shardgate workflow vdiff 3 --topology topology.yaml --parallel 4
  shardgate workflow vdiff 3 --topology topology.yaml --resume
  shardgate workflow vdiff 3 --topology topology.yaml --status`,
	}, open, func(cmd *cobra.Command, ctx context.Context, s *workflows.Store, id int64) error {
		var rep *workflows.VDiffReport
		if status {
			var err error
			if rep, err = s.LastVDiff(ctx, id); err != nil {
				return err
			}
			if rep == nil {
				return fmt.Errorf("workflow %d has no vdiff yet", id)
			}
		} else {
			ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
			defer stop()
			_, err := workflows.RunVDiff(ctx, s, id, workflows.VDiffOptions{Parallel: parallel, Resume: resume,
				Logf: func(format string, args ...any) { fmt.Fprintf(cmd.ErrOrStderr(), format+"\n", args...) }})
			if err != nil {
				return err
			}
			if rep, err = s.LastVDiff(context.WithoutCancel(ctx), id); err != nil {
				return err
			}
		}
		if asJSON {
			if err := printJSON(cmd, rep); err != nil {
				return err
			}
		} else {
			fmt.Fprint(cmd.OutOrStdout(), rep.Text())
		}
		if !status && !rep.Clean() {
			return &exitError{code: 1, msg: "vdiff found differences"}
		}
		return nil
	})
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().IntVar(&parallel, "parallel", 2, "tables x targets compared at once")
	cmd.Flags().BoolVar(&resume, "resume", false, "continue the last vdiff where it stopped (without it, a vdiff starts over)")
	cmd.Flags().BoolVar(&status, "status", false, "only show the last vdiff's result or progress")
	return cmd
}

func workflowCancelCmd(open storeFunc) *cobra.Command {
	return idCommand(&cobra.Command{
		Use:     "cancel ID",
		Short:   "Drop a workflow's slots, publications and target copies",
		Example: "  shardgate workflow cancel 3 --topology topology.yaml",
	}, open, func(cmd *cobra.Command, ctx context.Context, s *workflows.Store, id int64) error {
		if err := workflows.Cancel(ctx, s, id); err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "workflow %d cancelled\n", id)
		return nil
	})
}

func workflowListCmd(open storeFunc) *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Short:   "List workflows, newest first",
		Example: "  shardgate workflow list --topology topology.yaml",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return withStore(cmd, open, func(ctx context.Context, s *workflows.Store) error {
				ws, err := s.List(ctx)
				if err != nil {
					return err
				}
				for _, w := range ws {
					fmt.Fprintf(cmd.OutOrStdout(), "%d\t%s\t%s\t%s\t%s\n", w.ID, w.Kind, w.Phase, w.UpdatedAt.Format("2006-01-02 15:04:05"), w.Error)
				}
				return nil
			})
		},
	}
}
