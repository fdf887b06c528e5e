package proxy

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// interJoin joins two groups on a non-key column: the proxy computes it on
// the coordinator (pg0) over intermediate results. Pulls in order:
// customers from pg0 (INSERT ... SELECT on the coordinator) and pg1 (binary
// COPY), then products from pg0 and pg1.
const interJoin = "SELECT count(*) FROM customers c JOIN products p ON p.name = c.name"

// startInter starts a proxy with pool size 1 and the given
// proxy.intermediate section over the shop tables, loaded with 100
// customers and 100 products of the same names.
func startInter(t *testing.T, limits string) (*testProxy, *pgx.Conn) {
	t.Helper()
	extra := ""
	if limits != "" {
		extra = "proxy:\n  intermediate: { " + limits + " }\n"
	}
	p := startProxy(t, shopTopology(extra), func(c *Config) { c.PoolSize = 1 })
	c := setupShop(t, p)
	var vals, prods []string
	for id := 1; id <= 100; id++ {
		vals = append(vals, fmt.Sprintf("(%d, 'n%d')", id, id))
		prods = append(prods, fmt.Sprintf("('s%d', 'n%d')", id, id))
	}
	mustExec(t, c, "INSERT INTO customers (id, name) VALUES "+strings.Join(vals, ", "))
	mustExec(t, c, "INSERT INTO products (sku, name) VALUES "+strings.Join(prods, ", "))
	return p, c
}

// clusterCount runs a count on a cluster's shop database directly.
func clusterCount(t *testing.T, cluster int, sql string) int {
	t.Helper()
	c, err := env.Clusters[cluster].Conn(context.Background(), "shop")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	var n int
	if err := c.QueryRow(context.Background(), sql).Scan(&n); err != nil {
		t.Fatalf("%s on pg%d: %v", sql, cluster, err)
	}
	return n
}

// tempPulls counts the temporary tables of intermediate results any
// session holds on the coordinator.
func tempPulls(t *testing.T) int {
	return clusterCount(t, 0, `SELECT count(*) FROM pg_class WHERE relpersistence = 't' AND relname LIKE '\_sg\_pull\_%'`)
}

// checkCarriesOn checks that the session answers the next statements, in
// both protocols, that no temporary table is left and that no backend
// connection stays leased outside a transaction.
func checkCarriesOn(t *testing.T, p *testProxy, c *pgx.Conn, what string) {
	t.Helper()
	ctx := context.Background()
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
		var n int
		if err := c.QueryRow(ctx, "SELECT count(*) FROM customers", mode).Scan(&n); err != nil || n != 100 {
			t.Fatalf("%s: next statement (%v): %d %v", what, mode, n, err)
		}
	}
	if n := tempPulls(t); n != 0 {
		t.Errorf("%s: %d temporary tables left on the coordinator", what, n)
	}
	for name, st := range poolStats(p.srv) {
		if st[0] != st[1] {
			t.Errorf("%s: cluster %s has %d connections open, %d idle", what, name, st[0], st[1])
		}
	}
}

// wantLimit checks err is the 54000 refusal naming key.
func wantLimit(t *testing.T, what string, err error, key string) {
	t.Helper()
	if sqlstate(err) != "54000" || !strings.Contains(err.Error(), "proxy.intermediate."+key) {
		t.Fatalf("%s: want 54000 naming proxy.intermediate.%s, got %v", what, key, err)
	}
}

