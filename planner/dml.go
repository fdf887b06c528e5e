package planner

import (
	"sort"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/shardgate/shardgate/keyexpr"
	"github.com/shardgate/shardgate/sqlerr"
)

// updateLevel analyses an UPDATE: its target, FROM list, WHERE, SET and
// RETURNING. Changing a shard-key column is refused here in a nested
// UPDATE; the top-level one moves its rows (key_move.go).
func (a *analysis) updateLevel(parent *level, u *pg.UpdateStmt, restricting bool) *level {
	l := a.newLevel(parent)
	l.restricting = restricting
	l.write = true
	a.with(l, u.WithClause)
	l.target = a.addInstance(l, u.Relation, false)
	a.gsiTarget(l.target, u, "UPDATE")
	for _, f := range u.FromClause {
		a.fromItem(l, f, false, false)
	}
	a.condition(l, u.WhereClause, condFilter)
	for _, t := range u.TargetList {
		rt, ok := t.Node.(*pg.Node_ResTarget)
		if !ok {
			continue
		}
		a.expression(l, rt.ResTarget.Val)
		switch {
		case a.keyUnchanged(l, l.target, rt.ResTarget.Name, rt.ResTarget.Val):
		case parent == nil:
			a.keyMove = true
		default:
			a.fail(keyChangeRefusal(l.target, rt.ResTarget.Name, "a nested UPDATE", "Run the UPDATE as a statement of its own: the proxy then moves the rows to their new shards."))
		}
	}
	for _, r := range u.ReturningList {
		a.expression(l, r)
	}
	return l
}

// keyUnchanged reports whether SET col = ... leaves the shard key alone:
// col is not a column the key is computed from, or the new value is
// provably the key the statement is already pinned to (SET customer_id =
// 5 ... WHERE customer_id = 5, as ORMs that write every column do).
func (a *analysis) keyUnchanged(l *level, target *instance, col string, val *pg.Node) bool {
	if target.rel.kind != relSharded {
		return true
	}
	ixCol, isKey := target.rel.keyCols[col]
	if !isKey {
		return true
	}
	if ref, ok := valueRef(val); ok && target.rel.indexColumnCount() == 1 && !target.rel.expression {
		k := KeyRef{Columns: []ColumnValue{{Column: ixCol, Value: ref}}}
		for _, p := range l.pins {
			if p.inst == target && len(p.keys) == 1 && p.keys[0].identity() == k.identity() {
				return true
			}
		}
	}
	return false
}

// keyChangeRefusal is the 0A000 of a change of the shard key of target's
// rows where the proxy does not move them (where: in what).
func keyChangeRefusal(target *instance, col, where, hint string) error {
	return sqlerr.New(sqlerr.FeatureNotSupported,
		"changing the shard key of %s in %s is not supported", target.rel.display, where).
		WithDetail("Column %q feeds the sharding index %s of group %s.", col, target.rel.group.Index.String(), target.rel.group.Name).
		WithHint("%s", hint)
}

// deleteLevel analyses a DELETE: target, USING list, WHERE and RETURNING.
func (a *analysis) deleteLevel(parent *level, d *pg.DeleteStmt, restricting bool) *level {
	l := a.newLevel(parent)
	l.restricting = restricting
	l.write = true
	a.with(l, d.WithClause)
	l.target = a.addInstance(l, d.Relation, false)
	a.gsiTarget(l.target, d, "DELETE")
	for _, f := range d.UsingClause {
		a.fromItem(l, f, false, false)
	}
	a.condition(l, d.WhereClause, condFilter)
	for _, r := range d.ReturningList {
		a.expression(l, r)
	}
	return l
}

