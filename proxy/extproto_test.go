package proxy

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
)

// login runs the start-up of a raw client as app and reads up to the
// first ReadyForQuery.
func (r *rawConn) login(t *testing.T) {
	t.Helper()
	r.startup(t, "app")
	r.until(t, 'Z')
}

// until reads messages up to one of type typ and returns their types, in
// order, as a string ("E" stands for every ErrorResponse, whose SQLSTATE
// follows it in brackets).
func (r *rawConn) until(t *testing.T, typ byte) string {
	t.Helper()
	var b strings.Builder
	for {
		m, err := r.fe.Receive()
		if err != nil {
			t.Fatalf("after %q: %v", b.String(), err)
		}
		c := msgType(m)
		b.WriteByte(c)
		if e, ok := m.(*pgproto3.ErrorResponse); ok {
			b.WriteString("[" + e.Code + "]")
		}
		if c == typ {
			return b.String()
		}
	}
}

func msgType(m pgproto3.BackendMessage) byte {
	switch m.(type) {
	case *pgproto3.ParseComplete:
		return '1'
	case *pgproto3.BindComplete:
		return '2'
	case *pgproto3.CloseComplete:
		return '3'
	case *pgproto3.DataRow:
		return 'D'
	case *pgproto3.CommandComplete:
		return 'C'
	case *pgproto3.PortalSuspended:
		return 's'
	case *pgproto3.ReadyForQuery:
		return 'Z'
	case *pgproto3.ErrorResponse:
		return 'E'
	case *pgproto3.RowDescription:
		return 'T'
	case *pgproto3.NoData:
		return 'n'
	case *pgproto3.ParameterDescription:
		return 't'
	case *pgproto3.CopyInResponse:
		return 'G'
	case *pgproto3.AuthenticationOk:
		return 'R'
	}
	return '?'
}

func (r *rawConn) sendAll(t *testing.T, ms ...pgproto3.FrontendMessage) {
	t.Helper()
	for _, m := range ms {
		r.fe.Send(m)
	}
	if err := r.fe.Flush(); err != nil {
		t.Fatal(err)
	}
}

// Outside a transaction block a portal lives until Sync, as in Postgres:
// Execute of it after Sync is 34000, not silence; inside a transaction it
// lives until the transaction ends.
func TestExtPortalDiesAtSync(t *testing.T) {
	p := startProxy(t, shopTopology(""), nil)
	r := dialRaw(t, p.addr)
	r.login(t)
	query := "SELECT g FROM generate_series(1, 5) g"
	r.sendAll(t, &pgproto3.Parse{Query: query}, &pgproto3.Bind{DestinationPortal: "p1"},
		&pgproto3.Execute{Portal: "p1", MaxRows: 2}, &pgproto3.Sync{})
	if got := r.until(t, 'Z'); got != "12DDsZ" {
		t.Fatalf("first batch: %s", got)
	}
	r.sendAll(t, &pgproto3.Execute{Portal: "p1"}, &pgproto3.Sync{})
	if got := r.until(t, 'Z'); got != "E[34000]Z" {
		t.Fatalf("Execute after Sync: %s, want 34000", got)
	}
	// In a transaction block the portal survives Sync, and dies at COMMIT.
	r.sendAll(t, &pgproto3.Query{String: "BEGIN"})
	r.until(t, 'Z')
	r.sendAll(t, &pgproto3.Bind{DestinationPortal: "p2"}, &pgproto3.Execute{Portal: "p2", MaxRows: 2}, &pgproto3.Sync{})
	if got := r.until(t, 'Z'); got != "2DDsZ" {
		t.Fatalf("in a transaction: %s", got)
	}
	r.sendAll(t, &pgproto3.Execute{Portal: "p2"}, &pgproto3.Sync{})
	if got := r.until(t, 'Z'); got != "DDDCZ" {
		t.Fatalf("portal after Sync in a transaction: %s", got)
	}
	r.sendAll(t, &pgproto3.Query{String: "COMMIT"})
	r.until(t, 'Z')
	r.sendAll(t, &pgproto3.Execute{Portal: "p2"}, &pgproto3.Sync{})
	if got := r.until(t, 'Z'); got != "E[34000]Z" {
		t.Fatalf("Execute after COMMIT: %s, want 34000", got)
	}
}

