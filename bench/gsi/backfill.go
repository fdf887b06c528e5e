package main

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/shardgate/shardgate/bench/internal/benchkit"
	"github.com/shardgate/shardgate/internal/testenv"
)

// The backfill scenario (-backfill; `bash bench/run.sh -scenario
// gsi-backfill`): orders with -rows rows (default 1 M) written through
// `shardgate serve` without an index; the topology file then adds
// orders_by_id (unique, backfilling), which the proxy's reload creates;
// a pgbench write load through the proxy (inserts, updates of id, deletes)
// runs while `shardgate gsi backfill` copies the entries, is killed with
// SIGKILL in the middle and run again to the end (verified, active); then
// the load stops and the index is checked exact two ways: `shardgate gsi
// verify` clean, and the (id, customer_id) pairs of orders and of
// orders_by_id equal in count and in a sum of hashes over all clusters.

// backfillLoad is the pgbench script. Client k's j-th transaction does,
// by j mod 3: 0, an insert of order first+j*clients+k; 1, an update of
// the id (the indexed column) of initial order 3b+1 to moved+j*clients+k;
// 2, a delete of initial order 3b+2; with b = ((j/3)*clients + k) mod
// third, so that each initial order is one client's.
const backfillLoad = `\set j :j + 1
\set op :j % 3
\set b ((:j / 3) * :clients + :client_id) % :third
\if :op = 0
\set id :first + :j * :clients + :client_id
\set c :id % :customers
INSERT INTO orders (id, customer_id, total, note) VALUES (:id, :c, 1, 'new');
\elif :op = 1
\set id 3 * :b + 1
\set c :id % :customers
\set nid :moved + :j * :clients + :client_id
UPDATE orders SET id = :nid WHERE customer_id = :c AND id = :id;
\else
\set id 3 * :b + 2
\set c :id % :customers
DELETE FROM orders WHERE customer_id = :c AND id = :id;
\endif
`

const (
	firstInserted = 1_000_000_000 // ids the load inserts
	firstMoved    = 2_000_000_000 // ids the load moves orders to
)

type backfillRun struct {
	h                  *harness
	file, log          string
	proxy              *benchkit.Proc
	port               int
	bin                string
	copySecs           float64
	killedAt           int64   // rows done when the first run was killed
	firstSecs, restSec float64 // the two runs' durations
	progress           [2][]string
	inserted, moved    int64
	deleted            int64
	verify             string
	exact              string
	loadAvg            []string
}

// mainDSN is main's cluster (pg0).
func (b *backfillRun) mainDSN() string { return b.h.env.Clusters[0].DSN("bench") }

func (h *harness) runBackfill(ctx context.Context) (*backfillRun, error) {
	b := &backfillRun{h: h}
	if err := h.setup(ctx); err != nil {
		return b, err
	}
	var err error
	if b.bin, err = benchkit.BuildShardgate(ctx, h.cfg.repo, h.tmp); err != nil {
		return b, err
	}
	if b.port, err = benchkit.FreePort(); err != nil {
		return b, err
	}
	b.file, b.log = filepath.Join(h.tmp, "topology.yaml"), filepath.Join(h.tmp, "shardgate.log")
	if err := os.WriteFile(b.file, []byte(h.topology(b.port, "")), 0o644); err != nil {
		return b, err
	}
	if b.proxy, err = benchkit.StartShardgate(ctx, benchkit.Shardgate{Name: "shardgate", Bin: b.bin, Topology: b.file,
		Port: b.port, LogPath: b.log}); err != nil {
		return b, err
	}
	h.procs = append(h.procs, b.proxy)
	if err := b.load(ctx); err != nil {
		return b, err
	}
	if err := b.addIndex(ctx); err != nil {
		return b, err
	}
	load, err := b.startLoad()
	if err != nil {
		return b, err
	}
	h.procs = append(h.procs, load)
	time.Sleep(5 * time.Second)
	b.loadAvg = append(b.loadAvg, benchkit.LoadAvg())
	if err := b.backfillKilled(ctx); err != nil {
		return b, err
	}
	b.loadAvg = append(b.loadAvg, benchkit.LoadAvg())
	if err := b.backfillToEnd(ctx); err != nil {
		return b, err
	}
	time.Sleep(5 * time.Second) // writes with the index active
	if load.Exited() {
		return b, fmt.Errorf("the write load ended early: %v: %s", load.ExitError(), benchkit.FileTail(load.LogPath, 5))
	}
	load.Stop(10 * time.Second)
	return b, b.check(ctx)
}

