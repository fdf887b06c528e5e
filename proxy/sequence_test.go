package proxy

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/shardgate/shardgate/internal/proxytest"
)

// seqTopology binds sq_customers.id (the shard key, as customers.id in
// the example) and sq_orders.id (not the key) to sequences of main.
func seqTopology() string {
	return proxytest.Topology("shop", `groups:
  main:
    unsharded: true
    cluster: pg0
    sequences: [sq_customers_id_seq, sq_orders_id_seq]
  by_customer:
    index: { name: by_customer, column: customer_id, type: bigint, function: xxhash }
    shards: { "-80": pg0, "80-": pg1 }
    tables:
      sq_customers: { column: id, sequence: { column: id, name: sq_customers_id_seq } }
      sq_orders:    { sequence: { column: id, name: sq_orders_id_seq } }
    reference: [sq_countries]
`, env.Clusters...)
}

// setupSeq creates the sequences (on main) and tables (on both clusters)
// through the proxy, and the plain table that stands for "what Postgres
// does" directly on a cluster.
func setupSeq(t *testing.T, p *testProxy) *pgx.Conn {
	t.Helper()
	c := connect(t, p.dsn())
	for _, s := range []string{
		"DROP TABLE IF EXISTS sq_customers, sq_orders, sq_countries",
		"DROP SEQUENCE IF EXISTS sq_customers_id_seq, sq_orders_id_seq",
		"CREATE SEQUENCE sq_customers_id_seq",
		"CREATE SEQUENCE sq_orders_id_seq",
		"CREATE TABLE sq_customers (id bigint PRIMARY KEY, name text)",
		"CREATE TABLE sq_orders (id bigint NOT NULL, customer_id bigint NOT NULL, total numeric(12,2), PRIMARY KEY (customer_id, id))",
		"CREATE TABLE sq_countries (code text PRIMARY KEY, n bigint)",
	} {
		mustExec(t, c, s)
	}
	d := connect(t, env.Clusters[1].DSN("shop"))
	mustExec(t, d, "DROP TABLE IF EXISTS sq_plain")
	mustExec(t, d, "CREATE TABLE sq_plain (id bigserial PRIMARY KEY, name text)")
	return c
}

// clusterOf names the cluster that owns a by_customer key.
func clusterOf(t *testing.T, p *testProxy, key int64) string {
	t.Helper()
	g := p.vs.Group("by_customer")
	k, err := g.Index.KeyFromText(fmt.Sprint(key))
	if err != nil {
		t.Fatal(err)
	}
	sh, err := g.ShardFor(k)
	if err != nil {
		t.Fatal(err)
	}
	return sh.Cluster
}

// backendRows reads "key, id" pairs of a table on every cluster directly.
func backendRows(t *testing.T, table, keyCol string) map[string][][2]int64 {
	t.Helper()
	out := map[string][][2]int64{}
	for _, cl := range env.Clusters {
		c := connect(t, cl.DSN("shop"))
		rows, err := c.Query(context.Background(), fmt.Sprintf("SELECT %s, id FROM %s ORDER BY id", keyCol, table))
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var k, id int64
			if err := rows.Scan(&k, &id); err != nil {
				t.Fatal(err)
			}
			out[cl.Name] = append(out[cl.Name], [2]int64{k, id})
		}
		if rows.Err() != nil {
			t.Fatal(rows.Err())
		}
	}
	return out
}

// checkPlacement checks that every row lives on the cluster its key maps
// to, and returns all ids.
func checkPlacement(t *testing.T, p *testProxy, table, keyCol string) []int64 {
	t.Helper()
	var ids []int64
	for cluster, rows := range backendRows(t, table, keyCol) {
		for _, r := range rows {
			if want := clusterOf(t, p, r[0]); want != cluster {
				t.Fatalf("%s: row with key %d (id %d) is on %s, its shard is on %s", table, r[0], r[1], cluster, want)
			}
			ids = append(ids, r[1])
		}
	}
	return ids
}

func queryInts(t *testing.T, c *pgx.Conn, sql string, args ...any) []int64 {
	t.Helper()
	rows, err := c.Query(context.Background(), sql, args...)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return out
}

func strictlyIncreasing(ids []int64) bool {
	for i := 1; i < len(ids); i++ {
		if ids[i] <= ids[i-1] {
			return false
		}
	}
	return true
}

