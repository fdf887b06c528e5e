package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/shardgate/shardgate/examples/ecommerce"
	"github.com/shardgate/shardgate/internal/testenv"
	"github.com/shardgate/shardgate/topology"
	"github.com/shardgate/shardgate/vschema"
)

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		// The test binary stands in for the shardgate binary
		// (TestServeDrainsOnSIGTERM).
		main()
		os.Exit(0)
	}
	testenv.Run(m, testenv.Options{N: 2, Databases: []string{ecommerce.Database}}, nil)
}

// logBuffer collects a server's log lines; the watcher writes from its
// own goroutine.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// served is `shardgate serve` over the example topology on the shared
// clusters, with the file's watcher running.
type served struct {
	file, yaml string
	dsns       map[string]string
	logs       *logBuffer
	addr       string
}

func serveExample(t *testing.T, extra string) *served {
	t.Helper()
	env := testenv.Shared(t)
	s := &served{dsns: map[string]string{}, logs: &logBuffer{}}
	for _, c := range env.Clusters {
		s.dsns[c.Name] = c.DSN(ecommerce.Database)
	}
	yaml, err := ecommerce.TopologyFor(s.dsns)
	if err != nil {
		t.Fatal(err)
	}
	s.yaml = yaml + extra
	s.file = filepath.Join(t.TempDir(), "topology.yaml")
	s.write(t, s.yaml)
	ctx, cancel := context.WithCancel(context.Background())
	srv, ln, err := startServer(ctx, slog.New(slog.NewTextHandler(s.logs, nil)), s.file, "127.0.0.1:0")
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { cancel(); ln.Close(); srv.Close() })
	s.addr = ln.Addr().String()
	return s
}

// write replaces the topology file the way editors do: a new file renamed
// over the old one, so the watcher never reads half a file.
func (s *served) write(t *testing.T, yaml string) {
	t.Helper()
	tmp := s.file + ".tmp"
	if err := os.WriteFile(tmp, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, s.file); err != nil {
		t.Fatal(err)
	}
}

// edit rewrites the file with one replacement and waits until the server
// has taken the reload (applied or refused).
func (s *served) edit(t *testing.T, old, new string) {
	t.Helper()
	if !strings.Contains(s.yaml, old) {
		t.Fatalf("%q is not in the topology", old)
	}
	s.yaml = strings.Replace(s.yaml, old, new, 1)
	before := strings.Count(s.logs.String(), "topology reload")
	s.write(t, s.yaml)
	deadline := time.Now().Add(15 * time.Second)
	for strings.Count(s.logs.String(), "topology reload") == before {
		if time.Now().After(deadline) {
			t.Fatalf("the edit was not reloaded; log:\n%s", s.logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (s *served) connect(t *testing.T) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, fmt.Sprintf("postgres://postgres@%s/%s?sslmode=disable", s.addr, ecommerce.Database))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func queryInt(t *testing.T, c *pgx.Conn, sql string) int {
	t.Helper()
	var n int
	if err := c.QueryRow(context.Background(), sql).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// Moving shard 80- from pg1 to pg0 in the file does not move its rows:
// the reload is refused and customer 42 keeps its orders. (Before
// topology.Diff the edit was applied silently and customer 42 had 0
// orders.)
func TestReloadRefusesMovedShard(t *testing.T) {
	s := serveExample(t, "")
	topo, err := topology.Load(s.file)
	if err != nil {
		t.Fatal(err)
	}
	vs, err := vschema.Build(topo)
	if err != nil {
		t.Fatal(err)
	}
	data := ecommerce.Small()
	data.Customers = 100
	if _, err := loadExample(context.Background(), vs, s.dsns, data); err != nil {
		t.Fatal(err)
	}
	c := s.connect(t)
	const q = "SELECT count(*) FROM orders WHERE customer_id = 42"
	orders := queryInt(t, c, q)
	if orders == 0 {
		t.Fatal("customer 42 has no orders in the example data")
	}
	pg0, err := pgx.Connect(context.Background(), s.dsns["pg0"])
	if err != nil {
		t.Fatal(err)
	}
	defer pg0.Close(context.Background())
	if n := queryInt(t, pg0, q); n != 0 {
		t.Fatalf("pg0 holds %d of customer 42's orders; the test needs them all on pg1", n)
	}

	s.edit(t, "\"80-\": pg1", "\"80-\": pg0") // the first one: by_customer
	if n := queryInt(t, c, q); n != orders {
		t.Fatalf("customer 42 has %d orders after the edit, %d before", n, orders)
	}
	if n := queryInt(t, s.connect(t), q); n != orders {
		t.Fatalf("a new session sees %d orders of customer 42, %d before", n, orders)
	}
	logs := s.logs.String()
	for _, want := range []string{
		`msg="topology change refused" change="shard 80- of group by_customer moves from cluster pg1 to pg0: moving data between shards is done by a MoveTables/Reshard workflow; this edit would route to shards that do not hold the rows"`,
		`msg="topology reload refused; keeping the old one`,
	} {
		if !strings.Contains(logs, want) {
			t.Errorf("log lacks %s:\n%s", want, logs)
		}
	}
}

// Growing proxy.pool.size in the file lets a session that waited in vain
// for a connection get one, and a user added to proxy.auth.users can log
// in while the others are refused, without a restart. (Before, the proxy:
// section was ignored on reload.)
func TestReloadAppliesPoolSize(t *testing.T) {
	s := serveExample(t, "proxy:\n  pool: { size: 1, max_wait: 300ms }\n")
	ctx := context.Background()
	holder, other := s.connect(t), s.connect(t)
	for _, sql := range []string{"BEGIN", "SELECT 1"} { // holds main's one connection
		if _, err := holder.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	var pe *pgconn.PgError
	if _, err := other.Exec(ctx, "SELECT 1"); !errors.As(err, &pe) || pe.Code != "53300" {
		t.Fatalf("a second session with a pool of 1: %v, want 53300", err)
	}

	s.edit(t, "size: 1, max_wait: 300ms }", "size: 2, max_wait: 300ms }\n  auth: { users: { app: { password: secret } } }")
	if _, err := other.Exec(ctx, "SELECT 1"); err != nil {
		t.Fatalf("a second session after growing the pool to 2: %v", err)
	}
	if _, err := holder.Exec(ctx, "COMMIT"); err != nil {
		t.Fatal(err)
	}
	logs := s.logs.String()
	for _, want := range []string{
		`msg="topology change applied" change="proxy.pool.size changes from 1 to 2"`,
		`msg="topology change applied" change="proxy.auth.users: user app added"`,
		`msg="topology reloaded"`,
	} {
		if !strings.Contains(logs, want) {
			t.Errorf("log lacks %s:\n%s", want, logs)
		}
	}
	// trust with a users list: app is let in, a name not listed is not.
	app, err := pgx.Connect(ctx, fmt.Sprintf("postgres://app@%s/%s?sslmode=disable", s.addr, ecommerce.Database))
	if err != nil {
		t.Fatalf("user app after the reload added it: %v", err)
	}
	app.Close(ctx)
	_, err = pgx.Connect(ctx, fmt.Sprintf("postgres://nobody@%s/%s?sslmode=disable", s.addr, ecommerce.Database))
	if !errors.As(err, &pe) || pe.Code != "28000" {
		t.Fatalf("user nobody after the reload listed users: %v, want 28000", err)
	}
}
