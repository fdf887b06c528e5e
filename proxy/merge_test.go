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

// The merge tests load the same rows into a plain Postgres database (the
// oracle) and, through the proxy, into two clusters, then compare every
// answer: column names, types, typmods, formats, values byte for byte, and
// command tags, in the simple protocol, the extended protocol as pgx runs
// it (statement Describe, binary results), and Parse/Bind/Describe portal/
// Execute with text and with binary results.

// mergeGroup is a group keyed by k over both clusters.
const mergeGroup = `  by_k:
    index: { name: by_k, column: k, type: bigint, function: xxhash }
    shards: { "-80": pg0, "80-": pg1 }
    tables:
      facts: {}
`

const factsDDL = `CREATE TABLE facts (
  id int PRIMARY KEY, k bigint NOT NULL,
  i2 smallint, i4 int, i8 bigint, n numeric(12,3), f4 real, f8 double precision, fx double precision,
  t text, vc varchar(20), bp char(5), b bool,
  ts timestamp, tz timestamptz, d date, u uuid, by bytea, iv interval, m money)`

// factRows builds deterministic rows with ties, NULLs, NaN, infinities,
// negative zero, BC dates and non-ASCII text.
func factRows(n int) []string {
	words := []string{"'a'", "'B'", "'b'", "'aa'", "'a b'", "'é'", "'Z'", "''", "NULL", "'zz'"}
	var rows []string
	for id := 1; id <= n; id++ {
		h := uint64(id) * 2654435761 % 1000003
		null := func(every int, v string) string {
			if id%every == 0 {
				return "NULL"
			}
			return v
		}
		fx := fmt.Sprintf("%v", float64(int(h%200))-100.5)
		switch id % 17 {
		case 3:
			fx = "'NaN'"
		case 5:
			fx = "'Infinity'"
		case 7:
			fx = "'-Infinity'"
		case 11:
			fx = "'-0'"
		case 12:
			fx = "0"
		}
		ts := fmt.Sprintf("'2024-%02d-%02d %02d:%02d:%02d.%06d'", h%12+1, h%28+1, h%24, h%60, (h/7)%60, h%1000000)
		switch id % 29 {
		case 4:
			ts = "'infinity'"
		case 9:
			ts = "'0044-03-15 12:00:00 BC'"
		}
		d := fmt.Sprintf("'%04d-%02d-%02d'", 1990+h%40, h%12+1, h%28+1)
		switch id % 31 {
		case 2:
			d = "'-infinity'"
		case 8:
			d = "'0200-02-28 BC'"
		}
		iv := fmt.Sprintf("'%d days %02d:%02d:00'", int(h%40)-20, h%24, h%60)
		switch id {
		case 1:
			iv = "'-100 days'"
		case 2:
			iv = "'2 mons 3 days 00:00:00.5'"
		}
		row := []string{
			fmt.Sprint(id),
			fmt.Sprint(id % 37),
			null(13, fmt.Sprint(int(h%11)-3)),
			null(17, fmt.Sprint(int(h%1000)-500)),
			null(19, fmt.Sprint(int64(h)*1_000_003_007-400_000_000_000)),
			null(7, fmt.Sprintf("%d.%03d", int(h%2000)-1000, h%1000)),
			null(23, fmt.Sprintf("%v", float64(int(h%64))/4-8)),
			null(11, fmt.Sprintf("%v", float64(int(h%4000))/8-250)),
			null(41, fx),
			words[h%uint64(len(words))],
			null(9, words[(h/3)%uint64(len(words)-1)]),
			null(10, fmt.Sprintf("'%s'", strings.Repeat("x", int(h%4)))),
			null(5, fmt.Sprint(h%3 == 0)),
			null(37, ts),
			null(43, fmt.Sprintf("'2023-06-%02d 10:00:00+%02d'", h%28+1, h%12)),
			null(47, d),
			null(8, fmt.Sprintf("'%08x-0000-4000-8000-%012x'", h, h*7)),
			null(6, fmt.Sprintf("'\\x%02x%02x'", h%256, (h/256)%256)),
			null(14, iv),
			null(12, fmt.Sprintf("'%d.%02d'", int(h%20000)-10000, h%100)),
		}
		rows = append(rows, "("+strings.Join(row, ", ")+")")
	}
	return rows
}

// mergeEnv is the proxy over two clusters and the oracle database, loaded
// with the same rows.
type mergeEnv struct {
	p      *testProxy
	proxy  *pgx.Conn
	oracle *pgx.Conn
}

