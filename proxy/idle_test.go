package proxy

import (
	"bufio"
	"context"
	"encoding/binary"
	"io"
	"net"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/shardgate/shardgate/pgwire"
)

// plainClient connects to addr as user app without a client library's
// buffers, runs SELECT 1 and returns the connection, idle.
func plainClient(t testing.TB, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := c.Write(startupPacket("app", "shop")); err != nil {
		t.Fatal(err)
	}
	untilReadyPlain(t, c)
	if _, err := c.Write(msg('Q', "SELECT 1\x00")); err != nil {
		t.Fatal(err)
	}
	untilReadyPlain(t, c)
	_ = c.SetDeadline(time.Time{})
	return c
}

// untilReadyPlain reads messages up to ReadyForQuery, failing on an
// ErrorResponse; it returns the DataRow bodies.
func untilReadyPlain(t testing.TB, c net.Conn) []string {
	t.Helper()
	var hdr [5]byte
	var rows []string
	for {
		if _, err := io.ReadFull(c, hdr[:]); err != nil {
			t.Fatalf("read: %v", err)
		}
		body := make([]byte, int(binary.BigEndian.Uint32(hdr[1:]))-4)
		if _, err := io.ReadFull(c, body); err != nil {
			t.Fatalf("read: %v", err)
		}
		switch hdr[0] {
		case 'E':
			t.Fatalf("error response: %q", body)
		case 'D':
			rows = append(rows, string(body[6:]))
		case 'Z':
			return rows
		}
	}
}

// parkedSessions counts the sessions with no goroutine of their own:
// registered sessions minus goroutines running session code.
func parkedSessions(t testing.TB, p *testProxy) int {
	t.Helper()
	buf := make([]byte, 8<<20)
	stacks := string(buf[:runtime.Stack(buf, true)])
	running := strings.Count(stacks, "proxy.(*session).run(")
	p.srv.mu.Lock()
	defer p.srv.mu.Unlock()
	return len(p.srv.sessions) - running
}

func waitParked(t testing.TB, p *testProxy, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for parkedSessions(t, p) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d sessions parked, want %d", parkedSessions(t, p), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func withParkAfter(t *testing.T, d time.Duration) {
	old := parkAfter
	parkAfter = d
	t.Cleanup(func() { parkAfter = old })
}

func readMemory() (heap, stacks float64) {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/stacks:bytes"}}
	metrics.Read(s)
	return float64(s[0].Value.Uint64()), float64(s[1].Value.Uint64())
}

// TestIdleClientsParked: clients idle after their first query cost no
// goroutine, stack or buffer: under 3.25 KiB of heap each (the session's
// state and the socket, this test's client side included; 3.9 KiB before
// start-up parameters were shared and maps and extended-protocol storage
// made on first use), where a goroutine with its read and write buffers
// cost ~50 KiB of heap and 8 KiB of stack. They are served again as before.
func TestIdleClientsParked(t *testing.T) {
	withParkAfter(t, 20*time.Millisecond)
	p := startProxy(t, shopTopology(""), nil)
	const n = 300
	runtime.GC()
	heap0, stacks0 := readMemory()
	conns := make([]net.Conn, 0, n)
	for range n {
		c := plainClient(t, p.addr)
		defer c.Close()
		conns = append(conns, c)
	}
	waitParked(t, p, n)
	runtime.GC()
	runtime.GC()
	heap1, stacks1 := readMemory()
	heapPer, stacksPer := (heap1-heap0)/n, (stacks1-stacks0)/n
	t.Logf("per idle client: %.0f bytes of heap objects (this test's client side included), %.0f of stacks", heapPer, stacksPer)
	if !raceEnabled && (heapPer > 3328 || stacksPer > 1<<10) {
		t.Errorf("per idle client: %.0f bytes of heap objects, %.0f of stacks; want at most 3.25 KiB and 1 KiB", heapPer, stacksPer)
	}
	// Each is served again: simple and extended protocol, a message split
	// across a park, pipelined queries.
	for i, c := range conns[:20] {
		_ = c.SetDeadline(time.Now().Add(20 * time.Second))
		switch i % 4 {
		case 0:
			_, _ = c.Write(msg('Q', "SELECT 40 + 2\x00"))
			if rows := untilReadyPlain(t, c); len(rows) != 1 || rows[0] != "42" {
				t.Fatalf("client %d: rows %q", i, rows)
			}
		case 1:
			_, _ = c.Write(append(append(append(msg('P', "\x00SELECT $1::int + 1\x00\x00\x00"),
				msg('B', "\x00\x00\x00\x00\x00\x01\x00\x00\x00\x0241\x00\x00")...), msg('E', "\x00\x00\x00\x00\x00")...), msg('S', "")...))
			if rows := untilReadyPlain(t, c); len(rows) != 1 || rows[0] != "42" {
				t.Fatalf("client %d: rows %q", i, rows)
			}
		case 2:
			q := msg('Q', "SELECT 'split'\x00")
			_, _ = c.Write(q[:7])
			waitParked(t, p, n-i)
			_, _ = c.Write(q[7:])
			if rows := untilReadyPlain(t, c); len(rows) != 1 || rows[0] != "split" {
				t.Fatalf("client %d: rows %q", i, rows)
			}
		case 3:
			_, _ = c.Write(append(msg('Q', "SELECT 1\x00"), msg('Q', "SELECT 2\x00")...))
			first, second := untilReadyPlain(t, c), untilReadyPlain(t, c)
			if len(first) != 1 || first[0] != "1" || len(second) != 1 || second[0] != "2" {
				t.Fatalf("client %d: rows %q %q", i, first, second)
			}
		}
	}
}

