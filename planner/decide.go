package planner

import (
	"strings"

	"github.com/shardgate/shardgate/sqlerr"
	"github.com/shardgate/shardgate/vschema"
)

// decide turns the analysis of a statement whose top level is top into a
// Route, or a 0A000 error that names the tables and groups involved.
func (a *analysis) decide(top *level) (*Route, error) {
	if a.err != nil {
		return nil, a.err
	}
	g, err := a.singleGroup()
	if err != nil {
		return nil, err
	}
	if g == nil {
		return &Route{Opcode: Unsharded, Group: a.p.vs.Main()}, nil
	}
	if g.Unsharded {
		return &Route{Opcode: Unsharded, Group: g}, nil
	}

	var sharded, refWrites []*instance
	for _, inst := range a.insts {
		switch {
		case inst.rel.kind == relSharded:
			sharded = append(sharded, inst)
		case inst.rel.kind == relReference && inst.level.write && inst == inst.level.target:
			refWrites = append(refWrites, inst)
		}
	}
	if len(refWrites) > 0 {
		if len(sharded) > 0 {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported,
				"writing reference table %s from sharded table %s is not supported",
				refWrites[0].rel.display, sharded[0].rel.display).
				WithDetail("Every copy of %s must receive the same rows, but %s (group %s) differs per shard.",
					refWrites[0].rel.display, sharded[0].rel.display, g.Name)
		}
		return &Route{Opcode: AllClusters, Group: g}, nil
	}
	if len(sharded) == 0 {
		return &Route{Opcode: AnyShard, Group: g}, nil
	}
	for _, domain := range colocationDomains(top, sharded) {
		if err := a.colocated(domain); err != nil {
			return nil, err
		}
	}

	if len(g.Clusters) > 1 && !a.partitioned(top) {
		return a.unpartitionedRoute(sharded, g) // its rows would repeat per cluster
	}
	r := &Route{Group: g, Tables: tableList(sharded, g)}
	r.Keys = a.routeKeys(top)
	switch {
	case len(r.Keys) == 1 && r.Keys[0].Array == nil:
		r.Opcode = EqualUnique
	case len(r.Keys) > 0:
		r.Opcode = IN
	default:
		r.Opcode = Scatter
	}
	if r.Opcode == EqualUnique {
		return r, nil
	}
	for _, l := range a.levels {
		if l.write && l != top {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported,
				"data-modifying WITH on %s across shards is not supported", r.Tables).
				WithHint("Pin the statement to one shard with a condition on the shard key (%s).", g.Index.String())
		}
	}
	if a.allowMerge {
		// The top level's ORDER BY, LIMIT, aggregates, GROUP BY and
		// DISTINCT are the merge primitives' job (buildSelect); only what
		// they cannot do stays a reason to refuse.
		r.MergeReason, a.topMerge = a.splitMergeReasons(top)
	} else {
		r.MergeReason = a.mergeReasons(top)
	}
	if r.Opcode == Scatter && r.MergeReason != "" && len(g.Clusters) > 1 {
		return nil, mergeError(r.MergeReason, r.Tables, g, len(g.Clusters))
	}
	return r, nil
}

// singleGroup returns the one group every table of the statement belongs
// to (nil for a statement without tables), or the cross-group refusal.
func (a *analysis) singleGroup() (*vschema.Group, error) {
	var first *instance
	for _, inst := range a.insts {
		if first == nil {
			first = inst
			continue
		}
		if inst.rel.group != first.rel.group {
			return nil, crossShardJoin(first, inst)
		}
	}
	if first == nil {
		return nil, nil
	}
	return first.rel.group, nil
}

