package proxy

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// startWCTE is the shop with 20 customers of two orders each (ids
// 10c and 10c+1, totals 10.50 and 20.00) and a settings table in main.
func startWCTE(t *testing.T, extra string) (*testProxy, *pgx.Conn) {
	t.Helper()
	p := startProxy(t, shopTopology(extra), nil)
	c := setupShop(t, p)
	for id := 1; id <= 20; id++ {
		mustExec(t, c, fmt.Sprintf("INSERT INTO orders (id, customer_id, total) VALUES (%d, %d, 10.5), (%d, %d, 20)", id*10, id, id*10+1, id))
		mustExec(t, c, "INSERT INTO customers (id, name) VALUES ($1, $2)", id, fmt.Sprintf("c%d", id))
	}
	return p, c
}

// settingsOf is the settings table's rows, "k=v" in k's order.
func settingsOf(t *testing.T, c *pgx.Conn) string {
	t.Helper()
	rows, err := c.Query(context.Background(), "SELECT k, v FROM settings ORDER BY k")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			t.Fatal(err)
		}
		out = append(out, k+"="+v)
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	return strings.Join(out, " ")
}

// TestWritableCTEAcrossGroups: a data-modifying WITH query on a sharded
// table whose RETURNING rows feed a statement on another group (issue 19,
// item 5) runs, in both protocols, with the count and rows Postgres
// gives; an empty RETURNING is a typed zero-row relation. Before, it was
// refused (0A000 cross-shard join).
func TestWritableCTEAcrossGroups(t *testing.T) {
	p, c := startWCTE(t, "")
	ctx := context.Background()
	const gone = "WITH gone AS (DELETE FROM orders WHERE customer_id = %d RETURNING *) INSERT INTO settings SELECT 'gone ' || id, total::text FROM gone"
	for i, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
		key := 4 + i
		tag, err := c.Exec(ctx, fmt.Sprintf(gone, key), mode)
		if err != nil || tag.String() != "INSERT 0 2" {
			t.Fatalf("%v: %v %v", mode, tag, err)
		}
		if n := count(t, p.dsn(), "SELECT count(*) FROM orders WHERE customer_id = $1", key); n != 0 {
			t.Fatalf("%v: %d orders of customer %d left", mode, n, key)
		}
	}
	if got, want := settingsOf(t, c), "gone 40=10.50 gone 41=20.00 gone 50=10.50 gone 51=20.00"; got != want {
		t.Fatalf("settings %q, want %q", got, want)
	}
	// No row returned: nothing inserted, the outer statement still runs.
	if tag, err := c.Exec(ctx, fmt.Sprintf(gone, 999)); err != nil || tag.String() != "INSERT 0 0" {
		t.Fatalf("no rows: %v %v", tag, err)
	}
	// An UPDATE across shards read back by a plain SELECT, with RETURNING
	// expressions, in both protocols (the extended one binary where pgx
	// asks for it).
	for i, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
		lo := 1 + 10*i
		rows, err := c.Query(ctx, fmt.Sprintf("WITH x AS (UPDATE orders SET total = total + 1 WHERE customer_id BETWEEN %d AND %d RETURNING id, customer_id AS who, total * 2 AS doubled) SELECT id, who, doubled::text, doubled FROM x ORDER BY id DESC", lo, lo+2), mode)
		if err != nil {
			t.Fatal(err)
		}
		var got, want []string
		for rows.Next() {
			var id, who int64
			var doubled string
			var num pgtype.Numeric
			if err := rows.Scan(&id, &who, &doubled, &num); err != nil {
				t.Fatal(err)
			}
			v, _ := num.Value()
			got = append(got, fmt.Sprintf("%d/%d/%s/%v", id, who, doubled, v))
		}
		if rows.Err() != nil || rows.CommandTag().String() != "SELECT 6" {
			t.Fatalf("%v: %v %v", mode, rows.CommandTag(), rows.Err())
		}
		for k := lo + 2; k >= lo; k-- {
			want = append(want, fmt.Sprintf("%d/%d/42.00/42.00", 10*k+1, k), fmt.Sprintf("%d/%d/23.00/23.00", 10*k, k))
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Fatalf("%v: UPDATE ... RETURNING read back: %v, want %v", mode, got, want)
		}
	}
	// Two data-modifying queries (one read twice, under an alias with
	// its own column names) beside a read-only one.
	tag, err := c.Exec(ctx, `WITH a AS (DELETE FROM orders WHERE customer_id = 7 AND id = 70 RETURNING id, total),
		b AS (UPDATE customers SET name = 'renamed' WHERE id IN (8, 9) RETURNING id, name),
		c AS (SELECT 'x' AS tag)
		INSERT INTO settings SELECT c.tag || a.id || '/' || b.id, a2.t::text || b.name FROM a, a AS a2(i2, t), b, c`)
	if err != nil || tag.String() != "INSERT 0 2" {
		t.Fatalf("two WITH queries: %v %v", tag, err)
	}
	if n := count(t, p.dsn(), "SELECT count(*) FROM customers WHERE name = 'renamed'"); n != 2 {
		t.Fatalf("%d customers renamed", n)
	}
	if got := settingsOf(t, c); !strings.Contains(got, "x70/8=10.50renamed x70/9=10.50renamed") {
		t.Fatalf("settings after two WITH queries: %s", got)
	}
	// A WITH query on main feeding an INSERT into a sharded table, and
	// an UPDATE of one.
	mustExec(t, c, "INSERT INTO settings VALUES ('mv201', 'n201'), ('mv202', 'n202'), ('mv203', 'n203')")
	tag, err = c.Exec(ctx, "WITH s AS (DELETE FROM settings WHERE k LIKE 'mv%' RETURNING k, v) INSERT INTO customers (id, name) SELECT substr(k, 3)::bigint, v FROM s")
	if err != nil || tag.String() != "INSERT 0 3" {
		t.Fatalf("INSERT into a sharded table: %v %v", tag, err)
	}
	tag, err = c.Exec(ctx, "WITH s AS (INSERT INTO settings VALUES ('up', '201') RETURNING v) UPDATE customers SET name = 'up' FROM s WHERE customers.id = s.v::bigint")
	if err != nil || tag.String() != "UPDATE 1" {
		t.Fatalf("UPDATE of a sharded table: %v %v", tag, err)
	}
	if n := count(t, p.dsn(), "SELECT count(*) FROM customers WHERE id BETWEEN 201 AND 203 AND name IN ('up', 'n202', 'n203')"); n != 3 || strings.Contains(settingsOf(t, c), "mv") {
		t.Fatalf("from main: %d customers, settings %s", n, settingsOf(t, c))
	}
	// A WITH query without RETURNING the statement does not read.
	tag, err = c.Exec(ctx, "WITH d AS (DELETE FROM orders WHERE customer_id = 12) INSERT INTO settings VALUES ('d12', 'gone')")
	if n := count(t, p.dsn(), "SELECT count(*) FROM orders WHERE customer_id = 12"); err != nil || tag.String() != "INSERT 0 1" || n != 0 {
		t.Fatalf("WITH query without RETURNING: %v %v, %d orders left", tag, err, n)
	}
	// A reference table's copies: the rows once, every copy written.
	mustExec(t, c, "INSERT INTO countries VALUES ('za', 'Z A'), ('zb', 'Z B'), ('aa', 'A A')")
	tag, err = c.Exec(ctx, "WITH k AS (DELETE FROM countries WHERE code LIKE 'z%' RETURNING code, name) INSERT INTO settings SELECT 'country ' || code, name FROM k")
	if err != nil || tag.String() != "INSERT 0 2" {
		t.Fatalf("reference table in WITH: %v %v", tag, err)
	}
	for cl := 0; cl < 2; cl++ {
		if n := clusterCount(t, cl, "SELECT count(*) FROM countries"); n != 1 {
			t.Fatalf("reference table in WITH: %d countries on pg%d", n, cl)
		}
	}
	// A multi-row INSERT split across shards.
	tag, err = c.Exec(ctx, "WITH ins AS (INSERT INTO customers (id, name) VALUES (101, 'n101'), (102, 'n102'), (103, 'n103') RETURNING id, name) INSERT INTO settings SELECT 'ins ' || id, name FROM ins")
	if err != nil || tag.String() != "INSERT 0 3" {
		t.Fatalf("INSERT split in WITH: %v %v", tag, err)
	}
	if n := count(t, p.dsn(), "SELECT count(*) FROM customers WHERE id BETWEEN 101 AND 103"); n != 3 || !strings.Contains(settingsOf(t, c), "ins 101=n101 ins 102=n102 ins 103=n103") {
		t.Fatalf("INSERT split in WITH: %d customers, settings %s", n, settingsOf(t, c))
	}
}

