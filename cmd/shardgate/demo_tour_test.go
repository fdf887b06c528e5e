package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/shardgate/shardgate/topology"
)

// TestDemoTourBackfillsOrdersByID follows the README tour of orders_by_id
// (and customers_by_email, unique on lower(email)) on a real `shardgate demo`: the example loads orders without their
// entries, so the index is backfilling and "WHERE id = N" scatters;
// `shardgate gsi backfill orders_by_id --topology <the demo's file>` makes
// it active, the demo's proxy follows within seconds and answers the
// same query through a Lookup. A second start of the demo resets the
// data, its routing revision included: the index is backfilling again.
func TestDemoTourBackfillsOrdersByID(t *testing.T) {
	dir := demoDir(t)
	topoFile := filepath.Join(dir, "topology.yaml")
	d := startDemo(t, dir, "40")
	if !strings.Contains(d.out.String(), "index orders_by_id is backfilling") {
		t.Errorf("the demo's load does not say orders_by_id is backfilling:\n%s", d.out)
	}
	c := demoClient(t, d)
	ctx := context.Background()
	var id, customer int64
	if err := c.QueryRow(ctx, "SELECT id, customer_id FROM orders WHERE customer_id = 17 ORDER BY id LIMIT 1").Scan(&id, &customer); err != nil {
		t.Fatal(err)
	}
	if plan := explain(t, c, id); !strings.HasPrefix(plan, "Route Scatter") || strings.Contains(plan, "Lookup") {
		t.Fatalf("before the backfill:\n%s", plan)
	}
	out, stderr, err := run("gsi", "backfill", "orders_by_id", "--topology", topoFile)
	if err != nil || !strings.HasPrefix(out, "orders_by_id: active\n") {
		t.Fatalf("gsi backfill: %v\n%s\n%s", err, out, stderr)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		plan := explain(t, c, id)
		if strings.HasPrefix(plan, "Lookup orders_by_id(id)") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the demo's proxy does not read through orders_by_id:\n%s\nlog:\n%s", plan, d.logs)
		}
	}
	var got int64
	if err := c.QueryRow(ctx, "SELECT customer_id FROM orders WHERE id = $1", id).Scan(&got); err != nil || got != customer {
		t.Fatalf("order %d: customer %d, %v; want %d", id, got, err, customer)
	}
	if !strings.Contains(readFile(t, topoFile), "state: active") {
		t.Errorf("the demo's topology file was not written back:\n%s", readFile(t, topoFile))
	}

	// The unique index on lower(email), back-filled the same way.
	if out, stderr, err := run("gsi", "backfill", "customers_by_email", "--topology", topoFile); err != nil || !strings.HasPrefix(out, "customers_by_email: active\n") {
		t.Fatalf("gsi backfill customers_by_email: %v\n%s\n%s", err, out, stderr)
	}
	var email string
	if err := c.QueryRow(ctx, "SELECT email FROM customers WHERE id = 17").Scan(&email); err != nil {
		t.Fatal(err)
	}
	_, err = c.Exec(ctx, "INSERT INTO customers (name, email, country) VALUES ('Twin', $1, 'FR')", strings.ToUpper(email))
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "23505" || pe.ConstraintName != "customers_by_email" || pe.Detail != "Key (lower(email))=("+strings.ToLower(email)+") already exists." {
		t.Fatalf("a second customer with %s: %v", strings.ToUpper(email), err)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		plan := explainSQL(t, c, fmt.Sprintf("EXPLAIN (ROUTE) SELECT id FROM customers WHERE lower(email) = '%s'", strings.ToLower(email)))
		if strings.HasPrefix(plan, "Lookup customers_by_email(lower(email))") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the demo's proxy does not read through customers_by_email:\n%s", plan)
		}
	}
	var cid int64
	if err := c.QueryRow(ctx, "SELECT id FROM customers WHERE lower(email) = $1", strings.ToLower(email)).Scan(&cid); err != nil || cid != 17 {
		t.Fatalf("customer by lower(email): %d %v", cid, err)
	}
	c.Close(ctx)

	if err := d.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	<-d.exited
	d = startDemo(t, dir, "40")
	c = demoClient(t, d)
	if plan := explain(t, c, id); !strings.HasPrefix(plan, "Route Scatter") {
		t.Fatalf("after the demo's reset, orders_by_id is still read:\n%s", plan)
	}
}