// colocationDomains splits the sharded instances into the sets that must
// be co-located. Branches of a top-level set operation are independent:
// each runs on every cluster it needs and only their combination may need
// merging (the set operation's reason). Everything else is one domain.
func colocationDomains(top *level, sharded []*instance) [][]*instance {
	bs := branches(top)
	if len(bs) < 2 {
		return [][]*instance{sharded}
	}
	domains := make([][]*instance, len(bs))
	for _, inst := range sharded {
		i := branchIndex(inst.level, bs)
		if i < 0 {
			// A WITH of the set operation itself feeds every branch.
			return [][]*instance{sharded}
		}
		domains[i] = append(domains[i], inst)
	}
	var out [][]*instance
	for _, d := range domains {
		if len(d) > 0 {
			out = append(out, d)
		}
	}
	return out
}

func branchIndex(l *level, bs []*level) int {
	for s := l; s != nil; s = s.parent {
		for i, b := range bs {
			if s == b {
				return i
			}
		}
	}
	return -1
}

// colocated checks that every sharded instance is tied to every other by
// key equalities or shared key values.
func (a *analysis) colocated(sharded []*instance) error {
	root := a.uf.find(sharded[0].id)
	for _, inst := range sharded[1:] {
		if a.uf.find(inst.id) != root {
			x := sharded[0]
			e := crossShardJoin(x, inst)
			if x.rel.keyDisplay != "" && inst.rel.keyDisplay != "" {
				e = e.WithHint("Join the tables on their shard keys (%s.%s = %s.%s), or pin both to the same key value.",
					x.alias, x.rel.keyDisplay, inst.alias, inst.rel.keyDisplay)
			}
			return e
		}
	}
	return nil
}

func crossShardJoin(x, y *instance) *sqlerr.Error {
	return sqlerr.New(sqlerr.FeatureNotSupported, "cross-shard join of %s (group %s) and %s (group %s) is not supported",
		x.rel.display, x.rel.group.Name, y.rel.display, y.rel.group.Name)
}

// tableList names the distinct sharded tables for messages.
func tableList(sharded []*instance, g *vschema.Group) string {
	var names []string
	for _, inst := range sharded {
		n := inst.rel.display
		dup := false
		for _, m := range names {
			dup = dup || m == n
		}
		if !dup {
			names = append(names, n)
		}
	}
	return strings.Join(names, ", ") + " (group " + g.Name + ")"
}

// routeKeys returns the keys the statement is pinned to, or nil for a
// scatter.
func (a *analysis) routeKeys(top *level) []KeyRef {
	return levelKeys(top, map[*level]bool{})
}

// levelKeys returns the keys a level's result is restricted to, or nil.
// A set operation is restricted only if every branch is (to the union of
// their keys); any other level by the tightest of its own pins and those
// of the subqueries and CTEs in its FROM list outside outer joins.
func levelKeys(l *level, visiting map[*level]bool) []KeyRef {
	if visiting[l] {
		return nil
	}
	visiting[l] = true
	defer delete(visiting, l)
	if l.setOp {
		var keys []KeyRef
		seen := map[string]bool{}
		for _, b := range branches(l) {
			bk := levelKeys(b, visiting)
			if bk == nil {
				return nil
			}
			for _, k := range bk {
				if id := k.identity(); !seen[id] {
					seen[id] = true
					keys = append(keys, k)
				}
			}
		}
		return keys
	}
	var best []KeyRef
	consider := func(keys []KeyRef) {
		if keys != nil && (best == nil || len(keys) < len(best)) {
			best = keys
		}
	}
	for _, p := range l.pins {
		consider(p.keys)
	}
	for _, c := range l.children {
		if c.derived && c.restricting && !c.nullable && !isCTE(c) {
			consider(levelKeys(c, visiting))
		}
	}
	for _, c := range l.cteRefs {
		consider(levelKeys(c, visiting))
	}
	return best
}

// isCTE reports a level that defines a WITH query: it restricts only the
// levels that read it (cteRefs), not the level it is attached to.
func isCTE(l *level) bool { return l.cte }

