package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"

	"github.com/shardgate/shardgate/gsi"
	"github.com/shardgate/shardgate/topology"
	"github.com/shardgate/shardgate/workflows"
)

// gsiCmd is `shardgate gsi ...`: backfill, status and verify of global
// secondary indexes.
func gsiCmd() *cobra.Command {
	var topoFile string
	cmd := &cobra.Command{
		Use:   "gsi",
		Short: "Backfill, verify and inspect global secondary indexes",
		Long: `A global secondary index added to a table that already has rows starts in
state backfilling: the proxies keep its entries on every write but do not
read it. "gsi backfill" copies the entries of the existing rows in
primary-key batches while the application writes, verifies the lookup
table against the owner table and reports a unique index's duplicates.
Its progress lives in the main group (shardgate.gsi_backfills), so any
machine with the topology file can follow it, and a new run resumes after
the last batch committed (docs/topology.md, secondary_indexes).`,
		Example: `  shardgate gsi backfill orders_by_id --topology topology.yaml
  shardgate gsi status --topology topology.yaml
  shardgate gsi verify orders_by_id --topology topology.yaml --repair`,
	}
	cmd.PersistentFlags().StringVar(&topoFile, "topology", "", "the topology in effect (declares the index; locates main)")
	load := fileLoader(&topoFile)
	cmd.AddCommand(gsiBackfillCmd(load, &topoFile), gsiStatusCmd(load), gsiVerifyCmd(load))
	return cmd
}

type topoLoader func() (*topology.Topology, error)

// fileLoader loads the file a --topology flag names.
func fileLoader(path *string) topoLoader {
	return func() (*topology.Topology, error) {
		if *path == "" {
			return nil, fmt.Errorf("--topology is required")
		}
		return topology.Load(*path)
	}
}

func cmdContext(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}

func gsiBackfillCmd(load topoLoader, topoFile *string) *cobra.Command {
	var batchRows int
	var noActivate bool
	cmd := &cobra.Command{
		Use:   "backfill NAME",
		Short: "Copy the entries of a backfilling index's existing rows, then verify it",
		Long: `backfill copies the owner table's rows into the index's lookup table in
primary-key batches (each batch's rows locked FOR SHARE until its entries
are committed), then verifies every lookup cluster against the owner table
and repairs what concurrent writes left different. A unique index whose
rows repeat a value stops in phase "duplicates", listing the first ones.
Stop it any time (Ctrl-C, or even kill -9): the next run resumes after the
last batch committed. Verified, the index is made active: a routing
revision in main that every proxy follows within seconds, written back
into the topology file (or printed, if the file cannot be written).`,
		Example: "  shardgate gsi backfill orders_by_id --topology topology.yaml --batch-rows 5000",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			topo, err := load()
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmdContext(cmd), os.Interrupt, syscall.SIGTERM)
			defer stop()
			errw := cmd.ErrOrStderr()
			line := progressLine(errw)
			b, err := gsi.Open(ctx, topo, args[0], true, gsi.Options{
				BatchRows: batchRows,
				Logf:      func(format string, a ...any) { line.done(); fmt.Fprintf(errw, format+"\n", a...) },
				Progress:  line.show,
				Activate:  !noActivate,
				File:      *topoFile,
				Author:    os.Getenv("USER"),
			})
			if err != nil {
				return err
			}
			defer b.Close()
			runErr := b.Run(ctx)
			line.done()
			st, err := gsi.Status(ctx, b.Main(), args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: %s\n%s", args[0], gsi.IndexPhase(st), gsi.Text(st, workflows.Bar))
			return runErr
		},
	}
	cmd.Flags().IntVar(&batchRows, "batch-rows", 5000, "owner rows per batch")
	cmd.Flags().BoolVar(&noActivate, "no-activate", false, "stop at verified: do not make the index active")
	return cmd
}

// progress writes the backfill's progress: one line rewritten in place on
// a terminal, else one line every few seconds.
type progress struct {
	w        io.Writer
	terminal bool
	last     time.Time
	shown    bool
}

func progressLine(w io.Writer) *progress {
	p := &progress{w: w}
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			p.terminal = true
		}
	}
	return p
}

