package topoinit

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/shardgate/shardgate/examples/ecommerce"
	"github.com/shardgate/shardgate/internal/proxytest"
	"github.com/shardgate/shardgate/internal/testenv"
	"github.com/shardgate/shardgate/proxy"
	"github.com/shardgate/shardgate/topology"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	testenv.Run(m, testenv.Options{N: 1, Databases: []string{"shop", "bench"}}, func(e *testenv.Env) error {
		env = e
		return nil
	})
}

// loadShop puts the e-commerce example, schema and a small data set, in
// one database, as on an application's only server.
func loadShop(t *testing.T, c *pgx.Conn) {
	t.Helper()
	ctx := context.Background()
	ddl := ecommerce.GroupSchema("main")
	for _, g := range ecommerce.SchemaGroups() {
		ddl += ecommerce.GroupSchema(g)
	}
	if _, err := c.Exec(ctx, ddl); err != nil {
		t.Fatal(err)
	}
	rows := map[string][][]any{}
	cols := map[string][]string{}
	cfg := ecommerce.Config{Customers: 20, OrdersPerCustomer: 2, ItemsPerOrder: 2, Products: 10, Seed: 1}
	stats, err := ecommerce.Generate(cfg, func(table string, c []string, row []any) error {
		cols[table] = c
		rows[table] = append(rows[table], row)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for table, rs := range rows {
		if _, err := c.CopyFrom(ctx, pgx.Identifier{table}, cols[table], pgx.CopyFromRows(rs)); err != nil {
			t.Fatalf("copy %s: %v", table, err)
		}
	}
	if _, err := c.Exec(ctx, stats.SetvalSQL()); err != nil {
		t.Fatal(err)
	}
}

// loadPgbench runs pgbench -i with foreign keys (-I dtgvpf) on bench.
func loadPgbench(t *testing.T) {
	t.Helper()
	bin := testenv.Pgbench(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-i", "-s", "1", "-I", "dtgvpf", env.Clusters[0].DSN("bench"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("pgbench -i: %v\n%s", err, out)
	}
}

// initAndServe inspects db, renders its topology, checks that it
// validates and lists what it must, serves it, and returns the rendered
// file and a client connection through the proxy.
func initAndServe(t *testing.T, db string, wantTables, wantSequences []string) (string, *pgx.Conn) {
	t.Helper()
	ctx := context.Background()
	c, err := env.Clusters[0].Conn(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	s, err := Inspect(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	yaml := Render(s, Options{Cluster: "db1", DSN: env.Clusters[0].DSN(db)})
	topo, err := topology.Parse(db+".yaml", []byte(yaml))
	if err != nil {
		t.Fatalf("%v\n%s", err, yaml)
	}
	main := topo.Groups[0]
	if main.Name != topology.MainGroup || main.Cluster != "db1" || len(topo.Clusters) != 1 {
		t.Fatalf("main group %q on %q, %d clusters", main.Name, main.Cluster, len(topo.Clusters))
	}
	var tables, seqs []string
	for _, tb := range main.Tables {
		tables = append(tables, tb.Name)
	}
	for _, sq := range main.Sequences {
		seqs = append(seqs, sq.Name)
	}
	if strings.Join(tables, " ") != strings.Join(wantTables, " ") || strings.Join(seqs, " ") != strings.Join(wantSequences, " ") {
		t.Fatalf("main lists tables %v and sequences %v, want %v and %v", tables, seqs, wantTables, wantSequences)
	}
	// Each suggestion, uncommented, is a valid group (its tables out of
	// main's list).
	for _, sg := range Suggest(s) {
		group := strings.Join(suggestionYAML(sg, "db1"), "\n")
		doc := "version: 1\nclusters:\n  db1: { dsn: \"postgres://h/" + db + "\" }\ngroups:\n  main: { unsharded: true, cluster: db1 }\n" + group + "\n"
		if _, err := topology.Parse(sg.Group+".yaml", []byte(doc)); err != nil {
			t.Errorf("suggestion %s does not validate: %v\n%s", sg.Group, err, doc)
		}
	}
	srv, err := proxy.NewServer(proxy.Config{PoolSize: 2, MaxWait: 5 * time.Second, Logger: proxytest.Logger()}, topo)
	if err != nil {
		t.Fatal(err)
	}
	addr := proxytest.Serve(t, srv)
	return yaml, proxytest.Connect(t, proxytest.DSN(addr, "postgres", db))
}

// TestInitEcommerce: the example shop in one database gives a topology
// with its nine tables and four sequences in main, a by_customer_id
// suggestion (customers by id, the others by customer_id), and the proxy
// serves it: reads and a write that draws from a sequence.
func TestInitEcommerce(t *testing.T) {
	ctx := context.Background()
	c, err := env.Clusters[0].Conn(ctx, "shop")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	loadShop(t, c)
	yaml, pc := initAndServe(t, "shop",
		[]string{"addresses", "countries", "currencies", "customers", "customers_by_email", "items", "orders", "orders_by_id", "products"},
		[]string{"customers_id_seq", "items_id_seq", "orders_id_seq", "products_id_seq"})
	mustContain(t, yaml,
		"# column customer_id (bigint) in addresses, items, orders, orders_by_id;\n# customers.id is its key",
		"#   by_customer_id:",
		"#     index: { name: by_customer_id, column: customer_id, type: bigint, function: xxhash }",
		"#       customers: { column: id }",
		"#       orders: {}")
	var n int
	if err := pc.QueryRow(ctx, "SELECT count(*) FROM customers c JOIN orders o ON o.customer_id = c.id").Scan(&n); err != nil || n == 0 {
		t.Fatalf("join through the proxy: %d rows, %v", n, err)
	}
	var id int64
	if err := pc.QueryRow(ctx, "INSERT INTO customers (id, name, email, country) VALUES (nextval('customers_id_seq'), 'x', 'x@example.com', 'DE') RETURNING id").Scan(&id); err != nil || id <= 20 {
		t.Fatalf("insert through the proxy: id %d, %v", id, err)
	}
}

// TestInitPgbench: pgbench's schema with its foreign keys gives a topology
// with the four tables in main and no sequence, a suggestion keyed by
// pgbench_branches.bid, and the proxy serves it.
func TestInitPgbench(t *testing.T) {
	loadPgbench(t)
	yaml, pc := initAndServe(t, "bench",
		[]string{"pgbench_accounts", "pgbench_branches", "pgbench_history", "pgbench_tellers"}, nil)
	mustContain(t, yaml,
		"# foreign keys: pgbench_branches.bid is referenced by",
		"#   by_pgbench_branches:",
		"#     index: { name: by_pgbench_branches, column: bid, type: integer, function: xxhash }",
		"#       pgbench_tellers: {}")
	var n int
	if err := pc.QueryRow(context.Background(), "SELECT count(*) FROM pgbench_accounts").Scan(&n); err != nil || n != 100000 {
		t.Fatalf("count through the proxy: %d, %v", n, err)
	}
}

// mustContain fails the test for each of wants that text lacks.
func mustContain(t *testing.T, text string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(text, w) {
			t.Errorf("missing %q in\n%s", w, text)
		}
	}
}