// insertInfo is what an INSERT into a sharded table needs for routing.
type insertInfo struct {
	// rows are the keys of a VALUES list, one per row.
	rows []KeyRef
	// values is the VALUES list, when the source is one.
	values *pg.SelectStmt
	// source is the level of INSERT ... SELECT, sourceStmt its SELECT.
	source     *level
	sourceStmt *pg.SelectStmt
	// sourceKey is set when the SELECT's key output is a column of a
	// table it reads (co-located with the target by then).
	sourceKey bool

	// fills are, per VALUES row, where values drawn from main-group
	// sequences go; draws names the sequence of each draw, in statement
	// order; nextvals counts the nextval calls among the fills.
	fills    [][]seqFill
	draws    []string
	nextvals int
	// addColumn is the sequence-bound column the statement omits, quoted
	// for SQL: the rewrite appends it to the column list (lastColLoc is
	// the offset of the list's last column) and a drawn value to each row.
	addColumn  string
	lastColLoc int
	// defaultValues: INSERT ... DEFAULT VALUES into a table with a
	// sequence-bound column, rewritten to (col) VALUES (drawn value).
	defaultValues bool
}

// insertLevel analyses an INSERT: its target, the rows or SELECT it
// inserts, ON CONFLICT and RETURNING.
func (a *analysis) insertLevel(parent *level, ins *pg.InsertStmt, restricting bool) *level {
	l := a.newLevel(parent)
	l.restricting = restricting
	l.write = true
	a.with(l, ins.WithClause)
	target := a.addInstance(l, ins.Relation, false)
	l.target = target
	a.gsiTarget(target, ins, "INSERT")
	info := &insertInfo{}
	a.inserts[l] = info

	sel, _ := ins.SelectStmt.GetNode().(*pg.Node_SelectStmt)
	switch {
	case sel == nil:
		// DEFAULT VALUES
	case isPlainValues(sel.SelectStmt):
		info.values = sel.SelectStmt
		for _, row := range sel.SelectStmt.ValuesLists {
			a.expression(l, row)
		}
	default:
		info.source = a.selectLevel(l, sel.SelectStmt, true)
		info.sourceStmt = sel.SelectStmt
	}
	if oc := ins.OnConflictClause; oc != nil {
		for _, t := range oc.TargetList {
			if rt, ok := t.Node.(*pg.Node_ResTarget); ok {
				a.expression(l, rt.ResTarget.Val)
				if !excludedKeyOnConflictKey(target, oc, rt.ResTarget) {
					if !a.keyUnchanged(l, target, rt.ResTarget.Name, rt.ResTarget.Val) {
						a.fail(keyChangeRefusal(target, rt.ResTarget.Name, "ON CONFLICT DO UPDATE", "Delete the row and insert it with the new key, or use UPDATE, which moves the row."))
					}
				}
			}
		}
		a.expression(l, oc.WhereClause)
	}
	for _, r := range ins.ReturningList {
		a.expression(l, r)
	}
	if target.rel.kind == relSharded {
		a.insertKeys(l, ins, info)
		if parent != nil && len(info.draws) > 0 {
			// Only a statement's own INSERT ... VALUES is rewritten.
			a.fail(sqlerr.New(sqlerr.FeatureNotSupported,
				"an INSERT into %s inside another statement cannot have sequence values drawn by the proxy", target.rel.display).
				WithHint("Give every sequence column of %s a value, or run the INSERT as a statement of its own.", target.rel.display))
		}
	}
	return l
}

// isPlainValues reports a bare VALUES list (no ORDER BY, LIMIT, WITH).
func isPlainValues(s *pg.SelectStmt) bool {
	return len(s.ValuesLists) > 0 && s.LimitCount == nil && s.LimitOffset == nil &&
		len(s.SortClause) == 0 && s.WithClause == nil
}

