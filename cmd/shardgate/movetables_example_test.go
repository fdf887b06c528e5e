package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/shardgate/shardgate/internal/testenv"
)

// paymentsLoad writes payments through the proxy: each writer inserts
// keys of its own and updates (amount, note, and the shard key
// customer_id) or deletes rows it owns. Every acknowledged statement is
// applied to the oracle; a retryable error (40001, during the switch) is
// retried.
type paymentsLoad struct {
	stop   atomic.Bool
	wg     sync.WaitGroup
	mu     sync.Mutex
	oracle map[int64]string // id -> "customer_id|amount|note"
	ops    atomic.Int64
	err    error
}

func (l *paymentsLoad) start(t *testing.T, dsn string, writers int, initial int64) {
	ctx := context.Background()
	for w := range writers {
		conn := pgxConnect(t, dsn)
		owned := []int64{}
		for id := int64(1); id <= initial; id++ {
			if id%int64(writers) == int64(w) {
				owned = append(owned, id)
			}
		}
		r := rand.New(rand.NewPCG(uint64(w), 7))
		next := int64(1_000_000*(w+1)) + 1
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for i := 0; !l.stop.Load(); i++ {
				var sql string
				var args []any
				var apply func(map[int64]string)
				k := r.IntN(len(owned))
				id := owned[k]
				switch i % 4 {
				case 0:
					cust := 1 + r.Int64N(50)
					sql, args = "INSERT INTO payments (id, customer_id, amount, note) VALUES ($1, $2, 1.50, 'new')", []any{next, cust}
					nid := next
					apply = func(m map[int64]string) { m[nid] = fmt.Sprintf("%d|1.50|new", cust); owned = append(owned, nid) }
					next++
				case 1:
					sql, args = "UPDATE payments SET amount = amount + 1, note = note || '+' WHERE id = $1", []any{id}
					apply = func(m map[int64]string) {
						var c int64
						var a float64
						var n string
						fmt.Sscanf(strings.ReplaceAll(m[id], "|", " "), "%d %f %s", &c, &a, &n)
						m[id] = fmt.Sprintf("%d|%.2f|%s+", c, a+1, n)
					}
				case 2:
					cust := 1 + r.Int64N(50)
					sql, args = "UPDATE payments SET customer_id = $2 WHERE id = $1", []any{id, cust}
					apply = func(m map[int64]string) {
						parts := strings.SplitN(m[id], "|", 2)
						m[id] = fmt.Sprintf("%d|%s", cust, parts[1])
					}
				case 3:
					sql, args = "DELETE FROM payments WHERE id = $1", []any{id}
					apply = func(m map[int64]string) {
						delete(m, id)
						owned[k] = owned[len(owned)-1]
						owned = owned[:len(owned)-1]
					}
				}
				for attempt := 0; ; attempt++ {
					_, err := conn.Exec(ctx, sql, args...)
					var pe *pgconn.PgError
					if errors.As(err, &pe) && pe.Code == "40001" && attempt < 50 {
						time.Sleep(20 * time.Millisecond)
						continue
					}
					if err != nil {
						l.mu.Lock()
						l.err = fmt.Errorf("%s %v: %w", sql, args, err)
						l.mu.Unlock()
						return
					}
					break
				}
				l.mu.Lock()
				apply(l.oracle)
				l.mu.Unlock()
				l.ops.Add(1)
				time.Sleep(2 * time.Millisecond)
			}
		}()
	}
	// Before the connections close (cleanups run last in, first out).
	t.Cleanup(func() { l.stop.Store(true); l.wg.Wait() })
}

func (l *paymentsLoad) finish(t *testing.T) {
	l.stop.Store(true)
	l.wg.Wait()
	if l.err != nil {
		t.Fatal(l.err)
	}
}

// freshDatabases creates one database per cluster name on the shared
// server (dropped, with their slots, when the test ends).
func freshDatabases(t *testing.T, prefix string, clusters ...string) map[string]string {
	pg := testenv.Shared(t).Clusters[0]
	ctx := context.Background()
	dbs := map[string]string{}
	for _, c := range clusters {
		db := prefix + c
		_ = pg.Exec(ctx, "", "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)")
		if err := pg.Exec(ctx, "", "CREATE DATABASE "+db); err != nil {
			t.Fatal(err)
		}
		dbs[c] = db
		t.Cleanup(func() {
			_ = pg.Exec(ctx, "", `SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE database = $1 AND active_pid IS NOT NULL`, db)
			_ = pg.Exec(ctx, "", `SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE database = $1`, db)
			_ = pg.Exec(ctx, "", "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)")
		})
	}
	return dbs
}

