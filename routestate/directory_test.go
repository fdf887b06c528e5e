package routestate

import (
	"strings"
	"testing"

	"github.com/shardgate/shardgate/topology"
	"github.com/shardgate/shardgate/vschema"
)

// TestApplyDirectory: a revision's directory reaches the effective
// topology (with its origin) and the routing; a directory on a group that
// is not placement: lookup is refused; one of a group the file no longer
// has is ignored.
func TestApplyDirectory(t *testing.T) {
	yaml := strings.Replace(fileYAML, "    tables:\n      orders: {}", "    placement: lookup\n    tables:\n      orders: {}", 1)
	file, err := topology.Parse("t.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	st := State{Directory: map[string]map[string]*Placed{
		"by_customer": {"42": {Cluster: "pg1"}, "7": {Cluster: "pg0", Pending: true, From: "pg1"}},
		"gone":        {"1": {Cluster: "pg0"}},
	}}
	e, err := Apply(file, Revision{Rev: 4, Author: "ops", State: st})
	if err != nil {
		t.Fatal(err)
	}
	if o := e.Topology.OverrideOf("groups.by_customer.directory"); o == nil || o.Origin != "revision 4 by ops" {
		t.Fatalf("override: %+v", e.Topology.Overrides)
	}
	if file.Group("by_customer").Directory != nil {
		t.Fatal("Apply changed the file's group")
	}
	g := e.VSchema.Group("by_customer")
	s, err := g.ShardFor(vschema.IntegerKey(42))
	if err != nil || s.Name != "lookup:pg1" {
		t.Fatalf("key 42: %v %v", s, err)
	}
	if _, err := g.ShardFor(vschema.IntegerKey(7)); err == nil {
		t.Fatal("a pending key routed")
	}
	plain, err := topology.Parse("t.yaml", []byte(fileYAML))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Apply(plain, Revision{Rev: 4, State: st}); err == nil || !strings.Contains(err.Error(), "placement is function, not lookup") {
		t.Fatalf("directory on a function group: %v", err)
	}
	if !sameRouting(State{}, State{Buffer: &BufferRequest{ID: "x"}}) || sameRouting(State{}, st) {
		t.Fatal("a directory change must reload the routing; a buffer alone must not")
	}
}