// A client that disconnects at any point leaves nothing behind: its
// backend work is rolled back and, with a pool of one connection per
// cluster, the next client is served at once.
func TestExtDisconnectReturnsConnections(t *testing.T) {
	p := startProxy(t, shopTopology(""), func(c *Config) { c.PoolSize = 1; c.MaxWait = 2 * time.Second })
	c := setupShop(t, p)
	ctx := context.Background()
	var vals []string
	for i := 1; i <= 3000; i++ {
		vals = append(vals, fmt.Sprintf("(%d, %d, %d.5)", i, i%97, i))
	}
	mustExec(t, c, "INSERT INTO orders (id, customer_id, total) VALUES "+strings.Join(vals, ","))
	// A simple-protocol merge caches the clusters' collation facts, which
	// an extended-protocol merge would otherwise ask on a connection of
	// its own (one pool connection is all there is here).
	if _, err := c.PgConn().Exec(ctx, "SELECT count(*) FROM customers").ReadAll(); err != nil {
		t.Fatal(err)
	}
	c.Close(ctx)

	cases := map[string]func(r *rawConn){
		"unsynced batch": func(r *rawConn) {
			r.sendAll(t, &pgproto3.Parse{Query: "SELECT 1"}, &pgproto3.Bind{}, &pgproto3.Execute{}, &pgproto3.Flush{})
			r.until(t, 'C')
		},
		"unsynced write on one shard": func(r *rawConn) {
			r.sendAll(t, &pgproto3.Parse{Query: "INSERT INTO customers (id, name) VALUES (424242, 'ghost')"},
				&pgproto3.Bind{}, &pgproto3.Execute{}, &pgproto3.Flush{})
			r.until(t, 'C')
		},
		"transaction": func(r *rawConn) {
			r.sendAll(t, &pgproto3.Query{String: "BEGIN; INSERT INTO customers (id, name) VALUES (424242, 'ghost'), (1, 'one'); SELECT count(*) FROM orders"})
			r.until(t, 'Z')
		},
		"transaction with unsynced batch": func(r *rawConn) {
			r.sendAll(t, &pgproto3.Query{String: "BEGIN"})
			r.until(t, 'Z')
			r.sendAll(t, &pgproto3.Parse{Query: "INSERT INTO customers (id, name) VALUES (424242, 'ghost')"},
				&pgproto3.Bind{}, &pgproto3.Execute{}, &pgproto3.Flush{})
			r.until(t, 'C')
		},
		"COPY FROM STDIN": func(r *rawConn) {
			r.sendAll(t, &pgproto3.Query{String: "COPY customers (id, name) FROM STDIN"})
			r.until(t, 'G')
			r.sendAll(t, &pgproto3.CopyData{Data: []byte("424242\tghost\n1\tone\n")})
		},
		"merge": func(r *rawConn) {
			r.sendAll(t, &pgproto3.Query{String: "SELECT o.*, repeat('x', 500) FROM orders o ORDER BY total"})
			r.until(t, 'D')
		},
		"extended merge": func(r *rawConn) {
			r.sendAll(t, &pgproto3.Parse{Query: "SELECT o.*, repeat('x', 500) FROM orders o ORDER BY total"},
				&pgproto3.Bind{}, &pgproto3.Execute{}, &pgproto3.Flush{})
			r.until(t, 'D')
		},
	}
	for name, run := range cases {
		t.Run(name, func(t *testing.T) {
			r := dialRaw(t, p.addr)
			r.login(t)
			run(r)
			r.Close()
			// The next client gets both clusters' connections at once (not
			// after max_wait: 53300), and finds nothing of the first.
			next := connect(t, p.dsn())
			start := time.Now()
			var n int
			if err := next.QueryRow(ctx, "SELECT count(*) FROM customers WHERE id IN (424242, 1)").Scan(&n); err != nil {
				t.Fatalf("next client: %v", err)
			}
			if n != 0 {
				t.Fatalf("the disconnected client's rows were kept: %d", n)
			}
			if d := time.Since(start); d > time.Second {
				t.Fatalf("next client waited %v for a connection", d)
			}
			next.Close(ctx)
		})
	}
}