// waitStreaming waits until workflow 1 streams.
func waitStreaming(t *testing.T, from string, logs *logBuffer) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		out, _, _ := run("workflow", "status", "1", "--topology", from)
		if strings.Contains(out, ": streaming,") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not streaming:\n%s\n%s", out, logs.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestMoveTablesOnExampleUnderLoad runs the e-commerce example's topology
// (its main group on a database of its own: a source cannot also be a
// target), creates a table of main with rows through the proxy, moves it
// into by_customer with MoveTables while clients write it through the
// proxy (the workflow run by the proxy, `serve --workflows`), checks it
// with vdiff under that load, switches, completes, and compares what the
// clients were acknowledged with what the proxy reads: exact.
func TestMoveTablesOnExampleUnderLoad(t *testing.T) {
	pg := testenv.Shared(t).Clusters[0]
	ctx := context.Background()
	dbs := freshDatabases(t, "exmt_", "main", "pg0", "pg1")
	example, err := os.ReadFile("../../examples/ecommerce/topology.yaml")
	if err != nil {
		t.Fatal(err)
	}
	yaml := string(example)
	for _, r := range [][2]string{
		{`pg0: { dsn: "postgres://postgres@127.0.0.1:5441/shop" }`, fmt.Sprintf("pg0: { dsn: %q }\n  main0: { dsn: %q }", pg.DSN(dbs["pg0"]), pg.DSN(dbs["main"]))},
		{`pg1: { dsn: "postgres://postgres@127.0.0.1:5442/shop" }`, fmt.Sprintf("pg1: { dsn: %q }", pg.DSN(dbs["pg1"]))},
		{"    unsharded: true\n    cluster: pg0\n", "    unsharded: true\n    cluster: main0\n"},
	} {
		if !strings.Contains(yaml, r[0]) {
			t.Fatalf("the example's topology has no %q", r[0])
		}
		yaml = strings.Replace(yaml, r[0], r[1], 1)
	}
	dir := t.TempDir()
	from, to := filepath.Join(dir, "topology.yaml"), filepath.Join(dir, "next.yaml")
	_ = os.WriteFile(from, []byte(yaml), 0o644)
	_ = os.WriteFile(to, []byte(strings.Replace(yaml, "      addresses: {}\n", "      addresses: {}\n      payments: { shard_key_update: move_row }\n", 1)), 0o644)
	if out, errOut, err := run("demo", "load", "--topology", from, "--customers", "50"); err != nil {
		t.Fatalf("demo load: %v\n%s\n%s", err, out, errOut)
	}

	addr, _, logs := serveChild(t, from, "--workflows", "--workflow-poll", "200ms")
	dsn := fmt.Sprintf("postgres://postgres@%s/%s?sslmode=disable", addr, dbs["main"])
	client := pgxConnect(t, dsn)
	const initial = 3000
	if _, err := client.Exec(ctx, `CREATE TABLE payments (id bigint NOT NULL, customer_id bigint NOT NULL, amount numeric(10,2) NOT NULL, note text NOT NULL, PRIMARY KEY (customer_id, id))`); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Exec(ctx, fmt.Sprintf(`INSERT INTO payments SELECT g, 1 + g %% 50, 1.00, 'p' FROM generate_series(1, %d) g`, initial)); err != nil {
		t.Fatal(err)
	}
	load := &paymentsLoad{oracle: map[int64]string{}}
	for id := int64(1); id <= initial; id++ {
		load.oracle[id] = fmt.Sprintf("%d|1.00|p", 1+id%50)
	}
	load.start(t, dsn, 2, initial)

	if out, errOut, err := run("workflow", "create", "movetables", "--topology", from, "--to", to, "--group", "by_customer",
		"--tables", "payments", "--chunk-rows", "500"); err != nil {
		t.Fatalf("create: %v\n%s\n%s", err, out, errOut)
	}
	waitStreaming(t, from, logs)
	// DDL through the proxy on main's table follows the stream onto the
	// shards (docs/workflows.md, DDL during a workflow).
	for _, sql := range []string{"ALTER TABLE payments ADD COLUMN memo text NOT NULL DEFAULT 'm'", "CREATE INDEX payments_memo_idx ON payments (memo)"} {
		if _, err := client.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	time.Sleep(time.Second)
	before := load.ops.Load()
	out, errOut, err := run("workflow", "vdiff", "1", "--topology", from, "--parallel", "2")
	if err != nil || strings.Count(out, "0 missing, 0 extra, 0 mismatched") != 2 || !strings.Contains(out, "public.payments on pg1:") {
		t.Fatalf("vdiff under load: %v\n%s\n%s", err, out, errOut)
	}
	if after := load.ops.Load(); after <= before {
		t.Fatalf("no write during the vdiff (%d, then %d)", before, after)
	}
	t.Logf("vdiff under load (%d writes meanwhile):\n%s", load.ops.Load()-before, out)
	if out, _, err := run("workflow", "vdiff", "1", "--status", "--topology", from); err != nil || !strings.HasPrefix(out, "vdiff done (run 1") ||
		!strings.Contains(out, "sources main0 at ") {
		t.Fatalf("vdiff --status: %v\n%s", err, out)
	}
	if out, _, err := run("workflow", "status", "1", "--topology", from); err != nil || !strings.Contains(out, "last vdiff done at ") ||
		!strings.Contains(out, "2/2 tables x targets compared") {
		t.Fatalf("status: %v\n%s", err, out)
	}

	for _, args := range [][]string{{"workflow", "switch", "1"}, {"workflow", "complete", "1"}} {
		out, errOut, err := run(append(args, "--topology", from)...)
		if err != nil {
			t.Fatalf("%v: %v\n%s\n%s", args, err, out, errOut)
		}
		t.Logf("%s: %s", strings.Join(args, " "), out)
		time.Sleep(time.Second)
	}
	load.finish(t)
	t.Logf("%d writes acknowledged", load.ops.Load())

	// The oracle: every acknowledged write, read back through the proxy.
	rows, err := client.Query(ctx, "SELECT id, customer_id, amount::text, note FROM payments")
	if err != nil {
		t.Fatal(err)
	}
	got := map[int64]string{}
	var id, cust int64
	var amount, note string
	if _, err := pgx.ForEachRow(rows, []any{&id, &cust, &amount, &note}, func() error {
		got[id] = fmt.Sprintf("%d|%s|%s", cust, amount, note)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	bad := 0
	for id, want := range load.oracle {
		if got[id] != want {
			if bad++; bad <= 5 {
				t.Errorf("payment %d: proxy reads %q, clients were acknowledged %q", id, got[id], want)
			}
		}
	}
	if len(got) != len(load.oracle) || bad > 0 {
		t.Fatalf("proxy reads %d payments, the oracle has %d; %d differ", len(got), len(load.oracle), bad)
	}
	// The rows live on by_customer's shards now; main's copy is gone.
	var onShards, onMain int64
	for _, c := range []string{"pg0", "pg1"} {
		conn := pgxConnect(t, pg.DSN(dbs[c]))
		var n, memo int64
		if err := conn.QueryRow(ctx, "SELECT count(*), count(*) FILTER (WHERE memo = 'm') FROM payments").Scan(&n, &memo); err != nil {
			t.Fatal(err)
		}
		var indexed bool
		if err := conn.QueryRow(ctx, "SELECT to_regclass('payments_memo_idx') IS NOT NULL").Scan(&indexed); err != nil || n != memo || !indexed {
			t.Errorf("%s: %d payments, %d with the added column's default, index %v (%v)", c, n, memo, indexed, err)
		}
		onShards += n
	}
	if err := pgxConnect(t, pg.DSN(dbs["main"])).QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE tablename = 'payments'").Scan(&onMain); err != nil {
		t.Fatal(err)
	}
	if onShards != int64(len(load.oracle)) || onMain != 0 {
		t.Fatalf("%d payments on the shards (want %d), %d payments tables on main", onShards, len(load.oracle), onMain)
	}
}
