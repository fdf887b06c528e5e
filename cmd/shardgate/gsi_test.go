package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/shardgate/shardgate/gsi"
	"github.com/shardgate/shardgate/internal/proxytest"
	"github.com/shardgate/shardgate/internal/testenv"
	"github.com/shardgate/shardgate/proxy"
	"github.com/shardgate/shardgate/routestate"
)

// gsiFixture is a main database and two shard databases on the shared
// server, with gb_orders (customer_id, id) sharded by customer_id and rows
// orders in it, written through a proxy that has no index yet. The
// returned file declares gb_orders_by_id (unique, on id) and
// gb_orders_by_note (non-unique, on note), both backfilling, plus extra.
type gsiFixture struct {
	t    *testing.T
	dbs  map[string]string
	file string
	base string                      // the topology without the indexes
	pg   map[string]*testenv.Cluster // s1 on a server of its own: two-phase commit ids are per server
}

func newGSIFixture(t *testing.T, prefix string, rows int, extra string) *gsiFixture {
	// extra: more secondary indexes of by_customer, then other sections.
	t.Helper()
	env := testenv.Shared(t)
	f := &gsiFixture{t: t, dbs: map[string]string{},
		pg: map[string]*testenv.Cluster{"main": env.Clusters[0], "s0": env.Clusters[0], "s1": env.Clusters[1]}}
	ctx := context.Background()
	for _, c := range []string{"main", "s0", "s1"} {
		db, pg := prefix+"_"+c, f.pg[c]
		_ = pg.Exec(ctx, "", "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)")
		if err := pg.Exec(ctx, "", "CREATE DATABASE "+db); err != nil {
			t.Fatal(err)
		}
		f.dbs[c] = db
		t.Cleanup(func() { _ = pg.Exec(ctx, "", "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)") })
	}
	base := "version: 1\nclusters:\n"
	for _, c := range []string{"main", "s0", "s1"} {
		base += fmt.Sprintf("  %s: { dsn: %q }\n", c, f.pg[c].DSN(f.dbs[c]))
	}
	base += "groups:\n  main: { unsharded: true, cluster: main }\n  by_customer:\n" +
		"    index: { name: by_customer, column: customer_id, type: bigint, function: xxhash }\n" +
		"    shards: { \"-80\": s0, \"80-\": s1 }\n    tables: { gb_orders: {} }\n"
	f.base = base
	before := f.proxy(base, false)
	c := proxytest.Connect(t, before)
	exec1(t, c, "CREATE TABLE gb_orders (id bigint NOT NULL, customer_id bigint NOT NULL, note text, email text, PRIMARY KEY (customer_id, id))")
	var vals []string
	for g := 1; g <= rows; g++ {
		vals = append(vals, fmt.Sprintf("(%d, %d, 'n%d', 'e%d')", g, g%997, g%50, g))
		if len(vals) == 1000 || g == rows {
			exec1(t, c, "INSERT INTO gb_orders (id, customer_id, note, email) VALUES "+strings.Join(vals, ", "))
			vals = vals[:0]
		}
	}
	// The proxy answers a commit once it is decided; the prepared
	// transactions finish just after.
	for _, cl := range []string{"s0", "s1"} {
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			var n int
			if err := f.conn(cl).QueryRow(ctx, "SELECT count(*) FROM pg_prepared_xacts WHERE database = current_database()").Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d prepared transactions left", cl, n)
			}
		}
	}
	yaml := base + "    secondary_indexes:\n" +
		"      gb_orders_by_id: { table: gb_orders, column: id, type: bigint, unique: true }\n" +
		"      gb_orders_by_note: { table: gb_orders, column: note, type: text, ignore_nulls: true }\n" + extra
	f.file = filepath.Join(t.TempDir(), "topology.yaml")
	if err := os.WriteFile(f.file, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// proxy serves a topology (YAML text) until the test ends; the client DSN.
// follow: it follows main's routing revisions, as serve does.
func (f *gsiFixture) proxy(yaml string, follow bool) string {
	_, dsn := f.serve(yaml, follow)
	return dsn
}

// serve is proxy, with the server.
func (f *gsiFixture) serve(yaml string, follow bool) (*proxy.Server, string) {
	topo := proxytest.Parse(f.t, yaml)
	cfg, err := proxyConfig(topo)
	if err != nil {
		f.t.Fatal(err)
	}
	cfg.Logger = proxytest.Logger()
	cfg.Gate = routestate.NewGate()
	srv, err := proxy.NewServer(cfg, topo)
	if err != nil {
		f.t.Fatal(err)
	}
	addr := proxytest.Serve(f.t, srv)
	if !follow {
		return srv, proxytest.DSN(addr, "app", f.dbs["main"])
	}
	ctx, cancel := context.WithCancel(context.Background())
	fol, err := routestate.Follow(ctx, topo.Cluster("main").DSN, addr, topo, cfg.Gate, srv.Reload, proxytest.Logger())
	if err != nil {
		cancel()
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { cancel(); <-fol.Done() })
	return srv, proxytest.DSN(addr, "app", f.dbs["main"])
}

func (f *gsiFixture) conn(cluster string) *pgx.Conn {
	return proxytest.Connect(f.t, f.pg[cluster].DSN(f.dbs[cluster]))
}

func exec1(t *testing.T, c *pgx.Conn, sql string, args ...any) {
	t.Helper()
	if _, err := c.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// checkExact fails unless each lookup table holds exactly the projection
// of gb_orders: every entry on the shard database its value maps to.
func (f *gsiFixture) checkExact(index string) {
	f.t.Helper()
	b, err := gsi.Open(context.Background(), proxytest.Parse(f.t, readFile(f.t, f.file)), index, false, gsi.Options{})
	if err != nil {
		f.t.Fatal(err)
	}
	defer b.Close()
	res, err := b.Verify(context.Background(), false)
	if err != nil {
		f.t.Fatal(err)
	}
	for _, r := range res {
		if r.Entries != r.Expected || r.Checksum != r.ExpectedChecksum || !r.Clean() {
			f.t.Errorf("%s on %s: %d entries (checksum %x), %d expected (%x): %+v", index, r.Cluster, r.Entries, r.Checksum, r.Expected, r.ExpectedChecksum, r.Diffs)
		}
	}
}

func readFile(t *testing.T, path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// load writes through the proxy until stop is closed: inserts of new
// orders, deletes, updates of id (unique index) and note (non-unique).
// Serialization failures and deadlocks are retried by moving on.
func load(t *testing.T, dsn string, workers, rows int, stop chan struct{}) (wait func() int) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	done := 0
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := pgx.Connect(context.Background(), dsn)
			if err != nil {
				firstErr = err
				return
			}
			defer c.Close(context.Background())
			r := rand.New(rand.NewPCG(uint64(w), 7))
			next := int64(10_000_000 + w*1_000_000)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id := 1 + r.Int64N(int64(rows))
				var sql string
				switch i % 5 {
				case 0, 1:
					next++
					sql = fmt.Sprintf("INSERT INTO gb_orders (id, customer_id, note, email) VALUES (%d, %d, 'w%d', 'x%d')", next, r.Int64N(997), r.IntN(20), next)
				case 2:
					sql = fmt.Sprintf("DELETE FROM gb_orders WHERE customer_id = %d AND id = %d", id%997, id)
				case 3:
					next++
					sql = fmt.Sprintf("UPDATE gb_orders SET id = %d WHERE customer_id = %d AND id = %d", next, id%997, id)
				case 4:
					sql = fmt.Sprintf("UPDATE gb_orders SET note = 'u%d' WHERE customer_id = %d AND id = %d", r.IntN(30), id%997, id)
				}
				_, err := c.Exec(context.Background(), sql)
				var pe *pgconn.PgError
				if err != nil && !(errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01")) {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("%s: %w", sql, err)
					}
					mu.Unlock()
					return
				}
				mu.Lock()
				done++
				mu.Unlock()
			}
		}()
	}
	return func() int {
		wg.Wait()
		if firstErr != nil {
			t.Fatal(firstErr)
		}
		return done
	}
}

