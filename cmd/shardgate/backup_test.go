package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/shardgate/shardgate/backup"
	"github.com/shardgate/shardgate/internal/proxytest"
	"github.com/shardgate/shardgate/internal/testenv"
)

// pairLoad writes transactions of two rows (keys at random, so about
// half span both shards: a two-phase commit) through a proxy, and records
// when each began and when its COMMIT was acknowledged.
type pairLoad struct {
	stop atomic.Bool
	wg   sync.WaitGroup
	mu   sync.Mutex
	txs  []pairTx
	errs []string
}

type pairTx struct {
	id           int64
	began, acked time.Time
}

func (l *pairLoad) start(t *testing.T, dsn string, writers int) {
	ctx := context.Background()
	for w := 0; w < writers; w++ {
		conn := pgxConnect(t, dsn)
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for i := int64(1); !l.stop.Load(); i++ {
				id := int64(w+1)*1_000_000 + i
				began := time.Now()
				err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
					for part := 1; part <= 2; part++ {
						if _, err := tx.Exec(ctx, "INSERT INTO items (k, tx, part) VALUES ($1, $2, $3)", rand.Int64N(1_000_000), id, part); err != nil {
							return err
						}
					}
					return nil
				})
				l.mu.Lock()
				if err != nil {
					l.errs = append(l.errs, err.Error())
				} else {
					l.txs = append(l.txs, pairTx{id: id, began: began, acked: time.Now()})
				}
				l.mu.Unlock()
			}
		}()
	}
}

func (l *pairLoad) acked() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.txs)
}

