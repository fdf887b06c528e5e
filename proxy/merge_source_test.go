package proxy

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// mergeOracle runs each statement through the proxy and on a plain
// Postgres connection holding the same rows, and compares tags, SQLSTATEs
// and the rows of a query.
type mergeOracle struct {
	t            *testing.T
	proxy, plain *pgx.Conn
}

// both runs sql on both sides and requires the same tag, or the same
// SQLSTATE (want, when not "").
func (o mergeOracle) both(want string, sql string, mode pgx.QueryExecMode, args ...any) {
	o.t.Helper()
	ctx := context.Background()
	exp, perr := o.plain.Exec(ctx, sql, append([]any{pgx.QueryExecModeExec}, args...)...)
	got, err := o.proxy.Exec(ctx, sql, append([]any{mode}, args...)...)
	switch {
	case sqlstate(perr) != want || want == "" && perr != nil:
		o.t.Fatalf("plain Postgres: %s: %v (want SQLSTATE %q)", sql, perr, want)
	case want != "" && sqlstate(err) != want:
		o.t.Fatalf("%s (%v): %v, plain Postgres %v", sql, mode, err, perr)
	case want == "" && err != nil:
		o.t.Fatalf("%s (%v): %v", sql, mode, err)
	case want == "" && got.String() != exp.String():
		o.t.Fatalf("%s (%v): tag %q, plain Postgres %q", sql, mode, got, exp)
	}
}

// same requires the same rows (as text, sorted) from query on both sides.
func (o mergeOracle) same(what, query string) {
	o.t.Helper()
	if got, want := textRows(o.t, o.proxy, query, pgx.QueryExecModeSimpleProtocol), textRows(o.t, o.plain, query, pgx.QueryExecModeSimpleProtocol); !slices.Equal(got, want) {
		o.t.Fatalf("%s: rows through the proxy\n%v\nplain Postgres\n%v", what, got, want)
	}
}

// mergeStep is one statement of mergeOracle.steps: its SQLSTATE (want,
// "" for none) and arguments; what names the comparison of rows after it
// ("": none).
type mergeStep struct {
	what, want, sql string
	args            []any
}

// steps runs each step in mode on both sides, comparing the rows of query
// after the steps that name a comparison.
func (o mergeOracle) steps(mode pgx.QueryExecMode, query string, steps []mergeStep) {
	o.t.Helper()
	for _, st := range steps {
		o.both(st.want, st.sql, mode, st.args...)
		if st.what != "" {
			o.same(fmt.Sprint(mode, ": ", st.what), query)
		}
	}
}

// textRows reads query's rows (args: pgx's, the mode too) as sorted text
// lines, values separated by a space.
func textRows(t *testing.T, c *pgx.Conn, query string, args ...any) []string {
	t.Helper()
	rows, err := c.Query(context.Background(), query, args...)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	var out []string
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		parts := make([]string, len(vals))
		for i, v := range vals {
			parts[i] = fmt.Sprint(v)
		}
		out = append(out, strings.Join(parts, " "))
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	slices.Sort(out)
	return out
}

// ordersAtHome checks that each order (customer_id, id) is on its key's
// cluster and only there, and that the orders are on both clusters.
func ordersAtHome(t *testing.T, p *testProxy, keys [][2]int64) {
	t.Helper()
	clusters := map[string]bool{}
	for _, k := range keys {
		cid, id := k[0], k[1]
		home := clusterOf(t, p, cid)
		clusters[home] = true
		for _, cl := range env.Clusters[:2] {
			n := count(t, cl.DSN("shop"), "SELECT count(*) FROM orders WHERE customer_id = $1 AND id = $2", cid, id)
			if want := map[bool]int{true: 1, false: 0}[cl.Name == home]; n != want {
				t.Fatalf("order %d/%d: %s holds %d, want %d", cid, id, cl.Name, n, want)
			}
		}
	}
	if len(clusters) != 2 {
		t.Fatalf("the rows are on %d clusters, want both", len(clusters))
	}
}

