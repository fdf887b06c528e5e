package proxy

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/proxytest"
	"github.com/shardgate/shardgate/internal/testenv"
)

// clientBinary is a Postgres client program (pgbench, psql) next to the
// server binaries or on PATH.
func clientBinary(t *testing.T, name string) string {
	t.Helper()
	dir, err := testenv.FindBinaries()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, name)
	if _, err := os.Stat(bin); err != nil {
		if bin, err = exec.LookPath(name); err != nil {
			t.Fatalf("%s not found next to the server binaries nor on PATH", name)
		}
	}
	return bin
}

func runClient(t *testing.T, bin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "PGPASSWORD=x", "PGSSLMODE=disable")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, out)
	}
	return string(out)
}

// pgbenchLatency is the average latency pgbench -r reports for the script
// line that starts with prefix, in ms.
func pgbenchLatency(t *testing.T, out, prefix string) float64 {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) > 2 && strings.HasPrefix(strings.Join(f[2:], " "), prefix) {
			ms, err := strconv.ParseFloat(f[0], 64)
			if err == nil {
				return ms
			}
		}
	}
	t.Fatalf("no latency of %q in pgbench's output:\n%s", prefix, out)
	return 0
}

// queryRows is SHOW QUERIES' answer by fingerprint, each row by column.
func queryRows(t *testing.T, cols []string, rows [][]string) map[string]map[string]string {
	out := map[string]map[string]string{}
	for _, r := range rows {
		m := map[string]string{}
		for i, c := range cols {
			m[c] = r[i]
		}
		out[m["query"]] = m
	}
	return out
}

func within(got, want, share float64) bool { return got >= want*(1-share) && got <= want*(1+share) }

