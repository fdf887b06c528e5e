package proxy

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestInsertWithoutColumns: INSERT into a sharded table without a column
// list takes the table's column order from the catalog, in both
// protocols, for VALUES (one row, several, DEFAULT) and SELECT, and reads
// the order again after DDL through the proxy, outside a transaction and
// inside one. Every row is then found by a point read, which goes to its
// key's shard only.
func TestInsertWithoutColumns(t *testing.T) {
	p := startProxy(t, shopTopology(""), nil)
	c := setupShop(t, p)
	ctx := context.Background()
	modes := []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement}
	point := func(sql string, arg any, want string) {
		t.Helper()
		var got string
		if err := c.QueryRow(ctx, sql, arg).Scan(&got); err != nil || got != want {
			t.Fatalf("%s [%v] = %q, %v; want %q", sql, arg, got, err, want)
		}
	}
	for i, mode := range modes {
		base := int64(i * 100)
		if tag, err := c.Exec(ctx, "INSERT INTO customers VALUES ($1, $2)", mode, base+1, "one"); err != nil || tag.String() != "INSERT 0 1" {
			t.Fatalf("%v: %v %v", mode, tag, err)
		}
		if tag, err := c.Exec(ctx, "INSERT INTO customers VALUES ($1, 'two'), ($2, 'three'), ($3, DEFAULT)", mode, base+2, base+3, base+4); err != nil || tag.String() != "INSERT 0 3" {
			t.Fatalf("%v: %v %v", mode, tag, err)
		}
		if tag, err := c.Exec(ctx, "INSERT INTO orders SELECT id * 10, id, 2.5 FROM customers WHERE id = $1", mode, base+3); err != nil || tag.String() != "INSERT 0 1" {
			t.Fatalf("%v: %v %v", mode, tag, err)
		}
		if tag, err := c.Exec(ctx, "INSERT INTO orders VALUES ($1, $2)", mode, base+1, base+2); err != nil || tag.String() != "INSERT 0 1" {
			t.Fatalf("%v: %v %v", mode, tag, err)
		}
		point("SELECT name FROM customers WHERE id = $1", base+1, "one")
		point("SELECT name FROM customers WHERE id = $1", base+3, "three")
		point("SELECT coalesce(name, 'null') FROM customers WHERE id = $1", base+4, "null")
		point("SELECT total::text FROM orders WHERE customer_id = $1", base+3, "2.50")
		point("SELECT id::text FROM orders WHERE customer_id = $1 AND total IS NULL", base+2, itoa(uint32(base+1)))
	}
	if n := count(t, p.dsn(), "SELECT count(*) FROM customers"); n != 8 {
		t.Fatalf("%d customers, want 8", n)
	}

	// The table again, its columns in another order: the cached plans of
	// the statements above must not be used.
	mustExec(t, c, "DROP TABLE customers")
	mustExec(t, c, "CREATE TABLE customers (name text, id bigint PRIMARY KEY)")
	if err := c.DeallocateAll(ctx); err != nil { // pgx's cache knows the old parameter types
		t.Fatal(err)
	}
	for i, mode := range modes {
		id := int64(1000 + i)
		if _, err := c.Exec(ctx, "INSERT INTO customers VALUES ($1, $2)", mode, "again", id); err != nil {
			t.Fatalf("%v after DDL: %v", mode, err)
		}
		point("SELECT name FROM customers WHERE id = $1", id, "again")
	}

	// Inside a transaction: the INSERT sees the transaction's own DDL.
	inTx(t, c, true,
		"DROP TABLE products",
		"CREATE TABLE products (name text, sku text)",
		"INSERT INTO products VALUES ('widget', 'AbC-1')")
	point("SELECT name FROM products WHERE lower(sku) = lower($1)", "AbC-1", "widget")
	if _, err := c.Exec(ctx, "INSERT INTO products VALUES ('gadget', 'xY-2')"); err != nil {
		t.Fatal(err)
	}
	point("SELECT name FROM products WHERE lower(sku) = lower($1)", "xY-2", "gadget")

	// A transaction rolled back: its columns do not outlive it.
	inTx(t, c, false,
		"DROP TABLE products",
		"CREATE TABLE products (sku text, name text, price int)",
		"INSERT INTO products VALUES ('q', 'n', 1)")
	if _, err := c.Exec(ctx, "INSERT INTO products VALUES ('thing', 'Zz-3')"); err != nil {
		t.Fatal(err)
	}
	point("SELECT name FROM products WHERE lower(sku) = lower($1)", "zz-3", "thing")

	// A table the catalog does not hold is Postgres's 42P01.
	if _, err := c.Exec(ctx, "DROP TABLE orders"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, "INSERT INTO orders VALUES (1, 2, 3)"); sqlstate(err) != "42P01" {
		t.Fatalf("INSERT into a dropped table: %v, want 42P01", err)
	}
}

// inTx runs stmts in a transaction, then commits or rolls it back.
func inTx(t *testing.T, c *pgx.Conn, commit bool, stmts ...string) {
	t.Helper()
	ctx := context.Background()
	tx, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range stmts {
		if _, err := tx.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	if commit {
		err = tx.Commit(ctx)
	} else {
		err = tx.Rollback(ctx)
	}
	if err != nil {
		t.Fatal(err)
	}
}
