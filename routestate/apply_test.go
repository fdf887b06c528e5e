package routestate

import (
	"strings"
	"testing"

	"github.com/shardgate/shardgate/sqlerr"
	"github.com/shardgate/shardgate/topology"
)

const fileYAML = `version: 1
clusters:
  pg0: { dsn: "postgres://postgres@127.0.0.1:5441/shop" }
  pg1: { dsn: "postgres://postgres@127.0.0.1:5442/shop" }
groups:
  main:
    unsharded: true
    cluster: pg0
    tables: [settings, notes]
  by_customer:
    index: { column: customer_id, type: bigint, function: xxhash }
    shards: { "-80": pg0, "80-": pg1 }
    tables:
      orders: {}
    secondary_indexes:
      orders_by_sku: { table: orders, column: sku, type: text, state: backfilling }
`

// toYAML reshards by_customer onto four shards on new clusters and moves
// notes into the group.
const toYAML = `version: 1
clusters:
  pg0: { dsn: "postgres://postgres@127.0.0.1:5441/shop" }
  pg1: { dsn: "postgres://postgres@127.0.0.1:5442/shop" }
  n0: { dsn: "postgres://postgres@127.0.0.1:5443/shop" }
  n1: { dsn: "postgres://postgres@127.0.0.1:5444/shop" }
groups:
  main:
    unsharded: true
    cluster: pg0
    tables: [settings]
  by_customer:
    index: { column: customer_id, type: bigint, function: xxhash }
    shards: { "-40": n0, "40-80": n1, "80-c0": n0, "c0-": n1 }
    tables:
      orders: {}
      notes: {}
    secondary_indexes:
      orders_by_sku: { table: orders, column: sku, type: text, state: backfilling }
`

func parse(t *testing.T, y string) *topology.Topology {
	t.Helper()
	topo, err := topology.Parse("test.yaml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

func TestApplyNoRevisionIsTheFile(t *testing.T) {
	file := parse(t, fileYAML)
	e, err := Apply(file, Revision{})
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Topology.Overrides) != 0 {
		t.Fatalf("overrides without a revision: %v", e.Topology.Overrides)
	}
	if p := topology.Diff(file, e.Topology); len(p.Changes) != 0 {
		t.Fatalf("the file alone differs from itself: %+v", p.Changes)
	}
}

func TestApplyGSIStateAndDiffAcceptsIt(t *testing.T) {
	file := parse(t, fileYAML)
	rev := Revision{Rev: 3, Author: "backfill", Reason: "orders_by_sku verified", State: State{GSI: map[string]string{"orders_by_sku": GSIActive, "gone": GSIActive}}}
	e, err := Apply(file, rev)
	if err != nil {
		t.Fatal(err)
	}
	if got := e.Topology.Group("by_customer").SecondaryIndexes[0].State; got != topology.StateActive {
		t.Fatalf("state %s, want active", got)
	}
	if file.Group("by_customer").SecondaryIndexes[0].State != topology.StateBackfilling {
		t.Fatal("Apply modified the file's topology")
	}
	if !e.VSchema.SecondaryIndexes()[0].Active {
		t.Fatal("vschema does not read through the activated index")
	}
	o := e.Topology.OverrideOf("groups.by_customer.secondary_indexes.orders_by_sku.state")
	if o == nil || !strings.Contains(o.Origin, "revision 3 by backfill") {
		t.Fatalf("override %+v", o)
	}
	// A file edit activating it is refused; the same change from the
	// revision is applied, naming the revision.
	edited := parse(t, strings.Replace(fileYAML, "state: backfilling", "state: active", 1))
	if err := topology.Diff(file, edited).Err(); err == nil {
		t.Fatal("activation by a file edit was not refused")
	}
	p := topology.Diff(file, e.Topology)
	if err := p.Err(); err != nil {
		t.Fatalf("activation by a revision refused: %v", err)
	}
	if len(p.Changes) != 1 || !strings.Contains(p.Changes[0].Message, "routing decided by revision 3") || strings.Contains(p.Changes[0].Message, "keep it backfilling") {
		t.Fatalf("changes %+v", p.Changes)
	}
	// The file written back (active) under the same revision: no change.
	e2, err := Apply(edited, rev)
	if err != nil {
		t.Fatal(err)
	}
	if p := topology.Diff(e.Topology, e2.Topology); len(p.Changes) != 0 || len(e2.Topology.Overrides) != 0 {
		t.Fatalf("written-back file differs: %+v %+v", p.Changes, e2.Topology.Overrides)
	}
}

func TestApplySwitchedReshardAndMoveTables(t *testing.T) {
	file := parse(t, fileYAML)
	rev := Revision{Rev: 7, State: State{Switched: map[string]*Switch{
		"1": {Workflow: 1, Kind: "reshard", Group: "by_customer", Tables: []string{"orders"}, Reads: true, Writes: true, To: toYAML},
		"2": {Workflow: 2, Kind: "movetables", Group: "by_customer", Tables: []string{"notes"}, Reads: true, Writes: true, To: toYAML},
	}}}
	e, err := Apply(file, rev)
	if err != nil {
		t.Fatal(err)
	}
	g := e.VSchema.Group("by_customer")
	if len(g.Clusters) != 2 || g.Clusters[0] != "n0" {
		t.Fatalf("by_customer clusters %v", g.Clusters)
	}
	if tb := e.VSchema.Table("public", "notes"); tb == nil || tb.Group.Name != "by_customer" {
		t.Fatalf("notes not moved: %+v", tb)
	}
	if len(file.Group("by_customer").Shards) != 2 || file.Cluster("n0") != nil {
		t.Fatal("Apply modified the file's topology")
	}
	p := topology.Diff(file, e.Topology)
	if err := p.Err(); err != nil {
		t.Fatalf("switch refused: %v", err)
	}
	// Reversed (switch removed): the way back is applied too.
	back, err := Apply(file, Revision{Rev: 8})
	if err != nil {
		t.Fatal(err)
	}
	if err := topology.Diff(e.Topology, back.Topology).Err(); err != nil {
		t.Fatalf("reverse refused: %v", err)
	}
	// Without the revision, the same edit of the file is refused.
	if err := topology.Diff(file, parse(t, toYAML)).Err(); err == nil {
		t.Fatal("reshard by a file edit was not refused")
	}
}

func TestApplyRefusesReadsOnly(t *testing.T) {
	file := parse(t, fileYAML)
	_, err := Apply(file, Revision{Rev: 1, State: State{Switched: map[string]*Switch{
		"1": {Workflow: 1, Kind: "reshard", Group: "by_customer", Reads: true, To: toYAML}}}})
	if sqlerr.Code(err) != sqlerr.FeatureNotSupported {
		t.Fatalf("reads-only switch: %v", err)
	}
}
