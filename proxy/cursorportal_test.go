package proxy

import (
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgproto3"
)

// extQuery runs q as psycopg 3's send_query_params does (Parse, Bind,
// Describe portal, Execute, Sync) and returns the message types read up
// to ReadyForQuery and the rows' first columns.
func (r *rawConn) extQuery(t *testing.T, q string) (string, []string) {
	t.Helper()
	r.sendAll(t, &pgproto3.Parse{Query: q}, &pgproto3.Bind{}, &pgproto3.Describe{ObjectType: 'P'},
		&pgproto3.Execute{}, &pgproto3.Sync{})
	return r.typesAndRows(t)
}

// typesAndRows reads up to ReadyForQuery: the message types (D once per
// run of rows) and the rows' first columns.
func (r *rawConn) typesAndRows(t *testing.T) (string, []string) {
	t.Helper()
	var types strings.Builder
	var rows []string
	for {
		m, err := r.fe.Receive()
		if err != nil {
			t.Fatalf("after %q: %v", types.String(), err)
		}
		c := msgType(m)
		switch m := m.(type) {
		case *pgproto3.DataRow:
			rows = append(rows, string(m.Values[0]))
			if strings.HasSuffix(types.String(), "D") {
				continue
			}
		case *pgproto3.RowDescription:
			var names []string
			for _, f := range m.Fields {
				names = append(names, string(f.Name))
			}
			types.WriteString("T(" + strings.Join(names, ",") + ")")
			continue
		case *pgproto3.ErrorResponse:
			types.WriteString("E[" + m.Code + "]")
			continue
		case *pgproto3.CommandComplete:
			types.WriteString("C(" + string(m.CommandTag) + ")")
			continue
		}
		types.WriteByte(c)
		if c == 'Z' {
			return types.String(), rows
		}
	}
}

// psycopg 3's named cursors (conn.cursor(name="c1")): DECLARE through the
// extended protocol, then Describe of the portal "c1" (in Postgres a
// DECLAREd cursor is a portal), then FETCH FORWARD n FROM "c1" through the
// extended protocol, MOVE, CLOSE. Execute of the cursor's portal works
// too, with a row limit. Each for a cursor on one shard and one merged
// across shards (ORDER BY). Before, Describe of "c1" was 34000 portal "c1"
// does not exist, and a FETCH of a merged cursor through the extended
// protocol 0A000.
func TestPsycopgNamedCursor(t *testing.T) {
	p := startProxy(t, shopTopology(""), nil)
	setupShop(t, p)
	fillOrders(t, p, 2500)
	ids := func(from, to, step int) string {
		var out []string
		for i := from; i <= to; i += step {
			out = append(out, fmt.Sprint(i))
		}
		return strings.Join(out, " ")
	}
	cases := []struct {
		name, query string
		first6      string // the first six ids
	}{
		{"one shard", "SELECT id, total FROM orders WHERE customer_id = 5 ORDER BY id", ids(4, 4+5*37, 37)},
		{"merged", "SELECT id, total FROM orders ORDER BY id", ids(1, 6, 1)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := rawSession(t, p.addr)
			r.query(t, "BEGIN")
			if got, _ := r.extQuery(t, `DECLARE "c1" CURSOR FOR `+tc.query); got != "12nC(DECLARE CURSOR)Z" {
				t.Fatalf("DECLARE: %s", got)
			}
			r.sendAll(t, &pgproto3.Describe{ObjectType: 'P', Name: "c1"}, &pgproto3.Sync{})
			if got, _ := r.typesAndRows(t); got != "T(id,total)Z" {
				t.Fatalf("Describe portal c1: %s", got)
			}
			var got []string
			types, rows := r.extQuery(t, `FETCH FORWARD 2 FROM "c1"`)
			if types != "12T(id,total)DC(FETCH 2)Z" {
				t.Fatalf("FETCH 2: %s", types)
			}
			got = append(got, rows...)
			if types, _ := r.extQuery(t, `MOVE 1 FROM "c1"`); types != "12nC(MOVE 1)Z" {
				t.Fatalf("MOVE: %s", types)
			}
			r.sendAll(t, &pgproto3.Execute{Portal: "c1", MaxRows: 2}, &pgproto3.Sync{})
			types, rows = r.typesAndRows(t)
			if types != "DsZ" {
				t.Fatalf("Execute c1 (2): %s", types)
			}
			got = append(got, rows...)
			types, rows = r.extQuery(t, `FETCH FORWARD 1 FROM "c1"`)
			if types != "12T(id,total)DC(FETCH 1)Z" {
				t.Fatalf("FETCH 1: %s", types)
			}
			got = append(got, rows...)
			want := strings.Fields(tc.first6)
			if strings.Join(got, " ") != strings.Join(append(want[:2:2], want[3:]...), " ") {
				t.Fatalf("rows %v, want %v without the third", got, want)
			}
			r.sendAll(t, &pgproto3.Execute{Portal: "c1"}, &pgproto3.Sync{})
			if types, rows := r.typesAndRows(t); !strings.HasPrefix(types, "DC(SELECT ") || types != fmt.Sprintf("DC(SELECT %d)Z", len(rows)) {
				t.Fatalf("Execute c1 to the end: %s", types)
			}
			if types, _ := r.extQuery(t, `CLOSE "c1"`); types != "12nC(CLOSE CURSOR)Z" {
				t.Fatalf("CLOSE: %s", types)
			}
			r.sendAll(t, &pgproto3.Describe{ObjectType: 'P', Name: "c1"}, &pgproto3.Sync{})
			if got, _ := r.typesAndRows(t); got != "E[34000]Z" {
				t.Fatalf("Describe of the closed cursor: %s", got)
			}
			r.query(t, "ROLLBACK")
		})
	}
}