func unique(ids []int64) bool {
	s := slices.Clone(ids)
	slices.Sort(s)
	return len(slices.Compact(s)) == len(ids)
}

// TestSequenceFill: omitted, DEFAULT and nextval() values are drawn by the
// proxy, route on the key and land where the key maps to, in both
// protocols.
func TestSequenceFill(t *testing.T) {
	p := startProxy(t, seqTopology(), nil)
	c := setupSeq(t, p)
	ctx := context.Background()

	// The sequence column is the shard key: the drawn id routes the row.
	var ids []int64
	for i := 0; i < 10; i++ {
		ids = append(ids, queryInts(t, c, "INSERT INTO sq_customers (name) VALUES ($1) RETURNING id", fmt.Sprint("c", i))...)
	}
	ids = append(ids, queryInts(t, c, "INSERT INTO sq_customers (id, name) VALUES (DEFAULT, 'd1'), (DEFAULT, 'd2') RETURNING id", pgx.QueryExecModeSimpleProtocol)...)
	ids = append(ids, queryInts(t, c, "INSERT INTO sq_customers (id, name) VALUES (nextval('sq_customers_id_seq'), $1) RETURNING id", "n1")...)
	ids = append(ids, queryInts(t, c, "INSERT INTO sq_customers DEFAULT VALUES RETURNING id")...)
	if len(ids) != 14 || !strictlyIncreasing(ids) {
		t.Fatalf("customer ids %v: want 14, strictly increasing", ids)
	}
	stored := checkPlacement(t, p, "sq_customers", "id")
	slices.Sort(stored)
	if !slices.Equal(stored, ids) {
		t.Fatalf("stored ids %v, returned %v", stored, ids)
	}

	// A bound column that is not the key: omitted, DEFAULT, nextval().
	mustExec(t, c, "INSERT INTO sq_orders (customer_id, total) VALUES (1, 1), (2, 2), (3, 3), (4, 4)")
	mustExec(t, c, "INSERT INTO sq_orders (id, customer_id, total) VALUES (DEFAULT, 5, 5)")
	if _, err := c.Exec(ctx, "INSERT INTO sq_orders (id, customer_id, total) VALUES (nextval('sq_orders_id_seq'), 6, 6), (DEFAULT, 7, 7)", pgx.QueryExecModeSimpleProtocol); err != nil {
		t.Fatal(err)
	}
	mustExec(t, c, "INSERT INTO sq_orders (id, customer_id, total) VALUES (1000000, 8, 8)")
	orderIDs := checkPlacement(t, p, "sq_orders", "customer_id")
	if len(orderIDs) != 8 || !unique(orderIDs) {
		t.Fatalf("order ids %v", orderIDs)
	}
	for _, cl := range env.Clusters {
		// The shards' own copies of the sequence were never used.
		var n int64
		d := connect(t, cl.DSN("shop"))
		err := d.QueryRow(ctx, "SELECT last_value FROM sq_orders_id_seq").Scan(&n)
		if cl.Name != "pg0" && err == nil {
			t.Fatalf("sequence exists on %s", cl.Name)
		}
	}

	// Table-less SELECT nextval: from the proxy's block, still named
	// nextval, typed bigint, in both protocols.
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeSimpleProtocol} {
		rows, err := c.Query(ctx, "SELECT nextval('sq_orders_id_seq'), nextval('sq_orders_id_seq') AS b", mode)
		if err != nil {
			t.Fatal(err)
		}
		fds := rows.FieldDescriptions()
		var a, b int64
		for rows.Next() {
			if err := rows.Scan(&a, &b); err != nil {
				t.Fatal(err)
			}
		}
		if rows.Err() != nil {
			t.Fatal(rows.Err())
		}
		if fds[0].Name != "nextval" || fds[1].Name != "b" || fds[0].DataTypeOID != 20 {
			t.Fatalf("columns %q %q type %d", fds[0].Name, fds[1].Name, fds[0].DataTypeOID)
		}
		if b <= a || slices.Contains(orderIDs, a) || slices.Contains(orderIDs, b) {
			t.Fatalf("nextval gave %d, %d; ids used %v", a, b, orderIDs)
		}
	}

	// A reference table: every copy gets the same drawn value.
	mustExec(t, c, "INSERT INTO sq_countries (code, n) VALUES ('fr', nextval('sq_orders_id_seq')), ('de', nextval('sq_orders_id_seq'))")
	var copies []string
	for _, cl := range env.Clusters {
		d := connect(t, cl.DSN("shop"))
		var s string
		if err := d.QueryRow(ctx, "SELECT string_agg(code || '=' || n, ',' ORDER BY code) FROM sq_countries").Scan(&s); err != nil {
			t.Fatal(err)
		}
		copies = append(copies, s)
	}
	if copies[0] != copies[1] || copies[0] == "" {
		t.Fatalf("reference copies differ: %q", copies)
	}

	// nextval where the proxy cannot draw it is refused, not run on a shard.
	for _, sql := range []string{
		"UPDATE sq_orders SET total = nextval('sq_orders_id_seq') WHERE customer_id = 1",
		"INSERT INTO sq_orders (id, customer_id, total) SELECT nextval('sq_orders_id_seq'), 1, 1",
	} {
		if _, err := c.Exec(ctx, sql); sqlstate(err) != "0A000" {
			t.Fatalf("%s: want 0A000, got %v", sql, err)
		}
	}
	// INSERT ... SELECT that leaves the id out draws it from main, as
	// INSERT ... VALUES does (it runs in steps: see xwrite).
	var before, after, distinct int
	if err := c.QueryRow(ctx, "SELECT count(*) FROM sq_orders").Scan(&before); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, "INSERT INTO sq_orders (customer_id, total) SELECT customer_id, 0 FROM sq_orders WHERE customer_id = 1"); err != nil {
		t.Fatal(err)
	}
	if err := c.QueryRow(ctx, "SELECT count(*), count(DISTINCT id) FROM sq_orders").Scan(&after, &distinct); err != nil || after <= before || distinct != after {
		t.Fatalf("INSERT ... SELECT drawing ids: %d rows before, %d after, %d distinct ids, %v", before, after, distinct, err)
	}
}

