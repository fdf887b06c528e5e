package vschema

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/sqlerr"
	"github.com/shardgate/shardgate/topology"
)

const placementTopology = `version: 1
clusters:
  pg0: { dsn: "postgres://postgres@127.0.0.1:5441/shop" }
  pg1: { dsn: "postgres://postgres@127.0.0.1:5442/shop" }
  pg2: { dsn: "postgres://postgres@127.0.0.1:5443/shop" }
  pg3: { dsn: "postgres://postgres@127.0.0.1:5444/shop" }
groups:
  main: { unsharded: true, cluster: pg0 }
  by_tenant:
    index: { name: by_tenant, column: tenant_id, type: bigint, function: range }
    shards:
      - { to: 100, cluster: pg0 }
      - { from: 100, to: 200, cluster: pg1 }
    placement: lookup
    list: { "5": pg2 }
    lookup_clusters: [pg3]
    tables: { accounts: {} }
  by_plain:
    index: { name: by_plain, column: tenant_id, type: bigint, function: range }
    shards:
      - { to: 100, cluster: pg0 }
      - { from: 100, to: 200, cluster: pg1 }
`

// TestPlacementShards: list keys go to their cluster's lookup shard,
// directory keys to theirs, pending ones are refused with 55P03, others
// (even outside every range) by the function; the group's clusters are
// fixed by the file.
func TestPlacementShards(t *testing.T) {
	topo, err := topology.Parse("t.yaml", []byte(placementTopology))
	if err != nil {
		t.Fatal(err)
	}
	g := topo.Group("by_tenant")
	g.Directory = []*topology.DirectoryEntry{{Key: "7", Cluster: "pg3"}, {Key: "500", Cluster: "pg1"}, {Key: "8", Cluster: "pg1", Pending: true}, {Key: "9", Pending: true}}
	vs, err := Build(topo)
	if err != nil {
		t.Fatal(err)
	}
	vg := vs.Group("by_tenant")
	if !slices.Equal(vg.Clusters, []string{"pg0", "pg1", "pg2", "pg3"}) {
		t.Fatalf("clusters %v", vg.Clusters)
	}
	for key, want := range map[int64]string{5: "lookup:pg2 pg2", 7: "lookup:pg3 pg3", 500: "lookup:pg1 pg1", 6: "-100 pg0", 150: "100-200 pg1"} {
		k := IntegerKey(key)
		s, err := vg.ShardFor(k)
		if err != nil {
			t.Fatalf("key %d: %v", key, err)
		}
		if got := s.Name + " " + s.Cluster; got != want {
			t.Errorf("key %d: %s, want %s", key, got, want)
		}
	}
	if by := vg.PlacedBy(IntegerKey(5)) + " " + vg.PlacedBy(IntegerKey(7)) + " " + vg.PlacedBy(IntegerKey(6)); by != "list directory " {
		t.Errorf("placed by %q", by)
	}
	if s, err := vg.FunctionShard(IntegerKey(7)); err != nil || s.Name != "-100" {
		t.Errorf("function shard of 7: %v %v", s, err)
	}
	for _, key := range []int64{8, 9} {
		if _, err := vg.ShardFor(IntegerKey(key)); sqlerr.Code(err) != sqlerr.LockNotAvailable {
			t.Errorf("pending key %d: %v", key, err)
		}
	}
	if _, err := vg.ShardFor(IntegerKey(300)); sqlerr.Code(err) != sqlerr.CheckViolation {
		t.Errorf("key 300 outside the ranges: %v", err)
	}
	for _, bad := range []struct {
		entry topology.DirectoryEntry
		want  string
	}{
		{topology.DirectoryEntry{Key: "1", Cluster: "pg9"}, "names cluster pg9, which the group does not use"},
		{topology.DirectoryEntry{Key: "5", Cluster: "pg0"}, "directory key 5 is in the group's list"},
		{topology.DirectoryEntry{Key: "x", Cluster: "pg0"}, `invalid input syntax for type bigint: "x"`},
	} {
		g.Directory = []*topology.DirectoryEntry{&bad.entry}
		if _, err := Build(topo); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("directory %+v: %v, want %q", bad.entry, err, bad.want)
		}
	}
}

// BenchmarkShardFor: a key of a group without a list or directory, and
// a key a lookup group with 1000 directory entries does not list (the
// map's miss, then the function).
func BenchmarkShardFor(b *testing.B) {
	topo, err := topology.Parse("t.yaml", []byte(placementTopology))
	if err != nil {
		b.Fatal(err)
	}
	g := topo.Group("by_tenant")
	for i := 1000; i < 2000; i++ {
		g.Directory = append(g.Directory, &topology.DirectoryEntry{Key: strconv.Itoa(i), Cluster: "pg3"})
	}
	vs, err := Build(topo)
	if err != nil {
		b.Fatal(err)
	}
	for _, group := range []string{"by_plain", "by_tenant"} {
		vg := vs.Group(group)
		b.Run(group, func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				if _, err := vg.ShardFor(IntegerKey(int64(i%150 + 10))); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
