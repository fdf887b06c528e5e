package workflows

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/shardgate/shardgate/sqlerr"
)

// TestSwitchOpenTransactionsSequencesAndSteps: the rule for transactions
// open on a moving table at switch time. One that wrote the table and
// ends within TxWait lets the switch proceed (its row reaches the new
// shards); one still open after TxWait makes the switch abort, rolled
// back, and then commits unharmed; a transaction open since before the
// hold that writes once the writes are blocked gets 40001. The sequences
// the tables own are set past the serving side's values on the other side
// (switch and reverse), and each switch records the time of its steps.
func TestSwitchOpenTransactionsSequencesAndSteps(t *testing.T) {
	f, spec, vs := groupFixture(t, keyedTwoToFour, 50)
	store, id, rn := createAndStream(t, f, spec)
	defer rn.stop(t)
	ctx := testCtx(t)
	for _, c := range []string{"s0", "s1", "t0", "t1", "t2", "t3"} {
		f.exec(c, "CREATE SEQUENCE orders_seq OWNED BY orders.id")
	}
	f.exec("s0", "SELECT setval('orders_seq', 5000)")
	f.exec("s1", "SELECT setval('orders_seq', 7000)")
	src := sourceOf(vs, 1)

	// Still open after TxWait: the switch aborts, the transaction goes on.
	// (The lock a write takes, without a transaction id yet: all the
	// test's databases share one server, where creating the stream back's
	// slots waits for the transactions that hold one.)
	open, err := f.conn(src).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := open.Exec(ctx, "LOCK TABLE orders IN ROW EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	o := SwitchOptions{Author: "test", Logf: t.Logf, TxWait: 300 * time.Millisecond}
	if _, err := Switch(ctx, store, id, o); err == nil || !strings.Contains(err.Error(), "block writes") || sqlerr.Code(err) != sqlerr.LockNotAvailable {
		t.Fatalf("switch with a transaction open past --tx-wait: %v", err)
	}
	if _, err := open.Exec(ctx, "INSERT INTO orders VALUES (200001, 1, 'open too long')"); err != nil {
		t.Fatal(err)
	}
	if err := open.Commit(ctx); err != nil {
		t.Fatalf("the open transaction after the aborted switch: %v", err)
	}
	if w, _ := store.Get(ctx, id); w.Traffic != TrafficSource {
		t.Fatalf("traffic %s after the aborted switch", w.Traffic)
	}
	if rev := latestRevision(t, f); rev.State.Buffer != nil || len(rev.State.Switched) != 0 {
		t.Fatalf("routing after the aborted switch: %+v", rev.State)
	}
	f.exec(src, "INSERT INTO orders VALUES (200002, 1, 'after the abort')")

	// Ends within TxWait: the switch proceeds. A transaction open since
	// before the hold (it has read the table) that writes once the
	// writes are blocked gets 40001.
	open, err = f.conn(src).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := open.Exec(ctx, "LOCK TABLE orders IN ROW EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	reader, err := f.conn(sourceOf(vs, 2)).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reader.Exec(ctx, "SELECT count(*) FROM orders"); err != nil {
		t.Fatal(err)
	}
	var lateWrite error
	o.TxWait = 10 * time.Second
	o.hook = func(step string) error {
		switch step {
		case "armed":
			go func() {
				time.Sleep(300 * time.Millisecond)
				if _, err := open.Exec(context.Background(), "INSERT INTO orders VALUES (200003, 1, 'ends in time')"); err == nil {
					_ = open.Commit(context.Background())
				}
			}()
		case "blocked":
			_, lateWrite = reader.Exec(ctx, "INSERT INTO orders VALUES (200004, 2, 'too late')")
		}
		return nil
	}
	rec, err := Switch(ctx, store, id, o)
	if err != nil {
		t.Fatalf("switch with a transaction that ends within --tx-wait: %v", err)
	}
	_ = reader.Rollback(ctx)
	if sqlerr.Code(lateWrite) != sqlerr.SerializationFailure {
		t.Fatalf("a write of a transaction open before the hold, once writes are blocked: %v", lateWrite)
	}
	tgt := targetOf(t, spec, 1)
	for _, want := range []int64{200001, 200002, 200003} {
		if n := f.count(tgt, "SELECT count(*) FROM orders WHERE id = $1", want); n != 1 {
			t.Errorf("order %d on the new shard %s: %d rows", want, tgt, n)
		}
	}
	var names []string
	for _, st := range rec.Steps {
		names = append(names, st.Name)
	}
	if got := strings.Join(names, ","); got != "before the hold,arm,acks,block,catch-up and sequences,decide" {
		t.Errorf("steps recorded: %s", got)
	}
	st, err := store.Status(ctx, id)
	if err != nil || !strings.Contains(st.Text(), "steps (ms): before the hold ") {
		t.Errorf("status: %v\n%s", err, st.Text())
	}
	for _, c := range []string{"t0", "t1", "t2", "t3"} {
		if v := f.count(c, "SELECT last_value FROM orders_seq"); v != 7000 {
			t.Errorf("%s: orders_seq at %d after the switch, want 7000", c, v)
		}
	}

	// Reverse: the old shards' sequences go past the new ones'.
	f.exec("t2", "SELECT setval('orders_seq', 9000)")
	if _, err := Reverse(ctx, store, id, SwitchOptions{Author: "test", Logf: t.Logf}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"s0", "s1"} {
		if v := f.count(c, "SELECT last_value FROM orders_seq"); v != 9000 {
			t.Errorf("%s: orders_seq at %d after the reverse, want 9000", c, v)
		}
	}
	checkClean(t, store, id)
}