func setupMerge(t *testing.T) *mergeEnv {
	t.Helper()
	ctx := context.Background()
	p := startProxy(t, shopTopology(mergeGroup), nil)
	c := connect(t, p.dsn())
	mustExec(t, c, "DROP TABLE IF EXISTS facts")
	mustExec(t, c, factsDDL)
	if err := env.Clusters[0].Exec(ctx, "postgres", "DROP DATABASE IF EXISTS merge_oracle"); err != nil {
		t.Fatal(err)
	}
	if err := env.Clusters[0].Exec(ctx, "postgres", "CREATE DATABASE merge_oracle"); err != nil {
		t.Fatal(err)
	}
	o := connect(t, env.Clusters[0].DSN("merge_oracle"))
	mustExec(t, o, factsDDL)
	rows := factRows(240)
	for i := 0; i < len(rows); i += 40 {
		ins := "INSERT INTO facts (id, k, i2, i4, i8, n, f4, f8, fx, t, vc, bp, b, ts, tz, d, u, by, iv, m) VALUES " + strings.Join(rows[i:i+40], ", ")
		mustExec(t, c, ins)
		mustExec(t, o, ins)
	}
	return &mergeEnv{p: p, proxy: c, oracle: o}
}

var mergeCases = []mergeCase{
	// ORDER BY: keys of every supported type, both directions, NULLS.
	{sql: "SELECT id, i4 FROM facts ORDER BY i4, id", ordered: true},
	{sql: "SELECT id, i4 FROM facts ORDER BY i4 DESC, id DESC", ordered: true},
	{sql: "SELECT id, i2 FROM facts ORDER BY i2 NULLS FIRST, id", ordered: true},
	{sql: "SELECT id, i8 FROM facts ORDER BY i8 DESC NULLS LAST, id", ordered: true},
	{sql: "SELECT id, n FROM facts ORDER BY n, id", ordered: true},
	{sql: "SELECT id, n FROM facts ORDER BY n DESC, id", ordered: true},
	{sql: "SELECT id, f4 FROM facts ORDER BY f4, id", ordered: true},
	{sql: "SELECT id, fx FROM facts ORDER BY fx, id", ordered: true},
	{sql: "SELECT id, fx FROM facts ORDER BY fx DESC, id", ordered: true},
	{sql: "SELECT id, t FROM facts ORDER BY t, id", ordered: true},
	{sql: "SELECT id, t FROM facts ORDER BY t COLLATE \"C\" DESC, id", ordered: true},
	{sql: "SELECT id, vc, bp FROM facts ORDER BY bp, vc DESC NULLS LAST, id", ordered: true},
	{sql: "SELECT id, b FROM facts ORDER BY b, id", ordered: true},
	{sql: "SELECT id, ts FROM facts ORDER BY ts, id", ordered: true},
	{sql: "SELECT id, tz FROM facts ORDER BY tz DESC, id", ordered: true},
	{sql: "SELECT id, d FROM facts ORDER BY d, id", ordered: true},
	{sql: "SELECT id, u FROM facts ORDER BY u, id", ordered: true},
	{sql: "SELECT id, by FROM facts ORDER BY by, id", ordered: true},
	{sql: "SELECT ts::time AS clock, id FROM facts ORDER BY clock, id", ordered: true},
	{sql: "SELECT id, iv FROM facts ORDER BY iv DESC NULLS LAST, id", ordered: true},
	// Expressions, aliases, ordinals, hidden keys, SELECT *.
	{sql: "SELECT id, i2 * 2 AS dbl FROM facts ORDER BY dbl DESC, id", ordered: true},
	{sql: "SELECT id, upper(t) FROM facts ORDER BY 2, 1", ordered: true},
	{sql: "SELECT id FROM facts ORDER BY ts DESC NULLS LAST, id", ordered: true},
	{sql: "SELECT id FROM facts ORDER BY i4 % 7, n DESC, id", ordered: true},
	{sql: "SELECT * FROM facts ORDER BY d, id", ordered: true},
	{sql: "SELECT *, i4 AS x FROM facts ORDER BY x, id", ordered: true},
	{sql: "SELECT i2, id FROM facts ORDER BY i2", keys: 1},
	{sql: "SELECT t, id FROM facts ORDER BY t DESC", keys: 1},
	{sql: "SELECT id, i4 FROM facts ORDER BY i4 USING >, id", ordered: true},
	// LIMIT and OFFSET.
	{sql: "SELECT id, i8 FROM facts ORDER BY i8, id LIMIT 7 OFFSET 3", ordered: true},
	{sql: "SELECT id, n FROM facts ORDER BY n DESC NULLS LAST, id LIMIT $1 OFFSET $2", args: []any{5, 11}, ordered: true},
	{sql: "SELECT id FROM facts ORDER BY id OFFSET 230", ordered: true},
	{sql: "SELECT id FROM facts ORDER BY id LIMIT 0", ordered: true},
	{sql: "SELECT id FROM facts ORDER BY id LIMIT ALL OFFSET 235", ordered: true},
	{sql: "SELECT id FROM facts ORDER BY id FETCH FIRST 4 ROWS ONLY", ordered: true},
	{sql: "SELECT i2, id FROM facts ORDER BY i2 FETCH FIRST 30 ROWS WITH TIES", keys: 1},
	{sql: "SELECT i2, id FROM facts ORDER BY i2 NULLS FIRST FETCH FIRST $1 ROWS WITH TIES", args: []any{1}, keys: 1},
	{sql: "SELECT t, id FROM facts ORDER BY t DESC, id OFFSET 5 ROWS FETCH FIRST 3 ROWS WITH TIES", ordered: true},
	{sql: "SELECT count(*), i2 FROM facts GROUP BY i2 ORDER BY count(*) DESC FETCH FIRST 2 ROWS WITH TIES", keys: 1},
	{sql: "SELECT id FROM facts ORDER BY id FETCH FIRST $1 ROWS WITH TIES", args: []any{nil}},
	{sql: "SELECT id FROM facts LIMIT 9", count: true},
	{sql: "SELECT id FROM facts OFFSET 200", count: true},
	{sql: "SELECT id FROM facts ORDER BY id LIMIT $1", args: []any{-1}},
	{sql: "SELECT id FROM facts ORDER BY id OFFSET -1"},
	// Aggregates without GROUP BY.
	{sql: "SELECT count(*), count(n), count(t), sum(i2), sum(i4), sum(i8), sum(n), sum(f4), sum(f8) FROM facts"},
	{sql: "SELECT avg(i2), avg(i4), avg(i8), avg(n), avg(f8) FROM facts"},
	{sql: "SELECT min(i2), max(i4), min(i8), max(n), min(f4), max(fx), min(fx), min(t), max(t), min(vc), max(bp) FROM facts"},
	{sql: "SELECT min(ts), max(ts), min(tz), max(tz), min(d), max(d), min(u), max(u), min(by), max(by) FROM facts"},
	{sql: "SELECT bool_and(b), bool_or(b), every(b), bool_and(i2 > -10), bool_or(i2 > 100) FROM facts"},
	{sql: "SELECT min(iv), max(iv), sum(iv), count(iv) FROM facts"},
	{sql: "SELECT bit_and(i2), bit_or(i2), bit_and(i4), bit_or(i4 + 1000), bit_and(i8), bit_or(i8), bit_or(i4) FILTER (WHERE i4 > 10000) FROM facts"},
	{sql: "SELECT b, bit_or(id), bit_and(id | 1) FROM facts GROUP BY b ORDER BY b", ordered: true},
	{sql: "SELECT i2, sum(iv) FROM facts GROUP BY i2 HAVING sum(iv) > '10 days' ORDER BY i2", ordered: true},
	{sql: "SELECT DISTINCT iv FROM facts WHERE i2 = 1 ORDER BY iv", ordered: true},
	{sql: "SELECT avg(iv) FROM facts"}, // over intermediate results (the plan's fallback)
	{sql: "SELECT count(*), sum(i4), avg(n), min(t), bool_and(b) FROM facts WHERE i4 > 100000"},
	{sql: "SELECT avg(i4) FILTER (WHERE b), sum(n) FILTER (WHERE i2 = 1), count(*) FILTER (WHERE t IS NULL) AS nulls FROM facts"},
	{sql: "SELECT avg(id), avg(-id), avg(id * 1000000), avg(id % 3 - 1), avg(n / 1000), avg(n * 1000000) FROM facts"},
	{sql: "SELECT count(*) AS n, max(id) AS top FROM facts HAVING count(*) > 1"},
	{sql: "SELECT count(*) FROM facts HAVING count(*) > 1000"},
	// GROUP BY, HAVING, ORDER BY over groups.
	{sql: "SELECT t, count(*), sum(n), avg(i4), min(d), max(f8) FROM facts GROUP BY t"},
	{sql: "SELECT i2, count(*), avg(n) FROM facts GROUP BY i2 ORDER BY i2 NULLS FIRST", ordered: true},
	{sql: "SELECT count(*) FROM facts GROUP BY b ORDER BY 1"},
	{sql: "SELECT i2, count(*) AS c FROM facts GROUP BY i2 ORDER BY c DESC, i2", ordered: true},
	{sql: "SELECT i2 FROM facts GROUP BY i2 ORDER BY sum(i4) DESC NULLS LAST, i2", ordered: true},
	{sql: "SELECT i2, count(*) FROM facts GROUP BY i2 HAVING count(*) > 20 ORDER BY i2", ordered: true},
	{sql: "SELECT i2, sum(n) FROM facts GROUP BY i2 HAVING sum(n) >= 10.5 AND i2 <> 3 ORDER BY 1", ordered: true},
	{sql: "SELECT t, max(i4) FROM facts GROUP BY t HAVING NOT (max(i4) < $1 OR min(n) IS NULL) OR t = $2 ORDER BY t", args: []any{300, "B"}, ordered: true},
	{sql: "SELECT t, avg(i4) FROM facts GROUP BY t HAVING avg(i4) > 0 ORDER BY t", ordered: true},
	{sql: "SELECT date_trunc('month', ts) AS m, count(*), sum(i8) FROM facts GROUP BY 1 ORDER BY 1", ordered: true},
	{sql: "SELECT i4 % 5 AS r, b, count(*) FROM facts GROUP BY 1, b ORDER BY r, b", ordered: true},
	{sql: "SELECT i4 % 5 AS r, count(*) FROM facts GROUP BY i4 % 5 ORDER BY 2 DESC, 1", ordered: true},
	{sql: "SELECT i2, count(*) FROM facts GROUP BY i2 ORDER BY count(*) DESC, i2 LIMIT 3 OFFSET 1", ordered: true},
	{sql: "SELECT count(*) FROM facts GROUP BY upper(t) ORDER BY upper(t)", ordered: true},
	{sql: "SELECT DISTINCT count(*) FROM facts GROUP BY i2 ORDER BY 1", ordered: true},
	// DISTINCT and DISTINCT ON.
	{sql: "SELECT DISTINCT i2 FROM facts ORDER BY i2", ordered: true},
	{sql: "SELECT DISTINCT t, b FROM facts"},
	{sql: "SELECT DISTINCT n FROM facts ORDER BY n DESC NULLS LAST", ordered: true},
	{sql: "SELECT DISTINCT fx FROM facts ORDER BY fx", ordered: true, anyZero: true},
	{sql: "SELECT DISTINCT bp, i2 FROM facts ORDER BY bp, i2 LIMIT 5", ordered: true},
	{sql: "SELECT DISTINCT ON (i2) i2, id, n FROM facts ORDER BY i2, n DESC NULLS LAST, id", ordered: true},
	{sql: "SELECT DISTINCT ON (t) t, id FROM facts ORDER BY t, id DESC", ordered: true},
	{sql: "SELECT DISTINCT ON (i4 % 10) id FROM facts ORDER BY i4 % 10, id LIMIT 4", ordered: true},
	{sql: "SELECT DISTINCT ON (b) b FROM facts"},
	// IN lists cut per cluster.
	{sql: "SELECT id, n FROM facts WHERE k IN (1, 2, 3, 4, 5, 6) ORDER BY id", ordered: true},
	{sql: "SELECT k, count(*) FROM facts WHERE k IN ($1, $2, $3) GROUP BY k ORDER BY k", args: []any{1, 8, 20}, ordered: true},
	{sql: "SELECT id FROM facts WHERE k = ANY($1) ORDER BY id LIMIT 5", args: []any{[]int64{3, 4, 5, 30}}, ordered: true},
	{sql: "SELECT sum(i4) FROM facts WHERE k IN (2, 4, 6, 8) AND t IS NOT NULL"},
	{sql: "SELECT id FROM facts WHERE k IN (1, 2, 3) AND i2 > 0"},
	// Around subqueries and CTEs that stay on one shard's rows.
	{sql: "WITH big AS (SELECT id, i4 FROM facts WHERE i4 > 0) SELECT count(*), sum(i4), max(id) FROM big"},
	{sql: "SELECT count(*), max(m), sum(m) FROM (SELECT k, max(n) AS m FROM facts GROUP BY k) t"},
	{sql: "SELECT i2, (SELECT count(*) FROM facts f2 WHERE f2.k = f.k) AS same_k FROM facts f ORDER BY i2 NULLS FIRST, id LIMIT 20", ordered: true},
	{sql: "SELECT k, count(*) FROM facts f WHERE EXISTS (SELECT 1 FROM facts g WHERE g.k = f.k AND g.b) GROUP BY k ORDER BY 2 DESC, 1", ordered: true},
	{sql: "SELECT t, count(*) FROM facts WHERE id IN (SELECT id FROM facts WHERE i2 > 0) GROUP BY t"},
	// Set operations.
	{sql: "SELECT i2 FROM facts WHERE b UNION SELECT i2 FROM facts WHERE NOT b"},
	{sql: "SELECT t FROM facts UNION SELECT vc FROM facts ORDER BY 1 DESC NULLS LAST", ordered: true},
	{sql: "SELECT n, b FROM facts WHERE i2 > 0 UNION ALL SELECT n, b FROM facts WHERE i2 < 2 UNION SELECT n, NULL FROM facts ORDER BY 1, 2 LIMIT 7 OFFSET 2", ordered: true},
	{sql: "SELECT fx FROM facts UNION SELECT -fx FROM facts", anyZero: true},
	{sql: "SELECT id FROM facts INTERSECT SELECT id FROM facts"},
	{sql: "SELECT id, n FROM facts WHERE i2 > 0 UNION ALL SELECT id, n FROM facts WHERE i2 <= 0 ORDER BY n DESC NULLS LAST, id LIMIT 10", ordered: true},
	// Expressions over combined aggregates, evaluated by the proxy with
	// Postgres's types (binary mode compares them), DISTINCT aggregates
	// over shards grouped by their argument, variances of numerics.
	{sql: "SELECT sum(i4) * 2, sum(i2) + 1, count(*) - 1, max(i2) * 2, min(i2) - max(i4), max(i8) / 3 FROM facts"},
	{sql: "SELECT round(avg(n), 2), round(avg(i4)), round(avg(i4)::numeric, 6), round(sum(f8)), round(max(n)) FROM facts"},
	{sql: "SELECT count(*)::int, count(*)::int2, count(*)::numeric, count(*)::float4, sum(i4)::float8 / 7, max(n)::float8, max(n)::int, max(f8)::int8 FROM facts"},
	{sql: "SELECT max(n) - min(n), max(d) - min(d), max(ts) - min(ts), max(tz) - min(tz), max(f4) * 2, max(f4) + max(f8) FROM facts"},
	{sql: "SELECT i2, CASE WHEN count(*) > 3 THEN max(n) ELSE 0 END, CASE WHEN sum(i4) > 0 THEN max(n) END, coalesce(max(n) FILTER (WHERE b), -1), sum(i4) / nullif(count(i8), 0) FROM facts GROUP BY i2"},
	{sql: "SELECT i2, i2 * count(*), -sum(i8) FROM facts GROUP BY i2 HAVING sum(i4) / count(*) > 0 ORDER BY sum(n) * 2 DESC NULLS LAST, 1", ordered: true},
	{sql: "SELECT (max(i4) * 100000)::int2 FROM facts", refused: "22003"},
	{sql: "SELECT max(i4) / (count(*) - count(*)) FROM facts", refused: "22012"},
	{sql: "SELECT round(max(f8), 2) FROM facts", refused: "42883"},
	{sql: "SELECT max(t) - min(t) FROM facts", refused: "42883"},
	{sql: "SELECT count(DISTINCT t), count(DISTINCT i2), sum(DISTINCT i4), avg(DISTINCT n), count(*) FROM facts"},
	// Interval and money: evaluated after the merge, or (what the merge
	// finds it cannot compute once it knows the types) over intermediate
	// results, never refused.
	{sql: "SELECT max(iv) - min(iv), sum(iv) + max(iv), -min(iv), max(ts::time) - min(ts::time), coalesce(max(iv) FILTER (WHERE b), min(iv)), CASE WHEN count(*) > 1 THEN sum(iv) END, nullif(max(iv), min(iv)) FROM facts"},
	{sql: "SELECT i2, sum(iv) - min(iv), -max(iv) FROM facts GROUP BY i2 HAVING max(iv) - min(iv) > '1 day' ORDER BY max(iv) + min(iv), i2", ordered: true},
	{sql: "SELECT sum(iv) * 2, sum(iv) / 3, min(iv) * 1.5, 2 * max(iv), max(iv) / 7.25 FROM facts"},
	{sql: "SELECT max(ts) + max(iv), min(ts) - min(iv), max(d) + 1, min(d) - 3, 7 + max(d), max(d) + min(iv), max(ts::time) - min(ts::time), max(ts::time) + max(iv) FROM facts"},
	{sql: "SELECT i2, max(iv) - min(iv), sum(iv) / count(*), avg(iv) * 2 FROM facts GROUP BY i2 ORDER BY i2", ordered: true},
	{sql: "SELECT i2, max(tz) + max(iv), max(tz) - min(tz) FROM facts GROUP BY i2 ORDER BY i2", ordered: true},
	{sql: "SELECT sum(m), max(m) - min(m), sum(m) * 2, sum(m) / count(*), max(m) / min(m), sum(m) * 0.5, min(m) / 3 FROM facts"},
	{sql: "SELECT -min(m) FROM facts", refused: "42883"},
	{sql: "SELECT i2, sum(m) * 2, max(m) + min(m), count(*) * max(m) FROM facts GROUP BY i2 ORDER BY i2", ordered: true},
	{sql: "SELECT m, count(*) * 2 FROM facts GROUP BY m"},
	{sql: "SELECT CASE WHEN count(*) > 3 THEN max(u) END, coalesce(max(by), min(by)), nullif(max(d), min(d)) FROM facts"},
	{sql: "SELECT avg(f4) * 2, round(avg(iv) / 2 - min(iv)) FROM facts", refused: "42883"},
	{sql: "SELECT i2, count(DISTINCT t) FILTER (WHERE b), sum(DISTINCT i8), count(DISTINCT n) FROM facts GROUP BY i2"},
	{sql: "SELECT count(DISTINCT t), sum(DISTINCT i4) FROM facts WHERE id < 0"},
	{sql: "SELECT stddev(n::numeric), variance(i4::int), stddev_pop(i2::numeric), var_pop(i8::bigint) FROM facts"},
	{sql: "SELECT i2, stddev(i4::numeric), var_samp(n::numeric) FROM facts GROUP BY i2"},
	// The stream could not combine these exactly: they run over
	// intermediate results on the coordinator (avg of real is refused at
	// execution, when the type is known).
	{sql: "SELECT array_agg(DISTINCT t) FROM facts"},
	{sql: "SELECT string_agg(t, ',' ORDER BY t, id) FROM facts"},
	{sql: "SELECT abs(sum(i4)) FROM facts"},
	{sql: "SELECT avg(f4) FROM facts"},
	{sql: "SELECT i2, array_agg(id ORDER BY id) FROM facts GROUP BY i2"},
	{sql: "SELECT id, sum(i4) OVER () FROM facts ORDER BY id", ordered: true},
	{sql: "SELECT i4 % 5 AS r, count(*) FROM facts GROUP BY r"},
	{sql: "SELECT count(*) FROM facts GROUP BY ROLLUP (i2)"},
}

