package proxy

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/shardgate/shardgate/internal/proxytest"
	"github.com/shardgate/shardgate/topology"
)

// rawClient is a client connection that finished its start-up as user app
// (trust): the test writes protocol bytes to it itself.
func rawClient(t *testing.T, addr string) (net.Conn, *pgproto3.Frontend) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(60 * time.Second))
	fe := pgproto3.NewFrontend(conn, conn)
	fe.Send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30, Parameters: map[string]string{"user": "app", "database": "shop"}})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	for {
		msg, err := fe.Receive()
		if err != nil {
			t.Fatalf("start-up: %v", err)
		}
		if e, ok := msg.(*pgproto3.ErrorResponse); ok {
			t.Fatalf("start-up: %s %s", e.Code, e.Message)
		}
		if _, ok := msg.(*pgproto3.ReadyForQuery); ok {
			return conn, fe
		}
	}
}

// heapPeak samples the Go heap in use until stop is closed and returns
// the highest value.
func heapPeak(stop <-chan struct{}) <-chan uint64 {
	out := make(chan uint64, 1)
	go func() {
		var peak uint64
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
			select {
			case <-stop:
				out <- peak
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	return out
}

// Twelve clients send a 16 MiB message at once; the proxy may hold 40 MiB
// of client messages. Those the budget cannot hold are read through
// without being buffered and answered FATAL 53200; the others are served
// and their sessions go on. The proxy's heap stays near the budget, where
// it held every message whole before (twelve buffers of 32 MiB).
func TestBufferedClientMessagesAreBounded(t *testing.T) {
	const clients, size, budget = 12, 16 << 20, 40 << 20
	p := startProxy(t, shopTopology(""), func(c *Config) {
		c.Limits = topology.LimitsConfig{MaxBufferedBytes: budget, MaxMessageBytes: 32 << 20}
	})
	// One message for all: CopyData outside COPY, which the proxy reads
	// whole and ignores, so what it holds is the message buffer alone.
	msg := make([]byte, 5+size)
	msg[0] = 'd'
	binary.BigEndian.PutUint32(msg[1:], uint32(4+size))
	conns := make([]net.Conn, clients)
	fes := make([]*pgproto3.Frontend, clients)
	for i := range conns {
		conns[i], fes[i] = rawClient(t, p.addr)
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	stop := make(chan struct{})
	peakc := heapPeak(stop)

	// Every client sends all but the last byte, so that every message is
	// in flight at once; then the last byte and a query.
	var sent sync.WaitGroup
	for i := range conns {
		sent.Add(1)
		go func() {
			defer sent.Done()
			_, _ = conns[i].Write(msg[:len(msg)-1])
		}()
	}
	sent.Wait()
	time.Sleep(200 * time.Millisecond) // the proxy reads what it accepted
	var refused, served atomic.Int32
	var done sync.WaitGroup
	for i := range conns {
		done.Add(1)
		go func() {
			defer done.Done()
			_, _ = conns[i].Write(append(msg[len(msg)-1:], 'Q', 0, 0, 0, 13, 'S', 'E', 'L', 'E', 'C', 'T', ' ', '1', 0))
			for {
				m, err := fes[i].Receive()
				if err != nil {
					t.Errorf("client %d: %v", i, err)
					return
				}
				switch m := m.(type) {
				case *pgproto3.ErrorResponse:
					if m.Code != "53200" || m.Severity != "FATAL" {
						t.Errorf("client %d: %s %s %s", i, m.Severity, m.Code, m.Message)
					}
					refused.Add(1)
					return
				case *pgproto3.ReadyForQuery:
					served.Add(1)
					return
				}
			}
		}()
	}
	done.Wait()
	close(stop)
	peak := <-peakc
	t.Logf("%d served, %d refused with 53200; heap in use %d MiB at the start, peak %d MiB", served.Load(), refused.Load(), base>>20, peak>>20)
	if refused.Load() == 0 || served.Load() == 0 {
		t.Errorf("want some served and some refused")
	}
	if peak > base+3*budget {
		t.Errorf("heap in use peaked at %d MiB, %d MiB over the start; the budget is %d MiB", peak>>20, (peak-base)>>20, budget>>20)
	}
	if n := p.srv.budget.InUse(); n != 0 {
		t.Errorf("%d bytes of the budget still reserved after every message was read", n)
	}
}

// Past max_clients, a new client gets FATAL 53300 "too many clients" after
// its start-up packet (TLS or not), as from Postgres; once one leaves,
// another gets in.
func TestMaxClients(t *testing.T) {
	p := startProxy(t, shopTopology(""), func(c *Config) { c.Limits = topology.LimitsConfig{MaxClients: 2} })
	ctx := context.Background()
	a := connect(t, p.dsn())
	connect(t, p.dsn())
	_, err := pgx.Connect(ctx, p.dsn())
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "53300" || pe.Severity != "FATAL" || pe.Message != "sorry, too many clients already" {
		t.Fatalf("third client: %v, want FATAL 53300", err)
	}
	a.Close(ctx)
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := pgx.Connect(ctx, p.dsn())
		if err == nil {
			c.Close(ctx)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no room after a client left: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A half-sent start-up packet is dropped after startup_timeout, well
// before the authentication timeout; one longer than startup_bytes is
// refused.
func TestStartupLimits(t *testing.T) {
	p := startProxy(t, shopTopology(""), func(c *Config) {
		c.Limits = topology.LimitsConfig{StartupTimeout: 300 * time.Millisecond, StartupBytes: 1024}
		c.AuthTimeout = 30 * time.Second
	})
	conn, err := net.DialTimeout("tcp", p.addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte{0, 0, 0, 100, 0, 3}); err != nil { // 100 bytes announced, 2 sent
		t.Fatal(err)
	}
	start := time.Now()
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, err := conn.Read(make([]byte, 1)); !errors.Is(err, io.EOF) && !isReset(err) {
		t.Fatalf("half-sent start-up: read %v, want the connection closed", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("half-sent start-up dropped after %v", d)
	}

	big := proxytest.DSN(p.addr, "app", "shop") + "&application_name=" + strings.Repeat("x", 2000)
	_, err = pgx.Connect(context.Background(), big)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "08P01" || !strings.Contains(pe.Message, "invalid length of startup packet") {
		t.Fatalf("a 2 kB start-up packet: %v, want 08P01", err)
	}
}

func isReset(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "connection reset") || strings.Contains(err.Error(), "broken pipe"))
}

// With proxy.tls.required, a client that does not negotiate TLS gets
// 28000, as from a pg_hba.conf with hostssl lines only; over TLS it is
// served.
func TestTLSRequired(t *testing.T) {
	yaml, topo, served, _, _ := tlsTopology(t, "proxy", ", required: true")
	if !topo.Proxy.TLS.Required {
		t.Fatal("tls.required not read")
	}
	p := startProxy(t, yaml, func(cfg *Config) { cfg.TLS, cfg.TLSRequired = served, true })
	ctx := context.Background()
	_, err := pgx.Connect(ctx, p.dsn()) // sslmode=disable
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "28000" || !strings.Contains(pe.Message, "without TLS") {
		t.Fatalf("plain client: %v, want 28000", err)
	}
	c := connect(t, strings.Replace(p.dsn(), "sslmode=disable", "sslmode=require", 1))
	var ssl bool
	if err := c.QueryRow(ctx, "SELECT 1 = 1").Scan(&ssl); err != nil || !ssl {
		t.Fatalf("TLS client: %v", err)
	}
}
