package drivertest

import (
	"context"
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

// startProxy serves a proxy over the two clusters: main on pg0, orders in
// group by_customer, four shards, two on each cluster.
func startProxy(t *testing.T) string {
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
	return proxytest.DSN(proxytest.Serve(t, srv), "app", database)
}

// python returns a python3 that imports psycopg2: the one on PATH, or
// Debian's /usr/bin/python3 (where python3-psycopg2 installs it).
func python(t *testing.T) string {
	for _, p := range []string{"python3", "/usr/bin/python3"} {
		if path, err := exec.LookPath(p); err == nil && exec.Command(path, "-c", "import psycopg2").Run() == nil {
			return path
		}
	}
	if os.Getenv(requireEnv) == "1" {
		t.Fatalf("no python3 with psycopg2 (%s=1); Debian: apt-get install python3-psycopg2", requireEnv)
	}
	t.Skip("no python3 with psycopg2 (Debian: apt-get install python3-psycopg2)")
	return ""
}

// amount is the amount of order i, as the load writes it.
func amount(i int) string { return fmt.Sprintf("%d.%02d", i%997, i%100) }

// load creates orders through the proxy and copies ids 1..n into it,
// customer ids 1..50.
func load(t *testing.T, c *pgx.Conn, n int) {
	ctx := context.Background()
	if _, err := c.Exec(ctx, "CREATE TABLE orders (id bigint NOT NULL, customer_id bigint NOT NULL, amount numeric(12,2), PRIMARY KEY (customer_id, id))"); err != nil {
		t.Fatal(err)
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

// TestPsycopg2 runs psycopg2's named cursors, ordinary cursor, executemany
// and copy_expert through the proxy (testdata/psycopg2_check.py).
func TestPsycopg2(t *testing.T) {
	py := python(t)
	dsn := startProxy(t)
	c := proxytest.Connect(t, dsn)
	const n = 20000
	load(t, c, n)

	desc, lo, hi := 0, "", ""
	for i := 1; i <= n; i++ {
		a := amount(i)
		if i%997 >= 50 {
			desc++
		}
		if lo == "" || less(a, lo) {
			lo = a
		}
		if hi == "" || less(hi, a) {
			hi = a
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, "testdata/psycopg2_check.py", dsn, fmt.Sprint(n))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("psycopg2_check.py: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr.String())
	}
	want := []string{
		fmt.Sprintf("named rows=%d", n),
		fmt.Sprintf("named_desc rows=%d", desc),
		"withhold rows=1000",
		"scroll first=1,10 after_back=6 absolute=1",
		fmt.Sprintf("plain count=%d sum=%d min=%s max=%s point=1", n, n*(n+1)/2, lo, hi),
		"executemany count=100 sum=5075.00",
		"copy rows=300",
	}
	got := strings.Split(strings.TrimSpace(string(out)), "\n")
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("psycopg2_check.py printed:\n%s\nwant:\n%s", out, strings.Join(want, "\n"))
	}
	var count int
	if err := c.QueryRow(context.Background(), "SELECT count(*) FROM orders").Scan(&count); err != nil || count != n+300 {
		t.Fatalf("orders after the script: %d rows, %v; want %d", count, err, n+300)
	}
}

// less compares two amounts "units.cents" as numbers.
func less(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}
