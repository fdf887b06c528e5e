package proxy

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// GROUP BY an output column's alias is merged in the stream
// (planner/merge_alias.go): the shards resolve the name — the input column
// when the FROM list has one, the output column otherwise — and the merge
// groups accordingly. Inside a cursor, where a merge has no fallback to
// intermediate results, both cases answer as one Postgres would. Before,
// such a cursor ran on the coordinator over intermediate results.
func TestGroupByAliasMerged(t *testing.T) {
	p := startProxy(t, shopTopology(""), nil)
	c := setupShop(t, p)
	fillOrders(t, p, 2500) // total i for order i
	ctx := context.Background()
	mustExec(t, c, "BEGIN")
	// The alias is no input column: three groups of the output column.
	mustExec(t, c, "DECLARE a CURSOR FOR SELECT total % 3 AS r, count(*), sum(total) FROM orders GROUP BY r ORDER BY r")
	res, err := c.PgConn().Exec(ctx, "FETCH ALL FROM a").ReadAll()
	if err != nil {
		t.Fatalf("FETCH ALL FROM a: %v", err)
	}
	var got []string
	for _, r := range res[0].Rows {
		got = append(got, fmt.Sprintf("%s:%s:%s", r[0], r[1], r[2]))
	}
	// i % 3 for i in 1..2500: 833 zeros, 834 ones, 833 twos.
	want := fmt.Sprint([]string{"0.00:833:1042083.00", "1.00:834:1042917.00", "2.00:833:1041250.00"})
	if fmt.Sprint(got) != want {
		t.Fatalf("GROUP BY the alias r: %v, want %v", got, want)
	}
	// The alias names an input column: Postgres groups by the column
	// (2,500 groups), not by the output expression.
	mustExec(t, c, "DECLARE b CURSOR FOR SELECT total % 3 AS total, count(*) FROM orders GROUP BY total")
	res, err = c.PgConn().Exec(ctx, "FETCH ALL FROM b").ReadAll()
	if err != nil || len(res[0].Rows) != 2500 {
		t.Fatalf("GROUP BY the input column total: %v, want 2500 groups", err)
	}
	for _, r := range res[0].Rows {
		if string(r[1]) != "1" {
			t.Fatalf("GROUP BY the input column total: group %s counts %s", r[0], r[1])
		}
	}
	mustExec(t, c, "ROLLBACK")

	// EXPLAIN (ROUTE) shows the merge, not intermediate results.
	rows, err := simpleRows(t, c, "EXPLAIN (ROUTE) SELECT total % 3 AS r, count(*) FROM orders GROUP BY r")
	if err != nil || len(rows) == 0 || !strings.HasPrefix(rows[0], "Aggregate group=") {
		t.Fatalf("EXPLAIN (ROUTE): %v %v", rows, err)
	}
}