// TestSequenceProxies: ids are unique across two proxies on one main and
// across a restart, and increase per proxy; 20 clients insert at once.
func TestSequenceProxies(t *testing.T) {
	small := func(c *Config) { c.SequenceBlock = 10; c.SequenceBlockMax = 40 }
	p1 := startProxy(t, seqTopology(), small)
	p2 := startProxy(t, seqTopology(), small)
	setupSeq(t, p1)
	c1, c2 := connect(t, p1.dsn()), connect(t, p2.dsn())

	var from1, from2 []int64
	for i := 0; i < 30; i++ {
		from1 = append(from1, queryInts(t, c1, "INSERT INTO sq_customers (name) VALUES ('p1') RETURNING id")...)
		from2 = append(from2, queryInts(t, c2, "INSERT INTO sq_customers (name) VALUES ('p2'), ('p2') RETURNING id", pgx.QueryExecModeSimpleProtocol)...)
	}
	if !strictlyIncreasing(from1) || !strictlyIncreasing(from2) {
		t.Fatalf("ids do not increase per proxy:\n%v\n%v", from1, from2)
	}
	before := append(slices.Clone(from1), from2...)
	if !unique(before) {
		t.Fatalf("two proxies handed out the same id: %v", before)
	}

	// A restarted proxy loses the rest of its block and continues above
	// everything handed out so far.
	p1.srv.Close()
	p3 := startProxy(t, seqTopology(), small)
	c3 := connect(t, p3.dsn())
	after := queryInts(t, c3, "INSERT INTO sq_customers (name) VALUES ('p3'), ('p3'), ('p3') RETURNING id")
	if after[0] <= slices.Max(before) || !strictlyIncreasing(after) {
		t.Fatalf("after restart: %v, before max %d", after, slices.Max(before))
	}

	// 20 concurrent clients over both live proxies, single- and multi-row,
	// both protocols.
	var mu sync.Mutex
	got := slices.Clone(append(before, after...))
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			p := p2
			if i%2 == 0 {
				p = p3
			}
			c, err := pgx.Connect(context.Background(), p.dsn())
			if err != nil {
				errs <- err
				return
			}
			defer c.Close(context.Background())
			var mine []int64
			for j := 0; j < 10; j++ {
				var sql string
				args := []any{}
				switch j % 3 {
				case 0:
					sql = "INSERT INTO sq_customers (name) VALUES ($1) RETURNING id"
					args = append(args, fmt.Sprintf("w%d", i))
				case 1:
					sql = fmt.Sprintf("INSERT INTO sq_customers (name) VALUES ('w%d'), ('w%d'), ('w%d') RETURNING id", i, i, i)
					args = append(args, pgx.QueryExecModeSimpleProtocol)
				default:
					sql = "INSERT INTO sq_customers (id, name) VALUES (DEFAULT, $1), (DEFAULT, $1) RETURNING id"
					args = append(args, fmt.Sprintf("w%d", i))
				}
				rows, err := c.Query(context.Background(), sql, args...)
				if err != nil {
					errs <- err
					return
				}
				ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
				if err != nil {
					errs <- fmt.Errorf("%s: %w", sql, err)
					return
				}
				mine = append(mine, ids...)
			}
			if !strictlyIncreasing(mine) {
				errs <- fmt.Errorf("client %d: ids do not increase: %v", i, mine)
			}
			mu.Lock()
			got = append(got, mine...)
			mu.Unlock()
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if !unique(got) {
		t.Fatalf("duplicate ids among %d", len(got))
	}
	stored := checkPlacement(t, p2, "sq_customers", "id")
	slices.Sort(stored)
	slices.Sort(got)
	if !slices.Equal(stored, got) {
		t.Fatalf("stored %d ids, handed out %d", len(stored), len(got))
	}
	if len(got) != 30+60+3+20*(4+9+6) {
		t.Fatalf("%d rows", len(got))
	}
}