// excludedKeyOnConflictKey accepts ON CONFLICT (..., key, ...) DO UPDATE
// SET key = EXCLUDED.key: the conflicting row has the same key, so the
// assignment changes nothing.
func excludedKeyOnConflictKey(target *instance, oc *pg.OnConflictClause, rt *pg.ResTarget) bool {
	cr, ok := rt.Val.GetNode().(*pg.Node_ColumnRef)
	if !ok || len(cr.ColumnRef.Fields) != 2 || stringValue(cr.ColumnRef.Fields[0]) != "excluded" ||
		stringValue(cr.ColumnRef.Fields[1]) != rt.Name || oc.Infer == nil {
		return false
	}
	for _, e := range oc.Infer.IndexElems {
		if ie, ok := e.Node.(*pg.Node_IndexElem); ok && ie.IndexElem.Name == rt.Name {
			return true
		}
	}
	return false
}

// insertKeys finds the shard key of every inserted row.
func (a *analysis) insertKeys(l *level, ins *pg.InsertStmt, info *insertInfo) {
	target := l.target
	rel := target.rel
	cols := make([]string, len(ins.Cols))
	for i, c := range ins.Cols {
		if rt, ok := c.Node.(*pg.Node_ResTarget); ok {
			cols[i] = rt.ResTarget.Name
		}
	}
	position := func(tableCol string) int {
		for i, c := range cols {
			if c == tableCol {
				return i
			}
		}
		return -1
	}
	if len(cols) == 0 && (info.values != nil || info.source != nil) {
		a.fail(sqlerr.New(sqlerr.FeatureNotSupported,
			"INSERT into sharded table %s must name its columns", rel.display).
			WithHint("Write INSERT INTO %s (%s, ...) so the proxy can find the shard key.", rel.display, rel.keyDisplay))
		return
	}

	bind := rel.table.Sequence
	bindSeq, bindPos := "", -1
	if bind != nil {
		bindSeq = bind.Sequence.String()
		bindPos = position(bind.Column)
	}
	switch {
	case info.values != nil:
		if bind != nil && bindPos < 0 && len(ins.Cols) > 0 {
			info.addColumn = keyexpr.QuoteIdentifier(bind.Column)
			if rt, ok := ins.Cols[len(ins.Cols)-1].Node.(*pg.Node_ResTarget); ok {
				info.lastColLoc = int(rt.ResTarget.Location)
			}
		}
		for _, row := range info.values.ValuesLists {
			list, ok := row.Node.(*pg.Node_List)
			if !ok {
				return
			}
			items := list.List.Items
			fills, bindDraw := a.rowFills(rel, items, bindSeq, bindPos, bind != nil, info)
			if a.err != nil {
				return
			}
			key := KeyRef{assign: true}
			for _, ixCol := range rel.indexColumns {
				tableCol := rel.tableColumn(ixCol)
				pos := position(tableCol)
				if bind != nil && tableCol == bind.Column && bindDraw >= 0 {
					key.Columns = append(key.Columns, ColumnValue{Column: ixCol, Value: ValueRef{Seq: bindSeq, Draw: bindDraw}})
					continue
				}
				if pos < 0 || pos >= len(items) || isDefault(items[pos]) {
					a.fail(missingKey(rel, tableCol))
					return
				}
				ref, ok := valueRef(items[pos])
				if d, isDraw := drawOf(items[pos], fills); isDraw {
					ref, ok = ValueRef{Seq: info.draws[d], Draw: d}, true
				}
				if !ok {
					a.fail(sqlerr.New(sqlerr.FeatureNotSupported,
						"the shard key column %q of %s must be a literal or a parameter in INSERT", tableCol, rel.display))
					return
				}
				if ref.Null {
					a.fail(nullKey(rel, tableCol))
					return
				}
				key.Columns = append(key.Columns, ColumnValue{Column: ixCol, Value: ref})
			}
			info.rows = append(info.rows, key)
			info.fills = append(info.fills, fills)
		}
		if len(info.rows) == 1 {
			a.uf.union(target.id, a.valueNode(info.rows[0]))
		}
	case info.source != nil:
		if bind != nil && bindPos < 0 && (rel.tableColumn(rel.indexColumns[0]) != bind.Column || rel.indexColumnCount() != 1) {
			a.fail(sqlerr.New(sqlerr.FeatureNotSupported,
				"INSERT ... SELECT into %s must give column %q: the proxy fills it from sequence %s only in INSERT ... VALUES",
				rel.display, bind.Column, shortSequence(bindSeq)).
				WithHint("Add %q to the column list with a value, or insert with VALUES.", bind.Column))
			return
		}
		a.insertSelectKey(l, info, rel, position)
	case bind != nil:
		// DEFAULT VALUES: the bound column is the only one with a value.
		info.defaultValues = true
		info.addColumn = keyexpr.QuoteIdentifier(bind.Column)
		info.draws = []string{bindSeq}
		info.fills = [][]seqFill{{{kind: fillAppend, loc: -1, seq: bindSeq}}}
		var key KeyRef
		for _, ixCol := range rel.indexColumns {
			if tableCol := rel.tableColumn(ixCol); tableCol != bind.Column {
				a.fail(missingKey(rel, tableCol))
				return
			}
			key.Columns = append(key.Columns, ColumnValue{Column: ixCol, Value: ValueRef{Seq: bindSeq}})
		}
		info.rows = []KeyRef{key}
	default:
		a.fail(missingKey(rel, rel.tableColumn(rel.indexColumns[0])))
	}
}

