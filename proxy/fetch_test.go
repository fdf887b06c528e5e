package proxy

import (
	"fmt"
	"slices"
	"sort"
	"testing"

	"github.com/jackc/pgx/v5/pgproto3"
)

// fetchEachWithSync reads portal "" in a transaction block as pgjdbc's
// setFetchSize does: every Execute(max) is followed by a Sync, and the
// first batch is Parse, Bind, Describe, Execute, Sync.
func fetchEachWithSync(t *testing.T, r *rawConn, q string, max uint32) []string {
	t.Helper()
	r.query(t, "BEGIN")
	r.sendAll(t, &pgproto3.Parse{Query: q}, &pgproto3.Bind{}, &pgproto3.Describe{ObjectType: 'P'},
		&pgproto3.Execute{MaxRows: max}, &pgproto3.Sync{})
	r.until(t, 'T')
	var got []string
	for {
		rows, end := r.chunk(t)
		r.until(t, 'Z')
		got = append(got, rows...)
		if end != "s" {
			if wantTag := fmt.Sprintf("SELECT %d", len(rows)); end != wantTag {
				t.Fatalf("after %d rows: %s, want %s", len(got), end, wantTag)
			}
			break
		}
		if len(rows) != int(max) {
			t.Fatalf("suspended after %d rows, want %d", len(rows), max)
		}
		r.sendAll(t, &pgproto3.Execute{MaxRows: max}, &pgproto3.Sync{})
	}
	r.query(t, "COMMIT")
	return got
}

// pgjdbc's setFetchSize over a merged ORDER BY read: in a transaction
// block, Execute(500) then Sync, again and again, over many thousand rows.
// Each Execute answers its 500 rows and PortalSuspended (the second one
// used to answer nothing, ever: Sync was sent to the shards before the
// merge suspended, and the rows left in the shards' sockets were read
// and dropped in search of their ReadyForQuery).
func TestExtRowLimitedMergeSyncEach(t *testing.T) {
	p := startProxy(t, shopTopology(""), func(c *Config) { c.PoolSize = 1 })
	const n = 20000
	setupShop(t, p)
	fillOrders(t, p, n)
	r := rawSession(t, p.addr)
	got := fetchEachWithSync(t, r, "SELECT id, customer_id, total FROM orders ORDER BY id", 500)
	if len(got) != n || got[0] != "1|2|1.00" || got[n-1] != fmt.Sprintf("%d|%d|%d.00", n, n%37+1, n) {
		t.Fatalf("%d rows, want %d: %s ... %s", len(got), n, got[0], got[len(got)-1])
	}
	for i, row := range got {
		if want := fmt.Sprintf("%d|%d|%d.00", i+1, (i+1)%37+1, i+1); row != want {
			t.Fatalf("row %d: %s, want %s", i, row, want)
		}
	}
	// The connections came back clean: the session goes on.
	r.query(t, "SELECT count(*) FROM orders")
}

// A row-limited Execute of a read across shards without ORDER BY (pgjdbc's
// setFetchSize, pg-cursor's read(n), pg-query-stream) answers the rows of
// the unlimited read, in some order, at most n per Execute, with
// PortalSuspended while more may come; between Executes in a transaction
// block the shards' connections serve other statements. Before, it was
// refused (0A000 "fetching a limited number of rows from a statement that
// runs on several shards is not supported").
func TestExtRowLimitedScatter(t *testing.T) {
	p := startProxy(t, shopTopology(""), func(c *Config) { c.PoolSize = 1 })
	const n = 2500
	setupShop(t, p)
	fillOrders(t, p, n)
	const q = "SELECT id, customer_id FROM orders"
	var want []string
	for i := 1; i <= n; i++ {
		want = append(want, fmt.Sprintf("%d|%d", i, i%37+1))
	}
	check := func(t *testing.T, got []string) {
		t.Helper()
		sort.Strings(got)
		sort.Strings(want)
		if !slices.Equal(got, want) {
			t.Fatalf("%d rows, want %d", len(got), len(want))
		}
	}
	for _, max := range []uint32{1, 300, 500, n, 5000} {
		t.Run(fmt.Sprintf("Sync each %d", max), func(t *testing.T) {
			r := rawSession(t, p.addr)
			check(t, fetchEachWithSync(t, r, q, max))
		})
	}
	t.Run("Flush, outside a transaction", func(t *testing.T) {
		r, rows, end := openLimited(t, p, false, false, q, 700)
		if len(rows) != 700 || end != "s" {
			t.Fatalf("first chunk: %d rows, %s", len(rows), end)
		}
		r.sendAll(t, &pgproto3.Execute{Portal: "p", MaxRows: 700}, &pgproto3.Flush{})
		got := append(rows, r.readLimited(t, "p", 700)...)
		r.sendAll(t, &pgproto3.Sync{})
		r.until(t, 'Z')
		check(t, got)
		// Sync ended the portal, as in Postgres.
		r.sendAll(t, &pgproto3.Execute{Portal: "p", MaxRows: 700}, &pgproto3.Sync{})
		if got := r.until(t, 'Z'); got != "E[34000]Z" {
			t.Fatalf("Execute after Sync: %s, want 34000", got)
		}
	})
	t.Run("other statements in between", func(t *testing.T) {
		r, rows, end := openLimited(t, p, true, false, q, 1000)
		if len(rows) != 1000 || end != "s" {
			t.Fatalf("first chunk: %d rows, %s", len(rows), end)
		}
		r.sendAll(t, &pgproto3.Sync{})
		r.until(t, 'Z')
		r.query(t, "UPDATE orders SET total = 0 WHERE id = 1")
		r.query(t, "SELECT count(*) FROM orders")
		r.sendAll(t, &pgproto3.Execute{Portal: "p"}, &pgproto3.Sync{})
		rest, end := r.chunk(t)
		r.until(t, 'Z')
		if end != fmt.Sprintf("SELECT %d", n-1000) {
			t.Fatalf("unlimited Execute of the rest: %d rows, %s", len(rest), end)
		}
		r.query(t, "ROLLBACK")
		check(t, append(rows, rest...))
	})
}
