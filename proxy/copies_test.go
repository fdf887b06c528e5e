package proxy

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestReferenceCopiesStayIdentical: a write to a reference table runs on
// every copy, so a value each cluster would compute for itself (random(),
// now(), gen_random_uuid(), a cluster's own sequence, 'now' read by a
// timestamp column) is refused with 0A000 before anything runs, in both
// protocols; built-ins that agree everywhere and nextval of a main
// sequence (drawn once by the proxy) pass. The copies stay identical.
func TestReferenceCopiesStayIdentical(t *testing.T) {
	p := startProxy(t, shopTopology(""), nil)
	c := setupShop(t, p)
	mustExec(t, c, "ALTER TABLE countries ADD COLUMN at timestamptz, ADD COLUMN weight float8, ADD COLUMN n bigint, ADD COLUMN u text")
	mustExec(t, c, "DROP SEQUENCE IF EXISTS country_n")
	mustExec(t, c, "CREATE SEQUENCE country_n")
	mustExec(t, c, "INSERT INTO countries (code, name) VALUES ('DE', 'Germany')")
	ctx := context.Background()

	refused := []struct {
		sql  string
		args []any
	}{
		{sql: "INSERT INTO countries (code, weight) VALUES ('R1', random())"},
		{sql: "INSERT INTO countries (code, u) VALUES ('R2', gen_random_uuid()::text)"},
		{sql: "INSERT INTO countries (code, at) VALUES ('R3', clock_timestamp())"},
		{sql: "INSERT INTO countries (code, at) VALUES ('R4', now())"},
		{sql: "INSERT INTO countries (code, at) VALUES ('R5', current_timestamp)"},
		{sql: "UPDATE countries SET weight = random() WHERE code = 'DE'"},
		{sql: "UPDATE countries SET at = now()"},
		{sql: "INSERT INTO countries (code, at) VALUES ('R6', 'now')"},
		{sql: "INSERT INTO countries (code, at) VALUES ($1, $2)", args: []any{"R7", "now"}},
		{sql: "INSERT INTO countries (code, n) SELECT 'R8', currval('country_n')"},
		{sql: "ALTER TABLE countries ADD COLUMN w2 float8 DEFAULT random()"},
		{sql: "ALTER TABLE countries ALTER COLUMN at SET DEFAULT now()"},
	}
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
		for _, r := range refused {
			_, err := c.Exec(ctx, r.sql, append([]any{mode}, r.args...)...)
			if sqlstate(err) != "0A000" {
				t.Errorf("%s: %s: got %v, want 0A000", mode, r.sql, err)
			}
		}
	}
	allowed := []string{
		"INSERT INTO countries (code, name, u) VALUES ('FR', initcap('france'), md5(lower('FR')))",
		"INSERT INTO countries (code, n) VALUES ('IT', nextval('country_n'))",
		"INSERT INTO countries (code, at) VALUES ('ES', '2024-05-01 10:00:00+00')",
		"UPDATE countries SET name = upper(coalesce(name, code)), weight = round(1.25::numeric, 1)",
	}
	for _, sql := range allowed {
		mustExec(t, c, sql)
	}
	if rows := referenceRows(t); len(rows) != 4 {
		t.Fatalf("countries holds %d rows, want 4: %v", len(rows), rows)
	}
}

// referenceRows reads countries on every cluster directly, fails the test
// if the copies differ, and returns the first copy's rows.
func referenceRows(t *testing.T) []string {
	t.Helper()
	var first []string
	for i, cl := range env.Clusters {
		bc := connect(t, cl.DSN("shop"))
		rows, err := bc.Query(context.Background(), "SELECT countries::text FROM countries ORDER BY code")
		if err != nil {
			t.Fatal(err)
		}
		got, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = got
			continue
		}
		if strings.Join(got, "\n") != strings.Join(first, "\n") {
			t.Fatalf("copies of countries differ:\n%s:\n%s\n%s:\n%s", env.Clusters[0].Name, strings.Join(first, "\n"), cl.Name, strings.Join(got, "\n"))
		}
	}
	return first
}