// A statement prepared before a reload runs where the new topology says:
// it is planned again at its next Bind.
func TestExtReplanAfterReload(t *testing.T) {
	p := startProxy(t, shopTopology(""), nil)
	c := setupShop(t, p)
	ctx := context.Background()
	for _, cl := range env.Clusters {
		if err := cl.Exec(ctx, "shop", "DROP TABLE IF EXISTS extnotes; CREATE TABLE extnotes (k text PRIMARY KEY, v text)"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Prepare(ctx, "ins", "INSERT INTO extnotes VALUES ($1, $2)"); err != nil {
		t.Fatal(err)
	}
	mustExec(t, c, "ins", "before", "main only")
	moved, err := parseTopo(strings.Replace(shopTopology(""), "reference: [countries]", "reference: [countries, extnotes]", 1))
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, c, "DELETE FROM extnotes") // an empty table may move
	if err := p.srv.Reload(moved); err != nil {
		t.Fatal(err)
	}
	mustExec(t, c, "ins", "after", "every copy")
	for _, cl := range env.Clusters {
		d := connect(t, cl.DSN("shop"))
		var n int
		if err := d.QueryRow(ctx, "SELECT count(*) FROM extnotes WHERE k = 'after'").Scan(&n); err != nil || n != 1 {
			t.Fatalf("%s: %d rows written after the reload (%v), want 1 on every copy", cl.Name, n, err)
		}
	}
}

// A Parse the backend refuses is answered with its error, not
// ParseComplete, and leaves no statement behind, on the client's side or
// on the backend connection: a statement the backend skipped after an
// error is not taken for prepared.
func TestExtFailedParse(t *testing.T) {
	p := startProxy(t, shopTopology(""), func(c *Config) { c.PoolSize = 1 })
	setupShop(t, p)
	r := dialRaw(t, p.addr)
	r.login(t)
	r.sendAll(t, &pgproto3.Parse{Name: "s1", Query: "SELECT * FROM no_such_table"}, &pgproto3.Describe{ObjectType: 'S', Name: "s1"}, &pgproto3.Sync{})
	if got := r.until(t, 'Z'); got != "E[42P01]Z" {
		t.Fatalf("failed Parse: %s", got)
	}
	r.sendAll(t, &pgproto3.Parse{Name: "s1", Query: "SELECT 1"}, &pgproto3.Bind{PreparedStatement: "s1"}, &pgproto3.Execute{}, &pgproto3.Sync{})
	if got := r.until(t, 'Z'); got != "12DCZ" {
		t.Fatalf("Parse of the failed statement's name: %s", got)
	}
	// The backend skips what follows an error until Sync: the second
	// statement was never prepared there.
	r.sendAll(t, &pgproto3.Parse{Name: "a", Query: "SELECT * FROM customers WHERE id = $1 AND no_such_column"},
		&pgproto3.Parse{Name: "b", Query: "SELECT * FROM customers WHERE id = $1"},
		&pgproto3.Describe{ObjectType: 'S', Name: "a"}, &pgproto3.Describe{ObjectType: 'S', Name: "b"}, &pgproto3.Sync{})
	if got := r.until(t, 'Z'); !strings.HasSuffix(got, "E[42703]Z") {
		t.Fatalf("failed Describe: %s", got)
	}
	r.sendAll(t, &pgproto3.Parse{Name: "c", Query: "SELECT * FROM customers WHERE id = $1"},
		&pgproto3.Describe{ObjectType: 'S', Name: "c"}, &pgproto3.Sync{})
	if got := r.until(t, 'Z'); got != "1tTZ" {
		t.Fatalf("statement skipped by the backend taken for prepared: %s", got)
	}
}

// An error of the implicit transaction's commit at Sync (a deferred
// constraint) reaches the client before ReadyForQuery, as in Postgres.
func TestExtDeferredErrorAtSync(t *testing.T) {
	p := startProxy(t, shopTopology(""), nil)
	c := connect(t, p.dsn())
	mustExec(t, c, "DROP TABLE IF EXISTS extdef")
	mustExec(t, c, "CREATE TABLE extdef (id text PRIMARY KEY, n int NOT NULL, UNIQUE (n) DEFERRABLE INITIALLY DEFERRED)")
	mustExec(t, c, "INSERT INTO extdef VALUES ('a', 1), ('b', 2), ('c', 3)")
	r := dialRaw(t, p.addr)
	r.login(t)
	r.sendAll(t, &pgproto3.Parse{Query: "UPDATE extdef SET n = n + 1 WHERE id = 'b' RETURNING *"}, &pgproto3.Bind{},
		&pgproto3.Describe{ObjectType: 'P'}, &pgproto3.Execute{}, &pgproto3.Sync{})
	if got := r.until(t, 'Z'); got != "12TDCE[23505]Z" {
		t.Fatalf("deferred error at Sync: %s", got)
	}
	var n int
	if err := c.QueryRow(context.Background(), "SELECT n FROM extdef WHERE id = 'b'").Scan(&n); err != nil || n != 2 {
		t.Fatalf("the failed commit kept its update: %d %v", n, err)
	}
}

// A client that closes a statement after DDL and prepares it again gets a
// fresh backend statement, even where another session left one of the
// same text, prepared before the DDL, on the connection it is lent.
func TestExtReprepareAfterDDL(t *testing.T) {
	p, c := proxyWithTable(t, 1, "extgen", "(id int, f1 int, f2 int)", "(1, 2, 3)")
	q := "SELECT * FROM extgen WHERE id = $1"
	run := func(r *rawConn, ms ...pgproto3.FrontendMessage) string {
		r.sendAll(t, append(ms, &pgproto3.Sync{})...)
		return r.until(t, 'Z')
	}
	a, b := dialRaw(t, p.addr), dialRaw(t, p.addr)
	a.login(t)
	b.login(t)
	run(a, &pgproto3.Parse{Name: "a", Query: q}, &pgproto3.Describe{ObjectType: 'S', Name: "a"})
	run(a, &pgproto3.Close{ObjectType: 'S', Name: "a"}, &pgproto3.Parse{Name: "a", Query: q}, &pgproto3.Describe{ObjectType: 'S', Name: "a"})
	mustExec(t, c, "ALTER TABLE extgen DROP COLUMN f1")
	bind := &pgproto3.Bind{PreparedStatement: "b", Parameters: [][]byte{[]byte("1")}}
	run(b, &pgproto3.Parse{Name: "b", Query: q}, bind, &pgproto3.Execute{})
	// As pgx does after "cached plan must not change result type".
	if got := run(b, &pgproto3.Close{ObjectType: 'S', Name: "b"}, &pgproto3.Parse{Name: "b", Query: q}, bind, &pgproto3.Execute{}); got != "312DCZ" {
		t.Fatalf("prepared again after Close: %s", got)
	}
}

// A COPY FROM STDIN that the backend fails on a bad row fails while the
// client is still sending, before its CopyDone, as from Postgres.
func TestExtCopyFailsEarly(t *testing.T) {
	p := startProxy(t, shopTopology(""), nil)
	c := connect(t, p.dsn())
	mustExec(t, c, "DROP TABLE IF EXISTS extcopy")
	mustExec(t, c, "CREATE TABLE extcopy (a int NOT NULL)")
	r := dialRaw(t, p.addr)
	r.login(t)
	r.sendAll(t, &pgproto3.Query{String: "COPY extcopy FROM STDIN"})
	r.until(t, 'G')
	r.sendAll(t, &pgproto3.CopyData{Data: []byte("1\n\\N\n")})
	for i := 0; i < 100; i++ { // a client that keeps sending, as pgx's CopyFrom
		r.sendAll(t, &pgproto3.CopyData{Data: []byte("1\n")})
		time.Sleep(10 * time.Millisecond)
	}
	_ = r.SetReadDeadline(time.Now().Add(time.Second))
	if got := r.until(t, 'Z'); got != "E[23502]Z" {
		t.Fatalf("COPY with a bad row: %s", got)
	}
	// The rest of the client's data is ignored.
	r.sendAll(t, &pgproto3.CopyData{Data: []byte("2\n")}, &pgproto3.CopyDone{}, &pgproto3.Query{String: "SELECT count(*) FROM extcopy"})
	if got := r.until(t, 'Z'); got != "TDCZ" {
		t.Fatalf("after the failed COPY: %s", got)
	}
}

// A backend connection keeps at most maxBackendStmts statements of the
// proxy: past that the oldest is closed.
func TestExtBackendStatementsBounded(t *testing.T) {
	p := startProxy(t, shopTopology(""), func(c *Config) { c.PoolSize = 1 })
	r := dialRaw(t, p.addr)
	r.login(t)
	var ms []pgproto3.FrontendMessage
	for i := 0; i < maxBackendStmts+10; i++ {
		ms = append(ms, &pgproto3.Parse{Name: fmt.Sprint("s", i), Query: fmt.Sprintf("SELECT %d", i)})
	}
	r.sendAll(t, append(ms, &pgproto3.Sync{})...)
	r.until(t, 'Z')
	r.sendAll(t, &pgproto3.Query{String: "SELECT count(*) FROM pg_prepared_statements"})
	for {
		m, err := r.fe.Receive()
		if err != nil {
			t.Fatal(err)
		}
		if d, ok := m.(*pgproto3.DataRow); ok {
			if n := string(d.Values[0]); n != fmt.Sprint(maxBackendStmts) {
				t.Fatalf("%s statements on the backend connection, want %d", n, maxBackendStmts)
			}
			break
		}
	}
	r.until(t, 'Z')
	// The first, closed on the backend, is prepared again when used.
	r.sendAll(t, &pgproto3.Bind{PreparedStatement: "s0"}, &pgproto3.Execute{}, &pgproto3.Sync{})
	if got := r.until(t, 'Z'); got != "2DCZ" {
		t.Fatalf("an evicted statement: %s", got)
	}
}