// TestWritableCTEAtomic: the data-modifying WITH query and the outer
// statement commit or roll back together: outside a transaction block a
// failing outer statement undoes the WITH query's write; inside one,
// ROLLBACK undoes both and COMMIT keeps both; writes on two clusters
// commit in two phases. A statement that reads the
// table its WITH query modifies (Postgres reads it as it was before) is
// refused, and a result past proxy.intermediate.max_rows fails with 54000.
func TestWritableCTEAtomic(t *testing.T) {
	p, c := startWCTE(t, "proxy:\n  intermediate: { max_rows: 3 }\n")
	ctx := context.Background()
	mustExec(t, c, "INSERT INTO settings VALUES ('dup', 'x')")
	const dup = "WITH gone AS (DELETE FROM orders WHERE customer_id = %d RETURNING *) INSERT INTO settings SELECT 'dup', id::text FROM gone"
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
		if _, err := c.Exec(ctx, fmt.Sprintf(dup, 5), mode); sqlstate(err) != "23505" {
			t.Fatalf("%v: duplicate key: %v", mode, err)
		}
		if n := count(t, p.dsn(), "SELECT count(*) FROM orders WHERE customer_id = 5"); n != 2 {
			t.Fatalf("%v: the failed statement's DELETE left %d orders", mode, n)
		}
	}
	for _, commit := range []bool{false, true} {
		tx, err := c.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, "WITH gone AS (DELETE FROM orders WHERE customer_id = 6 RETURNING *) INSERT INTO settings SELECT 'in tx ' || id, 'y' FROM gone"); err != nil {
			t.Fatal(err)
		}
		end, left, kept := tx.Rollback, 2, false
		if commit {
			end, left, kept = tx.Commit, 0, true
		}
		if err := end(ctx); err != nil {
			t.Fatal(err)
		}
		n := count(t, p.dsn(), "SELECT count(*) FROM orders WHERE customer_id = 6")
		if s := settingsOf(t, c); n != left || strings.Contains(s, "in tx 60=y in tx 61=y") != kept {
			t.Fatalf("commit %v: %d orders, settings %s", commit, n, s)
		}
	}
	// A DELETE on pg1 feeding an INSERT on pg0 (main) commits in two
	// phases.
	key := 10
	for ; key < 20 && clusterCount(t, 1, fmt.Sprintf("SELECT count(*) FROM orders WHERE customer_id = %d", key)) == 0; key++ {
	}
	var gid string
	recordGID(p, &gid, nil)
	if _, err := c.Exec(ctx, fmt.Sprintf("WITH gone AS (DELETE FROM orders WHERE customer_id = %d RETURNING *) INSERT INTO settings SELECT '2pc ' || id, 'w' FROM gone", key)); err != nil {
		t.Fatal(err)
	}
	if gid == "" || !strings.Contains(settingsOf(t, c), fmt.Sprintf("2pc %d0=w", key)) {
		t.Fatalf("two clusters written: gid %q, settings %s", gid, settingsOf(t, c))
	}
	// The outer statement reads the table the WITH query modifies.
	if _, err := c.Exec(ctx, "WITH gone AS (DELETE FROM orders WHERE customer_id = 7 RETURNING *) INSERT INTO settings SELECT 'n', count(*)::text FROM orders, gone"); sqlstate(err) != "0A000" {
		t.Fatalf("same table: %v", err)
	}
	// Past max_rows (3): 54000, and nothing deleted.
	_, err := c.Exec(ctx, "WITH gone AS (DELETE FROM orders WHERE customer_id IN (8, 9) RETURNING *) INSERT INTO settings SELECT 'lim ' || id, 'z' FROM gone")
	if sqlstate(err) != "54000" || !strings.Contains(err.Error(), "max_rows") {
		t.Fatalf("past max_rows: %v", err)
	}
	if n := count(t, p.dsn(), "SELECT count(*) FROM orders WHERE customer_id IN (8, 9)"); n != 4 {
		t.Fatalf("past max_rows: %d orders left of 4", n)
	}
}

