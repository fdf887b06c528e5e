package proxy

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// createRole makes a role on every test cluster (roles are per cluster).
func createRole(t *testing.T, name string) {
	t.Helper()
	for _, c := range env.Clusters {
		if err := c.Exec(context.Background(), "shop", "DO $$ BEGIN CREATE ROLE "+name+"; EXCEPTION WHEN duplicate_object THEN NULL; END $$"); err != nil {
			t.Fatal(err)
		}
	}
}

func queryString(t *testing.T, c *pgx.Conn, sql string, args ...any) string {
	t.Helper()
	var s string
	if err := c.QueryRow(context.Background(), sql, args...).Scan(&s); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return s
}

// SET ROLE, SET SESSION AUTHORIZATION and set_config(..., false) stay with
// the session that made them: RESET ALL resets neither role, so the replay
// must, and set_config through a SELECT is session state too.
func TestSessionRoleAndSetConfigIsolation(t *testing.T) {
	p := startProxy(t, shopTopology(""), func(c *Config) { c.PoolSize = 1 })
	createRole(t, "sg_reader")
	ctx := context.Background()
	a := connect(t, p.dsn())
	b := connect(t, p.dsn())
	for _, proto := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeExec} {
		if _, err := a.Exec(ctx, "SET ROLE sg_reader", proto); err != nil {
			t.Fatal(err)
		}
		if got := queryString(t, b, "SELECT current_user::text"); got != "postgres" {
			t.Fatalf("%v: SET ROLE of another session leaked: current_user = %s", proto, got)
		}
		if got := queryString(t, a, "SELECT current_user::text"); got != "sg_reader" {
			t.Fatalf("%v: own SET ROLE lost: %s", proto, got)
		}
		mustExec(t, a, "RESET ROLE")

		if _, err := a.Exec(ctx, "SET SESSION AUTHORIZATION sg_reader", proto); err != nil {
			t.Fatal(err)
		}
		if got := queryString(t, b, "SELECT session_user::text || '/' || current_user::text"); got != "postgres/postgres" {
			t.Fatalf("%v: SET SESSION AUTHORIZATION of another session leaked: %s", proto, got)
		}
		if got := queryString(t, a, "SELECT session_user::text || '/' || current_user::text"); got != "sg_reader/sg_reader" {
			t.Fatalf("%v: own SET SESSION AUTHORIZATION lost: %s", proto, got)
		}
		mustExec(t, a, "RESET SESSION AUTHORIZATION")
		if got := queryString(t, a, "SELECT session_user::text"); got != "postgres" {
			t.Fatalf("%v: RESET SESSION AUTHORIZATION: %s", proto, got)
		}

		if _, err := a.Exec(ctx, "SELECT set_config('search_path', 'sg_x, public', false)", proto); err != nil {
			t.Fatal(err)
		}
		if got := queryString(t, b, "SELECT current_setting('search_path')"); got != `"$user", public` {
			t.Fatalf("%v: set_config of another session leaked: search_path = %s", proto, got)
		}
		if got := queryString(t, a, "SELECT current_setting('search_path')"); got != `sg_x, public` {
			t.Fatalf("%v: own set_config lost: search_path = %s", proto, got)
		}
		mustExec(t, a, "RESET search_path")
	}
}

