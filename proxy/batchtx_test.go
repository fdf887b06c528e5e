package proxy

import (
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgproto3"
)

// A batch outside a transaction block is one implicit transaction, as in
// Postgres, also when it runs on several clusters: an error rolls back
// the batch's writes on every cluster, before and after it (psycopg 3's
// pipeline mode, pgjdbc's batches without reWriteBatchedInserts).
func TestExtBatchAcrossClustersIsOneTransaction(t *testing.T) {
	p := startProxy(t, shopTopology(""), nil)
	c := setupShop(t, p)
	a, b := customerOn(t, p, "pg0"), customerOn(t, p, "pg1")
	mustExec(t, c, "INSERT INTO orders (id, customer_id, total) VALUES (100, $1, 1), (101, $2, 1)", a, b)
	r := dialRaw(t, p.addr)
	r.login(t)
	insert := func(id, customer int) []pgproto3.FrontendMessage {
		return []pgproto3.FrontendMessage{
			&pgproto3.Parse{Query: fmt.Sprintf("INSERT INTO orders (id, customer_id, total) VALUES (%d, %d, 1)", id, customer)},
			&pgproto3.Bind{}, &pgproto3.Execute{}}
	}
	read := func(q string) []pgproto3.FrontendMessage {
		return []pgproto3.FrontendMessage{&pgproto3.Parse{Query: q}, &pgproto3.Bind{}, &pgproto3.Execute{}}
	}
	batch := func(parts ...[]pgproto3.FrontendMessage) []pgproto3.FrontendMessage {
		var ms []pgproto3.FrontendMessage
		for _, part := range parts {
			ms = append(ms, part...)
		}
		return append(ms, &pgproto3.Sync{})
	}
	for _, tc := range []struct {
		name string
		msgs []pgproto3.FrontendMessage
		want string
		rows int // orders with id 1..9 afterwards
	}{
		{"write, error on its cluster, write on the other", batch(insert(1, a), insert(100, a), insert(2, b)), "12C12E[23505]Z", 0},
		{"error, then writes on the other cluster", batch(insert(100, a), insert(3, b), insert(4, b)), "12E[23505]Z", 0},
		{"write, then a failing read on the other cluster", batch(insert(5, a), read(fmt.Sprintf("SELECT 1/(id - 101) FROM orders WHERE customer_id = %d", b))), "12C12E[22012]Z", 0},
		{"writes on both clusters", batch(insert(6, a), insert(7, b), read("SELECT id FROM orders WHERE id < 10")), "12C12C12DDCZ", 2},
	} {
		r.sendAll(t, tc.msgs...)
		if got := r.until(t, 'Z'); got != tc.want {
			t.Fatalf("%s: %s, want %s", tc.name, got, tc.want)
		}
		if n := count(t, p.dsn(), "SELECT count(*) FROM orders WHERE id < 10"); n != tc.rows {
			t.Fatalf("%s: %d orders with id < 10 afterwards, want %d", tc.name, n, tc.rows)
		}
	}
}