func TestIntermediateLimits(t *testing.T) {
	ctx := context.Background()
	// Without a limit in reach the join answers.
	p, c := startInter(t, "")
	var n int
	if err := c.QueryRow(ctx, interJoin).Scan(&n); err != nil || n != 100 {
		t.Fatalf("join: %d %v", n, err)
	}
	checkCarriesOn(t, p, c, "unlimited")
	local := clusterCount(t, 0, "SELECT count(*) FROM customers")
	cases := []struct {
		name, limits, key string
	}{
		// The coordinator's own rows (INSERT ... SELECT) pass max_rows.
		{"rows_local", "max_rows: 10", "max_rows"},
		// The rows copied from pg1 pass it.
		{"rows_copy", fmt.Sprintf("max_rows: %d", local+3), "max_rows"},
		{"bytes_copy", "max_bytes: 64", "max_bytes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, c := startInter(t, tc.limits)
			for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
				what := fmt.Sprintf("%s %v", tc.name, mode)
				var n int
				wantLimit(t, what, c.QueryRow(ctx, interJoin, mode).Scan(&n), tc.key)
				checkCarriesOn(t, p, c, what)
				// Inside a transaction block the error aborts it, as any
				// error does; after ROLLBACK the session goes on.
				tx, err := c.Begin(ctx)
				if err != nil {
					t.Fatal(err)
				}
				wantLimit(t, what+" in tx", tx.QueryRow(ctx, interJoin, mode).Scan(&n), tc.key)
				if err := tx.QueryRow(ctx, "SELECT 1", mode).Scan(&n); sqlstate(err) != "25P02" {
					t.Fatalf("%s: after the error in tx: %v", what, err)
				}
				if err := tx.Rollback(ctx); err != nil {
					t.Fatal(err)
				}
				checkCarriesOn(t, p, c, what+" after tx")
			}
		})
	}
}

// TestIntermediateLimitCancels checks that a pull beyond the limit stops the
// source cluster's query (cancelled, not read to its end) and aborts the
// COPY on the coordinator.
func TestIntermediateLimitCancels(t *testing.T) {
	ctx := context.Background()
	p, c := startInter(t, "max_bytes: 100000")
	// Many rows in pg1's products: read to the end they would take seconds.
	if err := env.Clusters[1].Exec(ctx, "shop", "INSERT INTO products SELECT 'x' || g, 'big' || g FROM generate_series(1, 1000000) g"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Clusters[1].Exec(ctx, "shop", "DELETE FROM products WHERE name LIKE 'big%'") })
	log := env.Clusters[1].LogFile
	before, err := os.Stat(log)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	start := time.Now()
	wantLimit(t, "big pull", c.QueryRow(ctx, interJoin).Scan(&n), "max_bytes")
	t.Logf("refused after %v", time.Since(start))
	checkCarriesOn(t, p, c, "big pull")
	var text string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		b, err := os.ReadFile(log)
		if err != nil {
			t.Fatal(err)
		}
		if text = string(b[before.Size():]); strings.Contains(text, "canceling statement due to user request") {
			return
		}
	}
	t.Fatalf("pg1 did not cancel the pull; its log since:\n%s", text)
}

// interSetting is interJoin with a setting of the session read on the
// coordinator.
const interSetting = "SELECT current_setting('application_name'), current_setting('work_mem'), count(*) FROM customers c JOIN products p ON p.name = c.name"

// TestIntermediateIsolation runs reads over intermediate results from two
// clients over one backend connection per cluster (pool size 1), taking
// turns, in and out of transactions: neither sees the other's settings,
// rows or temporary tables.
func TestIntermediateIsolation(t *testing.T) {
	ctx := context.Background()
	p, _ := startInter(t, "")
	names := []string{"alice", "bob"}
	clients := map[string]*pgx.Conn{}
	for _, name := range names {
		c := connect(t, p.dsn())
		mustExec(t, c, "SET application_name = '"+name+"'")
		clients[name] = c
	}
	check := func(name, what string, mode pgx.QueryExecMode, q interface {
		QueryRow(context.Context, string, ...any) pgx.Row
	}, work string, want int) {
		t.Helper()
		var app, wm string
		var n int
		err := q.QueryRow(ctx, interSetting, mode).Scan(&app, &wm, &n)
		if err != nil || app != name || wm != work || n != want {
			t.Fatalf("%s %s (%v): got %q %q %d %v, want %q %q %d", name, what, mode, app, wm, n, err, name, work, want)
		}
	}
	for i := 0; i < 8; i++ {
		name, other := names[i%2], names[(i+1)%2]
		c := clients[name]
		mode := []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement}[(i/2)%2]
		check(name, "outside", mode, c, "4MB", 100)
		tx, err := c.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// A write of the transaction (one cluster) is seen by its reads;
		// SET LOCAL stays inside it.
		commit, match, want := i%4 == 0, "n1", 101
		if commit {
			match, want = "nomatch", 100 // committed, it changes no count
		}
		id := 1000 + i
		if _, err := tx.Exec(ctx, fmt.Sprintf("INSERT INTO customers (id, name) VALUES (%d, '%s')", id, match)); err != nil {
			t.Fatal(err)
		}
		mustExec(t, c, "SET LOCAL work_mem = '1234kB'")
		check(name, "in tx", mode, tx, "1234kB", want)
		check(name, "in tx again", mode, tx, "1234kB", want)
		end := tx.Rollback
		if commit {
			end = tx.Commit
		}
		if err := end(ctx); err != nil {
			t.Fatalf("%s: end of tx %d: %v", name, i, err)
		}
		check(other, "after the other's tx", mode, clients[other], "4MB", 100)
		check(name, "after tx", mode, c, "4MB", 100)
		if n := tempPulls(t); n != 0 {
			t.Fatalf("step %d: %d temporary tables left on the coordinator", i, n)
		}
	}
}

