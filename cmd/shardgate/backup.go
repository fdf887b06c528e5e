package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"

	"github.com/shardgate/shardgate/backup"
	"github.com/shardgate/shardgate/sqlerr"
	"github.com/shardgate/shardgate/topology"
)

// Exit codes of `backup restore-point` refusals (1: any other error).
const (
	exitNotReady = 2 // a server not set up for point-in-time recovery, a name in use
	exitHold     = 3 // the writes could not be held and settled in time
)

// backupCmd is `shardgate backup ...`: restore points across the fleet.
func backupCmd() *cobra.Command {
	var topoFile string
	cmd := &cobra.Command{
		Use:   "backup",
		Short: "Make and list restore points consistent across every cluster",
		Long: `A restore point is a named position in the WAL of every Postgres server of the
topology, made while every proxy holds writes, with no two-phase commit
half done: restoring every server to it (recovery_target_name, from base
backups taken before and the archived WAL) gives one consistent fleet
(docs/backup.md).`,
		Example: `  shardgate backup restore-point before-migration --topology topology.yaml
  shardgate backup list --topology topology.yaml`,
	}
	cmd.PersistentFlags().StringVar(&topoFile, "topology", "", "the topology in effect (its clusters; locates main)")
	load := func() (*topology.Topology, error) {
		if topoFile == "" {
			return nil, fmt.Errorf("--topology is required")
		}
		return topology.Load(topoFile)
	}
	cmd.AddCommand(backupRestorePointCmd(load), backupListCmd(load))
	return cmd
}

func backupRestorePointCmd(load topoLoader) *cobra.Command {
	var o backup.Options
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "restore-point NAME",
		Short: "Hold writes on every proxy, let two-phase commits finish, write the point on every server",
		Long: `restore-point checks that every server archives its WAL (wal_level replica or
logical, archive_mode on, an archive command), then holds the writes on every
live proxy through the switch gate, waits until no transaction writes and no
two-phase commit is prepared on any server, writes pg_create_restore_point(NAME)
on every server (main's last) while no two-phase commit can be decided, and
releases the writes. It prints the pause and each server's point, switches
each server to a new WAL file so the point is archived now, and records the
point in main (shardgate.restore_points).

Refusals exit 2 when nothing was held (a server not set up, a name in use:
SQLSTATE 55000, 42501, 42710) and 3 when the hold failed and the writes
were released (a proxy that did not acknowledge, transactions that did not
end: 55P03).`,
		Example: `  shardgate backup restore-point nightly-2026-12-02 --topology topology.yaml
  shardgate backup restore-point before-migration --topology topology.yaml --tx-wait 5s --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			topo, err := load()
			if err != nil {
				return err
			}
			o.Author = os.Getenv("USER")
			o.Logf = func(format string, a ...any) { fmt.Fprintf(cmd.ErrOrStderr(), format+"\n", a...) }
			res, err := backup.CreateRestorePoint(cmdContext(cmd), topo, args[0], o)
			if res != nil && res.Points != nil {
				if asJSON {
					if perr := printJSON(cmd, res); perr != nil {
						return perr
					}
				} else {
					printRestorePoint(cmd, res)
				}
			}
			return restorePointExit(err)
		},
	}
	cmd.Flags().DurationVar(&o.AckTimeout, "ack-timeout", time.Second, "every live proxy holds the writes within it, or the point is refused")
	cmd.Flags().DurationVar(&o.TxWait, "tx-wait", 2*time.Second, "open and prepared transactions end within it, or the point is refused")
	cmd.Flags().DurationVar(&o.Hold, "hold", 5*time.Second, "the proxies' hold ends by then at the latest")
	cmd.Flags().BoolVar(&o.KeepWAL, "keep-wal", false, "do not switch WAL files: the point is archived when its file fills")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}

// restorePointExit maps a refusal to its exit code.
func restorePointExit(err error) error {
	if err == nil {
		return nil
	}
	code := 1
	switch {
	case sqlerr.Code(err) == sqlerr.LockNotAvailable:
		code = exitHold
	case sqlerr.Code(err) == sqlerr.ObjectNotInPrerequisiteState, sqlerr.Code(err) == sqlerr.InsufficientPrivilege, sqlerr.Code(err) == "42710":
		code = exitNotReady
	}
	msg := err.Error()
	if e, ok := sqlerr.As(err); ok {
		if e.Detail != "" {
			msg += "\nDETAIL: " + e.Detail
		}
		if e.Hint != "" {
			msg += "\nHINT: " + e.Hint
		}
	}
	return &exitError{code: code, msg: msg}
}

func printRestorePoint(cmd *cobra.Command, r *backup.Result) {
	w := cmd.OutOrStdout()
	var steps []string
	for _, s := range r.Steps {
		steps = append(steps, fmt.Sprintf("%s %.1f ms", s.Name, s.MS))
	}
	fmt.Fprintf(w, "restore point %s at %s\n", r.Name, r.CreatedAt.UTC().Format(time.RFC3339Nano))
	fmt.Fprintf(w, "writes held on %d proxies for %.1f ms (%s)\n", r.Proxies, float64(r.Pause.Microseconds())/1000, strings.Join(steps, ", "))
	for _, p := range r.Points {
		main := ""
		if p.Main {
			main = " (main)"
		}
		fmt.Fprintf(w, "  %s%s: lsn %s, wal file %s, system %s\n", strings.Join(p.Clusters, ", "), main, p.LSN, p.WALFile, p.SystemID)
	}
	if r.InDoubt > 0 {
		fmt.Fprintf(w, "%d two-phase commits prepared at the cut without a decision: a restored fleet rolls them back\n", r.InDoubt)
	}
}

func backupListCmd(load topoLoader) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "list",
		Short:   "List the restore points recorded in main",
		Example: "  shardgate backup list --topology topology.yaml",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			topo, err := load()
			if err != nil {
				return err
			}
			ctx := cmdContext(cmd)
			conn, err := pgx.Connect(ctx, topo.Cluster(topo.Main().Cluster).DSN)
			if err != nil {
				return err
			}
			defer conn.Close(ctx)
			list, err := backup.List(ctx, conn)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd, list)
			}
			for _, r := range list {
				var at []string
				for _, p := range r.Points {
					at = append(at, fmt.Sprintf("%s %s", strings.Join(p.Clusters, "+"), p.LSN))
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s\t%s\tpause %.1f ms\t%s\n", r.Name, r.CreatedAt.UTC().Format(time.RFC3339), r.PauseMS, strings.Join(at, ", "))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the list as JSON")
	return cmd
}