// rowFills finds where one VALUES row needs drawn values: the
// sequence-bound column when the statement omits it or gives DEFAULT,
// and every nextval('seq') of a listed sequence. It numbers the draws in
// statement order and returns the draw of the bound column (-1 if the row
// gives a value for it).
func (a *analysis) rowFills(rel *relInfo, items []*pg.Node, bindSeq string, bindPos int, bound bool, info *insertInfo) ([]seqFill, int) {
	var fills []seqFill
	bindFill := -1
	for i, it := range items {
		if i == bindPos && isDefault(it) {
			d, _ := it.Node.(*pg.Node_SetToDefault)
			fills = append(fills, seqFill{kind: fillDefault, loc: int(d.SetToDefault.Location), seq: bindSeq})
			bindFill = len(fills) - 1
			continue
		}
		for _, c := range a.p.nextvalCalls(it) {
			if c.inSublink {
				a.fail(nextvalInSubquery(c.seq, rel.display))
				return nil, -1
			}
			fills = append(fills, seqFill{kind: fillCall, loc: int(c.call.Location), seq: c.seq})
			info.nextvals++
		}
	}
	if bound && bindPos < 0 {
		fills = append(fills, seqFill{kind: fillAppend, loc: -1, seq: bindSeq})
		bindFill = len(fills) - 1
	}
	// Postgres evaluates a row left to right; the appended column comes
	// last, so the order above is already the text order except for
	// nested calls, which the walk lists parents first.
	order := make([]int, len(fills))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(x, y int) bool {
		lx, ly := fills[order[x]].loc, fills[order[y]].loc
		if lx < 0 || ly < 0 {
			return ly < 0 && lx >= 0
		}
		return lx < ly
	})
	sorted := make([]seqFill, len(fills))
	bindDraw := -1
	for i, j := range order {
		f := fills[j]
		f.draw = len(info.draws)
		info.draws = append(info.draws, f.seq)
		sorted[i] = f
		if j == bindFill {
			bindDraw = f.draw
		}
	}
	return sorted, bindDraw
}

// drawOf reports whether a row item is (under value-keeping casts) one of
// the row's nextval calls, and its draw.
func drawOf(n *pg.Node, fills []seqFill) (int, bool) {
	for {
		tc, ok := n.GetNode().(*pg.Node_TypeCast)
		if !ok || !valuePreservingCast(tc.TypeCast.TypeName) {
			break
		}
		n = tc.TypeCast.Arg
	}
	fc, ok := n.GetNode().(*pg.Node_FuncCall)
	if !ok {
		return 0, false
	}
	for _, f := range fills {
		if f.kind == fillCall && f.loc == int(fc.FuncCall.Location) {
			return f.draw, true
		}
	}
	return 0, false
}