// The protocol's Close of a DECLAREd cursor's portal closes the cursor, as
// Postgres does (psycopg 3 closes its named cursors so): the backends'
// portals are gone (no session keeps a snapshot for it), FETCH from it is
// 34000 and the name can be declared again. For a cursor on one shard,
// one merged across shards, and one WITH HOLD outside a transaction.
// Before, the proxy answered CloseComplete and the cursor stayed open.
func TestCloseMessageClosesCursor(t *testing.T) {
	p := startProxy(t, shopTopology(""), nil)
	setupShop(t, p)
	fillOrders(t, p, 50)
	closeC1 := func(r *rawConn) {
		t.Helper()
		r.sendAll(t, &pgproto3.Close{ObjectType: 'P', Name: "c1"}, &pgproto3.Sync{})
		if got, _ := r.typesAndRows(t); got != "3Z" {
			t.Fatalf("Close portal c1: %s", got)
		}
	}
	for _, tc := range []struct{ name, query, holding string }{
		{"one shard", "SELECT id FROM orders WHERE customer_id = 5", "1"},
		{"merged", "SELECT id FROM orders ORDER BY id", "2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rawSession(t, p.addr)
			r.query(t, "BEGIN")
			for range 2 { // declared again once closed
				if got, _ := r.extQuery(t, `DECLARE "c1" CURSOR FOR `+tc.query); got != "12nC(DECLARE CURSOR)Z" {
					t.Fatalf("DECLARE: %s", got)
				}
				if types, _ := r.extQuery(t, `FETCH 1 FROM "c1"`); types != "12T(id)DC(FETCH 1)Z" {
					t.Fatalf("FETCH 1: %s", types)
				}
				n := portalsHolding(t)
				if held := fmt.Sprint(n[0] + n[1]); held != tc.holding {
					t.Fatalf("sessions holding a snapshot with the cursor open: %v", n)
				}
				closeC1(r)
				if n := portalsHolding(t); fmt.Sprint(n) != "[0 0]" {
					t.Fatalf("sessions holding a snapshot after Close: %v", n)
				}
				if types, _ := r.extQuery(t, `FETCH 1 FROM "c1"`); !strings.HasSuffix(types, "E[34000]Z") {
					t.Fatalf("FETCH after Close: %s", types)
				}
				r.query(t, "ROLLBACK")
				r.query(t, "BEGIN")
			}
			r.query(t, "ROLLBACK")
		})
	}
	t.Run("with hold", func(t *testing.T) {
		r := rawSession(t, p.addr)
		for range 2 {
			if got, _ := r.extQuery(t, `DECLARE "c1" CURSOR WITH HOLD FOR SELECT k FROM settings`); got != "12nC(DECLARE CURSOR)Z" {
				t.Fatalf("DECLARE: %s", got)
			}
			if n := r.value(t, "SELECT count(*) FROM pg_cursors WHERE name = 'c1'"); n != "1" {
				t.Fatalf("%s cursors c1 on the held connection", n)
			}
			closeC1(r)
			if types, _ := r.extQuery(t, `FETCH 1 FROM "c1"`); !strings.HasSuffix(types, "E[34000]Z") {
				t.Fatalf("FETCH after Close: %s", types)
			}
		}
	})
}

// FETCH, MOVE and CLOSE of an unknown cursor through the extended
// protocol fail at Execute, as in Postgres (a FETCH's portal describes
// itself as NoData when its cursor is missing, and the cursor is looked
// up when the statement runs): ParseComplete, BindComplete, NoData, then
// 34000. In and outside a transaction block; the session goes on. Before,
// Bind failed with 34000.
func TestUnknownCursorFailsAtExecute(t *testing.T) {
	p := startProxy(t, shopTopology(""), nil)
	setupShop(t, p)
	r := rawSession(t, p.addr)
	for _, inTx := range []bool{false, true} {
		if inTx {
			r.query(t, "BEGIN")
		}
		for _, q := range []string{`FETCH 10 FROM nosuch`, `MOVE 1 IN nosuch`, `CLOSE nosuch`} {
			if got, _ := r.extQuery(t, q); got != "12nE[34000]Z" {
				t.Errorf("%s (in a transaction: %v): %s, want 12nE[34000]Z", q, inTx, got)
			}
			if inTx {
				r.query(t, "ROLLBACK")
				r.query(t, "BEGIN")
			}
		}
		if inTx {
			r.query(t, "ROLLBACK")
		}
	}
	if got, _ := r.extQuery(t, "SELECT 1"); got != "12T(?column?)DC(SELECT 1)Z" {
		t.Errorf("after: %s", got)
	}
}
