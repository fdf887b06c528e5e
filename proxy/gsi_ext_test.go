package proxy

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// extModes are pgx's extended-protocol execution modes.
var extModes = []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeCacheDescribe,
	pgx.QueryExecModeDescribeExec, pgx.QueryExecModeExec}

// TestGSIExtended: INSERT and DELETE with parameters through the extended
// protocol, in every pgx mode, keep both lookup tables exact as the simple
// protocol does; RETURNING answers in the client's formats; a duplicate is
// the index's 23505 and undoes its batch.
func TestGSIExtended(t *testing.T) {
	p := startProxy(t, gsiTopology(), nil)
	c := setupGSI(t, p)
	ctx := context.Background()
	other := keyOn(t, p, 1, false)
	rows := 0
	for m, mode := range extModes {
		base := int64(100 * (m + 1))
		exec := func(sql string, args ...any) string {
			t.Helper()
			tag, err := c.Exec(ctx, sql, append([]any{mode}, args...)...)
			if err != nil {
				t.Fatalf("%v: %s: %v", mode, sql, err)
			}
			return tag.String()
		}
		exec("INSERT INTO gs_orders (id, customer_id, note) VALUES ($1, $2, $3)", base, 1, "a")
		if tag := exec("INSERT INTO gs_orders (id, customer_id, note) VALUES ($1, $2, $3), ($4, $5, $3), ($6, 3, NULL)",
			base+1, 1, "m", base+2, other, base+3); tag != "INSERT 0 3" {
			t.Errorf("%v: tag %q", mode, tag)
		}
		if tag := exec("INSERT INTO gs_orders (id, customer_id, note) VALUES ($1, 1, 'dup'), ($2, $3, 'c') ON CONFLICT DO NOTHING",
			base, base+4, other); tag != "INSERT 0 1" {
			t.Errorf("%v: ON CONFLICT DO NOTHING tag %q", mode, tag)
		}
		// Sequence-filled ids, returned in statement order, in pgx's
		// binary formats.
		r, err := c.Query(ctx, "INSERT INTO gs_orders (customer_id, note) VALUES ($1, $2), ($3, $2) RETURNING id, customer_id, note", mode, 1, "seq", other)
		if err != nil {
			t.Fatal(err)
		}
		var custs []int64
		for r.Next() {
			var id, cust int64
			var note string
			if err := r.Scan(&id, &cust, &note); err != nil {
				t.Fatalf("%v: %v", mode, err)
			}
			if id < 1000 || note != "seq" {
				t.Errorf("%v: RETURNING %d %d %q", mode, id, cust, note)
			}
			custs = append(custs, cust)
		}
		if r.Err() != nil || !slices.Equal(custs, []int64{1, other}) || len(r.FieldDescriptions()) != 3 {
			t.Errorf("%v: RETURNING customers %v (%v), %d columns", mode, custs, r.Err(), len(r.FieldDescriptions()))
		}
		rows += 7
		// DELETE by the indexed column and by another, RETURNING *.
		if tag := exec("DELETE FROM gs_orders WHERE id = $1", base+3); tag != "DELETE 1" {
			t.Errorf("%v: tag %q", mode, tag)
		}
		var got []string
		r, err = c.Query(ctx, "DELETE FROM gs_orders WHERE note = $1 RETURNING *", mode, "m")
		if err != nil {
			t.Fatal(err)
		}
		for r.Next() {
			v, _ := r.Values()
			got = append(got, fmt.Sprint(v))
		}
		if r.Err() != nil || len(got) != 2 || len(r.FieldDescriptions()) != 4 {
			t.Errorf("%v: DELETE RETURNING * %v %v", mode, got, r.Err())
		}
		rows -= 3
		// A duplicate: the index's violation, nothing stored.
		_, err = c.Exec(ctx, "INSERT INTO gs_orders (id, customer_id) VALUES ($1, $2)", mode, base, other)
		pe := wantPgError(t, err, "23505", `duplicate key value violates unique constraint "gs_orders_by_id"`)
		if pe.ConstraintName != "gs_orders_by_id" || !strings.Contains(pe.Detail, fmt.Sprint(base)) {
			t.Errorf("%v: %+v", mode, pe)
		}
		if n := checkLookups(t, p); n != rows {
			t.Fatalf("%v: %d owner rows, want %d", mode, n, rows)
		}
	}
	// DELETE by the index, bound: only on the owner's cluster (a stray
	// row the index does not know, on the other cluster, stays).
	stray := env.Clusters[0]
	if clusterOf(t, p, 1) == stray.Name {
		stray = env.Clusters[1]
	}
	d := connect(t, stray.DSN("shop"))
	mustExec(t, d, "INSERT INTO gs_orders (id, customer_id) VALUES (100, 999999)")
	if tag, err := c.Exec(ctx, "DELETE FROM gs_orders WHERE id = $1", 100); err != nil || tag.String() != "DELETE 1" {
		t.Errorf("DELETE through the index: %v %v", tag, err)
	}
	mustExec(t, d, "DELETE FROM gs_orders WHERE customer_id = 999999")
	rows--
	// One binary result format for all columns (psycopg's binary mode):
	// the client's columns in binary, the proxy's added ones still read.
	res := c.PgConn().ExecParams(ctx, "INSERT INTO gs_orders (id, customer_id, note) VALUES ($1, $2, 'bin') RETURNING id, note",
		[][]byte{[]byte("990"), []byte(fmt.Sprint(other))}, nil, nil, []int16{1}).Read()
	if res.Err != nil || len(res.Rows) != 1 || res.FieldDescriptions[0].Format != 1 ||
		string(res.Rows[0][0]) != "\x00\x00\x00\x00\x00\x00\x03\xde" || string(res.Rows[0][1]) != "bin" {
		t.Errorf("binary RETURNING: %v %q %+v", res.Err, res.Rows, res.FieldDescriptions)
	}
	rows++
	// In a batch (one implicit transaction up to Sync), a later failure
	// undoes the earlier inserts, as in Postgres.
	b := &pgx.Batch{}
	b.Queue("INSERT INTO gs_orders (id, customer_id, note) VALUES ($1, $2, 'b')", 900, other)
	b.Queue("INSERT INTO gs_orders (id, customer_id, note) VALUES ($1, $2, 'b')", 901, 1)
	b.Queue("INSERT INTO gs_orders (id, customer_id) VALUES ($1, $2)", 200, other)
	err := c.SendBatch(ctx, b).Close()
	wantPgError(t, err, "23505", "gs_orders_by_id")
	if n := checkLookups(t, p); n != rows {
		t.Fatalf("after the failed batch: %d owner rows, want %d", n, rows)
	}
	// In a client transaction, rolled back: nothing changes.
	tx, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "INSERT INTO gs_orders (id, customer_id, note) VALUES ($1, $2, 'x'), ($3, $4, 'x')", 950, 1, 951, other); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "DELETE FROM gs_orders WHERE note = $1", "a"); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if n := checkLookups(t, p); n != rows {
		t.Fatalf("after ROLLBACK: %d owner rows, want %d", n, rows)
	}
}