// MERGE into a sharded table from sources the shards do not hold where
// the rows are matched (a main table, a subquery over another group, a
// join across groups, VALUES): the source is read first and each row
// routed by the key ON joins on. Tags and rows match plain Postgres in
// the simple protocol and the extended one (with a parameter in the
// source); a source of no row is MERGE 0, and fails as Postgres does when
// the statement does not type-check (42883, 42703); a source row matching two
// target rows fails with 21000 and changes nothing; a row with a NULL key
// inserted into the NOT NULL key column fails with 23502, as in Postgres; in
// a transaction the source sees the transaction's rows and a ROLLBACK
// undoes the MERGE. Every row lands on its key's cluster, and only there.
// (On main before: 0A000, cross-shard join.)
func TestMergeSourceReadFirst(t *testing.T) {
	ctx := context.Background()
	p := startProxy(t, shopTopology(""), nil)
	c := setupShop(t, p)
	plain := connect(t, env.Clusters[0].DSN("shop"))
	mustExec(t, c, "DROP TABLE IF EXISTS credits")
	for _, s := range []string{
		"CREATE TEMP TABLE orders (id bigint, customer_id bigint NOT NULL, total numeric(12,2), PRIMARY KEY (customer_id, id))",
		"CREATE TEMP TABLE customers (id bigint PRIMARY KEY, name text)",
		"CREATE TEMP TABLE products (sku text, name text)",
	} {
		mustExec(t, plain, s)
	}
	mustExec(t, c, "CREATE TABLE credits (customer_id bigint, id bigint, amount numeric)")
	mustExec(t, plain, "CREATE TEMP TABLE credits (customer_id bigint, id bigint, amount numeric)")
	o := mergeOracle{t, c, plain}
	var ords, custs, creds []string
	for i := 1; i <= 16; i++ {
		custs = append(custs, fmt.Sprintf("(%d, 'c%d')", i, i))
		ords = append(ords, fmt.Sprintf("(%d, %d, %d.25)", i, i, i))
		creds = append(creds, fmt.Sprintf("(%d, %d, %d)", i, i+i%2*100, i%3))
	}
	creds = append(creds, "(NULL, 7, 1)")
	for _, s := range []string{
		"INSERT INTO customers VALUES " + strings.Join(custs, ", "),
		"INSERT INTO orders VALUES " + strings.Join(ords, ", "),
		"INSERT INTO credits VALUES " + strings.Join(creds, ", "),
		"INSERT INTO products VALUES ('AB', 'two'), ('ABC', 'three'), ('XYZ', 'three again'), ('ABCDE', 'five'), ('ABCDEFGHIJKLMNOPQRSTU', 'twenty-one')",
	} {
		o.both("", s, pgx.QueryExecModeSimpleProtocol)
	}
	const rows = "SELECT customer_id, id, total FROM orders"
	modes := []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeExec}
	for m, mode := range modes {
		id := 1000 + m
		steps := []mergeStep{
			// A main table, the NULL key row with nothing to insert.
			{what: "from main", sql: "MERGE INTO orders o USING credits s ON o.customer_id = s.customer_id AND o.id = s.id " +
				"WHEN MATCHED AND s.amount = 0 THEN DELETE WHEN MATCHED THEN UPDATE SET total = o.total + s.amount"},
			{what: "from main, inserting", sql: "MERGE INTO orders o USING (SELECT * FROM credits WHERE customer_id IS NOT NULL) s ON o.customer_id = s.customer_id AND o.id = s.id " +
				"WHEN MATCHED THEN UPDATE SET total = s.amount * 2 WHEN NOT MATCHED THEN INSERT (id, customer_id, total) VALUES (s.id, s.customer_id, s.amount)"},
			// The NULL key row inserted: customer_id is NOT NULL, 23502 as
			// in Postgres; not inserted (its condition false): nothing.
			{want: "23502", sql: "MERGE INTO orders o USING credits s ON o.customer_id = s.customer_id AND o.id = s.id " +
				"WHEN NOT MATCHED THEN INSERT (id, customer_id, total) VALUES (s.id, s.customer_id, s.amount)"},
			{what: "NULL keys", sql: "MERGE INTO orders o USING credits s ON o.customer_id = s.customer_id AND o.id = s.id " +
				"WHEN NOT MATCHED AND s.customer_id > 0 THEN INSERT (id, customer_id, total) VALUES (s.id, s.customer_id, s.amount)"},
			// A subquery over another group, typed as its columns are: n
			// is bigint, the label text, the NULL numeric.
			{what: "from another group", sql: fmt.Sprintf("MERGE INTO orders o USING (SELECT length(sku)::bigint AS cid, count(*) AS n, string_agg(name, '+' ORDER BY name) AS label, NULL::numeric AS z FROM products GROUP BY 1) s "+
				"ON o.customer_id = s.cid AND o.id = %d WHEN MATCHED AND s.label LIKE 'three%%' THEN UPDATE SET total = s.n + coalesce(s.z, 0.5) "+
				"WHEN NOT MATCHED THEN INSERT (id, customer_id, total) VALUES (%d, s.cid, s.n * 10)", id, id)},
		}
		if mode != pgx.QueryExecModeSimpleProtocol {
			// A join across groups, with a parameter in the source.
			steps = append(steps, mergeStep{what: "a join across groups", args: []any{1},
				sql: "MERGE INTO orders o USING (SELECT cu.id AS cid, k.amount, cu.name FROM customers cu JOIN credits k ON k.customer_id = cu.id WHERE k.amount >= $1) AS s " +
					"ON s.cid = o.customer_id AND o.id = s.cid WHEN MATCHED THEN UPDATE SET total = o.total + s.amount + length(s.name)"})
		}
		steps = append(steps,
			// ON pins the key: every source row goes to that shard.
			mergeStep{what: "pinned", sql: fmt.Sprintf("MERGE INTO orders o USING credits s ON o.customer_id = 5 AND o.id = s.id + %d WHEN MATCHED THEN UPDATE SET total = o.total + 1 "+
				"WHEN NOT MATCHED AND s.amount > 0 THEN INSERT (id, customer_id, total) VALUES (s.id + %d, 5, s.amount)", 3000+m, 3000+m)},
			// No source row: MERGE 0, but still the errors Postgres finds
			// in the statement (bigint = text; no column s.nope).
			mergeStep{sql: "MERGE INTO orders o USING (SELECT * FROM credits WHERE amount > 100) s ON o.customer_id = s.customer_id " +
				"WHEN MATCHED THEN DELETE WHEN NOT MATCHED THEN INSERT (id, customer_id) VALUES (s.id, s.customer_id)"},
			mergeStep{want: "42883", sql: "MERGE INTO orders o USING (SELECT customer_id::text AS cid FROM credits WHERE amount > 100) s ON o.customer_id = s.cid WHEN MATCHED THEN DELETE"},
			mergeStep{want: "42703", sql: "MERGE INTO orders o USING (SELECT * FROM credits WHERE amount > 100) s ON o.customer_id = s.customer_id WHEN MATCHED THEN UPDATE SET total = s.nope"},
			// Two source rows matching one target row: 21000, nothing
			// changed on either cluster.
			mergeStep{what: "after 21000", want: "21000", sql: "MERGE INTO orders o USING (SELECT customer_id, id FROM credits UNION ALL SELECT 3, 3 UNION ALL SELECT 4, 4) s " +
				"ON o.customer_id = s.customer_id AND o.id = s.id WHEN MATCHED THEN UPDATE SET total = 0"})
		o.steps(mode, rows, steps)
	}
	// In a transaction: the source sees the transaction's rows, ROLLBACK
	// undoes the MERGE, COMMIT keeps it.
	for _, end := range []string{"ROLLBACK", "COMMIT"} {
		for _, conn := range []*pgx.Conn{c, plain} {
			mustExec(t, conn, "BEGIN")
			mustExec(t, conn, "INSERT INTO credits VALUES (5, 5, 40), (6, 600, 60)")
		}
		o.both("", "MERGE INTO orders o USING credits s ON o.customer_id = s.customer_id AND o.id = s.id AND s.amount >= 40 "+
			"WHEN MATCHED THEN UPDATE SET total = s.amount WHEN NOT MATCHED AND s.amount >= 40 THEN INSERT (id, customer_id, total) VALUES (s.id, s.customer_id, -s.amount)", pgx.QueryExecModeExec)
		o.same("in a transaction", rows)
		mustExec(t, c, end)
		mustExec(t, plain, end)
		o.same("after "+end, rows)
	}
	// Every row is on its key's cluster, and only there.
	var keys [][2]int64
	for _, r := range textRows(t, plain, "SELECT customer_id, id FROM orders", pgx.QueryExecModeSimpleProtocol) {
		var k [2]int64
		fmt.Sscan(r, &k[0], &k[1])
		keys = append(keys, k)
	}
	ordersAtHome(t, p, keys)
	// EXPLAIN (ROUTE) shows the source read first.
	var plan []string
	r, err := c.Query(ctx, "EXPLAIN (ROUTE) MERGE INTO orders o USING credits s ON o.customer_id = s.customer_id WHEN MATCHED THEN DELETE", pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		t.Fatal(err)
	}
	plan, err = pgx.CollectRows(r, pgx.RowTo[string])
	if err != nil || len(plan) == 0 || !slices.ContainsFunc(plan, func(l string) bool { return strings.Contains(l, "MergeSource into") }) {
		t.Fatalf("EXPLAIN (ROUTE): %v %v", plan, err)
	}
}

