package routestate

import (
	"maps"
	"slices"
	"strconv"

	"github.com/shardgate/shardgate/keyexpr"
	"github.com/shardgate/shardgate/topology"
	"github.com/shardgate/shardgate/vschema"
)

// Placed is one entry of a lookup group's directory in a revision's
// state: where a key goes.
type Placed struct {
	// Cluster is where the key goes; "" only while a removal is pending.
	Cluster string `json:"cluster,omitempty"`
	// Pending marks an entry being changed: every proxy refuses the key
	// (55P03) until the entry settles (PlaceKey).
	Pending bool `json:"pending,omitempty"`
	// From is, on a pending entry, the cluster the key was routed to
	// before the change: where its rows are checked for.
	From string `json:"from,omitempty"`
}

// applyDirectory sets each lookup group's directory from the state (a
// directory of a group the file does not have is ignored, as a GSI state
// is). vschema.Build refuses a directory on a group without placement:
// lookup, or one naming a cluster the group does not use.
func applyDirectory(e *topology.Topology, dir map[string]map[string]*Placed, origin string) {
	for _, name := range slices.Sorted(maps.Keys(dir)) {
		entries := dir[name]
		gi := slices.IndexFunc(e.Groups, func(g *topology.Group) bool { return g.Name == name })
		if gi < 0 || len(entries) == 0 {
			continue
		}
		g := *e.Groups[gi]
		g.Directory = nil
		for _, key := range slices.Sorted(maps.Keys(entries)) {
			p := entries[key]
			g.Directory = append(g.Directory, &topology.DirectoryEntry{Key: key, Cluster: p.Cluster, Pending: p.Pending})
		}
		e.Groups[gi] = &g
		e.Overrides = append(e.Overrides, topology.Override{Key: "groups." + name + ".directory", Origin: origin})
	}
}

// KeyText is a key's text as the directory stores it: an integer in
// decimal, text as it is, a uuid in its canonical form.
func KeyText(k vschema.Key) string {
	if v, ok := k.Int(); ok {
		return strconv.FormatInt(v, 10)
	}
	if u, ok := k.UUID(); ok {
		return keyexpr.FormatUUID(u)
	}
	s, _ := k.Text()
	return s
}
