package proxy

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestGSICopyFilledColumn: COPY into an index owner without the indexed
// column that a sequence fills (docs/routing.md's own example, lib/pq's
// pq.CopyIn("orders", "customer_id", "total", ...)) draws the column's
// values and writes the entries of the drawn values, in text, csv and
// binary; reads through the index find every copied row.
func TestGSICopyFilledColumn(t *testing.T) {
	p := startProxy(t, gsiTopology(), nil)
	c := setupGSI(t, p)
	ctx := context.Background()
	var text strings.Builder
	for i := 1; i <= 200; i++ {
		fmt.Fprintf(&text, "%d\tn%d\t%d\n", i%11, i%5, i)
	}
	if tag, err := c.PgConn().CopyFrom(ctx, strings.NewReader(text.String()), "COPY gs_orders (customer_id, note, total) FROM STDIN"); err != nil || tag.RowsAffected() != 200 {
		t.Fatalf("text COPY: %v %v", tag, err)
	}
	if tag, err := c.PgConn().CopyFrom(ctx, strings.NewReader("x,3,7\n,4,8\n"), "COPY gs_orders (note, customer_id, total) FROM STDIN (FORMAT csv)"); err != nil || tag.RowsAffected() != 2 {
		t.Fatalf("csv COPY: %v %v", tag, err)
	}
	var rows [][]any
	for i := 0; i < 30; i++ {
		rows = append(rows, []any{int64(i % 4), fmt.Sprintf("b%d", i%3)})
	}
	if n, err := c.CopyFrom(ctx, pgx.Identifier{"gs_orders"}, []string{"customer_id", "note"}, pgx.CopyFromRows(rows)); err != nil || n != 30 {
		t.Fatalf("binary COPY: %d %v", n, err)
	}
	if n := checkLookups(t, p); n != 232 {
		t.Fatalf("%d owner rows, want 232", n)
	}
	// Every drawn id is found through gs_orders_by_id, on its own shard.
	r, err := c.Query(ctx, "SELECT id, customer_id FROM gs_orders ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	ids, custs, err := collectPairs(r)
	if err != nil || len(ids) != 232 {
		t.Fatalf("%d rows, %v", len(ids), err)
	}
	for i, id := range ids {
		var cust int64
		if err := c.QueryRow(ctx, "SELECT customer_id FROM gs_orders WHERE id = $1", id).Scan(&cust); err != nil || cust != custs[i] {
			t.Fatalf("id %d through the index: %d %v, want %d", id, cust, err, custs[i])
		}
	}
	// In a transaction rolled back: no row and no entry stays.
	tx, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Conn().PgConn().CopyFrom(ctx, strings.NewReader("1\tr\t1\n2\tr\t2\n"), "COPY gs_orders (customer_id, note, total) FROM STDIN"); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if n := checkLookups(t, p); n != 232 {
		t.Fatalf("after the rollback: %d owner rows, want 232", n)
	}
}

// collectPairs reads rows of two bigints.
func collectPairs(r pgx.Rows) (a, b []int64, err error) {
	defer r.Close()
	for r.Next() {
		var x, y int64
		if err := r.Scan(&x, &y); err != nil {
			return nil, nil, err
		}
		a, b = append(a, x), append(b, y)
	}
	return a, b, r.Err()
}
