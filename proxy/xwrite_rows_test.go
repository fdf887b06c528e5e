package proxy

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestUpdateFromAcrossGroups: UPDATE ... FROM and DELETE ... USING whose
// FROM list is another group run by key on the target's clusters, in
// both protocols: a target row joined to several FROM rows is updated
// once, constants and parameters are set as Postgres sets them, RETURNING
// reads the new rows, a transaction rolls back all of it, and a table
// without a primary key is refused.
func TestUpdateFromAcrossGroups(t *testing.T) {
	p := startProxy(t, shopTopology(""), nil)
	c := setupShop(t, p)
	ctx := context.Background()
	for id := 1; id <= 100; id++ {
		mustExec(t, c, "INSERT INTO customers (id, name) VALUES ($1, $2)", id, fmt.Sprintf("n%d", id))
		if id > 40 {
			continue
		}
		mustExec(t, c, "INSERT INTO orders (id, customer_id, total) VALUES ($1, $2, 1), ($3, $2, 2)", id*10, id, id*10+1)
		mustExec(t, c, "INSERT INTO products (sku, name) VALUES ($1, $2)", fmt.Sprintf("s%d", id), fmt.Sprintf("n%d", id))
	}
	// Two products per name for customers 1..5: still one update per row.
	for id := 1; id <= 5; id++ {
		mustExec(t, c, "INSERT INTO products (sku, name) VALUES ($1, $2)", fmt.Sprintf("t%d", id), fmt.Sprintf("n%d", id))
	}
	modes := []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement}
	for i, mode := range modes {
		tag, err := c.Exec(ctx, "UPDATE customers c SET name = p.sku || $1, id = c.id FROM products p WHERE p.name = c.name AND c.id <= $2",
			mode, fmt.Sprintf("-%d", i), 20)
		if err == nil || tag.String() == "UPDATE 20" {
			// SET id = c.id changes the shard key: still refused.
			t.Fatalf("%v: shard key update across groups: %v %v", mode, tag, err)
		}
		tag, err = c.Exec(ctx, "UPDATE customers c SET name = upper(p.name) FROM products p WHERE p.name = c.name AND c.id <= $1", mode, 10+i*10)
		if err != nil || tag.String() != "UPDATE 10" {
			t.Fatalf("%v: %v %v", mode, tag, err)
		}
	}
	if n := count(t, p.dsn(), "SELECT count(*) FROM customers WHERE name = upper(name) AND id <= 20"); n != 20 {
		t.Fatalf("%d customers updated, want 20", n)
	}
	// A parameter set directly, typed by its column; RETURNING.
	for i, mode := range modes {
		rows, err := c.Query(ctx, "UPDATE orders o SET total = $1 FROM products p WHERE p.name = 'n'||o.customer_id AND o.id = o.customer_id * 10 AND o.customer_id > $2 RETURNING o.customer_id, total::text",
			mode, 7+i, 30)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for rows.Next() {
			var id int64
			var total string
			if err := rows.Scan(&id, &total); err != nil || total != fmt.Sprintf("%d.00", 7+i) || id <= 30 {
				t.Fatalf("%v: row %d %q %v", mode, id, total, err)
			}
			n++
		}
		if rows.Err() != nil || n != 10 || rows.CommandTag().String() != "UPDATE 10" {
			t.Fatalf("%v: %d rows, %v %v", mode, n, rows.CommandTag(), rows.Err())
		}
	}
	// DELETE ... USING, rolled back, then for good.
	tx, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if tag, err := tx.Exec(ctx, "DELETE FROM orders o USING products p WHERE p.name = 'n'||o.customer_id AND p.sku LIKE 't%'"); err != nil || tag.String() != "DELETE 10" {
		t.Fatalf("delete: %v %v", tag, err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if n := count(t, p.dsn(), "SELECT count(*) FROM orders"); n != 80 {
		t.Fatalf("rollback left %d orders", n)
	}
	for i, mode := range modes {
		if tag, err := c.Exec(ctx, "DELETE FROM orders o USING products p WHERE p.name = 'n'||o.customer_id AND p.sku = $1", mode, fmt.Sprintf("s%d", 40-i)); err != nil || tag.String() != "DELETE 2" {
			t.Fatalf("%v: delete: %v %v", mode, tag, err)
		}
	}
	if n := clusterCount(t, 0, "SELECT count(*) FROM orders") + clusterCount(t, 1, "SELECT count(*) FROM orders"); n != 76 {
		t.Fatalf("%d orders left, want 76", n)
	}
	// A reference table updated from a sharded one: every copy the same.
	mustExec(t, c, "INSERT INTO countries (code, name) VALUES ('1', 'a'), ('2', 'b')")
	if tag, err := c.Exec(ctx, "UPDATE countries SET name = o.total::text FROM orders o WHERE o.customer_id::text = countries.code AND o.id = o.customer_id * 10"); err != nil || tag.String() != "UPDATE 2" {
		t.Fatalf("reference: %v %v", tag, err)
	}
	for cl := 0; cl < 2; cl++ {
		if n := clusterCount(t, cl, "SELECT count(*) FROM countries WHERE name = '1.00'"); n != 2 {
			t.Errorf("pg%d: %d countries updated", cl, n)
		}
	}
	// No primary key on the target: refused.
	if _, err := c.Exec(ctx, "UPDATE products p SET name = c.name FROM customers c WHERE c.name = p.name"); pgErr(t, err).Code != "0A000" {
		t.Fatalf("products without a primary key: %v", err)
	}
	checkCarriesOn(t, p, c, "after UPDATE ... FROM")
}