// TestWritableCTEPoolOfOne: with one connection per cluster, Describe and
// Execute of a writable CTE whose WITH query and outer statement are on
// the same cluster need that one connection only (no 53300 waiting for
// itself).
func TestWritableCTEPoolOfOne(t *testing.T) {
	p := startProxy(t, shopTopology(""), func(c *Config) { c.PoolSize, c.MaxWait = 1, time.Second })
	c := setupShop(t, p)
	ctx := context.Background()
	for id := 1; id <= 20; id++ {
		mustExec(t, c, fmt.Sprintf("INSERT INTO orders (id, customer_id, total) VALUES (%d, %d, 1)", id, id))
	}
	key := 1
	for ; key < 20 && clusterCount(t, 0, fmt.Sprintf("SELECT count(*) FROM orders WHERE customer_id = %d", key)) == 0; key++ {
	}
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeSimpleProtocol} {
		var id int64
		err := c.QueryRow(ctx, fmt.Sprintf("WITH x AS (UPDATE orders SET total = total + 1 WHERE customer_id = %d RETURNING id) SELECT x.id FROM x LEFT JOIN settings s ON s.k = 'none'", key), mode).Scan(&id)
		if err != nil || id != int64(key) {
			t.Fatalf("%v: %d %v", mode, id, err)
		}
	}
}

