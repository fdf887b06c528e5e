package proxy

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// lockShop is the shop with one order (customer 1, id 10, total 1) and
// one product named after its customer (sku "abc").
func lockShop(t *testing.T) (*testProxy, *pgx.Conn) {
	t.Helper()
	p := startProxy(t, shopTopology(""), nil)
	c := setupShop(t, p)
	mustExec(t, c, "INSERT INTO orders (id, customer_id, total) VALUES (10, 1, 1), (20, 2, 1)")
	mustExec(t, c, "INSERT INTO products (sku, name) VALUES ('abc', 'n1'), ('xy', 'n2')")
	return p, c
}

// waitBlocked waits until a backend of a shard waits for a row lock.
func waitBlocked(t *testing.T) {
	t.Helper()
	for i := 0; i < 200; i++ {
		n := 0
		for cl := 0; cl < 2; cl++ {
			n += clusterCount(t, cl, "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = 'shop'")
		}
		if n > 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("no statement waits for a lock")
}

// background runs sql on c in a goroutine; its result comes on the channel.
func background(c *pgx.Conn, sql string, args ...any) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := c.Exec(context.Background(), sql, args...)
		done <- err
	}()
	return done
}

// TestUpdateFromWaitsForConcurrentUpdate: an UPDATE ... FROM across
// groups that meets a row another transaction changed and has not
// committed waits for it and computes its new values from the committed
// row (READ COMMITTED), as Postgres does: the other transaction's +1 is
// not lost. Both protocols.
func TestUpdateFromWaitsForConcurrentUpdate(t *testing.T) {
	p, c := lockShop(t)
	ctx := context.Background()
	b := connect(t, p.dsn())
	modes := []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement}
	for _, mode := range modes {
		mustExec(t, c, "UPDATE orders SET total = 1 WHERE customer_id = 1 AND id = 10")
		a, err := c.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.Exec(ctx, "UPDATE orders SET total = total + 1 WHERE customer_id = 1 AND id = 10"); err != nil {
			t.Fatal(err)
		}
		done := background(b, "UPDATE orders o SET total = o.total + length(p.sku) FROM products p WHERE p.name = 'n'||o.customer_id AND o.customer_id < $1", mode, 2)
		waitBlocked(t)
		if err := a.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatalf("%v: %v", mode, err)
		}
		if n := count(t, p.dsn(), "SELECT total::int FROM orders WHERE customer_id = 1 AND id = 10"); n != 5 {
			t.Fatalf("%v: total %d, want 5 (1, +1 of the other transaction, +3)", mode, n)
		}
	}
}

// TestDeleteUsingRechecksConcurrentUpdate: a DELETE ... USING across
// groups waits for a concurrent change of a target row and matches the
// committed row: an order whose total went over the bound is not deleted,
// as in Postgres.
func TestDeleteUsingRechecksConcurrentUpdate(t *testing.T) {
	p, c := lockShop(t)
	ctx := context.Background()
	a, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Exec(ctx, "UPDATE orders SET total = 100 WHERE customer_id = 1 AND id = 10"); err != nil {
		t.Fatal(err)
	}
	b := connect(t, p.dsn())
	done := background(b, "DELETE FROM orders o USING products p WHERE p.name = 'n'||o.customer_id AND o.total < length(p.sku) + 10")
	waitBlocked(t)
	if err := a.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := count(t, p.dsn(), "SELECT count(*) FROM orders WHERE customer_id = 1"); n != 1 {
		t.Fatalf("order of customer 1 deleted though its committed total is 100")
	}
	if n := count(t, p.dsn(), "SELECT count(*) FROM orders WHERE customer_id = 2"); n != 0 {
		t.Fatalf("order of customer 2 not deleted")
	}
}