// A MERGE whose WHEN NOT MATCHED THEN INSERT leaves the sequence-bound
// column to the proxy (omitted or DEFAULT) gets a value drawn from main's
// sequence for each source row, as INSERT does: the rows inserted are
// plain Postgres's but for the ids, which are set and unique; each row is
// on its key's cluster. From a VALUES
// source, a co-located table and a main table, in both protocols. A
// MERGE that would insert the drawn value as the key is refused (0A000:
// the row would be routed by another key than its own). (On main before:
// 0A000, "leaves column id to sequence".)
func TestMergeSequenceFill(t *testing.T) {
	p := startProxy(t, seqTopology(), nil)
	c := setupSeq(t, p)
	plain := connect(t, env.Clusters[0].DSN("shop"))
	mustExec(t, plain, "CREATE TEMP TABLE sq_orders (id bigserial, customer_id bigint NOT NULL, total numeric(12,2), PRIMARY KEY (customer_id, id))")
	mustExec(t, plain, "CREATE TEMP TABLE sq_customers (id bigint PRIMARY KEY, name text)")
	mustExec(t, c, "DROP TABLE IF EXISTS sq_credits")
	mustExec(t, c, "CREATE TABLE sq_credits (cid bigint, amount numeric)")
	mustExec(t, plain, "CREATE TEMP TABLE sq_credits (cid bigint, amount numeric)")
	o := mergeOracle{t, c, plain}
	for _, s := range []string{
		"INSERT INTO sq_customers (id, name) VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd'), (5, 'e'), (6, 'f')",
		"INSERT INTO sq_credits VALUES (1, 10), (2, 20), (7, 70), (8, 80), (9, 90)",
	} {
		o.both("", s, pgx.QueryExecModeSimpleProtocol)
	}
	const rows = "SELECT customer_id, total FROM sq_orders"
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeExec} {
		o.steps(mode, rows, []mergeStep{
			{what: "from VALUES", sql: "MERGE INTO sq_orders o USING (VALUES (1::bigint, 1.5), (2, 2.5), (3, 3.5), (11, 11.5)) v(cid, total) ON o.customer_id = v.cid AND o.total = v.total " +
				"WHEN MATCHED THEN UPDATE SET total = o.total + 100 WHEN NOT MATCHED THEN INSERT (customer_id, total) VALUES (v.cid, v.total)"},
			{what: "from a co-located table", sql: "MERGE INTO sq_orders o USING sq_customers s ON o.customer_id = s.id AND o.total = s.id " +
				"WHEN NOT MATCHED AND s.id % 2 = 0 THEN INSERT (id, customer_id, total) VALUES (DEFAULT, s.id, s.id)"},
			{what: "from main", sql: "MERGE INTO sq_orders o USING sq_credits k ON o.customer_id = k.cid AND o.total = k.amount " +
				"WHEN MATCHED THEN DELETE WHEN NOT MATCHED THEN INSERT (customer_id, total) VALUES (k.cid, k.amount)"},
			{what: "pinned", sql: "MERGE INTO sq_orders o USING (VALUES (1.5), (3.5), (4.5)) v(total) ON o.customer_id = 3 AND o.total = v.total " +
				"WHEN NOT MATCHED THEN INSERT (customer_id, total) VALUES (3, v.total)"},
		})
	}
	ids := checkPlacement(t, p, "sq_orders", "customer_id")
	if n := len(textRows(t, plain, rows, pgx.QueryExecModeSimpleProtocol)); len(ids) != n || !unique(ids) {
		t.Fatalf("order ids %v, want %d unique", ids, n)
	}
	_, err := c.Exec(context.Background(), "MERGE INTO sq_customers t USING sq_credits k ON t.id = k.cid WHEN NOT MATCHED THEN INSERT (name) VALUES ('x')")
	if sqlstate(err) != "0A000" {
		t.Fatalf("inserting the drawn value as the key: %v, want 0A000", err)
	}
}

