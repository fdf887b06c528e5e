package proxy

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestInsertSelectAcrossShards: INSERT ... SELECT whose rows come from
// every shard (and from another group) is read, routed by key and
// inserted on each row's shard, in both protocols, with RETURNING, ON
// CONFLICT DO NOTHING and inside a transaction that sees its own rows.
func TestInsertSelectAcrossShards(t *testing.T) {
	p := startProxy(t, shopTopology(""), nil)
	c := setupShop(t, p)
	for id := 1; id <= 100; id++ {
		mustExec(t, c, "INSERT INTO customers (id, name) VALUES ($1, $2)", id, fmt.Sprintf("n%d", id))
		mustExec(t, c, "INSERT INTO products (sku, name) VALUES ($1, $2)", fmt.Sprintf("s%d", id), fmt.Sprintf("n%d", id))
	}
	ctx := context.Background()
	modes := []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement}
	for i, mode := range modes {
		tag, err := c.Exec(ctx, "INSERT INTO orders (id, customer_id, total) SELECT id + $1, id, 1.5 FROM customers WHERE id > $2", mode, i*1000, 0)
		if err != nil || tag.String() != "INSERT 0 100" {
			t.Fatalf("%v: %v %v", mode, tag, err)
		}
	}
	// Every order lives with its customer.
	for cl := 0; cl < 2; cl++ {
		if o, cu := clusterCount(t, cl, "SELECT count(*) FROM orders"), clusterCount(t, cl, "SELECT count(*) FROM customers"); o != 2*cu || cu == 0 {
			t.Errorf("pg%d: %d orders for %d customers", cl, o, cu)
		}
		if n := clusterCount(t, cl, "SELECT count(*) FROM orders o WHERE NOT EXISTS (SELECT 1 FROM customers c WHERE c.id = o.customer_id)"); n != 0 {
			t.Errorf("pg%d: %d orders away from their customer", cl, n)
		}
	}
	// RETURNING, ON CONFLICT DO NOTHING (the first 100 exist).
	for _, mode := range modes {
		rows, err := c.Query(ctx, "INSERT INTO orders (id, customer_id, total) SELECT id + 1000, id, 2 FROM customers WHERE id <= 3 OR id > 98 ON CONFLICT DO NOTHING RETURNING customer_id, total", mode)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for rows.Next() {
			n++
		}
		if rows.Err() != nil || rows.CommandTag().String() != "INSERT 0 0" || n != 0 {
			t.Fatalf("%v: %d rows, %v %v", mode, n, rows.CommandTag(), rows.Err())
		}
	}
	var sum string
	rows, err := c.Query(ctx, "INSERT INTO orders (id, customer_id, total) SELECT 5000, c.id, 3 FROM customers c JOIN products p ON p.name = c.name WHERE c.id <= 10 RETURNING customer_id, total::text")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id, &sum); err != nil || sum != "3.00" {
			t.Fatalf("row %v %q", err, sum)
		}
		n++
	}
	if rows.Err() != nil || n != 10 {
		t.Fatalf("RETURNING: %d rows, %v", n, rows.Err())
	}
	// Inside a transaction: the SELECT sees the transaction's rows; a
	// rollback leaves nothing.
	tx, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, c, "INSERT INTO customers (id, name) VALUES (500, 'x'), (501, 'y')")
	if tag, err := tx.Exec(ctx, "INSERT INTO countries (code, name) SELECT id::text, name FROM customers WHERE id >= 500"); err != nil || tag.String() != "INSERT 0 2" {
		t.Fatalf("into a reference table: %v %v", tag, err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	mustExec(t, c, "INSERT INTO countries (code, name) SELECT id::text, name FROM customers WHERE id <= 5")
	for cl := 0; cl < 2; cl++ {
		if n := clusterCount(t, cl, "SELECT count(*) FROM countries"); n != 5 {
			t.Errorf("pg%d has %d countries, want 5 on every copy", cl, n)
		}
	}
	if n := clusterCount(t, 0, "SELECT count(*) FROM customers WHERE id >= 500") + clusterCount(t, 1, "SELECT count(*) FROM customers WHERE id >= 500"); n != 0 {
		t.Errorf("rolled back rows stayed: %d", n)
	}
	checkCarriesOn(t, p, c, "after INSERT ... SELECT")
}
