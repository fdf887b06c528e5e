package workflows

import (
	"os"
	"strings"
	"testing"
)

// TestStatusWithoutRunner: while a runner runs, status names it (host,
// pid, heartbeat); once it is gone (its lock released, as when the
// process dies), status says "no runner since …" and reads each stream's
// lag from its slot on the source, so writes made since show as lag
// instead of the last figures the runner recorded (lag 0).
func TestStatusWithoutRunner(t *testing.T) {
	f, store, ctx, id := createdMoveTables(t, 100)
	rn := startRun(t, store, id)
	waitPhase(t, store, rn, id, PhaseStreaming)
	f.exec("main", "UPDATE orders SET note = 'streamed' WHERE id = 1")
	waitCaughtUp(t, f, rn, "main")
	var st *Status
	waitUntil(t, "the runner's report", func() bool {
		var err error
		if st, err = store.Status(ctx, id); err != nil {
			t.Fatal(err)
		}
		return !st.Streams[0].FromSlot
	})
	host, _ := os.Hostname()
	if r := st.Runner; !r.Reporting || r.PID != os.Getpid() || r.Host != host || !strings.Contains(st.Text(), "runner "+host+" pid ") {
		t.Fatalf("runner while running: %+v\n%s", r, st.Text())
	}

	rn.stop(t)
	c := f.conn("main")
	for i := range 2000 {
		if _, err := c.Exec(ctx, "UPDATE orders SET note = note || '+' WHERE id = $1", 1+i%100); err != nil {
			t.Fatal(err)
		}
	}
	st, err := store.Status(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	text := st.Text()
	if st.Runner.Reporting || !strings.Contains(text, "no runner since ") {
		t.Fatalf("runner after it stopped: %+v\n%s", st.Runner, text)
	}
	s := st.Streams[0]
	if !s.FromSlot || s.LagBytes < 100_000 || !strings.Contains(text, "read from the slot") || strings.Contains(text, "lag 0 bytes") {
		t.Fatalf("lag without a runner: %+v\n%s", s, text)
	}
	t.Logf("%s", text)

	// The next runner catches up and reports again.
	rn = startRun(t, store, id)
	waitCaughtUp(t, f, rn, "main")
	waitUntil(t, "the next runner's report", func() bool {
		st, err := store.Status(ctx, id)
		return err == nil && st.Runner.Reporting && !st.Streams[0].FromSlot
	})
}
