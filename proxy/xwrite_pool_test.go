package proxy

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// TestInsertSelectPoolOfOne: INSERT ... SELECT whose rows are read over
// intermediate results (here a join across groups) needs one connection
// per cluster: it runs with pool.size 1, in autocommit and at the start
// of a transaction, and several at once on a pool of one neither wait for
// each other forever nor time out. In a transaction that used the
// coordinator's cluster already it reads its source on the transaction's
// connection there (TestWriteSourceOnTransactionConn), which under
// two-phase commit refuses at once with 0A000 the writes on two clusters
// that would follow, instead of waiting for itself.
func TestInsertSelectPoolOfOne(t *testing.T) {
	p, c := poolOfOne(t)
	ctx := context.Background()
	const insert = "INSERT INTO orders (id, customer_id, total) SELECT c.id + $1::bigint, c.id, 1 FROM customers c JOIN products p ON p.name = c.name"
	execTag(t, "autocommit", c, insert, 0, "INSERT 0 20")
	tx, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	execTag(t, "in a transaction", tx, insert, 100, "INSERT 0 20")
	var n int
	if err := tx.QueryRow(ctx, "SELECT count(*) FROM orders").Scan(&n); err != nil || n != 40 {
		t.Fatalf("the transaction sees %d orders, %v; want 40", n, err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	// A transaction that used the coordinator's cluster already: the
	// source is read on its connection there, and the transaction could
	// not PREPARE after writes on pg0 and pg1: refused at once.
	tx, err = c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, tx.Conn(), "INSERT INTO settings (k, v) VALUES ('a', 'b')")
	start := time.Now()
	if _, err := tx.Exec(ctx, insert, 500); sqlstate(err) != "0A000" || time.Since(start) > 3*time.Second {
		t.Fatalf("after a write on pg0 in the transaction: %v after %s, want 0A000 at once", err, time.Since(start))
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	concurrentExecs(t, p, insert, 3, 3)
	if n := count(t, p.dsn(), "SELECT count(*) FROM orders"); n != 40+9*20 {
		t.Fatalf("%d orders, want %d", n, 40+9*20)
	}
}

// concurrentExecs runs sql (one parameter, a different number each time)
// rounds times in each of sessions sessions at once, and fails the test
// for each statement that fails.
func concurrentExecs(t *testing.T, p *testProxy, sql string, sessions, rounds int) {
	t.Helper()
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, sessions)
	for s := 0; s < sessions; s++ {
		wg.Add(1)
		go func(s int) {
			defer wg.Done()
			d := connect(t, p.dsn())
			defer d.Close(ctx)
			for i := 0; i < rounds; i++ {
				if _, err := d.Exec(ctx, sql, 1000*(s+1)+100*i); err != nil {
					errs <- fmt.Errorf("session %d, statement %d: %w", s, i, err)
					return
				}
			}
		}(s)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// poolOfOne starts a proxy with pool.size 1 over the shop tables, with
// customers 1..20 and products named as they are (n1..n20).
func poolOfOne(t *testing.T) (*testProxy, *pgx.Conn) {
	t.Helper()
	p := startProxy(t, shopTopology(""), func(c *Config) { c.PoolSize, c.MaxWait = 1, 4*time.Second })
	c := setupShop(t, p)
	for id := 1; id <= 20; id++ {
		mustExec(t, c, "INSERT INTO customers (id, name) VALUES ($1, $2)", id, fmt.Sprintf("n%d", id))
		mustExec(t, c, "INSERT INTO products (sku, name) VALUES ($1, $2)", fmt.Sprintf("s%d", id), fmt.Sprintf("n%d", id))
	}
	return p, c
}

// execTag runs sql with one argument on q and requires the tag want.
func execTag(t *testing.T, what string, q interface {
	Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
}, sql string, arg any, want string) {
	t.Helper()
	if tag, err := q.Exec(context.Background(), sql, arg); err != nil || tag.String() != want {
		t.Fatalf("%s: %v %v, want %s", what, tag, err, want)
	}
}
