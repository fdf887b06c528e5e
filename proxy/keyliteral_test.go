package proxy

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// Key literals of another type than the key compare as Postgres compares
// them: bigint = 7.0 is customer 7 (the previous main answered 22P02),
// bigint = 7.5 matches nothing, a float8 or numeric parameter likewise, and
// an INSERT of 7.5 into the bigint key lands where 8 lives (Postgres rounds).
func TestKeyLiteralsOfOtherTypes(t *testing.T) {
	p := startProxy(t, shopTopology(""), nil)
	c := setupShop(t, p)
	ctx := context.Background()
	for i := 1; i <= 3; i++ {
		mustExec(t, c, "INSERT INTO orders (id, customer_id, total) VALUES ($1, 7, 1)", i)
	}
	for i := 1; i <= 2; i++ {
		mustExec(t, c, "INSERT INTO orders (id, customer_id, total) VALUES ($1, 8, 1)", i)
	}
	countOf := func(sql string, mode pgx.QueryExecMode, args ...any) int {
		t.Helper()
		var n int
		if err := c.QueryRow(ctx, sql, append([]any{mode}, args...)...).Scan(&n); err != nil {
			t.Fatalf("%s %v: %v", sql, args, err)
		}
		return n
	}
	for _, tc := range []struct {
		sql  string
		want int
	}{
		{"SELECT count(*) FROM orders WHERE customer_id = 7.0", 3},
		{"SELECT count(*) FROM orders WHERE customer_id = 7.5", 0},
		{"SELECT count(*) FROM orders WHERE customer_id = 8.00", 2},
		{"SELECT count(*) FROM orders WHERE customer_id = 7e0", 3},
	} {
		for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeExec} {
			if got := countOf(tc.sql, mode); got != tc.want {
				t.Errorf("%s (%v): %d, want %d", tc.sql, mode, got, tc.want)
			}
		}
	}
	var seven, sevenHalf pgtype.Numeric
	if err := seven.Scan("7.0"); err != nil {
		t.Fatal(err)
	}
	if err := sevenHalf.Scan("7.5"); err != nil {
		t.Fatal(err)
	}
	// Parameters typed numeric or float8 compare as numbers. pgx sends an
	// untyped $1's float64 or pgtype.Numeric as text of unknown type, which
	// Postgres reads as the column's bigint: "7.0" and "7.5" are 22P02
	// there, and through the proxy the same ("7" is fine).
	direct := connect(t, env.Clusters[0].DSN("shop"))
	for _, tc := range []struct {
		sql  string
		arg  any
		want int    // through the proxy
		code string // or this error, through the proxy and from Postgres
	}{
		{"SELECT count(*) FROM orders WHERE customer_id = $1::numeric", seven, 3, ""},
		{"SELECT count(*) FROM orders WHERE customer_id = $1::numeric", sevenHalf, 0, ""},
		{"SELECT count(*) FROM orders WHERE customer_id = $1::float8", 7.0, 3, ""},
		{"SELECT count(*) FROM orders WHERE customer_id = $1::float8", 7.5, 0, ""},
		{"SELECT count(*) FROM orders WHERE customer_id = $1", float64(7), 3, ""},
		{"SELECT count(*) FROM orders WHERE customer_id = $1", 7.5, 0, "22P02"},
		{"SELECT count(*) FROM orders WHERE customer_id = $1", seven, 0, "22P02"},
	} {
		for _, conn := range []*pgx.Conn{direct, c} {
			var n int
			err := conn.QueryRow(ctx, tc.sql, pgx.QueryExecModeExec, tc.arg).Scan(&n)
			if sqlstate(err) != tc.code || (tc.code == "" && err != nil) {
				t.Errorf("%s with %v: %v, want SQLSTATE %q", tc.sql, tc.arg, err, tc.code)
			} else if conn == c && tc.code == "" && n != tc.want {
				t.Errorf("%s with %v: %d, want %d", tc.sql, tc.arg, n, tc.want)
			}
		}
	}

	// 7.5 rounds to 8 in a bigint column: the row is where 8's rows are.
	mustExec(t, c, "INSERT INTO orders (id, customer_id, total) VALUES (100, 7.5, 1)")
	if got := countOf("SELECT count(*) FROM orders WHERE customer_id = 8", pgx.QueryExecModeSimpleProtocol); got != 3 {
		t.Fatalf("customer 8 after inserting 7.5: %d orders, want 3", got)
	}
	for _, cl := range env.Clusters {
		all := count(t, cl.DSN("shop"), "SELECT count(*) FROM orders WHERE customer_id = 8")
		if all != 0 && all != 3 {
			t.Errorf("%s holds %d of customer 8's 3 orders", cl.Name, all)
		}
	}
}

// An expression nested too deep for the parser is 54001 through the proxy,
// and the proxy keeps serving.
func TestTooDeepExpressionThroughProxy(t *testing.T) {
	p := startProxy(t, shopTopology(""), nil)
	setupShop(t, p)
	ctx := context.Background()
	a := connect(t, p.dsn())
	deep := "SELECT count(*) FROM orders WHERE customer_id = 1" + strings.Repeat(" + 1", 100000)
	if _, err := a.Exec(ctx, deep, pgx.QueryExecModeSimpleProtocol); sqlstate(err) != "54001" {
		t.Fatalf("simple: want 54001, got %v", err)
	}
	if _, err := a.Exec(ctx, deep); sqlstate(err) != "54001" {
		t.Fatalf("extended: want 54001, got %v", err)
	}
	b := connect(t, p.dsn())
	for _, c := range []*pgx.Conn{a, b} {
		var n int
		if err := c.QueryRow(ctx, "SELECT count(*) FROM orders WHERE customer_id = 7").Scan(&n); err != nil || n != 0 {
			t.Fatalf("after the deep statement: %d %v", n, err)
		}
	}
}