// insertSelectKey ties INSERT ... SELECT to the key the SELECT produces:
// a value (SELECT $1, ...) becomes the row key; a key column of a table
// the SELECT reads co-locates that table with the target.
func (a *analysis) insertSelectKey(l *level, info *insertInfo, rel *relInfo, position func(string) int) {
	src, s := info.source, info.sourceStmt
	refuse := func() {
		a.fail(sqlerr.New(sqlerr.FeatureNotSupported,
			"INSERT ... SELECT into sharded table %s needs the shard key as a value or a key column of the SELECT", rel.display))
	}
	if s == nil || src.setOp || rel.indexColumnCount() != 1 {
		refuse()
		return
	}
	ixCol := rel.indexColumns[0]
	tableCol := rel.tableColumn(ixCol)
	pos := position(tableCol)
	if pos < 0 {
		a.fail(missingKey(rel, tableCol))
		return
	}
	if pos >= len(s.TargetList) {
		refuse()
		return
	}
	rt, ok := s.TargetList[pos].Node.(*pg.Node_ResTarget)
	if !ok {
		refuse()
		return
	}
	if hasStar(s.TargetList[:pos+1]) {
		refuse()
		return
	}
	if ref, ok := valueRef(rt.ResTarget.Val); ok {
		if ref.Null {
			a.fail(nullKey(rel, tableCol))
			return
		}
		k := KeyRef{Columns: []ColumnValue{{Column: ixCol, Value: ref}}, assign: true}
		info.rows = []KeyRef{k}
		a.uf.union(l.target.id, a.valueNode(k))
		return
	}
	if c, ok := src.keyColumnRef(rt.ResTarget.Val); ok && c.inst.rel.group == rel.group && !rel.expression {
		a.uf.union(l.target.id, c.inst.id)
		info.sourceKey = true
		return
	}
	refuse()
}

func hasStar(targets []*pg.Node) bool {
	for _, t := range targets {
		if rt, ok := t.Node.(*pg.Node_ResTarget); ok {
			if cr, ok := rt.ResTarget.Val.GetNode().(*pg.Node_ColumnRef); ok {
				for _, f := range cr.ColumnRef.Fields {
					if _, star := f.Node.(*pg.Node_AStar); star {
						return true
					}
				}
			}
		}
	}
	return false
}

func isDefault(n *pg.Node) bool {
	_, ok := n.GetNode().(*pg.Node_SetToDefault)
	return ok
}

// missingKey is the refusal of a row without its shard key. The SQLSTATE
// is 23502 (not_null_violation): the row cannot be placed, exactly as if
// the key column were NOT NULL without a default, and clients already map
// that code to "required value missing". When the column is filled from
// a sequence, the row would be fine once the proxy fills it, so that case
// is 0A000 (not supported) instead: only INSERT ... SELECT gets there.
func missingKey(rel *relInfo, col string) error {
	if seq := rel.sequenceFor(col); seq != "" {
		// Only INSERT ... SELECT gets here: VALUES rows are filled.
		return sqlerr.New(sqlerr.FeatureNotSupported,
			"filling shard key column %q of table %q from sequence %s is supported only in INSERT ... VALUES", col, rel.name, seq).
			WithHint("Select the key value too (nextval('%s') drawn beforehand), or insert with VALUES.", seq)
	}
	return sqlerr.New(sqlerr.NotNullViolation,
		"shard key column %q of table %q is missing in INSERT", col, rel.name).
		WithHint("Every row of a sharded table needs its shard key; add %q to the column list.", col)
}

func nullKey(rel *relInfo, col string) error {
	return sqlerr.New(sqlerr.NotNullViolation,
		"null value in shard key column %q of table %q", col, rel.name).
		WithDetail("A row without a shard key has no shard to live on.")
}
