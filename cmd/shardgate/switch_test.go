package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/shardgate/shardgate/internal/testenv"
	"github.com/shardgate/shardgate/routestate"
	"github.com/shardgate/shardgate/topology"
)

// serveChild starts `shardgate serve` as a child process (args added).
func serveChild(t *testing.T, file string, args ...string) (addr string, cmd *exec.Cmd, logs *logBuffer) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr = ln.Addr().String()
	ln.Close()
	p, logs := child(t, append([]string{"serve", "--topology", file, "--listen", addr}, args...)...)
	cmd = p.Cmd
	waitLog(t, logs, "shardgate listening")
	return addr, cmd, logs
}

// switchLoad writes through the proxies: each client inserts orders with
// keys of its own and measures each statement; readers read a customer's
// orders. Every acknowledged insert is the oracle.
type switchLoad struct {
	stop          atomic.Bool
	wg            sync.WaitGroup
	mu            sync.Mutex
	writes, reads []time.Duration
	inserted      []int64
	errs          []string
}

func (l *switchLoad) start(t *testing.T, dsns []string, writersPerProxy int) {
	ctx := context.Background()
	for pi, dsn := range dsns {
		for w := 0; w < writersPerProxy+1; w++ {
			conn := pgxConnect(t, dsn)
			reader := w == writersPerProxy
			base := int64((pi*100+w+1)*1_000_000) + 1
			l.wg.Add(1)
			go func() {
				defer l.wg.Done()
				for i := int64(0); !l.stop.Load(); i++ {
					cust := 1 + (base+i*7919)%1000
					start := time.Now()
					var err error
					if reader {
						var n int64
						err = conn.QueryRow(ctx, "SELECT count(*) FROM orders WHERE customer_id = $1", cust).Scan(&n)
					} else {
						_, err = conn.Exec(ctx, "INSERT INTO orders (id, customer_id, note) VALUES ($1, $2, 'load')", base+i, cust)
					}
					d := time.Since(start)
					l.mu.Lock()
					switch {
					case err != nil:
						l.errs = append(l.errs, err.Error())
					case reader:
						l.reads = append(l.reads, d)
					default:
						l.writes = append(l.writes, d)
						l.inserted = append(l.inserted, base+i)
					}
					l.mu.Unlock()
					time.Sleep(2 * time.Millisecond)
				}
			}()
		}
	}
}

func (l *switchLoad) finish() {
	l.stop.Store(true)
	l.wg.Wait()
}

// waitFresh waits until the proxy at addr beat its heartbeat less than
// half a second ago.
func waitFresh(t *testing.T, mainDSN, addr string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, mainDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		var fresh bool
		if err := conn.QueryRow(ctx, `SELECT coalesce(bool_or(heartbeat_at > now() - interval '500ms'), false) FROM shardgate.proxies WHERE addr = $1`, addr).Scan(&fresh); err != nil {
			t.Fatal(err)
		}
		if fresh {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("proxy %s does not beat", addr)
}

func percentiles(ds []time.Duration) (p50, p99, mx time.Duration) {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s) == 0 {
		return
	}
	return s[len(s)/2], s[len(s)*99/100], s[len(s)-1]
}

// reshardOrders creates the databases of clusters main, s0, s1 and t0 to
// t3, runs createSQL in those of the clusters on, and writes the topology
// files of a reshard of by_customer (table orders) from s0 and s1 onto t0
// to t3.
func reshardOrders(t *testing.T, prefix, createSQL string, on ...string) (pg *testenv.Cluster, dbs map[string]string, from, to string) {
	pg = testenv.Shared(t).Clusters[0]
	clusters := []string{"main", "s0", "s1", "t0", "t1", "t2", "t3"}
	dbs = freshDatabases(t, prefix, clusters...)
	yaml := "version: 1\nclusters:\n"
	for _, c := range clusters {
		yaml += fmt.Sprintf("  %s: { dsn: %q }\n", c, pg.DSN(dbs[c]))
	}
	for _, c := range on {
		if err := pg.Exec(context.Background(), dbs[c], createSQL); err != nil {
			t.Fatal(err)
		}
	}
	yaml += "groups:\n  main: { unsharded: true, cluster: main }\n  by_customer:\n" +
		"    index: { name: by_customer, column: customer_id, type: bigint, function: xxhash }\n" +
		"    shards: { \"-80\": s0, \"80-\": s1 }  # two shards for now\n    tables: { orders: {} }\n"
	dir := t.TempDir()
	from, to = filepath.Join(dir, "topology.yaml"), filepath.Join(dir, "next.yaml")
	_ = os.WriteFile(from, []byte(yaml), 0o644)
	_ = os.WriteFile(to, []byte(strings.Replace(yaml, `shards: { "-80": s0, "80-": s1 }`, `shards: { "-40": t0, "40-80": t1, "80-c0": t2, "c0-": t3 }`, 1)), 0o644)
	return pg, dbs, from, to
}

