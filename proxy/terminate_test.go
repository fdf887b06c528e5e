package proxy

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/shardgate/shardgate/auth"
)

// TestTerminateBackendOfProxySession is pgx's TestFatalRxError through
// the proxy: a session running pg_sleep is ended by another client's
// pg_terminate_backend($1) of its proxy pid (extended protocol, int4
// parameter): the call answers true, the sleeping client gets FATAL 57P01
// and its connection is closed. An idle session in a transaction ends the
// same way (TestFatalTxError), its transaction rolled back; the simple
// protocol and a literal pid work too.
func TestTerminateBackendOfProxySession(t *testing.T) {
	p := startProxy(t, shopTopology(""), nil)
	setupShop(t, p)
	ctx := context.Background()
	victim := connect(t, p.dsn())
	errc := make(chan error, 1)
	go func() {
		var n int32
		var s string
		errc <- victim.QueryRow(ctx, "select 1::int4, pg_sleep(10)::varchar").Scan(&n, &s)
	}()
	time.Sleep(200 * time.Millisecond)
	other := connect(t, p.dsn())
	var ok bool
	start := time.Now()
	if err := other.QueryRow(ctx, "select pg_terminate_backend($1)", victim.PgConn().PID()).Scan(&ok); err != nil || !ok {
		t.Fatalf("pg_terminate_backend: %v %v", ok, err)
	}
	err := <-errc
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Severity != "FATAL" || pe.Code != "57P01" {
		t.Fatalf("victim: %v, want FATAL 57P01", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("the sleep was not cut short: %s", d)
	}
	if !victim.IsClosed() {
		t.Fatal("victim's connection still open")
	}

	// Idle in a transaction, ended by the simple protocol with a literal.
	idle := connect(t, p.dsn())
	mustExec(t, idle, "BEGIN")
	mustExec(t, idle, "INSERT INTO orders (id, customer_id, total) VALUES (1, 7, 10)")
	rows, err := other.Query(ctx, "SELECT pg_terminate_backend("+itoa32(idle.PgConn().PID())+")", pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		t.Fatal(err)
	}
	vals, err := pgx.CollectRows(rows, pgx.RowTo[bool])
	if err != nil || len(vals) != 1 || !vals[0] || string(rows.FieldDescriptions()[0].Name) != "pg_terminate_backend" {
		t.Fatalf("simple pg_terminate_backend: %v %v", vals, err)
	}
	if err := idle.QueryRow(ctx, "select 1").Scan(new(int)); sqlstate(err) != "57P01" || !idle.IsClosed() {
		t.Fatalf("idle victim: %v closed=%v, want 57P01 and closed", err, idle.IsClosed())
	}
	if n := ordersOnClusters(t); n != 0 {
		t.Fatalf("the terminated session's transaction left %d rows", n)
	}
}

func itoa32(n uint32) string { return strconv.FormatUint(uint64(n), 10) }

// TestCancelBackendOfProxySession: pg_cancel_backend of a proxy pid
// cancels that session's running statement (57014) and answers true; the
// session lives on. A pid that is no proxy session runs on main, which
// warns it is not a server process and answers false. A client of another
// user may not signal (42501, as Postgres 15) unless auth is trust.
func TestCancelBackendOfProxySession(t *testing.T) {
	p := startProxy(t, shopTopology(""), withAuth(auth.MD5,
		auth.User{Name: "app", Password: "s3cret"}, auth.User{Name: "ops", Password: "s3cret"}))
	ctx := context.Background()
	victim := connect(t, p.dsnAs("app:s3cret", "shop"))
	errc := make(chan error, 1)
	go func() {
		_, err := victim.Exec(ctx, "SELECT pg_sleep(10)")
		errc <- err
	}()
	time.Sleep(200 * time.Millisecond)
	other := connect(t, p.dsnAs("app:s3cret", "shop"))
	var ok bool
	start := time.Now()
	if err := other.QueryRow(ctx, "SELECT pg_cancel_backend($1)", victim.PgConn().PID()).Scan(&ok); err != nil || !ok {
		t.Fatalf("pg_cancel_backend: %v %v", ok, err)
	}
	if err := <-errc; sqlstate(err) != "57014" || time.Since(start) > 3*time.Second {
		t.Fatalf("victim: %v after %s, want 57014 at once", err, time.Since(start))
	}
	mustExec(t, victim, "SELECT 1") // still alive

	var notices []string
	cfg, err := pgx.ParseConfig(p.dsnAs("app:s3cret", "shop"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) { notices = append(notices, n.Message) }
	watcher, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer watcher.Close(ctx)
	if err := watcher.QueryRow(ctx, "SELECT pg_terminate_backend($1)", int32(999999)).Scan(&ok); err != nil || ok {
		t.Fatalf("pid of no session: %v %v, want false", ok, err)
	}
	if len(notices) != 1 || !strings.Contains(notices[0], "is not a PostgreSQL backend process") {
		t.Fatalf("notices %q, want main's warning", notices)
	}

	stranger := connect(t, p.dsnAs("ops:s3cret", "shop"))
	err = stranger.QueryRow(ctx, "SELECT pg_terminate_backend($1)", victim.PgConn().PID()).Scan(&ok)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "42501" || pe.Message != "must be a member of the role whose process is being terminated or member of pg_signal_backend" {
		t.Fatalf("another user: %v, want 42501", err)
	}
	mustExec(t, victim, "SELECT 1")
}

// SELECT pg_backend_pid() alone answers the session's process ID, the one
// BackendKeyData gave the client (and pg_terminate_backend accepts), the
// same for every statement under transaction pooling, in both protocols,
// in and out of a transaction; with other items it runs on main.
func TestBackendPIDIsTheSessions(t *testing.T) {
	p := startProxy(t, shopTopology(""), func(c *Config) { c.PoolSize = 3 })
	ctx := context.Background()
	c := connect(t, p.dsn())
	other := connect(t, p.dsn())
	want := c.PgConn().PID()
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeExec, pgx.QueryExecModeCacheStatement} {
		for i, sql := range []string{"SELECT pg_backend_pid()", "select pg_catalog.pg_backend_pid() AS me", "BEGIN", "SELECT pg_backend_pid()", "COMMIT"} {
			if sql == "BEGIN" || sql == "COMMIT" {
				mustExec(t, c, sql)
				continue
			}
			// Another session's statement between, so that a pooled
			// backend connection would change.
			mustExec(t, other, "SELECT 1")
			var got uint32
			if err := c.QueryRow(ctx, sql, mode).Scan(&got); err != nil {
				t.Fatalf("%s %d: %s: %v", mode, i, sql, err)
			}
			if got != want {
				t.Fatalf("%s %d: %s = %d, want the session's pid %d", mode, i, sql, got, want)
			}
		}
	}
	var backend int32
	var one int
	if err := c.QueryRow(ctx, "SELECT pg_backend_pid(), 1").Scan(&backend, &one); err != nil || uint32(backend) == want {
		t.Fatalf("with other items: %d %v (a backend's pid expected)", backend, err)
	}
}