// TestWritableCTEMaxBytes: RETURNING rows past proxy.intermediate.max_bytes
// fail with 54000 and the WITH query's write is undone.
func TestWritableCTEMaxBytes(t *testing.T) {
	p, c := startWCTE(t, "proxy:\n  intermediate: { max_bytes: 64 }\n")
	ctx := context.Background()
	_, err := c.Exec(ctx, "WITH x AS (UPDATE customers SET name = repeat('n', 40) WHERE id <= 4 RETURNING name) INSERT INTO settings SELECT name, 'x' FROM x")
	if sqlstate(err) != "54000" || !strings.Contains(err.Error(), "max_bytes") {
		t.Fatalf("past max_bytes: %v", err)
	}
	if n := count(t, p.dsn(), "SELECT count(*) FROM customers WHERE length(name) = 40"); n != 0 {
		t.Fatalf("past max_bytes: %d customers renamed", n)
	}
	if _, err := c.Exec(ctx, "WITH x AS (UPDATE customers SET name = 'n' WHERE id = 1 RETURNING name) INSERT INTO settings SELECT name, 'x' FROM x"); err != nil {
		t.Fatalf("within max_bytes: %v", err)
	}
}

// TestWritableCTEParamsAndChains (issue 19 leftovers): a data-modifying
// WITH query across groups with $n parameters, in the extended protocol
// (pgx's cached statements: Parse without types, Describe, Bind in
// binary where it can), runs with the values bound, the types Postgres
// infers described; a data-modifying WITH query reading another's rows,
// and one reading a read-only WITH query, run in order. Before, each was
// refused with 0A000 (cross-shard join, or "reads another WITH query").
func TestWritableCTEParamsAndChains(t *testing.T) {
	p, c := startWCTE(t, "")
	ctx := context.Background()
	tag, err := c.Exec(ctx, "WITH gone AS (DELETE FROM orders WHERE customer_id = $1 RETURNING *) INSERT INTO settings SELECT $2 || id, (total + $3)::text FROM gone", int64(4), "p ", 1.25)
	if err != nil || tag.String() != "INSERT 0 2" {
		t.Fatalf("params: %v %v", tag, err)
	}
	if got := settingsOf(t, c); got != "p 40=11.75 p 41=21.25" {
		t.Fatalf("params: settings %q", got)
	}
	// Rows back, the parameter read only by the outer statement.
	rows, err := c.Query(ctx, "WITH x AS (UPDATE orders SET total = total + 1 WHERE customer_id = $1 RETURNING id, total) SELECT id, total::text, $2::text AS tag FROM x ORDER BY id", int64(5), "t")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var id int64
		var total, tagv string
		if err := rows.Scan(&id, &total, &tagv); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%d/%s/%s", id, total, tagv))
	}
	if rows.Err() != nil || strings.Join(got, " ") != "50/11.50/t 51/21.00/t" {
		t.Fatalf("rows back with params: %v %v", got, rows.Err())
	}
	// Parameters in text without declared types (as psycopg sends a
	// str): the types Postgres infers where each is read.
	res := c.PgConn().ExecParams(ctx, "WITH gone AS (DELETE FROM orders WHERE customer_id = $1 RETURNING id) INSERT INTO settings SELECT $2 || id, $1 FROM gone", [][]byte{[]byte("13"), []byte("u ")}, nil, nil, nil).Read()
	if res.Err != nil || res.CommandTag.String() != "INSERT 0 2" || !strings.Contains(settingsOf(t, c), "u 130=13 u 131=13") {
		t.Fatalf("untyped text parameters: %v %v, settings %s", res.CommandTag, res.Err, settingsOf(t, c))
	}
	res = c.PgConn().ExecParams(ctx, "WITH x AS (UPDATE orders SET total = total + $2 WHERE customer_id = $1 RETURNING id, total) SELECT id, total FROM x ORDER BY id", [][]byte{[]byte("14"), []byte("0.5")}, nil, nil, nil).Read()
	if res.Err != nil || len(res.Rows) != 2 || string(res.Rows[0][1]) != "11.00" || len(res.FieldDescriptions) != 2 || res.FieldDescriptions[1].DataTypeOID != 1700 {
		t.Fatalf("untyped text parameters, rows back: %v %v %q", res.CommandTag, res.Err, res.Rows)
	}
	// In a transaction block: ROLLBACK undoes both parts.
	tx, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "WITH gone AS (DELETE FROM orders WHERE customer_id = $1 RETURNING id) INSERT INTO settings SELECT 'tx ' || id, $2 FROM gone", int64(15), "r"); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if n := count(t, p.dsn(), "SELECT count(*) FROM orders WHERE customer_id = 15"); n != 2 || strings.Contains(settingsOf(t, c), "tx ") {
		t.Fatalf("rolled back: %d orders, settings %s", n, settingsOf(t, c))
	}
	// In the simple protocol a $n is an error, as in Postgres.
	if _, err := simpleRows(t, c, "WITH gone AS (DELETE FROM orders WHERE customer_id = $1 RETURNING *) INSERT INTO settings SELECT 'x' || id, 'y' FROM gone"); sqlstate(err) != "42P02" {
		t.Fatalf("simple protocol with $1: %v", err)
	}
	// A chain: the DELETE's rows into main, main's RETURNING counted
	// into another main table, with a parameter read by both steps.
	for i, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeSimpleProtocol} {
		key := 7 + i
		var n int64
		var q string
		if mode == pgx.QueryExecModeSimpleProtocol {
			q = fmt.Sprintf("WITH a AS (DELETE FROM orders WHERE customer_id = %d RETURNING id), b AS (INSERT INTO settings SELECT 'chain ' || id, '%d' FROM a RETURNING k) SELECT count(*) FROM b", key, key)
			err = c.QueryRow(ctx, q, mode).Scan(&n)
		} else {
			q = "WITH a AS (DELETE FROM orders WHERE customer_id = $1 RETURNING id), b AS (INSERT INTO settings SELECT 'chain ' || id, $1::text FROM a RETURNING k) SELECT count(*) FROM b"
			err = c.QueryRow(ctx, q, mode, int64(key)).Scan(&n)
		}
		if err != nil || n != 2 {
			t.Fatalf("%v: chain: %d %v", mode, n, err)
		}
		if left := count(t, p.dsn(), "SELECT count(*) FROM orders WHERE customer_id = $1", key); left != 0 || !strings.Contains(settingsOf(t, c), fmt.Sprintf("chain %d0=%d chain %d1=%d", key, key, key, key)) {
			t.Fatalf("%v: chain: %d orders left, settings %s", mode, left, settingsOf(t, c))
		}
	}
	// A read-only WITH query read by the data-modifying one goes with it.
	tag, err = c.Exec(ctx, "WITH x AS (SELECT id FROM orders WHERE customer_id = 10 AND total > 15), g AS (UPDATE orders SET total = 0 WHERE customer_id = 10 AND id IN (SELECT id FROM x) RETURNING id) INSERT INTO settings SELECT 'ro ' || id, 'z' FROM g")
	if err != nil || tag.String() != "INSERT 0 1" || !strings.Contains(settingsOf(t, c), "ro 101=z") {
		t.Fatalf("read-only WITH query in a step: %v %v, settings %s", tag, err, settingsOf(t, c))
	}
}

