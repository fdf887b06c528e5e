package main

import (
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"

	"github.com/shardgate/shardgate/routestate"
)

// tenantCmd is `shardgate tenant ...`: the directory of a lookup group.
func tenantCmd() *cobra.Command {
	var topoFile string
	cmd := &cobra.Command{
		Use:   "tenant",
		Short: "Place keys of a lookup group on clusters (its directory)",
		Long: `A group with placement: lookup routes the keys of its directory to the
cluster each entry names, and every other key by its list and function
(docs/topology.md, placement). The directory is routing state in the main
group: "tenant place" and "tenant remove" change an entry through routing
revisions every proxy follows, and return once every live proxy serves the
change. They move no rows: a key with rows on the cluster it would leave
is refused, unless --force (the rows then stay there, unread).`,
		Example: `  shardgate tenant place 42 --group by_tenant --to pg3 --topology topology.yaml
  shardgate tenant remove 42 --group by_tenant --topology topology.yaml`,
	}
	cmd.PersistentFlags().StringVar(&topoFile, "topology", "", "the topology in effect (declares the group; locates main)")
	load := fileLoader(&topoFile)
	cmd.AddCommand(tenantPlaceCmd(load, true), tenantPlaceCmd(load, false))
	return cmd
}

// tenantPlaceCmd is `tenant place` (place) or `tenant remove`.
func tenantPlaceCmd(load topoLoader, place bool) *cobra.Command {
	var p routestate.Placement
	cmd := &cobra.Command{
		Use:   "place KEY",
		Short: "Route a key of a lookup group to a cluster",
		Long: `place sets KEY's directory entry (KEY is the key's value; for an
expression index, the expression's result). First a revision marks the
entry pending: every proxy refuses the key (55P03) once it follows it.
When every live proxy does, and the transactions then writing on the
cluster the key leaves have ended, the member tables there are checked
for rows of the key; then a second revision sets the entry. Run again, it
settles an entry a stopped run left pending.`,
		Example: "  shardgate tenant place 42 --group by_tenant --to pg3 --topology topology.yaml",
		Args:    cobra.ExactArgs(1),
	}
	if !place {
		cmd.Use = "remove KEY"
		cmd.Short = "Remove a key's directory entry: it goes back to its function's shard"
		cmd.Long = `remove deletes KEY's directory entry, the same way place sets one: the key
is refused while the change settles, and refused for good (the entry is
kept) when it has rows on the cluster it leaves, unless --force.`
		cmd.Example = "  shardgate tenant remove 42 --group by_tenant --topology topology.yaml"
	} else {
		cmd.Flags().StringVar(&p.To, "to", "", "the cluster the key goes to")
	}
	cmd.Flags().StringVar(&p.Group, "group", "", "the lookup group")
	cmd.Flags().BoolVar(&p.Force, "force", false, "change the entry even if the key has rows where it leaves: rows not moved")
	cmd.Flags().DurationVar(&p.Timeout, "timeout", 30*time.Second, "how long to wait for the proxies and for transactions in flight")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if p.Group == "" || place && p.To == "" {
			return fmt.Errorf("--group and --to are required")
		}
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
		p.Key = args[0]
		if p.Author == "" {
			p.Author = os.Getenv("USER")
		}
		dsn := func(c string) string { return topo.Cluster(c).DSN }
		done, err := routestate.PlaceKey(ctx, conn, topo, p, dsn)
		if err != nil {
			return err
		}
		out := cmd.OutOrStdout()
		switch {
		case !done.Changed:
			fmt.Fprintf(out, "key %s of group %s already goes to %s\n", done.Key, p.Group, done.To)
		case p.Force && done.From != done.To:
			fmt.Fprintf(out, "key %s of group %s: %s instead of %s (revision %d; rows on %s not moved)\n", done.Key, p.Group, done.To, done.From, done.Rev.Rev, done.From)
		default:
			fmt.Fprintf(out, "key %s of group %s: %s instead of %s (revision %d)\n", done.Key, p.Group, done.To, done.From, done.Rev.Rev)
		}
		return nil
	}
	return cmd
}
