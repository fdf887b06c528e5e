package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"

	"github.com/shardgate/shardgate/planner"
	"github.com/shardgate/shardgate/routestate"
	"github.com/shardgate/shardgate/topology"
	"github.com/shardgate/shardgate/vschema"
)

func topologyCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "topology",
		Short: "Validate and show topology files; write one for an existing database",
		Example: `  shardgate topology validate topology.yaml
  shardgate topology show topology.yaml
  shardgate topology init --dsn postgres://postgres@127.0.0.1:5432/shop -o topology.yaml`,
	}
	cmd.AddCommand(topologyInitCmd())
	cmd.AddCommand(&cobra.Command{
		Use:   "validate FILE",
		Short: "Check a topology file; list every problem with its line and column",
		Long: `validate loads a topology file the way serve does and prints every
problem as FILE:LINE:COL: message, warnings included. The exit status is 0
for a valid file and 1 otherwise. No cluster is contacted.`,
		Example: "  shardgate topology validate examples/ecommerce/topology.yaml",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := loadTopology(cmd.ErrOrStderr(), args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: ok: %s\n", args[0], summary(t))
			return nil
		},
	})
	var effective bool
	showCmd := &cobra.Command{
		Use:   "show FILE",
		Short: "Show the groups, shards, clusters and tables of a topology",
		Long: `show validates a topology file and prints its clusters, each group's
sharding index and shards with their clusters, and every table with its
group, kind (member, reference, unsharded, secondary index, sequence) and
key. No cluster is contacted, unless --effective: then the routing in
force is shown — the file overlaid with the latest routing revision in the
main group (what workflows and backfills decided) — followed by where each
part comes from.`,
		Example: `  shardgate topology show examples/ecommerce/topology.yaml
  shardgate topology show --effective topology.yaml`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := loadTopology(cmd.ErrOrStderr(), args[0])
			if err != nil {
				return err
			}
			if !effective {
				show(cmd.OutOrStdout(), t)
				return nil
			}
			e, err := loadEffective(cmd.Context(), t)
			if err != nil {
				return err
			}
			show(cmd.OutOrStdout(), e.Topology)
			fmt.Fprintf(cmd.OutOrStdout(), "\nROUTING FROM\nfile %s, routing revision %d\n", args[0], e.Rev.Rev)
			for _, o := range e.Topology.Overrides {
				fmt.Fprintf(cmd.OutOrStdout(), "%s: %s\n", o.Key, o.Origin)
			}
			return nil
		},
	}
	showCmd.Flags().BoolVar(&effective, "effective", false, "show the routing in force: the file overlaid with main's latest routing revision")
	cmd.AddCommand(showCmd)
	return cmd
}

// loadTopology loads and validates a file, printing warnings and every
// error to w.
func loadTopology(w io.Writer, path string) (*topology.Topology, error) {
	t, err := topology.Load(path)
	if err != nil {
		var ve *topology.ValidationError
		if errors.As(err, &ve) {
			for _, d := range ve.Diagnostics {
				fmt.Fprintln(w, d.String())
			}
			return nil, &exitError{code: 1, msg: fmt.Sprintf("%s: %d problem(s)", path, countErrors(ve))}
		}
		return nil, err
	}
	for _, d := range t.Warnings {
		fmt.Fprintln(w, d.String())
	}
	if _, err := vschema.Build(t); err != nil {
		return nil, err
	}
	return t, nil
}

func countErrors(ve *topology.ValidationError) int {
	n := 0
	for _, d := range ve.Diagnostics {
		if !d.Warning {
			n++
		}
	}
	return n
}

func summary(t *topology.Topology) string {
	shards, tables := 0, 0
	for _, g := range t.Groups {
		shards += len(g.Shards)
		tables += len(g.Tables) + len(g.Reference)
	}
	return fmt.Sprintf("%d clusters, %d groups, %d shards, %d tables", len(t.Clusters), len(t.Groups), shards, tables)
}

