package topology

import (
	"fmt"
	"slices"
)

// placement is where a topology puts one table.
type placement struct {
	group  *Group
	named  bool   // false: the file does not name it, so it lives in main
	role   string // "table" (of an unsharded group), "member table" or "reference table"
	column string // a member of a column-indexed group: its key column
}

func placementOf(t *Topology, name QualifiedName) placement {
	for _, g := range t.Groups {
		if tb := g.Table(name); tb != nil {
			p := placement{group: g, named: true, role: "table"}
			if !g.Unsharded {
				p.role = "member table"
				if g.Index != nil && g.Index.Expression == nil {
					p.column = g.Index.Column
					if tb.Column != "" {
						p.column = tb.Column
					}
				}
			}
			return p
		}
		if g.IsReference(name) {
			return placement{group: g, named: true, role: "reference table"}
		}
	}
	return placement{group: t.Main(), role: "table"}
}

func (p placement) String() string {
	switch {
	case p.group.Name == MainGroup:
		return "main"
	case p.role == "reference table":
		return "group " + p.group.Name + " as a reference table"
	}
	return "group " + p.group.Name
}

// clusters returns the clusters a placement's rows may live on, one per
// distinct database, in file order.
func (p placement) clusters(t *Topology) []string {
	var names, locs []string
	add := func(c string) {
		if l := clusterLocation(t, c); !slices.Contains(locs, l) {
			names, locs = append(names, c), append(locs, l)
		}
	}
	if p.group.Unsharded {
		add(p.group.Cluster)
	}
	for _, s := range p.group.Shards {
		add(s.Cluster)
	}
	return names
}

// namedTables lists every table either topology names: the new file's
// order first, then the ones only the old file names.
func (d *differ) namedTables() []QualifiedName {
	var out []QualifiedName
	for _, t := range []*Topology{d.new, d.old} {
		for _, g := range t.Groups {
			for _, tb := range g.Tables {
				if !slices.Contains(out, tb.QualifiedName) {
					out = append(out, tb.QualifiedName)
				}
			}
			for _, r := range g.Reference {
				if !slices.Contains(out, r) {
					out = append(out, r)
				}
			}
		}
	}
	return out
}

// tables compares where each table lives. A table that changes group,
// role or key column keeps its rows where they are, so the change is
// applied only if it holds none there (an EmptyCheck), unless it stays in
// one unsharded database.
func (d *differ) tables() {
	for _, name := range d.namedTables() {
		po, pn := placementOf(d.old, name), placementOf(d.new, name)
		key := "tables." + name.String()
		var msg string
		switch {
		case po.group.Name != pn.group.Name:
			msg = fmt.Sprintf("table %s moves from %s to %s", name, po, pn)
		case po.role != pn.role:
			msg = fmt.Sprintf("table %s of group %s changes from a %s to a %s", name, pn.group.Name, po.role, pn.role)
		case po.column != pn.column && indexKeyText(po.group.Index) == indexKeyText(pn.group.Index):
			// (A new index key is the group's change, refused there.)
			msg = fmt.Sprintf("table %s of group %s changes its key column from %s to %s", name, pn.group.Name, po.column, pn.column)
		case po.named != pn.named:
			if pn.named {
				d.add(ChangeApplied, key, "table %s is now named in group main", name)
			} else {
				d.add(ChangeApplied, key, "table %s is no longer named; it stays in main", name)
			}
			continue
		default:
			continue
		}
		from := po.clusters(d.old)
		if po.group.Unsharded && pn.group.Unsharded && clusterLocation(d.old, from[0]) == clusterLocation(d.new, pn.group.Cluster) {
			d.add(ChangeApplied, key, "%s, in the same database %s", msg, clusterLocation(d.new, pn.group.Cluster))
			continue
		}
		d.changes = append(d.changes, Change{Class: ChangeApplied, Key: key, Message: msg, Empty: &EmptyCheck{Table: name, Clusters: from}})
	}
}

