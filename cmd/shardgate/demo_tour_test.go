package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
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
