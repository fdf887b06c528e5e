// Command shardgate is the sharding proxy's command line: serve, validate
// and show topologies, explain routes, run the demo. It only wires packages
// together; the logic lives in them.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/shardgate/shardgate/admin"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "shardgate",
		Short: "A Postgres-wire-compatible sharding proxy",
		Long: `shardgate serves the Postgres protocol over several Postgres clusters:
clients connect to it as to one database, and each statement runs on the
shards that hold its rows. The topology file says which tables are
sharded, on which key, and where each shard lives (docs/topology.md).`,
		Example: `  shardgate demo
  shardgate topology validate examples/ecommerce/topology.yaml
  shardgate serve --topology topology.yaml --metrics 127.0.0.1:9187`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(versionCmd(), topologyCmd(), explainCmd(), serveCmd(), demoCmd(), statusCmd(), workflowCmd(), gsiCmd(), verifyCmd(), tenantCmd(), backupCmd())
	return root
}

func main() {
	admin.Version = version
	if err := newRoot().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "shardgate:", err)
		os.Exit(exitCode(err))
	}
}

// exitError carries a process exit code through cobra.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

func exitCode(err error) int {
	if e, ok := err.(*exitError); ok {
		return e.code
	}
	return 1
}

func versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print the version",
		Example: "  shardgate version",
		Args:    cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintf(cmd.OutOrStdout(), "shardgate %s\n", version)
		},
	}
}
