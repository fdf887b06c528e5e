package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/shardgate/shardgate/topology"
	"github.com/shardgate/shardgate/verify"
)

// verifyCmd is `shardgate verify`: the fleet's data against its routing.
func verifyCmd() *cobra.Command {
	var topoFile string
	var opts verify.Options
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Check the fleet: misplaced rows, reference copies, sequences, secondary indexes",
		Long: `verify checks every cluster's data against the routing in force (the
topology file with main's routing state applied): rows on a cluster their
shard key does not map to, reference tables whose copies differ from the
group's first cluster's, sequences whose next value their column already
holds, and global secondary indexes against their owner tables. It reads
in chunks, the comparisons pushed into Postgres, and prints progress on
stderr; each chunk is recorded in main, so an interrupted run goes on with
--resume. --repair fixes what is safe to fix (docs/verify.md). It exits 1
when anything found is left unrepaired, 0 on a clean fleet.`,
		Example: `  shardgate verify --topology topology.yaml
  shardgate verify --topology topology.yaml --group by_customer --table orders
  shardgate verify --topology topology.yaml --repair
  shardgate verify --topology topology.yaml --resume`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if topoFile == "" {
				return fmt.Errorf("--topology is required")
			}
			topo, err := topology.Load(topoFile)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmdContext(cmd), os.Interrupt, syscall.SIGTERM)
			defer stop()
			line := verifyProgress(cmd.ErrOrStderr())
			opts.Progress = line.show
			rep, runErr := verify.Run(ctx, topo, opts)
			if rep == nil {
				return runErr
			}
			if asJSON {
				if err := printJSON(cmd, rep); err != nil {
					return err
				}
			} else {
				printVerify(cmd.OutOrStdout(), rep)
			}
			if runErr != nil {
				return fmt.Errorf("%w (run %d stopped: continue it with --resume)", runErr, rep.Run)
			}
			if left := rep.Left(); left > 0 {
				return &exitError{code: 1, msg: fmt.Sprintf("verify: %d findings left", left)}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&topoFile, "topology", "", "the topology file (locates main and every cluster)")
	cmd.Flags().StringVar(&opts.Group, "group", "", "check only this group's tables and indexes")
	cmd.Flags().StringVar(&opts.Table, "table", "", "check only this table (name or schema.name) and its indexes")
	cmd.Flags().BoolVar(&opts.Repair, "repair", false, "fix what is safe to fix")
	cmd.Flags().BoolVar(&opts.Resume, "resume", false, "continue the last unfinished run of the same scope")
	cmd.Flags().IntVar(&opts.ChunkRows, "chunk-rows", 10000, "rows per chunk")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}

// printVerify prints a line per unit with its findings below it.
func printVerify(w io.Writer, rep *verify.Report) {
	fmt.Fprintf(w, "verify run %d, routing from %s\n", rep.Run, rep.Routing)
	for _, u := range rep.Units {
		fmt.Fprintf(w, "%s: %d rows, %d found", u.Name, u.Rows, u.Found)
		if u.Repaired > 0 {
			fmt.Fprintf(w, ", %d repaired", u.Repaired)
		}
		fmt.Fprintf(w, ", %.0f rows/s\n", u.RowsPerSec())
		for _, f := range u.Samples {
			fmt.Fprintf(w, "  %s: %s\n", f.Key, f.Detail)
		}
		if n := u.Found - int64(len(u.Samples)); n > 0 {
			fmt.Fprintf(w, "  ... and %d more\n", n)
		}
	}
	if left := rep.Left(); left == 0 {
		fmt.Fprintln(w, "clean")
	}
}

// unitProgress writes a unit's progress on stderr: rewritten in place on a
// terminal, else a line every few seconds and one when the unit is done.
type unitProgress struct {
	p *progress
}

func verifyProgress(w io.Writer) *unitProgress { return &unitProgress{p: progressLine(w)} }

func (l *unitProgress) show(u *verify.Unit) {
	every := 2 * time.Second
	if l.p.terminal {
		every = 200 * time.Millisecond
	}
	if !u.Done && time.Since(l.p.last) < every {
		return
	}
	l.p.last = time.Now()
	text := fmt.Sprintf("%s: %d rows, %d found, %.0f rows/s", u.Name, u.Rows, u.Found, u.RowsPerSec())
	if u.Done {
		text += ", done"
	}
	if l.p.terminal {
		fmt.Fprintf(l.p.w, "\r%-100s", text)
		l.p.shown = true
		if u.Done {
			l.p.done()
		}
		return
	}
	fmt.Fprintln(l.p.w, text)
}
