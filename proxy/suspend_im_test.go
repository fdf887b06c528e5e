package proxy

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
)

// imJoin joins two groups on a non-key column: it runs over intermediate
// results (100 rows with startInter's data).
const imJoin = "SELECT c.id, c.name, p.sku FROM customers c JOIN products p ON p.name = c.name ORDER BY c.id"

// waitClean waits until no temporary table of intermediate results is
// left on the coordinator and every backend connection is idle in its
// pool (a disconnected session is cleaned up after the client is gone).
func waitClean(t *testing.T, p *testProxy, what string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		busy := ""
		for name, st := range poolStats(p.srv) {
			if st[0] != st[1] {
				busy += fmt.Sprintf(" %s: %d open, %d idle;", name, st[0], st[1])
			}
		}
		n := tempPulls(t)
		if n == 0 && busy == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d temporary tables left on the coordinator, connections:%s", what, n, busy)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// openLimited logs in to p (and BEGINs, inTx), binds q to portal "p" (or
// the unnamed one) and executes it with row limit max; it returns the
// connection and the Execute's answer (see chunk).
func openLimited(t *testing.T, p *testProxy, inTx, unnamed bool, q string, max uint32) (*rawConn, []string, string) {
	t.Helper()
	r := dialRaw(t, p.addr)
	r.login(t)
	if inTx {
		r.sendAll(t, &pgproto3.Query{String: "BEGIN"})
		r.until(t, 'Z')
	}
	portal := "p"
	if unnamed {
		portal = ""
	}
	r.sendAll(t, &pgproto3.Parse{Query: q}, &pgproto3.Bind{DestinationPortal: portal},
		&pgproto3.Execute{Portal: portal, MaxRows: max}, &pgproto3.Flush{})
	r.until(t, '2')
	rows, end := r.chunk(t)
	return r, rows, end
}

// readLimited executes the portal with row limit max until its end and
// returns its rows; each Execute before the last must answer max rows and
// PortalSuspended, the last fewer rows and SELECT n of its own rows.
func (r *rawConn) readLimited(t *testing.T, portal string, max uint32) []string {
	t.Helper()
	var got []string
	for {
		rows, end := r.chunk(t)
		got = append(got, rows...)
		if end != "s" {
			if wantTag := fmt.Sprintf("SELECT %d", len(rows)); end != wantTag || len(rows) >= int(max) {
				t.Fatalf("last Execute: %d rows, %s, want %s", len(rows), end, wantTag)
			}
			return got
		}
		if len(rows) != int(max) {
			t.Fatalf("suspended after %d rows, want %d", len(rows), max)
		}
		r.sendAll(t, &pgproto3.Execute{Portal: portal, MaxRows: max}, &pgproto3.Flush{})
	}
}

// An Execute with a row limit over a read computed on the coordinator over
// intermediate results (a join of two groups, a window function) answers
// at most that many rows and PortalSuspended, and the next Execute goes
// on, in and out of a transaction block: the rows are the unlimited
// read's, in order; an Execute at the end answers SELECT 0. The
// coordinator's portal, its temporary tables and its connection are held
// until the portal ends (its last row, Close, Sync outside a transaction
// block, Bind of the unnamed portal, COMMIT, ROLLBACK, an error,
// disconnection), and nothing is left then, with one connection per
// cluster. Another statement on the coordinator's cluster meanwhile is
// refused (0A000), as beside a suspended merge. Before, the row limit was
// ignored: every row came at the first Execute.
func TestExtRowLimitedIntermediate(t *testing.T) {
	p, c := startInter(t, "")
	c.Close(context.Background())
	queries := map[string]string{
		"join":   imJoin,
		"window": "SELECT id, row_number() OVER (ORDER BY id DESC) FROM customers ORDER BY id",
	}
	for name, q := range queries {
		for _, inTx := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s tx=%v", name, inTx), func(t *testing.T) {
				r := dialRaw(t, p.addr)
				defer r.Close()
				r.login(t)
				r.sendAll(t, &pgproto3.Parse{Query: q}, &pgproto3.Bind{}, &pgproto3.Execute{}, &pgproto3.Sync{})
				r.until(t, '2')
				want, tag := r.chunk(t)
				r.until(t, 'Z')
				if len(want) != 100 || tag != "SELECT 100" {
					t.Fatalf("unlimited: %d rows, %s", len(want), tag)
				}
				if inTx {
					r.sendAll(t, &pgproto3.Query{String: "BEGIN"})
					r.until(t, 'Z')
				}
				r.sendAll(t, &pgproto3.Parse{Query: q}, &pgproto3.Bind{DestinationPortal: "p"}, &pgproto3.Describe{ObjectType: 'P', Name: "p"},
					&pgproto3.Execute{Portal: "p", MaxRows: 7}, &pgproto3.Flush{})
				if got := r.until(t, 'T'); got != "12T" {
					t.Fatalf("Parse, Bind, Describe: %s", got)
				}
				got := r.readLimited(t, "p", 7)
				r.sendAll(t, &pgproto3.Execute{Portal: "p", MaxRows: 7}, &pgproto3.Sync{})
				if rows, end := r.chunk(t); len(rows) != 0 || end != "SELECT 0" {
					t.Fatalf("Execute at the end: %d rows, %s", len(rows), end)
				}
				r.until(t, 'Z')
				if !slices.Equal(got, want) {
					t.Fatalf("row-limited rows differ: %d rows, want %d\n%v\n%v", len(got), len(want), got[:min(len(got), 10)], want[:10])
				}
				if inTx {
					r.sendAll(t, &pgproto3.Query{String: "COMMIT"})
					r.until(t, 'Z')
				}
				waitClean(t, p, "after the last row")
			})
		}
	}

	// Each case starts with 7 rows of imJoin read from portal "p" (the
	// unnamed portal for "unnamed ..."), suspended; "tx" cases in a
	// transaction block.
	expect := func(t *testing.T, r *rawConn, what, want string) {
		t.Helper()
		if got := r.until(t, 'Z'); got != want {
			t.Fatalf("%s: %s, want %s", what, got, want)
		}
	}
	goesOn := func(t *testing.T, r *rawConn, portal string) {
		t.Helper()
		r.sendAll(t, &pgproto3.Execute{Portal: portal, MaxRows: 7}, &pgproto3.Sync{})
		if rows, end := r.chunk(t); len(rows) != 7 || !strings.HasPrefix(rows[0], "8|n8|") || end != "s" {
			t.Fatalf("next Execute: %v %s", rows, end)
		}
		r.until(t, 'Z')
	}
	cases := map[string]func(t *testing.T, r *rawConn){
		"Close": func(t *testing.T, r *rawConn) {
			r.sendAll(t, &pgproto3.Close{ObjectType: 'P', Name: "p"}, &pgproto3.Sync{})
			expect(t, r, "Close", "3Z")
			r.sendAll(t, &pgproto3.Execute{Portal: "p"}, &pgproto3.Sync{})
			expect(t, r, "Execute after Close", "E[34000]Z")
		},
		"tx Close": func(t *testing.T, r *rawConn) {
			r.sendAll(t, &pgproto3.Close{ObjectType: 'P', Name: "p"}, &pgproto3.Sync{})
			expect(t, r, "Close", "3Z")
			// The coordinator is free for the transaction's next statement.
			r.sendAll(t, &pgproto3.Query{String: "SELECT count(*) FROM customers c JOIN products p ON p.name = c.name"})
			expect(t, r, "next read", "TDCZ")
			r.sendAll(t, &pgproto3.Query{String: "COMMIT"})
			expect(t, r, "COMMIT", "CZ")
		},
		"Sync": func(t *testing.T, r *rawConn) {
			r.sendAll(t, &pgproto3.Sync{})
			expect(t, r, "Sync", "Z")
			r.sendAll(t, &pgproto3.Execute{Portal: "p", MaxRows: 7}, &pgproto3.Sync{})
			expect(t, r, "Execute after Sync", "E[34000]Z")
		},
		"named portal bound again": func(t *testing.T, r *rawConn) {
			r.sendAll(t, &pgproto3.Bind{DestinationPortal: "p"}, &pgproto3.Sync{})
			expect(t, r, "Bind of an open portal", "E[42P03]Z")
		},
		"unnamed portal bound again": func(t *testing.T, r *rawConn) {
			// The new portal replaces the suspended one, which ends.
			r.sendAll(t, &pgproto3.Bind{}, &pgproto3.Execute{MaxRows: 2}, &pgproto3.Sync{})
			r.until(t, '2')
			if rows, end := r.chunk(t); len(rows) != 2 || !strings.HasPrefix(rows[0], "1|n1|") || end != "s" {
				t.Fatalf("new portal: %v %s", rows, end)
			}
			r.until(t, 'Z')
		},
		"disconnect":    func(t *testing.T, r *rawConn) {},
		"tx disconnect": func(t *testing.T, r *rawConn) { goesOn(t, r, "p") },
		"another statement": func(t *testing.T, r *rawConn) {
			// The coordinator's connection is busy: another statement on
			// its cluster is refused; the portal ends at Sync.
			r.sendAll(t, &pgproto3.Parse{Name: "x", Query: "SELECT count(*) FROM customers"}, &pgproto3.Bind{PreparedStatement: "x"},
				&pgproto3.Execute{}, &pgproto3.Sync{})
			expect(t, r, "other statement", "1E[0A000]Z")
		},
		"tx another statement": func(t *testing.T, r *rawConn) {
			// The portal outlives Sync in a transaction block; another
			// statement on its cluster is refused (and aborts the
			// transaction); ROLLBACK ends both.
			goesOn(t, r, "p")
			r.sendAll(t, &pgproto3.Query{String: "SELECT count(*) FROM customers"})
			expect(t, r, "other statement", "E[0A000]Z")
			r.sendAll(t, &pgproto3.Query{String: "ROLLBACK"})
			expect(t, r, "ROLLBACK", "CZ")
		},
		"tx COMMIT": func(t *testing.T, r *rawConn) {
			goesOn(t, r, "p")
			r.sendAll(t, &pgproto3.Query{String: "COMMIT"})
			expect(t, r, "COMMIT", "CZ")
		},
		"tx unnamed portal continued unlimited": func(t *testing.T, r *rawConn) {
			r.sendAll(t, &pgproto3.Execute{}, &pgproto3.Sync{})
			if rows, end := r.chunk(t); len(rows) != 93 || end != "SELECT 93" {
				t.Fatalf("the rest: %d rows, %s", len(rows), end)
			}
			r.until(t, 'Z')
			r.sendAll(t, &pgproto3.Query{String: "COMMIT"})
			expect(t, r, "COMMIT", "CZ")
		},
	}
	for name, run := range cases {
		t.Run(name, func(t *testing.T) {
			r, rows, end := openLimited(t, p, strings.HasPrefix(name, "tx "), strings.Contains(name, "unnamed"), imJoin, 7)
			defer r.Close()
			if len(rows) != 7 || !strings.HasPrefix(rows[0], "1|n1|") || end != "s" {
				t.Fatalf("first chunk: %d rows, %v, %s", len(rows), rows[:min(len(rows), 8)], end)
			}
			// The coordinator's transaction (with its temporary tables)
			// stays open while the portal is suspended.
			if n := clusterCount(t, 0, "SELECT count(*) FROM pg_stat_activity WHERE datname = 'shop' AND state = 'idle in transaction'"); n != 1 {
				t.Fatalf("%d transactions open on the coordinator while suspended, want 1", n)
			}
			run(t, r)
			r.Close()
			waitClean(t, p, name)
		})
	}
}

