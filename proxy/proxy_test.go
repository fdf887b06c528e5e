package proxy

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/shardgate/shardgate/internal/proxytest"
	"github.com/shardgate/shardgate/internal/testenv"
	"github.com/shardgate/shardgate/topology"
	"github.com/shardgate/shardgate/vschema"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	testenv.Run(m, testenv.Options{N: 2, Databases: []string{"shop"}}, func(e *testenv.Env) error {
		env = e
		// Clients logged in with md5 or scram-sha-256 run as their own role
		// (identity.go): the tests' users app and ops are roles on every cluster.
		return createRoles(e, "app", "ops")
	})
}

// shopTopology is the example's shape over the test clusters.
func shopTopology(extra string) string {
	return proxytest.Topology("shop", `groups:
  main:
    unsharded: true
    cluster: pg0
  by_customer:
    index: { name: by_customer, column: customer_id, type: bigint, function: xxhash }
    shards: { "-80": pg0, "80-": pg1 }
    tables:
      customers: { column: id }
      orders: {}
    reference: [countries]
  catalog:
    index: { name: by_sku, expression: "lower(sku)", type: text, function: xxhash }
    shards: { "-80": pg0, "80-": pg1 }
    tables:
      products: {}
`+extra, env.Clusters...)
}

type testProxy struct {
	srv  *Server
	addr string
	vs   *vschema.VSchema
}

func (p *testProxy) dsn() string { return proxytest.DSN(p.addr, "app", "shop") }

// connect opens a client connection for the test (proxytest.Connect).
func connect(t testing.TB, dsn string) *pgx.Conn { return proxytest.Connect(t, dsn) }

func startProxy(t testing.TB, yaml string, mod func(*Config)) *testProxy {
	t.Helper()
	topo := proxytest.Parse(t, yaml)
	cfg := Config{PoolSize: 5, MaxWait: 5 * time.Second, Logger: proxytest.Logger()}
	if mod != nil {
		mod(&cfg)
	}
	srv, err := NewServer(cfg, topo)
	if err != nil {
		t.Fatal(err)
	}
	addr := proxytest.Serve(t, srv)
	vs, _ := vschema.Build(topo)
	// Registered after Serve's clean-up, so it runs first: a connection
	// given back twice, or used once given back, may have been lent to two
	// sessions at once.
	t.Cleanup(func() {
		for name, pool := range srv.cur.Load().pools {
			if n := pool.Misuses(); n > 0 {
				t.Errorf("cluster %s: %d times a connection was given back twice or used while in the pool", name, n)
			}
		}
	})
	return &testProxy{srv: srv, addr: addr, vs: vs}
}