// Transaction characteristics and transaction-local settings reach every
// cluster the transaction touches, including clusters it joins after they
// were made.
func TestTxLocalReachesLateClusters(t *testing.T) {
	p := startProxy(t, shopTopology(""), func(c *Config) { c.PoolSize = 1 })
	c := setupShop(t, p)
	ctx := context.Background()
	for k := 1; k <= 8; k++ {
		mustExec(t, c, "INSERT INTO orders (id, customer_id, total) VALUES ($1, $1, 1)", k)
	}
	for k := 1; k <= 8; k++ {
		mustExec(t, c, "BEGIN")
		mustExec(t, c, "SET TRANSACTION READ ONLY")
		_, err := c.Exec(ctx, "UPDATE orders SET total = 2 WHERE customer_id = $1", k)
		if sqlstate(err) != "25006" {
			t.Fatalf("customer %d: UPDATE in a READ ONLY transaction: want 25006, got %v", k, err)
		}
		mustExec(t, c, "ROLLBACK")
	}
	check := func(begin string, setup []string, want string) {
		t.Helper()
		mustExec(t, c, begin)
		for _, s := range setup {
			mustExec(t, c, s)
		}
		for k := 1; k <= 8; k++ {
			got := queryString(t, c, "SELECT current_setting('transaction_isolation') || '/' || current_setting('work_mem') || '/' || current_setting('application_name') FROM orders WHERE customer_id = $1", k)
			if got != want {
				t.Fatalf("%s %v: customer %d: got %s, want %s", begin, setup, k, got, want)
			}
		}
		mustExec(t, c, "COMMIT")
	}
	check("BEGIN ISOLATION LEVEL SERIALIZABLE", nil, "serializable/4MB/")
	check("BEGIN", []string{
		"SET TRANSACTION ISOLATION LEVEL REPEATABLE READ",
		"SET LOCAL work_mem = '7MB'",
		"SAVEPOINT s1",
		"SELECT set_config('application_name', 'gone', true)",
		"ROLLBACK TO SAVEPOINT s1",
		"SELECT set_config('application_name', 'kept', true)",
		"SET CONSTRAINTS ALL DEFERRED",
		"SAVEPOINT s2",
		"RELEASE SAVEPOINT s2",
	}, "repeatable read/7MB/kept")
	// After the transaction nothing is left behind.
	for k := 1; k <= 8; k++ {
		got := queryString(t, c, "SELECT current_setting('transaction_isolation') || '/' || current_setting('work_mem') || '/' || current_setting('application_name') FROM orders WHERE customer_id = $1", k)
		if got != "read committed/4MB/" {
			t.Fatalf("customer %d after COMMIT: %s", k, got)
		}
	}
}

// State that lives on a backend connection pins the session on both
// protocols, whatever the statement looks like: temporary tables made any
// way and session-level advisory locks. When the session ends, the
// connection is reset before anyone else gets it.
func TestSessionPins(t *testing.T) {
	p := startProxy(t, shopTopology(""), func(c *Config) { c.PoolSize = 2 })
	ctx := context.Background()
	for i, create := range []struct {
		sql  string
		mode pgx.QueryExecMode
	}{
		{"SELECT 1 AS v INTO TEMP scratch", pgx.QueryExecModeSimpleProtocol},
		{"/* note */ CREATE TEMP TABLE scratch (v int)", pgx.QueryExecModeSimpleProtocol},
		{"CREATE TEMPORARY TABLE scratch (v int)", pgx.QueryExecModeExec},
		{"CREATE TABLE pg_temp.scratch (v int)", pgx.QueryExecModeExec},
		{"CREATE TEMP TABLE scratch (v int)", pgx.QueryExecModeExec},
	} {
		x := connect(t, p.dsn())
		y := connect(t, p.dsn())
		if _, err := x.Exec(ctx, create.sql, create.mode); err != nil {
			t.Fatalf("%d %s: %v", i, create.sql, err)
		}
		for j := 0; j < 4; j++ {
			if _, err := y.Exec(ctx, "SELECT 1"); err != nil {
				t.Fatal(err)
			}
			if _, err := x.Exec(ctx, "SELECT count(*) FROM scratch", create.mode); err != nil {
				t.Fatalf("%d %s: temp table lost: %v", i, create.sql, err)
			}
		}
		x.Close(ctx)
		y.Close(ctx)
	}

	a := connect(t, p.dsn())
	b := connect(t, p.dsn())
	var ok bool
	if err := a.QueryRow(ctx, "SELECT pg_advisory_lock($1) IS NULL", 4242).Scan(&ok); err != nil {
		t.Fatal(err)
	}
	for j := 0; j < 4; j++ {
		if err := b.QueryRow(ctx, "SELECT pg_try_advisory_lock(4242)", pgx.QueryExecModeSimpleProtocol).Scan(&ok); err != nil {
			t.Fatal(err)
		}
		if ok {
			t.Fatalf("another session took an advisory lock a live session holds")
		}
		if _, err := a.Exec(ctx, "SELECT 1"); err != nil {
			t.Fatal(err)
		}
	}
	a.Close(ctx)
	// The proxy resets the connection once it sees the client gone.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if err := b.QueryRow(ctx, "SELECT pg_try_advisory_lock(4242)").Scan(&ok); err != nil {
			t.Fatal(err)
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("advisory lock outlived its session")
		}
	}
}

