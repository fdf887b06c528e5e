package proxy

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// COPY FROM STDIN that leaves out a column bound to a sequence of main
// fills it as INSERT does, one drawn value per row, in text, csv and
// binary: sq_orders.id (not the key) and sq_customers.id (the shard key:
// each row goes to the shard of its drawn id). Before, the first was
// 23502 on the shards and the second refused.
func TestCopyFillsSequence(t *testing.T) {
	p := startProxy(t, seqTopology(), nil)
	c := setupSeq(t, p)
	ctx := context.Background()
	copyText := func(sql, data string) {
		t.Helper()
		res, err := c.PgConn().CopyFrom(ctx, strings.NewReader(data), sql)
		if err != nil || res.RowsAffected() != 3 {
			t.Fatalf("%s: %v %v", sql, res, err)
		}
	}
	copyText("COPY sq_orders (customer_id, total) FROM STDIN", "1\t1.50\r\n2\t2.50\r\n3\t3.50")
	copyText("COPY sq_orders (total, customer_id) FROM STDIN (FORMAT csv)", "4.50,4\n\"5.50\",5\n6.50,6\n")
	n, err := c.CopyFrom(ctx, pgx.Identifier{"sq_orders"}, []string{"customer_id", "total"},
		pgx.CopyFromRows([][]any{{int64(7), "7.50"}, {int64(8), "8.50"}, {int64(9), "9.50"}})) // binary
	if err != nil || n != 3 {
		t.Fatalf("binary COPY: %d %v", n, err)
	}
	rows := backendRows(t, "sq_orders", "customer_id")
	ids := map[int64]bool{}
	for cl, rs := range rows {
		for _, r := range rs {
			if clusterOf(t, p, r[0]) != cl {
				t.Errorf("customer %d on %s", r[0], cl)
			}
			if r[1] <= 0 || ids[r[1]] {
				t.Errorf("id %d drawn twice or not at all", r[1])
			}
			ids[r[1]] = true
		}
	}
	if len(ids) != 9 {
		t.Fatalf("%d distinct ids, want 9: %v", len(ids), rows)
	}
	var total string
	if err := c.QueryRow(ctx, "SELECT sum(total)::text FROM sq_orders").Scan(&total); err != nil || total != "49.50" {
		t.Fatalf("sum(total) = %s, %v", total, err)
	}
	// The key itself drawn: each row on its id's shard.
	copyText("COPY sq_customers (name) FROM STDIN", "ann\nbob\ncid\n")
	n, err = c.CopyFrom(ctx, pgx.Identifier{"sq_customers"}, []string{"name"}, pgx.CopyFromRows([][]any{{"dan"}, {"eve"}, {"fay"}}))
	if err != nil || n != 3 {
		t.Fatalf("binary COPY of the key: %d %v", n, err)
	}
	seen := 0
	for cl, rs := range backendRows(t, "sq_customers", "id") {
		for _, r := range rs {
			seen++
			if want := clusterOf(t, p, r[1]); want != cl {
				t.Errorf("customer %d on %s, its shard is on %s", r[1], cl, want)
			}
		}
	}
	if seen != 6 {
		t.Fatalf("%d customers, want 6", seen)
	}
	var names string
	if err := c.QueryRow(ctx, "SELECT string_agg(name, ',' ORDER BY id) FROM sq_customers").Scan(&names); err != nil || names != "ann,bob,cid,dan,eve,fay" {
		t.Fatalf("names in id order: %s %v", names, err)
	}
	// EXPLAIN (ROUTE) shows the fill.
	lines, err := simpleRows(t, c, "EXPLAIN (ROUTE) COPY sq_orders (customer_id) FROM STDIN")
	if err != nil || !strings.Contains(fmt.Sprint(lines), "drawn from sq_orders_id_seq") {
		t.Fatalf("EXPLAIN: %v %v", lines, err)
	}
}