// demoClient connects to the demo's proxy as the tour does.
func demoClient(t *testing.T, d *demoRun) *pgx.Conn {
	m := regexp.MustCompile(`serving the example on (\S+)`).FindStringSubmatch(d.out.String())
	if m == nil {
		t.Fatalf("no proxy address in the demo's output:\n%s", d.out)
	}
	c, err := pgx.Connect(context.Background(), "postgres://postgres@"+m[1]+"/shop?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// explain is the EXPLAIN (ROUTE) of the tour's query by order id.
func explain(t *testing.T, c *pgx.Conn, id int64) string {
	t.Helper()
	return explainSQL(t, c, fmt.Sprintf("EXPLAIN (ROUTE) SELECT * FROM orders WHERE id = %d", id))
}

// explainSQL runs an EXPLAIN (ROUTE) and returns its lines.
func explainSQL(t *testing.T, c *pgx.Conn, sql string) string {
	t.Helper()
	rows, err := c.Query(context.Background(), sql, pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

// The README's tour of reads on standbys, run on `shardgate demo
// --standbys` (what `make demo STANDBYS=1` runs).
var standbyTour = struct {
	makeDemo, read, setTarget, showClusters string
}{
	makeDemo:     "make demo STANDBYS=1",
	read:         "SELECT inet_server_port() FROM customers WHERE id = 42;",
	setTarget:    "SET shardgate.target = replica;",
	showClusters: `psql "postgres://admin@127.0.0.1:6432/shardgate?sslmode=disable" -c 'SHOW CLUSTERS'`,
}

// TestDemoStandbysTour runs `shardgate demo --standbys`: its topology
// lists one standby per cluster under replicas; the README's tour reads
// customer 42 on its cluster's primary, then, after SET shardgate.target =
// replica, on that cluster's standby; SHOW CLUSTERS lists each standby
// with role standby. Every command of the tour is in the README.
func TestDemoStandbysTour(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{standbyTour.makeDemo, standbyTour.read, standbyTour.setTarget, standbyTour.showClusters} {
		if !strings.Contains(string(readme), cmd) {
			t.Errorf("the README's standby tour lacks %q", cmd)
		}
	}
	dir := demoDir(t)
	d := startDemo(t, dir, "60", "--standbys")
	topo, err := topology.Load(filepath.Join(dir, "topology.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// port of each host, and the cluster of each standby port
	primaryPort, standbyOf := map[string]int{}, map[int]string{}
	for _, cl := range topo.Clusters {
		primaryPort[cl.Name] = dsnPort(t, cl.DSN)
		if len(cl.Replicas) != 1 {
			t.Fatalf("cluster %s has replicas %+v, want one standby", cl.Name, cl.Replicas)
		}
		standbyOf[dsnPort(t, cl.Replicas[0].DSN)] = cl.Name
	}
	if !strings.Contains(d.out.String(), "its standby (127.0.0.1:") {
		t.Errorf("the demo's output does not list the standbys:\n%s", d.out)
	}
	c := demoClient(t, d)
	ctx := context.Background()
	port := func() int {
		t.Helper()
		var p int
		if err := c.QueryRow(ctx, strings.TrimSuffix(standbyTour.read, ";"), pgx.QueryExecModeSimpleProtocol).Scan(&p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	onPrimary := port()
	var cluster string
	for name, p := range primaryPort {
		if p == onPrimary {
			cluster = name
		}
	}
	if cluster != "pg1" {
		t.Fatalf("customer 42 was read on port %d, not pg1's primary as the README says (%v)", onPrimary, primaryPort)
	}
	if _, err := c.Exec(ctx, strings.TrimSuffix(standbyTour.setTarget, ";")); err != nil {
		t.Fatal(err)
	}
	if got := port(); standbyOf[got] != cluster {
		t.Fatalf("under replica customer 42 was read on port %d, not %s's standby (%v)", got, cluster, standbyOf)
	}
	t.Logf("customer 42: primary of %s on %d, then its standby", cluster, onPrimary)

	admin, err := pgx.Connect(ctx, demoAdminDSN(t, d))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	rows, err := admin.Query(ctx, "SHOW CLUSTERS", pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	standbys := 0
	for rows.Next() {
		var vals []string
		for _, v := range rows.RawValues() {
			vals = append(vals, string(v))
		}
		lines = append(lines, strings.Join(vals, " | "))
		if vals[6] == "standby" {
			standbys++
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	t.Logf("SHOW CLUSTERS:\n%s", strings.Join(lines, "\n"))
	if standbys != len(topo.Clusters) {
		t.Fatalf("SHOW CLUSTERS lists %d standbys, want %d:\n%s", standbys, len(topo.Clusters), strings.Join(lines, "\n"))
	}
	// Ctrl-C stops the standbys too: their ports stop answering.
	if err := d.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	<-d.exited
	if d.waitErr != nil || !strings.Contains(d.out.String(), "stopped") {
		t.Fatalf("demo with standbys after SIGINT: %v\n%s", d.waitErr, d.out)
	}
	for p := range standbyOf {
		if conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", p), time.Second); err == nil {
			conn.Close()
			t.Errorf("standby port %d still answers after the demo stopped", p)
		}
	}
}

// demoAdminDSN is the admin console's DSN of the tour, on the demo's
// address.
func demoAdminDSN(t *testing.T, d *demoRun) string {
	m := regexp.MustCompile(`serving the example on (\S+)`).FindStringSubmatch(d.out.String())
	if m == nil {
		t.Fatalf("no proxy address in the demo's output:\n%s", d.out)
	}
	return fmt.Sprintf("postgres://admin@%s/shardgate?sslmode=disable", m[1])
}

// dsnPort is the port of a URL DSN.
func dsnPort(t *testing.T, dsn string) int {
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	var p int
	if _, err := fmt.Sscan(u.Port(), &p); err != nil {
		t.Fatalf("%s: %v", dsn, err)
	}
	return p
}