func TestMergeAgainstOracle(t *testing.T) {
	m := setupMerge(t)
	for i, c := range mergeCases {
		for mode := range modeNames {
			name := fmt.Sprintf("case %d [%s] %s", i+1, modeNames[mode], c.sql)
			want := runQuery(m.oracle, queryMode(mode), c.sql, c.args)
			got := runQuery(m.proxy, queryMode(mode), c.sql, c.args)
			if c.refused == "" && want.err != nil && sqlstate(want.err) == "" {
				t.Fatalf("%s: oracle: %v", name, want.err)
			}
			compareResults(t, name, c, got, want)
		}
	}
	// The session is still usable, in and out of transactions.
	var n int
	if err := m.proxy.QueryRow(context.Background(), "SELECT count(*) FROM facts").Scan(&n); err != nil || n != 240 {
		t.Fatalf("after the cases: %d %v", n, err)
	}
}

// TestMergeInTransaction runs merges inside a transaction that also
// writes, and after a failed merge.
func TestMergeInTransaction(t *testing.T) {
	m := setupMerge(t)
	ctx := context.Background()
	tx, err := m.proxy.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "INSERT INTO facts (id, k, i4) VALUES (1001, 1, 7), (1002, 2, 9)"); err != nil {
		t.Fatal(err)
	}
	var sum, n int64
	if err := tx.QueryRow(ctx, "SELECT sum(i4), count(*) FROM facts WHERE id > 1000").Scan(&sum, &n); err != nil || sum != 16 || n != 2 {
		t.Fatalf("sum in tx: %d %d %v", sum, n, err)
	}
	if err := tx.QueryRow(ctx, "SELECT sum(i4), count(*) FROM facts WHERE id > 1000", pgx.QueryExecModeSimpleProtocol).Scan(&sum, &n); err != nil || sum != 16 || n != 2 {
		t.Fatalf("sum in tx (simple): %d %d %v", sum, n, err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.proxy.QueryRow(ctx, "SELECT count(*) FROM facts WHERE id > 1000").Scan(&n); err != nil || n != 0 {
		t.Fatalf("after rollback: %d %v", n, err)
	}
	// A shard error mid-merge is reported with its SQLSTATE and leaves the
	// connections clean.
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
		_, err := m.proxy.Exec(ctx, "SELECT id, 1 / (i4 - i4) FROM facts ORDER BY id", mode)
		if sqlstate(err) != "22012" {
			t.Fatalf("division by zero: want 22012, got %v", err)
		}
		if err := m.proxy.QueryRow(ctx, "SELECT count(*) FROM facts", mode).Scan(&n); err != nil || n != 240 {
			t.Fatalf("after an error: %d %v", n, err)
		}
	}
	// A pipeline: merges between other statements.
	b := &pgx.Batch{}
	b.Queue("SELECT count(*) FROM facts")
	b.Queue("SELECT id FROM facts ORDER BY id DESC LIMIT 1")
	b.Queue("SELECT max(i4) FROM facts WHERE k = 3")
	br := m.proxy.SendBatch(ctx, b)
	var top, mx int64
	if err := br.QueryRow().Scan(&n); err != nil || n != 240 {
		t.Fatalf("batch count: %d %v", n, err)
	}
	if err := br.QueryRow().Scan(&top); err != nil || top != 240 {
		t.Fatalf("batch top: %d %v", top, err)
	}
	if err := br.QueryRow().Scan(&mx); err != nil {
		t.Fatalf("batch max: %v", err)
	}
	if err := br.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestMergeFirstErrorCancels: the first shard error cancels the
// statements still running on the other shards (simple protocol).
func TestMergeFirstErrorCancels(t *testing.T) {
	m := setupMerge(t)
	ctx := context.Background()
	// Cluster pg0 fails at its first row; pg1 would sleep a second a row
	// (over a hundred rows).
	q := fmt.Sprintf(`SELECT count(*) FROM facts WHERE CASE WHEN current_setting('port') = '%d'
		THEN (1 / (id - id))::text ELSE pg_sleep(1)::text END IS NOT NULL`, env.Clusters[0].Port)
	start := time.Now()
	_, err := m.proxy.Exec(ctx, q, pgx.QueryExecModeSimpleProtocol)
	if sqlstate(err) != "22012" {
		t.Fatalf("want 22012 from pg0, got %v", err)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Fatalf("the error took %s: pg1 was not cancelled", d)
	}
	var n int
	if err := m.proxy.QueryRow(ctx, "SELECT count(*) FROM facts", pgx.QueryExecModeSimpleProtocol).Scan(&n); err != nil || n != 240 {
		t.Fatalf("after the cancel: %d %v", n, err)
	}
}

// TestMergeICUDatabase: in a database whose default collation is not C,
// text ordering across shards, which the merge cannot follow, runs over
// intermediate results (the plan's fallback), ordered by Postgres; the
// rest is merged.
func TestMergeICUDatabase(t *testing.T) {
	ctx := context.Background()
	for _, cl := range env.Clusters {
		_ = cl.Exec(ctx, "postgres", "DROP DATABASE IF EXISTS icu_shop")
		err := cl.Exec(ctx, "postgres", "CREATE DATABASE icu_shop LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C.UTF-8' TEMPLATE template0")
		if err != nil {
			t.Skipf("no ICU database: %v", err)
		}
	}
	topo := strings.ReplaceAll(shopTopology(mergeGroup), "/shop?", "/icu_shop?")
	p := startProxy(t, topo, nil)
	// The proxy serves the main cluster's database name.
	c := connect(t, strings.Replace(p.dsn(), "/shop?", "/icu_shop?", 1))
	mustExec(t, c, factsDDL)
	mustExec(t, c, "INSERT INTO facts (id, k, i4, t) VALUES (1, 1, 3, 'b'), (2, 2, 1, 'B'), (3, 3, 2, 'a'), (4, 4, 4, 'é')")
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
		for q, want := range map[string]string{"SELECT t FROM facts ORDER BY t": "a,b,B,é", "SELECT min(t) FROM facts": "a",
			"SELECT i4::text FROM facts GROUP BY i4 HAVING max(t) > 'a' ORDER BY i4": "1,3,4"} {
			if got := queryStrings(t, c, q, mode); got != want {
				t.Fatalf("%s: %s, want %s", q, got, want)
			}
		}
		var got []string
		rows, err := c.Query(ctx, `SELECT t FROM facts ORDER BY t COLLATE "C"`, mode)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var s string
			_ = rows.Scan(&s)
			got = append(got, s)
		}
		if rows.Err() != nil || strings.Join(got, ",") != "B,a,b,é" {
			t.Fatalf(`ORDER BY t COLLATE "C": %v %v`, got, rows.Err())
		}
		var n int64
		if err := c.QueryRow(ctx, "SELECT sum(i4) FROM facts", mode).Scan(&n); err != nil || n != 10 {
			t.Fatalf("sum: %d %v", n, err)
		}
		// Equality is bytewise under a deterministic collation.
		rows, err = c.Query(ctx, "SELECT DISTINCT t FROM facts", mode)
		if err != nil {
			t.Fatal(err)
		}
		groups := 0
		for rows.Next() {
			groups++
		}
		if rows.Err() != nil || groups != 4 {
			t.Fatalf("DISTINCT text under ICU: %d rows, %v", groups, rows.Err())
		}
	}
}

