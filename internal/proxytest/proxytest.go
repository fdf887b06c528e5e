package proxytest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/shardgate/shardgate/internal/testenv"
	"github.com/shardgate/shardgate/topology"
)

// Topology is a topology document over the given test clusters: version 1,
// clusters pg0, pg1, ... in that order with their DSNs for database db,
// then groups (the `groups:` section and anything after it, as YAML).
func Topology(db, groups string, clusters ...*testenv.Cluster) string {
	var b strings.Builder
	b.WriteString("version: 1\nclusters:\n")
	for i, c := range clusters {
		fmt.Fprintf(&b, "  pg%d: { dsn: %q }\n", i, c.DSN(db))
	}
	b.WriteString(groups)
	return b.String()
}

// clusterLine matches a cluster of a topology document written one per
// line, as `  pgN: { dsn: "..." }`.
var clusterLine = regexp.MustCompile(`(?m)^(\s+)pg([0-9]+)(: \{ dsn: )"[^"]*"( \})`)

// Retarget points the clusters pg0, pg1, ... of a topology document
// (written one per line, `pgN: { dsn: "..." }`) at env's clusters, database
// db: an example's topology file run against the test clusters.
func Retarget(yaml string, env *testenv.Env, db string) string {
	return clusterLine.ReplaceAllStringFunc(yaml, func(line string) string {
		m := clusterLine.FindStringSubmatch(line)
		i, _ := strconv.Atoi(m[2])
		if i >= len(env.Clusters) {
			return line
		}
		return m[1] + "pg" + m[2] + m[3] + strconv.Quote(env.Clusters[i].DSN(db)) + m[4]
	})
}

// Parse parses a topology document, failing the test if it is invalid.
func Parse(tb testing.TB, yaml string) *topology.Topology {
	tb.Helper()
	topo, err := topology.Parse("test.yaml", []byte(yaml))
	if err != nil {
		tb.Fatalf("topology: %v", err)
	}
	return topo
}

// Logger is a logger that drops everything, for proxies under test.
func Logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// Server is what Serve runs: a *proxy.Server.
type Server interface {
	Serve(net.Listener) error
	Close()
}

// Serve serves srv on a free loopback port until the test ends and returns
// the address it listens on. When the test ends the server is closed, and
// Serve must then return nil within 10 seconds.
func Serve(tb testing.TB, srv Server) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		srv.Close()
		tb.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	tb.Cleanup(func() {
		srv.Close()
		ln.Close()
		select {
		case err := <-served:
			if err != nil {
				tb.Errorf("proxy: Serve: %v", err)
			}
		case <-time.After(10 * time.Second):
			tb.Errorf("proxy: Serve did not return within 10s of Close")
		}
	})
	return ln.Addr().String()
}

// DSN is the connection string of user to database db through the proxy
// listening on addr (no TLS).
func DSN(addr, user, db string) string {
	return fmt.Sprintf("postgres://%s@%s/%s?sslmode=disable", user, addr, db)
}

// Connect opens a pgx connection, closed when the test ends.
func Connect(tb testing.TB, dsn string) *pgx.Conn {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		tb.Fatalf("connect %s: %v", dsn, err)
	}
	tb.Cleanup(func() { c.Close(context.Background()) })
	return c
}
