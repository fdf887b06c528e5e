package proxy

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestGSICopy: COPY FROM in text, csv and binary into a table with
// indexes writes every row's entries in the same transaction; a unique
// index's duplicate (with a row already there, or within the COPY, on
// another cluster) fails the whole COPY with 23505 named after the index.
func TestGSICopy(t *testing.T) {
	p := startProxy(t, gsiTopology(), nil)
	c := setupGSI(t, p)
	ctx := context.Background()
	other := keyOn(t, p, 1, false)
	same := keyOn(t, p, other, true)
	copyIn := func(sql, data string) (int64, error) {
		tag, err := c.PgConn().CopyFrom(ctx, strings.NewReader(data), sql)
		return tag.RowsAffected(), err
	}
	var text strings.Builder
	for i := 1; i <= 300; i++ {
		note := fmt.Sprintf("n%d", i%7)
		if i%10 == 0 {
			note = `\N`
		}
		fmt.Fprintf(&text, "%d\t%d\t%s\t%d\n", i, i%13, note, i)
	}
	if n, err := copyIn("COPY gs_orders (id, customer_id, note, total) FROM STDIN", text.String()); err != nil || n != 300 {
		t.Fatalf("text COPY: %d %v", n, err)
	}
	// csv, columns in another order, a quoted value with a comma.
	if n, err := copyIn("COPY gs_orders (note, customer_id, id) FROM STDIN (FORMAT csv)", "\"a,b\",5,301\n,6,302\nn1,7,0303\n"); err != nil || n != 3 {
		t.Fatalf("csv COPY: %d %v", n, err)
	}
	// binary (pgx's CopyFrom).
	var rows [][]any
	for i := 400; i < 450; i++ {
		rows = append(rows, []any{int64(i), int64(i % 5), fmt.Sprintf("b%d", i%3)})
	}
	if n, err := c.CopyFrom(ctx, pgx.Identifier{"gs_orders"}, []string{"id", "customer_id", "note"}, pgx.CopyFromRows(rows)); err != nil || n != 50 {
		t.Fatalf("binary COPY: %d %v", n, err)
	}
	if n := checkLookups(t, p); n != 353 {
		t.Fatalf("%d owner rows, want 353", n)
	}
	// The entries serve reads: 303 was copied as 0303.
	var cust int64
	if err := c.QueryRow(ctx, "SELECT customer_id FROM gs_orders WHERE id = 303", simple).Scan(&cust); err != nil || cust != 7 {
		t.Fatalf("id 303: %d %v", cust, err)
	}

	for _, data := range []string{
		fmt.Sprintf("1000\t%d\t\\N\n500\t%d\tx\n", 1, other),   // new values
		fmt.Sprintf("1001\t%d\tx\n5\t%d\tx\n", other, other),   // 5 exists (customer 5)
		fmt.Sprintf("1002\t%d\tx\n1002\t%d\tx\n", 1, other),    // twice within the COPY
		fmt.Sprintf("1003\t%d\tx\n1003\t%d\tx\n", same, other), // twice, two customers of one cluster
	} {
		_, err := copyIn("COPY gs_orders (id, customer_id, note) FROM STDIN", data)
		if strings.HasPrefix(data, "1000") {
			if err != nil {
				t.Fatalf("COPY %q: %v", data, err)
			}
			continue
		}
		pe := wantPgError(t, err, "23505", `duplicate key value violates unique constraint "gs_orders_by_id"`)
		if pe.ConstraintName != "gs_orders_by_id" || !strings.HasPrefix(pe.Detail, "Key (id)=(") {
			t.Errorf("COPY %q: %+v", data, pe)
		}
	}
	if n := checkLookups(t, p); n != 355 {
		t.Fatalf("%d owner rows, want 355 (the failed COPYs load nothing)", n)
	}
	// Without an indexed column the entries are unknown: refused (but
	// for id, which the sequence fills: TestGSICopyFilledColumn).
	_, err := copyIn("COPY gs_orders (id, customer_id) FROM STDIN", "1\t1\n")
	wantPgError(t, err, "0A000", "gs_orders_by_note")
	// In a transaction, rolled back with it.
	mustExec(t, c, "BEGIN", simple)
	if _, err := copyIn("COPY gs_orders FROM STDIN", "2000\t1\ty\t1\n2001\t2\t\\N\t\\N\n"); err != nil {
		t.Fatal(err)
	}
	mustExec(t, c, "ROLLBACK", simple)
	if n := checkLookups(t, p); n != 355 {
		t.Fatalf("%d owner rows, want 355", n)
	}
}

// TestGSITruncate: TRUNCATE of the owner empties its lookup tables in the
// same transaction (a rollback keeps both), through both protocols.
func TestGSITruncate(t *testing.T) {
	p := startProxy(t, gsiTopology(), nil)
	c := setupGSI(t, p)
	ctx := context.Background()
	fill := func() {
		t.Helper()
		mustExec(t, c, "INSERT INTO gs_orders (id, customer_id, note) VALUES (1, 1, 'a'), (2, 2, 'b'), (3, 3, NULL), (4, 4, 'a')", simple)
	}
	fill()
	mustExec(t, c, "BEGIN", simple)
	mustExec(t, c, "TRUNCATE gs_orders", simple)
	mustExec(t, c, "ROLLBACK", simple)
	if n := checkLookups(t, p); n != 4 {
		t.Fatalf("%d owner rows after the rolled back TRUNCATE, want 4", n)
	}
	for _, mode := range []pgx.QueryExecMode{simple, pgx.QueryExecModeExec} {
		if _, err := c.Exec(ctx, "TRUNCATE gs_orders", mode); err != nil {
			t.Fatalf("%v: %v", mode, err)
		}
		if n := checkLookups(t, p); n != 0 {
			t.Fatalf("%d owner rows, want 0", n)
		}
		// The values are free again.
		fill()
	}
}