// TestMergeServerFloatDigits: float sums and averages the proxy computes
// print with the server's default extra_float_digits (here set on the
// database), or the session's own SET.
func TestMergeServerFloatDigits(t *testing.T) {
	ctx := context.Background()
	m := setupMerge(t)
	set := func(sql string) {
		for _, cl := range env.Clusters {
			if err := cl.Exec(ctx, "postgres", sql); err != nil {
				t.Fatal(err)
			}
		}
		if err := env.Clusters[0].Exec(ctx, "postgres", strings.ReplaceAll(sql, "DATABASE shop", "DATABASE merge_oracle")); err != nil {
			t.Fatal(err)
		}
	}
	set("ALTER DATABASE shop SET extra_float_digits = 0")
	defer set("ALTER DATABASE shop RESET extra_float_digits")
	p := startProxy(t, shopTopology(mergeGroup), nil) // new connections, new probe
	c := connect(t, p.dsn())
	o := connect(t, env.Clusters[0].DSN("merge_oracle"))
	cases := []mergeCase{
		{sql: "SELECT sum(f8), avg(f8), sum(f4) FROM facts"},
		{sql: "SELECT i2, avg(f8) FROM facts GROUP BY i2 ORDER BY i2", ordered: true},
	}
	for _, efd := range []string{"", "3"} {
		if efd != "" {
			mustExec(t, c, "SET extra_float_digits = "+efd)
			mustExec(t, o, "SET extra_float_digits = "+efd)
		}
		for _, cs := range cases {
			for mode := range modeNames {
				name := fmt.Sprintf("extra_float_digits %q [%s] %s", efd, modeNames[mode], cs.sql)
				compareResults(t, name, cs, runQuery(c, queryMode(mode), cs.sql, nil), runQuery(o, queryMode(mode), cs.sql, nil))
			}
		}
	}
	_ = m
}