// The proxy reads literals as standard_conforming_strings = on does: a
// client asking for off at start-up is refused, not misread.
func TestStartupStandardConformingStringsOff(t *testing.T) {
	p := startProxy(t, shopTopology(""), nil)
	ctx := context.Background()
	for _, dsn := range []string{
		p.dsn() + "&standard_conforming_strings=off",
		p.dsn() + "&options=-c%20standard_conforming_strings%3Doff",
	} {
		c, err := pgx.Connect(ctx, dsn)
		if err == nil {
			c.Close(ctx)
			t.Fatalf("%s: connected", dsn)
		}
		if sqlstate(err) != "0A000" {
			t.Fatalf("%s: want 0A000, got %v", dsn, err)
		}
	}
	c, err := pgx.Connect(ctx, p.dsn()+"&standard_conforming_strings=on")
	if err != nil {
		t.Fatal(err)
	}
	c.Close(ctx)
}

// A two-phase commit of a transaction that changed settings while other
// sessions use the pool (run with -race: the connections' settings must
// not be touched after they went back to the pool).
func TestTwoPhaseSettingsRace(t *testing.T) {
	p := startProxy(t, shopTopology(""), func(c *Config) { c.PoolSize = 2 })
	c := setupShop(t, p)
	ctx := context.Background()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	defer func() { close(stop); wg.Wait() }()
	for i := 0; i < 2; i++ {
		o := connect(t, p.dsn())
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := o.Exec(ctx, "SELECT count(*) FROM orders"); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for i := 0; i < 20; i++ {
		mustExec(t, c, "BEGIN")
		mustExec(t, c, "SET work_mem = '5MB'")
		for k := 1; k <= 4; k++ {
			mustExec(t, c, "INSERT INTO orders (id, customer_id, total) VALUES ($1, $2, 1)", i, k)
		}
		mustExec(t, c, "COMMIT")
	}
}

// SET name FROM CURRENT has no value the proxy could replay on other
// connections: refused with 0A000 in both protocols, the session's
// settings unchanged and the session usable.
func TestSetFromCurrentRefused(t *testing.T) {
	p := startProxy(t, shopTopology(""), nil)
	c := connect(t, p.dsn())
	ctx := context.Background()
	mustExec(t, c, "SET application_name = 'before'")
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeExec} {
		if _, err := c.Exec(ctx, "SET application_name FROM CURRENT", mode); sqlstate(err) != "0A000" {
			t.Fatalf("%s: SET FROM CURRENT: %v, want 0A000", mode, err)
		}
		var v string
		if err := c.QueryRow(ctx, "SHOW application_name", mode).Scan(&v); err != nil || v != "before" {
			t.Fatalf("%s: application_name %q %v", mode, v, err)
		}
	}
}

// A session advisory lock pins the session to its connections only while
// it holds one: after an unlock the proxy asks pg_locks, and once the last
// lock (Postgres counts each lock of a key) is released the connections go
// back to the pool, in both protocols.
func TestAdvisoryUnlockUnpins(t *testing.T) {
	p := startProxy(t, shopTopology(""), func(c *Config) { c.PoolSize = 1; c.MaxWait = 300 * time.Millisecond })
	ctx := context.Background()
	a := connect(t, p.dsn())
	other := connect(t, p.dsn())
	pinned := func(step string, want bool) {
		t.Helper()
		_, err := other.Exec(ctx, "SELECT 1")
		if got := sqlstate(err) == "53300"; got != want || err != nil && !got {
			t.Fatalf("%s: pinned %v (%v), want %v", step, got, err, want)
		}
	}
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeExec} {
		run := func(sql string) {
			t.Helper()
			if _, err := a.Exec(ctx, sql, mode); err != nil {
				t.Fatalf("%s: %s: %v", mode, sql, err)
			}
		}
		run("SELECT pg_advisory_lock(7)")
		run("SELECT pg_advisory_lock(7)")
		run("SELECT pg_advisory_unlock(7)")
		pinned(mode.String()+": one of two locks released", true)
		run("SELECT pg_advisory_unlock(7)")
		pinned(mode.String()+": both released", false)
		run("SELECT pg_try_advisory_lock(8), pg_advisory_lock_shared(9)")
		run("SELECT pg_advisory_unlock(8)")
		pinned(mode.String()+": a shared lock left", true)
		run("SELECT pg_advisory_unlock_all()")
		pinned(mode.String()+": unlock_all", false)
	}
}

