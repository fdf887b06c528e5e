package routestate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/topology"
)

func TestWriteBackMakesTheFileTheEffectiveRouting(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "topology.yaml")
	src := strings.Replace(fileYAML, "groups:\n", "# the shop's groups\ngroups:\n", 1)
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	rev := Revision{Rev: 4, State: State{
		GSI:      map[string]string{"orders_by_sku": GSIActive},
		Switched: map[string]*Switch{"1": {Workflow: 1, Kind: "reshard", Group: "by_customer", Tables: []string{"orders"}, Reads: true, Writes: true, To: toYAML}},
	}}
	before, err := Apply(parse(t, src), rev)
	if err != nil {
		t.Fatal(err)
	}
	if len(before.Topology.Overrides) != 2 {
		t.Fatalf("overrides before: %+v", before.Topology.Overrides)
	}
	if _, err := WriteBack(path, rev.State); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if !strings.Contains(string(data), "# the shop's groups") {
		t.Fatalf("comment lost:\n%s", data)
	}
	file, err := topology.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	after, err := Apply(file, rev)
	if err != nil {
		t.Fatal(err)
	}
	if len(after.Topology.Overrides) != 0 {
		t.Fatalf("the written file still differs from the revision: %+v\n%s", after.Topology.Overrides, data)
	}
	if p := topology.Diff(before.Topology, after.Topology); len(p.Changes) != 0 {
		t.Fatalf("effective routing changed by the write-back: %+v", p.Changes)
	}

	// A read-only file: the edit comes back with the error.
	ro := filepath.Join(dir, "ro.yaml")
	if err := os.WriteFile(ro, []byte(src), 0o444); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		t.Log("running as root: the read-only case cannot fail to write")
		return
	}
	edited, err := WriteBack(ro, rev.State)
	if err == nil || !strings.Contains(string(edited), "n0") {
		t.Fatalf("read-only: %v\n%s", err, edited)
	}
}

// TestWriteBackMoveTables: a switched MoveTables writes the moved table
// into its group as the target topology declares it and takes it out of
// main's list; the file then routes as the revision does, comments kept.
func TestWriteBackMoveTables(t *testing.T) {
	path := filepath.Join(t.TempDir(), "topology.yaml")
	src := strings.Replace(fileYAML, "tables: [settings, notes]", "tables: [settings, notes]  # main's own", 1)
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	rev := Revision{Rev: 2, State: State{Switched: map[string]*Switch{"3": {Workflow: 3, Kind: "movetables", Group: "by_customer",
		Tables: []string{"public.notes"}, Reads: true, Writes: true, To: toYAML}}}}
	before, err := Apply(parse(t, src), rev)
	if err != nil || len(before.Topology.Overrides) == 0 {
		t.Fatalf("overrides before: %v %+v", err, before.Topology.Overrides)
	}
	if _, err := WriteBack(path, rev.State); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	file, err := topology.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	after, err := Apply(file, rev)
	if err != nil || len(after.Topology.Overrides) != 0 {
		t.Fatalf("the written file differs from the revision: %v %+v\n%s", err, after.Topology.Overrides, data)
	}
	notes := topology.QualifiedName{Schema: "public", Name: "notes"}
	if file.Group("by_customer").Table(notes) == nil || file.Group("main").Table(notes) != nil ||
		len(file.Group("by_customer").Shards) != 2 || !strings.Contains(string(data), "# main's own") {
		t.Fatalf("written file:\n%s", data)
	}
}

// splitYAML splits toYAML's shard 80-c0 onto two new clusters: the
// workflow after the reshard that made it.
var splitYAML = strings.NewReplacer(
	`"80-c0": n0`, `"80-a0": n2, "a0-c0": n3`,
	"groups:\n", "  n2: { dsn: \"postgres://postgres@127.0.0.1:5445/shop\" }\n  n3: { dsn: \"postgres://postgres@127.0.0.1:5446/shop\" }\ngroups:\n",
).Replace(toYAML)

// TestWriteBackAppliesWorkflowsInRoutingOrder: two reshards of one group
// switched in a row (2 → 4, then a split of 80-c0) are written in the
// order the proxies route them, so the file always ends with the split's
// shards, never with the 80-c0 whose tables complete just dropped. The
// map of switched workflows is walked in random order, so the write-back
// is repeated many times (and with ids 9 and 10, ordered as numbers).
func TestWriteBackAppliesWorkflowsInRoutingOrder(t *testing.T) {
	for _, ids := range [][2]string{{"1", "2"}, {"9", "10"}} {
		st := State{Switched: map[string]*Switch{
			ids[0]: {Workflow: 1, Kind: "reshard", Group: "by_customer", Tables: []string{"orders"}, Reads: true, Writes: true, To: toYAML},
			ids[1]: {Workflow: 2, Kind: "reshard", Group: "by_customer", Tables: []string{"orders"}, Reads: true, Writes: true, To: splitYAML},
		}}
		routed, err := Apply(parse(t, fileYAML), Revision{Rev: 5, State: st})
		if err != nil {
			t.Fatal(err)
		}
		want := shardList(routed.Topology.Group("by_customer"))
		if want != "-40:n0 40-80:n1 80-a0:n2 a0-c0:n3 c0-:n1" {
			t.Fatalf("routing: %s", want)
		}
		for i := 0; i < 64; i++ {
			edited, err := Edit([]byte(fileYAML), st)
			if err != nil {
				t.Fatal(err)
			}
			file := parse(t, string(edited))
			if got := shardList(file.Group("by_customer")); got != want {
				t.Fatalf("ids %v, repeat %d: the file has %s, the proxies route with %s\n%s", ids, i, got, want, edited)
			}
			after, err := Apply(file, Revision{Rev: 5, State: st})
			if err != nil {
				t.Fatal(err)
			}
			if p := topology.Diff(routed.Topology, after.Topology); len(p.Changes) != 0 {
				t.Fatalf("ids %v, repeat %d: effective routing changed by the write-back: %+v", ids, i, p.Changes)
			}
		}
	}
}

func shardList(g *topology.Group) string {
	var parts []string
	for _, s := range g.Shards {
		parts = append(parts, s.Name+":"+s.Cluster)
	}
	return strings.Join(parts, " ")
}
