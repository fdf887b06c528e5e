package workflows

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shardgate/shardgate/routestate"
	"github.com/shardgate/shardgate/topology"
)

// TestSwitchWithAFrozenProxyHoldsNothing: a proxy registered with a fresh
// heartbeat that beats no more (frozen, as by SIGSTOP) makes the switch
// abort before any write is held: the live proxy's gate never arms for
// it, the traffic and the routing stay. Once the frozen proxy is gone the
// switch proceeds, held and released by the live proxy.
func TestSwitchWithAFrozenProxyHoldsNothing(t *testing.T) {
	f, spec, _ := groupFixture(t, keyedTwoToFour, 20)
	store, id, rn := createAndStream(t, f, spec)
	defer rn.stop(t)
	ctx := testCtx(t)
	file, err := topology.Parse("from.yaml", []byte(spec.From))
	if err != nil {
		t.Fatal(err)
	}
	gate := routestate.NewGate()
	fctx, cancel := context.WithCancel(ctx)
	fol, err := routestate.Follow(fctx, f.dsn("main"), "127.0.0.1:1", file, gate, func(*topology.Topology) error { return nil }, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); <-fol.Done() }()
	f.exec("main", `INSERT INTO shardgate.proxies (id, addr, pid) VALUES ('frozen', '127.0.0.1:2', 1)`)

	_, err = Switch(ctx, store, id, SwitchOptions{Author: "test", Logf: t.Logf})
	if err == nil || !strings.Contains(err.Error(), "did not acknowledge") || !strings.Contains(err.Error(), "frozen") {
		t.Fatalf("switch with a frozen proxy: %v", err)
	}
	if st := gate.Stats(); !st.ArmedAt.IsZero() {
		t.Errorf("the live proxy held writes for the aborted switch: %+v", st)
	}
	if w, _ := store.Get(ctx, id); w.Traffic != TrafficSource {
		t.Fatalf("traffic %s after the aborted switch", w.Traffic)
	}
	if rev := latestRevision(t, f); rev.State.Buffer != nil || len(rev.State.Switched) != 0 {
		t.Fatalf("routing after the aborted switch: %+v", rev.State)
	}

	f.exec("main", `DELETE FROM shardgate.proxies WHERE id = 'frozen'`)
	// The stream notifies each marker it applied (the switch waits on
	// that notification).
	lis := f.conn("main")
	if _, err := lis.Exec(ctx, "LISTEN "+markerChannel); err != nil {
		t.Fatal(err)
	}
	rec, err := Switch(ctx, store, id, SwitchOptions{Author: "test", Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	var markers []string
	for {
		c, cancel := context.WithTimeout(ctx, time.Second)
		n, err := lis.WaitForNotification(c)
		cancel()
		if err != nil {
			break
		}
		markers = append(markers, n.Payload)
	}
	if !slices.ContainsFunc(markers, func(m string) bool { return strings.HasPrefix(m, "wf1-") }) {
		t.Errorf("markers notified: %q, want the switch's", markers)
	}
	if st := gate.Stats(); st.ArmedAt.IsZero() || st.Released.IsZero() || rec.Proxies[fol.ID].AckMS <= 0 {
		t.Errorf("the live proxy's figures of the switch: %+v, record %+v", st, rec.Proxies)
	}
	if rev := latestRevision(t, f); rev.State.Buffer != nil || rev.State.Switched["1"] == nil && len(rev.State.Switched) != 1 {
		t.Fatalf("routing after the switch: %+v", rev.State)
	}
}
