package proxy

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// MERGE into a sharded table from a VALUES source joined on the key in
// ON: each source row goes to its key's shard (the rows land on the
// cluster their key maps to, and only there), the statement answers and
// leaves the rows plain Postgres leaves, in the simple protocol and in
// the extended one with parameter keys; a source row matching two target
// rows fails the whole statement with 21000 on every cluster, and a NULL
// parameter key is refused with 0A000.
func TestMergeValuesRoutedPerRow(t *testing.T) {
	ctx := context.Background()
	p := startProxy(t, shopTopology(""), nil)
	c := setupShop(t, p)
	plain := connect(t, env.Clusters[0].DSN("shop"))
	mustExec(t, plain, "CREATE TEMP TABLE orders (id bigint, customer_id bigint NOT NULL, total numeric(12,2), PRIMARY KEY (customer_id, id))")
	both := func(sql string, mode pgx.QueryExecMode, args ...any) {
		t.Helper()
		want, err := plain.Exec(ctx, sql, append([]any{pgx.QueryExecModeExec}, args...)...)
		if err != nil {
			t.Fatalf("plain Postgres: %s: %v", sql, err)
		}
		got, err := c.Exec(ctx, sql, append([]any{mode}, args...)...)
		if err != nil {
			t.Fatalf("%s (%v): %v", sql, mode, err)
		}
		if got.String() != want.String() {
			t.Fatalf("%s (%v): tag %q, plain Postgres %q", sql, mode, got, want)
		}
	}
	rowsOf := func(conn *pgx.Conn) []string {
		t.Helper()
		rows, err := conn.Query(ctx, "SELECT customer_id, id, total::text FROM orders", pgx.QueryExecModeSimpleProtocol)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for rows.Next() {
			var cid, id int64
			var total *string
			if err := rows.Scan(&cid, &id, &total); err != nil {
				t.Fatal(err)
			}
			tot := "NULL"
			if total != nil {
				tot = *total
			}
			out = append(out, fmt.Sprintf("%d/%d=%s", cid, id, tot))
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		slices.Sort(out)
		return out
	}
	modes := []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement, pgx.QueryExecModeExec}
	for m, mode := range modes {
		base := int64(100 * (m + 1))
		var vals, again []string
		for i := int64(1); i <= 12; i++ {
			vals = append(vals, fmt.Sprintf("(%d::bigint, %d::bigint, %d.5)", base+i, i, i))
			if i%2 == 0 {
				again = append(again, fmt.Sprintf("(%d::bigint, %d::bigint, %d)", base+i, i, i%4))
			} else {
				again = append(again, fmt.Sprintf("(%d::bigint, %d::bigint, NULL)", base+i+50, i))
			}
		}
		both("MERGE INTO orders o USING (VALUES "+strings.Join(vals, ", ")+") v(cid, id, total) ON o.customer_id = v.cid AND o.id = v.id "+
			"WHEN MATCHED THEN UPDATE SET total = v.total WHEN NOT MATCHED THEN INSERT (id, customer_id, total) VALUES (v.id, v.cid, v.total)", mode)
		both("MERGE INTO orders o USING (VALUES "+strings.Join(again, ", ")+") v(cid, id, total) ON v.cid = o.customer_id AND o.id = v.id "+
			"WHEN MATCHED AND v.total = 0 THEN DELETE WHEN MATCHED THEN UPDATE SET total = o.total + v.total "+
			"WHEN NOT MATCHED THEN INSERT (id, customer_id, total) VALUES (v.id, v.cid, v.total)", mode)
		// An INSERT without a column list takes the catalog's order.
		both(fmt.Sprintf("MERGE INTO orders o USING (VALUES (%d::bigint, 300::bigint), (%d, 301)) v(cid, id) ON o.customer_id = v.cid AND o.id = v.id "+
			"WHEN NOT MATCHED THEN INSERT VALUES (v.id, v.cid, 3)", base+1, base+2), mode)
		if mode != pgx.QueryExecModeSimpleProtocol {
			both("MERGE INTO orders o USING (VALUES ($1::bigint, 1::bigint), ($2, 1), ($3, 2)) v(cid, id) ON o.customer_id = v.cid AND o.id = v.id "+
				"WHEN MATCHED THEN UPDATE SET total = 99 WHEN NOT MATCHED THEN INSERT (id, customer_id, total) VALUES (v.id, v.cid, 7)", mode,
				base+1, base+2, base+77)
		}
		if got, want := rowsOf(c), rowsOf(plain); !slices.Equal(got, want) {
			t.Fatalf("%v: rows through the proxy\n%v\nplain Postgres\n%v", mode, got, want)
		}
		_, err := c.Exec(ctx, "MERGE INTO orders o USING (VALUES ($1::bigint, 1::bigint), ($2, 1), ($1, 1)) v(cid, id) ON o.customer_id = v.cid AND o.id = v.id WHEN MATCHED THEN UPDATE SET total = 0", mode, base+1, base+2)
		if sqlstate(err) != "21000" {
			t.Fatalf("%v: a source row matching twice: %v, want 21000", mode, err)
		}
		if mode != pgx.QueryExecModeSimpleProtocol {
			_, err = c.Exec(ctx, "MERGE INTO orders o USING (VALUES ($1::bigint, 1::bigint), ($2, 1)) v(cid, id) ON o.customer_id = v.cid AND o.id = v.id WHEN NOT MATCHED THEN INSERT (id, customer_id) VALUES (v.id, v.cid)", mode, base+3, nil)
			if sqlstate(err) != "0A000" {
				t.Fatalf("%v: a NULL key parameter: %v, want 0A000", mode, err)
			}
		}
		if got, want := rowsOf(c), rowsOf(plain); !slices.Equal(got, want) {
			t.Fatalf("%v: after the failed statements, rows through the proxy\n%v\nplain Postgres\n%v", mode, got, want)
		}
	}
	// Every row is on its key's cluster, and only there.
	var keys [][2]int64
	for _, r := range rowsOf(plain) {
		var k [2]int64
		fmt.Sscanf(r, "%d/%d", &k[0], &k[1])
		keys = append(keys, k)
	}
	ordersAtHome(t, p, keys)
}