// setup starts the clusters and finds pgbench (as the read scenario).
func (h *harness) setup(ctx context.Context) error {
	var err error
	if h.tmp, err = os.MkdirTemp("", "shardgate-gsi-"); err != nil {
		return err
	}
	dir, err := testenv.FindBinaries()
	if err != nil {
		return err
	}
	if h.pgbench = filepath.Join(dir, "pgbench"); !fileExists(h.pgbench) {
		if h.pgbench, err = exec.LookPath("pgbench"); err != nil {
			return errors.New("pgbench not found (Debian: apt-get install postgresql-contrib)")
		}
	}
	h.logf("starting 4 PostgreSQL clusters")
	h.env, err = testenv.Start(ctx, testenv.Options{N: 4, Databases: []string{"bench"},
		Settings: map[string]string{"shared_buffers": "256MB"}, Log: benchkit.PrefixWriter{Prefix: "gsi: "}})
	if err != nil {
		return fmt.Errorf("start clusters: %w", err)
	}
	return nil
}

func (b *backfillRun) client(ctx context.Context) (*pgx.Conn, error) {
	return pgx.Connect(ctx, fmt.Sprintf("postgres://postgres@127.0.0.1:%d/bench?sslmode=disable", b.port))
}

// load creates orders through the proxy (no index yet) and copies the
// rows in.
func (b *backfillRun) load(ctx context.Context) error {
	c := b.h.cfg
	conn, err := b.client(ctx)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	took, err := b.h.createOrders(ctx, conn)
	if err != nil {
		return err
	}
	b.copySecs = took.Seconds()
	b.h.logf("copied %d rows in %.1f s", c.rows, b.copySecs)
	_, err = conn.Exec(ctx, "ANALYZE orders")
	return err
}

