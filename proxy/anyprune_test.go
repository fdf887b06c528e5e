package proxy

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// anySku is product i's SKU: quotes, a comma, braces, a backslash and
// spaces, which a cut array must carry through exactly.
func anySku(i int) string { return fmt.Sprintf(`Sku "%d", it's {X}\ y`, i) }

// key = ANY($1) with pgx's []int64 and []string of 10,000 values (binary
// and text parameters, and the literal the simple protocol sends): each
// cluster gets only the elements its shards hold (its log shows the
// parameter it received), and SELECT, aggregate, UPDATE and DELETE answer
// as plain Postgres does over the same rows.
func TestAnyArrayParameterCutPerCluster(t *testing.T) {
	ctx := context.Background()
	p := startProxy(t, shopTopology(""), nil)
	c := setupShop(t, p)
	plain := connect(t, env.Clusters[0].DSN("shop"))
	for _, s := range []string{
		"CREATE TEMP TABLE customers (id bigint PRIMARY KEY, name text)",
		"CREATE TEMP TABLE products (sku text, name text)",
	} {
		mustExec(t, plain, s)
	}
	const n = 10000
	for from := 0; from < n; from += 1000 {
		var cs, ps []string
		for i := from; i < from+1000; i++ {
			cs = append(cs, fmt.Sprintf("(%d, 'c%d')", i+1, i+1))
			ps = append(ps, fmt.Sprintf("('%s', 'p%d')", strings.ReplaceAll(anySku(i), "'", "''"), i))
		}
		for _, conn := range []*pgx.Conn{c, plain} {
			mustExec(t, conn, "INSERT INTO customers VALUES "+strings.Join(cs, ", "))
			mustExec(t, conn, "INSERT INTO products VALUES "+strings.Join(ps, ", "))
		}
	}
	ids := make([]int64, n) // half of them exist
	skus := make([]string, n)
	for i := range ids {
		ids[i] = int64(2*i + 1)
		skus[i] = strings.ToLower(anySku(2 * i))
	}
	// The same as the text form in a string, every element unquoted
	// with backslash escapes: pgx sends a string as text.
	var esc strings.Builder
	esc.WriteByte('{')
	for i, sku := range skus {
		if i > 0 {
			esc.WriteByte(',')
		}
		for _, r := range sku {
			if strings.ContainsRune(`"\{}, `, r) {
				esc.WriteByte('\\')
			}
			esc.WriteRune(r)
		}
	}
	esc.WriteByte('}')
	rowsOf := func(conn *pgx.Conn, sql string, args ...any) []string {
		t.Helper()
		return textRows(t, conn, sql, args...)
	}
	modes := []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeExec, pgx.QueryExecModeSimpleProtocol}
	for _, q := range []struct {
		sql string
		arg any
	}{
		{"SELECT id, name FROM customers WHERE id = ANY($1)", ids},
		{"SELECT id FROM customers WHERE id = ANY($1) ORDER BY id DESC LIMIT 7", ids},
		{"SELECT count(*), sum(id), max(name) FROM customers WHERE id = ANY($1)", ids},
		{"SELECT sku, name FROM products WHERE lower(sku) = ANY($1)", skus},
		{"SELECT count(*) FROM products WHERE lower(sku) = ANY($1::text[])", skus},
		{"SELECT sku FROM products WHERE lower(sku) = ANY($1::text[])", esc.String()},
	} {
		want := rowsOf(plain, q.sql, pgx.QueryExecModeExec, q.arg)
		if len(want) == 0 || want[0] == "0" {
			t.Fatalf("%s: plain Postgres answers %v", q.sql, want)
		}
		for _, mode := range modes {
			if got := rowsOf(c, q.sql, mode, q.arg); !slices.Equal(got, want) {
				t.Errorf("%s (%v): %d rows, plain Postgres %d (first %.80q, want %.80q)", q.sql, mode, len(got), len(want), got, want)
			}
		}
	}
	for i, mode := range modes {
		part := ids[i*n/6 : (i+1)*n/6]
		for _, sql := range []string{
			"UPDATE customers SET name = name || '!' WHERE id = ANY($1)",
			"DELETE FROM customers WHERE id = ANY($1) AND id % 3 = 0",
		} {
			want, err := plain.Exec(ctx, sql, pgx.QueryExecModeExec, part)
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.Exec(ctx, sql, mode, part)
			if err != nil || got.RowsAffected() != want.RowsAffected() || want.RowsAffected() == 0 {
				t.Errorf("%s (%v): %v %v, plain Postgres %v", sql, mode, got, err, want)
			}
		}
	}
	all := "SELECT id, name FROM customers"
	if got, want := rowsOf(c, all), rowsOf(plain, all); !slices.Equal(got, want) {
		t.Errorf("after the writes: %d rows, plain Postgres %d", len(got), len(want))
	}

	// What each backend received: its log of the statement, parameters
	// included.
	mustExec(t, c, "SET log_min_duration_statement = 0")
	offsets := logOffsets(t)
	probe := "SELECT id AS anyprune_probe FROM customers WHERE id = ANY($1)"
	if _, err := c.Exec(ctx, probe, ids); err != nil {
		t.Fatal(err)
	}
	mustExec(t, c, "RESET log_min_duration_statement")
	param := regexp.MustCompile(`anyprune_probe[^\n]*\n[^\n]*parameters: \$1 = '\{([0-9,]*)\}'`)
	total := 0
	for i := range offsets {
		var got []string
		for deadline := time.Now().Add(5 * time.Second); got == nil && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			b, err := os.ReadFile(env.Clusters[i].LogFile)
			if err != nil {
				t.Fatal(err)
			}
			if m := param.FindSubmatch(b[offsets[i]:]); m != nil {
				got = strings.Split(string(m[1]), ",")
			}
		}
		if got == nil {
			t.Fatalf("pg%d logged no parameters of the probe", i)
		}
		for _, e := range got {
			v, err := strconv.ParseInt(e, 10, 64)
			if err != nil || v%2 == 0 || v > 2*n {
				t.Fatalf("pg%d received %q", i, e)
			}
		}
		if len(got) == n {
			t.Errorf("pg%d received all %d elements", i, n)
		}
		t.Logf("pg%d received %d of the %d elements", i, len(got), n)
		total += len(got)
	}
	if total != n {
		t.Errorf("the clusters received %d elements in all, want %d", total, n)
	}
}
