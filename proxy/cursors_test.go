package proxy

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// customerOn returns a customer id whose shard is on cluster name.
func customerOn(t *testing.T, p *testProxy, name string) int {
	t.Helper()
	g := p.vs.Group("by_customer")
	for id := 1; id < 1000; id++ {
		key, err := g.Index.KeyFromText(fmt.Sprint(id))
		if err != nil {
			t.Fatal(err)
		}
		if sh, err := g.ShardFor(key); err == nil && sh.Cluster == name {
			return id
		}
	}
	t.Fatalf("no customer on %s", name)
	return 0
}

// simpleRows runs sql with the simple protocol and returns the first
// column of every row of its last result.
func simpleRows(t *testing.T, c *pgx.Conn, sql string) ([]string, error) {
	t.Helper()
	res, err := c.PgConn().Exec(context.Background(), sql).ReadAll()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, row := range res[len(res)-1].Rows {
		out = append(out, string(row[0]))
	}
	return out, nil
}

// Cursors run where they were declared (customer 42's shard is not main's
// cluster), in both protocols; CLOSE forgets them, an unknown one is 34000.
func TestCursorFollowsDeclare(t *testing.T) {
	p := startProxy(t, shopTopology(""), func(c *Config) { c.PoolSize = 1 })
	c := setupShop(t, p)
	ctx := context.Background()
	id := customerOn(t, p, env.Clusters[1].Name)
	for i := 1; i <= 5; i++ {
		mustExec(t, c, "INSERT INTO orders (id, customer_id, total) VALUES ($1, $2, 1)", i, id)
	}
	mustExec(t, c, "BEGIN")
	mustExec(t, c, fmt.Sprintf("DECLARE cur CURSOR FOR SELECT id FROM orders WHERE customer_id = %d ORDER BY id", id))
	got, err := simpleRows(t, c, "FETCH 2 FROM cur")
	if err != nil || fmt.Sprint(got) != "[1 2]" {
		t.Fatalf("simple FETCH: %v %v", got, err)
	}
	mustExec(t, c, "MOVE 1 IN cur")
	// The extended protocol: Parse/Describe go where the cursor is.
	var n int
	if err := c.QueryRow(ctx, "FETCH NEXT FROM cur").Scan(&n); err != nil || n != 4 {
		t.Fatalf("extended FETCH: %d %v", n, err)
	}
	mustExec(t, c, "CLOSE cur")
	if _, err := simpleRows(t, c, "FETCH 1 FROM cur"); sqlstate(err) != "34000" {
		t.Fatalf("FETCH after CLOSE: want 34000, got %v", err)
	}
	mustExec(t, c, "ROLLBACK")
	// One Query: the cursor lives in the implicit transaction.
	got, err = simpleRows(t, c, fmt.Sprintf("DECLARE c2 CURSOR FOR SELECT id FROM orders WHERE customer_id = %d ORDER BY id; FETCH 3 FROM c2", id))
	if err != nil || fmt.Sprint(got) != "[1 2 3]" {
		t.Fatalf("implicit transaction FETCH: %v %v", got, err)
	}
	// Cursors without hold end with their transaction.
	mustExec(t, c, "BEGIN")
	mustExec(t, c, fmt.Sprintf("DECLARE c3 CURSOR FOR SELECT id FROM orders WHERE customer_id = %d", id))
	mustExec(t, c, "COMMIT")
	if _, err := simpleRows(t, c, "FETCH 1 FROM c3"); sqlstate(err) != "34000" {
		t.Fatalf("FETCH after COMMIT: want 34000, got %v", err)
	}
	if _, err := simpleRows(t, c, "CLOSE nosuch"); sqlstate(err) != "34000" {
		t.Fatalf("CLOSE unknown: want 34000, got %v", err)
	}
	// CLOSE ALL with and without cursors.
	mustExec(t, c, "BEGIN")
	mustExec(t, c, fmt.Sprintf("DECLARE c4 CURSOR FOR SELECT id FROM orders WHERE customer_id = %d", id))
	mustExec(t, c, "DECLARE c5 CURSOR FOR SELECT 1")
	mustExec(t, c, "CLOSE ALL")
	if _, err := simpleRows(t, c, "FETCH 1 FROM c4"); sqlstate(err) != "34000" {
		t.Fatalf("FETCH after CLOSE ALL: want 34000, got %v", err)
	}
	mustExec(t, c, "ROLLBACK")
	mustExec(t, c, "CLOSE ALL")
}

