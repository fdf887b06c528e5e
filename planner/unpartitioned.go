package planner

import (
	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/shardgate/shardgate/sqlerr"
	"github.com/shardgate/shardgate/vschema"
)

// A statement whose rows do not come from a sharded table (a SELECT
// without FROM, or whose FROM names only reference tables, or sharded
// tables only on the nullable side of an outer join, or a UNION ALL
// branch of that kind) produces all its rows on every cluster it runs
// on: run on several, its rows repeat, and a subquery over a sharded
// table in it (EXISTS, ARRAY(...), a scalar subquery, IN (...)) sees only
// the cluster's rows. Such a statement runs on one shard when every
// sharded table it reads is confined to one key (SELECT EXISTS (SELECT 1
// FROM orders WHERE customer_id = 42)); otherwise decide refuses it
// (0A000), and a SELECT runs over intermediate results instead.

// levelPin is a key condition of level l's WHERE or inner-join ON: the
// rows of l have pin.inst's key among pin.keys.
type levelPin struct {
	l   *level
	pin pinSet
}

// keyTie is a shard-key equality x.key = y.key in a condition of level l.
type keyTie struct {
	l     *level
	x, y  *instance
	where condition
}

// partitioned reports a level whose every row comes from one cluster:
// its FROM list has an item of that kind (partitionedFrom); a set
// operation when every branch does; a write's level (its target's rows).
func (a *analysis) partitioned(l *level) bool {
	return a.partitionedLevel(l, map[*level]bool{})
}

// partitionedLevel is partitioned; a level that reads itself (WITH
// RECURSIVE) is not.
func (a *analysis) partitionedLevel(l *level, visiting map[*level]bool) bool {
	if visiting[l] {
		return false
	}
	visiting[l] = true
	defer delete(visiting, l)
	if l.setOp {
		for _, b := range branches(l) {
			if !a.partitionedLevel(b, visiting) {
				return false
			}
		}
		return true
	}
	if l.target != nil {
		return true
	}
	var s *pg.SelectStmt
	for st, sl := range a.levelOf {
		if sl == l {
			s = st
		}
	}
	if s == nil {
		return true // not a SELECT block: as before, the router's other checks decide
	}
	for _, f := range s.FromClause {
		if a.partitionedFrom(l, f, visiting) {
			return true
		}
	}
	return false
}

// partitionedFrom reports a FROM item whose every row holds a row of a
// sharded table: the table itself, a derived table or WITH query whose
// level is partitioned, an inner join with such a side, an outer join
// whose preserved side is (both sides for FULL).
func (a *analysis) partitionedFrom(l *level, n *pg.Node, visiting map[*level]bool) bool {
	switch x := n.GetNode().(type) {
	case *pg.Node_RangeVar:
		rv := x.RangeVar
		for _, inst := range l.insts {
			if inst.rv == rv {
				return inst.rel.kind == relSharded
			}
		}
		if d := l.lookupCTE(rv.Relname); rv.Schemaname == "" && d != nil && d.level != nil {
			return a.partitionedLevel(d.level, visiting)
		}
	case *pg.Node_JoinExpr:
		j := x.JoinExpr
		left, right := a.partitionedFrom(l, j.Larg, visiting), a.partitionedFrom(l, j.Rarg, visiting)
		switch j.Jointype {
		case pg.JoinType_JOIN_LEFT:
			return left
		case pg.JoinType_JOIN_RIGHT:
			return right
		case pg.JoinType_JOIN_FULL:
			return left && right
		default:
			return left || right
		}
	case *pg.Node_RangeSubselect:
		if sel, ok := x.RangeSubselect.Subquery.GetNode().(*pg.Node_SelectStmt); ok {
			if c := a.levelOf[sel.SelectStmt]; c != nil {
				return a.partitionedLevel(c, visiting)
			}
		}
	case *pg.Node_RangeTableSample:
		return a.partitionedFrom(l, x.RangeTableSample.Relation, visiting)
	}
	return false
}

// unpartitionedRoute routes a statement whose top level is not
// partitioned, on a group of several clusters: to the one shard every
// sharded instance is confined to, or a 0A000.
func (a *analysis) unpartitionedRoute(sharded []*instance, g *vschema.Group) (*Route, error) {
	tables := tableList(sharded, g)
	if k, ok := a.confinedKey(sharded); ok {
		return &Route{Opcode: EqualUnique, Group: g, Tables: tables, Keys: []KeyRef{k}}, nil
	}
	return nil, sqlerr.New(sqlerr.FeatureNotSupported,
		"cross-shard read of %s in a query whose FROM names no sharded table is not supported", tables).
		WithDetail("Each cluster would answer the query over its own rows of %s.", sharded[0].rel.display).
		WithHint("Pin the subquery to one shard with a condition on the shard key (%s).", g.Index.String())
}

// confinedKey returns the one key every sharded instance reads rows of
// only: an instance is confined to k when a condition of its own level
// (or of a level whose FROM holds it through derived tables that need no
// merge) pins it to k alone, or when a key equality of a level holding
// it ties it to an instance confined to k (in an outer join's ON, only
// the nullable side is tied). A tie never confines an outer instance to
// a subquery's key: NOT EXISTS (... WHERE i.key = o.key AND i.key = 42)
// keeps o's rows of every key.
func (a *analysis) confinedKey(sharded []*instance) (KeyRef, bool) {
	key := map[*instance]*KeyRef{}
	for i := range a.filters {
		f := &a.filters[i]
		if len(f.pin.keys) != 1 || f.pin.keys[0].Array != nil || !mergeFreePath(f.l, f.pin.inst) {
			continue
		}
		if key[f.pin.inst] == nil {
			key[f.pin.inst] = &f.pin.keys[0]
		}
	}
	for changed := true; changed; {
		changed = false
		for _, t := range a.ties {
			for _, d := range [2][2]*instance{{t.x, t.y}, {t.y, t.x}} {
				from, to := d[0], d[1]
				if key[from] == nil || key[to] != nil || !owns(t.l, to) || !mergeFreePath(t.l, to) ||
					t.where == condOuterOn && !to.nullable {
					continue
				}
				key[to] = key[from]
				changed = true
			}
		}
	}
	var first *KeyRef
	for _, inst := range sharded {
		k := key[inst]
		switch {
		case k == nil:
			return KeyRef{}, false
		case first == nil:
			first = k
		case k.identity() != first.identity():
			return KeyRef{}, false
		}
	}
	if first == nil {
		return KeyRef{}, false
	}
	return *first, true
}

// mergeFreePath reports that the rows of inst reach level l unchanged:
// every level between inst's and l (derived tables) has nothing that
// would need a merge (a LIMIT, an aggregate), which a condition of l
// applied after it would not commute with.
func mergeFreePath(l *level, inst *instance) bool {
	for s := inst.level; s != nil && s != l; s = s.parent {
		if s.reason != "" || s.setOp {
			return false
		}
	}
	return true
}
