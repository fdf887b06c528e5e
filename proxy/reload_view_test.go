package proxy

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/topology"
)

// A reload that changes what statements see on a cluster holding rows — a
// search_path smuggled in through the DSN's options, another user — is
// refused like a move of the cluster: logged with the cluster and the
// change, the topology in force stays, and the rows are still read.
func TestReloadRefusesDSNThatChangesWhatStatementsSee(t *testing.T) {
	var logs syncBuffer
	p := startProxy(t, shopTopology(""), func(c *Config) { c.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
	c := setupShop(t, p)
	mustExec(t, c, "INSERT INTO customers (id, name) VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd')")
	ctx := context.Background()
	for _, e := range []struct{ name, from, to, want string }{
		{"options", "/shop?sslmode=disable", "/shop?sslmode=disable&options=-csearch_path%3Dshadow", `options \"-csearch_path=shadow\" added`},
		{"user", "postgres://postgres@", "postgres://nobody@", `user \"postgres\" becomes \"nobody\"`},
		{"guc", "/shop?sslmode=disable", "/shop?sslmode=disable&search_path=shadow", `search_path \"shadow\" added`},
	} {
		t.Run(e.name, func(t *testing.T) {
			yaml := shopTopology("")
			pg1 := p.srv.cur.Load().topo.Cluster("pg1").DSN
			edited := strings.Replace(yaml, pg1, strings.Replace(pg1, e.from, e.to, 1), 1)
			if edited == yaml {
				t.Fatalf("edit %q did not apply to %s", e.from, pg1)
			}
			topo, err := parseTopo(edited)
			if err != nil {
				t.Fatal(err)
			}
			err = p.srv.Reload(topo)
			var refused *topology.RefusedError
			if !errors.As(err, &refused) {
				t.Fatalf("Reload = %v, want refused", err)
			}
			if got := p.srv.cur.Load().topo.Cluster("pg1").DSN; got != pg1 {
				t.Fatalf("the refused DSN is in force: %s", got)
			}
			if !strings.Contains(logs.String(), "cluster pg1: dsn changes what statements see") || !strings.Contains(logs.String(), e.want) {
				t.Fatalf("no log line names the cluster and %s:\n%s", e.want, logs.String())
			}
			var n int
			if err := c.QueryRow(ctx, "SELECT count(*) FROM customers").Scan(&n); err != nil || n != 4 {
				t.Fatalf("count(*) after the refused reload = %d, %v; want 4", n, err)
			}
		})
	}
}