type returned struct {
	ids   []int64
	names []string
	tag   string
}

func returning(t *testing.T, c *pgx.Conn, sql string, mode pgx.QueryExecMode) returned {
	t.Helper()
	rows, err := c.Query(context.Background(), sql, mode)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	var r returned
	for rows.Next() {
		var id int64
		var name string
		if err := rows.Scan(&id, &name); err != nil {
			t.Fatal(err)
		}
		r.ids = append(r.ids, id)
		r.names = append(r.names, name)
	}
	if rows.Err() != nil {
		t.Fatalf("%s: %v", sql, rows.Err())
	}
	r.tag = rows.CommandTag().String()
	return r
}

// TestSplitInsertReturning: RETURNING of an INSERT split over both
// clusters comes back in the order a plain Postgres returns it, with the
// summed tag, with and without ON CONFLICT, in both protocols.
func TestSplitInsertReturning(t *testing.T) {
	p := startProxy(t, seqTopology(), nil)
	c := setupSeq(t, p)
	plain := connect(t, env.Clusters[1].DSN("shop"))
	modes := []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement}

	values := func(ids []int64, name string) string {
		var parts []string
		for _, id := range ids {
			parts = append(parts, fmt.Sprintf("(%d, '%s%d')", id, name, id))
		}
		return strings.Join(parts, ", ")
	}
	// Ten keys spread over both clusters, in an order that interleaves them.
	keys := []int64{17, 3, 8, 42, 1, 29, 5, 11, 64, 2}
	spread := map[string]int{}
	for _, k := range keys {
		spread[clusterOf(t, p, k)]++
	}
	if len(spread) != 2 {
		t.Fatalf("keys do not span both clusters: %v", spread)
	}

	for i, mode := range modes {
		base := int64(1000 * (i + 1))
		ks := make([]int64, len(keys))
		for j, k := range keys {
			ks[j] = base + k
		}
		// Plain INSERT ... RETURNING.
		stmt := func(table string) string {
			return fmt.Sprintf("INSERT INTO %s (id, name) VALUES %s RETURNING id, name", table, values(ks, "n"))
		}
		want := returning(t, plain, stmt("sq_plain"), mode)
		got := returning(t, c, stmt("sq_customers"), mode)
		if !slices.Equal(got.ids, want.ids) || !slices.Equal(got.names, want.names) || got.tag != want.tag {
			t.Fatalf("mode %v: got %v %s, Postgres %v %s", mode, got.ids, got.tag, want.ids, want.tag)
		}

		// ON CONFLICT DO NOTHING: half the rows exist already.
		more := append(slices.Clone(ks[5:]), base+100, base+101, base+102, base+103, base+104)
		stmt = func(table string) string {
			return fmt.Sprintf("INSERT INTO %s (id, name) VALUES %s ON CONFLICT DO NOTHING RETURNING id, name", table, values(more, "m"))
		}
		want = returning(t, plain, stmt("sq_plain"), mode)
		got = returning(t, c, stmt("sq_customers"), mode)
		if !slices.Equal(got.ids, want.ids) || got.tag != want.tag || got.tag != "INSERT 0 5" {
			t.Fatalf("DO NOTHING, mode %v: got %v %s, Postgres %v %s", mode, got.ids, got.tag, want.ids, want.tag)
		}

		// ON CONFLICT DO UPDATE: every row returned, in statement order.
		stmt = func(table string) string {
			return fmt.Sprintf("INSERT INTO %s AS t (id, name) VALUES %s ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name RETURNING id, name", table, values(more, "u"))
		}
		want = returning(t, plain, stmt("sq_plain"), mode)
		got = returning(t, c, stmt("sq_customers"), mode)
		if !slices.Equal(got.ids, want.ids) || !slices.Equal(got.names, want.names) || got.tag != want.tag || got.tag != "INSERT 0 10" {
			t.Fatalf("DO UPDATE, mode %v: got %v %v %s, Postgres %v %v %s", mode, got.ids, got.names, got.tag, want.ids, want.names, want.tag)
		}

		// DO UPDATE ... WHERE skips some rows.
		stmt = func(table string) string {
			return fmt.Sprintf("INSERT INTO %s AS t (id, name) VALUES %s ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name WHERE t.id %% 2 = 0 RETURNING id, name", table, values(more, "w"))
		}
		want = returning(t, plain, stmt("sq_plain"), mode)
		got = returning(t, c, stmt("sq_customers"), mode)
		if !slices.Equal(got.ids, want.ids) || !slices.Equal(got.names, want.names) || got.tag != want.tag {
			t.Fatalf("DO UPDATE WHERE, mode %v: got %v %v %s, Postgres %v %v %s", mode, got.ids, got.names, got.tag, want.ids, want.names, want.tag)
		}
	}

	// Drawn keys: the names come back in statement order, the ids drawn
	// row by row increase, exactly as a serial column's would.
	var names []string
	for i := 0; i < 10; i++ {
		names = append(names, fmt.Sprintf("('s%d')", i))
	}
	for _, mode := range modes {
		sql := "INSERT INTO %s (name) VALUES " + strings.Join(names, ", ") + " RETURNING id, name"
		want := returning(t, plain, fmt.Sprintf(sql, "sq_plain"), mode)
		got := returning(t, c, fmt.Sprintf(sql, "sq_customers"), mode)
		if !slices.Equal(got.names, want.names) || !strictlyIncreasing(got.ids) || got.tag != "INSERT 0 10" {
			t.Fatalf("drawn keys, mode %v: got %v %v %s, Postgres %v", mode, got.ids, got.names, got.tag, want.names)
		}
		on := map[string]bool{}
		for _, id := range got.ids {
			on[clusterOf(t, p, id)] = true
		}
		if len(on) != 2 {
			t.Fatalf("drawn keys %v all on one cluster", got.ids)
		}
	}
}

