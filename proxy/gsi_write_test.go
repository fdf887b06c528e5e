package proxy

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"
)

var bothModes = []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement}

// TestGSIInsertSelect: INSERT ... SELECT into an owner table writes the
// entries of the rows it inserted, whether it runs on the rows' shard or
// reads its rows elsewhere and inserts them in batches, in both protocols
// (binary results too), with RETURNING and ON CONFLICT DO NOTHING; a
// duplicate of a unique index is 23505 named after it and stores
// nothing.
func TestGSIInsertSelect(t *testing.T) {
	p := startProxy(t, gsiTopology(), nil)
	c := setupGSI(t, p)
	ctx := context.Background()
	mustExec(t, c, "INSERT INTO gs_orders (id, customer_id, note) VALUES (1, 1, 'a'), (2, 1, NULL), (3, 2, 'b')", simple)
	// On the rows' shard: the planner routes it by its key.
	for i, mode := range bothModes {
		tag, err := c.Exec(ctx, "INSERT INTO gs_orders (id, customer_id, note) SELECT id + $1, customer_id, note FROM gs_orders WHERE customer_id = 1 AND id < 10", mode, 10*(i+1))
		if err != nil || tag.String() != "INSERT 0 2" {
			t.Fatalf("%v: %v %v", mode, tag, err)
		}
	}
	if n := checkLookups(t, p); n != 7 {
		t.Fatalf("%d owner rows, want 7", n)
	}
	// Rows of every shard, inserted in batches, with RETURNING.
	for i, mode := range bothModes {
		base := 1000 * (i + 1)
		rows, err := c.Query(ctx, "INSERT INTO gs_orders AS o (id, customer_id, note) SELECT g + $1, g, 'n' || (g % 3) FROM generate_series(1, 50) g RETURNING o.id, note", mode, base)
		if err != nil {
			t.Fatal(err)
		}
		var ids []int64
		for rows.Next() {
			var id int64
			var note string
			if err := rows.Scan(&id, &note); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		if rows.Err() != nil || rows.CommandTag().String() != "INSERT 0 50" || len(ids) != 50 {
			t.Fatalf("%v: %d rows, %v %v", mode, len(ids), rows.CommandTag(), rows.Err())
		}
		slices.Sort(ids)
		if ids[0] != int64(base+1) || ids[49] != int64(base+50) {
			t.Fatalf("%v: RETURNING ids %v", mode, ids)
		}
		if n := len(rows.FieldDescriptions()); n != 2 {
			t.Fatalf("%v: %d columns returned, want 2", mode, n)
		}
	}
	if n := checkLookups(t, p); n != 107 {
		t.Fatalf("%d owner rows, want 107", n)
	}
	// ON CONFLICT DO NOTHING: the rows skipped get no entries.
	tag, err := c.Exec(ctx, "INSERT INTO gs_orders (id, customer_id, note) SELECT g + 1000, g, 'again' FROM generate_series(45, 55) g ON CONFLICT DO NOTHING", simple)
	if err != nil || tag.String() != "INSERT 0 5" {
		t.Fatalf("ON CONFLICT DO NOTHING: %v %v", tag, err)
	}
	if n := checkLookups(t, p); n != 112 {
		t.Fatalf("%d owner rows, want 112", n)
	}
	// A duplicate id on another customer (and so maybe another shard).
	for _, sql := range []string{
		"INSERT INTO gs_orders (id, customer_id) SELECT g, g + 500 FROM generate_series(1, 3) g",
		"INSERT INTO gs_orders (id, customer_id) SELECT 9999, g FROM generate_series(1, 2) g",
		"INSERT INTO gs_orders (id, customer_id) SELECT 3, customer_id FROM gs_orders WHERE customer_id = 1 AND id = 1",
	} {
		_, err := c.Exec(ctx, sql, simple)
		pe := wantPgError(t, err, "23505", `duplicate key value violates unique constraint "gs_orders_by_id"`)
		if pe.ConstraintName != "gs_orders_by_id" {
			t.Errorf("%s: %+v", sql, pe)
		}
	}
	// In a transaction rolled back: nothing stays.
	mustExec(t, c, "BEGIN", simple)
	mustExec(t, c, "INSERT INTO gs_orders (id, customer_id, note) SELECT g + 5000, g, 'tx' FROM generate_series(1, 20) g", simple)
	mustExec(t, c, "ROLLBACK", simple)
	if n := checkLookups(t, p); n != 112 {
		t.Fatalf("%d owner rows, want 112", n)
	}
	// Read through the index: each inserted row found once.
	for _, id := range []int{11, 1001, 2050, 1046} {
		if n := count(t, p.dsn(), "SELECT count(*) FROM gs_orders WHERE id = $1", id); n != 1 {
			t.Errorf("id %d: %d rows through the index", id, n)
		}
	}
}

// TestGSIShardKeyMove: an UPDATE of an owner's shard key moves the rows
// whose key lives on another cluster and replaces the entries of every
// updated row (their key changed), with the indexed column set at the
// same time or not, in both protocols; the index then finds each row at
// its new key; a rollback restores the entries.
func TestGSIShardKeyMove(t *testing.T) {
	p := startProxy(t, gsiTopology(), nil)
	c := setupGSI(t, p)
	ctx := context.Background()
	mustExec(t, c, "INSERT INTO gs_orders (id, customer_id, note) SELECT g, g, 'n' || (g % 4) FROM generate_series(1, 40) g", simple)
	for i, mode := range bothModes {
		off := 100 * (i + 1)
		rows, err := c.Query(ctx, "UPDATE gs_orders o SET customer_id = o.customer_id + $1 WHERE o.id <= 20 RETURNING o.id, o.customer_id, note", mode, 100)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for rows.Next() {
			var id, key int64
			var note string
			if err := rows.Scan(&id, &key, &note); err != nil {
				t.Fatal(err)
			}
			if key != id+int64(off) || note != fmt.Sprintf("n%d", id%4) {
				t.Fatalf("%v: returned (%d, %d, %s)", mode, id, key, note)
			}
			n++
		}
		if rows.Err() != nil || n != 20 || rows.CommandTag().String() != "UPDATE 20" {
			t.Fatalf("%v: %d rows, %v %v", mode, n, rows.CommandTag(), rows.Err())
		}
		if n := checkLookups(t, p); n != 40 {
			t.Fatalf("%v: %d owner rows, want 40", mode, n)
		}
		// Key and indexed columns at once, one row found through the index.
		tag, err := c.Exec(ctx, "UPDATE gs_orders SET customer_id = $1, note = $2, id = $3 WHERE id = $4", mode, 7777+i, "moved", 700+i, 30+i)
		if err != nil || tag.String() != "UPDATE 1" {
			t.Fatalf("%v: %v %v", mode, tag, err)
		}
		if n := checkLookups(t, p); n != 40 {
			t.Fatalf("%v: %d owner rows, want 40", mode, n)
		}
		var key int64
		if err := c.QueryRow(ctx, "SELECT customer_id FROM gs_orders WHERE id = $1", mode, 700+i).Scan(&key); err != nil || key != int64(7777+i) {
			t.Fatalf("%v: order %d has customer %d (%v)", mode, 700+i, key, err)
		}
	}
	// A move onto an id another row has: 23505, nothing changed.
	_, err := c.Exec(ctx, "UPDATE gs_orders SET customer_id = 9000, id = 1 WHERE id = 21", simple)
	wantPgError(t, err, "23505", "gs_orders_by_id")
	// Rolled back: the old entries are back.
	mustExec(t, c, "BEGIN", simple)
	mustExec(t, c, "UPDATE gs_orders SET customer_id = customer_id + 1 WHERE id > 30", simple)
	mustExec(t, c, "ROLLBACK", simple)
	if n := checkLookups(t, p); n != 40 {
		t.Fatalf("%d owner rows, want 40", n)
	}
	if n := count(t, p.dsn(), "SELECT count(*) FROM gs_orders WHERE note = 'n1'"); n != 10 {
		t.Errorf("%d rows with note n1 through the index, want 10", n)
	}
}