// TestShowQueriesAfterPgbenchAndPsql is issue 25's must-show: after pgbench
// (simple, then prepared) and psql, SHOW QUERIES lists the statements by
// fingerprint, the two protocols' in one, with the calls and rows the
// clients ran and mean times within 10 % of what they measured; the
// scatter read shows its two shards per call. No literal value is in the
// fingerprints, /metrics has the top ones, and RESET QUERIES forgets them.
func TestShowQueriesAfterPgbenchAndPsql(t *testing.T) {
	pgbench, psql := clientBinary(t, "pgbench"), clientBinary(t, "psql")
	p, _ := startAdminProxy(t, "")
	app := setupShop(t, p)
	mustExec(t, app, "INSERT INTO customers SELECT g, 'c' || g FROM generate_series(1, 100) g")
	script := filepath.Join(t.TempDir(), "mixed.sql")
	if err := os.WriteFile(script, []byte(`\set k random(1, 100)
SELECT name, pg_sleep(0.02) FROM customers WHERE id = :k;
UPDATE customers SET name = name WHERE id = :k;
`), 0o644); err != nil {
		t.Fatal(err)
	}
	con := connect(t, adminDSN(p, "boss"))
	mustExec(t, con, "RESET QUERIES") // the set-up's statements
	dsn := proxytest.DSN(p.addr, "app", "shop")
	var selectMs, updateMs float64
	for _, mode := range []string{"simple", "prepared"} {
		out := runClient(t, pgbench, "-n", "-r", "-c", "4", "-j", "2", "-t", "25", "-M", mode, "-f", script, dsn)
		t.Logf("pgbench -M %s:\n%s", mode, out)
		if !strings.Contains(out, "number of failed transactions: 0 ") {
			t.Fatalf("pgbench -M %s saw errors", mode)
		}
		selectMs += pgbenchLatency(t, out, "SELECT name") / 2 // the two runs have as many calls
		updateMs += pgbenchLatency(t, out, "UPDATE customers") / 2
	}
	scatter := "SELECT id, pg_sleep(0.02) FROM customers WHERE id <= 10"
	args := []string{"-X", "-v", "ON_ERROR_STOP=1", "-c", `\timing on`}
	for i := 0; i < 5; i++ {
		args = append(args, "-c", scatter)
	}
	out := runClient(t, psql, append(args, dsn)...)
	var psqlMs float64
	times := regexp.MustCompile(`Time: ([0-9.]+) ms`).FindAllStringSubmatch(out, -1)
	for _, m := range times {
		ms, _ := strconv.ParseFloat(m[1], 64)
		psqlMs += ms / float64(len(times))
	}
	if len(times) != 5 {
		t.Fatalf("psql printed %d timings:\n%s", len(times), out)
	}

	cols, rows := showRows(t, con, "SHOW QUERIES")
	byText := queryRows(t, cols, rows)
	for text := range byText {
		if strings.Contains(text, "0.02") || strings.Contains(text, "<= 10") {
			t.Errorf("a literal value in fingerprint %q", text)
		}
	}
	ms := func(q map[string]string, col string) float64 {
		v, err := strconv.ParseFloat(q[col], 64)
		if err != nil {
			t.Fatalf("%s of %q: %q", col, q["query"], q[col])
		}
		return v
	}
	for _, c := range []struct {
		text                     string
		calls, rows, shards, max string
		route                    string
		clientMs                 float64
		// timed: the statement takes long enough (pg_sleep: 20 ms, 100 ms
		// for the scatter) for what only the clients count (their own
		// work, the hop to the proxy, planning a new shape on a loaded
		// machine) to stay under 10 % of it.
		timed bool
	}{
		{"SELECT name, pg_sleep($1) FROM customers WHERE id = $2", "200", "200", "200", "1", "single", selectMs, true},
		{"UPDATE customers SET name = name WHERE id = $1", "200", "200", "200", "1", "single", updateMs, false},
		{"SELECT id, pg_sleep($1) FROM customers WHERE id <= $2", "5", "50", "10", "2", "scatter", psqlMs, true},
	} {
		q := byText[c.text]
		if q == nil {
			t.Errorf("no fingerprint %q in SHOW QUERIES: %v", c.text, rows)
			continue
		}
		got := fmt.Sprintf("calls %s rows %s shards %s max_shards %s routes %s errors %s", q["calls"], q["rows"], q["shards"], q["max_shards"], q["routes"], q["errors"])
		if want := fmt.Sprintf("calls %s rows %s shards %s max_shards %s routes %s errors 0", c.calls, c.rows, c.shards, c.max, c.route); got != want {
			t.Errorf("%s: %s, want %s", c.text, got, want)
		}
		if mean := ms(q, "mean_ms"); c.timed && !within(mean, c.clientMs, 0.10) {
			t.Errorf("%s: mean %.3f ms, the clients measured %.3f ms", c.text, mean, c.clientMs)
		} else {
			t.Logf("%s: mean %.3f ms, p99 %s ms, the clients measured %.3f ms", c.text, mean, q["p99_ms"], c.clientMs)
		}
		if p99, max := ms(q, "p99_ms"), ms(q, "max_ms"); p99 < ms(q, "mean_ms")*0.9 || p99 > max {
			t.Errorf("%s: p99 %v ms outside [mean, max %v]", c.text, p99, max)
		}
	}
	if q := byText["SELECT name, pg_sleep($1) FROM customers WHERE id = $2"]; q != nil {
		// The simple run looks its plan up 100 times; prepared, once per
		// connection.
		if hits := ms(q, "plan_cache_hits"); hits < 50 || hits > 200 {
			t.Errorf("plan_cache_hits %v", hits)
		}
	}

	_, top := showRows(t, con, "SHOW QUERIES ORDER BY calls DESC LIMIT 2")
	if len(top) != 2 || top[0][2] != "200" || top[1][2] != "200" {
		t.Errorf("ORDER BY calls DESC LIMIT 2: %v", top)
	}
	_, liked := showRows(t, con, "SHOW QUERIES ORDER BY shards DESC LIKE '%pg_sleep%'")
	if len(liked) != 2 || liked[0][1] != "SELECT name, pg_sleep($1) FROM customers WHERE id = $2" {
		t.Errorf("LIKE '%%pg_sleep%%': %v", liked)
	}
	if _, err := con.Exec(context.Background(), "SHOW QUERIES ORDER BY name"); sqlstate(err) != "42601" {
		t.Errorf("ORDER BY an unknown key: %v, want 42601", err)
	}
	_, logConfig := showRows(t, con, "SHOW CONFIG LIKE 'proxy.log.%'")
	_, statsConfig := showRows(t, con, "SHOW CONFIG LIKE 'proxy.query_stats.%'")
	if got := fmt.Sprint(logConfig, statsConfig); got != "[[proxy.log.slow_statement 0s] [proxy.log.sample_statements 0]] [[proxy.query_stats.max 5000]]" {
		t.Errorf("SHOW CONFIG of the statistics and logs: %v", got)
	}
	families := scrape(t, p)
	if !hasLabel(families["shardgate_query_calls_total"], "query", "SELECT name, pg_sleep($1) FROM customers WHERE id = $2") {
		t.Errorf("/metrics has no shardgate_query_calls_total of the pgbench SELECT: %v", families["shardgate_query_calls_total"])
	}

	mustExec(t, con, "RESET QUERIES")
	if _, rows := showRows(t, con, "SHOW QUERIES"); len(rows) != 0 {
		t.Errorf("after RESET QUERIES: %v", rows)
	}
	mustExec(t, app, "SELECT name FROM customers WHERE id = 7")
	if _, rows := showRows(t, con, "SHOW QUERIES LIKE 'SELECT name FROM%'"); len(rows) != 1 || rows[0][2] != "1" || rows[0][9] != "1" {
		t.Errorf("a statement after RESET QUERIES: %v", rows)
	}
	// The extended protocol (pgx's cached statements): each statement's
	// rows are its own, a scatter of 3 rows then a delete of none, twice.
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		r, err := app.Query(ctx, "SELECT id FROM customers WHERE id <= $1", 3)
		if err != nil {
			t.Fatal(err)
		}
		r.Close()
		if _, err := app.Exec(ctx, "DELETE FROM customers WHERE id = $1", 999); err != nil {
			t.Fatal(err)
		}
	}
	byText = queryRows(t, cols, func() [][]string { _, rows := showRows(t, con, "SHOW QUERIES"); return rows }())
	if q := byText["SELECT id FROM customers WHERE id <= $1"]; q == nil || q["calls"] != "2" || q["rows"] != "6" || q["max_shards"] != "2" {
		t.Errorf("extended scatter: %v", q)
	}
	if q := byText["DELETE FROM customers WHERE id = $1"]; q == nil || q["calls"] != "2" || q["rows"] != "0" {
		t.Errorf("extended delete: %v", q)
	}
}