// TestParkedSessionInTransaction: a session parks inside a transaction and
// keeps it.
func TestParkedSessionInTransaction(t *testing.T) {
	withParkAfter(t, 10*time.Millisecond)
	p := startProxy(t, shopTopology(""), nil)
	c := plainClient(t, p.addr)
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	_, _ = c.Write(msg('Q', "BEGIN; CREATE TEMP TABLE parked_t (x int); INSERT INTO parked_t VALUES (7)\x00"))
	untilReadyPlain(t, c)
	waitParked(t, p, 1)
	_, _ = c.Write(msg('Q', "SELECT x FROM parked_t\x00"))
	if rows := untilReadyPlain(t, c); len(rows) != 1 || rows[0] != "7" {
		t.Fatalf("rows %q", rows)
	}
	_, _ = c.Write(msg('Q', "COMMIT\x00"))
	untilReadyPlain(t, c)
}

// TestParkedSessionsEnd: a drain, pg_terminate_backend and the client
// going away each end a parked session.
func TestParkedSessionsEnd(t *testing.T) {
	withParkAfter(t, 10*time.Millisecond)
	p := startProxy(t, shopTopology(""), nil)

	killed, killer := rawSession(t, p.addr), rawSession(t, p.addr)
	killed.query(t, "SELECT 1")
	gone := plainClient(t, p.addr)
	idle := rawSession(t, p.addr)
	waitParked(t, p, 4)

	gone.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		p.srv.mu.Lock()
		n := len(p.srv.sessions)
		p.srv.mu.Unlock()
		if n == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d sessions after a parked client went away, want 3", n)
		}
		time.Sleep(5 * time.Millisecond)
	}

	var pid uint32
	p.srv.mu.Lock()
	for id, ss := range p.srv.sessions {
		if ss.conn.RemoteAddr().String() == killed.LocalAddr().String() {
			pid = id
		}
	}
	p.srv.mu.Unlock()
	killer.send(t, &pgproto3.Query{String: "SELECT pg_terminate_backend(" + strconv.Itoa(int(pid)) + ")"})
	killer.untilReady(t)
	killed.expectTerminated(t, "terminated parked session", 5*time.Second)

	waitParked(t, p, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- p.srv.Shutdown(ctx) }()
	idle.expectTerminated(t, "parked session at a drain", 5*time.Second)
	killer.expectTerminated(t, "parked session at a drain", 5*time.Second)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestParkedSuspendedMerge: a merge portal suspended by a row limit keeps
// writing to its own client after the session parked and its writer went
// back to the pool (the test takes every pooled writer meanwhile: with one
// P, whose private slot no other P can take).
func TestParkedSuspendedMerge(t *testing.T) {
	withParkAfter(t, 10*time.Millisecond)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	p := startProxy(t, shopTopology(""), nil)
	c := setupShop(t, p)
	var vals []string
	for i := 1; i <= 20; i++ {
		vals = append(vals, "("+strconv.Itoa(i)+", "+strconv.Itoa(i%7)+", "+strconv.Itoa(i)+".5)")
	}
	mustExec(t, c, "INSERT INTO orders (id, customer_id, total) VALUES "+strings.Join(vals, ","))
	c.Close(context.Background())

	a := dialRaw(t, p.addr)
	a.login(t)
	a.sendAll(t, &pgproto3.Parse{Query: "SELECT id FROM orders ORDER BY id"}, &pgproto3.Bind{},
		&pgproto3.Execute{MaxRows: 3}, &pgproto3.Flush{})
	a.until(t, '2')
	got, end := a.chunk(t)
	for end == "s" {
		waitParked(t, p, 1)
		var taken []*bufio.Writer
		for range 100 {
			taken = append(taken, pgwire.GetClientWriter(io.Discard))
		}
		a.sendAll(t, &pgproto3.Execute{MaxRows: 3}, &pgproto3.Flush{})
		var rows []string
		rows, end = a.chunk(t)
		got = append(got, rows...)
		for _, w := range taken {
			pgwire.PutClientWriter(w)
		}
	}
	if len(got) != 20 || got[0] != "1" || got[19] != "20" || end != "SELECT 2" {
		t.Fatalf("%d rows (%v), ending %s", len(got), got, end)
	}
}
