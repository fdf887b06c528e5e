package proxy

import (
	"context"
	"testing"
)

// Session state never leaks between clients sharing pooled connections, and
// state that lives on a backend connection (temporary tables) pins it.
func TestSessionStateIsolation(t *testing.T) {
	p := startProxy(t, shopTopology(""), func(c *Config) { c.PoolSize = 1 })
	ctx := context.Background()
	a := connect(t, p.dsn())
	b := connect(t, p.dsn())
	for _, proto := range []string{"simple", "extended"} {
		var err error
		if proto == "simple" {
			_, err = a.PgConn().Exec(ctx, "SET statement_timeout = 12345").ReadAll()
		} else {
			_, err = a.Exec(ctx, "SET statement_timeout = 12345")
		}
		if err != nil {
			t.Fatal(err)
		}
		var got string
		if err := b.QueryRow(ctx, "SHOW statement_timeout").Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != "0" {
			t.Fatalf("%s: SET of another session leaked: statement_timeout = %s", proto, got)
		}
		if err := a.QueryRow(ctx, "SHOW statement_timeout").Scan(&got); err != nil || got != "12345ms" {
			t.Fatalf("%s: own SET lost: %q %v", proto, got, err)
		}
		mustExec(t, a, "RESET statement_timeout")
	}

	// A temporary table pins the session to its connection (pool size 2
	// here so the other client still gets one).
	p2 := startProxy(t, shopTopology(""), func(c *Config) { c.PoolSize = 2 })
	x := connect(t, p2.dsn())
	y := connect(t, p2.dsn())
	mustExec(t, x, "CREATE TEMP TABLE scratch (v int)")
	mustExec(t, x, "INSERT INTO scratch VALUES (1), (2)")
	var n int
	for i := 0; i < 5; i++ {
		if _, err := y.Exec(ctx, "SELECT 1"); err != nil {
			t.Fatal(err)
		}
		if err := x.QueryRow(ctx, "SELECT count(*) FROM scratch").Scan(&n); err != nil || n != 2 {
			t.Fatalf("pinned temp table: %d %v", n, err)
		}
	}
	if _, err := y.Exec(ctx, "SELECT count(*) FROM scratch"); sqlstate(err) != "42P01" {
		t.Fatalf("temp table visible to another session: %v", err)
	}
	x.Close(ctx)
	// After x leaves, its connection is reset: no temp table for the next.
	z := connect(t, p2.dsn())
	for i := 0; i < 3; i++ {
		if _, err := z.Exec(ctx, "SELECT count(*) FROM scratch"); sqlstate(err) != "42P01" {
			t.Fatalf("temp table survived its session: %v", err)
		}
	}

	// COMMIT AND CHAIN starts the next transaction at once.
	mustExec(t, z, "BEGIN")
	mustExec(t, z, "COMMIT AND CHAIN")
	if st := z.PgConn().TxStatus(); st != 'T' {
		t.Fatalf("after COMMIT AND CHAIN: status %c", st)
	}
	mustExec(t, z, "COMMIT")
}
