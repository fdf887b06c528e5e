package proxy

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// syncBuffer is a log destination written by many sessions at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestLogsWithoutValues: connections (at debug), refused statements, slow
// statements and sampled ones are logged with SQLSTATE, route and the
// statement's shape or fingerprint, never its literal values.
func TestLogsWithoutValues(t *testing.T) {
	var logs syncBuffer
	p := startProxy(t, shopTopology("proxy:\n  log: { slow_statement: 1ns, sample_statements: 1 }\n"), func(c *Config) {
		c.Logger = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	c := setupShop(t, p)
	ctx := context.Background()
	_, err := c.Exec(ctx, "SELECT * FROM orders o JOIN products p ON p.sku = 'secret-sku' WHERE o.customer_id = 987654 FOR UPDATE")
	if sqlstate(err) != "0A000" {
		t.Fatalf("want 0A000, got %v", err)
	}
	mustExec(t, c, "SELECT name FROM customers WHERE id = 424242 AND name <> 'hunter2'")
	failOnStoppedPg1(t, c)
	c.Close(ctx)
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(logs.String(), `"msg":"client disconnected"`) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	out := logs.String()
	for _, want := range []string{
		`"level":"DEBUG","msg":"client connected"`, `"level":"DEBUG","msg":"client disconnected"`, `"user":"app"`, `"remote":"127.0.0.1:`,
		`"msg":"statement refused"`, `"sqlstate":"0A000"`,
		`"statement":"SELECT * FROM orders o JOIN products p ON p.sku = ? WHERE o.customer_id = ? FOR UPDATE"`,
		`"msg":"slow statement"`, `"route":"single"`, `"group":"by_customer"`,
		`"msg":"backend connection failed","cluster":"pg1"`,
		`"level":"INFO","msg":"statement"`, `"shards":1,"rows":0,"sqlstate":"","fingerprint_id":"`,
		`"fingerprint":"SELECT name FROM customers WHERE id = $1 AND name <> $2"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("logs lack %s:\n%s", want, out)
		}
	}
	for _, secret := range []string{"secret-sku", "987654", "424242", "hunter2"} {
		if strings.Contains(out, secret) {
			t.Errorf("logs contain the value %s:\n%s", secret, out)
		}
	}
}

// failOnStoppedPg1 stops pg1, runs a statement that needs it (08006) and
// starts pg1 again: a backend failure.
func failOnStoppedPg1(t *testing.T, c *pgx.Conn) {
	t.Helper()
	ctx := context.Background()
	pg1 := env.Clusters[1]
	t.Cleanup(func() { _ = pg1.Start(ctx) })
	if err := pg1.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, "SELECT * FROM customers WHERE id = 42"); sqlstate(err) != "08006" {
		t.Fatalf("pg1 down: want 08006, got %v", err)
	}
	if err := pg1.Start(ctx); err != nil {
		t.Fatal(err)
	}
}
