package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/shardgate/shardgate/internal/testenv"
	"github.com/shardgate/shardgate/keyexpr"
	"github.com/shardgate/shardgate/topology"
	"github.com/shardgate/shardgate/vschema"
)

// TestGSISurvivesKill9 runs `shardgate serve` as a child process under 8
// clients writing at random (inserts, deletes, updates of the indexed
// columns, through both protocols), SIGKILLs it mid-load, restarts it,
// lets the load go on, then waits for the two-phase commit resolver to
// finish every prepared transaction: each lookup table then holds
// exactly the (value, owner key) projection of the owner table, every
// entry on the shard its value maps to. SHARDGATE_GSI_SECONDS sets the
// load before and after the kill (default 2 s each).
func TestGSISurvivesKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the in-doubt timeout of the transactions the kill left prepared")
	}
	pg := testenv.Shared(t).Clusters[0]
	ctx := context.Background()
	dbs := map[string]string{}
	for _, c := range []string{"main", "t0", "t1"} {
		db := "gsikill_" + c
		_ = pg.Exec(ctx, "", "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)")
		if err := pg.Exec(ctx, "", "CREATE DATABASE "+db); err != nil {
			t.Fatal(err)
		}
		dbs[c] = db
		t.Cleanup(func() { _ = pg.Exec(ctx, "", "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)") })
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	yaml := fmt.Sprintf("version: 1\nproxy: { listen: %q, database: gsikill }\nclusters:\n", addr)
	for _, c := range []string{"main", "t0", "t1"} {
		yaml += fmt.Sprintf("  %s: { dsn: %q }\n", c, pg.DSN(dbs[c]))
	}
	yaml += `groups:
  main: { unsharded: true, cluster: main }
  by_customer:
    index: { name: by_customer, column: customer_id, type: bigint, function: xxhash }
    shards: { "-80": t0, "80-": t1 }
    tables:
      gk_orders: {}
    secondary_indexes:
      gk_orders_by_id: { table: gk_orders, column: id, type: bigint, unique: true, state: active }
      gk_orders_by_note: { table: gk_orders, column: note, type: text, state: active }
`
	file := filepath.Join(t.TempDir(), "topology.yaml")
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	topo, err := topology.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	vs, err := vschema.Build(topo)
	if err != nil {
		t.Fatal(err)
	}

	var child *exec.Cmd
	var logs *logBuffer
	start := func() {
		logs = &logBuffer{}
		child = exec.Command(os.Args[0], "serve", "--topology", file)
		child.Env = append(os.Environ(), runMainEnv+"=1")
		child.Stderr = logs
		if err := child.Start(); err != nil {
			t.Fatal(err)
		}
		waitLog(t, logs, "shardgate listening")
	}
	kill := func() {
		_ = child.Process.Signal(syscall.SIGKILL)
		_ = child.Wait()
	}
	start()
	t.Cleanup(kill)
	dsn := fmt.Sprintf("postgres://postgres@%s/gsikill?sslmode=disable", addr)
	setup := pgxConnect(t, dsn)
	if _, err := setup.Exec(ctx, "CREATE TABLE gk_orders (id bigint NOT NULL, customer_id bigint NOT NULL, note text, PRIMARY KEY (customer_id, id))"); err != nil {
		t.Fatal(err)
	}
	setup.Close(ctx)

	secs := 2 * time.Second
	if s := os.Getenv("SHARDGATE_GSI_SECONDS"); s != "" {
		if d, err := time.ParseDuration(s + "s"); err == nil {
			secs = d
		}
	}
	var stop atomic.Bool
	var ok, refused, lost atomic.Int64
	var wg sync.WaitGroup
	notes := []any{"a", "b", "c", nil}
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rnd := rand.New(rand.NewSource(int64(w)))
			var c *pgx.Conn
			for !stop.Load() {
				if c == nil {
					cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
					c, _ = pgx.Connect(cctx, dsn)
					cancel()
					if c == nil {
						time.Sleep(50 * time.Millisecond) // the proxy is down
						continue
					}
				}
				id, cust, note := rnd.Int63n(300), rnd.Int63n(60), notes[rnd.Intn(len(notes))]
				qctx, cancel := context.WithTimeout(ctx, 20*time.Second)
				var err error
				switch rnd.Intn(7) {
				case 0, 1:
					_, err = c.Exec(qctx, "INSERT INTO gk_orders (id, customer_id, note) VALUES ($1, $2, $3)", id, cust, note)
				case 2:
					_, err = c.Exec(qctx, "INSERT INTO gk_orders (id, customer_id, note) VALUES ($1, $2, 's')", pgx.QueryExecModeSimpleProtocol, id, cust)
				case 3:
					_, err = c.Exec(qctx, "DELETE FROM gk_orders WHERE id = $1", id)
				case 4:
					_, err = c.Exec(qctx, "DELETE FROM gk_orders WHERE customer_id = $1 AND id < $2", cust, id)
				case 5:
					_, err = c.Exec(qctx, "UPDATE gk_orders SET id = $1 WHERE id = $2", id, rnd.Int63n(300))
				case 6:
					_, err = c.Exec(qctx, "UPDATE gk_orders SET note = $1 WHERE customer_id = $2", note, cust)
				}
				cancel()
				var pe *pgconn.PgError
				switch {
				case err == nil:
					ok.Add(1)
				case errors.As(err, &pe) && (pe.Code == "23505" || pe.Code == "40001" || pe.Code == "40P01"):
					refused.Add(1)
				default:
					// The proxy was killed under the statement (or its
					// commit's answer was lost, 08007): connect again.
					lost.Add(1)
					c.Close(ctx)
					c = nil
				}
			}
			if c != nil {
				c.Close(ctx)
			}
		}(w)
	}
	time.Sleep(secs)
	before := ok.Load()
	kill()
	time.Sleep(300 * time.Millisecond)
	start()
	time.Sleep(secs)
	stop.Store(true)
	wg.Wait()
	t.Logf("%d statements (%d before the kill), %d refused (23505, 40001, 40P01), %d lost to the kill", ok.Load(), before, refused.Load(), lost.Load())
	if before == 0 || ok.Load() == before || lost.Load() == 0 {
		t.Fatalf("the load did not run across the kill: %d ok, %d before, %d lost", ok.Load(), before, lost.Load())
	}

	// The resolver finishes what the kill left prepared (an undecided one
	// once it is older than the in-doubt timeout).
	for deadline := time.Now().Add(4 * time.Minute); ; time.Sleep(time.Second) {
		var n int
		c, err := pg.Conn(ctx, dbs["main"])
		if err != nil {
			t.Fatal(err)
		}
		err = c.QueryRow(ctx, "SELECT count(*) FROM pg_prepared_xacts WHERE database LIKE 'gsikill_%'").Scan(&n)
		c.Close(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d prepared transactions left; log:\n%s", n, logs)
		}
	}

	owner, got := map[string]int{}, map[string]int{}
	rows := 0
	for _, cl := range []string{"t0", "t1"} {
		c, err := pg.Conn(ctx, dbs[cl])
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(ctx)
		r, err := c.Query(ctx, "SELECT id::text, customer_id::text, note FROM gk_orders")
		if err != nil {
			t.Fatal(err)
		}
		for r.Next() {
			var id, cust string
			var note *string
			if err := r.Scan(&id, &cust, &note); err != nil {
				t.Fatal(err)
			}
			rows++
			owner["gk_orders_by_id|"+id+"|"+cust]++
			if note != nil {
				owner["gk_orders_by_note|"+*note+"|"+cust]++
			}
		}
		for _, q := range []string{
			"SELECT 'gk_orders_by_id', id::text, customer_id::text, 1 FROM gk_orders_by_id",
			"SELECT 'gk_orders_by_note', note, customer_id::text, n FROM gk_orders_by_note",
		} {
			r, err := c.Query(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			for r.Next() {
				var name, v, k string
				var n int
				if err := r.Scan(&name, &v, &k, &n); err != nil {
					t.Fatal(err)
				}
				got[name+"|"+v+"|"+k] += n
				si := vs.Table("", name).LookupOf
				key, err := si.KeyFromValue(keyexpr.Text(v))
				if err != nil {
					t.Fatal(err)
				}
				if sh, _ := si.Lookup.Group.ShardFor(key); sh.Cluster != cl {
					t.Errorf("%s entry %s is on %s, its shard is on %s", name, v, cl, sh.Cluster)
				}
			}
		}
	}
	for k, n := range owner {
		if got[k] != n {
			t.Errorf("entry %s: %d in the lookup table, %d owner rows", k, got[k], n)
		}
	}
	for k, n := range got {
		if owner[k] == 0 {
			t.Errorf("entry %s (%d) has no owner row", k, n)
		}
	}
	t.Logf("%d owner rows, %d distinct entries, all exact", rows, len(got))
}
