package proxy

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestHavingIntervalLiteralAtParse checks a cross-shard HAVING literal
// whose meaning depends on IntervalStyle in a statement prepared under
// sql_standard and executed under postgres: Postgres reads the literal
// once, when it parses the statement ('-1 days 02:00:00' is then -1 day
// -2 hours), the proxy's merge when it evaluates HAVING. It must answer
// as Postgres does or refuse (0A000), never with the other reading.
func TestHavingIntervalLiteralAtParse(t *testing.T) {
	ctx := context.Background()
	const q = "SELECT name, max(session) FROM customers GROUP BY name HAVING max(session) > '-1 days 02:00:00'"
	run := func(c *pgx.Conn) (int, error) {
		for _, set := range []string{"SET IntervalStyle = sql_standard", "PREPARE having_iv AS " + q} {
			if _, err := c.Exec(ctx, set, pgx.QueryExecModeSimpleProtocol); err != nil {
				return 0, err
			}
		}
		if _, err := c.Prepare(ctx, "having_iv_ext", q); err != nil {
			return 0, err
		}
		if _, err := c.Exec(ctx, "SET IntervalStyle = postgres", pgx.QueryExecModeSimpleProtocol); err != nil {
			return 0, err
		}
		n := 0
		for _, exec := range [][]any{{"EXECUTE having_iv", pgx.QueryExecModeSimpleProtocol}, {"having_iv_ext"}} {
			rows, err := c.Query(ctx, exec[0].(string), exec[1:]...)
			if err != nil {
				return 0, err
			}
			got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (string, error) { var s string; var d any; return s, r.Scan(&s, &d) })
			if err != nil {
				return 0, err
			}
			n += len(got)
		}
		return n, nil
	}
	_, c := startInter(t, "")
	mustExec(t, c, "ALTER TABLE customers ADD COLUMN session interval")
	mustExec(t, c, "UPDATE customers SET session = '-1 days' WHERE id IN (1, 2)")
	mustExec(t, c, "DELETE FROM customers WHERE id > 2")
	direct, err := env.Clusters[1].Conn(ctx, "shop")
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close(ctx)
	for _, s := range []string{"CREATE TEMP TABLE customers (name text, session interval)", "INSERT INTO customers VALUES ('n1', '-1 days'), ('n2', '-1 days')"} {
		if _, err := direct.Exec(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	want, err := run(direct)
	if err != nil || want != 4 {
		t.Fatalf("Postgres: %d rows %v, want 4 (the literal read under sql_standard)", want, err)
	}
	got, err := run(c)
	if sqlstate(err) != "0A000" && (err != nil || got != want) {
		t.Fatalf("through the proxy: %d rows %v, want %d as Postgres or 0A000", got, err, want)
	}
}