// TestMergeCollation: text ordering where a column declares a collation
// the proxy cannot follow runs over intermediate results; with COLLATE
// "C" it is merged.
func TestMergeCollation(t *testing.T) {
	ctx := context.Background()
	p := startProxy(t, shopTopology(mergeGroup), nil)
	c := connect(t, p.dsn())
	mustExec(t, c, "DROP TABLE IF EXISTS facts")
	mustExec(t, c, factsDDL)
	mustExec(t, c, "INSERT INTO facts (id, k, t) VALUES (1, 1, 'b'), (2, 2, 'B'), (3, 3, 'a'), (4, 4, 'é')")
	// A column with its own collation, on every cluster.
	for _, cl := range env.Clusters {
		if err := cl.Exec(ctx, "shop", `CREATE TABLE IF NOT EXISTS collated (s text COLLATE "POSIX", u text COLLATE "C.utf8")`); err != nil {
			t.Fatal(err)
		}
	}
	defer func() {
		for _, cl := range env.Clusters {
			_ = cl.Exec(ctx, "shop", "DROP TABLE IF EXISTS collated")
		}
	}()
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
		if got := queryStrings(t, c, "SELECT t FROM facts ORDER BY t", mode); got != "B,a,b,é" {
			t.Fatalf("text ORDER BY with a collated column around: %s", got)
		}
		if got := queryStrings(t, c, "SELECT max(t) FROM facts", mode); got != "é" {
			t.Fatalf("max(text) with a collated column around: %s", got)
		}
		rows, err := c.Query(ctx, `SELECT t FROM facts ORDER BY t COLLATE "C"`, mode)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			got = append(got, s)
		}
		if rows.Err() != nil || strings.Join(got, ",") != "B,a,b,é" {
			t.Fatalf(`ORDER BY t COLLATE "C": %v %v`, got, rows.Err())
		}
		var mx string
		if err := c.QueryRow(ctx, `SELECT max(t COLLATE "C") FROM facts`, mode).Scan(&mx); err != nil || mx != "é" {
			t.Fatalf(`max(t COLLATE "C"): %q %v`, mx, err)
		}
		// Equality is bytewise under every deterministic collation.
		var n int
		if err := c.QueryRow(ctx, "SELECT count(*) FROM (SELECT DISTINCT t FROM facts) d", mode).Scan(&n); sqlstate(err) != "0A000" {
			_ = n // a derived table with DISTINCT is not merged (refused)
		}
		rows, err = c.Query(ctx, "SELECT t, count(*) FROM facts GROUP BY t", mode)
		if err != nil {
			t.Fatal(err)
		}
		n = 0
		for rows.Next() {
			n++
		}
		if rows.Err() != nil || n != 4 {
			t.Fatalf("GROUP BY text: %d groups, %v", n, rows.Err())
		}
	}
}