func mustExec(t testing.TB, c *pgx.Conn, sql string, args ...any) {
	t.Helper()
	if _, err := c.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func sqlstate(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

var schemaOnce sync.Once

// setupShop creates the example tables through the proxy (DDL fan-out) and
// empties them.
func setupShop(t *testing.T, p *testProxy) *pgx.Conn {
	t.Helper()
	c := connect(t, p.dsn())
	for _, s := range []string{
		"DROP TABLE IF EXISTS customers, orders, countries",
		"DROP TABLE IF EXISTS products",
		"DROP TABLE IF EXISTS settings",
		"CREATE TABLE customers (id bigint PRIMARY KEY, name text)",
		"CREATE TABLE orders (id bigint, customer_id bigint NOT NULL, total numeric(12,2), PRIMARY KEY (customer_id, id))",
		"CREATE TABLE countries (code text PRIMARY KEY, name text)",
		"CREATE TABLE products (sku text, name text)",
		"CREATE TABLE settings (k text PRIMARY KEY, v text)",
	} {
		mustExec(t, c, s)
	}
	return c
}

func count(t testing.TB, dsn, sql string, args ...any) int {
	t.Helper()
	c := connect(t, dsn)
	var n int
	if err := c.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

func TestSingleShardRouting(t *testing.T) {
	p := startProxy(t, shopTopology(""), nil)
	c := setupShop(t, p)
	ctx := context.Background()
	for id := 1; id <= 20; id++ {
		mustExec(t, c, "INSERT INTO customers (id, name) VALUES ($1, $2)", id, fmt.Sprintf("c%d", id))
		mustExec(t, c, fmt.Sprintf("INSERT INTO orders (id, customer_id, total) VALUES (%d, %d, 10.5), (%d, %d, 20)", id*10, id, id*10+1, id))
	}
	// Each customer's rows are on the cluster its key maps to, and only there.
	g := p.vs.Group("by_customer")
	for id := 1; id <= 20; id++ {
		key, err := g.Index.KeyFromText(fmt.Sprint(id))
		if err != nil {
			t.Fatal(err)
		}
		sh, err := g.ShardFor(key)
		if err != nil {
			t.Fatal(err)
		}
		for i, cl := range env.Clusters {
			n := count(t, cl.DSN("shop"), "SELECT count(*) FROM orders WHERE customer_id = $1", id)
			want := 0
			if cl.Name == sh.Cluster {
				want = 2
			}
			if n != want {
				t.Fatalf("customer %d: cluster %d has %d orders, want %d (shard %s)", id, i, n, want, sh.Name)
			}
		}
		var total float64
		if err := c.QueryRow(ctx, "SELECT sum(total)::float8 FROM orders WHERE customer_id = $1", id).Scan(&total); err != nil {
			t.Fatal(err)
		}
		if total != 30.5 {
			t.Fatalf("customer %d total %v", id, total)
		}
	}
	// Scatter without merging concatenates.
	var n int
	rows, err := c.Query(ctx, "SELECT id FROM customers")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		n++
	}
	if rows.Err() != nil || n != 20 {
		t.Fatalf("scatter read %d rows, err %v", n, rows.Err())
	}
	// Scatter UPDATE sums the command tags.
	tag, err := c.Exec(ctx, "UPDATE orders SET total = total + 1")
	if err != nil || tag.RowsAffected() != 40 {
		t.Fatalf("scatter update: %v %v", tag, err)
	}
	// Reference table writes reach every cluster.
	mustExec(t, c, "INSERT INTO countries VALUES ('de', 'Germany'), ('fr', 'France')")
	for _, cl := range env.Clusters {
		if n := count(t, cl.DSN("shop"), "SELECT count(*) FROM countries"); n != 2 {
			t.Fatalf("%s has %d countries", cl.Name, n)
		}
	}
	// A merge the proxy cannot do is refused, never answered wrong.
	_, err = c.Exec(ctx, "SELECT id, rank() OVER (ORDER BY id) FROM customers FOR UPDATE")
	if sqlstate(err) != "0A000" {
		t.Fatalf("cross-shard window function: want 0A000, got %v", err)
	}
	// One it can do is merged (merge_test.go has the rest).
	var ids []int64
	rows, err = c.Query(ctx, "SELECT id FROM customers ORDER BY id DESC LIMIT 3")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if rows.Err() != nil || fmt.Sprint(ids) != "[20 19 18]" {
		t.Fatalf("cross-shard ORDER BY ... LIMIT: %v %v", ids, rows.Err())
	}
	// Updating the shard key is refused.
	_, err = c.Exec(ctx, "UPDATE orders SET customer_id = 5 WHERE customer_id = 1")
	if sqlstate(err) != "0A000" {
		t.Fatalf("shard key update: want 0A000, got %v", err)
	}
	// Backend errors keep their SQLSTATE.
	_, err = c.Exec(ctx, "INSERT INTO customers (id, name) VALUES (1, 'dup')")
	if sqlstate(err) != "23505" {
		t.Fatalf("duplicate: want 23505, got %v", err)
	}
	_, err = c.Exec(ctx, "SELECT * FROM no_such_table")
	if sqlstate(err) != "42P01" {
		t.Fatalf("unknown table: want 42P01, got %v", err)
	}
}

func TestExecModes(t *testing.T) {
	p := startProxy(t, shopTopology(""), nil)
	c := setupShop(t, p)
	ctx := context.Background()
	mustExec(t, c, "INSERT INTO customers (id, name) VALUES (7, 'seven'), (8, 'eight'), (9, 'nine')")
	modes := []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeCacheDescribe,
		pgx.QueryExecModeDescribeExec, pgx.QueryExecModeExec, pgx.QueryExecModeSimpleProtocol}
	for _, m := range modes {
		for _, id := range []int64{7, 8, 9} {
			var name string
			if err := c.QueryRow(ctx, "SELECT name FROM customers WHERE id = $1", m, id).Scan(&name); err != nil {
				t.Fatalf("mode %v id %d: %v", m, id, err)
			}
			if want := map[int64]string{7: "seven", 8: "eight", 9: "nine"}[id]; name != want {
				t.Fatalf("mode %v: got %q want %q", m, name, want)
			}
		}
	}
	// Expression index: products by lower(sku).
	mustExec(t, c, "INSERT INTO products (sku, name) VALUES ('AbC-1', 'x'), ('xyZ-2', 'y')")
	var name string
	if err := c.QueryRow(ctx, "SELECT name FROM products WHERE sku = $1", "AbC-1").Scan(&name); err != nil || name != "x" {
		t.Fatalf("sku lookup: %q %v", name, err)
	}
	// Bad key values are 22P02.
	_, err := c.Exec(ctx, "SELECT * FROM customers WHERE id = 'abc'")
	if sqlstate(err) != "22P02" {
		t.Fatalf("bad key: want 22P02, got %v", err)
	}
	// Batches (pipeline) work.
	b := &pgx.Batch{}
	for id := 7; id <= 9; id++ {
		b.Queue("SELECT name FROM customers WHERE id = $1", id)
	}
	br := c.SendBatch(ctx, b)
	for i := 0; i < 3; i++ {
		var s string
		if err := br.QueryRow().Scan(&s); err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
	}
	if err := br.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestTransactions(t *testing.T) {
	p := startProxy(t, shopTopology(""), nil)
	c := setupShop(t, p)
	ctx := context.Background()
	// Rollback across two clusters.
	tx, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for id := 1; id <= 10; id++ {
		if _, err := tx.Exec(ctx, "INSERT INTO customers (id, name) VALUES ($1, 'x')", id); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if n := count(t, env.Clusters[0].DSN("shop"), "SELECT count(*) FROM customers") + count(t, env.Clusters[1].DSN("shop"), "SELECT count(*) FROM customers"); n != 0 {
		t.Fatalf("after rollback %d rows", n)
	}
	// Commit, with a savepoint rolled back in the middle.
	mustExec(t, c, "BEGIN")
	mustExec(t, c, "INSERT INTO customers (id, name) VALUES (1, 'a')")
	mustExec(t, c, "SAVEPOINT s1")
	mustExec(t, c, "INSERT INTO customers (id, name) VALUES (2, 'b'), (3, 'c'), (4, 'd')")
	mustExec(t, c, "ROLLBACK TO SAVEPOINT s1")
	mustExec(t, c, "INSERT INTO customers (id, name) VALUES (5, 'e')")
	mustExec(t, c, "COMMIT")
	var n int
	if err := c.QueryRow(ctx, "SELECT count(*) FROM customers WHERE id IN (1,2,3,4,5)").Scan(&n); err != nil || n != 2 {
		t.Fatalf("after savepoint rollback: cross-shard count %d, %v", n, err)
	}
	got := 0
	for _, id := range []int{1, 2, 3, 4, 5} {
		var k int
		if err := c.QueryRow(ctx, "SELECT count(*) FROM customers WHERE id = $1", id).Scan(&k); err != nil {
			t.Fatal(err)
		}
		got += k
	}
	if got != 2 {
		t.Fatalf("after savepoint rollback: %d customers, want 2", got)
	}
	// The aborted state is reported as Postgres does.
	mustExec(t, c, "BEGIN")
	_, err = c.Exec(ctx, "INSERT INTO customers (id, name) VALUES (1, 'dup')")
	if sqlstate(err) != "23505" {
		t.Fatalf("want 23505, got %v", err)
	}
	_, err = c.Exec(ctx, "SELECT 1")
	if sqlstate(err) != "25P02" {
		t.Fatalf("want 25P02, got %v", err)
	}
	if st := c.PgConn().TxStatus(); st != 'E' {
		t.Fatalf("tx status %c, want E", st)
	}
	mustExec(t, c, "ROLLBACK")
	if st := c.PgConn().TxStatus(); st != 'I' {
		t.Fatalf("tx status %c, want I", st)
	}
	// Multi-statement simple query is one implicit transaction.
	_, err = c.PgConn().Exec(ctx, "INSERT INTO customers (id, name) VALUES (100, 'x'); INSERT INTO customers (id, name) VALUES (1, 'dup')").ReadAll()
	if err == nil {
		t.Fatal("want duplicate error")
	}
	var k int
	if err := c.QueryRow(ctx, "SELECT count(*) FROM customers WHERE id = 100").Scan(&k); err != nil || k != 0 {
		t.Fatalf("implicit transaction not rolled back: %d %v", k, err)
	}
}

func TestTransactionPooling(t *testing.T) {
	p := startProxy(t, shopTopology(""), func(c *Config) { c.PoolSize = 5 })
	c := setupShop(t, p)
	for id := 1; id <= 50; id++ {
		mustExec(t, c, "INSERT INTO customers (id, name) VALUES ($1, $2)", id, fmt.Sprintf("n%d", id))
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for i := 1; i <= 50; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			cc, err := pgx.Connect(ctx, p.dsn())
			if err != nil {
				errs <- err
				return
			}
			defer cc.Close(ctx)
			app := fmt.Sprintf("client%d", i)
			if _, err := cc.Exec(ctx, "SET application_name = '"+app+"'"); err != nil {
				errs <- err
				return
			}
			for j := 0; j < 20; j++ {
				id := (i+j)%50 + 1
				var name, got string
				if err := cc.QueryRow(ctx, "SELECT name, current_setting('application_name') FROM customers WHERE id = $1", id).Scan(&name, &got); err != nil {
					errs <- fmt.Errorf("client %d: %w", i, err)
					return
				}
				if name != fmt.Sprintf("n%d", id) || got != app {
					errs <- fmt.Errorf("client %d: got %q/%q", i, name, got)
					return
				}
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for name, st := range poolStats(p.srv) {
		if st[0] > 5 {
			t.Errorf("pool %s opened %d connections, size 5", name, st[0])
		}
	}
}

func TestClusterDown(t *testing.T) {
	p := startProxy(t, shopTopology(""), nil)
	c := setupShop(t, p)
	ctx := context.Background()
	// Find one customer on each cluster.
	g := p.vs.Group("by_customer")
	on := map[string]int{}
	for id := 1; len(on) < 2; id++ {
		k, _ := g.Index.KeyFromText(fmt.Sprint(id))
		sh, _ := g.ShardFor(k)
		if _, ok := on[sh.Cluster]; !ok {
			on[sh.Cluster] = id
			mustExec(t, c, "INSERT INTO customers (id, name) VALUES ($1, 'x')", id)
		}
	}
	pg1 := env.Clusters[1]
	if err := pg1.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	defer pg1.Start(ctx)
	var n int
	if err := c.QueryRow(ctx, "SELECT count(*) FROM customers WHERE id = $1", on["pg0"]).Scan(&n); err != nil || n != 1 {
		t.Fatalf("pg0 while pg1 down: %d %v", n, err)
	}
	err := c.QueryRow(ctx, "SELECT count(*) FROM customers WHERE id = $1", on["pg1"]).Scan(&n)
	if sqlstate(err) != "08006" || !strings.Contains(err.Error(), "pg1") {
		t.Fatalf("pg1 down: want 08006 naming pg1, got %v", err)
	}
	if err := pg1.Start(ctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		err = c.QueryRow(ctx, "SELECT count(*) FROM customers WHERE id = $1", on["pg1"]).Scan(&n)
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil || n != 1 {
		t.Fatalf("after restart: %d %v", n, err)
	}
}

func TestMalformedInput(t *testing.T) {
	p := startProxy(t, shopTopology(""), nil)
	good := connect(t, p.dsn())
	inputs := [][]byte{
		{},
		[]byte("GET / HTTP/1.1\r\n\r\n"),
		{0, 0, 0, 8, 0, 2, 0, 0},       // protocol 2.0
		{0, 0, 0, 3},                   // too short
		{0x7f, 0xff, 0xff, 0xff, 0, 3}, // huge length
		{0, 0, 0, 16, 0, 3, 0, 0, 'u', 's', 'e', 'r', 0, 'x', 0, 0},
	}
	for i, in := range inputs {
		nc, err := net.Dial("tcp", p.addr)
		if err != nil {
			t.Fatal(err)
		}
		_ = nc.SetDeadline(time.Now().Add(3 * time.Second))
		_, _ = nc.Write(in)
		if tc, ok := nc.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		_, _ = io.ReadAll(nc)
		nc.Close()
		_ = i
	}
	// Oversized and unknown messages after a good startup.
	for _, tail := range [][]byte{
		{'Q', 0x7f, 0, 0, 0},
		{'?', 0, 0, 0, 4},
		{'B', 0, 0, 0, 5, 1},
	} {
		pc, err := pgconn.Connect(context.Background(), p.dsn())
		if err != nil {
			t.Fatal(err)
		}
		hj, err := pc.Hijack()
		if err != nil {
			t.Fatal(err)
		}
		_, _ = hj.Conn.Write(tail)
		_ = hj.Conn.SetDeadline(time.Now().Add(3 * time.Second))
		_, _ = io.ReadAll(hj.Conn)
		hj.Conn.Close()
	}
	var one int
	if err := good.QueryRow(context.Background(), "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("other session broken: %v", err)
	}
}

func parseTopo(yaml string) (*topology.Topology, error) {
	return topology.Parse("test.yaml", []byte(yaml))
}

func mustMD5(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// poolStats reports open and idle backend connections per cluster.
func poolStats(s *Server) map[string][2]int {
	out := map[string][2]int{}
	for name, p := range s.cur.Load().pools {
		pi := p.Info()
		out[name] = [2]int{pi.Open, pi.Idle}
	}
	return out
}
