package proxy

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// Every value a merge formats or reads itself (merged aggregates,
// expressions over them, sort keys, DISTINCT and GROUP BY keys) under
// every setting that changes text output: DateStyle (format and order),
// IntervalStyle, TimeZone, extra_float_digits, bytea_output, lc_monetary
// and lc_numeric, in text and binary results, compared byte for byte with
// plain Postgres holding the same rows.

// outputSetting is one session's settings, SET on the proxy and the
// oracle alike.
type outputSetting struct {
	sets []string
	// roundsFloats: extra_float_digits is below 1.
	roundsFloats bool
	// zoneRules is false for a TimeZone whose abbreviations the proxy
	// cannot read (a POSIX zone): a merge reading timestamptz text outside
	// DateStyle ISO may refuse (0A000), or fall back to intermediate
	// results, but never answer wrong.
	zoneRules bool
}

var outputSettings = []outputSetting{
	{sets: []string{"DateStyle = 'SQL, DMY'", "IntervalStyle = iso_8601", "TimeZone = 'Europe/Berlin'", "extra_float_digits = 0", "bytea_output = escape"}, zoneRules: true, roundsFloats: true},
	{sets: []string{"DateStyle = German", "IntervalStyle = postgres_verbose", "TimeZone = 'America/New_York'", "extra_float_digits = 3", "bytea_output = hex"}, zoneRules: true},
	{sets: []string{"DateStyle = 'Postgres, MDY'", "IntervalStyle = sql_standard", "TimeZone = 'Asia/Kolkata'", "extra_float_digits = -5", "bytea_output = escape"}, zoneRules: true, roundsFloats: true},
	{sets: []string{"DateStyle = 'Postgres, DMY'", "IntervalStyle = iso_8601", "TimeZone = 'UTC'", "extra_float_digits = 1", "lc_monetary = 'C.utf8'", "lc_numeric = 'C.utf8'"}, zoneRules: true},
	{sets: []string{"DateStyle = 'SQL, MDY'", "IntervalStyle = postgres", "TimeZone = 'Australia/Lord_Howe'", "extra_float_digits = 2", "bytea_output = escape"}, zoneRules: true},
	{sets: []string{"DateStyle = 'ISO, DMY'", "IntervalStyle = sql_standard", "TimeZone = 'UTC+3'", "extra_float_digits = 1"}, zoneRules: true},
	{sets: []string{"DateStyle = 'German, MDY'", "IntervalStyle = postgres_verbose", "TIME ZONE INTERVAL '+05:30' HOUR TO MINUTE"}, zoneRules: true},
	{sets: []string{"DateStyle = 'SQL, DMY'", "IntervalStyle = iso_8601", "TimeZone = 'UTC+3'"}, zoneRules: false},
	{sets: []string{"DateStyle = 'ISO, MDY'", "IntervalStyle = postgres", "TimeZone = 'Etc/UTC'"}, zoneRules: true},
}

// styleCase is a merged query; tz marks the ones reading timestamptz,
// mayRefuse the ones over types the proxy does not merge (money,
// timetz), which it must refuse or answer exactly (over intermediate
// results).
type styleCase struct {
	mergeCase
	tz, mayRefuse bool
	// floats: the proxy reads float text, which under
	// extra_float_digits below 1 is rounded (simple protocol: the shards
	// answer in text): refused, or exact over intermediate results.
	floats bool
}

const finiteTS = "ts BETWEEN '2000-01-01' AND '2100-01-01'"