// TestSwitchReshardUnderLoadTwoProxies: two `shardgate serve` processes
// take a write load (and reads) while a reshard 2 -> 4 switches traffic,
// reverses and switches again: no client error, every acknowledged row on
// the new shards and back on the old ones, pauses measured by the
// clients. A frozen proxy (SIGSTOP) makes a reverse abort with traffic
// going on. Complete leaves no slot, publication or old copy, and the
// topology file routes as the routing state does.
func TestSwitchReshardUnderLoadTwoProxies(t *testing.T) {
	ctx := context.Background()
	pg, dbs, from, to := reshardOrders(t, "swe2e_", `CREATE TABLE orders (id bigint NOT NULL, customer_id bigint NOT NULL, note text, PRIMARY KEY (customer_id, id))`, "s0", "s1")

	addrA, _, logsA := serveChild(t, from, "--workflows", "--workflow-poll", "200ms")
	addrB, procB, _ := serveChild(t, from)
	dsn := func(addr string) string {
		return fmt.Sprintf("postgres://postgres@%s/%s?sslmode=disable", addr, dbs["main"])
	}
	load := &switchLoad{}
	load.start(t, []string{dsn(addrA), dsn(addrB)}, 3)
	defer load.finish()

	if out, _, err := run("workflow", "create", "reshard", "--topology", from, "--to", to, "--group", "by_customer"); err != nil {
		t.Fatalf("create: %v\n%s", err, out)
	}
	waitStreaming(t, from, logsA)
	time.Sleep(time.Second)
	switchCmd := func(args ...string) string {
		t.Helper()
		out, errOut, err := run(append(args, "--topology", from)...)
		if err != nil {
			t.Fatalf("%v: %v\n%s\n%s", args, err, out, errOut)
		}
		t.Logf("%s: %s", strings.Join(args, " "), out)
		time.Sleep(time.Second)
		return out
	}
	if out := switchCmd("workflow", "switch", "1", "--dry-run"); !strings.Contains(out, "LOCK the tables") {
		t.Fatalf("dry run:\n%s", out)
	}
	switchCmd("workflow", "switch", "1")
	switchCmd("workflow", "reverse", "1")
	switchCmd("workflow", "switch", "1")

	// The pauses of the three switches, as the clients saw them.
	load.mu.Lock()
	w50, w99, wmax := percentiles(load.writes)
	r50, r99, rmax := percentiles(load.reads)
	nw, nr := len(load.writes), len(load.reads)
	load.mu.Unlock()
	t.Logf("switch, reverse, switch: %d writes: p50 %v p99 %v max %v; %d reads: p50 %v p99 %v max %v", nw, w50, w99, wmax, nr, r50, r99, rmax)
	// The pause itself is measured by bench/run.sh -scenario switch on a
	// quiet machine; here (CI, race detector, packages in parallel) only a
	// write held past the hold's own deadline (5 s) would be a fault.
	if wmax > 5*time.Second {
		t.Errorf("a write waited %v", wmax)
	}

	// A frozen proxy: the reverse aborts, traffic goes on where it was.
	defer func() { _ = procB.Process.Signal(syscall.SIGCONT) }() // before the load's end
	waitFresh(t, pg.DSN(dbs["main"]), addrB)
	if err := procB.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	out, _, err := run("workflow", "reverse", "1", "--topology", from)
	if err == nil || !strings.Contains(err.Error(), "did not acknowledge") {
		t.Fatalf("reverse with a frozen proxy: %v\n%s", err, out)
	}
	_ = procB.Process.Signal(syscall.SIGCONT)
	time.Sleep(time.Second)
	load.finish()

	main, err := pgx.Connect(ctx, pg.DSN(dbs["main"]))
	if err != nil {
		t.Fatal(err)
	}
	defer main.Close(ctx)
	rev, err := routestate.Load(ctx, main)
	if err != nil || rev.State.Switched["1"] == nil || rev.State.Buffer != nil {
		t.Fatalf("routing after the aborted reverse: %+v %v", rev.State, err)
	}
	// A statement already past the gate when a proxy armed is waited for
	// before the proxy acknowledges (Gate.Enter/Leave): none may meet the
	// old shards' write block.
	if len(load.errs) > 0 {
		t.Errorf("%d client errors, first: %s", len(load.errs), load.errs[0])
	}
	queryRow := func(c, sql string, dest ...any) {
		t.Helper()
		conn, err := pgx.Connect(ctx, pg.DSN(dbs[c]))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		if err := conn.QueryRow(ctx, sql).Scan(dest...); err != nil {
			t.Fatal(err)
		}
	}
	count := func(clusters ...string) int64 {
		var sum int64
		for _, c := range clusters {
			var n int64
			queryRow(c, "SELECT count(*) FROM orders", &n)
			sum += n
		}
		return sum
	}
	want := int64(len(load.inserted))
	time.Sleep(2 * time.Second) // the stream back
	if got := count("t0", "t1", "t2", "t3"); got != want {
		t.Errorf("new shards hold %d rows, clients inserted %d", got, want)
	}
	if got := count("s0", "s1"); got != want {
		t.Errorf("old shards hold %d rows (stream back), clients inserted %d", got, want)
	}
	if out, _, err := run("workflow", "vdiff", "1", "--topology", from); err != nil {
		t.Errorf("vdiff: %v\n%s", err, out)
	}
	status, _, _ := run("workflow", "status", "1", "--topology", from)
	t.Logf("status:\n%s", status)
	// The client-side figures, from the proxies' gates: each held write's
	// wait from the hold to its answer on the new shards. The 100 ms goal
	// is measured by bench/run.sh -scenario switch on a quiet machine; the
	// bound here is one a loaded CI machine keeps.
	rows, err := main.Query(ctx, `SELECT n, held, client_pause_ms, wait_p50_ms, wait_p99_ms, wait_max_ms FROM shardgate.workflow_switches
		WHERE workflow_id = 1 AND outcome = 'done' ORDER BY n`)
	if err != nil {
		t.Fatal(err)
	}
	decided := 0
	for rows.Next() {
		var n int
		var held int64
		var pause, p50, p99, mx float64
		if err := rows.Scan(&n, &held, &pause, &p50, &p99, &mx); err != nil {
			t.Fatal(err)
		}
		decided++
		t.Logf("switch #%d: %d held, client pause %.1f ms, waits p50 %.1f p99 %.1f max %.1f ms", n, held, pause, p50, p99, mx)
		if held > 0 && (pause <= 0 || mx <= 0 || mx > 1000 || p99 > mx || p50 > p99) {
			t.Errorf("switch #%d: client pause %.1f ms, waits p50 %.1f p99 %.1f max %.1f ms (want measured, max <= 1 s)", n, pause, p50, p99, mx)
		}
	}
	if rows.Err() != nil || decided != 3 {
		t.Errorf("%d decided switches recorded (%v), want 3", decided, rows.Err())
	}
	if !strings.Contains(status, "client pause") {
		t.Errorf("status has no client pause:\n%s", status)
	}
	if !strings.Contains(status, "switch #1 done") || !strings.Contains(status, "reverse #4 aborted") || !strings.Contains(status, "acknowledged in") {
		t.Errorf("status:\n%s", status)
	}

	if out, errOut, err := run("workflow", "complete", "1", "--topology", from); err != nil {
		t.Fatalf("complete: %v\n%s\n%s", err, out, errOut)
	}
	for _, c := range []string{"s0", "s1", "t0", "t1", "t2", "t3"} {
		var slots, pubs, tables int64
		queryRow(c, `SELECT (SELECT count(*) FROM pg_replication_slots WHERE database = current_database()),
			(SELECT count(*) FROM pg_publication), (SELECT count(*) FROM pg_tables WHERE tablename = 'orders')`, &slots, &pubs, &tables)
		if slots != 0 || pubs != 0 || (c[0] == 's') != (tables == 0) {
			t.Errorf("%s after complete: %d slots, %d publications, %d orders tables", c, slots, pubs, tables)
		}
	}
	file, err := topology.Load(from)
	if err != nil {
		t.Fatal(err)
	}
	eff, err := routestate.Apply(file, rev)
	if err != nil || len(eff.Topology.Overrides) != 0 || len(file.Group("by_customer").Shards) != 4 {
		t.Fatalf("file after complete: %v %+v", err, eff.Topology.Overrides)
	}
	if data, _ := os.ReadFile(from); !strings.Contains(string(data), "# two shards for now") {
		t.Errorf("comment lost:\n%s", data)
	}
}
