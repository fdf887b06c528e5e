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

// oneConnShop is the shop with customers 1..20 and a product per
// customer's name, on a proxy whose pools have size connections.
func oneConnShop(t *testing.T, size int, commit CommitMode) (*testProxy, *pgx.Conn) {
	t.Helper()
	p := startProxy(t, shopTopology(""), func(c *Config) { c.PoolSize, c.MaxWait, c.Commit = size, 20*time.Second, commit })
	c := setupShop(t, p)
	for id := 1; id <= 20; id++ {
		mustExec(t, c, "INSERT INTO customers (id, name) VALUES ($1, $2)", id, fmt.Sprintf("n%d", id))
		mustExec(t, c, "INSERT INTO products (sku, name) VALUES ($1, $2)", fmt.Sprintf("s%d", id), fmt.Sprintf("n%d", id))
	}
	return p, c
}

const (
	oneConnInsert = "INSERT INTO orders (id, customer_id, total) SELECT c.id + $1::bigint, c.id, 1 FROM customers c JOIN products p ON p.name = c.name"
	oneConnUpdate = "UPDATE orders o SET total = total + 1 FROM products p WHERE p.name = 'n' || o.customer_id AND o.id > $1::bigint AND o.id <= $1::bigint + 20"
	oneConnDelete = "DELETE FROM orders o USING products p WHERE p.name = 'n' || o.customer_id AND o.id > $1::bigint AND o.id <= $1::bigint + 20 AND o.customer_id <= 10"
)

// oneConnTx runs, in one transaction that first wrote on the
// coordinator's cluster (settings, on pg0), an INSERT ... SELECT, an
// UPDATE ... FROM and a DELETE ... USING across groups, each over
// intermediate results coordinated on pg0, and commits.
func oneConnTx(ctx context.Context, c *pgx.Conn, base int, mode pgx.QueryExecMode) error {
	tx, err := c.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, fmt.Sprintf("INSERT INTO settings (k, v) VALUES ('k%d', 'v')", base)); err != nil {
		return err
	}
	for _, s := range []struct{ sql, tag string }{{oneConnInsert, "INSERT 0 20"}, {oneConnUpdate, "UPDATE 20"}, {oneConnDelete, "DELETE 10"}} {
		tag, err := tx.Exec(ctx, s.sql, mode, base)
		if err != nil || tag.String() != s.tag {
			return fmt.Errorf("%s: %v %v, want %s", s.sql, tag, err, s.tag)
		}
	}
	var n int
	if err := tx.QueryRow(ctx, "SELECT count(*) FROM orders WHERE id > $1 AND id <= $1 + 20 AND total = 2", base).Scan(&n); err != nil || n != 10 {
		return fmt.Errorf("the transaction sees %d of its orders updated, %v; want 10", n, err)
	}
	return tx.Commit(ctx)
}

// TestWriteSourceOnTransactionConn (issue 19 item 9): inside a
// transaction that already used the coordinator's cluster, INSERT ...
// SELECT, UPDATE ... FROM and DELETE ... USING across groups read their
// source on the transaction's own connection there, so they run with
// pool.size 1 (was: 53300, a second connection to pg0), in both
// protocols.
func TestWriteSourceOnTransactionConn(t *testing.T) {
	p, c := oneConnShop(t, 1, CommitBestEffort)
	ctx := context.Background()
	for i, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
		start := time.Now()
		if err := oneConnTx(ctx, c, 100*(i+1), mode); err != nil {
			t.Fatalf("%v, after %s: %v", mode, time.Since(start), err)
		}
	}
	if n := count(t, p.dsn(), "SELECT count(*) FROM orders WHERE total = 2"); n != 20 {
		t.Fatalf("%d orders committed, want 20", n)
	}
}

// TestWriteSourceConcurrentTransactions (issue 19 item 9): N sessions at
// once on a pool of N, each in a transaction holding the coordinator's
// cluster, never wait for each other's connections (was: each waited for
// a second one to pg0 while holding its first, 53300 after max_wait).
func TestWriteSourceConcurrentTransactions(t *testing.T) {
	const n = 2
	p, _ := oneConnShop(t, n, CommitBestEffort)
	ctx := context.Background()
	atOnce(t, p, n, func(s int, d *pgx.Conn) error {
		for i := 0; i < 3; i++ {
			if err := oneConnTx(ctx, d, 1000*(s+1)+100*i, pgx.QueryExecModeCacheStatement); err != nil {
				return fmt.Errorf("transaction %d: %w", i, err)
			}
		}
		return nil
	})
	if got := count(t, p.dsn(), "SELECT count(*) FROM orders WHERE total = 2"); got != n*3*10 {
		t.Fatalf("%d orders committed, want %d", got, n*3*10)
	}
}