// rowsByTx counts the rows of each transaction in items of every conn.
func rowsByTx(t *testing.T, conns ...*pgx.Conn) (rows map[int64]int, spanning int) {
	t.Helper()
	rows = map[int64]int{}
	on := map[int64]int{}
	for _, c := range conns {
		r, err := c.Query(context.Background(), "SELECT tx, count(*) FROM items GROUP BY tx")
		if err != nil {
			t.Fatal(err)
		}
		var tx, n int64
		if _, err := pgx.ForEachRow(r, []any{&tx, &n}, func() error { rows[tx] += int(n); on[tx]++; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range on {
		if n == 2 {
			spanning++
		}
	}
	return rows, spanning
}

// writeTopology writes yaml into a topology file of the test's.
func writeTopology(t *testing.T, yaml string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "topology.yaml")
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// TestRestorePointIsAConsistentCut: two servers archiving their WAL,
// base backups taken, transactions of two rows written through a proxy
// that follows main (about half are two-phase commits across the
// servers). A proxy that registered and does not answer makes the
// restore point refuse with exit 3 and the writes go on; then a restore
// point is made mid-load, more writes follow, and both servers are
// restored from their base backups to it: every transaction has both
// rows or none, every one acknowledged before the command began is there,
// none begun after it ended is, no prepared transaction is left, and main
// as restored does not list the point (recorded after it).
func TestRestorePointIsAConsistentCut(t *testing.T) {
	env := testenv.ForTest(t, testenv.Options{N: 2, Archive: true, Databases: []string{"rp_main", "rp_shard"}})
	pg0, pg1 := env.Clusters[0], env.Clusters[1]
	ctx := context.Background()
	yaml := fmt.Sprintf(`version: 1
clusters:
  main: { dsn: %q }
  s0: { dsn: %q }
  s1: { dsn: %q }
groups:
  main: { unsharded: true, cluster: main }
  by_key:
    index: { name: by_key, column: k, type: bigint, function: xxhash }
    shards: { "-80": s0, "80-": s1 }
    tables: { items: {} }
`, pg0.DSN("rp_main"), pg0.DSN("rp_shard"), pg1.DSN("rp_shard"))
	file := writeTopology(t, yaml)
	f := &gsiFixture{t: t, dbs: map[string]string{"main": "rp_main"}}
	dsn := f.proxy(yaml, true)
	exec1(t, proxytest.Connect(t, dsn), "CREATE TABLE items (k bigint NOT NULL, tx bigint NOT NULL, part int NOT NULL, PRIMARY KEY (k, tx, part))")
	var backups []string
	for _, c := range env.Clusters {
		b, err := c.BaseBackup(ctx)
		if err != nil {
			t.Fatal(err)
		}
		backups = append(backups, b)
	}

	load := &pairLoad{}
	load.start(t, dsn, 4)
	defer func() { load.stop.Store(true); load.wg.Wait() }()
	waitAcked := func(n int) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); load.acked() < n; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("only %d transactions acknowledged", load.acked())
			}
		}
	}
	waitAcked(100)

	// A proxy registered, live by its heartbeat, that never arms.
	mainConn := pgxConnect(t, pg0.DSN("rp_main"))
	exec1(t, mainConn, "INSERT INTO shardgate.proxies (id, addr, pid) VALUES ('frozen', '127.0.0.1:1', 1)")
	_, _, err := run("backup", "restore-point", "refused", "--topology", file, "--ack-timeout", "300ms")
	if code := exitCode(err); code != exitHold || !strings.Contains(fmt.Sprint(err), "SQLSTATE 55P03") || !strings.Contains(fmt.Sprint(err), "frozen") {
		t.Fatalf("a proxy that does not acknowledge: exit %d, %v", code, err)
	}
	exec1(t, mainConn, "DELETE FROM shardgate.proxies WHERE id = 'frozen'")
	n := load.acked()
	waitAcked(n + 50) // released: the writes go on

	began := time.Now()
	out, stderr, err := run("backup", "restore-point", "rp1", "--topology", file, "--json")
	ended := time.Now()
	if err != nil {
		t.Fatalf("restore-point: %v\n%s", err, stderr)
	}
	var res backup.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	t.Logf("restore point: pause %s, steps %+v, points %+v", res.Pause, res.Steps, res.Points)
	if res.Proxies != 1 || len(res.Points) != 2 || res.InDoubt != 0 || !res.Points[1].Main {
		t.Fatalf("result: %+v", res)
	}
	n = load.acked()
	waitAcked(n + 100)
	load.stop.Store(true)
	load.wg.Wait()
	if len(load.errs) > 0 {
		t.Fatalf("%d client errors, first: %s", len(load.errs), load.errs[0])
	}
	live0, live1 := pgxConnect(t, pg0.DSN("rp_shard")), pgxConnect(t, pg1.DSN("rp_shard"))
	if _, spanning := rowsByTx(t, live0, live1); spanning < 20 {
		t.Fatalf("only %d transactions span both servers", spanning)
	}

	restored := make([]*testenv.Cluster, 2)
	for i, c := range env.Clusters {
		// pg1 holds s1; pg0 holds main and s0, its point written last.
		p := res.Points[1-i]
		if slices.Contains(p.Clusters, "s1") != (i == 1) {
			t.Fatalf("point %d is of %v", 1-i, p.Clusters)
		}
		if err := c.WaitArchived(ctx, p.LSN); err != nil {
			t.Fatal(err)
		}
		if restored[i], err = c.Restore(ctx, backups[i], "rp1"); err != nil {
			t.Fatal(err)
		}
	}
	r0, r1 := pgxConnect(t, restored[0].DSN("rp_shard")), pgxConnect(t, restored[1].DSN("rp_shard"))
	rows, spanning := rowsByTx(t, r0, r1)
	var before, after, in int
	for _, tx := range load.txs {
		got := rows[tx.id]
		switch {
		case got != 0 && got != 2:
			t.Errorf("transaction %d: %d of its 2 rows restored", tx.id, got)
		case tx.acked.Before(began):
			before++
			if got != 2 {
				t.Errorf("transaction %d, acknowledged %s before the command, is not restored", tx.id, began.Sub(tx.acked))
			}
		case tx.began.After(ended):
			after++
			if got != 0 {
				t.Errorf("transaction %d, begun %s after the command, is restored", tx.id, tx.began.Sub(ended))
			}
		}
		if got == 2 {
			in++
		}
	}
	if len(rows) != in {
		t.Errorf("%d transactions restored, %d of them acknowledged", len(rows), in)
	}
	t.Logf("restored: %d transactions (%d span both servers); %d acknowledged before the command, %d begun after it", in, spanning, before, after)
	for _, c := range []*pgx.Conn{r0, r1} {
		if n := queryInt(t, c, "SELECT count(*) FROM pg_prepared_xacts"); n != 0 {
			t.Errorf("%d prepared transactions restored", n)
		}
	}
	rmain := pgxConnect(t, restored[0].DSN("rp_main"))
	if n := queryInt(t, rmain, "SELECT count(*) FROM shardgate.restore_points"); n != 0 {
		t.Errorf("restored main lists %d restore points", n)
	}
	if n := queryInt(t, mainConn, "SELECT count(*) FROM shardgate.restore_points WHERE name = 'rp1'"); n != 1 {
		t.Errorf("main lists rp1 %d times", n)
	}
}

// TestRestorePointRefusesWithoutArchiving: servers that do not archive
// their WAL refuse the restore point before anything is held (exit 2,
// 55000, the server named by its clusters), and no routing revision is
// written.
func TestRestorePointRefusesWithoutArchiving(t *testing.T) {
	env := testenv.Shared(t)
	dbs := freshDatabases(t, "rpna_", "main", "s1")
	yaml := fmt.Sprintf(`version: 1
clusters:
  main: { dsn: %q }
  s1: { dsn: %q }
groups:
  main: { unsharded: true, cluster: main }
  by_key:
    index: { name: by_key, column: k, type: bigint, function: xxhash }
    shards: { "-": s1 }
    tables: { items: {} }
`, env.Clusters[0].DSN(dbs["main"]), env.Clusters[0].DSN(dbs["s1"]))
	file := writeTopology(t, yaml)
	_, _, err := run("backup", "restore-point", "never", "--topology", file)
	msg := fmt.Sprint(err)
	if code := exitCode(err); code != exitNotReady || !strings.Contains(msg, "SQLSTATE 55000") ||
		!strings.Contains(msg, "clusters main, s1 (one server): archive_mode is off") {
		t.Fatalf("exit %d: %s", code, msg)
	}
	main := pgxConnect(t, env.Clusters[0].DSN(dbs["main"]))
	if n := queryInt(t, main, "SELECT count(*) FROM shardgate.routing_revisions"); n != 0 {
		t.Fatalf("%d routing revisions written", n)
	}
}
