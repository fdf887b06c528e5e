package proxy

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// TestShardKeyUpdateMovesRows: an UPDATE of the shard key moves each row
// whose new key lives on another cluster (deleted there, inserted on the
// new one) and updates the others in place, in both protocols, with the
// exact count and the RETURNING of the new rows; every row is then found
// by a routed read of its new key, once. A group with other member tables
// refuses it unless the table opts in; a rollback undoes a move.
func TestShardKeyUpdateMovesRows(t *testing.T) {
	p := startProxy(t, shopTopology(""), nil)
	c := setupShop(t, p)
	ctx := context.Background()
	mustExec(t, c, "INSERT INTO orders (id, customer_id, total) SELECT g, g, g FROM generate_series(1, 40) g")
	_, err := c.Exec(ctx, "UPDATE orders SET customer_id = 2 WHERE customer_id = 1")
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "0A000" || !strings.Contains(pe.Hint, "shard_key_update: move_row") {
		t.Fatalf("without shard_key_update: %v", err)
	}

	p = startProxy(t, strings.Replace(shopTopology(""), "orders: {}", "orders: { shard_key_update: move_row }", 1), nil)
	c = connect(t, p.dsn())
	total := 40
	located := func(id, key int) {
		t.Helper()
		if n := count(t, p.dsn(), "SELECT count(*) FROM orders WHERE customer_id = $1 AND id = $2", key, id); n != 1 {
			t.Fatalf("order %d: %d rows with customer %d through a routed read", id, n, key)
		}
		if n := clusterCount(t, 0, "SELECT count(*) FROM orders") + clusterCount(t, 1, "SELECT count(*) FROM orders"); n != total {
			t.Fatalf("%d orders on the clusters, want %d", n, total)
		}
	}
	modes := []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement}
	for i, mode := range modes {
		// Every row of a scatter: some move, some stay.
		off := 100 * (i + 1)
		rows, err := c.Query(ctx, "UPDATE orders o SET customer_id = o.customer_id + $1, total = total + 1 WHERE o.id <= 40 RETURNING o.id, o.customer_id, total::text", mode, 100)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for rows.Next() {
			var id, key int
			var total string
			if err := rows.Scan(&id, &key, &total); err != nil {
				t.Fatal(err)
			}
			if key != id+off {
				t.Fatalf("%v: order %d returned customer %d, want %d", mode, id, key, id+off)
			}
			n++
		}
		if rows.Err() != nil || n != 40 || rows.CommandTag().String() != "UPDATE 40" {
			t.Fatalf("%v: %d rows, %v %v", mode, n, rows.CommandTag(), rows.Err())
		}
		for id := 1; id <= 40; id++ {
			located(id, id+off)
		}
		// One row, pinned by its old key, without RETURNING.
		tag, err := c.Exec(ctx, "UPDATE orders SET customer_id = $1 WHERE customer_id = $2 AND id = 7", mode, 7, 7+off)
		if err != nil || tag.String() != "UPDATE 1" {
			t.Fatalf("%v: %v %v", mode, tag, err)
		}
		located(7, 7)
		if _, err := c.Exec(ctx, "UPDATE orders SET customer_id = $1 WHERE id = 7", mode, 7+off); err != nil {
			t.Fatal(err)
		}
	}
	// A rolled-back move leaves the row where it was.
	tx, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for key := 1; key <= 20; key++ {
		if _, err := tx.Exec(ctx, "UPDATE orders SET customer_id = $1 WHERE id = 3", key); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	located(3, 203)
	// Nested in a WITH clause: refused.
	_, err = c.Exec(ctx, "WITH u AS (UPDATE orders SET customer_id = 1 WHERE id = 3 RETURNING id) SELECT * FROM u")
	if !errors.As(err, &pe) || pe.Code != "0A000" {
		t.Fatalf("nested: %v", err)
	}
	// A duplicate primary key on the new shard: 23505, nothing moved.
	mustExec(t, c, "INSERT INTO orders (id, customer_id, total) VALUES (3, 1, 0)")
	total++
	_, err = c.Exec(ctx, "UPDATE orders SET customer_id = 1 WHERE id = 3 AND customer_id = 203")
	if !errors.As(err, &pe) || pe.Code != "23505" {
		t.Fatalf("duplicate: %v", err)
	}
	located(3, 203)
}
