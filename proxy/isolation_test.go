package proxy

import (
	"context"
	"strings"
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

// COMMIT AND CHAIN and ROLLBACK AND CHAIN start the next transaction with
// the characteristics the ended one had at its end, as Postgres does:
// BEGIN's modes and what SET TRANSACTION and SET LOCAL transaction_* set
// in it, on every cluster the chained transaction touches (a scatter read
// sees them on each shard, SHOW on main). Before, the chained transaction
// kept BEGIN's modes alone.
func TestChainCarriesCharacteristics(t *testing.T) {
	p := startProxy(t, shopTopology(""), nil)
	c := setupShop(t, p)
	mustExec(t, c, "INSERT INTO customers SELECT g, 'c' || g FROM generate_series(1, 20) g")
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		stmts []string
		want  string
	}{
		{"SET TRANSACTION", []string{"BEGIN", "SET TRANSACTION ISOLATION LEVEL SERIALIZABLE, READ ONLY, DEFERRABLE", "SELECT count(*) FROM customers", "COMMIT AND CHAIN"}, "serializable on on"},
		{"SET LOCAL over BEGIN's", []string{"BEGIN ISOLATION LEVEL REPEATABLE READ", "SET LOCAL transaction_read_only TO on", "COMMIT AND CHAIN"}, "repeatable read on off"},
		{"set_config", []string{"BEGIN", "SELECT set_config('transaction_read_only', 'on', true)", "COMMIT AND CHAIN"}, "read committed on off"},
		{"aborted", []string{"BEGIN", "SET TRANSACTION ISOLATION LEVEL SERIALIZABLE", "SELECT 1/0", "ROLLBACK AND CHAIN"}, "serializable off off"},
		{"chained twice", []string{"BEGIN READ ONLY", "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ", "COMMIT AND CHAIN", "COMMIT AND CHAIN"}, "repeatable read on off"},
	} {
		for _, s := range tc.stmts {
			if _, err := c.Exec(ctx, s); err != nil && s != "SELECT 1/0" {
				t.Fatalf("%s: %s: %v", tc.name, s, err)
			}
		}
		rows, err := c.Query(ctx, "SELECT DISTINCT current_setting('transaction_isolation') || ' ' || current_setting('transaction_read_only') || ' ' || current_setting('transaction_deferrable') FROM customers")
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var got []string
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			got = append(got, s)
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if len(got) != 1 || got[0] != tc.want {
			t.Errorf("%s: the chained transaction on the shards reads %q, want %q", tc.name, got, tc.want)
		}
		var iso string
		if err := c.QueryRow(ctx, "SHOW transaction_isolation").Scan(&iso); err != nil || !strings.HasPrefix(tc.want, iso+" ") {
			t.Errorf("%s: SHOW transaction_isolation = %q (%v), want the start of %q", tc.name, iso, err, tc.want)
		}
		mustExec(t, c, "ROLLBACK")
	}
}
