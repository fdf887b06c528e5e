package proxy

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// busyOnClusters counts the backends, on every cluster, running (or idle
// in the transaction of) a statement whose text contains marker.
func busyOnClusters(t *testing.T, marker string) int {
	t.Helper()
	n := 0
	for _, c := range env.Clusters {
		n += count(t, c.DSN("shop"), "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%' || $1 || '%' AND state <> 'idle' AND pid <> pg_backend_pid()", marker)
	}
	return n
}

// waitFor polls cond every 50 ms until it holds or within passes.
func waitFor(t *testing.T, what string, within time.Duration, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > within {
			t.Fatalf("%s: not within %v", what, within)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return time.Since(start)
}

// sessions counts the proxy's client sessions.
func (p *testProxy) sessions() int {
	p.srv.mu.Lock()
	defer p.srv.mu.Unlock()
	return len(p.srv.sessions)
}

// stuckReader sends a read of tens of megabytes across both shards in a
// transaction and reads none of it: the proxy blocks writing to the
// client, the backends block sending their rows, and a cancel reaches
// neither (Postgres ignores it while a backend waits to send).
func stuckReader(t *testing.T, dsn, marker string) *pgconn.PgConn {
	t.Helper()
	return stuckRead(t, dsn, marker, "")
}

// stuckRead is stuckReader with a clause after the read (ORDER BY: a merge).
func stuckRead(t *testing.T, dsn, marker, clause string) *pgconn.PgConn {
	t.Helper()
	ctx := context.Background()
	c, err := pgconn.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	if _, err := c.Exec(ctx, "BEGIN").ReadAll(); err != nil {
		t.Fatal(err)
	}
	_ = c.Exec(ctx, "SELECT id, repeat('x', 20000) AS "+marker+" FROM orders "+clause) // never read
	waitFor(t, "the read runs on both clusters", 10*time.Second, func() bool { return busyOnClusters(t, marker) == 2 })
	time.Sleep(300 * time.Millisecond) // the buffers fill
	return c
}

// Admin KILL, pg_terminate_backend and a client that goes away end a
// session within their bound whatever it is blocked on, and its backends
// are released: a session writing to a client that reads nothing (its
// backends blocked sending rows: a cancel cannot stop them), and a
// session waiting for a backend's answer whose client left. Before, KILL
// and pg_terminate_backend answered and freed nothing (the session stayed,
// its backends busy), and a departed client's session ran its statement
// to the end.
func TestSessionEndsWhateverItWaitsOn(t *testing.T) {
	p, _ := startAdminProxy(t, "")
	app := setupShop(t, p)
	fillOrders(t, p, 2500)
	app.Close(context.Background())
	ctx := context.Background()
	const bound = 4 * time.Second // hardStopAfter twice, the tick, a loaded machine
	ends := func(t *testing.T, marker string, before int) {
		t.Helper()
		d := waitFor(t, "the session ends", bound, func() bool { return p.sessions() < before })
		waitFor(t, "its backends are released", bound, func() bool { return busyOnClusters(t, marker) == 0 })
		t.Logf("session ended in %v", d)
	}
	t.Run("KILL, writing to a client that reads nothing", func(t *testing.T) {
		c := stuckReader(t, p.dsnAs("app:x", "shop"), "kill_marker")
		admin := connect(t, adminDSN(p, "boss"))
		before := p.sessions()
		if _, err := admin.Exec(ctx, "KILL "+itoa(c.PID()), pgx.QueryExecModeSimpleProtocol); err != nil {
			t.Fatalf("KILL: %v", err)
		}
		ends(t, "kill_marker", before)
	})
	t.Run("KILL, a merge writing to a client that reads nothing", func(t *testing.T) {
		c := stuckRead(t, p.dsnAs("app:x", "shop"), "merge_marker", "ORDER BY id")
		admin := connect(t, adminDSN(p, "boss"))
		before := p.sessions()
		if _, err := admin.Exec(ctx, "KILL "+itoa(c.PID()), pgx.QueryExecModeSimpleProtocol); err != nil {
			t.Fatalf("KILL: %v", err)
		}
		ends(t, "merge_marker", before)
	})
	t.Run("pg_terminate_backend, writing to a client that reads nothing", func(t *testing.T) {
		c := stuckReader(t, p.dsnAs("app:x", "shop"), "term_marker")
		other := connect(t, p.dsnAs("app:x", "shop"))
		before := p.sessions()
		var ok bool
		if err := other.QueryRow(ctx, "SELECT pg_terminate_backend($1)", int64(c.PID())).Scan(&ok); err != nil || !ok {
			t.Fatalf("pg_terminate_backend: %v %v", ok, err)
		}
		ends(t, "term_marker", before)
	})
	t.Run("client gone while a backend runs its statement", func(t *testing.T) {
		c, err := pgconn.Connect(ctx, p.dsnAs("app:x", "shop"))
		if err != nil {
			t.Fatal(err)
		}
		_ = c.Exec(ctx, "SELECT pg_sleep(60) AS gone_marker FROM orders") // both clusters
		waitFor(t, "the statement runs", 10*time.Second, func() bool { return busyOnClusters(t, "gone_marker") == 2 })
		before := p.sessions()
		_ = c.Conn().Close() // no Terminate: the client is just gone
		ends(t, "gone_marker", before)
	})
	t.Run("client gone while the proxy writes to it", func(t *testing.T) {
		c := stuckReader(t, p.dsnAs("app:x", "shop"), "write_marker")
		before := p.sessions()
		_ = c.Conn().Close()
		ends(t, "write_marker", before)
	})
}

// Shutdown returns within timeouts.shutdown and its grace even when a
// session is blocked writing to a client that reads nothing, and the
// session's backends are released. Before, it waited until the backends
// were terminated by hand.
func TestShutdownEndsBlockedSession(t *testing.T) {
	p := startProxy(t, shopTopology(""), nil)
	setupShop(t, p).Close(context.Background())
	fillOrders(t, p, 2500)
	stuckReader(t, p.dsn(), "shutdown_marker")
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	_ = p.srv.Shutdown(ctx)
	if d := time.Since(start); d > 500*time.Millisecond+forceGrace+2*time.Second {
		t.Fatalf("Shutdown took %v", d)
	}
	waitFor(t, "the backends are released", 3*time.Second, func() bool { return busyOnClusters(t, "shutdown_marker") == 0 })
}

// A session waiting for a pooled connection (pool.max_wait long) ends at
// once when KILLed or when its client goes away. Before, a departed
// client's session waited out max_wait.
func TestSessionEndsInPoolWait(t *testing.T) {
	p, _ := startAdminProxy(t, "")
	ctx := context.Background()
	setupShop(t, p).Close(ctx)
	p.srv.cur.Load().pools[env.Clusters[0].Name].Resize(1) // max_wait 5 s
	holder := connect(t, p.dsnAs("app:x", "shop"))
	tx, err := holder.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "SELECT count(*) FROM settings"); err != nil { // main's one connection
		t.Fatal(err)
	}
	waiter := func(t *testing.T) *pgconn.PgConn {
		c, err := pgconn.Connect(ctx, p.dsnAs("app:x", "shop"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close(context.Background()) })
		_ = c.Exec(ctx, "SELECT count(*) FROM settings")
		waitFor(t, "the session waits for the pool", 3*time.Second, func() bool {
			p.srv.mu.Lock()
			defer p.srv.mu.Unlock()
			for _, ss := range p.srv.sessions {
				if ss.pid == c.PID() {
					return ss.waiting.Load()
				}
			}
			return false
		})
		return c
	}
	t.Run("KILL", func(t *testing.T) {
		c := waiter(t)
		admin := connect(t, adminDSN(p, "boss"))
		before := p.sessions()
		if _, err := admin.Exec(ctx, "KILL "+itoa(c.PID()), pgx.QueryExecModeSimpleProtocol); err != nil {
			t.Fatalf("KILL: %v", err)
		}
		waitFor(t, "the session ends", 3*time.Second, func() bool { return p.sessions() < before })
	})
	t.Run("client gone", func(t *testing.T) {
		c := waiter(t)
		before := p.sessions()
		_ = c.Conn().Close()
		waitFor(t, "the session ends", 3*time.Second, func() bool { return p.sessions() < before })
	})
}
