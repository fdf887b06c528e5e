package proxy

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// A statement the proxy itself refuses after others of the same implicit
// transaction (an extended-protocol batch up to its Sync, a simple Query
// of several statements) rolls them back, as an error does in Postgres:
// on main the INSERT before the refused statement committed, in both
// protocols.

func TestBatchProxyErrorRollsBack(t *testing.T) {
	p := startProxy(t, shopTopology(""), nil)
	c := setupShop(t, p)
	ctx := context.Background()
	b := &pgconn.Batch{}
	b.ExecParams("INSERT INTO customers (id, name) VALUES (7, 'x')", nil, nil, nil, nil)
	b.ExecParams("SELECT * FROM orders o JOIN products p ON p.sku = o.id::text WHERE o.customer_id = 1 FOR UPDATE", nil, nil, nil, nil)
	_, err := c.PgConn().ExecBatch(ctx, b).ReadAll()
	if sqlstate(err) != "0A000" {
		t.Fatalf("want 0A000, got %v", err)
	}
	var n int
	if err := c.QueryRow(ctx, "SELECT count(*) FROM customers WHERE id = 7").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("the INSERT before the refused statement committed: %d rows", n)
	}
}

func TestSimpleMultiProxyErrorRollsBack(t *testing.T) {
	p := startProxy(t, shopTopology(""), nil)
	c := setupShop(t, p)
	ctx := context.Background()
	_, err := c.PgConn().Exec(ctx, "INSERT INTO customers (id, name) VALUES (8, 'x'); SELECT * FROM orders o JOIN products p ON p.sku = o.id::text WHERE o.customer_id = 1 FOR UPDATE").ReadAll()
	if sqlstate(err) != "0A000" {
		t.Fatalf("want 0A000, got %v", err)
	}
	var n int
	if err := c.QueryRow(ctx, "SELECT count(*) FROM customers WHERE id = 8").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("the INSERT before the refused statement committed: %d rows", n)
	}
}

// A backend's error rolls back the statements before it on another
// cluster too.
func TestSimpleMultiBackendErrorRollsBack(t *testing.T) {
	p := startProxy(t, shopTopology(""), nil)
	c := setupShop(t, p)
	ctx := context.Background()
	mustExec(t, c, "INSERT INTO customers (id, name) VALUES (1, 'a'), (42, 'b')")
	for _, other := range []int{1, 42} {
		_, err := c.PgConn().Exec(ctx, "INSERT INTO customers (id, name) VALUES (9, 'x'); INSERT INTO customers (id, name) VALUES ("+itoa(uint32(other))+", 'dup')").ReadAll()
		if sqlstate(err) != "23505" {
			t.Fatalf("want 23505, got %v", err)
		}
		var n int
		if err := c.QueryRow(ctx, "SELECT count(*) FROM customers WHERE id = 9").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("dup on %d: the INSERT before the failed statement committed: %d rows", other, n)
			mustExec(t, c, "DELETE FROM customers WHERE id = 9")
		}
	}
}
