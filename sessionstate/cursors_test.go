package sessionstate

import (
	"testing"

	"github.com/shardgate/shardgate/planner"
)

func cursorPlan(name string, all bool) *planner.Plan {
	return &planner.Plan{Kind: planner.Fetch, Cursor: &planner.CursorInfo{Name: name, All: all}}
}

func TestCursorTargets(t *testing.T) {
	cs := Cursors{
		"a": {Cluster: "pg1"},
		"b": {Cluster: "pg1", Hold: true},
		"c": {Cluster: "pg0"},
	}
	live := func(c *Cursor) bool { return c.Cluster == "pg1" }
	ts, err := cs.Targets(cursorPlan("a", false), "main", live)
	if err != nil || len(ts) != 1 || ts[0].Cluster != "pg1" {
		t.Fatalf("a: %v %v", ts, err)
	}
	if _, err := cs.Targets(cursorPlan("c", false), "main", live); err == nil || err.Error() != `cursor "c" does not exist (SQLSTATE 34000)` {
		t.Fatalf("dead cursor: %v", err)
	}
	if ts, _ := cs.Targets(cursorPlan("", true), "main", live); len(ts) != 1 || ts[0].Cluster != "pg1" {
		t.Fatalf("CLOSE ALL: %v", ts)
	}
	if ts, _ := (Cursors{}).Targets(cursorPlan("", true), "main", live); len(ts) != 1 || ts[0].Cluster != "main" {
		t.Fatalf("CLOSE ALL without cursors: %v", ts)
	}
	if !cs.AnyHold() {
		t.Fatal("AnyHold")
	}
	cs.Prune(live)
	if _, ok := cs["c"]; ok || len(cs) != 2 {
		t.Fatalf("Prune: %v", cs)
	}
	cs.Closed(&planner.Plan{Kind: planner.ClosePortal, Cursor: &planner.CursorInfo{Name: "b"}})
	if cs.AnyHold() || len(cs) != 1 {
		t.Fatalf("CLOSE b: %v", cs)
	}
	cs.Closed(&planner.Plan{Kind: planner.ClosePortal, Cursor: &planner.CursorInfo{All: true}})
	if len(cs) != 0 {
		t.Fatalf("CLOSE ALL: %v", cs)
	}
}

func TestChannels(t *testing.T) {
	chs := Channels{}
	chs.Track(&planner.Plan{Session: planner.SessionListen | planner.SessionPins, Channels: []string{"a"}})
	chs.Track(&planner.Plan{Session: planner.SessionListen, Channels: []string{"b"}})
	chs.Track(&planner.Plan{Session: planner.SessionUnlisten, Channels: []string{"a"}})
	if len(chs) != 1 || !chs["b"] {
		t.Fatalf("after UNLISTEN a: %v", chs)
	}
	chs.Track(&planner.Plan{Session: planner.SessionUnlisten})
	if len(chs) != 0 {
		t.Fatalf("after UNLISTEN *: %v", chs)
	}
}
