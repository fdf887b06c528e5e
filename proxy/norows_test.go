package proxy

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgproto3"
)

// An Execute's row limit means nothing to a statement that returns no
// rows ("ignored otherwise"), however many clusters it runs on: pgjdbc
// sends a limit of 1 with every executeUpdate and batch.
func TestExtRowLimitIgnoredByWrites(t *testing.T) {
	p := startProxy(t, shopTopology(""), nil)
	setupShop(t, p)
	r := dialRaw(t, p.addr)
	r.login(t)
	for _, q := range []string{
		"INSERT INTO orders (id, customer_id, total) VALUES (1, 1, 1), (2, 2, 2), (3, 3, 3), (4, 4, 4), (5, 5, 5), (6, 6, 6), (7, 7, 7), (8, 8, 8)",
		"UPDATE orders SET total = total + 10",
		"DELETE FROM orders WHERE total > 16",
		"INSERT INTO countries (code, name) VALUES ('de', 'Germany')",
		"CREATE INDEX orders_total ON orders (total)",
	} {
		r.sendAll(t, &pgproto3.Parse{Query: q}, &pgproto3.Bind{}, &pgproto3.Execute{MaxRows: 1}, &pgproto3.Sync{})
		if got := r.until(t, 'Z'); got != "12CZ" {
			t.Fatalf("%s with a row limit of 1: %s, want 12CZ", q, got)
		}
	}
	if n := count(t, p.dsn(), "SELECT count(*) FROM orders WHERE total BETWEEN 11 AND 16"); n != 6 {
		t.Fatalf("orders after the writes: %d, want 6", n)
	}
	for _, cl := range env.Clusters {
		var n int
		conn := connect(t, cl.DSN("shop"))
		if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM countries").Scan(&n); err != nil || n != 1 {
			t.Fatalf("countries on %s: %d, %v; want 1", cl.Name, n, err)
		}
		if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM pg_indexes WHERE indexname = 'orders_total'").Scan(&n); err != nil || n != 1 {
			t.Fatalf("index on %s: %d, %v; want 1", cl.Name, n, err)
		}
	}
}
