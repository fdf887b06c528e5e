package proxy

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
)

// Allocations per cached single-shard statement, through a real session
// against a real backend (issue 13). testing.AllocsPerRun counts every
// allocation of the process while it runs: the client below is a raw
// socket writing pre-encoded messages and reading the answer into a fixed
// buffer, so what is counted is the proxy's session and backend connection.
const (
	maxAllocsSimple   = 8
	maxAllocsExtended = 15
	maxAllocsPrepared = 9
)

// hijackedClient is a client connection taken over from pgconn after start-up.
type hijackedClient struct {
	conn net.Conn
	buf  []byte
	n    int // bytes in buf
}

func dialHijacked(t testing.TB, dsn string) *hijackedClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pc, err := pgconn.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	if err := pc.SyncConn(ctx); err != nil {
		t.Fatal(err)
	}
	h, err := pc.Hijack()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Conn.Close() })
	return &hijackedClient{conn: h.Conn, buf: make([]byte, 64*1024)}
}

// roundTrip writes req and reads messages up to ReadyForQuery; it returns
// the types of the messages read, in wire order, into types (reused).
func (c *hijackedClient) roundTrip(req []byte, types []byte) ([]byte, error) {
	types = types[:0]
	if _, err := c.conn.Write(req); err != nil {
		return types, err
	}
	for {
		for c.n >= 5 {
			l := int(binary.BigEndian.Uint32(c.buf[1:5])) + 1
			if l > len(c.buf) {
				return types, fmt.Errorf("message of %d bytes", l)
			}
			if c.n < l {
				break
			}
			typ := c.buf[0]
			types = append(types, typ)
			copy(c.buf, c.buf[l:c.n])
			c.n -= l
			if typ == 'Z' {
				return types, nil
			}
		}
		k, err := c.conn.Read(c.buf[c.n:])
		if err != nil {
			return types, err
		}
		c.n += k
	}
}

func encodeAll(t testing.TB, msgs ...pgproto3.FrontendMessage) []byte {
	t.Helper()
	var out []byte
	for _, m := range msgs {
		var err error
		if out, err = m.Encode(out); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// allocsPerStatement runs req once to warm caches and pools, checks the
// answer's message types, then measures.
func allocsPerStatement(t testing.TB, c *hijackedClient, req []byte, want string) float64 {
	t.Helper()
	types := make([]byte, 0, 64)
	for i := 0; i < 20; i++ {
		var err error
		if types, err = c.roundTrip(req, types); err != nil {
			t.Fatal(err)
		}
	}
	if string(types) != want {
		t.Fatalf("answer %q, want %q", types, want)
	}
	var err error
	n := testing.AllocsPerRun(500, func() {
		if types, err = c.roundTrip(req, types); err != nil {
			t.Fatal(err)
		}
	})
	if string(types) != want {
		t.Fatalf("answer %q, want %q", types, want)
	}
	return n
}

// statementCase is one cached single-shard statement, as the wire carries
// it, and the message types of its answer.
type statementCase struct {
	name string
	req  []byte
	want string
	max  float64
}

// statementCases sets up a proxy with two rows and returns a raw client
// and the statements: simple, extended (pgbench -M extended: unnamed
// Parse, Bind, Describe, Execute, Sync) and prepared (pgbench -M
// prepared: Bind of a statement parsed once) on a sharded table and on
// the main group.
func statementCases(tb testing.TB) (*hijackedClient, []statementCase) {
	p := startProxy(tb, shopTopology(""), func(c *Config) { c.PoolSize = 2 })
	c := connect(tb, p.dsn())
	for _, s := range []string{
		"DROP TABLE IF EXISTS customers, orders, countries, products, settings",
		"CREATE TABLE customers (id bigint PRIMARY KEY, name text)",
		"CREATE TABLE settings (k text PRIMARY KEY, v text)",
		"INSERT INTO customers (id, name) VALUES (1, 'one'), (2, 'two')",
		"INSERT INTO settings (k, v) VALUES ('a', 'b')",
	} {
		mustExec(tb, c, s)
	}
	cl := dialHijacked(tb, p.dsn())
	prep := encodeAll(tb, &pgproto3.Parse{Name: "p1", Query: "SELECT name FROM customers WHERE id = $1"}, &pgproto3.Sync{})
	if types, err := cl.roundTrip(prep, nil); err != nil || string(types) != "1Z" {
		tb.Fatalf("prepare: %q %v", types, err)
	}
	ext := func(sql, param string) []byte {
		return encodeAll(tb,
			&pgproto3.Parse{Query: sql},
			&pgproto3.Bind{Parameters: [][]byte{[]byte(param)}},
			&pgproto3.Describe{ObjectType: 'P'},
			&pgproto3.Execute{},
			&pgproto3.Sync{})
	}
	return cl, []statementCase{
		{"simple sharded", encodeAll(tb, &pgproto3.Query{String: "SELECT name FROM customers WHERE id = 1"}), "TDCZ", maxAllocsSimple},
		{"simple main", encodeAll(tb, &pgproto3.Query{String: "SELECT v FROM settings WHERE k = 'a'"}), "TDCZ", maxAllocsSimple},
		{"extended sharded", ext("SELECT name FROM customers WHERE id = $1", "2"), "12TDCZ", maxAllocsExtended},
		{"extended main", ext("SELECT v FROM settings WHERE k = $1", "a"), "12TDCZ", maxAllocsExtended},
		{"prepared sharded", encodeAll(tb,
			&pgproto3.Bind{PreparedStatement: "p1", Parameters: [][]byte{[]byte("1")}},
			&pgproto3.Describe{ObjectType: 'P'},
			&pgproto3.Execute{},
			&pgproto3.Sync{}), "2TDCZ", maxAllocsPrepared},
	}
}

func TestAllocsPerCachedStatement(t *testing.T) {
	cl, cases := statementCases(t)
	for _, tc := range cases {
		n := allocsPerStatement(t, cl, tc.req, tc.want)
		t.Logf("%s: %.1f allocations per statement", tc.name, n)
		if n > tc.max {
			t.Errorf("%s: %.1f allocations per statement, want ≤ %.0f", tc.name, n, tc.max)
		}
	}
}

// BenchmarkSessionStatement is one cached single-shard statement through a
// session: client bytes in, the backend's round trip, the answer out.
func BenchmarkSessionStatement(b *testing.B) {
	cl, cases := statementCases(b)
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			types := make([]byte, 0, 64)
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				var err error
				if types, err = cl.roundTrip(tc.req, types); err != nil {
					b.Fatal(err)
				}
			}
			if string(types) != tc.want {
				b.Fatalf("answer %q, want %q", types, tc.want)
			}
		})
	}
}