// A MERGE whose source is read first needs one connection per cluster, as
// INSERT ... SELECT does: with pool.size 1 it runs in autocommit and at
// the start of a transaction, and three sessions running it at once on a
// pool of one all finish.
func TestMergeSourcePoolOfOne(t *testing.T) {
	p, c := poolOfOne(t)
	ctx := context.Background()
	const merge = "MERGE INTO orders o USING (SELECT c.id AS cid, c.id + $1::bigint AS oid FROM customers c JOIN products p ON p.name = c.name) s " +
		"ON o.customer_id = s.cid AND o.id = s.oid WHEN MATCHED THEN UPDATE SET total = o.total + 1 WHEN NOT MATCHED THEN INSERT (id, customer_id, total) VALUES (s.oid, s.cid, 1)"
	execTag(t, "autocommit", c, merge, 0, "MERGE 20")
	tx, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	execTag(t, "in a transaction", tx, merge, 100, "MERGE 20")
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	concurrentExecs(t, p, merge, 3, 2)
	if n := count(t, p.dsn(), "SELECT count(*) FROM orders"); n != 20*8 {
		t.Fatalf("%d orders, want %d", n, 20*8)
	}
}

// EXPLAIN (without ROUTE) of a write the proxy runs in steps (a MERGE or
// INSERT ... SELECT whose source is read first, an UPDATE ... FROM another
// group, an UPDATE with its subquery run first) has no one statement a
// backend could explain: it is refused with
// 0A000 and writes nothing, and EXPLAIN (ROUTE) shows the steps. (On main
// before: the write ran, and answered its command tag.) EXPLAIN (ROUTE,
// ANALYZE), not built, is refused the same way (before: the ANALYZE was
// ignored and the plan answered, the statement not run).
func TestExplainOfWriteInStepsRefused(t *testing.T) {
	ctx := context.Background()
	p := startProxy(t, shopTopology(""), nil)
	c := setupShop(t, p)
	mustExec(t, c, "INSERT INTO customers (id, name) VALUES (1, 'a'), (2, 'b'), (3, 'c')")
	mustExec(t, c, "INSERT INTO orders (id, customer_id, total) VALUES (1, 1, 1), (2, 2, 2)")
	mustExec(t, c, "INSERT INTO products (sku, name) VALUES ('a', 'x'), ('bb', 'y'), ('ccc', 'z')")
	for _, sql := range []string{
		"MERGE INTO orders o USING (SELECT length(sku)::bigint AS n FROM products) p ON o.customer_id = p.n WHEN MATCHED THEN DELETE",
		"INSERT INTO orders (id, customer_id, total) SELECT 9, length(sku), 0 FROM products",
		"UPDATE orders o SET total = 0 FROM products p WHERE length(p.sku) = o.customer_id",
		"UPDATE products SET name = 'X' WHERE sku = (SELECT min(sku) FROM products)",
	} {
		for _, explain := range []string{"EXPLAIN ", "EXPLAIN ANALYZE ", "EXPLAIN (ROUTE, ANALYZE) "} {
			for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeExec} {
				if _, err := c.Exec(ctx, explain+sql, mode); sqlstate(err) != "0A000" {
					t.Fatalf("%s%s (%v): %v, want 0A000", explain, sql, mode, err)
				}
			}
		}
		if _, err := c.Exec(ctx, "EXPLAIN (ROUTE) "+sql, pgx.QueryExecModeSimpleProtocol); err != nil {
			t.Fatalf("EXPLAIN (ROUTE) %s: %v", sql, err)
		}
	}
	if got := textRows(t, c, "SELECT customer_id, id, total::text FROM orders", pgx.QueryExecModeSimpleProtocol); !slices.Equal(got, []string{"1 1 1.00", "2 2 2.00"}) {
		t.Fatalf("orders after the EXPLAINs: %v", got)
	}
	if got := textRows(t, c, "SELECT sku, name FROM products", pgx.QueryExecModeSimpleProtocol); !slices.Equal(got, []string{"a x", "bb y", "ccc z"}) {
		t.Fatalf("products after the EXPLAINs: %v", got)
	}
}