// TestGSIExtendedReads: SELECT and UPDATE by an indexed column bound with
// parameters run on the owners' clusters only, in every pgx mode: a stray
// row the index does not know, on the other cluster, is neither read nor
// updated; a lookup in a batch or a transaction sees the rows written
// before it.
func TestGSIExtendedReads(t *testing.T) {
	p := startProxy(t, strings.Replace(gsiTopology(), "type: text }", "type: text, state: active }", 1), nil)
	c := setupGSI(t, p)
	ctx := context.Background()
	same, other := keyOn(t, p, 1, true), keyOn(t, p, 1, false)
	mustExec(t, c, fmt.Sprintf(`INSERT INTO gs_orders (id, customer_id, note, total) VALUES (1, 1, 'a "q" \\', 1), (2, %d, 'b', 2)`, same), simple)
	// Strays with ids 1 and 2 on the cluster that does not own them.
	stray, home := connect(t, env.Clusters[1].DSN("shop")), connect(t, env.Clusters[0].DSN("shop"))
	if clusterOf(t, p, 1) == env.Clusters[1].Name {
		stray, home = home, stray
	}
	mustExec(t, stray, `INSERT INTO gs_orders (id, customer_id, note, total) VALUES (1, 999999, 'a "q" \\', -100), (2, 999999, 'b', -100)`)
	// And on the owners' cluster, under another key: the statement is
	// narrowed to the owners' keys there too.
	mustExec(t, home, `INSERT INTO gs_orders (id, customer_id, note, total) VALUES (1, 999998, 'a "q" \\', -1000), (2, 999998, 'b', -1000)`)
	sum := func(mode pgx.QueryExecMode, sql string, args ...any) (n, total int64) {
		t.Helper()
		r, err := c.Query(ctx, sql, append([]any{mode}, args...)...)
		if err != nil {
			t.Fatalf("%v: %s: %v", mode, sql, err)
		}
		for r.Next() {
			var v int64
			if err := r.Scan(&v); err != nil {
				t.Fatal(err)
			}
			n, total = n+1, total+v
		}
		if r.Err() != nil {
			t.Fatalf("%v: %s: %v", mode, sql, r.Err())
		}
		return n, total
	}
	for m, mode := range extModes {
		if n, tot := sum(mode, "SELECT total FROM gs_orders WHERE id = $1", 1); n != 1 || tot != 1 {
			t.Errorf("%v: by id: %d rows, total %d", mode, n, tot)
		}
		if n, tot := sum(mode, "SELECT total FROM gs_orders o WHERE o.id IN ($1, $2) ORDER BY total", 1, 2); n != 2 || tot != 3+int64(10*m) {
			t.Errorf("%v: IN: %d rows, total %d", mode, n, tot)
		}
		if n, tot := sum(mode, "SELECT total FROM gs_orders WHERE id = ANY($1)", []int64{2, 3}); n != 1 || tot != 2+int64(10*m) {
			t.Errorf("%v: ANY: %d rows, total %d", mode, n, tot)
		}
		if n, tot := sum(mode, "SELECT total FROM gs_orders WHERE note IN ($1, $2)", `a "q" \\`, "c"); n != 1 || tot != 1 {
			t.Errorf("%v: by note: %d rows, total %d", mode, n, tot)
		}
		if n, _ := sum(mode, "SELECT total FROM gs_orders WHERE id = $1", 77); n != 0 {
			t.Errorf("%v: unknown id: %d rows", mode, n)
		}
		if tag, err := c.Exec(ctx, "UPDATE gs_orders SET total = total + $2 WHERE id = $1", mode, 2, 10); err != nil || tag.String() != "UPDATE 1" {
			t.Errorf("%v: UPDATE through the index: %v %v", mode, tag, err)
		}
	}
	if n, tot := sum(simple, `SELECT total FROM gs_orders WHERE note = 'a "q" \\'`); n != 1 || tot != 1 {
		t.Errorf("simple: by note: %d rows, total %d", n, tot)
	}
	var tot int64
	if err := stray.QueryRow(ctx, "SELECT sum(total) FROM gs_orders").Scan(&tot); err != nil || tot != -200 {
		t.Errorf("strays: total %d, %v", tot, err)
	}
	mustExec(t, stray, "DELETE FROM gs_orders WHERE customer_id = 999999")
	if err := home.QueryRow(ctx, "SELECT sum(total) FROM gs_orders WHERE customer_id = 999998").Scan(&tot); err != nil || tot != -2000 {
		t.Errorf("strays on the owners' cluster: total %d, %v", tot, err)
	}
	mustExec(t, home, "DELETE FROM gs_orders WHERE customer_id = 999998")
	// In one batch: the INSERT's entry is read by the SELECT after it.
	b := &pgx.Batch{}
	b.Queue("INSERT INTO gs_orders (id, customer_id, total) VALUES ($1, $2, 5)", 3, other)
	b.Queue("SELECT total FROM gs_orders WHERE id = $1", 3)
	br := c.SendBatch(ctx, b)
	if _, err := br.Exec(); err != nil {
		t.Fatal(err)
	}
	if err := br.QueryRow().Scan(&tot); err != nil || tot != 5 {
		t.Errorf("batch: total %d, %v", tot, err)
	}
	if err := br.Close(); err != nil {
		t.Fatal(err)
	}
	// In a transaction: the same, then rolled back.
	tx, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "INSERT INTO gs_orders (id, customer_id, total) VALUES ($1, $2, 6)", 4, 1); err != nil {
		t.Fatal(err)
	}
	if err := tx.QueryRow(ctx, "SELECT total FROM gs_orders WHERE id = $1", 4).Scan(&tot); err != nil || tot != 6 {
		t.Errorf("transaction: total %d, %v", tot, err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if n := checkLookups(t, p); n != 3 {
		t.Errorf("%d owner rows, want 3", n)
	}
}