// secondaryIndexes compares global secondary indexes by name. Additions
// in state backfilling, removals and deactivations are applied; an index
// that would start serving reads (added as active, or activated) is
// refused — its entries for the rows written before it existed were never
// filled — and so is one whose definition changes while it serves reads,
// since its entries were built for the old definition.
func (d *differ) secondaryIndexes() {
	type gsi struct {
		group string
		si    *SecondaryIndex
	}
	collect := func(t *Topology) ([]string, map[string]gsi) {
		var names []string
		m := map[string]gsi{}
		for _, g := range t.Groups {
			for _, si := range g.SecondaryIndexes {
				names = append(names, si.Name)
				m[si.Name] = gsi{g.Name, si}
			}
		}
		return names, m
	}
	oldNames, olds := collect(d.old)
	newNames, news := collect(d.new)
	def := func(x gsi) string {
		return fmt.Sprintf("%s.%s (%s) in group %s", x.si.Table, x.si.Indexed(), x.si.Types(), x.group)
	}
	for _, name := range newNames {
		n := news[name]
		key := "groups." + n.group + ".secondary_indexes." + name
		o, ok := olds[name]
		switch {
		case !ok && n.si.State == StateActive:
			d.refuse(key, "add it in state backfilling: it is then kept on every write but not read until a backfill has filled and verified it",
				"secondary index %s added on %s as active: its lookup table has no entries for the rows already there, so reads through it would miss them", name, def(n))
			continue
		case !ok:
			d.add(ChangeApplied, key, "secondary index %s added on %s, state %s", name, def(n), n.si.State)
			continue
		case def(o) != def(n) && n.si.State == StateActive:
			d.refuse(key, "remove it, reload, then add the new definition in state backfilling",
				"secondary index %s changes from %s to %s while active: its entries were built for the old definition", name, def(o), def(n))
			continue
		case def(o) != def(n):
			d.add(ChangeApplied, key, "secondary index %s changes from %s to %s, state %s", name, def(o), def(n), n.si.State)
		}
		switch {
		case o.si.State != n.si.State && n.si.State == StateActive:
			d.refuse(key+".state", "keep it backfilling: shardgate has no backfill yet to fill and verify its entries for the rows written before it was added",
				"secondary index %s changes state from %s to active by an edit of the file: entries for rows written before it existed may be missing, and reads through it would miss those rows", name, o.si.State)
		case o.si.State != n.si.State:
			d.add(ChangeApplied, key+".state", "secondary index %s changes state from %s to %s", name, o.si.State, n.si.State)
		}
	}
	for _, name := range oldNames {
		if _, ok := news[name]; !ok {
			o := olds[name]
			d.add(ChangeApplied, "groups."+o.group+".secondary_indexes."+name, "secondary index %s of group %s removed", name, o.group)
		}
	}
}

// sequences compares the main group's sequences and the columns filled
// from them: where ids come from does not move rows.
func (d *differ) sequences() {
	om, nm := d.old.Main(), d.new.Main()
	for _, s := range nm.Sequences {
		if !slices.Contains(om.Sequences, s) {
			d.add(ChangeApplied, "groups.main.sequences", "sequence %s added to main", s)
		}
	}
	for _, s := range om.Sequences {
		if !slices.Contains(nm.Sequences, s) {
			d.add(ChangeApplied, "groups.main.sequences", "sequence %s removed from main", s)
		}
	}
	binding := func(t *Topology, name QualifiedName) *SequenceBinding {
		for _, g := range t.Groups {
			if tb := g.Table(name); tb != nil {
				return tb.Sequence
			}
		}
		return nil
	}
	text := func(b *SequenceBinding) string {
		if b == nil {
			return "no column from a sequence"
		}
		return fmt.Sprintf("column %s from sequence %s", b.Column, b.Name)
	}
	moves := func(t *Topology, name QualifiedName) string {
		for _, g := range t.Groups {
			if tb := g.Table(name); tb != nil && tb.ShardKeyUpdate != "" {
				return tb.ShardKeyUpdate
			}
		}
		return ShardKeyRefuse
	}
	for _, name := range d.namedTables() {
		if mo, mn := moves(d.old, name), moves(d.new, name); mo != mn {
			d.add(ChangeApplied, "tables."+name.String()+".shard_key_update", "table %s: shard_key_update %s, was %s", name, mn, mo)
		}
		bo, bn := binding(d.old, name), binding(d.new, name)
		if text(bo) != text(bn) {
			d.add(ChangeApplied, "tables."+name.String()+".sequence", "table %s: %s, was %s", name, text(bn), text(bo))
		}
	}
}