func (p *progress) show(st []gsi.OwnerStatus) {
	every := 2 * time.Second
	if p.terminal {
		every = 200 * time.Millisecond
	}
	if time.Since(p.last) < every {
		return
	}
	p.last = time.Now()
	var done, total int64
	var rate, eta float64
	for _, s := range st {
		done += s.RowsDone
		total += max(s.RowsEstimate, s.RowsDone)
		rate += s.RowsPerSec
		eta = max(eta, s.ETASeconds)
	}
	pct := 0.0
	if total > 0 {
		pct = 100 * float64(done) / float64(total)
	}
	text := fmt.Sprintf("%s %s %5.1f%%  %d/%d rows  %.0f rows/s  ETA %s", st[0].Index, workflows.Bar(pct), pct, done, total, rate,
		(time.Duration(eta) * time.Second).String())
	if p.terminal {
		fmt.Fprintf(p.w, "\r%-100s", text)
		p.shown = true
		return
	}
	fmt.Fprintln(p.w, text)
}

// done ends the line being rewritten.
func (p *progress) done() {
	if p.shown {
		fmt.Fprintln(p.w)
		p.shown = false
	}
}

func gsiStatusCmd(load topoLoader) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "status [NAME]",
		Short:   "Show the backfills recorded in main: phase, rows done, rate, ETA, duplicates",
		Example: "  shardgate gsi status --topology topology.yaml\n  shardgate gsi status orders_by_id --topology topology.yaml --json",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			topo, err := load()
			if err != nil {
				return err
			}
			ctx := cmdContext(cmd)
			conn, err := pgx.Connect(ctx, topo.Cluster(topo.Main().Cluster).DSN)
			if err != nil {
				return fmt.Errorf("connect to main: %w", err)
			}
			defer conn.Close(ctx)
			name := ""
			if len(args) == 1 {
				name = args[0]
			}
			st, err := gsi.Status(ctx, conn, name)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd, st)
			}
			byIndex := map[string][]gsi.OwnerStatus{}
			var order []string
			for _, s := range st {
				if byIndex[s.Index] == nil {
					order = append(order, s.Index)
				}
				byIndex[s.Index] = append(byIndex[s.Index], s)
			}
			for _, n := range order {
				fmt.Fprintf(cmd.OutOrStdout(), "%s: %s\n%s", n, gsi.IndexPhase(byIndex[n]), gsi.Text(byIndex[n], workflows.Bar))
			}
			if len(order) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "no backfill recorded")
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func gsiVerifyCmd(load topoLoader) *cobra.Command {
	var repair, asJSON bool
	cmd := &cobra.Command{
		Use:   "verify NAME",
		Short: "Compare an index's lookup table with its owner table; --repair fixes what differs",
		Long: `verify compares, per lookup cluster, the number and an order-independent
checksum of the (value, owner key) pairs of the lookup table with those of
the owner rows whose values map there. Where they differ it lists the
entries, settles each under lock (an entry whose write is in flight is not
reported) and prints counts of missing, extra and wrong entries (and a
unique index's duplicates) with a sample. It runs beside the application's
writes. It exits 1 when differences remain.`,
		Example: "  shardgate gsi verify orders_by_id --topology topology.yaml\n  shardgate gsi verify orders_by_id --topology topology.yaml --repair",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			topo, err := load()
			if err != nil {
				return err
			}
			ctx := cmdContext(cmd)
			b, err := gsi.Open(ctx, topo, args[0], false, gsi.Options{})
			if err != nil {
				return err
			}
			defer b.Close()
			res, err := b.Verify(ctx, repair)
			if err != nil {
				return err
			}
			if asJSON {
				if err := printJSON(cmd, res); err != nil {
					return err
				}
			}
			left := 0
			for _, r := range res {
				if !asJSON {
					fmt.Fprintf(cmd.OutOrStdout(), "%s on %s: %d entries, %d expected, %d missing, %d extra, %d wrong, %d duplicate",
						args[0], r.Cluster, r.Entries, r.Expected, r.Missing, r.Extra, r.Wrong, r.Duplicate)
					if r.Repaired && !r.Clean() {
						fmt.Fprint(cmd.OutOrStdout(), " (repaired)")
					}
					fmt.Fprintln(cmd.OutOrStdout())
					for _, d := range r.Diffs {
						fmt.Fprintf(cmd.OutOrStdout(), "  %s\n", d)
					}
				}
				if !repair {
					left += r.Missing + r.Extra + r.Wrong
				}
				left += r.Duplicate
			}
			switch {
			case left > 0 && repair:
				return &exitError{code: 1, msg: fmt.Sprintf("verify: %d duplicates (not repairable: remove the rows)", left)}
			case left > 0:
				return &exitError{code: 1, msg: fmt.Sprintf("verify: %d differences", left)}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&repair, "repair", false, "fix the entries that differ")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