// TestIntermediateTwoPhase checks that a transaction that reads over
// intermediate results and writes on the coordinator's cluster and another
// one is refused at the statement that would make it so, never at COMMIT
// (Postgres cannot PREPARE TRANSACTION after touching temporary tables).
func TestIntermediateTwoPhase(t *testing.T) {
	ctx := context.Background()
	_, c := startInter(t, "")
	// A customer on pg1: its update writes there only.
	onPg1 := clusterCount(t, 1, "SELECT min(id) FROM customers")
	writeMain := "INSERT INTO settings (k, v) VALUES ('k', 'v') ON CONFLICT (k) DO UPDATE SET v = excluded.v || 'x'"
	writePg1 := fmt.Sprintf("UPDATE customers SET name = name WHERE id = %d", onPg1)
	read := func(tx pgx.Tx, mode pgx.QueryExecMode) error {
		var n int
		return tx.QueryRow(ctx, interJoin, mode).Scan(&n)
	}
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
		steps := []struct {
			name   string
			stmts  []string // "read" is interJoin
			refuse int      // index of the statement refused (-1: none; COMMIT works)
		}{
			{"writes then read", []string{writeMain, writePg1, "read"}, 2},
			{"read then writes", []string{"read", writeMain, writePg1}, 2},
			{"read then writes, other order", []string{"read", writePg1, writeMain}, 2},
			{"coordinator written alone", []string{writeMain, "read", writeMain, "read"}, -1},
			{"other cluster written alone", []string{"read", writePg1, "read"}, -1},
		}
		for _, st := range steps {
			what := fmt.Sprintf("%s (%v)", st.name, mode)
			tx, err := c.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range st.stmts {
				if s == "read" {
					err = read(tx, mode)
				} else {
					_, err = tx.Exec(ctx, s, mode)
				}
				if i == st.refuse {
					if sqlstate(err) != "0A000" || !strings.Contains(err.Error(), "intermediate results") {
						t.Fatalf("%s: statement %d: want 0A000 about intermediate results, got %v", what, i, err)
					}
					break
				}
				if err != nil {
					t.Fatalf("%s: statement %d: %v", what, i, err)
				}
			}
			if st.refuse >= 0 {
				if err := tx.Rollback(ctx); err != nil {
					t.Fatalf("%s: rollback: %v", what, err)
				}
			} else if err := tx.Commit(ctx); err != nil {
				t.Fatalf("%s: commit: %v", what, err)
			}
			if n := tempPulls(t); n != 0 {
				t.Fatalf("%s: %d temporary tables left", what, n)
			}
		}
	}
	// Outside a transaction block the read and the writes go on.
	mustExec(t, c, writeMain)
	mustExec(t, c, writePg1)
	var n int
	if err := c.QueryRow(ctx, interJoin).Scan(&n); err != nil || n != 100 {
		t.Fatalf("after: %d %v", n, err)
	}
}