// TestCustomSettingAfterReset: a custom setting the session set and then
// reset (RESET ALL, RESET name, DISCARD ALL) answers ” to SHOW and
// current_setting, as on plain Postgres (its placeholder stays defined):
// on the connection that ran the reset, in a scatter over both shards,
// and on the connections the session is lent while two other clients
// hold the ones it had; before the SET, 42704 as on plain Postgres. Each
// case has a name of its own: a placeholder stays on a backend after its
// session ends, so a later session that never set the name would read ”
// there (Postgres: 42704), which this test does not cover. Before, the
// reset dropped the setting from the session's replay: a connection that
// never had it answered 42704.
func TestCustomSettingAfterReset(t *testing.T) {
	p := startProxy(t, shopTopology(""), func(c *Config) { c.PoolSize = 4 })
	setup := setupShop(t, p)
	for id := 1; id <= 8; id++ {
		mustExec(t, setup, "INSERT INTO orders (id, customer_id, total) VALUES ($1, $1, 1)", id)
	}
	ctx := context.Background()
	plain := connect(t, env.Clusters[0].DSN("shop"))
	i := 0
	for _, reset := range []string{"RESET ALL", "RESET %s", "DISCARD ALL"} {
		for mode, m := range modes {
			// A name of its own: a placeholder stays on the backends.
			i++
			name := fmt.Sprintf("sg2027.x%d", i)
			form := reset
			if strings.Contains(reset, "%s") {
				form = fmt.Sprintf(reset, name)
			}
			shows := []string{"SHOW " + name, "SELECT current_setting('" + name + "')"}
			// Plain Postgres.
			want := map[string]string{}
			for _, q := range shows {
				want["before "+q] = outcome(plain, pgx.QueryExecModeSimpleProtocol, q)
			}
			mustExec(t, plain, "SET "+name+" = '1'")
			mustExec(t, plain, form)
			for _, q := range shows {
				want[q] = outcome(plain, pgx.QueryExecModeSimpleProtocol, q)
			}
			if want[shows[0]] != "ok " || want["before "+shows[0]] != "42704" {
				t.Fatalf("plain Postgres: %v", want)
			}
			c := connect(t, p.dsn())
			for _, q := range shows {
				if got := outcome(c, m, q); got != want["before "+q] {
					t.Errorf("%s, %s, before SET: %s, want %s", form, mode, got, want["before "+q])
				}
			}
			mustExec(t, c, "SET "+name+" = '1'")
			mustExec(t, c, form)
			check := func(stage string) {
				t.Helper()
				for _, q := range shows {
					if got := outcome(c, m, q); got != want[q] {
						t.Errorf("%s, %s, %s: %s: %s, want %s (plain Postgres)", form, mode, stage, q, got, want[q])
					}
				}
				if got := outcome(c, m, "SELECT string_agg(DISTINCT current_setting('"+name+"'), ',') FROM orders"); got != "ok " {
					t.Errorf("%s, %s, %s: scatter: %s, want ''", form, mode, stage, got)
				}
			}
			check("same connection")
			// Two other clients hold connections to both clusters in
			// transactions: c's next ones are others.
			var holders []*pgx.Conn
			for k := 0; k < 2; k++ {
				h := connect(t, p.dsn())
				mustExec(t, h, "BEGIN")
				mustExec(t, h, "SELECT count(*) FROM orders")
				mustExec(t, h, "SELECT count(*) FROM customers")
				holders = append(holders, h)
			}
			check("other connections")
			for _, h := range holders {
				h.Close(ctx)
			}
			c.Close(ctx)
		}
	}
}