// A cursor WITH HOLD pins its session: another client on the same
// (single) pooled connection cannot reach it, and CLOSE gives the
// connection back.
func TestCursorWithHoldPins(t *testing.T) {
	p := startProxy(t, shopTopology(""), func(c *Config) { c.PoolSize = 1; c.MaxWait = 300 * time.Millisecond })
	a := setupShop(t, p)
	b := connect(t, p.dsn())
	mustExec(t, a, "BEGIN")
	mustExec(t, a, "DECLARE leak CURSOR WITH HOLD FOR SELECT g FROM generate_series(1, 10) g")
	mustExec(t, a, "COMMIT")
	if _, err := simpleRows(t, b, "FETCH 1 FROM leak"); sqlstate(err) != "34000" && sqlstate(err) != "53300" {
		t.Fatalf("another session reached the cursor: %v", err)
	}
	got, err := simpleRows(t, a, "FETCH 2 FROM leak")
	if err != nil || fmt.Sprint(got) != "[1 2]" {
		t.Fatalf("own FETCH: %v %v", got, err)
	}
	mustExec(t, a, "CLOSE leak")
	if _, err := simpleRows(t, b, "SELECT 1"); err != nil {
		t.Fatalf("connection not given back after CLOSE: %v", err)
	}
	// Declared outside a transaction, and a rolled-back one leaves no pin.
	mustExec(t, a, "DECLARE h2 CURSOR WITH HOLD FOR SELECT 7")
	if got, err := simpleRows(t, a, "FETCH 1 FROM h2"); err != nil || fmt.Sprint(got) != "[7]" {
		t.Fatalf("FETCH of a cursor declared outside a transaction: %v %v", got, err)
	}
	mustExec(t, a, "CLOSE ALL")
	mustExec(t, a, "BEGIN")
	mustExec(t, a, "DECLARE h3 CURSOR WITH HOLD FOR SELECT 1")
	mustExec(t, a, "ROLLBACK")
	if _, err := simpleRows(t, b, "SELECT 1"); err != nil {
		t.Fatalf("rolled-back cursor still pins: %v", err)
	}
}

// A DECLARE and a FETCH of the same cursor in one extended-protocol batch
// (pgx's SendBatch; psycopg and JDBC pipelines do the same): the FETCH is
// bound before the DECLARE's answer is read, and must still run on the
// cluster of the cursor (customer on the second cluster), in every query
// mode. Before, the FETCH got 34000.
func TestCursorDeclareAndFetchInOneBatch(t *testing.T) {
	p := startProxy(t, shopTopology(""), nil)
	c := setupShop(t, p)
	ctx := context.Background()
	id := customerOn(t, p, env.Clusters[1].Name)
	for i := 1; i <= 3; i++ {
		mustExec(t, c, "INSERT INTO orders (id, customer_id, total) VALUES ($1, $2, 1)", i, id)
	}
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeCacheDescribe,
		pgx.QueryExecModeDescribeExec, pgx.QueryExecModeExec} {
		tx, err := c.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		b := &pgx.Batch{}
		b.Queue(fmt.Sprintf("DECLARE bc CURSOR FOR SELECT id, total FROM orders WHERE customer_id = %d ORDER BY id", id))
		b.Queue("FETCH ALL IN bc")
		br := tx.SendBatch(ctx, b)
		if _, err := br.Exec(); err != nil {
			t.Fatalf("%v: DECLARE: %v", mode, err)
		}
		rows, err := br.Query()
		if err != nil {
			t.Fatalf("%v: FETCH: %v", mode, err)
		}
		var ids []int64
		for rows.Next() {
			var n int64
			var total any
			if err := rows.Scan(&n, &total); err != nil {
				t.Fatalf("%v: scan: %v", mode, err)
			}
			ids = append(ids, n)
		}
		if err := rows.Err(); err != nil || fmt.Sprint(ids) != "[1 2 3]" {
			t.Fatalf("%v: FETCH ALL gave %v, %v; want [1 2 3]", mode, ids, err)
		}
		if err := br.Close(); err != nil {
			t.Fatal(err)
		}
		if err := tx.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