// branches returns the leaves of a set-operation tree, or l itself.
func branches(l *level) []*level {
	if !l.setOp {
		return []*level{l}
	}
	var out []*level
	for _, c := range l.children {
		if c.restricting && !c.derived {
			out = append(out, branches(c)...)
		}
	}
	return out
}

// mergeReasons collects what would need merging if the statement runs on
// several clusters: the constructs of the restricting levels, and those of
// nested levels that are not tied to their outer row by the shard key.
// Levels that read no sharded table compute the same on every cluster and
// never count.
func (a *analysis) mergeReasons(top *level) string {
	var reasons []string
	add := func(r string) {
		for _, part := range strings.Split(r, ", ") {
			dup := false
			for _, x := range reasons {
				dup = dup || x == part
			}
			if !dup && part != "" {
				reasons = append(reasons, part)
			}
		}
	}
	for _, l := range a.levels {
		if l.reason == "" || !readsSharded(l) {
			continue
		}
		onPath := l == top || l.restricting && !l.derived
		if onPath || !l.correlated {
			add(l.reason)
		}
	}
	return strings.Join(reasons, ", ")
}

// mergeable are the reasons of the statement's own level that merge
// primitives handle; a set operation's ORDER BY and LIMIT only sort and
// cut its concatenated rows, and its UNION dedups them.
var mergeable = map[string]bool{"ORDER BY": true, "LIMIT": true, "OFFSET": true, "aggregate": true, "GROUP BY": true, "DISTINCT": true, "UNION": true}

// splitMergeReasons is mergeReasons split into what the merge primitives
// cannot do (unsupported) and what they can (merge, from the top level
// only).
func (a *analysis) splitMergeReasons(top *level) (unsupported, merge string) {
	all := a.mergeReasons(top)
	if all == "" {
		return "", ""
	}
	own := map[string]bool{}
	for _, r := range strings.Split(top.reason, ", ") {
		own[r] = true
	}
	// A UNION (without ALL) at the top dedups everything below it, so the
	// UNION and UNION ALL nodes of its set-operation tree only need one
	// dedup of every shard's rows.
	topUnion := top.setOp && own["UNION"]
	inSetOpTree := func(l *level) bool {
		for p := l; p != nil; p = p.parent {
			if p == top {
				return true
			}
			if !p.setOp {
				return false
			}
		}
		return false
	}
	var un, mg []string
	for _, r := range strings.Split(all, ", ") {
		ok := own[r] && mergeable[r]
		if top.setOp && r != "ORDER BY" && r != "LIMIT" && r != "OFFSET" && r != "UNION" {
			ok = false
		}
		// A reason the top level shares with a nested level (a LIMIT in
		// a subquery too) cannot be split off: keep refusing it.
		for _, l := range a.levels {
			if l != top && l.reason != "" && readsSharded(l) && (l.restricting && !l.derived || !l.correlated) {
				for _, lr := range strings.Split(l.reason, ", ") {
					if lr == r && !(r == "UNION" && topUnion && l.setOp && inSetOpTree(l)) {
						ok = false
					}
				}
			}
		}
		if ok {
			mg = append(mg, r)
		} else {
			un = append(un, r)
		}
	}
	return strings.Join(un, ", "), strings.Join(mg, ", ")
}

// readsSharded reports whether l or a level below it reads a sharded
// table, directly or through the WITH queries it reads (a CTE over a CTE
// over a sharded table reads it too).
func readsSharded(l *level) bool {
	return readsShardedVia(l, map[*level]bool{})
}

func readsShardedVia(l *level, seen map[*level]bool) bool {
	if seen[l] {
		return false // a recursive WITH query reading itself
	}
	seen[l] = true
	for _, inst := range l.insts {
		if inst.rel.kind == relSharded {
			return true
		}
	}
	for _, c := range l.children {
		if readsShardedVia(c, seen) {
			return true
		}
	}
	for _, c := range l.cteRefs {
		if readsShardedVia(c, seen) {
			return true
		}
	}
	return false
}
