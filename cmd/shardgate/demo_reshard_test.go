package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/shardgate/shardgate/internal/testenv"
	"github.com/shardgate/shardgate/topology"
)

// TestDemoTourReshardsTo4Shards runs the README's tour "Reshard the demo
// from 2 to 4 shards" on a real `shardgate demo` (scaled down: 100
// customers, free ports, a one-minute pgbench): pgbench writes orders
// through the proxy with examples/ecommerce/load.sql while `demo
// add-shards` creates the new databases, `workflow create reshard --to`
// the demo's topology-4.yaml runs in the demo's background, `workflow
// status` shows the copy done and streaming, `workflow vdiff` is clean
// under the writes, `workflow switch` reports its pause, EXPLAIN (ROUTE)
// shows the four shards and `workflow complete` writes them into the
// demo's topology file. pgbench ends with 0 failed transactions, every
// order it inserted is there (on the new shards only), the other tables
// have the rows they had, and no replication slot is left. orders_by_id,
// back-filled first as in the README, is still active and read after.
func TestDemoTourReshardsTo4Shards(t *testing.T) {
	pgbench := testenv.Pgbench(t)
	dir := demoDir(t)
	topoFile, fourFile := filepath.Join(dir, "topology.yaml"), filepath.Join(dir, "topology-4.yaml")
	d := startDemo(t, dir, "100")
	c := demoClient(t, d)
	ctx := context.Background()
	tables := []string{"orders", "customers", "addresses", "items", "countries", "currencies"}
	counts := func() map[string]int64 {
		t.Helper()
		out := map[string]int64{}
		for _, tab := range tables {
			var n int64
			if err := c.QueryRow(ctx, "SELECT count(*) FROM "+tab).Scan(&n); err != nil {
				t.Fatal(err)
			}
			out[tab] = n
		}
		return out
	}
	// The README's tour back-fills orders_by_id before: the reshard moves
	// an active index's lookup table, and the index stays active.
	if out, errOut, err := run("gsi", "backfill", "orders_by_id", "--topology", topoFile); err != nil {
		t.Fatalf("gsi backfill: %v\n%s\n%s", err, out, errOut)
	}
	before := counts()

	addr := regexp.MustCompile(`serving the example on (\S+)`).FindStringSubmatch(d.out.String())[1]
	bench := exec.Command(pgbench, "-n", "-c", "2", "-T", "60", "-P", "5", "--max-tries", "3", "-f", "../../examples/ecommerce/load.sql",
		"postgres://postgres@"+addr+"/shop?sslmode=disable")
	benchOut := &logBuffer{}
	bench.Stdout, bench.Stderr = benchOut, benchOut
	if err := bench.Start(); err != nil {
		t.Fatal(err)
	}
	benchDone := make(chan error, 1)
	go func() { benchDone <- bench.Wait() }()
	t.Cleanup(func() { _ = bench.Process.Kill() })
	step := func(args ...string) string {
		t.Helper()
		out, errOut, err := run(args...)
		if err != nil {
			t.Fatalf("shardgate %s: %v\n%s\n%s\ndemo log:\n%s", strings.Join(args, " "), err, out, errOut, d.logs)
		}
		t.Logf("shardgate %s:\n%s", strings.Join(args, " "), out)
		return out
	}

	if out := step("demo", "add-shards", "--dir", dir); !strings.Contains(out, "created database shop_5") {
		t.Fatalf("add-shards:\n%s", out)
	}
	step("workflow", "create", "reshard", "--topology", topoFile, "--to", fourFile, "--group", "by_customer")
	waitStreaming(t, topoFile, d.logs)
	if out := step("workflow", "status", "1", "--topology", topoFile); strings.Count(out, "100.0%") != 14 || !strings.Contains(out, "stream from pg1") {
		t.Fatalf("status: not every table copied, or no stream:\n%s", out)
	}
	time.Sleep(time.Second)
	n0 := before["orders"]
	if err := c.QueryRow(ctx, "SELECT count(*) FROM orders").Scan(&n0); err != nil {
		t.Fatal(err)
	}
	out := step("workflow", "vdiff", "1", "--topology", topoFile)
	if strings.Count(out, " 0 missing, 0 extra, 0 mismatched") != 32 {
		t.Fatalf("vdiff: not 8 tables x 4 targets clean:\n%s", out)
	}
	var n1 int64
	if err := c.QueryRow(ctx, "SELECT count(*) FROM orders").Scan(&n1); err != nil || n1 <= n0 {
		t.Fatalf("pgbench inserted no order during the vdiff (%d, then %d): %v\n%s", n0, n1, err, benchOut)
	}
	if out := step("workflow", "switch", "1", "--topology", topoFile); !regexp.MustCompile(`switch #1 done at .*: client pause [0-9.]+ ms`).MatchString(out) {
		t.Fatalf("switch:\n%s", out)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		plan := explainSQL(t, c, "EXPLAIN (ROUTE) SELECT * FROM orders WHERE id = 1")
		if strings.Contains(plan, "shards: -40 (pg2), 40-80 (pg3), 80-c0 (pg4), c0- (pg5)") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("EXPLAIN after the switch:\n%s", plan)
		}
	}
	if plan := explainSQL(t, c, "EXPLAIN (ROUTE) SELECT id, status, total FROM orders WHERE customer_id = 42"); !strings.Contains(plan, "shards: 80-c0 (pg4)") {
		t.Fatalf("the README's EXPLAIN after the switch:\n%s", plan)
	}
	if out := step("workflow", "complete", "1", "--topology", topoFile); !strings.Contains(out, "workflow 1 completed") {
		t.Fatalf("complete:\n%s", out)
	}
	written, err := topology.Load(topoFile)
	if err != nil {
		t.Fatal(err)
	}
	var shards []string
	for _, s := range written.Group("by_customer").Shards {
		shards = append(shards, s.Name+":"+s.Cluster)
	}
	if strings.Join(shards, " ") != "-40:pg2 40-80:pg3 80-c0:pg4 c0-:pg5" {
		t.Fatalf("by_customer's shards in the demo's topology file after complete: %v", shards)
	}
	if n := len(written.Group("by_customer").SecondaryIndexes); n != 2 {
		t.Errorf("%d secondary indexes in the file written back, want 2", n)
	}
	for _, si := range written.Group("by_customer").SecondaryIndexes {
		if want := map[string]string{"orders_by_id": "active", "customers_by_email": "backfilling"}[si.Name]; si.State != want {
			t.Errorf("index %s is %s in the file written back, want %s", si.Name, si.State, want)
		}
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		plan := explainSQL(t, c, "EXPLAIN (ROUTE) SELECT * FROM orders WHERE id = 1")
		if strings.HasPrefix(plan, "Lookup orders_by_id(id)") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("orders_by_id is not read after the reshard:\n%s", plan)
		}
	}
	select {
	case <-benchDone:
		t.Fatalf("pgbench ended before complete: the load did not cover the tour\n%s", benchOut)
	default:
	}
	if err := <-benchDone; err != nil {
		t.Fatalf("pgbench: %v\n%s", err, benchOut)
	}
	m := regexp.MustCompile(`number of transactions actually processed: (\d+)`).FindStringSubmatch(benchOut.String())
	if m == nil || !strings.Contains(benchOut.String(), "number of failed transactions: 0 (0.000%)") {
		t.Fatalf("pgbench:\n%s", benchOut)
	}
	inserted, _ := strconv.ParseInt(m[1], 10, 64)
	t.Logf("pgbench: %d transactions, 0 failed", inserted)

	// Every order pgbench inserted (one per transaction) is there, the
	// other tables as they were.
	after := counts()
	for _, tab := range tables {
		want := before[tab]
		if tab == "orders" {
			want += inserted
		}
		if after[tab] != want {
			t.Errorf("%s: %d rows through the proxy after the tour, want %d", tab, after[tab], want)
		}
	}
	// On the new shards only; no slot left on either server.
	four, err := topology.Load(fourFile)
	if err != nil {
		t.Fatal(err)
	}
	var onNew int64
	for _, cl := range four.Clusters {
		conn, err := pgx.Connect(ctx, cl.DSN)
		if err != nil {
			t.Fatal(err)
		}
		var n, slots int64
		var orders *string
		err = conn.QueryRow(ctx, "SELECT to_regclass('public.orders')::text, (SELECT count(*) FROM pg_replication_slots)").Scan(&orders, &slots)
		if err == nil && orders != nil {
			err = conn.QueryRow(ctx, "SELECT count(*) FROM orders").Scan(&n)
		}
		conn.Close(ctx)
		if err != nil {
			t.Fatal(err)
		}
		switch cl.Name {
		case "pg0", "pg1":
			if orders != nil {
				t.Errorf("%s still has its copy of orders after complete", cl.Name)
			}
		default:
			onNew += n
		}
		if slots != 0 {
			t.Errorf("%d replication slots left on the server of %s", slots, cl.Name)
		}
	}
	if onNew != after["orders"] {
		t.Errorf("%d orders on pg2..pg5, %d through the proxy", onNew, after["orders"])
	}
}

