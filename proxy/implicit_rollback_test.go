package proxy

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
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

// An error the proxy raises while it reads a batch's answers, after the
// batch's Sync went to the backends, rolls back the implicit transaction
// too: here a division by zero in an expression over aggregates that the
// merge across shards computes (22012, as Postgres), before or after an
// INSERT of the same batch, and in a simple Query of both.
func TestBatchMergeErrorRollsBack(t *testing.T) {
	p := startProxy(t, shopTopology(""), nil)
	c := setupShop(t, p)
	mustExec(t, c, "INSERT INTO orders (id, customer_id, total) SELECT g, g, 1 FROM generate_series(1, 20) g")
	const merged = "SELECT sum(total) / (count(*) - 20) FROM orders"
	const insert = "INSERT INTO customers (id, name) VALUES (7, 'x')"
	for i, order := range [][2]string{{insert, merged}, {merged, insert}} {
		b := &pgconn.Batch{}
		b.ExecParams(order[0], nil, nil, nil, nil)
		b.ExecParams(order[1], nil, nil, nil, nil)
		if _, err := c.PgConn().ExecBatch(context.Background(), b).ReadAll(); sqlstate(err) != "22012" {
			t.Fatalf("batch %d: want 22012, got %v", i, err)
		}
		if n := customerRows(t, c, 7); n != 0 {
			t.Errorf("batch %d: the INSERT of the batch whose merge failed committed: %d rows", i, n)
			mustExec(t, c, "DELETE FROM customers WHERE id = 7")
		}
		if _, err := c.PgConn().Exec(context.Background(), order[0]+"; "+order[1]).ReadAll(); sqlstate(err) != "22012" {
			t.Fatalf("simple query %d: want 22012, got %v", i, err)
		}
		if n := customerRows(t, c, 7); n != 0 {
			t.Errorf("simple query %d: the INSERT of the query whose merge failed committed: %d rows", i, n)
			mustExec(t, c, "DELETE FROM customers WHERE id = 7")
		}
	}
}

// A merge suspended by a row limit in a batch after a write: the batch's
// transaction ends at Sync with the portal, the write commits.
func TestBatchWriteThenLimitedMerge(t *testing.T) {
	p := startProxy(t, shopTopology(""), nil)
	c := setupShop(t, p)
	mustExec(t, c, "INSERT INTO orders (id, customer_id, total) SELECT g, g, 1 FROM generate_series(1, 20) g")
	r := rawSession(t, p.addr)
	r.sendAll(t, &pgproto3.Parse{Query: "INSERT INTO customers (id, name) VALUES (7, 'x')"}, &pgproto3.Bind{}, &pgproto3.Execute{},
		&pgproto3.Parse{Query: "SELECT id FROM orders ORDER BY id"}, &pgproto3.Bind{}, &pgproto3.Execute{MaxRows: 2}, &pgproto3.Sync{})
	if got, rows := r.typesAndRows(t); got != "12C(INSERT 0 1)12DsZ" || len(rows) != 2 {
		t.Fatalf("INSERT, row-limited merge: %s %v", got, rows)
	}
	if n := customerRows(t, c, 7); n != 1 {
		t.Errorf("the INSERT before a row-limited merge: %d rows", n)
	}
	if got, _ := r.extQuery(t, "SELECT count(*) FROM orders"); got != "12T(count)DC(SELECT 1)Z" {
		t.Fatalf("the session after: %s", got)
	}
}
