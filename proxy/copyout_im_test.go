package proxy

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
)

// COPY (SELECT ... ORDER BY / aggregate / join across groups) TO STDOUT
// over several shards runs on the coordinator over intermediate results:
// the whole answer, in the query's order, in text, csv and binary. Before,
// it was refused (0A000).
func TestCopyOutOfMergedQuery(t *testing.T) {
	p := startProxy(t, shopTopology(""), nil)
	c := setupShop(t, p)
	fillOrders(t, p, 500)
	ctx := context.Background()
	copyOut := func(sql string) string {
		t.Helper()
		var buf bytes.Buffer
		tag, err := c.PgConn().CopyTo(ctx, &buf, sql)
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		if !strings.HasPrefix(tag.String(), "COPY ") {
			t.Fatalf("%s: tag %q", sql, tag)
		}
		return buf.String()
	}
	var want strings.Builder
	for i := 500; i >= 1; i-- {
		fmt.Fprintf(&want, "%d\t%d\n", i, i%37+1)
	}
	if got := copyOut("COPY (SELECT id, customer_id FROM orders ORDER BY id DESC) TO STDOUT"); got != want.String() {
		t.Fatalf("ordered text COPY: %d bytes, want %d", len(got), want.Len())
	}
	got := copyOut("COPY (SELECT customer_id, count(*) FROM orders GROUP BY customer_id ORDER BY 1) TO STDOUT (FORMAT csv, HEADER)")
	if !strings.HasPrefix(got, "customer_id,count\n1,13\n2,14\n") || strings.Count(got, "\n") != 38 {
		t.Fatalf("aggregate csv COPY: %q", got)
	}
	bin := copyOut("COPY (SELECT id FROM orders ORDER BY id LIMIT 2) TO STDOUT (FORMAT binary)")
	wantBin := "PGCOPY\n\xff\r\n\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
		"\x00\x01\x00\x00\x00\x08\x00\x00\x00\x00\x00\x00\x00\x01" + "\x00\x01\x00\x00\x00\x08\x00\x00\x00\x00\x00\x00\x00\x02" + "\xff\xff"
	if bin != wantBin {
		t.Fatalf("binary COPY: %q", bin)
	}
	mustExec(t, c, "INSERT INTO products (sku, name) VALUES ('a', 'x'), ('b', 'y')")
	if got := copyOut("COPY (SELECT p.name, count(*) FROM orders o JOIN products p ON p.sku = 'a' AND o.id <= 3 GROUP BY p.name) TO STDOUT"); got != "x\t3\n" {
		t.Fatalf("join across groups: %q", got)
	}
	// The session carries on; in a transaction too.
	mustExec(t, c, "BEGIN")
	if got := copyOut("COPY (SELECT count(*) FROM orders) TO STDOUT"); got != "500\n" {
		t.Fatalf("count in a transaction: %q", got)
	}
	mustExec(t, c, "COMMIT")
}