// TestGSIBackfillUnderLoad: both indexes back-filled (small batches) while
// four clients insert, delete and update the indexed columns through the
// proxy; afterwards each lookup table is exactly the owner's projection.
func TestGSIBackfillUnderLoad(t *testing.T) {
	f := newGSIFixture(t, "gbload", 12000, "")
	topo := proxytest.Parse(t, readFile(t, f.file))
	ctx := context.Background()
	// The backfill creates the lookup tables; writes of the new proxy
	// maintain them from then on.
	for _, name := range []string{"gb_orders_by_id", "gb_orders_by_note"} {
		b, err := gsi.Open(ctx, topo, name, false, gsi.Options{})
		if err != nil {
			t.Fatal(err)
		}
		b.Close()
	}
	dsn := f.proxy(readFile(t, f.file), false)
	// A row written before the index has no entry yet: deleting it, or
	// changing its indexed values, finds nothing to remove (and must not
	// fail for that).
	c := proxytest.Connect(t, dsn)
	exec1(t, c, "DELETE FROM gb_orders WHERE customer_id = 5 AND id = 5")
	exec1(t, c, "UPDATE gb_orders SET id = 99999999, note = 'moved' WHERE customer_id = 6 AND id = 6")
	stop := make(chan struct{})
	wait := load(t, dsn, 4, 12000, stop)
	time.Sleep(300 * time.Millisecond)
	for _, name := range []string{"gb_orders_by_id", "gb_orders_by_note"} {
		b, err := gsi.Open(ctx, topo, name, true, gsi.Options{BatchRows: 400, Logf: t.Logf})
		if err != nil {
			t.Fatal(err)
		}
		err = b.Run(ctx)
		st, _ := gsi.Status(ctx, b.Main(), name)
		b.Close()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if p := gsi.IndexPhase(st); p != gsi.PhaseVerified {
			t.Fatalf("%s: phase %s", name, p)
		}
	}
	time.Sleep(300 * time.Millisecond)
	close(stop)
	n := wait()
	t.Logf("%d writes through the proxy during the backfills", n)
	if n < 100 {
		t.Fatalf("only %d writes ran", n)
	}
	f.checkExact("gb_orders_by_id")
	f.checkExact("gb_orders_by_note")
}

