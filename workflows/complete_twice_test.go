package workflows

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/routestate"
	"github.com/shardgate/shardgate/topology"
)

// TestCompleteTwoReshardsInARow: a reshard 2 -> 4, completed, then a
// split of its shard 80-c0, completed: the topology file ends with the
// split's shards (the layout the proxies route with), never with the
// 80-c0 whose tables the second complete dropped.
func TestCompleteTwoReshardsInARow(t *testing.T) {
	l := keyedTwoToFour
	l.clusters = append(slices.Clone(l.clusters), "u0", "u1")
	f, spec, _ := groupFixture(t, l, 200)
	store := f.store()
	ctx := testCtx(t)
	file := filepath.Join(t.TempDir(), "topology.yaml")
	if err := os.WriteFile(file, []byte(spec.From), 0o644); err != nil {
		t.Fatal(err)
	}
	fast := SwitchOptions{Author: "test", Logf: t.Logf}
	move := func(spec Spec) {
		t.Helper()
		id, _, err := Create(ctx, store, spec, false)
		if err != nil {
			t.Fatal(err)
		}
		rn := startRun(t, store, id)
		waitPhase(t, store, rn, id, PhaseStreaming)
		if _, err := Switch(ctx, store, id, fast); err != nil {
			t.Fatalf("switch %d: %v", id, err)
		}
		if _, err := Complete(ctx, store, id, CompleteOptions{File: file}); err != nil {
			t.Fatalf("complete %d: %v", id, err)
		}
		rn.stop(t)
	}
	move(spec)
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	split := regexp.MustCompile(`"?80-c0"?: t2`)
	if !split.Match(data) {
		t.Fatalf("the first complete wrote:\n%s", data)
	}
	next := spec
	next.From, next.To = string(data), split.ReplaceAllString(string(data), `"80-a0": u0, "a0-c0": u1`)
	move(next)
	written, err := topology.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	var shards []string
	for _, s := range written.Group("by_customer").Shards {
		shards = append(shards, s.Name+":"+s.Cluster)
	}
	if got := strings.Join(shards, " "); got != "-40:t0 40-80:t1 80-a0:u0 a0-c0:u1 c0-:t3" {
		data, _ := os.ReadFile(file)
		t.Fatalf("written shards %s:\n%s", got, data)
	}
	eff, err := routestate.Apply(written, latestRevision(t, f))
	if err != nil {
		t.Fatal(err)
	}
	if p := topology.Diff(eff.Topology, written); len(p.Changes) != 0 {
		t.Fatalf("the written file differs from the routing in force: %+v", p.Changes)
	}
}