var styleCases = []styleCase{
	// GROUP BY keys the proxy decodes.
	{mergeCase: mergeCase{sql: "SELECT d, count(*) FROM facts GROUP BY d"}},
	{mergeCase: mergeCase{sql: "SELECT ts, count(*) FROM facts GROUP BY ts"}},
	{mergeCase: mergeCase{sql: "SELECT tz, count(*) FROM facts GROUP BY tz"}, tz: true},
	{mergeCase: mergeCase{sql: "SELECT iv, count(*) FROM facts GROUP BY iv"}},
	{mergeCase: mergeCase{sql: "SELECT by, count(*) FROM facts GROUP BY by"}},
	{mergeCase: mergeCase{sql: "SELECT f4, n, count(*) FROM facts GROUP BY f4, n"}, floats: true},
	{mergeCase: mergeCase{sql: "SELECT f4, count(*) FROM facts GROUP BY f4"}, floats: true},
	// Merged aggregates.
	{mergeCase: mergeCase{sql: "SELECT i2, min(d), max(d), min(ts), max(ts), min(iv), max(iv) FROM facts GROUP BY i2"}},
	{mergeCase: mergeCase{sql: "SELECT i2, min(tz), max(tz) FROM facts GROUP BY i2"}, tz: true},
	{mergeCase: mergeCase{sql: "SELECT i2, sum(iv), sum(f8), avg(f8), sum(f4), sum(n), avg(n), avg(i4), count(*), sum(i8) FROM facts GROUP BY i2"}, floats: true},
	{mergeCase: mergeCase{sql: "SELECT i2, min(ts::time), max(ts::time), max(ts::time) - min(ts::time) FROM facts WHERE " + finiteTS + " GROUP BY i2"}},
	{mergeCase: mergeCase{sql: `SELECT i2, min(t COLLATE "C"), max(vc COLLATE "C"), bool_and(b), bool_or(b) FROM facts GROUP BY i2`}},
	{mergeCase: mergeCase{sql: "SELECT sum(iv), min(d), max(ts), avg(f8), sum(f4) FROM facts"}, floats: true},
	{mergeCase: mergeCase{sql: "SELECT max(tz), min(tz) FROM facts"}, tz: true},
	// Expressions over them (merge/postexpr.go).
	{mergeCase: mergeCase{sql: "SELECT b, max(ts) - min(ts) FROM facts WHERE " + finiteTS + " GROUP BY b"}},
	{mergeCase: mergeCase{sql: "SELECT i2, max(ts) - min(ts), max(d) - min(d), max(iv) - min(iv), -sum(iv), sum(iv) + max(iv) FROM facts WHERE " + finiteTS + " AND d > '1000-01-01' AND d < 'infinity' GROUP BY i2"}},
	{mergeCase: mergeCase{sql: "SELECT i2, max(tz) - min(tz) FROM facts GROUP BY i2"}, tz: true},
	{mergeCase: mergeCase{sql: "SELECT i2, sum(f8) / count(*), avg(f8) * 2, sum(f4) * 3, round(avg(n), 2), coalesce(sum(iv), '0') FROM facts GROUP BY i2"}, floats: true},
	{mergeCase: mergeCase{sql: "SELECT i2, nullif(sum(iv), '-100 days'), CASE WHEN count(*) > 10 THEN sum(iv) ELSE max(iv) END FROM facts GROUP BY i2"}},
	// Expressions the merge does not evaluate run over intermediate
	// results: exact, or refused.
	{mergeCase: mergeCase{sql: "SELECT i2, sum(iv) + '1 day', sum(iv) * 2, justify_hours(sum(iv)), sum(iv)::text FROM facts GROUP BY i2"}, mayRefuse: true},
	{mergeCase: mergeCase{sql: "SELECT i2, max(ts) + interval '1 hour', max(ts)::date, min(d)::timestamp, to_char(max(ts), 'YYYY') FROM facts WHERE ts < 'infinity' GROUP BY i2"}, mayRefuse: true},
	{mergeCase: mergeCase{sql: "SELECT i2, max(tz) AT TIME ZONE 'UTC', max(tz)::text FROM facts GROUP BY i2"}, mayRefuse: true},
	// Sorts over values the proxy computed, and HAVING over them.
	{mergeCase: mergeCase{sql: "SELECT i2, sum(iv) AS s FROM facts GROUP BY i2 ORDER BY s, i2", ordered: true}},
	{mergeCase: mergeCase{sql: "SELECT i2, max(ts) - min(ts) AS span FROM facts WHERE " + finiteTS + " GROUP BY i2 ORDER BY span DESC, i2", ordered: true}},
	{mergeCase: mergeCase{sql: "SELECT i2, sum(iv) FROM facts GROUP BY i2 HAVING sum(iv) > '10 days'"}},
	{mergeCase: mergeCase{sql: "SELECT i2, max(d) FROM facts GROUP BY i2 HAVING max(d) > '2000-01-01'"}},
	{mergeCase: mergeCase{sql: "SELECT i2 FROM facts WHERE " + finiteTS + " GROUP BY i2 HAVING max(ts) - min(ts) > '300 days'"}, mayRefuse: true},
	// HAVING literals Postgres reads under the session's settings: a
	// short year in the DateStyle's field order, sql_standard's leading
	// minus for every field.
	{mergeCase: mergeCase{sql: "SELECT i2, max(d) FROM facts GROUP BY i2 HAVING max(d) > '1-02-29'"}, mayRefuse: true},
	{mergeCase: mergeCase{sql: "SELECT i2, sum(iv) FROM facts GROUP BY i2 HAVING sum(iv) > '-1 02:00:00'"}, mayRefuse: true},
	{mergeCase: mergeCase{sql: "SELECT i2, min(iv) FROM facts GROUP BY i2 HAVING min(iv) < '-19 days 23:00:00'"}, mayRefuse: true},
	// Sort keys.
	{mergeCase: mergeCase{sql: "SELECT id, d FROM facts ORDER BY d, id", ordered: true}},
	{mergeCase: mergeCase{sql: "SELECT id, ts FROM facts ORDER BY ts DESC, id", ordered: true}},
	{mergeCase: mergeCase{sql: "SELECT id, tz FROM facts ORDER BY tz, id", ordered: true}, tz: true},
	{mergeCase: mergeCase{sql: "SELECT id, iv FROM facts ORDER BY iv, id", ordered: true}},
	{mergeCase: mergeCase{sql: "SELECT id, by FROM facts ORDER BY by, id", ordered: true}},
	{mergeCase: mergeCase{sql: "SELECT id, f8, f4 FROM facts ORDER BY f8, id", ordered: true}, floats: true},
	{mergeCase: mergeCase{sql: "SELECT id, f4 FROM facts ORDER BY f4, id", ordered: true}, floats: true},
	{mergeCase: mergeCase{sql: "SELECT ts, d FROM facts ORDER BY ts, d LIMIT 7", ordered: true}},
	{mergeCase: mergeCase{sql: "SELECT id, ts::time FROM facts ORDER BY 2, id", ordered: true}},
	// DISTINCT keys.
	{mergeCase: mergeCase{sql: "SELECT DISTINCT d FROM facts"}},
	{mergeCase: mergeCase{sql: "SELECT DISTINCT iv, by FROM facts"}},
	{mergeCase: mergeCase{sql: "SELECT DISTINCT tz FROM facts"}, tz: true},
	{mergeCase: mergeCase{sql: "SELECT DISTINCT ON (d) d, id FROM facts ORDER BY d, id", ordered: true}},
	// Types the proxy does not merge: refused, or exact.
	{mergeCase: mergeCase{sql: "SELECT i2, sum(m), min(m) FROM facts GROUP BY i2"}, mayRefuse: true},
	{mergeCase: mergeCase{sql: "SELECT id, m FROM facts ORDER BY m, id", ordered: true}, mayRefuse: true},
	{mergeCase: mergeCase{sql: "SELECT i2, max(tz::timetz) FROM facts GROUP BY i2"}, mayRefuse: true},
}

