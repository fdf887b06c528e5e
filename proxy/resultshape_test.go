package proxy

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgproto3"
)

// proxyWithTable starts a proxy with pools of size and creates, through
// it, table (in main) with columns and the row values.
func proxyWithTable(t *testing.T, size int, table, columns, values string) (*testProxy, *pgx.Conn) {
	t.Helper()
	p := startProxy(t, shopTopology(""), func(c *Config) { c.PoolSize = size })
	c := connect(t, p.dsn())
	mustExec(t, c, "DROP TABLE IF EXISTS "+table)
	mustExec(t, c, "CREATE TABLE "+table+" "+columns)
	mustExec(t, c, "INSERT INTO "+table+" VALUES "+values)
	return p, c
}

// value runs q and returns its one value.
func (r *rawConn) value(t *testing.T, q string) string {
	t.Helper()
	r.sendAll(t, &pgproto3.Query{String: q})
	types, rows := r.typesAndRows(t)
	if len(rows) != 1 {
		t.Fatalf("%s: %s %v", q, types, rows)
	}
	return rows[0]
}

// errorOf reads up to ReadyForQuery and returns the types read and the
// first error's message.
func (r *rawConn) errorOf(t *testing.T) (string, string) {
	t.Helper()
	var types strings.Builder
	msg := ""
	for _, m := range r.untilReady(t) {
		types.WriteByte(msgType(m))
		if e, ok := m.(*pgproto3.ErrorResponse); ok {
			types.WriteString("[" + e.Code + "]")
			if msg == "" {
				msg = e.Message
			}
		}
	}
	return types.String() + "Z", msg
}

// A statement the client was described before DDL changed its result
// (ALTER TABLE ... DROP COLUMN under SELECT *) is refused with Postgres'
// 0A000 "cached plan must not change result type" also where the proxy
// parses it anew, on a backend connection it was not prepared on: there
// the backend would take the new result, and answer the Bind's result
// formats for the old one with 08P01 (pgx's
// TestStmtCacheInvalidationConnWithBatch). Prepared again, it runs; a
// statement whose result did not change runs on a new connection as before.
func TestExtResultChangedOnAnotherConnection(t *testing.T) {
	p, c := proxyWithTable(t, 2, "extshape", "(id int PRIMARY KEY, f1 int NOT NULL, f2 int NOT NULL)", "(1, 2, 3)")
	q, same := "SELECT * FROM extshape WHERE id = $1", "SELECT id, f2 FROM extshape WHERE id = $1"

	x := dialRaw(t, p.addr)
	x.login(t)
	x.sendAll(t, &pgproto3.Parse{Name: "s", Query: q}, &pgproto3.Describe{ObjectType: 'S', Name: "s"},
		&pgproto3.Parse{Name: "same", Query: same}, &pgproto3.Describe{ObjectType: 'S', Name: "same"}, &pgproto3.Sync{})
	if got := x.until(t, 'Z'); got != "1tT1tTZ" {
		t.Fatalf("Parse and Describe: %s", got)
	}
	// pg_backend_pid() is answered by the proxy: the connection is told by
	// the statements on it.
	where := "SELECT count(*) FROM pg_prepared_statements WHERE statement = '" + q + "'"
	mustExec(t, c, "ALTER TABLE extshape DROP COLUMN f1")

	// Two clients take both connections; the one holding the connection
	// the statements are prepared on keeps it, the other gives its own
	// back: X's next batches are lent that one, where they are not prepared.
	var keep, release *rawConn
	for i := 0; i < 2; i++ {
		y := dialRaw(t, p.addr)
		y.login(t)
		y.query(t, "BEGIN")
		if y.value(t, where) == "1" {
			keep = y
		} else {
			release = y
		}
	}
	if keep == nil || release == nil {
		t.Fatal("the two clients do not hold the connection the statement is prepared on and another")
	}
	release.query(t, "COMMIT")
	defer keep.query(t, "COMMIT")

	bind := func(name string, formats int) *pgproto3.Bind {
		return &pgproto3.Bind{PreparedStatement: name, Parameters: [][]byte{[]byte("1")}, ResultFormatCodes: make([]int16, formats)}
	}
	x.sendAll(t, bind("same", 2), &pgproto3.Execute{}, &pgproto3.Sync{})
	if got := x.until(t, 'Z'); got != "2DCZ" {
		t.Fatalf("a statement whose result did not change, on another connection: %s", got)
	}
	x.sendAll(t, bind("s", 3), &pgproto3.Execute{}, &pgproto3.Sync{})
	if got, msg := x.errorOf(t); got != "E[0A000]Z" || msg != "cached plan must not change result type" {
		t.Fatalf("Bind after DROP COLUMN on another connection: %s %q, want 0A000 as from Postgres", got, msg)
	}
	x.sendAll(t, &pgproto3.Describe{ObjectType: 'S', Name: "s"}, &pgproto3.Sync{})
	if got, msg := x.errorOf(t); got != "E[0A000]Z" || msg != "cached plan must not change result type" {
		t.Fatalf("Describe after DROP COLUMN on another connection: %s %q", got, msg)
	}
	// In a transaction block the error fails the transaction, as in Postgres.
	x.query(t, "BEGIN")
	x.sendAll(t, bind("s", 0), &pgproto3.Execute{}, &pgproto3.Sync{})
	if got, _ := x.errorOf(t); got != "E[0A000]Z" {
		t.Fatalf("Bind in a transaction: %s", got)
	}
	x.sendAll(t, &pgproto3.Query{String: "SELECT 1"})
	if got, _ := x.errorOf(t); got != "E[25P02]Z" {
		t.Fatalf("after the 0A000 in a transaction: %s, want 25P02", got)
	}
	x.query(t, "ROLLBACK")
	// As pgx does after the error: close, prepare again, run.
	x.sendAll(t, &pgproto3.Close{ObjectType: 'S', Name: "s"}, &pgproto3.Parse{Name: "s", Query: q},
		&pgproto3.Describe{ObjectType: 'S', Name: "s"}, bind("s", 2), &pgproto3.Execute{}, &pgproto3.Sync{})
	if got, rows := x.typesAndRows(t); got != "31tT(id,f2)2DC(SELECT 1)Z" || rows[0] != "1" {
		t.Fatalf("prepared again: %s %v", got, rows)
	}
}

