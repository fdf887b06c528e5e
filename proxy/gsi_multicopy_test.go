package proxy

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/shardgate/shardgate/gsi"
	"github.com/shardgate/shardgate/internal/proxytest"
)

// TestGSIMultiColumnCopy: COPY FROM (text, csv, binary) into the owner of
// indexes over two columns writes the entries of every row, their
// composite the text Postgres's json_build_array makes (an INSERT of the
// same values is the unique index's 23505, a read through the index finds
// the copied row, verify finds nothing to report); rows with a NULL
// column have no entry; a duplicate within the COPY or with a row there
// fails the whole COPY with 23505; a COPY without one of the columns is
// refused (0A000).
func TestGSIMultiColumnCopy(t *testing.T) {
	p := startProxy(t, gmTopology(), nil)
	c := connect(t, p.dsn())
	ctx := context.Background()
	mustExec(t, c, "DROP TABLE IF EXISTS gm_items", simple)
	mustExec(t, c, "CREATE TABLE gm_items "+gmColumns, simple)
	other := keyOn(t, p, 1, false)
	copyIn := func(sql, data string) (int64, error) {
		tag, err := c.PgConn().CopyFrom(ctx, strings.NewReader(data), sql)
		return tag.RowsAffected(), err
	}
	var text strings.Builder
	for i := 1; i <= 60; i++ {
		size := fmt.Sprint(i % 9)
		if i%10 == 0 {
			size = `\N`
		}
		fmt.Fprintf(&text, "%d\t%d\tsku%d\t%s\tc%d\n", i%11, i, i%13, size, i%3)
	}
	// Quotes, a backslash, a tab and a non-ASCII letter; a size written 07.
	fmt.Fprintf(&text, "1\t100\ta\"b\\\\c\\td é\t07\tred\n")
	if n, err := copyIn("COPY gm_items (customer_id, id, sku, size, color) FROM STDIN", text.String()); err != nil || n != 61 {
		t.Fatalf("text COPY: %d %v", n, err)
	}
	if n, err := copyIn("COPY gm_items (color, sku, size, id, customer_id) FROM STDIN (FORMAT csv)", "blue,\"x,y\",3,200,5\n,\"x,y\",4,201,6\n"); err != nil || n != 2 {
		t.Fatalf("csv COPY: %d %v", n, err)
	}
	var rows [][]any
	for i := 300; i < 320; i++ {
		rows = append(rows, []any{int64(i % 4), int64(i), fmt.Sprintf("bin%d", i%5), int32(i), "green"})
	}
	if n, err := c.CopyFrom(ctx, pgx.Identifier{"gm_items"}, []string{"customer_id", "id", "sku", "size", "color"}, pgx.CopyFromRows(rows)); err != nil || n != 20 {
		t.Fatalf("binary COPY: %d %v", n, err)
	}
	if n := gmExact(t, p); n != 77 {
		t.Fatalf("%d unique entries, want 77 (60 rows, 6 with a NULL size, + 1 + 2 + 20)", n)
	}
	var id int64
	if err := c.QueryRow(ctx, "SELECT id FROM gm_items WHERE sku = $1 AND size = 7", "a\"b\\c\td é").Scan(&id); err != nil || id != 100 {
		t.Fatalf("read of the copied row through the index: %d %v", id, err)
	}
	_, err := c.Exec(ctx, fmt.Sprintf("INSERT INTO gm_items (customer_id, id, sku, size) VALUES (%d, 999, $1, 7)", other), "a\"b\\c\td é")
	wantPgError(t, err, "23505", "gm_items_by_sku_size")
	for _, name := range []string{"gm_items_by_sku_size", "gm_items_by_sku_color"} {
		b, err := gsi.Open(ctx, proxytest.Parse(t, gmTopology()), name, false, gsi.Options{})
		if err != nil {
			t.Fatal(err)
		}
		res, err := b.Verify(ctx, false)
		b.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if !r.Clean() {
				t.Errorf("verify %s on %s: %v", name, r.Cluster, r.Diffs)
			}
		}
	}
	// Duplicates: with a row there (another cluster), within the COPY.
	for _, data := range []string{
		fmt.Sprintf("%d\t500\tsku1\t1\tred\n", other),
		"1\t501\tnew\t1\t\\N\n2\t502\tnew\t01\t\\N\n",
	} {
		_, err := copyIn("COPY gm_items (customer_id, id, sku, size, color) FROM STDIN", data)
		wantPgError(t, err, "23505", "gm_items_by_sku_size")
	}
	_, err = copyIn("COPY gm_items (customer_id, id, sku, color) FROM STDIN", "1\t600\tz\tred\n")
	wantPgError(t, err, "0A000", "without column size")
	if n := gmExact(t, p); n != 77 {
		t.Fatalf("after the failed COPYs: %d unique entries, want 77", n)
	}
}