// TestGSIBackfillResumesAfterKill9: `gsi backfill` as a child process is
// SIGKILLed mid-run; the next run finishes it with no batch written twice
// to any lookup database (its batch counters) and exact entries.
func TestGSIBackfillResumesAfterKill9(t *testing.T) {
	const rows, batch = 20000, 250
	f := newGSIFixture(t, "gbkill", rows, "")
	ctx := context.Background()
	main := f.conn("main")
	start := func() *exec.Cmd {
		cmd := exec.Command(os.Args[0], "gsi", "backfill", "gb_orders_by_id", "--topology", f.file, "--batch-rows", fmt.Sprint(batch))
		cmd.Env = append(os.Environ(), runMainEnv+"=1")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	child := start()
	var batches int64
	for deadline := time.Now().Add(time.Minute); batches < 10; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no progress")
		}
		_ = main.QueryRow(ctx, "SELECT coalesce(sum(batches), 0) FROM shardgate.gsi_backfills WHERE index_name = 'gb_orders_by_id'").Scan(&batches)
	}
	_ = child.Process.Signal(syscall.SIGKILL)
	_ = child.Wait()
	var phase string
	if err := main.QueryRow(ctx, "SELECT string_agg(phase, ',') FROM shardgate.gsi_backfills WHERE index_name = 'gb_orders_by_id'").Scan(&phase); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(phase, "verified") {
		t.Fatalf("finished before the kill: %s", phase)
	}
	t.Logf("killed after %d batches, phases %s", batches, phase)
	child = start()
	if err := child.Wait(); err != nil {
		t.Fatalf("resumed run: %v", err)
	}
	out, _, err := run("gsi", "status", "gb_orders_by_id", "--topology", f.file)
	if err != nil || !strings.HasPrefix(out, "gb_orders_by_id: active\n") {
		t.Fatalf("status: %v\n%s", err, out)
	}
	// Active: a routing revision, written back into the file.
	rev, err := routestate.Load(ctx, main)
	if err != nil || rev.State.GSI["gb_orders_by_id"] != routestate.GSIActive {
		t.Fatalf("revision %+v %v", rev, err)
	}
	if !strings.Contains(readFile(t, f.file), "gb_orders_by_id: {table: gb_orders, column: id, type: bigint, unique: true, state: active}") {
		t.Fatalf("file not written back:\n%s", readFile(t, f.file))
	}
	// Each lookup database committed each batch of each owner once.
	for _, owner := range []string{"s0", "s1"} {
		var n int64
		if err := f.conn(owner).QueryRow(ctx, "SELECT count(*) FROM gb_orders").Scan(&n); err != nil {
			t.Fatal(err)
		}
		want := (n + batch - 1) / batch
		for _, l := range []string{"s0", "s1"} {
			var got, gotRows int64
			if err := f.conn(l).QueryRow(ctx, "SELECT batches, rows FROM shardgate.gsi_backfill_target WHERE index_name = 'gb_orders_by_id' AND owner = $1", owner).Scan(&got, &gotRows); err != nil {
				t.Fatal(err)
			}
			if got != want || gotRows != n {
				t.Errorf("lookup %s, owner %s: %d batches of %d rows, want %d of %d", l, owner, got, gotRows, want, n)
			}
		}
		var done, mb int64
		if err := main.QueryRow(ctx, "SELECT rows_done, batches FROM shardgate.gsi_backfills WHERE index_name = 'gb_orders_by_id' AND owner = $1", owner).Scan(&done, &mb); err != nil {
			t.Fatal(err)
		}
		if done != n || mb != want {
			t.Errorf("main, owner %s: %d rows in %d batches, want %d in %d", owner, done, mb, n, want)
		}
	}
	f.checkExact("gb_orders_by_id")
}