// addIndex writes the topology with orders_by_id backfilling and waits
// for the proxy's reload (which creates the lookup tables).
func (b *backfillRun) addIndex(ctx context.Context) error {
	tmp := b.file + ".tmp"
	if err := os.WriteFile(tmp, []byte(b.h.topology(b.port, "backfilling")), 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, b.file); err != nil {
		return err
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		log, _ := os.ReadFile(b.log)
		if strings.Contains(string(log), "secondary index orders_by_id added") {
			b.h.logf("the proxy reloaded the topology with orders_by_id (backfilling)")
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the proxy did not reload the topology: %s", benchkit.FileTail(b.log, 5))
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

func (b *backfillRun) startLoad() (*benchkit.Proc, error) {
	c := b.h.cfg
	script := filepath.Join(b.h.tmp, "write.sql")
	if err := os.WriteFile(script, []byte(backfillLoad), 0o644); err != nil {
		return nil, err
	}
	args := []string{"-n", "-M", "simple", "-c", strconv.Itoa(c.clients), "-j", strconv.Itoa(min(c.clients, c.jobs)), "-T", "86400",
		"--max-tries", "10", "-D", "j=0", "-D", "clients=" + strconv.Itoa(c.clients), "-D", "third=" + strconv.Itoa(c.rows/3),
		"-D", "customers=" + strconv.Itoa(c.customers), "-D", "first=" + strconv.Itoa(firstInserted), "-D", "moved=" + strconv.Itoa(firstMoved),
		"-f", script, fmt.Sprintf("host=127.0.0.1 port=%d user=postgres dbname=bench sslmode=disable", b.port)}
	b.h.logf("write load: pgbench %v", args)
	return benchkit.StartProc("pgbench", filepath.Join(b.h.tmp, "pgbench.log"), nil, b.h.pgbench, args...)
}

func (b *backfillRun) startBackfill(n int) (*benchkit.Proc, error) {
	return benchkit.StartProc("gsi backfill", filepath.Join(b.h.tmp, fmt.Sprintf("backfill%d.log", n)), nil, b.bin,
		"gsi", "backfill", "orders_by_id", "--topology", b.file, "--batch-rows", strconv.Itoa(b.h.cfg.batchRows))
}

// backfillKilled runs the backfill until about half the rows are done,
// then kills it with SIGKILL.
func (b *backfillRun) backfillKilled(ctx context.Context) error {
	main, err := pgx.Connect(ctx, b.mainDSN())
	if err != nil {
		return err
	}
	defer main.Close(context.Background())
	p, err := b.startBackfill(1)
	if err != nil {
		return err
	}
	b.h.procs = append(b.h.procs, p)
	t0 := time.Now()
	for ; ; time.Sleep(200 * time.Millisecond) {
		if p.Exited() {
			return fmt.Errorf("the backfill ended before it was killed: %v: %s", p.ExitError(), benchkit.FileTail(p.LogPath, 5))
		}
		var done int64
		_ = main.QueryRow(ctx, "SELECT coalesce(sum(rows_done), 0)::bigint FROM shardgate.gsi_backfills WHERE index_name = 'orders_by_id'").Scan(&done)
		if done >= int64(b.h.cfg.rows)/2 {
			b.killedAt = done
			break
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	if err := syscall.Kill(p.Pid(), syscall.SIGKILL); err != nil {
		return err
	}
	for !p.Exited() {
		time.Sleep(50 * time.Millisecond)
	}
	b.firstSecs = time.Since(t0).Seconds()
	b.progress[0] = logLines(p.LogPath)
	b.h.logf("backfill killed (SIGKILL) after %.1f s at %d rows done", b.firstSecs, b.killedAt)
	return nil
}

// backfillToEnd runs the backfill again: it resumes, verifies, activates.
func (b *backfillRun) backfillToEnd(ctx context.Context) error {
	p, err := b.startBackfill(2)
	if err != nil {
		return err
	}
	b.h.procs = append(b.h.procs, p)
	t0 := time.Now()
	for !p.Exited() {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		time.Sleep(200 * time.Millisecond)
	}
	b.restSec = time.Since(t0).Seconds()
	b.progress[1] = logLines(p.LogPath)
	if p.Err() != nil {
		return fmt.Errorf("the resumed backfill failed: %w", p.ExitError())
	}
	if !strings.Contains(strings.Join(b.progress[1], "\n"), "orders_by_id: active\n") {
		return fmt.Errorf("the resumed backfill did not make the index active: %w", p.ExitError())
	}
	b.h.logf("resumed backfill done in %.1f s", b.restSec)
	return nil
}

func logLines(path string) []string {
	data, _ := os.ReadFile(path)
	return strings.Split(strings.TrimRight(string(data), "\n"), "\n")
}

// pairsSQL sums the (id, customer_id) pairs of a table: count and a sum of
// 64-bit hashes, order-independent.
const pairsSQL = "SELECT count(*), coalesce(sum(hashtextextended(id::text || '/' || customer_id::text, 0)::numeric), 0)::text FROM "

// check waits for the last two-phase commits, runs `gsi verify` and
// compares the pairs of orders and orders_by_id over all clusters.
func (b *backfillRun) check(ctx context.Context) error {
	var ordersN, lookupN int64
	ordersSum, lookupSum := new(big.Int), new(big.Int)
	for _, cl := range b.h.env.Clusters {
		if err := b.pairs(ctx, cl, &ordersN, ordersSum, &lookupN, lookupSum); err != nil {
			return fmt.Errorf("%s: %w", cl.Name, err)
		}
	}
	conn, err := b.client(ctx)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	var initial int64
	if err := conn.QueryRow(ctx, "SELECT count(*) FILTER (WHERE id >= $1 AND id < $2), count(*) FILTER (WHERE id >= $2), count(*) FILTER (WHERE id < $1) FROM orders",
		firstInserted, firstMoved).Scan(&b.inserted, &b.moved, &initial); err != nil {
		return err
	}
	b.deleted = int64(b.h.cfg.rows) - initial - b.moved
	out, err := benchkit.RunCmd(ctx, 10*time.Minute, filepath.Join(b.h.tmp, "verify.log"), nil, b.bin, "gsi", "verify", "orders_by_id", "--topology", b.file)
	b.verify = strings.TrimSpace(out)
	if err != nil {
		return fmt.Errorf("gsi verify: %v: %s", err, benchkit.LastLines(b.verify, 8))
	}
	b.exact = fmt.Sprintf("orders: %d (id, customer_id) pairs, hash sum %s; orders_by_id: %d entries, hash sum %s", ordersN, ordersSum, lookupN, lookupSum)
	if ordersN != lookupN || ordersSum.Cmp(lookupSum) != 0 {
		return fmt.Errorf("not exact: %s", b.exact)
	}
	b.h.logf("exact: %s", b.exact)
	return nil
}

// pairs waits for a cluster's prepared transactions to finish, then adds
// its pairs of orders and of orders_by_id.
func (b *backfillRun) pairs(ctx context.Context, cl *testenv.Cluster, ordersN *int64, ordersSum *big.Int, lookupN *int64, lookupSum *big.Int) error {
	conn, err := pgx.Connect(ctx, cl.DSN("bench"))
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		var n int
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_prepared_xacts").Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d prepared transactions left", n)
		}
	}
	for table, dst := range map[string]struct {
		n   *int64
		sum *big.Int
	}{"orders": {ordersN, ordersSum}, "orders_by_id": {lookupN, lookupSum}} {
		var n int64
		var s string
		if err := conn.QueryRow(ctx, pairsSQL+table).Scan(&n, &s); err != nil {
			return fmt.Errorf("%s: %w", table, err)
		}
		v, ok := new(big.Int).SetString(s, 10)
		if !ok {
			return fmt.Errorf("%s: sum %q", table, s)
		}
		*dst.n += n
		dst.sum.Add(dst.sum, v)
	}
	return nil
}