func show(out io.Writer, t *topology.Topology) {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "CLUSTER\tDSN")
	for _, c := range t.Clusters {
		fmt.Fprintf(w, "%s\t%s\n", c.Name, topology.RedactDSN(c.DSN))
		for _, r := range c.Replicas {
			fmt.Fprintf(w, "  replica%s\t%s\n", replicaNote(r, c.MaxLag), topology.RedactDSN(r.DSN))
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "GROUP\tINDEX\tSHARD\tCLUSTER")
	for _, g := range t.Groups {
		if g.Unsharded {
			fmt.Fprintf(w, "%s\t(unsharded)\t-\t%s\n", g.Name, g.Cluster)
			continue
		}
		ix := g.Index
		on := ix.Column
		if ix.Expression != nil {
			on = ix.Expression.String()
		}
		desc := fmt.Sprintf("%s: %s(%s) %s", ix.Name, ix.Function, on, ix.Type)
		if g.Lookup() {
			desc += ", placement lookup"
		}
		for i, s := range g.Shards {
			if i > 0 {
				desc = ""
			}
			name := g.Name
			if i > 0 {
				name = ""
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", name, desc, s.Name, s.Cluster)
		}
		showPlacements(w, g)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "TABLE\tGROUP\tKIND\tKEY")
	for _, g := range t.Groups {
		for _, tb := range g.Tables {
			key := "-"
			kind := "member"
			if g.Unsharded {
				kind = "unsharded"
			} else {
				key = tb.Column
				if key == "" {
					key = g.Index.Column
				}
				if key == "" && g.Index.Expression != nil {
					key = g.Index.Expression.String()
				}
			}
			if tb.Sequence != nil {
				key += fmt.Sprintf(" (%s from %s)", tb.Sequence.Column, tb.Sequence.Name.Name)
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", tb.Name, g.Name, kind, key)
		}
		for _, r := range g.Reference {
			fmt.Fprintf(w, "%s\t%s\treference\t-\n", r.Name, g.Name)
		}
		for _, si := range g.SecondaryIndexes {
			fmt.Fprintf(w, "%s\t%s\tsecondary index (%s)\t%s.%s\n", si.Name, g.Name, si.State, si.Table, si.Indexed())
		}
		for _, sq := range g.Sequences {
			fmt.Fprintf(w, "%s\t%s\tsequence\t-\n", sq.Name, g.Name)
		}
	}
	w.Flush()
}

func explainCmd() *cobra.Command {
	var topoFile string
	var effective bool
	cmd := &cobra.Command{
		Use:   "explain --topology FILE 'SQL'",
		Short: "Print the route shardgate takes for a statement, without any backend",
		Long: `explain plans one SQL statement (or several, separated by semicolons)
over a topology and prints the plan: the route kind, the group, the key,
the shards and clusters, and the SQL each cluster would run. It is the
text EXPLAIN (ROUTE) returns through the proxy. A statement the proxy
would refuse is reported with its SQLSTATE, and the exit status is 1.
No cluster is contacted, unless --effective: then main's latest routing
revision is read and the statement planned with the routing in force.`,
		Example: `  shardgate explain --topology examples/ecommerce/topology.yaml 'SELECT * FROM orders WHERE customer_id = 42'
  shardgate explain --topology examples/ecommerce/topology.yaml 'SELECT status, count(*) FROM orders GROUP BY status'`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := loadTopology(cmd.ErrOrStderr(), topoFile)
			if err != nil {
				return err
			}
			vs, err := vschema.Build(t)
			if err != nil {
				return err
			}
			if effective {
				e, err := loadEffective(cmdContext(cmd), t)
				if err != nil {
					return err
				}
				vs = e.VSchema
			}
			p := planner.New(vs)
			bounds, err := p.PlanSimple(args[0])
			if err != nil {
				return err
			}
			for _, b := range bounds {
				for _, l := range b.Explain() {
					fmt.Fprintln(cmd.OutOrStdout(), l)
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&topoFile, "topology", "", "topology YAML file")
	cmd.Flags().BoolVar(&effective, "effective", false, "plan with the routing in force: the file overlaid with main's latest routing revision (a lookup group's directory, say)")
	_ = cmd.MarkFlagRequired("topology")
	return cmd
}

// replicaNote is what topology show says of a standby besides its DSN.
func replicaNote(r topology.Replica, lag topology.MaxLag) string {
	var parts []string
	if r.Zone != "" {
		parts = append(parts, "zone "+r.Zone)
	}
	if r.Priority != 0 {
		parts = append(parts, fmt.Sprintf("priority %d", r.Priority))
	}
	if s := lag.String(); s != "" {
		parts = append(parts, "max_lag "+s)
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// showPlacements prints the keys a group places by value: its list, its
// lookup clusters and (with --effective) its directory.
func showPlacements(w io.Writer, g *topology.Group) {
	for _, e := range g.List {
		fmt.Fprintf(w, "\t\tlist %s\t%s\n", e.Value, e.Cluster)
	}
	for _, c := range g.LookupClusters {
		fmt.Fprintf(w, "\t\tlookup cluster\t%s\n", c)
	}
	for _, e := range g.Directory {
		switch {
		case e.Pending && e.Cluster == "":
			fmt.Fprintf(w, "\t\tdirectory %s (pending removal)\t-\n", e.Key)
		case e.Pending:
			fmt.Fprintf(w, "\t\tdirectory %s (pending)\t%s\n", e.Key, e.Cluster)
		default:
			fmt.Fprintf(w, "\t\tdirectory %s\t%s\n", e.Key, e.Cluster)
		}
	}
}

// loadEffective reads main's latest routing revision and overlays it on
// the file's topology: the routing the proxies serve.
func loadEffective(ctx context.Context, t *topology.Topology) (*routestate.Effective, error) {
	conn, err := pgx.Connect(ctx, t.Cluster(t.Main().Cluster).DSN)
	if err != nil {
		return nil, fmt.Errorf("connect to main: %w", err)
	}
	defer conn.Close(ctx)
	rev, err := routestate.Load(ctx, conn)
	if err != nil {
		return nil, err
	}
	return routestate.Apply(t, rev)
}
