package vschema

import (
	"fmt"
	"slices"

	"github.com/shardgate/shardgate/keyexpr"
	"github.com/shardgate/shardgate/sqlerr"
	"github.com/shardgate/shardgate/topology"
)

// Placement sources (Group.PlacedBy).
const (
	PlacedByList      = "list"
	PlacedByDirectory = "directory"
)

// placement is where a key of the list or the directory goes.
type placement struct {
	shard   int // position in Group.Shards
	source  string
	pending bool
}

// PlacedShardPrefix starts the name of a shard that holds keys placed by
// value (a list or a directory) on one cluster: "lookup:pg3". Such shards
// follow the function's shards in Group.Shards, one per cluster.
const PlacedShardPrefix = "lookup:"

// addPlacements compiles a sharded group's list and directory: one shard
// per cluster they place keys on (after the function's shards), and the
// keys' map. The list's clusters and lookup_clusters join the group's
// clusters; a directory may name only clusters the group already uses,
// so a revision never changes where a scatter goes.
func (g *Group) addPlacements(tg *topology.Group) error {
	if len(tg.List) == 0 && len(tg.LookupClusters) == 0 && len(tg.Directory) == 0 {
		return nil
	}
	g.placed = map[Key]placement{}
	shardOn := func(cluster string) int {
		name := PlacedShardPrefix + cluster
		if i := slices.IndexFunc(g.Shards, func(s *Shard) bool { return s.Name == name }); i >= 0 {
			return i
		}
		i := len(g.Shards)
		g.Shards = append(g.Shards, &Shard{Name: name, Cluster: cluster, Index: i, names: []string{name}})
		if !slices.Contains(g.Clusters, cluster) {
			g.Clusters = append(g.Clusters, cluster)
		}
		return i
	}
	for _, c := range tg.PlacedClusters() {
		shardOn(c)
	}
	for _, e := range tg.List {
		key, err := g.Index.KeyFromValue(keyexpr.Text(e.Value))
		if err != nil {
			return fmt.Errorf("list value %s: %w", e.Value, err)
		}
		if _, dup := g.placed[key]; dup {
			return fmt.Errorf("list value %s is listed twice", e.Value)
		}
		g.placed[key] = placement{shard: shardOn(e.Cluster), source: PlacedByList}
	}
	if len(tg.Directory) > 0 && !tg.Lookup() {
		return fmt.Errorf("the directory has %d entries, but the group's placement is %s, not lookup", len(tg.Directory), tg.Placement)
	}
	allowed := tg.DirectoryClusters()
	for _, e := range tg.Directory {
		key, err := g.Index.KeyFromValue(keyexpr.Text(e.Key))
		if err != nil {
			return fmt.Errorf("directory key %s: %w", e.Key, err)
		}
		if p, dup := g.placed[key]; dup && p.source == PlacedByList {
			return fmt.Errorf("directory key %s is in the group's list", e.Key)
		}
		if e.Cluster == "" {
			if !e.Pending {
				return fmt.Errorf("directory key %s names no cluster", e.Key)
			}
			g.placed[key] = placement{shard: -1, source: PlacedByDirectory, pending: true}
			continue
		}
		if !slices.Contains(allowed, e.Cluster) {
			return fmt.Errorf("directory key %s names cluster %s, which the group does not use (add it to lookup_clusters)", e.Key, e.Cluster)
		}
		g.placed[key] = placement{shard: shardOn(e.Cluster), source: PlacedByDirectory, pending: e.Pending}
	}
	return nil
}

// placedShard is ShardFor for a key of the list or the directory.
func (g *Group) placedShard(key Key, p placement) (*Shard, error) {
	if p.pending {
		return nil, sqlerr.New(sqlerr.LockNotAvailable, "key %s of group %q is being placed", key, g.Name).
			WithDetail("Its directory entry is changing; every proxy refuses the key until the change settles.").
			WithHint("Retry in a moment.")
	}
	return g.Shards[p.shard], nil
}

// PlacedBy says what places key: PlacedByList, PlacedByDirectory, or ""
// for the group's function.
func (g *Group) PlacedBy(key Key) string {
	return g.placed[key].source
}

// FunctionShard is the shard the group's function gives key, whatever
// the list or directory says: where the key's rows live when it has no
// entry.
func (g *Group) FunctionShard(key Key) (*Shard, error) {
	if g.Unsharded {
		return g.Shards[0], nil
	}
	i, err := g.Index.Function.Shard(key)
	if err != nil {
		return nil, err
	}
	return g.Shards[i], nil
}
