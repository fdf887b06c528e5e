package proxy

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// A statement the proxy itself refuses after others of the same implicit
// transaction (an extended-protocol batch up to its Sync, a simple Query
// of several statements) rolls them back, as an error does in Postgres:
// on main the INSERT before the refused statement committed, in both
// protocols.

// refusedJoin is a statement the planner refuses (0A000).
const refusedJoin = "SELECT * FROM orders o JOIN products p ON p.sku = o.id::text WHERE o.customer_id = 1 FOR UPDATE"

// customerRows counts the customers with id.
func customerRows(t *testing.T, c *pgx.Conn, id int) int {
	t.Helper()
	var n int
	if err := c.QueryRow(context.Background(), "SELECT count(*) FROM customers WHERE id = $1", id).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestBatchProxyErrorRollsBack(t *testing.T) {
	p := startProxy(t, shopTopology(""), nil)
	c := setupShop(t, p)
	b := &pgconn.Batch{}
	b.ExecParams("INSERT INTO customers (id, name) VALUES (7, 'x')", nil, nil, nil, nil)
	b.ExecParams(refusedJoin, nil, nil, nil, nil)
	if _, err := c.PgConn().ExecBatch(context.Background(), b).ReadAll(); sqlstate(err) != "0A000" {
		t.Fatalf("want 0A000, got %v", err)
	}
	if n := customerRows(t, c, 7); n != 0 {
		t.Errorf("the INSERT before the refused statement committed: %d rows", n)
	}
}

func TestSimpleMultiProxyErrorRollsBack(t *testing.T) {
	p := startProxy(t, shopTopology(""), nil)
	c := setupShop(t, p)
	sql := "INSERT INTO customers (id, name) VALUES (8, 'x'); " + refusedJoin
	if _, err := c.PgConn().Exec(context.Background(), sql).ReadAll(); sqlstate(err) != "0A000" {
		t.Fatalf("want 0A000, got %v", err)
	}
	if n := customerRows(t, c, 8); n != 0 {
		t.Errorf("the INSERT before the refused statement committed: %d rows", n)
	}
}

// A backend's error rolls back the statements before it on another
// cluster too.
func TestSimpleMultiBackendErrorRollsBack(t *testing.T) {
	p := startProxy(t, shopTopology(""), nil)
	c := setupShop(t, p)
	mustExec(t, c, "INSERT INTO customers (id, name) VALUES (1, 'a'), (42, 'b')")
	for _, other := range []int{1, 42} {
		sql := "INSERT INTO customers (id, name) VALUES (9, 'x'); INSERT INTO customers (id, name) VALUES (" + itoa(uint32(other)) + ", 'dup')"
		if _, err := c.PgConn().Exec(context.Background(), sql).ReadAll(); sqlstate(err) != "23505" {
			t.Fatalf("want 23505, got %v", err)
		}
		if n := customerRows(t, c, 9); n != 0 {
			t.Errorf("dup on %d: the INSERT before the failed statement committed: %d rows", other, n)
			mustExec(t, c, "DELETE FROM customers WHERE id = 9")
		}
	}
}