// TestFromlessInTransaction (issue 19 leftovers): a FROM-less SELECT over
// a subquery pinned to one shard runs there whole (EXPLAIN (ROUTE): one
// Route), with $1 in the extended protocol, and inside a transaction it
// sees the transaction's own write on that shard; EXISTS AND NOT EXISTS
// over two shards answers once.
func TestFromlessInTransaction(t *testing.T) {
	_, c := startWCTE(t, "")
	ctx := context.Background()
	lines, err := simpleRows(t, c, "EXPLAIN (ROUTE) SELECT EXISTS (SELECT 1 FROM orders WHERE customer_id = 3) AND NOT EXISTS (SELECT 1 FROM orders WHERE customer_id = 3 AND total > 100)")
	if err != nil || strings.Count(strings.Join(lines, "\n"), "Route") != 1 {
		t.Fatalf("EXPLAIN (ROUTE): %v %q", err, lines)
	}
	tx, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	mustExec(t, tx.Conn(), "INSERT INTO orders (id, customer_id, total) VALUES (999, 3, 500)")
	var e bool
	var n int64
	if err := tx.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM orders WHERE customer_id = $1 AND total > 100) AND NOT EXISTS (SELECT 1 FROM orders WHERE customer_id = 4 AND total > 100)", int64(3)).Scan(&e); err != nil || !e {
		t.Fatalf("own write in EXISTS: %v %v", e, err)
	}
	if err := tx.QueryRow(ctx, "SELECT (SELECT count(*) FROM orders) + (SELECT count(*) FROM customers)", pgx.QueryExecModeSimpleProtocol).Scan(&n); err != nil || n != 61 {
		t.Fatalf("own write in a sum of counts: %d %v", n, err)
	}
	if err := tx.QueryRow(ctx, "SELECT (SELECT id FROM orders ORDER BY total DESC, id LIMIT 1)").Scan(&n); err != nil || n != 999 {
		t.Fatalf("own write under ORDER BY ... LIMIT: %d %v", n, err)
	}
}
