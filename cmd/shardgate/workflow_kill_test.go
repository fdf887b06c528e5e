package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/shardgate/shardgate/internal/testenv"
)

// countInserts makes every target count the rows inserted into orders,
// per key: a key inserted twice on a target was copied (or applied) twice.
const countInserts = `CREATE TABLE orders (id bigint PRIMARY KEY, customer_id bigint NOT NULL, note text);
CREATE TABLE inserted (id bigint NOT NULL);
CREATE FUNCTION count_insert() RETURNS trigger LANGUAGE plpgsql AS 'BEGIN INSERT INTO inserted VALUES (NEW.id); RETURN NULL; END';
CREATE TRIGGER count_insert AFTER INSERT ON orders FOR EACH ROW EXECUTE FUNCTION count_insert()`

// TestWorkflowSurvivesKill9 runs `shardgate workflow run` as a child
// process, SIGKILLs it during the copy and again while it streams, under
// a write load on the source, and checks the end: VDiff clean, no key
// inserted twice on any target, no slot or publication left after cancel.
func TestWorkflowSurvivesKill9(t *testing.T) {
	from, to, dbs := workflowFixture(t, "killwf", 30000, countInserts)
	pg := testenv.Shared(t).Clusters[0]
	ctx := context.Background()
	conn := func(cluster string) *pgx.Conn {
		c, err := pgx.Connect(ctx, pg.DSN(dbs[cluster]))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close(ctx) })
		return c
	}
	main := conn("main")
	if out, _, err := run("workflow", "create", "movetables", "--topology", from, "--to", to, "--group", "by_customer",
		"--tables", "orders", "--chunk-rows", "300"); err != nil {
		t.Fatalf("create: %v %s", err, out)
	}

	// Write load on the source: new keys, non-key updates, deletes (keys
	// are never reused, so each key is inserted at most once per target).
	stopLoad := make(chan struct{})
	var loadWG sync.WaitGroup
	var loadErr error
	loadWG.Add(1)
	go func() {
		defer loadWG.Done()
		lc, err := pgx.Connect(ctx, pg.DSN(dbs["main"]))
		if err != nil {
			loadErr = err
			return
		}
		defer lc.Close(ctx)
		for i := 0; ; i++ {
			select {
			case <-stopLoad:
				return
			default:
			}
			var sql string
			switch i % 3 {
			case 0:
				sql = fmt.Sprintf("INSERT INTO orders VALUES (%d, %d, 'new')", 100000+i, i%97)
			case 1:
				sql = fmt.Sprintf("UPDATE orders SET note = note || '+' WHERE id = %d", 1+(i*7919)%30000)
			case 2:
				sql = fmt.Sprintf("DELETE FROM orders WHERE id = %d", 1+(i*104729)%30000)
			}
			if _, loadErr = lc.Exec(ctx, sql); loadErr != nil {
				return
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()

	start := func() *exec.Cmd {
		cmd := exec.Command(os.Args[0], "workflow", "run", "1", "--topology", from)
		cmd.Env = append(os.Environ(), runMainEnv+"=1")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	kill := func(cmd *exec.Cmd) {
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
	}
	poll := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}
	var copied, total int64
	var done bool
	progress := func() {
		if err := main.QueryRow(ctx, `SELECT coalesce(sum(rows_copied), 0), coalesce(sum(rows_total), 0), coalesce(bool_and(done), false)
			FROM shardgate.workflow_tables WHERE workflow_id = 1`).Scan(&copied, &total, &done); err != nil {
			t.Fatal(err)
		}
	}
	phase := func() string {
		var p, e string
		if err := main.QueryRow(ctx, "SELECT phase, error FROM shardgate.workflows WHERE id = 1").Scan(&p, &e); err != nil {
			t.Fatal(err)
		}
		if e != "" {
			t.Fatalf("workflow error: %s", e)
		}
		return p
	}

	// 1. Killed during the copy.
	child := start()
	poll("the copy to start", func() bool { progress(); return copied >= 1500 })
	kill(child)
	progress()
	if done || copied >= total {
		t.Fatalf("the copy finished (%d/%d) before the kill", copied, total)
	}
	t.Logf("killed during the copy at %d/%d rows", copied, total)

	// 2. Killed while streaming.
	child = start()
	poll("streaming", func() bool { return phase() == "streaming" })
	time.Sleep(700 * time.Millisecond)
	kill(child)

	// 3. Runs to the end of the load.
	child = start()
	defer kill(child)
	time.Sleep(500 * time.Millisecond)
	close(stopLoad)
	loadWG.Wait()
	if loadErr != nil {
		t.Fatal(loadErr)
	}
	var lsn string
	if err := main.QueryRow(ctx, "SELECT pg_current_wal_insert_lsn()::text").Scan(&lsn); err != nil {
		t.Fatal(err)
	}
	poll("the stream to catch up", func() bool {
		var ok bool
		err := main.QueryRow(ctx, "SELECT coalesce(applied_lsn >= $1::pg_lsn, false) FROM shardgate.workflow_streams WHERE workflow_id = 1", lsn).Scan(&ok)
		return err == nil && ok
	})
	out, _, err := run("workflow", "vdiff", "1", "--topology", from)
	if err != nil || strings.Count(out, "0 missing, 0 extra, 0 mismatched") != 2 {
		t.Fatalf("vdiff: %v\n%s", err, out)
	}
	var srcRows, gotRows int64
	if err := main.QueryRow(ctx, "SELECT count(*) FROM orders").Scan(&srcRows); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"t0", "t1"} {
		tc := conn(c)
		var twice, n int64
		if err := tc.QueryRow(ctx, "SELECT count(*) FROM (SELECT id FROM inserted GROUP BY id HAVING count(*) > 1) d").Scan(&twice); err != nil {
			t.Fatal(err)
		}
		if twice != 0 {
			t.Errorf("%s: %d keys inserted more than once", c, twice)
		}
		if err := tc.QueryRow(ctx, "SELECT count(*) FROM orders").Scan(&n); err != nil {
			t.Fatal(err)
		}
		gotRows += n
	}
	if srcRows != gotRows {
		t.Errorf("source %d rows, targets %d", srcRows, gotRows)
	}
	kill(child)
	if out, _, err := run("workflow", "cancel", "1", "--topology", from); err != nil {
		t.Fatalf("cancel: %v %s", err, out)
	}
	var slots, pubs int
	if err := main.QueryRow(ctx, `SELECT (SELECT count(*) FROM pg_replication_slots WHERE database = current_database()),
		(SELECT count(*) FROM pg_publication)`).Scan(&slots, &pubs); err != nil {
		t.Fatal(err)
	}
	if slots != 0 || pubs != 0 {
		t.Fatalf("after cancel: %d slots, %d publications left", slots, pubs)
	}
}

// TestServeRunsWorkflows: `serve --workflows` picks up a workflow
// recorded in main and runs it; a `workflow run` of the same workflow is
// refused (55P03) while the proxy holds it.
func TestServeRunsWorkflows(t *testing.T) {
	from, to, dbs := workflowFixture(t, "servewf", 1000, "")
	if out, _, err := run("workflow", "create", "movetables", "--topology", from, "--to", to, "--group", "by_customer", "--tables", "orders"); err != nil {
		t.Fatalf("create: %v %s", err, out)
	}
	logs := &logBuffer{}
	cmd := exec.Command(os.Args[0], "serve", "--topology", from, "--listen", "127.0.0.1:0", "--workflows", "--workflow-poll", "100ms")
	cmd.Env = append(os.Environ(), runMainEnv+"=1")
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() })
	waitLog(t, logs, "workflow 1: copy done, streaming")
	_, _, err := run("workflow", "run", "1", "--topology", from)
	if err == nil || !strings.Contains(err.Error(), "run by another process") {
		t.Fatalf("run while serve runs it: %v", err)
	}
	// stop reaches the proxy's runner; start --background hands it back.
	if out, _, err := run("workflow", "stop", "1", "--topology", from); err != nil || out != "workflow 1 stopped\n" {
		t.Fatalf("stop: %v %q", err, out)
	}
	waitLog(t, logs, "workflow 1: stopped")
	// The lag is not asserted: the proxies' heartbeats write to main, the
	// stopped stream's source.
	out, _, err := run("workflow", "status", "1", "--topology", from)
	if err != nil || !strings.Contains(out, "): stopped, traffic on the sources\n") || !strings.Contains(out, "applied ") {
		t.Fatalf("status: %v\n%s", err, out)
	}
	if out, _, err := run("workflow", "start", "1", "--background", "--topology", from); err != nil || !strings.Contains(out, "runnable") {
		t.Fatalf("start: %v %q", err, out)
	}
	for deadline := time.Now().Add(30 * time.Second); strings.Count(logs.String(), "workflow 1: copy done, streaming") < 2; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not resumed by serve:\n%s", logs)
		}
	}
	var n int64
	c, err := pgx.Connect(context.Background(), testenv.Shared(t).Clusters[0].DSN(dbs["t0"]))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	if err := c.QueryRow(context.Background(), "SELECT count(*) FROM orders").Scan(&n); err != nil || n == 0 {
		t.Fatalf("t0 orders: %d %v", n, err)
	}
}
