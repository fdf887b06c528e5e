package topology

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Placements of a sharded group (Group.Placement).
const (
	// PlacementFunction places every key by the index's function (the
	// default), apart from the keys of the group's list.
	PlacementFunction = "function"
	// PlacementLookup places the keys of the group's directory (a routing
	// revision in main) on the cluster it names; every other key by the
	// list, then the function.
	PlacementLookup = "lookup"
)

// ListEntry is one value of a group's static list: rows whose shard key
// is Value live on Cluster. Value is the key as the index computes it
// (an expression index's result), in its text form.
type ListEntry struct {
	Value   string
	Cluster string
	Pos     Position
}

// DirectoryEntry is one key of a lookup group's directory. A Pending
// entry is a key being placed or removed: statements on it are refused
// until the entry settles, so no proxy writes it on the old cluster
// once any routes it to the new one.
type DirectoryEntry struct {
	Key     string
	Cluster string // "" while a removal is pending
	Pending bool
}

// Lookup reports whether the group has a directory (placement: lookup).
func (g *Group) Lookup() bool { return g.Placement == PlacementLookup }

// ListCluster returns the cluster the group's list places a key's text
// on, or "".
func (g *Group) ListCluster(value string) string {
	for _, e := range g.List {
		if e.Value == value {
			return e.Cluster
		}
	}
	return ""
}

// PlacedClusters are the clusters that hold keys placed by value rather
// than by the function: the list's, then lookup_clusters, each once.
func (g *Group) PlacedClusters() []string {
	var out []string
	for _, e := range g.List {
		if !slices.Contains(out, e.Cluster) {
			out = append(out, e.Cluster)
		}
	}
	for _, c := range g.LookupClusters {
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

// DirectoryClusters are the clusters a lookup group's directory may
// name: its shards', its list's and its lookup_clusters.
func (g *Group) DirectoryClusters() []string {
	var out []string
	for _, s := range g.Shards {
		if !slices.Contains(out, s.Cluster) {
			out = append(out, s.Cluster)
		}
	}
	for _, c := range g.PlacedClusters() {
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

// placement reads a sharded group's placement, list and lookup_clusters.
func (gd *groupDecoder) placement(g *Group, fs map[string]field) {
	g.Placement = PlacementFunction
	if f, ok := fs["placement"]; ok {
		if p, ok := gd.oneOf(f.val, "placement", PlacementFunction, PlacementLookup); ok {
			g.Placement = p
		}
	}
	if f, ok := fs["list"]; ok {
		gd.valueList(f, g)
	}
	f, ok := fs["lookup_clusters"]
	if !ok {
		return
	}
	if !g.Lookup() {
		gd.errorf(f.key, "lookup_clusters: needs placement: lookup (they are the clusters its directory may name besides the shards')")
		return
	}
	items, _ := gd.list(f.val, "lookup_clusters")
	first := map[string]int{}
	for _, it := range items {
		c, ok := gd.clusterRef(it, gd.t)
		if !ok {
			continue
		}
		if line, dup := first[c]; dup {
			gd.errorf(it, "cluster %s is listed twice in lookup_clusters (first at line %d)", c, line)
			continue
		}
		first[c] = it.Line
		g.LookupClusters = append(g.LookupClusters, c)
	}
}

// valueList reads list: a mapping from key value to cluster. Values are
// checked against the index type where the file can tell (integers in
// range, uuids of 32 hex digits), and two spellings of one integer are
// one value.
func (gd *groupDecoder) valueList(f field, g *Group) {
	ps, ok := gd.pairs(f.val, "list")
	if !ok {
		return
	}
	typ := ""
	if g.Index != nil {
		typ = g.Index.Type
	}
	first := map[string]int{}
	for _, p := range ps {
		v, ok := gd.listValue(p, typ)
		if !ok {
			continue
		}
		if line, dup := first[v]; dup {
			gd.errorf(p.key, "list value %s is listed twice (first at line %d)", v, line)
			continue
		}
		first[v] = p.key.Line
		c, ok := gd.clusterRef(p.val, gd.t)
		if !ok {
			continue
		}
		g.List = append(g.List, &ListEntry{Value: v, Cluster: c, Pos: pos(p.key)})
	}
	if len(ps) == 0 {
		gd.errorf(f.key, "list: needs at least one value (or leave it out)")
	}
}

// listValue checks one value of a list against the key type and returns
// its canonical text.
func (gd *groupDecoder) listValue(p field, typ string) (string, bool) {
	v := p.key.Value
	if v == "" {
		gd.errorf(p.key, "a list value must not be empty")
		return "", false
	}
	switch {
	case IsIntegerType(typ):
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		lo, hi := typeBounds(typ)
		if err != nil || n < lo || n > hi {
			gd.errorf(p.key, "list value %q is not a %s (the index's type)", v, typ)
			return "", false
		}
		return strconv.FormatInt(n, 10), true
	case typ == TypeUUID:
		hex := strings.NewReplacer("-", "", "{", "", "}", "").Replace(strings.ToLower(v))
		if len(hex) != 32 || strings.Trim(hex, "0123456789abcdef") != "" {
			gd.errorf(p.key, "list value %q is not a uuid (the index's type)", v)
			return "", false
		}
		return fmt.Sprintf("%s-%s-%s-%s-%s", hex[:8], hex[8:12], hex[12:16], hex[16:20], hex[20:]), true
	}
	return v, true
}