// queryStrings runs a query of one text column and joins its values with
// commas.
func queryStrings(t *testing.T, c *pgx.Conn, q string, mode pgx.QueryExecMode) string {
	t.Helper()
	rows, err := c.Query(context.Background(), q, mode)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	var got []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		got = append(got, s)
	}
	if rows.Err() != nil {
		t.Fatalf("%s: %v", q, rows.Err())
	}
	return strings.Join(got, ",")
}

// TestMergeFallbackInTransaction: a merge that falls back to intermediate
// results inside a transaction leaves it usable (the shards' first answers
// are drained, not cancelled), in both protocols, and sees its writes.
func TestMergeFallbackInTransaction(t *testing.T) {
	m := setupMerge(t)
	ctx := context.Background()
	tx, err := m.proxy.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "INSERT INTO facts (id, k, iv) VALUES (1001, 1, '1000 days'), (1002, 2, '3000 days')"); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement, pgx.QueryExecModeExec} {
		var avg, span pgtype.Interval // not evaluable by the merge: run by the fallback
		if err := tx.QueryRow(ctx, "SELECT avg(iv), max(iv) * 2 FROM facts WHERE id > 1000", mode).Scan(&avg, &span); err != nil || avg.Days != 2000 || span.Days != 6000 {
			t.Fatalf("mode %v: %+v %+v %v", mode, avg, span, err)
		}
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
}