// An error of the coordinator's statement at a later Execute ends the
// portal and gives everything back.
func TestExtRowLimitedIntermediateError(t *testing.T) {
	p, c := startInter(t, "")
	c.Close(context.Background())
	for _, inTx := range []bool{false, true} {
		// Row 50 divides by zero; the 49 rows before it come first.
		q := "SELECT id, 100 / (50 - id) FROM (SELECT c.id FROM customers c JOIN products p ON p.name = c.name ORDER BY c.id OFFSET 0) s"
		r, rows, end := openLimited(t, p, inTx, true, q, 7)
		n := len(rows)
		for end == "s" {
			r.sendAll(t, &pgproto3.Execute{MaxRows: 7}, &pgproto3.Flush{})
			rows, end = r.chunk(t)
			n += len(rows)
		}
		if end != "E[22012]" {
			t.Fatalf("after %d rows: %s, want 22012", n, end)
		}
		if n != 49 {
			t.Fatalf("%d rows before the error, want 49", n)
		}
		r.sendAll(t, &pgproto3.Sync{})
		r.until(t, 'Z')
		if inTx {
			r.sendAll(t, &pgproto3.Query{String: "ROLLBACK"})
			r.until(t, 'Z')
		}
		r.Close()
		waitClean(t, p, fmt.Sprintf("error, tx=%v", inTx))
	}
}