// TestUpdateFromRepeatableReadConflict: under REPEATABLE READ an UPDATE
// ... FROM across groups whose target row another transaction changed
// after the snapshot fails with 40001, as in Postgres, whether the other
// transaction committed before or while the statement waited; the
// session carries on.
func TestUpdateFromRepeatableReadConflict(t *testing.T) {
	p, c := lockShop(t)
	ctx := context.Background()
	b := connect(t, p.dsn())
	const upd = "UPDATE orders o SET total = o.total + length(p.sku) FROM products p WHERE p.name = 'n'||o.customer_id"
	for _, waits := range []bool{false, true} {
		tx, err := b.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
		if err != nil {
			t.Fatal(err)
		}
		var n int
		if err := tx.QueryRow(ctx, "SELECT count(*) FROM orders").Scan(&n); err != nil || n != 2 {
			t.Fatalf("snapshot: %d %v", n, err)
		}
		a, err := c.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.Exec(ctx, "UPDATE orders SET total = total + 1 WHERE customer_id = 1 AND id = 10"); err != nil {
			t.Fatal(err)
		}
		var done <-chan error
		if waits {
			done = background(b, upd)
			waitBlocked(t)
		}
		if err := a.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if !waits {
			done = background(b, upd)
		}
		err = <-done
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "40001" {
			t.Fatalf("waits=%v: %v, want 40001", waits, err)
		}
		_ = tx.Rollback(ctx)
	}
	if n := count(t, p.dsn(), "SELECT sum(total)::int FROM orders"); n != 4 {
		t.Fatalf("totals %d, want 4", n)
	}
	if _, err := b.Exec(ctx, upd); err != nil {
		t.Fatalf("after the conflict: %v", err)
	}
}

// TestUpdateFromLockStrength: the rows are locked as Postgres's UPDATE
// locks them: an update of other columns than keys does not wait for a
// transaction holding FOR KEY SHARE (a foreign key's check); a DELETE
// waits for it; an update of a key column waits for it, and so lets
// that transaction update the row (no deadlock) and reads its change.
func TestUpdateFromLockStrength(t *testing.T) {
	p, c := lockShop(t)
	ctx := context.Background()
	b := connect(t, p.dsn())
	share := func(customer int) pgx.Tx {
		a, err := c.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.Exec(ctx, "SELECT 1 FROM orders WHERE customer_id = $1 AND id = $1 * 10 FOR KEY SHARE", customer); err != nil {
			t.Fatal(err)
		}
		return a
	}
	a := share(1)
	tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	_, err := b.Exec(tctx, "UPDATE orders o SET total = o.total + length(p.sku) FROM products p WHERE p.name = 'n'||o.customer_id")
	cancel()
	if err != nil {
		t.Fatalf("update of a non-key column under FOR KEY SHARE: %v", err)
	}
	_ = a.Rollback(ctx)

	a = share(1)
	done := background(b, "UPDATE orders o SET id = o.id + 1000, total = o.total + length(p.sku) FROM products p WHERE p.name = 'n'||o.customer_id AND o.customer_id = 1")
	waitBlocked(t)
	tctx, cancel = context.WithTimeout(ctx, 5*time.Second)
	_, err = a.Exec(tctx, "UPDATE orders SET total = total + 1 WHERE customer_id = 1 AND id = 10")
	cancel()
	if err != nil {
		t.Fatalf("the FOR KEY SHARE holder's update: %v", err)
	}
	if err := a.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("key update: %v", err)
	}
	if n := count(t, p.dsn(), "SELECT total::int FROM orders WHERE customer_id = 1 AND id = 1010"); n != 8 {
		t.Fatalf("total %d, want 8 (1+3, +1, +3)", n)
	}

	a = share(2)
	done = background(b, "DELETE FROM orders o USING products p WHERE p.name = 'n'||o.customer_id AND o.customer_id = 2")
	waitBlocked(t)
	if err := a.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("delete: %v", err)
	}
	if n := count(t, p.dsn(), "SELECT count(*) FROM orders"); n != 1 {
		t.Fatalf("%d orders left, want 1", n)
	}
}
