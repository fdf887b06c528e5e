package main

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/shardgate/shardgate/internal/testenv"
	"github.com/shardgate/shardgate/routestate"
	"github.com/shardgate/shardgate/topology"
)

// proc is a child process of the test.
type proc struct {
	*exec.Cmd
	exited chan struct{}
}

// child starts the shardgate command args as a child process, its
// standard error in the returned buffer.
func child(t *testing.T, args ...string) (*proc, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), runMainEnv+"=1")
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		<-exited
	})
	return &proc{cmd, exited}, logs
}

func kill9(t *testing.T, p *proc) {
	t.Helper()
	if err := p.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.exited
}

// TestSwitchKill9MoveTables: a MoveTables of orders from main into
// by_customer, its runner and its switches run as child processes.
// The switch process is SIGKILLed before its decision (waiting for the
// lock on main that blocks writes, behind a transaction open on
// orders): the routing stays fully old, the open transaction commits, and
// the runner rolls the switch back (main writable, no slot of the stream
// back). A switch is then
// SIGKILLed after its decision (while it drops the old stream's
// publication): the routing is fully new, main refuses writes with
// 40001, and a runner started after a kill -9 of the first finishes the
// switch. Reverse and switch continue; complete drops main's copy and
// writes the file with orders in by_customer.
func TestSwitchKill9MoveTables(t *testing.T) {
	from, to, dbs := workflowFixture(t, "swkill", 2000, "")
	pg := testenv.Shared(t).Clusters[0]
	ctx := context.Background()
	conn := func(c string) *pgx.Conn { return pgxConnect(t, pg.DSN(dbs[c])) }
	main, t0 := conn("main"), conn("t0")
	// The stream back merges t0 and t1 into main: exact with the shard
	// key in the primary key.
	if _, err := main.Exec(ctx, "ALTER TABLE orders DROP CONSTRAINT orders_pkey, ADD PRIMARY KEY (customer_id, id)"); err != nil {
		t.Fatal(err)
	}
	if out, _, err := run("workflow", "create", "movetables", "--topology", from, "--to", to, "--group", "by_customer", "--tables", "orders"); err != nil {
		t.Fatalf("create: %v %s", err, out)
	}
	runner, runLogs := child(t, "workflow", "run", "1", "--topology", from)
	waitLog(t, runLogs, "copy done, streaming")
	time.Sleep(500 * time.Millisecond)
	state := func() (traffic string, switching bool, rev routestate.Revision) {
		t.Helper()
		if err := main.QueryRow(ctx, "SELECT traffic, switching IS NOT NULL FROM shardgate.workflows WHERE id = 1").Scan(&traffic, &switching); err != nil {
			t.Fatal(err)
		}
		rev, err := routestate.Load(ctx, main)
		if err != nil {
			t.Fatal(err)
		}
		return traffic, switching, rev
	}
	count := func(c *pgx.Conn, sql string) (n int64) {
		t.Helper()
		if err := c.QueryRow(ctx, sql).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	const slots = "SELECT count(*) FROM pg_replication_slots WHERE database = current_database()"
	poll := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s\nrunner:\n%s", what, runLogs)
			}
		}
	}

	// 1. Killed before the decision: armed (the proxies would hold
	// writes), its write block on main waiting for a transaction open on
	// orders.
	open, err := main.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The lock a write takes, without a transaction id yet (creating
	// the stream back's slots waits for transactions holding one).
	if _, err := open.Exec(ctx, "LOCK TABLE orders IN ROW EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	other := conn("main")
	sw, swLogs := child(t, "workflow", "switch", "1", "--topology", from, "--hold", "20s", "--tx-wait", "20s")
	waitLog(t, swLogs, "step armed")
	poll("the write block to wait", func() bool {
		return count(other, "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'BEGIN; SET LOCAL lock_timeout%' AND wait_event_type = 'Lock'") == 1
	})
	kill9(t, sw)
	if traffic, _, rev := state(); traffic != "source" || len(rev.State.Switched) != 0 {
		t.Fatalf("killed before the decision: traffic %s, routing %+v", traffic, rev.State)
	}
	if _, err := open.Exec(ctx, "INSERT INTO orders VALUES (900000, 2, 'open at switch time')"); err != nil {
		t.Fatal(err)
	}
	if err := open.Commit(ctx); err != nil {
		t.Fatalf("the transaction open at switch time: %v", err)
	}
	poll("the rollback", func() bool { _, switching, rev := state(); return !switching && rev.State.Buffer == nil })
	if traffic, _, rev := state(); traffic != "source" || len(rev.State.Switched) != 0 {
		t.Fatalf("after the rollback: traffic %s, routing %+v", traffic, rev.State)
	}
	if n := count(t0, slots); n != 0 {
		t.Errorf("t0: %d slots after the rollback", n)
	}
	if _, err := main.Exec(ctx, "INSERT INTO orders VALUES (900001, 1, 'after the rollback')"); err != nil {
		t.Fatalf("main after the rollback: %v", err)
	}
	out, _, _ := run("workflow", "status", "1", "--topology", from)
	if !strings.Contains(out, "its process ended before the decision") {
		t.Errorf("status:\n%s", out)
	}

	// 2. Killed after the decision, while it drops the old stream's
	// publication (main's pg_publication locked by the test).
	hold, err := main.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// A lock without a transaction id: one would hold up the creation of
	// the stream back's slots.
	if _, err := hold.Exec(ctx, "LOCK TABLE pg_publication IN SHARE MODE"); err != nil {
		t.Fatal(err)
	}
	sw, swLogs = child(t, "workflow", "switch", "1", "--topology", from)
	waitLog(t, swLogs, "step decided")
	poll("the switch to wait for the publication", func() bool {
		return count(other, "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'DROP PUBLICATION%' AND wait_event_type = 'Lock'") == 1
	})
	kill9(t, sw)
	_ = hold.Rollback(ctx)
	if traffic, switching, rev := state(); traffic != "target" || switching || rev.State.Buffer != nil || rev.State.Switched["1"] == nil {
		t.Fatalf("killed after the decision: traffic %s, routing %+v", traffic, rev.State)
	}
	if _, err := main.Exec(ctx, "INSERT INTO orders VALUES (900002, 1, 'refused')"); sqlstate(err) != "40001" {
		t.Fatalf("main after the decision: %v", err)
	}
	// The runner is killed too; the next one finishes the switch.
	kill9(t, runner)
	_, runLogs = child(t, "workflow", "run", "1", "--topology", from)
	poll("the old stream dropped", func() bool {
		return count(other, "SELECT count(*) FROM pg_publication")+count(other, slots) == 0
	})
	if _, err := t0.Exec(ctx, "INSERT INTO orders VALUES (900003, 1, 'on the new shard')"); err != nil {
		t.Fatalf("t0 after the switch: %v", err)
	}
	poll("the stream back", func() bool { return count(main, "SELECT count(*) FROM orders WHERE id = 900003") == 1 })

	// 3. Reverse and switch again, then complete.
	for _, op := range []string{"reverse", "switch"} {
		if out, errOut, err := run("workflow", op, "1", "--topology", from); err != nil {
			t.Fatalf("%s: %v\n%s\n%s\nrunner:\n%s", op, err, out, errOut, runLogs)
		}
	}
	if out, errOut, err := run("workflow", "complete", "1", "--topology", from); err != nil || !strings.Contains(out, "completed") {
		t.Fatalf("complete: %v\n%s\n%s", err, out, errOut)
	}
	if n := count(main, "SELECT count(*) FROM pg_tables WHERE tablename = 'orders'"); n != 0 {
		t.Errorf("main keeps orders after complete")
	}
	const written = "SELECT count(*) FROM orders WHERE id IN (900001, 900003)"
	if n := count(t0, written) + count(conn("t1"), written); n != 2 {
		t.Errorf("the new shards hold %d of the rows written through the switches", n)
	}
	for _, c := range []*pgx.Conn{main, t0} {
		if n := count(c, slots) + count(c, "SELECT count(*) FROM pg_publication"); n != 0 {
			t.Errorf("%d slots and publications after complete", n)
		}
	}
	file, err := topology.Load(from)
	if err != nil {
		t.Fatal(err)
	}
	_, _, rev := state()
	eff, err := routestate.Apply(file, rev)
	if err != nil || len(eff.Topology.Overrides) != 0 {
		t.Fatalf("the written file differs from the routing in force: %v %+v", err, eff.Topology.Overrides)
	}
	if g := file.Group("by_customer"); g == nil || g.Table(topology.QualifiedName{Schema: "public", Name: "orders"}) == nil {
		t.Fatalf("by_customer in the written file: %+v", g)
	}
}
