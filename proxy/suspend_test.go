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

// chunk reads one Execute's answer: its rows (as text), and how it ended
// ("s" for PortalSuspended, the command tag, or "E[code]").
func (r *rawConn) chunk(t *testing.T) ([]string, string) {
	t.Helper()
	var rows []string
	for {
		m, err := r.fe.Receive()
		if err != nil {
			t.Fatalf("after %d rows: %v", len(rows), err)
		}
		switch m := m.(type) {
		case *pgproto3.DataRow:
			var vs []string
			for _, v := range m.Values {
				vs = append(vs, string(v))
			}
			rows = append(rows, strings.Join(vs, "|"))
		case *pgproto3.PortalSuspended:
			return rows, "s"
		case *pgproto3.CommandComplete:
			return rows, string(m.CommandTag)
		case *pgproto3.ErrorResponse:
			return rows, "E[" + m.Code + "]"
		}
	}
}

// An Execute with a row limit over a read merged from several shards
// answers at most that many rows and PortalSuspended, and the next
// Execute continues, as Postgres does with one portal: the rows are the
// unlimited query's, in order, and the last Execute's tag counts its own
// rows (as Postgres' does). The shards' connections come back clean: a
// pool of one connection per cluster serves the next statement at once.
func TestExtRowLimitedMerge(t *testing.T) {
	p := startProxy(t, shopTopology(""), func(c *Config) { c.PoolSize = 1; c.MaxWait = 2 * time.Second })
	c := setupShop(t, p)
	ctx := context.Background()
	var vals []string
	for i := 1; i <= 3000; i++ {
		vals = append(vals, fmt.Sprintf("(%d, %d, %d.5)", i, i%97, i%1000))
	}
	mustExec(t, c, "INSERT INTO orders (id, customer_id, total) VALUES "+strings.Join(vals, ","))
	// Collation facts cached (see TestExtDisconnectReturnsConnections).
	if _, err := c.PgConn().Exec(ctx, "SELECT count(*) FROM customers").ReadAll(); err != nil {
		t.Fatal(err)
	}
	c.Close(ctx)
	// The next client gets both clusters' connections at once.
	poolFree := func(t *testing.T) {
		t.Helper()
		next := connect(t, p.dsn())
		defer next.Close(ctx)
		start := time.Now()
		var n int
		if err := next.QueryRow(ctx, "SELECT count(*) FROM orders").Scan(&n); err != nil || n != 3000 {
			t.Fatalf("next client: %d, %v", n, err)
		}
		if d := time.Since(start); d > time.Second {
			t.Fatalf("next client waited %v for a connection", d)
		}
	}
	queries := map[string]string{
		"ORDER BY":  "SELECT id, total FROM orders ORDER BY total DESC, id",
		"aggregate": "SELECT customer_id, count(*), sum(total) FROM orders GROUP BY customer_id ORDER BY customer_id",
		"single":    "SELECT g FROM generate_series(1, 10) g", // one cluster: Postgres' own answer
	}
	for name, q := range queries {
		t.Run(name, func(t *testing.T) {
			r := dialRaw(t, p.addr)
			r.login(t)
			r.sendAll(t, &pgproto3.Parse{Query: q}, &pgproto3.Bind{}, &pgproto3.Execute{}, &pgproto3.Sync{})
			r.until(t, '2')
			want, tag := r.chunk(t)
			r.until(t, 'Z')
			if len(want) < 10 || !strings.HasPrefix(tag, "SELECT") {
				t.Fatalf("unlimited: %d rows, %s", len(want), tag)
			}
			r.sendAll(t, &pgproto3.Parse{Query: q}, &pgproto3.Bind{}, &pgproto3.Execute{MaxRows: 3}, &pgproto3.Flush{})
			r.until(t, '2')
			var got []string
			for {
				rows, end := r.chunk(t)
				got = append(got, rows...)
				if end != "s" {
					if wantTag := fmt.Sprintf("SELECT %d", len(rows)); end != wantTag || len(rows) >= 3 {
						t.Fatalf("last Execute: %d rows, %s, want %s", len(rows), end, wantTag)
					}
					break
				}
				if len(rows) != 3 {
					t.Fatalf("suspended after %d rows, want 3", len(rows))
				}
				r.sendAll(t, &pgproto3.Execute{MaxRows: 3}, &pgproto3.Flush{})
			}
			// At its end the portal answers SELECT 0, as Postgres' does.
			r.sendAll(t, &pgproto3.Execute{MaxRows: 3}, &pgproto3.Sync{})
			if rows, end := r.chunk(t); len(rows) != 0 || end != "SELECT 0" {
				t.Fatalf("Execute at the end: %d rows, %s", len(rows), end)
			}
			r.until(t, 'Z')
			if !slices.Equal(got, want) {
				t.Fatalf("row-limited rows differ: %d rows, want %d\n%v\n%v", len(got), len(want), got[:min(len(got), 10)], want[:10])
			}
			poolFree(t)
		})
	}

	const q = "SELECT id, total FROM orders ORDER BY total, id"
	cases := map[string]func(t *testing.T, r *rawConn){
		"Close mid-way": func(t *testing.T, r *rawConn) {
			r.sendAll(t, &pgproto3.Close{ObjectType: 'P', Name: "p"}, &pgproto3.Sync{})
			if got := r.until(t, 'Z'); got != "3Z" {
				t.Fatalf("Close: %s", got)
			}
			r.sendAll(t, &pgproto3.Execute{Portal: "p"}, &pgproto3.Sync{})
			if got := r.until(t, 'Z'); got != "E[34000]Z" {
				t.Fatalf("Execute after Close: %s, want 34000", got)
			}
		},
		"Sync mid-way": func(t *testing.T, r *rawConn) {
			r.sendAll(t, &pgproto3.Sync{})
			r.until(t, 'Z')
			r.sendAll(t, &pgproto3.Execute{Portal: "p", MaxRows: 3}, &pgproto3.Sync{})
			if got := r.until(t, 'Z'); got != "E[34000]Z" {
				t.Fatalf("Execute after Sync: %s, want 34000", got)
			}
		},
		"named portal bound again": func(t *testing.T, r *rawConn) {
			r.sendAll(t, &pgproto3.Bind{DestinationPortal: "p"}, &pgproto3.Sync{})
			if got := r.until(t, 'Z'); got != "E[42P03]Z" {
				t.Fatalf("Bind of an open portal: %s, want 42P03", got)
			}
		},
		"unnamed portal bound again": func(t *testing.T, r *rawConn) {
			// It replaces the suspended one, which is finished.
			r.sendAll(t, &pgproto3.Bind{}, &pgproto3.Execute{MaxRows: 2}, &pgproto3.Sync{})
			r.until(t, '2')
			if rows, end := r.chunk(t); len(rows) != 2 || rows[0] != "1000|0.50" || end != "s" {
				t.Fatalf("new portal: %v %s", rows, end)
			}
			r.until(t, 'Z')
		},
		"disconnect": func(t *testing.T, r *rawConn) {},
		"another statement": func(t *testing.T, r *rawConn) {
			// Its connections are busy: another statement is refused, the
			// merge goes on.
			r.sendAll(t, &pgproto3.Parse{Name: "x", Query: "SELECT count(*) FROM orders"}, &pgproto3.Bind{PreparedStatement: "x"},
				&pgproto3.Execute{}, &pgproto3.Flush{})
			if got := r.until(t, 'E'); got != "1E[0A000]" {
				t.Fatalf("other statement: %s, want 0A000", got)
			}
			r.sendAll(t, &pgproto3.Sync{})
			r.until(t, 'Z')
		},
		"transaction": func(t *testing.T, r *rawConn) {
			// In a transaction block the portal outlives Sync; another
			// statement on its clusters is refused; ROLLBACK ends it.
			r.sendAll(t, &pgproto3.Sync{})
			r.until(t, 'Z')
			r.sendAll(t, &pgproto3.Execute{Portal: "p", MaxRows: 3}, &pgproto3.Sync{})
			if rows, end := r.chunk(t); len(rows) != 3 || rows[0] != "1|1.50" || end != "s" {
				t.Fatalf("after Sync: %v %s", rows, end)
			}
			r.until(t, 'Z')
			r.sendAll(t, &pgproto3.Query{String: "SELECT count(*) FROM orders"})
			if got := r.until(t, 'Z'); got != "E[0A000]Z" {
				t.Fatalf("other statement: %s, want 0A000", got)
			}
			r.sendAll(t, &pgproto3.Query{String: "ROLLBACK"})
			if got := r.until(t, 'Z'); got != "CZ" {
				t.Fatalf("ROLLBACK: %s", got)
			}
		},
	}
	for name, run := range cases {
		t.Run(name, func(t *testing.T) {
			r, rows, end := openLimited(t, p, name == "transaction", strings.HasPrefix(name, "unnamed"), q, 3)
			if len(rows) != 3 || rows[0] != "1000|0.50" || rows[2] != "3000|0.50" || end != "s" {
				t.Fatalf("first chunk: %v %s", rows, end)
			}
			run(t, r)
			r.Close()
			poolFree(t)
		})
	}
}
