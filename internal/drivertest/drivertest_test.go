package drivertest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/shardgate/shardgate/internal/proxytest"
	"github.com/shardgate/shardgate/internal/testenv"
	"github.com/shardgate/shardgate/proxy"
)

const database = "shop"

func TestMain(m *testing.M) {
	testenv.Run(m, testenv.Options{N: 2, Databases: []string{database}}, nil)
}

// requireEnv=1 turns a missing driver into a failure instead of a skip.
const requireEnv = "SHARDGATE_REQUIRE_DRIVERS"

// stepTimeout bounds one run of a driver's script. The scripts bound each
// read from the proxy themselves (30 s); this is the backstop that keeps a
// hang from holding the whole package until go test's -timeout.
const stepTimeout = 2 * time.Minute

// need skips the test, or fails it when requireEnv=1, unless ok: what is
// missing, and install says how to get it.
func need(t *testing.T, ok bool, what, install string) {
	t.Helper()
	if ok {
		return
	}
	if os.Getenv(requireEnv) == "1" {
		t.Fatalf("%s is missing (%s=1); %s", what, requireEnv, install)
	}
	t.Skipf("%s is missing; %s", what, install)
}

// proxyAddr serves a proxy over the two clusters and returns its address:
// main on pg0, orders in group by_customer, four shards, two on each
// cluster. When the test failed, the clusters' sessions of the test
// database are ended before the proxy is closed, so a session a hung step
// left behind holds no lock the next test's DROP TABLE waits for.
func proxyAddr(t *testing.T) string {
	env := testenv.Shared(t)
	topo := proxytest.Parse(t, proxytest.Topology(database, `groups:
  main:
    unsharded: true
    cluster: pg0
  by_customer:
    index: { name: by_customer, column: customer_id, type: bigint, function: xxhash }
    shards: { "-40": pg0, "40-80": pg1, "80-c0": pg0, "c0-": pg1 }
    tables:
      orders: {}
`, env.Clusters[0], env.Clusters[1]))
	srv, err := proxy.NewServer(proxy.Config{PoolSize: 4, MaxWait: 10 * time.Second, Logger: proxytest.Logger()}, topo)
	if err != nil {
		t.Fatal(err)
	}
	addr := proxytest.Serve(t, srv)
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for _, c := range env.Clusters {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			err := c.Exec(ctx, "postgres", "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1", database)
			cancel()
			if err != nil {
				t.Logf("ending the sessions left on %s: %v", c.Name, err)
			}
		}
	})
	return addr
}

// startProxy serves a proxy (proxyAddr) and returns the DSN of user app.
func startProxy(t *testing.T) string {
	return proxytest.DSN(proxyAddr(t), "app", database)
}

// amount is the amount of order i, as the load writes it.
func amount(i int) string { return fmt.Sprintf("%d.%02d", i%997, i%100) }

// cents is amount(i) in cents.
func cents(i int) int64 { return int64(i%997)*100 + int64(i%100) }

// money prints an amount in cents as numeric(12,2) prints.
func money(c int64) string { return fmt.Sprintf("%d.%02d", c/100, c%100) }

// load (re)creates orders through the proxy and copies ids 1..n into it,
// customer ids 1..50; note and placed are left NULL.
func load(t *testing.T, c *pgx.Conn, n int) {
	ctx := context.Background()
	for _, sql := range []string{
		"DROP TABLE IF EXISTS orders",
		"CREATE TABLE orders (id bigint NOT NULL, customer_id bigint NOT NULL, amount numeric(12,2), note text, placed timestamptz, PRIMARY KEY (customer_id, id))",
	} {
		if _, err := c.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	rows := make([][]any, n)
	for i := range rows {
		id := i + 1
		rows[i] = []any{int64(id), int64(id%50 + 1), amount(id)}
	}
	if _, err := c.CopyFrom(ctx, pgx.Identifier{"orders"}, []string{"id", "customer_id", "amount"}, pgx.CopyFromRows(rows)); err != nil {
		t.Fatal(err)
	}
}

// loaded is what load(n) wrote, as the scripts print it: count, sum of
// ids, min and max amount.
func loaded(n int) string {
	var lo, hi int64 = -1, -1
	for i := 1; i <= n; i++ {
		a := cents(i)
		if lo < 0 || a < lo {
			lo = a
		}
		if a > hi {
			hi = a
		}
	}
	return fmt.Sprintf("count=%d sum=%d min=%s max=%s", n, n*(n+1)/2, money(lo), money(hi))
}

// runScript runs a driver's program (argv) within stepTimeout and returns
// what it printed on stdout, trimmed. A non-zero exit fails the test with
// both outputs; a run past the timeout is killed and fails the test as a
// hang.
func runScript(t *testing.T, argv ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.WaitDelay = 5 * time.Second
	var stderr strings.Builder
	cmd.Stderr = &stderr
	start := time.Now()
	out, err := cmd.Output()
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("%s: no result within %v: a session hangs (killed)\nstdout:\n%s\nstderr:\n%s", strings.Join(argv, " "), stepTimeout, out, clip(stderr.String()))
	}
	if err != nil {
		t.Fatalf("%s: %v after %v\nstdout:\n%s\nstderr:\n%s", strings.Join(argv, " "), err, time.Since(start).Round(time.Millisecond), out, clip(stderr.String()))
	}
	return strings.TrimSpace(string(out))
}

// clip shortens a driver's error output for the test log: pgjdbc quotes
// a whole rewritten batch in its message.
func clip(s string) string {
	const max = 6000
	if len(s) <= max {
		return s
	}
	return s[:max/2] + "\n[... " + fmt.Sprint(len(s)-max) + " bytes ...]\n" + s[len(s)-max/2:]
}

// step is one run of a driver's script: its name (the script's last
// argument, and the subtest's name) and the line it must print.
type step struct{ name, want string }

// runSteps runs each step as a subtest: argv, then the step's name.
func runSteps(t *testing.T, argv []string, steps []step) {
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			got := runScript(t, append(append([]string(nil), argv...), s.name)...)
			if want := s.name + " " + s.want; got != want {
				t.Fatalf("printed:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}