// TestGSIBackfillReportsDuplicates: a unique index over a column whose
// rows repeat a value on two shards stops in phase duplicates, naming it,
// and is not verified.
func TestGSIBackfillReportsDuplicates(t *testing.T) {
	f := newGSIFixture(t, "gbdup", 3000, "      gb_orders_by_email: { table: gb_orders, column: email, type: text, unique: true }\n")
	ctx := context.Background()
	// Rows 1 and 2 are on different customers; give them one email (on
	// their shard databases directly: the index is not there yet).
	for _, c := range []string{"s0", "s1"} {
		exec1(t, f.conn(c), "UPDATE gb_orders SET email = 'dup@example.com' WHERE id IN (1, 2)")
	}
	out, _, err := run("gsi", "backfill", "gb_orders_by_email", "--topology", f.file, "--batch-rows", "500")
	if err == nil || !strings.Contains(err.Error(), "repeat values") || !strings.Contains(out, "gb_orders_by_email: duplicates") ||
		!strings.Contains(out, "dup@example.com") {
		t.Fatalf("backfill: %v\n%s", err, out)
	}
	var pe interface{ SQLState() string }
	if !errors.As(err, &pe) || pe.SQLState() != "23505" {
		t.Fatalf("error %v is not a 23505", err)
	}
	var phases string
	if err := f.conn("main").QueryRow(ctx, "SELECT string_agg(DISTINCT phase, ',') FROM shardgate.gsi_backfills WHERE index_name = 'gb_orders_by_email'").Scan(&phases); err != nil {
		t.Fatal(err)
	}
	if phases != gsi.PhaseDuplicates {
		t.Fatalf("phases %q", phases)
	}
	// Fixed, the next run verifies it.
	exec1(t, f.conn("s0"), "UPDATE gb_orders SET email = 'e' || id WHERE id IN (1, 2)")
	exec1(t, f.conn("s1"), "UPDATE gb_orders SET email = 'e' || id WHERE id IN (1, 2)")
	if out, _, err := run("gsi", "backfill", "gb_orders_by_email", "--topology", f.file); err == nil {
		// The entry of the row fixed by hand (not through the proxy) is
		// now wrong: the verify of the backfill repairs it.
		if !strings.HasPrefix(out, "gb_orders_by_email: active") {
			t.Fatalf("second run: %s", out)
		}
	} else {
		t.Fatalf("second run: %v %s", err, out)
	}
	f.checkExact("gb_orders_by_email")
}