// TestMergeOutputSettings runs every case under every setting in the four
// protocol modes (text and binary results) through the proxy over two
// clusters and on the oracle.
func TestMergeOutputSettings(t *testing.T) {
	m := setupMerge(t)
	for si, s := range outputSettings {
		for _, set := range s.sets {
			mustExec(t, m.proxy, "SET "+set)
			mustExec(t, m.oracle, "SET "+set)
		}
		// Postgres reads a prepared statement's literals when it parses
		// it, and parses it again only when the plan is invalidated (an
		// autovacuum ANALYZE of facts, at any time): a statement pgx
		// prepared under an earlier setting row keeps that row's reading
		// of '-1 02:00:00' on the oracle, or not. Every row prepares its
		// statements anew on both sides.
		for _, c := range []*pgx.Conn{m.proxy, m.oracle} {
			if err := c.DeallocateAll(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		for i, c := range styleCases {
			for mode := range modeNames {
				name := fmt.Sprintf("setting %d (%s) case %d [%s] %s", si+1, strings.Join(s.sets, "; "), i+1, modeNames[mode], c.sql)
				want := runQuery(m.oracle, queryMode(mode), c.sql, c.args)
				if want.err != nil {
					t.Fatalf("%s: oracle: %v", name, want.err)
				}
				got := runQuery(m.proxy, queryMode(mode), c.sql, c.args)
				if (c.mayRefuse || c.tz && !s.zoneRules || c.floats && s.roundsFloats && mode == int(modeSimple)) && sqlstate(got.err) == "0A000" {
					t.Logf("%s: refused: %v", name, got.err)
					continue
				}
				compareResults(t, name, c.mergeCase, got, want)
			}
		}
		for _, set := range s.sets {
			name, _, _ := strings.Cut(set, " ")
			if name == "TIME" {
				name = "TimeZone"
			}
			mustExec(t, m.proxy, "RESET "+name)
			mustExec(t, m.oracle, "RESET "+name)
		}
	}
}

// TestSetTimeZoneInterval: SET TIME ZONE INTERVAL ... (which only SET TIME
// ZONE takes) and its SET LOCAL form are replayed on every cluster a
// statement then reads, as Postgres keeps them.
func TestSetTimeZoneInterval(t *testing.T) {
	m := setupMerge(t)
	ctx := context.Background()
	zones := func() []string {
		t.Helper()
		rows, err := m.proxy.Query(ctx, "SELECT DISTINCT current_setting('TimeZone') FROM facts")
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for rows.Next() {
			var z string
			if err := rows.Scan(&z); err != nil {
				t.Fatal(err)
			}
			out = append(out, z)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	mustExec(t, m.proxy, "SET TIME ZONE INTERVAL '+05:30' HOUR TO MINUTE")
	if z := zones(); len(z) != 1 || z[0] != "<+05:30>-05:30" {
		t.Errorf("after SET TIME ZONE INTERVAL: the clusters' TimeZone is %q, want [<+05:30>-05:30]", z)
	}
	mustExec(t, m.proxy, "BEGIN")
	mustExec(t, m.proxy, "SET LOCAL TIME ZONE INTERVAL '-03:00' HOUR TO MINUTE")
	if z := zones(); len(z) != 1 || z[0] != "<-03>+03" {
		t.Errorf("after SET LOCAL TIME ZONE INTERVAL: the clusters' TimeZone is %q, want [<-03>+03]", z)
	}
	mustExec(t, m.proxy, "COMMIT")
	if z := zones(); len(z) != 1 || z[0] != "<+05:30>-05:30" {
		t.Errorf("after COMMIT: the clusters' TimeZone is %q, want [<+05:30>-05:30]", z)
	}
}

// TestMergeSetLocalOutputSettings: a transaction's SET LOCAL
// extra_float_digits (which the backends do not report) reaches the
// merge: float text rounded under it is not read as exact.
func TestMergeSetLocalOutputSettings(t *testing.T) {
	m := setupMerge(t)
	for _, c := range []styleCase{
		{mergeCase: mergeCase{sql: "SELECT f4, count(*) FROM facts GROUP BY f4"}},
		{mergeCase: mergeCase{sql: "SELECT i2, sum(f4), avg(f8) FROM facts GROUP BY i2"}},
		{mergeCase: mergeCase{sql: "SELECT id, f4 FROM facts ORDER BY f4, id", ordered: true}},
	} {
		var res [2]result
		for i, conn := range []*mergeEnv{m, m} {
			db := conn.proxy
			if i == 1 {
				db = conn.oracle
			}
			mustExec(t, db, "BEGIN")
			mustExec(t, db, "SET LOCAL extra_float_digits = -5")
			res[i] = runQuery(db, modeSimple, c.sql, nil)
			mustExec(t, db, "ROLLBACK")
		}
		if sqlstate(res[0].err) == "0A000" {
			continue
		}
		compareResults(t, "SET LOCAL extra_float_digits = -5: "+c.sql, c.mergeCase, res[0], res[1])
	}
}

// TestMergedCursorAfterSet: a merged cursor's rows come from the shards
// in batches, in the text of the settings at DECLARE: FETCH after SET
// DateStyle (or any output setting) is refused, never answered in the old
// style.
func TestMergedCursorAfterSet(t *testing.T) {
	m := setupMerge(t)
	ctx := context.Background()
	for _, set := range []string{"SET DateStyle = 'SQL, DMY'", "SET IntervalStyle = iso_8601", "SET extra_float_digits = 3", "SET LOCAL bytea_output = escape"} {
		mustExec(t, m.proxy, "BEGIN")
		mustExec(t, m.proxy, "DECLARE cur CURSOR FOR SELECT id, d, iv, f8, by FROM facts ORDER BY d, id")
		if _, err := m.proxy.Exec(ctx, "FETCH 3 FROM cur"); err != nil {
			t.Fatalf("FETCH before %s: %v", set, err)
		}
		mustExec(t, m.proxy, set)
		_, err := m.proxy.Exec(ctx, "FETCH 3 FROM cur")
		if sqlstate(err) != "0A000" {
			t.Errorf("FETCH after %s: %v, want 0A000", set, err)
		}
		mustExec(t, m.proxy, "ROLLBACK")
		if !strings.HasPrefix(set, "SET LOCAL") {
			mustExec(t, m.proxy, "RESET "+strings.Fields(set)[1])
		}
	}
	// Unchanged settings (set again to the same value) fetch on.
	mustExec(t, m.proxy, "BEGIN")
	mustExec(t, m.proxy, "DECLARE cur CURSOR FOR SELECT id FROM facts ORDER BY id")
	mustExec(t, m.proxy, "SET DateStyle = 'ISO, MDY'")
	var id int
	if err := m.proxy.QueryRow(ctx, "FETCH 1 FROM cur", pgx.QueryExecModeSimpleProtocol).Scan(&id); err != nil || id != 1 {
		t.Errorf("FETCH under unchanged settings: %d, %v", id, err)
	}
	mustExec(t, m.proxy, "ROLLBACK")
}

// TestPulloutOutputSettings: the subquery a statement runs first (a
// pullout, package intermediate) is merged under the session's settings:
// its shards answer in the session's DateStyle and IntervalStyle.
func TestPulloutOutputSettings(t *testing.T) {
	m := setupMerge(t)
	for _, set := range []string{"DateStyle = 'SQL, DMY'", "IntervalStyle = sql_standard", "extra_float_digits = -10", "DateStyle = German"} {
		mustExec(t, m.proxy, "SET "+set)
		mustExec(t, m.oracle, "SET "+set)
		for _, q := range []string{
			"SELECT id FROM facts WHERE d = (SELECT max(d) FROM facts WHERE d < '2000-01-01')",
			"SELECT id FROM facts WHERE iv = (SELECT max(iv) FROM facts)",
			"SELECT id FROM facts WHERE f8 = (SELECT max(f8) FROM facts WHERE f8 < -100)",
			"SELECT id FROM facts WHERE ts = (SELECT min(ts) FROM facts WHERE ts > '2024-06-01')",
		} {
			for _, mode := range []queryMode{modeSimple, modeExtended} {
				c := mergeCase{sql: q}
				compareResults(t, set+" ["+modeNames[mode]+"] "+q, c, runQuery(m.proxy, mode, q, nil), runQuery(m.oracle, mode, q, nil))
			}
		}
		name := strings.Fields(set)[0]
		mustExec(t, m.proxy, "RESET "+name)
		mustExec(t, m.oracle, "RESET "+name)
	}
}

// TestMergeClientEncoding: under a client_encoding whose bytes do not sort
// as UTF-8 (WIN1251), text ORDER BY and min/max under COLLATE "C" are not
// merged by bytes: answered exactly (over intermediate results) or
// refused. Equality (GROUP BY, DISTINCT) holds in any encoding.
func TestMergeClientEncoding(t *testing.T) {
	m := setupMerge(t)
	ins := "INSERT INTO facts (id, k, t) VALUES (1001, 1, 'ёж'), (1002, 2, 'яблоко'), (1003, 3, 'Ґ'), (1004, 4, 'абв'), (1005, 5, 'їжак'), (1006, 6, 'А')"
	mustExec(t, m.proxy, ins)
	mustExec(t, m.oracle, ins)
	mustExec(t, m.proxy, "SET client_encoding = 'WIN1251'")
	mustExec(t, m.oracle, "SET client_encoding = 'WIN1251'")
	for _, c := range []mergeCase{
		{sql: `SELECT id, t FROM facts WHERE id > 1000 ORDER BY t COLLATE "C"`, ordered: true},
		{sql: `SELECT max(t COLLATE "C"), min(t COLLATE "C") FROM facts WHERE id > 1000`},
		{sql: `SELECT k % 2 AS g, max(t COLLATE "C") FROM facts WHERE id > 1000 GROUP BY g`},
		{sql: `SELECT t, count(*) FROM facts GROUP BY t`},
		{sql: `SELECT DISTINCT t FROM facts`},
	} {
		// pgx's simple protocol insists on UTF8: Parse/Bind/Execute with
		// text and binary results.
		for _, mode := range []queryMode{modeExecParamsText, modeExecParamsBinary} {
			got := runQuery(m.proxy, mode, c.sql, nil)
			if sqlstate(got.err) == "0A000" {
				continue
			}
			compareResults(t, "client_encoding WIN1251 ["+modeNames[mode]+"] "+c.sql, c, got, runQuery(m.oracle, mode, c.sql, nil))
		}
	}
}