// TestDemoRestartDropsWorkflowSlots: a tour left half-way (a workflow's
// slot and publication on pg0) is undone by the demo's next start, which
// drops the workflow records: the slot would hold WAL for ever and the
// next workflow 1 would find its names taken. add-shards runs again on the
// restarted demo.
func TestDemoRestartDropsWorkflowSlots(t *testing.T) {
	dir := demoDir(t)
	d := startDemo(t, dir, "20")
	if _, _, err := run("demo", "add-shards", "--dir", dir); err != nil {
		t.Fatal(err)
	}
	pg0 := readDemoDSN(t, dir, "pg0")
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pg0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `SELECT pg_create_logical_replication_slot('shardgate_wf1_pg0', 'pgoutput'); CREATE PUBLICATION shardgate_wf1 FOR TABLE orders`); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	if err := d.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	<-d.exited
	startDemo(t, dir, "20")
	conn, err = pgx.Connect(ctx, readDemoDSN(t, dir, "pg0")) // free ports: others than before
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var slots, pubs int64
	if err := conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM pg_replication_slots), (SELECT count(*) FROM pg_publication)`).Scan(&slots, &pubs); err != nil {
		t.Fatal(err)
	}
	if slots != 0 || pubs != 0 {
		t.Fatalf("after the demo's restart: %d replication slots, %d publications", slots, pubs)
	}
	if out, errOut, err := run("demo", "add-shards", "--dir", dir); err != nil {
		t.Fatalf("add-shards again: %v\n%s\n%s", err, out, errOut)
	}
}

// readDemoDSN is the DSN of a cluster of the demo's topology file.
func readDemoDSN(t *testing.T, dir, cluster string) string {
	t.Helper()
	topo, err := topology.Load(filepath.Join(dir, "topology.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return topo.Cluster(cluster).DSN
}
