package proxy

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// directExec runs a statement on a cluster's shop database, bypassing the
// proxy.
func directExec(t *testing.T, cluster int, sql string) {
	t.Helper()
	c, err := env.Clusters[cluster].Conn(context.Background(), "shop")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	if _, err := c.Exec(context.Background(), sql); err != nil {
		t.Fatalf("%s on pg%d: %v", sql, cluster, err)
	}
}

// TestIntermediatePullByKey checks that a pull whose conditions name
// shard-key values reads only the clusters of those keys: a stray copy of
// customer 5 on the cluster that does not own it, which a pull of every
// cluster brings in, is not in the answer.
func TestIntermediatePullByKey(t *testing.T) {
	ctx := context.Background()
	_, c := startInter(t, "")
	owner := func(id int) int {
		return 1 - clusterCount(t, 0, fmt.Sprintf("SELECT count(*) FROM customers WHERE id = %d", id))
	}
	home := owner(5)
	other := 6
	for owner(other) == home {
		other++
	}
	directExec(t, 1-home, "INSERT INTO customers (id, name) VALUES (5, 'n5')")
	const join = "SELECT count(*) FROM customers c JOIN products p ON p.name = c.name WHERE "
	cases := []struct {
		where string
		args  []any
		want  int
	}{
		// Not a key condition: every cluster is read, the stray row too.
		{"c.id + 0 = 5", nil, 2},
		{"c.id = 5", nil, 1},
		{"c.id = $1", []any{5}, 1},
		// Each cluster gets only its own keys of the list.
		{fmt.Sprintf("c.id IN (5, %d)", other), nil, 2},
		{"c.id = ANY($1)", []any{[]int64{5}}, 1},
	}
	for _, tc := range cases {
		for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
			var n int
			args := append([]any{mode}, tc.args...)
			if err := c.QueryRow(ctx, join+tc.where, args...).Scan(&n); err != nil || n != tc.want {
				t.Errorf("%s (%v): got %d %v, want %d", tc.where, mode, n, err, tc.want)
			}
		}
	}
	rows, _ := c.Query(ctx, "EXPLAIN (ROUTE) "+join+"c.id = 5", pgx.QueryExecModeSimpleProtocol)
	plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(plan) < 4 || plan[2] != fmt.Sprintf("  Pull customers (group by_customer) into pg_temp._sg_pull_1 from pg%d", home) {
		t.Fatalf("EXPLAIN (ROUTE): %q %v", plan, err)
	}
}

// TestIntermediatePullColumns checks that a pull moves only the columns
// the statement reads: with a wide column no statement reads, the join
// stays under a byte limit that the same rows with every column exceed.
func TestIntermediatePullColumns(t *testing.T) {
	ctx := context.Background()
	p, c := startInter(t, "max_bytes: 20000")
	mustExec(t, c, "ALTER TABLE customers ADD COLUMN bio text")
	mustExec(t, c, "UPDATE customers SET bio = repeat('x', 1000)")
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
		var n int
		if err := c.QueryRow(ctx, interJoin, mode).Scan(&n); err != nil || n != 100 {
			t.Fatalf("join (%v): %d %v", mode, n, err)
		}
		var name string
		err := c.QueryRow(ctx, "SELECT c.name FROM customers c JOIN products p ON p.name = c.name ORDER BY c.name LIMIT 1", mode).Scan(&name)
		if err != nil || name != "n1" {
			t.Fatalf("ordered join (%v): %q %v", mode, name, err)
		}
		for _, q := range []string{
			"SELECT count(*) FROM customers c JOIN products p ON p.name = c.name WHERE length(c.bio) > 0",
			"SELECT count(c.*) FROM customers c JOIN products p ON p.name = c.name",
		} {
			wantLimit(t, fmt.Sprintf("%s (%v)", q, mode), c.QueryRow(ctx, q, mode).Scan(&n), "max_bytes")
		}
		checkCarriesOn(t, p, c, "columns")
	}
}