// TestGSIVerifyRepair: verify finds planted missing, extra and wrong
// entries in both indexes (exit 1, counts, samples); --repair fixes them.
func TestGSIVerifyRepair(t *testing.T) {
	f := newGSIFixture(t, "gbverify", 2000, "")
	for _, name := range []string{"gb_orders_by_id", "gb_orders_by_note"} {
		if out, _, err := run("gsi", "backfill", name, "--topology", f.file); err != nil {
			t.Fatalf("backfill %s: %v\n%s", name, err, out)
		}
	}
	out, _, err := run("gsi", "verify", "gb_orders_by_id", "--topology", f.file)
	if err != nil || strings.Count(out, "0 missing, 0 extra, 0 wrong, 0 duplicate") != 2 {
		t.Fatalf("clean verify: %v\n%s", err, out)
	}
	for _, c := range []string{"s0", "s1"} {
		d := f.conn(c)
		// One of each per database: a missing entry, an extra one, one
		// naming the wrong customer, and for the non-unique index a wrong
		// count and an extra pair.
		exec1(t, d, "DELETE FROM gb_orders_by_id WHERE id = (SELECT min(id) FROM gb_orders_by_id)")
		exec1(t, d, "UPDATE gb_orders_by_id SET customer_id = customer_id + 1 WHERE id = (SELECT max(id) FROM gb_orders_by_id)")
		exec1(t, d, "UPDATE gb_orders_by_note SET n = n + 5 WHERE (note, customer_id) = (SELECT note, customer_id FROM gb_orders_by_note ORDER BY 1, 2 LIMIT 1)")
		exec1(t, d, "INSERT INTO gb_orders_by_note VALUES ('nowhere', 1, 1)")
	}
	// An extra id: on the database its value maps to or not, it is extra.
	exec1(t, f.conn("s0"), "INSERT INTO gb_orders_by_id VALUES (999999999, 5)")
	out, _, err = run("gsi", "verify", "gb_orders_by_id", "--topology", f.file)
	if err == nil || exitCode(err) != 1 {
		t.Fatalf("verify with differences: %v\n%s", err, out)
	}
	var missing, extra, wrong int
	for _, line := range strings.Split(out, "\n") {
		var name, cl string
		var e, x, m, xt, w, d int
		if n, _ := fmt.Sscanf(line, "%s on %s %d entries, %d expected, %d missing, %d extra, %d wrong, %d duplicate", &name, &cl, &e, &x, &m, &xt, &w, &d); n == 8 {
			missing, extra, wrong = missing+m, extra+xt, wrong+w
		}
	}
	if missing != 2 || extra != 1 || wrong != 2 || !strings.Contains(out, "missing ") || !strings.Contains(out, "extra 999999999") {
		t.Fatalf("verify: %d missing, %d extra, %d wrong\n%s", missing, extra, wrong, out)
	}
	out, _, err = run("gsi", "verify", "gb_orders_by_note", "--topology", f.file)
	if err == nil || !strings.Contains(out, "extra nowhere") || !strings.Contains(out, "wrong n") {
		t.Fatalf("verify note: %v\n%s", err, out)
	}
	for _, name := range []string{"gb_orders_by_id", "gb_orders_by_note"} {
		if out, _, err := run("gsi", "verify", name, "--topology", f.file, "--repair"); err != nil || !strings.Contains(out, "(repaired)") {
			t.Fatalf("repair %s: %v\n%s", name, err, out)
		}
		if out, _, err := run("gsi", "verify", name, "--topology", f.file); err != nil {
			t.Fatalf("after repair %s: %v\n%s", name, err, out)
		}
		f.checkExact(name)
	}
}

// TestGSIAdminBackfill: the admin console's GSI BACKFILL runs the backfill
// in the proxy's background; SHOW GSI follows it to active (an unknown
// index is refused), and the proxy then reads by id through the index.
func TestGSIAdminBackfill(t *testing.T) {
	users := "proxy:\n  auth:\n    users:\n      app: { password: x }\n      boss: { password: x, admin: true }\n"
	f := newGSIFixture(t, "gbadmin", 6000, users)
	dsn := f.proxy(readFile(t, f.file), true)
	adminDSN := strings.Replace(strings.Replace(dsn, "app@", "boss:x@", 1), "/"+f.dbs["main"]+"?", "/shardgate?", 1)
	ctx := context.Background()
	c := proxytest.Connect(t, adminDSN)
	if _, err := c.Exec(ctx, "GSI BACKFILL nosuch", pgx.QueryExecModeSimpleProtocol); err == nil || !strings.Contains(err.Error(), "42704") {
		t.Fatalf("unknown index: %v", err)
	}
	if _, err := c.Exec(ctx, "GSI BACKFILL gb_orders_by_id", pgx.QueryExecModeSimpleProtocol); err != nil {
		t.Fatal(err)
	}
	var phase, done, total string
	for deadline := time.Now().Add(time.Minute); phase != gsi.PhaseActive; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("phase %q after a minute", phase)
		}
		rows, err := c.Query(ctx, "SHOW GSI", pgx.QueryExecModeSimpleProtocol)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			v, err := rows.Values()
			if err != nil {
				t.Fatal(err)
			}
			if v[1] == "gb_orders_by_id" && v[7] != nil {
				phase, done, total = v[7].(string), v[8].(string), v[9].(string)
			}
		}
		if rows.Err() != nil {
			t.Fatal(rows.Err())
		}
	}
	if done != "6000" || total != "6000" {
		t.Fatalf("SHOW GSI: %s of %s rows", done, total)
	}
	// The proxy follows the revision: reads by id go through the index.
	app := proxytest.Connect(t, dsn)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var plan string
		rows, err := app.Query(ctx, "EXPLAIN (ROUTE) SELECT * FROM gb_orders WHERE id = 5", pgx.QueryExecModeSimpleProtocol)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var line string
			_ = rows.Scan(&line)
			plan += line + "\n"
		}
		if strings.Contains(plan, "Lookup") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the proxy does not read through the index:\n%s", plan)
		}
	}
	var note string
	if err := app.QueryRow(ctx, "SELECT note FROM gb_orders WHERE id = 5", pgx.QueryExecModeSimpleProtocol).Scan(&note); err != nil || note != "n5" {
		t.Fatalf("read through the index: %q %v", note, err)
	}
	f.checkExact("gb_orders_by_id")
}
