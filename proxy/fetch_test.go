package proxy

import (
	"fmt"
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