// TestScatterWrites: UPDATE and DELETE without the key report the summed
// row count, and RETURNING concatenates the clusters' rows.
func TestScatterWrites(t *testing.T) {
	p := startProxy(t, seqTopology(), nil)
	c := setupSeq(t, p)
	ctx := context.Background()
	mustExec(t, c, "INSERT INTO sq_customers (id, name) VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd'), (5, 'e'), (6, 'f'), (7, 'g'), (8, 'h')")
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
		tag, err := c.Exec(ctx, "UPDATE sq_customers SET name = name || 'x'", mode)
		if err != nil || tag.String() != "UPDATE 8" {
			t.Fatalf("scatter UPDATE: %v %v", tag, err)
		}
		tag, err = c.Exec(ctx, "UPDATE sq_customers SET name = 'z' WHERE id > 100", mode)
		if err != nil || tag.String() != "UPDATE 0" {
			t.Fatalf("scatter UPDATE of nothing: %v %v", tag, err)
		}
	}
	rows, err := c.Query(ctx, "UPDATE sq_customers SET name = 'u' WHERE id % 2 = 0 RETURNING id")
	if err != nil {
		t.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	if !slices.Equal(ids, []int64{2, 4, 6, 8}) || rows.CommandTag().String() != "UPDATE 4" {
		t.Fatalf("UPDATE RETURNING: %v %s", ids, rows.CommandTag())
	}
	rows, err = c.Query(ctx, "DELETE FROM sq_customers WHERE name = 'u' RETURNING id, name", pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rows.Next() {
		n++
	}
	if rows.Err() != nil || n != 4 || rows.CommandTag().String() != "DELETE 4" {
		t.Fatalf("DELETE RETURNING: %d rows, %s, %v", n, rows.CommandTag(), rows.Err())
	}
	tag, err := c.Exec(ctx, "DELETE FROM sq_customers")
	if err != nil || tag.String() != "DELETE 4" {
		t.Fatalf("scatter DELETE: %v %v", tag, err)
	}
}

// TestSplitInsertAtomic: a split INSERT that fails on one cluster leaves
// nothing on the other, in both protocols, outside a transaction.
func TestSplitInsertAtomic(t *testing.T) {
	p := startProxy(t, seqTopology(), nil)
	c := setupSeq(t, p)
	ctx := context.Background()
	var a, b int64 // keys on different clusters
	for k := int64(1); a == 0 || b == 0; k++ {
		if clusterOf(t, p, k) == "pg0" && a == 0 {
			a = k
		} else if clusterOf(t, p, k) == "pg1" && b == 0 {
			b = k
		}
	}
	mustExec(t, c, "INSERT INTO sq_customers (id, name) VALUES ($1, 'taken')", b)
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement, pgx.QueryExecModeExec} {
		_, err := c.Exec(ctx, "INSERT INTO sq_customers (id, name) VALUES ($1, 'new'), ($2, 'dup')", mode, a, b)
		if sqlstate(err) != "23505" {
			t.Fatalf("mode %v: want 23505, got %v", mode, err)
		}
		if n := count(t, env.Clusters[0].DSN("shop"), "SELECT count(*) FROM sq_customers"); n != 0 {
			t.Fatalf("mode %v: the failed split INSERT left %d rows on pg0", mode, n)
		}
	}
	// And a good one commits on both (two-phase), leaving nothing prepared.
	other := b + 1
	for clusterOf(t, p, other) != "pg1" {
		other++
	}
	tag, err := c.Exec(ctx, "INSERT INTO sq_customers (id, name) VALUES ($1, 'new'), ($2, 'other')", a, other)
	if err != nil || tag.String() != "INSERT 0 2" {
		t.Fatalf("%v %v", tag, err)
	}
	if n := preparedCount(t); n != 0 {
		t.Fatalf("%d prepared transactions left", n)
	}
}