// TestShowQueriesCountsSQLExecuteOnce: a SQL-level EXECUTE is one call of
// its prepared statement's fingerprint, with the statement's rows and
// shards, and no call of its own (pg_stat_statements counts it so too); an
// EXECUTE that never runs its statement counts as itself, with its error.
func TestShowQueriesCountsSQLExecuteOnce(t *testing.T) {
	p, _ := startAdminProxy(t, "")
	app := setupShop(t, p)
	mustExec(t, app, "INSERT INTO customers SELECT g, 'c' || g FROM generate_series(1, 10) g")
	mustExec(t, app, "PREPARE byid AS SELECT name FROM customers WHERE id = $1")
	con := connect(t, adminDSN(p, "boss"))
	mustExec(t, con, "RESET QUERIES")
	for _, id := range []int{1, 2, 3} {
		mustExec(t, app, fmt.Sprintf("EXECUTE byid(%d)", id))
	}
	if _, err := app.Exec(context.Background(), "EXECUTE nosuch(1)"); sqlstate(err) != "26000" {
		t.Fatalf("EXECUTE of an unknown statement: %v, want 26000", err)
	}
	cols, rows := showRows(t, con, "SHOW QUERIES")
	byText := queryRows(t, cols, rows)
	calls := 0
	for _, q := range byText {
		n, _ := strconv.Atoi(q["calls"])
		calls += n
	}
	if calls != 4 {
		t.Errorf("4 EXECUTEs counted as %d calls: %v", calls, rows)
	}
	if q := byText["SELECT name FROM customers WHERE id = $1"]; q == nil || q["calls"] != "3" || q["rows"] != "3" || q["shards"] != "3" || q["errors"] != "0" {
		t.Errorf("the prepared statement: %v", q)
	}
	if q := byText["EXECUTE nosuch($1)"]; q == nil || q["calls"] != "1" || q["errors"] != "1" {
		t.Errorf("the EXECUTE of an unknown statement: %v", byText)
	}
}