// A statement described on one cluster and parsed anew on another is
// compared without the OIDs of user types, which differ between clusters
// (an enum made on each): no false 0A000.
func TestExtResultShapeAcrossClusters(t *testing.T) {
	p := startProxy(t, shopTopology(""), nil)
	c := setupShop(t, p)
	first := ""
	for i, cl := range env.Clusters {
		d := connect(t, cl.DSN("shop"))
		// Each later cluster's enum gets an OID apart from the first
		// cluster's: made again behind one more table until it differs.
		for try := 0; ; try++ {
			mustExec(t, d, "DROP TYPE IF EXISTS mood")
			if i > 0 {
				mustExec(t, d, fmt.Sprintf("DROP TABLE IF EXISTS mood_gap%d; CREATE TABLE mood_gap%d (a int)", try, try))
			}
			mustExec(t, d, "CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy')")
			var oid string
			if err := d.QueryRow(context.Background(), "SELECT 'mood'::regtype::oid::text").Scan(&oid); err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				first = oid
			}
			if i == 0 || oid != first {
				break
			}
			if try == 5 {
				t.Fatalf("%s: the enum keeps OID %s, as on the first cluster", cl.Name, oid)
			}
		}
	}
	mustExec(t, c, "ALTER TABLE customers ADD COLUMN m mood")
	for _, cl := range env.Clusters {
		mustExec(t, c, "INSERT INTO customers (id, name, m) VALUES ($1, 'x', 'ok')", customerOn(t, p, cl.Name))
	}
	x := dialRaw(t, p.addr)
	x.login(t)
	q := "SELECT id, m FROM customers WHERE id = $1"
	x.sendAll(t, &pgproto3.Parse{Name: "m", Query: q}, &pgproto3.Describe{ObjectType: 'S', Name: "m"}, &pgproto3.Sync{})
	if got := x.until(t, 'Z'); got != "1tTZ" {
		t.Fatalf("Parse and Describe: %s", got)
	}
	for _, cl := range env.Clusters { // one of them parses it anew
		id := fmt.Sprint(customerOn(t, p, cl.Name))
		x.sendAll(t, &pgproto3.Bind{PreparedStatement: "m", Parameters: [][]byte{[]byte(id)}, ResultFormatCodes: []int16{0, 0}},
			&pgproto3.Execute{}, &pgproto3.Sync{})
		if got, rows := x.typesAndRows(t); got != "2DC(SELECT 1)Z" || rows[0] != id {
			t.Fatalf("on %s: %s %v", cl.Name, got, rows)
		}
	}
}
