package proxy

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
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
	p := startProxy(t, shopTopology(""), func(c *Config) { c.PoolSize, c.MaxWait = 1, 4*time.Second })
	c := setupShop(t, p)
	ctx := context.Background()
	for id := 1; id <= 20; id++ {
		mustExec(t, c, "INSERT INTO customers (id, name) VALUES ($1, $2)", id, fmt.Sprintf("n%d", id))
		mustExec(t, c, "INSERT INTO products (sku, name) VALUES ($1, $2)", fmt.Sprintf("s%d", id), fmt.Sprintf("n%d", id))
	}
	const insert = "INSERT INTO orders (id, customer_id, total) SELECT c.id + $1::bigint, c.id, 1 FROM customers c JOIN products p ON p.name = c.name"
	if tag, err := c.Exec(ctx, insert, 0); err != nil || tag.String() != "INSERT 0 20" {
		t.Fatalf("autocommit: %v %v", tag, err)
	}
	tx, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if tag, err := tx.Exec(ctx, insert, 100); err != nil || tag.String() != "INSERT 0 20" {
		t.Fatalf("in a transaction: %v %v", tag, err)
	}
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
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for s := 0; s < 3; s++ {
		wg.Add(1)
		go func(s int) {
			defer wg.Done()
			d := connect(t, p.dsn())
			defer d.Close(ctx)
			for i := 0; i < 3; i++ {
				if _, err := d.Exec(ctx, insert, 1000*(s+1)+100*i); err != nil {
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
	if n := count(t, p.dsn(), "SELECT count(*) FROM orders"); n != 40+9*20 {
		t.Fatalf("%d orders, want %d", n, 40+9*20)
	}
}
