package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// ddlLoad writes through the proxy: each writer inserts rows with keys of
// its own and updates the one before; every statement is timed.
type ddlLoad struct {
	stop     atomic.Bool
	wg       sync.WaitGroup
	mu       sync.Mutex
	writes   []time.Duration
	inserted int64
	errs     []string
	starts   int64 // each start's writers take keys of their own
}

func (l *ddlLoad) start(t *testing.T, dsn string, writers int) {
	ctx := context.Background()
	l.starts++
	for w := 0; w < writers; w++ {
		conn := pgxConnect(t, dsn)
		base := l.starts*100_000_000 + int64(w+1)*1_000_000
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for i := int64(0); !l.stop.Load(); i++ {
				cust := 1 + (base+i*7919)%1000
				start := time.Now()
				_, err := conn.Exec(ctx, "INSERT INTO orders (id, customer_id) VALUES ($1, $2)", base+i, cust)
				if err == nil && i > 0 {
					_, err = conn.Exec(ctx, "UPDATE orders SET qty = qty + 1 WHERE customer_id = $1 AND id = $2", 1+(base+(i-1)*7919)%1000, base+i-1)
				}
				d := time.Since(start)
				l.mu.Lock()
				if err != nil {
					l.errs = append(l.errs, err.Error())
				} else {
					l.writes = append(l.writes, d)
					l.inserted++
				}
				l.mu.Unlock()
				time.Sleep(2 * time.Millisecond)
			}
		}()
	}
}