// TestWriteSourceTwoPhasePoolOfOne (issue 19 item 9): under two-phase
// commit with pool.size 1, a write whose source would need a second
// connection to the coordinator's cluster reads it on the transaction's
// connection; the temporary tables there mean the transaction cannot
// PREPARE, so a write that would make it commit in two phases is refused
// at once with 0A000, never waited for, and one on the coordinator's
// cluster alone works.
func TestWriteSourceTwoPhasePoolOfOne(t *testing.T) {
	p, c := oneConnShop(t, 1, CommitTwoPhase)
	ctx := context.Background()
	mustExec(t, c, oneConnInsert, 0)
	for _, sql := range []string{oneConnInsert, oneConnUpdate} {
		tx, err := c.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		mustExec(t, tx.Conn(), "INSERT INTO settings (k, v) VALUES ('a', 'b')")
		began := time.Now()
		if _, err := tx.Exec(ctx, sql, 0); sqlstate(err) != "0A000" || time.Since(began) > 10*time.Second {
			t.Fatalf("%s after a write on pg0: %v after %s, want 0A000 at once", sql, err, time.Since(began))
		}
		if err := tx.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// Into a main table (pg0): the transaction writes on pg0 alone.
	tx, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, tx.Conn(), "INSERT INTO settings (k, v) VALUES ('a', 'b')")
	if tag, err := tx.Exec(ctx, "INSERT INTO settings (k, v) SELECT c.name || $1::text, p.sku FROM customers c JOIN products p ON p.name = c.name", "-x"); err != nil || tag.String() != "INSERT 0 20" {
		t.Fatalf("into settings: %v %v", tag, err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if n := count(t, p.dsn(), "SELECT count(*) FROM settings"); n != 21 {
		t.Fatalf("%d settings, want 21", n)
	}
}

// TestRowWriteSourcePoolOfOne (issue 19 item 9): UPDATE ... FROM and
// DELETE ... USING across groups at the start of a transaction, whose
// target has shards on the coordinator's cluster, lock the target's rows
// on the transaction's connection there, which is also the coordinator:
// one connection to pg0 with pool.size 1 (was: the scratch coordinator
// held, the transaction's pg0 connection waited for, 53300 after
// max_wait). Outside a transaction too.
func TestRowWriteSourcePoolOfOne(t *testing.T) {
	p, c := oneConnShop(t, 1, CommitBestEffort)
	ctx := context.Background()
	mustExec(t, c, oneConnInsert, 0)
	tx, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []struct{ sql, tag string }{{oneConnUpdate, "UPDATE 20"}, {oneConnDelete, "DELETE 10"}} {
		if tag, err := tx.Exec(ctx, s.sql, 0); err != nil || tag.String() != s.tag {
			t.Fatalf("%s: %v %v, want %s", s.sql, tag, err, s.tag)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if tag, err := c.Exec(ctx, oneConnUpdate, 0); err != nil || tag.String() != "UPDATE 10" {
		t.Fatalf("autocommit: %v %v, want UPDATE 10", tag, err)
	}
	if n := count(t, p.dsn(), "SELECT count(*) FROM orders WHERE total = 3"); n != 10 {
		t.Fatalf("%d orders updated twice, want 10", n)
	}
}

// TestWriteSourceTwoPhaseNeverWaitsHolding (issue 19 item 9): under
// two_phase on a pool of N, N sessions at once in transactions holding
// the coordinator's cluster each need a second connection there for
// INSERT ... SELECT or UPDATE ... FROM; none waits for it while holding
// the first: each runs, or is refused at once with 53300 (was: they
// waited for each other; the test hung past 10 minutes on main).
func TestWriteSourceTwoPhaseNeverWaitsHolding(t *testing.T) {
	const n = 2
	p, c := oneConnShop(t, n, CommitTwoPhase)
	mustExec(t, c, oneConnInsert, 0)
	// Bounded: on main the sessions waited for each other for good.
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	atOnce(t, p, n, func(s int, d *pgx.Conn) error {
		for i, sql := range []string{oneConnInsert, oneConnUpdate, oneConnInsert} {
			tx, err := d.Begin(ctx)
			if err != nil {
				return err
			}
			began := time.Now()
			_, err = tx.Exec(ctx, fmt.Sprintf("INSERT INTO settings (k, v) VALUES ('s%d-%d', 'v')", s, i))
			if err == nil {
				_, err = tx.Exec(ctx, sql, 1000*(s+1)+100*i)
			}
			if err == nil {
				err = tx.Commit(ctx)
			} else {
				_ = tx.Rollback(ctx)
			}
			if took := time.Since(began); err != nil && sqlstate(err) != "53300" || took > 10*time.Second {
				return fmt.Errorf("transaction %d: %v after %s, want success or 53300 at once", i, err, took)
			}
		}
		return nil
	})
}

// atOnce runs fn in n sessions of p started together and reports their
// errors.
func atOnce(t *testing.T, p *testProxy, n int, fn func(s int, d *pgx.Conn) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	start := make(chan struct{})
	for s := 0; s < n; s++ {
		wg.Add(1)
		go func(s int) {
			defer wg.Done()
			d := connect(t, p.dsn())
			defer d.Close(context.Background())
			<-start
			if err := fn(s, d); err != nil {
				errs <- fmt.Errorf("session %d: %w", s, err)
			}
		}(s)
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// anyWaiting reports whether a session of p waits for a pool connection.
func (p *testProxy) anyWaiting() bool {
	p.srv.mu.Lock()
	defer p.srv.mu.Unlock()
	for _, ss := range p.srv.sessions {
		if ss.waiting.Load() {
			return true
		}
	}
	return false
}

// TestRowWriteSourceTwoPhasePair (issue 19 item 9 under two_phase): an
// UPDATE ... FROM or DELETE ... USING across groups whose target has
// shards on the coordinator's cluster needs two connections there at once
// (the transaction's, locking the target's rows, and one outside the
// two-phase transaction for the source's temporary tables). It takes
// both together, holding neither while it waits: with one of the two
// busy it waits for it (was: 53300 at once, having taken the free one),
// outside a transaction block and at the start of one, and N of them at
// once on a pool of N all run (was: each took one connection, and all
// but the lucky ones failed with 53300).
func TestRowWriteSourceTwoPhasePair(t *testing.T) {
	const n = 2
	p, c := oneConnShop(t, n, CommitTwoPhase)
	ctx := context.Background()
	mustExec(t, c, oneConnInsert, 0)
	for _, inTx := range []bool{false, true} {
		holder := connect(t, p.dsn())
		hold, err := holder.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		mustExec(t, hold.Conn(), "INSERT INTO settings (k, v) VALUES ('held', 'v')") // one of pg0's two
		done := make(chan error, 1)
		go func() {
			run := func() (pgconn.CommandTag, error) {
				return c.Exec(ctx, oneConnUpdate, pgx.QueryExecModeSimpleProtocol, 0)
			}
			if !inTx {
				tag, err := run()
				done <- checkTag(tag, err, "UPDATE 20")
				return
			}
			tx, err := c.Begin(ctx)
			if err == nil {
				tag, err := run()
				if err = checkTag(tag, err, "UPDATE 20"); err == nil {
					err = tx.Commit(ctx)
				}
				_ = tx.Rollback(ctx)
			}
			done <- err
		}()
		var early error
		waitFor(t, "the UPDATE waits for two pg0 connections", 10*time.Second, func() bool {
			select {
			case err := <-done:
				early = fmt.Errorf("it did not wait: %v", err)
				return true
			default:
				return p.anyWaiting()
			}
		})
		if early != nil {
			t.Fatalf("in a transaction %v: %v", inTx, early)
		}
		if err := hold.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatalf("in a transaction %v: %v", inTx, err)
		}
		_ = holder.Close(ctx)
	}
	atOnce(t, p, n, func(s int, d *pgx.Conn) error {
		for i := 0; i < 4; i++ {
			tag, err := d.Exec(ctx, oneConnUpdate, pgx.QueryExecModeSimpleProtocol, 0)
			if err := checkTag(tag, err, "UPDATE 20"); err != nil {
				return fmt.Errorf("statement %d: %w", i, err)
			}
		}
		return nil
	})
	// 2 before the atOnce, n*4 in it: each committed once.
	if got := count(t, p.dsn(), "SELECT count(*) FROM orders WHERE id <= 20 AND total = 1 + 2 + $1", n*4); got != 20 {
		t.Fatalf("%d orders updated %d times, want 20", got, 2+n*4)
	}
	// DELETE ... USING the same way.
	if tag, err := c.Exec(ctx, oneConnDelete, pgx.QueryExecModeSimpleProtocol, 0); checkTag(tag, err, "DELETE 10") != nil {
		t.Fatalf("DELETE ... USING: %v %v", tag, err)
	}
}

func checkTag(tag pgconn.CommandTag, err error, want string) error {
	if err == nil && tag.String() != want {
		err = fmt.Errorf("%s, want %s", tag, want)
	}
	return err
}