// TestPipelineAtomic: a pipeline (one Sync) runs in one implicit
// transaction, as in Postgres: when its split INSERT fails on one
// cluster, the statements before it roll back too, also on a cluster the
// pipeline used before the split began (joinTx).
func TestPipelineAtomic(t *testing.T) {
	p := startProxy(t, seqTopology(), nil)
	c := setupSeq(t, p)
	ctx := context.Background()
	var on0, on1 []int64 // explicit ids, far above the drawn ones
	for k := int64(1_000_000); len(on0) < 3 || len(on1) < 3; k++ {
		if clusterOf(t, p, k) == "pg0" {
			on0 = append(on0, k)
		} else {
			on1 = append(on1, k)
		}
	}
	mustExec(t, c, "INSERT INTO sq_customers (id, name) VALUES ($1, 'taken')", on1[0])

	b := &pgx.Batch{}
	b.Queue("INSERT INTO sq_customers (id, name) VALUES ($1, 'first')", on0[0])
	b.Queue("INSERT INTO sq_customers (id, name) VALUES ($1, 'split'), ($2, 'dup')", on0[1], on1[0])
	err := c.SendBatch(ctx, b).Close()
	if sqlstate(err) != "23505" {
		t.Fatalf("want 23505, got %v", err)
	}
	if n := count(t, env.Clusters[0].DSN("shop"), "SELECT count(*) FROM sq_customers"); n != 0 {
		t.Fatalf("the failed pipeline left %d rows on pg0", n)
	}

	b = &pgx.Batch{}
	b.Queue("INSERT INTO sq_customers (id, name) VALUES ($1, 'first')", on0[0])
	b.Queue("INSERT INTO sq_customers (name) VALUES ('d1'), ('d2'), ('d3'), ('d4') RETURNING id")
	b.Queue("INSERT INTO sq_customers (id, name) VALUES ($1, 'last'), ($2, 'last')", on0[2], on1[1])
	if err := c.SendBatch(ctx, b).Close(); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, cl := range env.Clusters {
		n += count(t, cl.DSN("shop"), "SELECT count(*) FROM sq_customers")
	}
	if n != 1+1+4+2 {
		t.Fatalf("%d rows after the pipeline", n)
	}
	if n := preparedCount(t); n != 0 {
		t.Fatalf("%d prepared transactions left", n)
	}
}
