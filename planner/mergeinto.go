package planner

import (
	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/shardgate/shardgate/sqlerr"
)

// MERGE into a sharded table runs where its rows are, when that is exact:
//
//   - the ON condition pins the target's key to one value (o.customer_id
//     = 5): the MERGE runs on that shard. Source rows a WHEN NOT MATCHED
//     THEN INSERT inserts must then be everywhere (VALUES, a subquery
//     without tables, reference tables), and the INSERT must give the key
//     the pinned value, so every source row is merged once, on the one
//     shard its rows belong to;
//   - otherwise it runs on every shard: each target row is matched on its
//     own shard, against the source rows there. With WHEN NOT MATCHED
//     THEN INSERT the source must be a table of the target's group joined
//     on the key (each source row is then on one shard, that of the rows
//     it matches) and the INSERT must give the key the source row's key
//     column, so the new row lands on that shard. Without it any source
//     the shards all hold (co-located, reference tables, VALUES) is fine:
//     a target row is matched by the same source rows on its shard as in
//     one database.
//
// A WHEN MATCHED THEN UPDATE may not change the key (the row would have
// to move). A MERGE these rules refuse is planned as a MergeSource when
// it can be (its source read first and routed per row:
// merge_source.go); everything else is refused with 0A000.

// mergeIntoSharded checks a MERGE into the sharded target of l, routed by
// r (EqualUnique: pinned; Scatter: every shard).
func (a *analysis) mergeIntoSharded(l *level, m *pg.MergeStmt, r *Route, vs *mergeValuesSource) error {
	target := l.target
	pinned := r.Opcode == EqualUnique
	if t := target.rel.table; t != nil && len(t.SecondaryIndexes) > 0 {
		return mergeIntoRefusal(target, "the proxy would not maintain its global secondary index "+t.SecondaryIndexes[0].Name).
			WithHint("Use INSERT ... ON CONFLICT, UPDATE or DELETE, whose entries the proxy maintains.")
	}
	if !pinned && r.Opcode != Scatter {
		return mergeIntoRefusal(target, "its ON condition neither pins the shard key to one value nor joins a table of the group on it")
	}
	sourceSharded := false
	for _, inst := range a.insts {
		if inst != target && inst.rel.kind == relSharded {
			sourceSharded = true
		}
	}
	for _, n := range m.MergeWhenClauses {
		w, ok := n.Node.(*pg.Node_MergeWhenClause)
		if !ok {
			continue
		}
		wc := w.MergeWhenClause
		switch wc.CommandType {
		case pg.CmdType_CMD_UPDATE:
			for _, t := range wc.TargetList {
				rt, ok := t.Node.(*pg.Node_ResTarget)
				if ok && !a.keyUnchanged(l, target, rt.ResTarget.Name, rt.ResTarget.Val) {
					return keyChangeRefusal(target, rt.ResTarget.Name, "MERGE", "Delete the row and insert it with the new key, or use UPDATE, which moves the row.")
				}
			}
		case pg.CmdType_CMD_INSERT:
			if err := a.mergeInsertKey(l, wc, pinned, sourceSharded, vs); err != nil {
				return err
			}
		}
	}
	return nil
}

// mergeInsertKey checks that WHEN NOT MATCHED THEN INSERT puts its row on
// the shard the MERGE runs on for the source row (see above).
// vs is the VALUES source routed per row (merge_values.go), or nil.
func (a *analysis) mergeInsertKey(l *level, wc *pg.MergeWhenClause, pinned, sourceSharded bool, vs *mergeValuesSource) error {
	target := l.target
	rel := target.rel
	if len(wc.TargetList) == 0 {
		return mergeIntoRefusal(target, "its INSERT names no columns").
			WithHint("Write INSERT (%s, ...) VALUES (...) in the WHEN NOT MATCHED clause.", rel.keyDisplay)
	}
	if seq := rel.table.Sequence; seq != nil {
		given := false
		for i, t := range wc.TargetList {
			if rt, ok := t.Node.(*pg.Node_ResTarget); ok && rt.ResTarget.Name == seq.Column && i < len(wc.Values) && !isDefault(wc.Values[i]) {
				given = true
			}
		}
		if !given {
			return mergeIntoRefusal(target, "its INSERT leaves column \""+seq.Column+"\" to sequence "+rel.sequenceFor(seq.Column)+", which the proxy fills only in INSERT and COPY").
				WithHint("Give %q a value in the INSERT of the WHEN NOT MATCHED clause.", seq.Column)
		}
	}
	if pinned && sourceSharded {
		return mergeIntoRefusal(target, "the source rows it would insert are on other shards than the one its ON condition pins")
	}
	for _, ixCol := range rel.indexColumns {
		col := rel.tableColumn(ixCol)
		var val *pg.Node
		for i, t := range wc.TargetList {
			if rt, ok := t.Node.(*pg.Node_ResTarget); ok && rt.ResTarget.Name == col && i < len(wc.Values) {
				val = wc.Values[i]
			}
		}
		switch {
		case val == nil || isDefault(val):
			return missingKey(rel, col)
		case pinned && a.keyUnchanged(l, target, col, val):
		case !pinned && a.sourceKey(l, val):
		case !pinned && vs != nil && vs.insertsSourceKey(val):
		default:
			return mergeIntoRefusal(target, "its INSERT does not give shard key column \""+col+"\" the key the row is merged by").
				WithHint("Insert the source's key column (the one ON joins on), or pin the key to one value in ON and insert that value.")
		}
	}
	return nil
}

// sourceKey reports whether val is the key column of a table of the
// target's group other than the target (co-located with it by then).
func (a *analysis) sourceKey(l *level, val *pg.Node) bool {
	c, ok := l.keyColumnRef(val)
	return ok && c.inst != l.target && c.inst.rel.kind == relSharded && c.inst.rel.group == l.target.rel.group && !l.target.rel.expression
}

func mergeIntoRefusal(target *instance, why string) *sqlerr.Error {
	return sqlerr.New(sqlerr.FeatureNotSupported, "MERGE into sharded table %s is not supported: %s", target.rel.display, why).
		WithHint("Join a table of the group on the shard key in ON, or pin the key to one value, or use INSERT ... ON CONFLICT.")
}