// An Execute with a row limit over INSERT ... SELECT across shards with
// RETURNING is refused before it writes (it sent every row before); the
// unlimited one returns every row.
func TestExtRowLimitedInsertSelectReturning(t *testing.T) {
	p := startProxy(t, shopTopology(""), nil) // the write's source read leases a coordinator connection of its own
	c := setupShop(t, p)
	mustExec(t, c, "INSERT INTO customers (id, name) SELECT g, 'n' || g FROM generate_series(1, 100) g")
	c.Close(context.Background())
	r := dialRaw(t, p.addr)
	defer r.Close()
	r.login(t)
	const q = "INSERT INTO orders (id, customer_id, total) SELECT id, id, 1 FROM customers RETURNING id"
	r.sendAll(t, &pgproto3.Parse{Query: q}, &pgproto3.Bind{}, &pgproto3.Execute{MaxRows: 2}, &pgproto3.Sync{})
	if got := r.until(t, 'Z'); got != "12E[0A000]Z" {
		t.Fatalf("row-limited: %s, want 0A000", got)
	}
	if n := count(t, p.dsn(), "SELECT count(*) FROM orders"); n != 0 {
		t.Fatalf("%d orders written by the refused statement", n)
	}
	r.sendAll(t, &pgproto3.Parse{Query: q}, &pgproto3.Bind{}, &pgproto3.Execute{}, &pgproto3.Sync{})
	r.until(t, '2')
	if rows, end := r.chunk(t); len(rows) != 100 || end != "INSERT 0 100" {
		t.Fatalf("unlimited: %d rows, %s", len(rows), end)
	}
	r.until(t, 'Z')
	waitClean(t, p, "INSERT ... SELECT")
}