// A column whose type differs between the clusters of its group (altered
// directly on one) is refused over intermediate results with the 0A000
// the streaming merge gives (merge.SameColumns), in both protocols and
// whichever cluster differs: before, the pull typed the temporary table
// as the first cluster's catalog says and answered the other cluster's
// values as that type.
func TestIntermediatePullTypesDiffer(t *testing.T) {
	ctx := context.Background()
	for _, altered := range []int{1, 0} {
		_, c := startInter(t, "")
		directExec(t, altered, "ALTER TABLE customers ALTER COLUMN name TYPE varchar(40)")
		for _, q := range []string{
			"SELECT name, row_number() OVER (ORDER BY id) FROM customers",
			"SELECT c.name FROM customers c JOIN products p ON p.name = c.name ORDER BY 1 LIMIT 3",
		} {
			_, err := c.Exec(ctx, q)
			if sqlstate(err) != "0A000" || !strings.Contains(err.Error(), "column name is of type") {
				t.Errorf("pg%d altered: %s: %v, want 0A000 column name is of type ...", altered, q, err)
			}
			_, err = c.PgConn().Exec(ctx, q).ReadAll()
			if sqlstate(err) != "0A000" {
				t.Errorf("pg%d altered, simple protocol: %s: %v, want 0A000", altered, q, err)
			}
		}
		// The streaming merge's own answer, which the pulls now match.
		if _, err := c.Exec(ctx, "SELECT id, name FROM customers ORDER BY id"); sqlstate(err) != "0A000" {
			t.Errorf("pg%d altered: the streaming merge: %v", altered, err)
		}
		mustExec(t, c, "SELECT 1") // the session goes on
	}
}

// TestIntermediateFromlessParamsPullByKey checks that a FROM-less SELECT
// whose subqueries, pinned by parameters, land on different clusters
// pulls only the rows of their keys (issue 19): an unqualified column of
// such a subquery can name nothing else, so its key condition is pushed
// into the pull. 100 customers: each pull used to copy all 100 rows (200
// in all, over max_rows: 2); it copies one now.
func TestIntermediateFromlessParamsPullByKey(t *testing.T) {
	ctx := context.Background()
	p, c := startInter(t, "max_rows: 2")
	owner := func(id int) int {
		return 1 - clusterCount(t, 0, fmt.Sprintf("SELECT count(*) FROM customers WHERE id = %d", id))
	}
	other := 6
	for owner(other) == owner(5) {
		other++
	}
	cases := []struct {
		sql  string
		args []any
		want string
	}{
		{"SELECT EXISTS (SELECT 1 FROM customers WHERE id = $1) AND EXISTS (SELECT 1 FROM customers WHERE id = $2)", []any{5, other}, "true"},
		{"SELECT EXISTS (SELECT 1 FROM customers WHERE id = $1) AND EXISTS (SELECT 1 FROM customers WHERE id = $2)", []any{5, 1000}, "false"},
		{"SELECT (SELECT name FROM customers WHERE id = $1) || (SELECT name FROM customers WHERE id = $2)", []any{5, other}, fmt.Sprintf("n5n%d", other)},
		{"SELECT 1 WHERE EXISTS (SELECT 1 FROM customers WHERE id = $1) AND EXISTS (SELECT 1 FROM customers WHERE id = $2)", []any{5, other}, "1"},
	}
	for _, tc := range cases {
		var got any
		if err := c.QueryRow(ctx, tc.sql, tc.args...).Scan(&got); err != nil || fmt.Sprint(got) != tc.want {
			t.Errorf("%s %v: got %v %v, want %s", tc.sql, tc.args, got, err, tc.want)
		}
	}
	// Where Postgres would name an outer column the pull cannot take the
	// condition: a FROM above the subquery keeps the whole table's pull.
	var n int
	err := c.QueryRow(ctx, "SELECT count(*) FROM products WHERE EXISTS (SELECT 1 FROM customers WHERE id = $1) AND EXISTS (SELECT 1 FROM customers WHERE id = $2)", 5, other).Scan(&n)
	wantLimit(t, "a subquery under FROM", err, "max_rows")
	checkCarriesOn(t, p, c, "fromless params")
}
