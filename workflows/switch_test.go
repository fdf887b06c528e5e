package workflows

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shardgate/shardgate/keyexpr"
	"github.com/shardgate/shardgate/routestate"
	"github.com/shardgate/shardgate/sqlerr"
	"github.com/shardgate/shardgate/topology"
)

func crashAt(step string) func(string) error {
	return func(s string) error {
		if s == step {
			return errCrash
		}
		return nil
	}
}

func (f *fixture) slots(cluster string) int64 {
	return f.count(cluster, "SELECT count(*) FROM pg_replication_slots WHERE database = current_database()")
}

func (f *fixture) writeErr(cluster, sql string) error {
	_, err := f.conn(cluster).Exec(context.Background(), sql)
	return err
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func latestRevision(t *testing.T, f *fixture) routestate.Revision {
	t.Helper()
	rev, err := routestate.Load(context.Background(), f.conn("main"))
	if err != nil {
		t.Fatal(err)
	}
	return rev
}

// keyedTwoToFour splits 2 -> 4 with the shard key in orders' primary
// key: the stream back (a merge of two new shards into each old one) is
// exact.
var keyedTwoToFour = layout{from: twoToFour.from, to: twoToFour.to, clusters: twoToFour.clusters, ordersPK: "customer_id, id"}

// TestSwitchRefusesAnInexactStreamBack: the stream back after a split is
// a merge; with orders' shard key out of its primary key, a row moving
// between two new shards could be lost on the old one, so the switch is
// refused with 0A000 naming the table before it holds anything: no
// buffer, no slot, no write block, no switch recorded; the dry run says
// so too.
func TestSwitchRefusesAnInexactStreamBack(t *testing.T) {
	f, spec, vs := reshardFixture(t, 20)
	store, id, rn := createAndStream(t, f, spec)
	defer rn.stop(t)
	ctx := testCtx(t)
	before := latestRevision(t, f)
	for _, dry := range []bool{true, false} {
		_, err := Switch(ctx, store, id, SwitchOptions{Author: "test", DryRun: dry})
		if sqlerr.Code(err) != sqlerr.FeatureNotSupported || !strings.Contains(err.Error(), "nothing held") ||
			!strings.Contains(err.Error(), "rows of public.orders from several source clusters") {
			t.Fatalf("dry run %v: %v", dry, err)
		}
	}
	if rev := latestRevision(t, f); rev.Rev != before.Rev {
		t.Errorf("routing revision %d after the refusal, was %d", rev.Rev, before.Rev)
	}
	for _, c := range []string{"t0", "t1", "t2", "t3"} {
		if n := f.slots(c); n != 0 {
			t.Errorf("%s: %d slots", c, n)
		}
	}
	if sw, err := store.getSwitching(ctx, id); sw != nil || err != nil {
		t.Errorf("switching %+v %v", sw, err)
	}
	st, err := store.Status(ctx, id)
	if err != nil || len(st.Switches) != 0 {
		t.Errorf("switches recorded: %v %+v", err, st.Switches)
	}
	f.exec(sourceOf(vs, 1), "INSERT INTO orders VALUES (100001, 1, 'still writable')")
}

// TestSwitchCrashReverseSwitchComplete drives a reshard 2 -> 4 through
// its traffic switches with the runner streaming: a switch whose process
// dies before the decision is rolled back (routing fully old, sources
// writable, no new slot); one that dies right after it is finished by the
// runner (routing fully new, old stream's slots dropped, the stream runs
// back); writes on the serving side reach the other, the standby side
// refuses writes with 40001; reverse, switch again; cancel refused;
// complete leaves no slot, publication or source copy and writes the
// file so that it routes as the revision does.
func TestSwitchCrashReverseSwitchComplete(t *testing.T) {
	f, spec, vs := groupFixture(t, keyedTwoToFour, 200)
	store := f.store()
	ctx := testCtx(t)
	id, _, err := Create(ctx, store, spec, false)
	if err != nil {
		t.Fatal(err)
	}
	rn := startRun(t, store, id)
	defer rn.stop(t)
	waitPhase(t, store, rn, id, PhaseStreaming)
	fast := SwitchOptions{Author: "test", Logf: t.Logf}

	// Dry run: steps, nothing changed.
	rec, err := Switch(ctx, store, id, SwitchOptions{DryRun: true})
	if err != nil || !strings.Contains(strings.Join(rec.Plan, "\n"), "LOCK the tables IN EXCLUSIVE MODE") {
		t.Fatalf("dry run: %+v %v", rec, err)
	}

	// Dies before the decision: rolled back by the runner.
	o := fast
	o.hook = crashAt("prepared")
	if _, err := Switch(ctx, store, id, o); !errors.Is(err, errCrash) {
		t.Fatalf("crash: %v", err)
	}
	waitUntil(t, "rollback", func() bool { sw, _ := store.getSwitching(ctx, id); return sw == nil })
	if rev := latestRevision(t, f); rev.State.Buffer != nil || len(rev.State.Switched) != 0 {
		t.Fatalf("routing after a rolled back switch: %+v", rev.State)
	}
	for _, c := range []string{"t0", "t1", "t2", "t3"} {
		if n := f.slots(c); n != 0 {
			t.Errorf("%s: %d slots after the rollback", c, n)
		}
	}
	cust := int64(1)
	src := sourceOf(vs, cust)
	f.exec(src, "INSERT INTO orders VALUES (100001, 1, 'after rollback')")
	if w, _ := store.Get(ctx, id); w.Traffic != TrafficSource {
		t.Fatalf("traffic %s", w.Traffic)
	}

	// Dies right after the decision: the runner finishes it.
	o.hook = crashAt("decided")
	if _, err := Switch(ctx, store, id, o); !errors.Is(err, errCrash) {
		t.Fatalf("crash after the decision: %v", err)
	}
	if rev := latestRevision(t, f); rev.State.Buffer != nil || rev.State.Switched[fmt.Sprint(id)] == nil {
		t.Fatalf("routing after a decided switch: %+v", rev.State)
	}
	waitUntil(t, "old stream dropped", func() bool { return f.slots("s0")+f.slots("s1") == 0 })
	for _, c := range []string{"t0", "t1", "t2", "t3"} {
		if n := f.slots(c); n != 1 {
			t.Errorf("%s: %d slots for the stream back", c, n)
		}
	}
	if err := f.writeErr(src, "INSERT INTO orders VALUES (100002, 1, 'refused')"); sqlerr.Code(err) != sqlerr.SerializationFailure {
		t.Fatalf("write on the old source after the switch: %v", err)
	}
	tgt := targetOf(t, spec, cust)
	f.exec(tgt, "INSERT INTO orders VALUES (100003, 1, 'on the new shard')")
	waitUntil(t, "stream back", func() bool {
		return f.count(src, "SELECT count(*) FROM orders WHERE id = 100003") == 1
	})
	if err := Cancel(ctx, store, id); sqlerr.Code(err) != sqlerr.ObjectNotInPrerequisiteState {
		t.Fatalf("cancel after a switch: %v", err)
	}

	// Reverse, then switch again.
	if rec, err = Reverse(ctx, store, id, fast); err != nil {
		t.Fatalf("reverse: %v", err)
	}
	t.Logf("reverse: %s", rec.Text())
	if err := f.writeErr(tgt, "INSERT INTO orders VALUES (100004, 1, 'refused')"); sqlerr.Code(err) != sqlerr.SerializationFailure {
		t.Fatalf("write on the new shard after reverse: %v", err)
	}
	f.exec(src, "INSERT INTO orders VALUES (100005, 1, 'back on the source')")
	waitUntil(t, "forward stream again", func() bool {
		return f.count(tgt, "SELECT count(*) FROM orders WHERE id = 100005") == 1
	})
	if rec, err = Switch(ctx, store, id, fast); err != nil {
		t.Fatalf("switch again: %v", err)
	}
	f.exec(tgt, "INSERT INTO orders VALUES (100006, 1, 'switched again')")
	waitUntil(t, "stream back again", func() bool {
		return f.count(src, "SELECT count(*) FROM orders WHERE id = 100006") == 1
	})
	checkClean(t, store, id)
	st, err := store.Status(ctx, id)
	if err != nil || len(st.Switches) != 4 || st.Switches[0].Outcome != "aborted" || st.Switches[3].Outcome != "done" || !strings.Contains(st.Text(), "switch #4 done") {
		t.Fatalf("status: %v\n%s", err, st.Text())
	}
	// Only the streams back from the new shards run: the old forward
	// streams are not listed (with their last figures, lag 0).
	var streams []string
	for _, s := range st.Streams {
		streams = append(streams, s.Source)
	}
	if strings.Join(streams, " ") != "t0 t1 t2 t3" || strings.Contains(st.Text(), "stream from s0") {
		t.Fatalf("streams after the switch: %v\n%s", streams, st.Text())
	}

	// Complete.
	file := filepath.Join(t.TempDir(), "topology.yaml")
	if err := os.WriteFile(file, []byte(spec.From), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Complete(ctx, store, id, CompleteOptions{File: file}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"s0", "s1", "t0", "t1", "t2", "t3"} {
		if n := f.slots(c); n != 0 {
			t.Errorf("%s: %d slots after complete", c, n)
		}
		if n := f.count(c, "SELECT count(*) FROM pg_publication"); n != 0 {
			t.Errorf("%s: %d publications after complete", c, n)
		}
		if n := f.count(c, "SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'shardgate_wf%'"); n != 0 {
			t.Errorf("%s: %d triggers after complete", c, n)
		}
	}
	for _, c := range []string{"s0", "s1"} {
		if n := f.count(c, "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"); n != 0 {
			t.Errorf("%s: %d tables left", c, n)
		}
	}
	written, err := topology.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	eff, err := routestate.Apply(written, latestRevision(t, f))
	if err != nil || len(eff.Topology.Overrides) != 0 {
		t.Fatalf("the written file differs from the routing in force: %+v %v", eff.Topology.Overrides, err)
	}
	if g := written.Group("by_customer"); len(g.Shards) != 4 || g.Shards[0].Cluster != "t0" {
		t.Fatalf("written shards: %+v", g.Shards)
	}
}

// targetOf is the new shard's cluster of a customer.
func targetOf(t *testing.T, spec Spec, customer int64) string {
	t.Helper()
	p, err := NewPlan(spec)
	if err != nil {
		t.Fatal(err)
	}
	rt := newRouter(p, p.table(topology.QualifiedName{Schema: "public", Name: "orders"}))
	rt.vals[0] = keyexpr.Text(fmt.Sprint(customer))
	to, err := rt.route()
	if err != nil {
		t.Fatal(err)
	}
	return p.Targets[to[0]].Name
}