// TestDDLFollowsReshardUnderLoad: DDL sent through the proxy on a table
// a reshard 2 -> 4 moves, under a write load through the proxy. During
// the copy (held on one target by a lock, so that it lasts) ADD COLUMN,
// CREATE INDEX and DROP COLUMN are refused at once, naming the workflow,
// instead of waiting behind the copy's snapshot; while streaming they run
// on the serving shards and follow the stream onto the new shards, the
// workflow keeps streaming and vdiff is exact; a RENAME and an ALTER
// COLUMN TYPE are refused before they run. No write fails or waits more
// than a second.
func TestDDLFollowsReshardUnderLoad(t *testing.T) {
	ctx := context.Background()
	// t0's table, empty, is taken by the workflow.
	pg, dbs, from, to := reshardOrders(t, "wfddl_", `CREATE TABLE orders (id bigint NOT NULL, customer_id bigint NOT NULL, qty int NOT NULL DEFAULT 0, note text, PRIMARY KEY (customer_id, id))`, "s0", "s1", "t0")
	// And a reference table: on every shard, copied and streamed from s0.
	for _, c := range []string{"s0", "s1"} {
		if err := pg.Exec(ctx, dbs[c], `CREATE TABLE countries (code text PRIMARY KEY, name text NOT NULL); INSERT INTO countries VALUES ('fr', 'France')`); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{from, to} {
		data, _ := os.ReadFile(f)
		_ = os.WriteFile(f, []byte(strings.Replace(string(data), "    tables: { orders: {} }\n", "    tables: { orders: {} }\n    reference: [countries]\n", 1)), 0o644)
	}

	addr, _, logs := serveChild(t, from, "--workflows", "--workflow-poll", "200ms")
	dsn := fmt.Sprintf("postgres://postgres@%s/%s?sslmode=disable", addr, dbs["main"])
	load := &ddlLoad{}
	load.start(t, dsn, 3)
	defer func() { load.stop.Store(true); load.wg.Wait() }()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		load.mu.Lock()
		n := load.inserted
		load.mu.Unlock()
		if n >= 300 || time.Now().After(deadline) {
			break
		}
	}
	ddl := pgxConnect(t, dsn)
	if _, err := ddl.Exec(ctx, "SET statement_timeout = '10s'"); err != nil {
		t.Fatal(err)
	}
	exec := func(sql string) (time.Duration, error) {
		start := time.Now()
		_, err := ddl.Exec(ctx, sql)
		d := time.Since(start)
		t.Logf("%s: %v in %v", sql, err, d)
		return d, err
	}
	refusedWith := func(sql, want string) {
		t.Helper()
		d, err := exec(sql)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "55000" || !strings.Contains(pe.Message, want) {
			t.Errorf("%s: want 55000 %q, got %v", sql, want, err)
		}
		if d > time.Second {
			t.Errorf("%s: refused after %v", sql, d)
		}
	}

	// Hold the copy: t0's table locked against writes (not reads: create
	// checks it is empty) until the DDL has been tried.
	hold := pgxConnect(t, pg.DSN(dbs["t0"]))
	if _, err := hold.Exec(ctx, "BEGIN; LOCK TABLE orders IN EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	if out, _, err := run("workflow", "create", "reshard", "--topology", from, "--to", to, "--group", "by_customer", "--chunk-rows", "100"); err != nil {
		t.Fatalf("create: %v\n%s", err, out)
	}
	t0 := pgxConnect(t, pg.DSN(dbs["t0"]))
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		var waiting int
		if err := t0.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE NOT granted AND relation = 'orders'::regclass`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			break
		}
		if time.Now().After(deadline) {
			status, _, _ := run("workflow", "status", "1", "--topology", from)
			var act string
			_ = t0.QueryRow(ctx, `SELECT string_agg(datname || ' ' || state || ' ' || coalesce(wait_event, '') || ' ' || left(query, 80), E'\n') FROM pg_stat_activity WHERE datname LIKE 'wfddl_%'`).Scan(&act)
			t.Fatalf("the copy does not reach t0:\n%s\n%s\n%s", status, act, logs)
		}
	}
	for _, sql := range []string{
		"ALTER TABLE orders ADD COLUMN tag text NOT NULL DEFAULT 'new'",
		"CREATE INDEX orders_qty_idx ON orders (qty)",
		"ALTER TABLE orders DROP COLUMN note",
	} {
		refusedWith(sql, `table "orders" is in workflow wf-1 (reshard, copying): `)
	}
	if _, err := hold.Exec(ctx, "COMMIT"); err != nil {
		t.Fatal(err)
	}
	waitStreaming(t, from, logs)

	for _, sql := range []string{
		"ALTER TABLE orders ADD COLUMN tag text NOT NULL DEFAULT 'new'",
		"CREATE INDEX orders_tag_idx ON orders (tag)",
		"UPDATE orders SET tag = 'changed' WHERE customer_id = 7",
		"ALTER TABLE orders DROP COLUMN note",
		// Run on s0 and s1, followed from s0 only: the constraint once.
		"ALTER TABLE countries ADD CONSTRAINT named CHECK (name <> '')",
		"INSERT INTO countries VALUES ('de', 'Germany')",
		"CREATE INDEX orders_gone_idx ON orders (qty)",
		"DROP INDEX IF EXISTS orders_gone_idx", // main, which runs it as written, has no such index
	} {
		if _, err := exec(sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	// The extended protocol's DDL takes the same path.
	if _, err := ddl.PgConn().ExecParams(ctx, "ALTER TABLE orders ALTER COLUMN qty SET DEFAULT 5", nil, nil, nil, nil).Close(); err != nil {
		t.Fatalf("SET DEFAULT (extended protocol): %v", err)
	}
	refusedWith("ALTER TABLE orders DROP COLUMN customer_id", `ALTER TABLE ... DROP COLUMN of shard key column "customer_id" cannot follow the stream`)
	refusedWith("ALTER TABLE orders DROP CONSTRAINT orders_pkey",
		`table "orders" is in workflow wf-1 (reshard, streaming): ALTER TABLE ... DROP CONSTRAINT would take the table's primary key away`)
	s0 := pgxConnect(t, pg.DSN(dbs["s0"]))
	var pkeys int
	if err := s0.QueryRow(ctx, `SELECT count(*) FROM pg_index WHERE indrelid = 'orders'::regclass AND indisprimary`).Scan(&pkeys); err != nil || pkeys != 1 {
		t.Errorf("s0 after the refused DROP CONSTRAINT: %d primary keys, %v", pkeys, err)
	}
	refusedWith("ALTER TABLE orders RENAME COLUMN qty TO quantity",
		`table "orders" is in workflow wf-1 (reshard, streaming): ALTER TABLE ... RENAME cannot follow the stream; complete or cancel it first`)
	refusedWith("ALTER TABLE orders ALTER COLUMN qty TYPE bigint", "ALTER TABLE ... ALTER COLUMN ... TYPE cannot follow the stream")
	time.Sleep(time.Second) // more writes after the DDL
	load.stop.Store(true)
	load.wg.Wait()

	if out, _, err := run("workflow", "vdiff", "1", "--topology", from); err != nil {
		t.Errorf("vdiff: %v\n%s", err, out)
	}
	for _, want := range []string{"follows on 2 target(s): ALTER TABLE orders ADD COLUMN IF NOT EXISTS tag", "target(s): DROP INDEX IF EXISTS orders_gone_idx"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("no %q in the runner's log", want)
		}
	}
	status, _, _ := run("workflow", "status", "1", "--topology", from)
	if !strings.Contains(status, ": streaming,") {
		t.Errorf("status:\n%s\n%s", status, logs)
	}
	var rows int64
	for _, c := range []string{"t0", "t1", "t2", "t3"} {
		conn, err := pgx.Connect(ctx, pg.DSN(dbs[c]))
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		var cols, index string
		err = conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM orders),
			(SELECT string_agg(attname || coalesce(':' || pg_get_expr(adbin, adrelid), ''), ',' ORDER BY attnum) FROM pg_attribute
				LEFT JOIN pg_attrdef ON adrelid = attrelid AND adnum = attnum
				WHERE attrelid = 'orders'::regclass AND attnum > 0 AND NOT attisdropped),
			coalesce((SELECT string_agg(indexname, ',' ORDER BY indexname) FROM pg_indexes WHERE tablename = 'orders'), '')`).Scan(&n, &cols, &index)
		var checks, countries int
		if err == nil {
			err = conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM pg_constraint WHERE conname = 'named' AND conrelid = 'countries'::regclass),
				(SELECT count(*) FROM countries)`).Scan(&checks, &countries)
		}
		conn.Close(ctx)
		if err != nil {
			t.Fatal(err)
		}
		rows += n
		if checks != 1 || countries != 2 {
			t.Errorf("%s: countries has %d constraints named, %d rows", c, checks, countries)
		}
		if cols != "id,customer_id,qty:5,tag:'new'::text" || index != "orders_pkey,orders_tag_idx" {
			t.Errorf("%s: columns %s, indexes %s", c, cols, index)
		}
	}
	load.mu.Lock()
	inserted, before := load.inserted, len(load.writes)
	load.mu.Unlock()
	if rows != inserted {
		t.Errorf("the new shards hold %d rows, clients inserted %d", rows, inserted)
	}

	// Switched: the DDL runs on the new shards and the stream back, where
	// s0 and s1 each take rows from two of them (a merge), follows what
	// widens the table and refuses what narrows it.
	load.stop.Store(false)
	load.start(t, dsn, 3)
	if out, errOut, err := run("workflow", "switch", "1", "--topology", from); err != nil {
		t.Fatalf("switch: %v\n%s\n%s", err, out, errOut)
	}
	if _, err := exec("ALTER TABLE orders ADD COLUMN extra int"); err != nil {
		t.Fatal(err)
	}
	if _, err := exec("UPDATE orders SET extra = 1 WHERE customer_id = 7"); err != nil {
		t.Fatal(err)
	}
	refusedWith("ALTER TABLE orders DROP COLUMN tag", "target cluster s0 takes the table's rows from several sources")
	time.Sleep(time.Second)
	load.stop.Store(true)
	load.wg.Wait()
	if out, _, err := run("workflow", "vdiff", "1", "--topology", from); err != nil {
		t.Errorf("vdiff after the switch: %v\n%s", err, out)
	}
	rows = 0
	var extra int64
	for _, c := range []string{"s0", "s1"} {
		conn, err := pgx.Connect(ctx, pg.DSN(dbs[c]))
		if err != nil {
			t.Fatal(err)
		}
		var n, e int64
		err = conn.QueryRow(ctx, `SELECT count(*), count(extra) FROM orders`).Scan(&n, &e)
		conn.Close(ctx)
		if err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		rows, extra = rows+n, extra+e
	}
	load.mu.Lock()
	defer load.mu.Unlock()
	if rows != load.inserted {
		t.Errorf("the old shards hold %d rows (the stream back), clients inserted %d", rows, load.inserted)
	}
	if extra == 0 {
		t.Error("the stream back did not carry the added column's values")
	}
	if len(load.errs) > 0 {
		t.Errorf("%d client errors, first: %s", len(load.errs), load.errs[0])
	}
	// The switch's own pause is bounded by its hold (5 s) and measured
	// by bench/; the DDL's writes, before it, by a second.
	p50, p99, mx := percentiles(load.writes[:before])
	t.Logf("%d writes around the DDL: p50 %v p99 %v max %v", before, p50, p99, mx)
	if mx > time.Second {
		t.Errorf("a write waited %v", mx)
	}
	p50, p99, mx = percentiles(load.writes[before:])
	t.Logf("%d writes around the switch and the DDL after it: p50 %v p99 %v max %v", len(load.writes)-before, p50, p99, mx)
	if mx > 5*time.Second {
		t.Errorf("a write waited %v", mx)
	}
}
