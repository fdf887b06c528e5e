package topology

import (
	"fmt"
	"slices"
	"strings"
)

// placementChanges compares a sharded group's placement, list,
// lookup_clusters and directory. A list value that changes cluster moves
// its rows' route (refused while the group holds data); a directory
// change is a routing revision's decision (applied; decided() names the
// revision).
func (d *differ) placementChanges(o, n *Group) {
	key := "groups." + n.Name
	data := holdsData(o)
	if o.Placement != n.Placement {
		d.add(ChangeApplied, key+".placement", "group %s: placement %s instead of %s", n.Name, n.Placement, o.Placement)
	}
	values := map[string]bool{}
	for _, e := range append(slices.Clone(o.List), n.List...) {
		values[e.Value] = true
	}
	sorted := make([]string, 0, len(values))
	for v := range values {
		sorted = append(sorted, v)
	}
	slices.Sort(sorted)
	for _, v := range sorted {
		before, after := o.ListCluster(v), n.ListCluster(v)
		if before == after {
			continue
		}
		msg := fmt.Sprintf("group %s: list value %s moves from %s to %s", n.Name, v, listPlace(before), listPlace(after))
		if data {
			d.refuse(key+".list", hintMoveData, "%s", msg)
		} else {
			d.add(ChangeApplied, key+".list", "%s (it names no table)", msg)
		}
	}
	for _, c := range n.LookupClusters {
		if !slices.Contains(o.LookupClusters, c) {
			d.add(ChangeApplied, key+".lookup_clusters", "group %s: lookup cluster %s added", n.Name, c)
		}
	}
	for _, c := range o.LookupClusters {
		if slices.Contains(n.LookupClusters, c) {
			continue
		}
		msg := fmt.Sprintf("group %s: lookup cluster %s removed", n.Name, c)
		if data {
			d.refuse(key+".lookup_clusters", "rows placed there would no longer be read by scatters; remove the directory entries that name it and move their rows first", "%s", msg)
		} else {
			d.add(ChangeApplied, key+".lookup_clusters", "%s (it names no table)", msg)
		}
	}
	if before, after := directoryText(o), directoryText(n); before != after {
		d.add(ChangeApplied, key+".directory", "group %s: directory %s instead of %s", n.Name, after, before)
	}
}

func listPlace(cluster string) string {
	if cluster == "" {
		return "the function's shard"
	}
	return "cluster " + cluster
}

// directoryText describes a directory for the reload log: KEY→CLUSTER,
// sorted, pending entries marked.
func directoryText(g *Group) string {
	if len(g.Directory) == 0 {
		return "(empty)"
	}
	parts := make([]string, len(g.Directory))
	for i, e := range g.Directory {
		parts[i] = DirectoryEntryText(e)
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}

// DirectoryEntryText is one entry as the log and topology show print
// it: KEY→CLUSTER, "(pending)" while it settles.
func DirectoryEntryText(e *DirectoryEntry) string {
	s := e.Key + "→" + e.Cluster
	if e.Cluster == "" {
		s = e.Key + "→(function)"
	}
	if e.Pending {
		s += " (pending)"
	}
	return s
}
