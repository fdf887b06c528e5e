package proxy

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestGSIUpsert: INSERT ... ON CONFLICT DO UPDATE writes the entries of
// the rows it inserts and leaves those of the rows it updates, through
// both protocols, with the client's RETURNING; setting an indexed column
// in DO UPDATE is refused with 0A000 naming the index.
func TestGSIUpsert(t *testing.T) {
	p := startProxy(t, gsiTopology(), nil)
	c := setupGSI(t, p)
	ctx := context.Background()
	other := keyOn(t, p, 1, false)
	mustExec(t, c, "INSERT INTO gs_orders (id, customer_id, note, total) VALUES (1, 1, 'a', 1)", simple)
	for i, mode := range []pgx.QueryExecMode{simple, pgx.QueryExecModeExec, pgx.QueryExecModeCacheStatement} {
		id := int64(10 + 10*i)
		upsert := `INSERT INTO gs_orders AS o (id, customer_id, note, total) VALUES ($1, $2, 'u', 1), (1, 1, 'a', 1), ($3, $4, NULL, 1)
ON CONFLICT (customer_id, id) DO UPDATE SET total = o.total + 1 RETURNING id, total`
		for round := 1; round <= 3; round++ {
			rows, err := c.Query(ctx, upsert, mode, id, 1, id+1, other)
			if err != nil {
				t.Fatalf("%v round %d: %v", mode, round, err)
			}
			got := ""
			for rows.Next() {
				var rid, total int64
				if err := rows.Scan(&rid, &total); err != nil {
					t.Fatal(err)
				}
				got += fmt.Sprintf("%d:%d ", rid, total)
			}
			if err := rows.Err(); err != nil {
				t.Fatalf("%v round %d: %v", mode, round, err)
			}
			want := fmt.Sprintf("%d:%d 1:%d %d:%d ", id, round, 1+round+3*i, id+1, round)
			if got != want {
				t.Errorf("%v round %d: RETURNING %q, want %q", mode, round, got, want)
			}
			checkLookups(t, p)
		}
	}
	// An upsert that inserts a duplicate of another customer's id.
	_, err := c.Exec(ctx, fmt.Sprintf("INSERT INTO gs_orders (id, customer_id) VALUES (1, %d) ON CONFLICT (customer_id, id) DO UPDATE SET total = 0", other), simple)
	wantPgError(t, err, "23505", "gs_orders_by_id")
	for _, sql := range []string{
		"INSERT INTO gs_orders (id, customer_id) VALUES (1, 1) ON CONFLICT (customer_id, id) DO UPDATE SET note = 'x'",
		"INSERT INTO gs_orders (id, customer_id) VALUES (1, 1) ON CONFLICT (customer_id, id) DO UPDATE SET id = 2",
	} {
		_, err := c.Exec(ctx, sql, simple)
		wantPgError(t, err, "0A000", "gs_orders_by_")
	}
	if n := checkLookups(t, p); n != 7 {
		t.Errorf("%d owner rows, want 7", n)
	}
}
