package planner

import (
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"
)

// selectLevel analyses a SELECT (or VALUES, or set operation) as a query
// level below parent (nil for the statement itself).
func (a *analysis) selectLevel(parent *level, s *pg.SelectStmt, restricting bool) *level {
	l := a.newLevel(parent)
	l.restricting = restricting
	a.levelOf[s] = l
	a.with(l, s.WithClause)

	if s.Op != pg.SetOperation_SETOP_NONE && s.Op != pg.SetOperation_SET_OPERATION_UNDEFINED {
		l.setOp = true
		// Branches of a UNION ALL restrict the result each on their own;
		// the route is pinned only if every branch is (see decide).
		a.selectLevel(l, s.Larg, restricting)
		a.selectLevel(l, s.Rarg, restricting)
		switch {
		case s.Op == pg.SetOperation_SETOP_UNION && s.All:
		case s.Op == pg.SetOperation_SETOP_UNION:
			l.addReason("UNION")
		case s.Op == pg.SetOperation_SETOP_INTERSECT:
			l.addReason("INTERSECT")
		case s.Op == pg.SetOperation_SETOP_EXCEPT:
			l.addReason("EXCEPT")
		}
		a.orderAndLimit(l, s)
		return l
	}

	l.noFrom = len(s.FromClause) == 0
	for _, f := range s.FromClause {
		a.fromItem(l, f, false, false)
	}
	for _, v := range s.ValuesLists {
		a.expression(l, v)
	}
	a.condition(l, s.WhereClause, condFilter)

	agg := &aggScan{}
	for _, t := range s.TargetList {
		a.expressionAgg(l, t, agg)
	}
	a.expressionAgg(l, s.HavingClause, agg)
	for _, g := range s.GroupClause {
		a.expression(l, g)
	}
	for _, w := range s.WindowClause {
		a.expression(l, w)
	}
	for _, d := range s.DistinctClause {
		a.expression(l, d)
	}
	for _, o := range s.SortClause {
		a.expressionAgg(l, o, agg) // ORDER BY count(*) makes an aggregate query too
	}

	groupedByKey := len(s.GroupClause) > 0 && a.groupsByKey(l, s)
	switch {
	case len(s.GroupClause) > 0 && !groupedByKey:
		l.addReason("GROUP BY")
	case len(s.GroupClause) == 0 && (agg.aggregate || s.HavingClause != nil):
		l.addReason("aggregate")
	}
	for _, w := range agg.windows {
		if !a.partitionsByKey(l, w, s) {
			l.addReason("window function")
			break
		}
	}
	if len(s.DistinctClause) > 0 && !a.distinctByKey(l, s) {
		l.addReason("DISTINCT")
	}
	a.orderAndLimit(l, s)
	return l
}

// orderAndLimit records ORDER BY (which only matters for the result's
// order, so only for restricting levels) and LIMIT/OFFSET.
func (a *analysis) orderAndLimit(l *level, s *pg.SelectStmt) {
	if l.setOp {
		for _, o := range s.SortClause {
			a.expression(l, o)
		}
	}
	a.expression(l, s.LimitCount)
	a.expression(l, s.LimitOffset)
	if len(s.SortClause) > 0 && l.top {
		l.addReason("ORDER BY")
	}
	if s.LimitCount != nil && !isNullConst(s.LimitCount) {
		l.addReason("LIMIT")
	}
	if s.LimitOffset != nil {
		l.addReason("OFFSET")
	}
}

func isNullConst(n *pg.Node) bool {
	c, ok := n.GetNode().(*pg.Node_AConst)
	return ok && c.AConst.Isnull
}

func (l *level) addReason(r string) {
	if !strings.Contains(l.reason, r) {
		if l.reason != "" {
			l.reason += ", "
		}
		l.reason += r
	}
}

// with analyses the CTEs of a WITH clause. Under WITH RECURSIVE a name is
// visible inside its own query; otherwise only to the CTEs after it and to
// the statement, and the same name inside its query is the table (WITH
// orders AS (SELECT * FROM orders ...) reads the real orders).
func (a *analysis) with(l *level, w *pg.WithClause) {
	if w == nil {
		return
	}
	if l.ctes == nil {
		l.ctes = map[string]*derivedRel{}
	}
	for _, c := range w.Ctes {
		cte, ok := c.Node.(*pg.Node_CommonTableExpr)
		if !ok {
			continue
		}
		d := &derivedRel{cols: map[string]colRef{}}
		if w.Recursive {
			l.ctes[cte.CommonTableExpr.Ctename] = d
		}
		// A CTE records its pins; they restrict the levels that read it
		// (see fromItem and levelKeys).
		child := a.statementLevel(l, cte.CommonTableExpr.Ctequery, true)
		l.ctes[cte.CommonTableExpr.Ctename] = d
		if child == nil {
			continue
		}
		child.derived, child.cte = true, true
		d.level = child
		if w.Recursive {
			child.addReason("WITH RECURSIVE")
		}
		switch q := cte.CommonTableExpr.Ctequery.GetNode().(type) {
		case *pg.Node_SelectStmt:
			a.deriveColumns(d, child, q.SelectStmt, cte.CommonTableExpr.Aliascolnames)
		case *pg.Node_InsertStmt:
			deriveReturning(d, child, q.InsertStmt.ReturningList)
		case *pg.Node_UpdateStmt:
			deriveReturning(d, child, q.UpdateStmt.ReturningList)
		case *pg.Node_DeleteStmt:
			deriveReturning(d, child, q.DeleteStmt.ReturningList)
		}
	}
}

// statementLevel analyses a nested statement: a SELECT, or the DML of a
// data-modifying WITH.
func (a *analysis) statementLevel(parent *level, n *pg.Node, restricting bool) *level {
	switch x := n.GetNode().(type) {
	case *pg.Node_SelectStmt:
		return a.selectLevel(parent, x.SelectStmt, restricting)
	case *pg.Node_InsertStmt:
		l := a.insertLevel(parent, x.InsertStmt, restricting)
		l.write = true
		return l
	case *pg.Node_UpdateStmt:
		l := a.updateLevel(parent, x.UpdateStmt, restricting)
		l.write = true
		return l
	case *pg.Node_DeleteStmt:
		l := a.deleteLevel(parent, x.DeleteStmt, restricting)
		l.write = true
		return l
	case nil:
		return nil
	}
	// MERGE and anything newer: find its tables conservatively.
	l := a.newLevel(parent)
	l.write = true
	a.expression(l, n)
	return l
}

// fromItem analyses one FROM-list item of level l.
func (a *analysis) fromItem(l *level, n *pg.Node, nullable, outerOn bool) {
	switch x := n.GetNode().(type) {
	case *pg.Node_RangeVar:
		rv := x.RangeVar
		if rv.Schemaname == "" {
			if d := l.lookupCTE(rv.Relname); d != nil {
				alias := rv.Relname
				if rv.Alias != nil && rv.Alias.Aliasname != "" {
					alias = rv.Alias.Aliasname
					d = renameDerived(d, rv.Alias.Colnames)
				}
				l.entries = append(l.entries, scopeEntry{alias: alias, derived: d})
				if d.level != nil && l.restricting && !nullable && !isAncestor(d.level, l) && d.level != l {
					l.cteRefs = append(l.cteRefs, d.level)
				}
				return
			}
		}
		a.addInstance(l, rv, nullable)
	case *pg.Node_JoinExpr:
		j := x.JoinExpr
		lnull, rnull := nullable, nullable
		switch j.Jointype {
		case pg.JoinType_JOIN_LEFT:
			rnull = true
		case pg.JoinType_JOIN_RIGHT:
			lnull = true
		case pg.JoinType_JOIN_FULL:
			lnull, rnull = true, true
		}
		before := len(l.entries)
		a.fromItem(l, j.Larg, lnull, outerOn || lnull != nullable)
		mid := len(l.entries)
		a.fromItem(l, j.Rarg, rnull, outerOn || rnull != nullable)
		where := condFilter
		if outerOn || nullable || j.Jointype != pg.JoinType_JOIN_INNER {
			where = condOuterOn
		}
		a.condition(l, j.Quals, where)
		for _, u := range j.UsingClause {
			a.usingEquality(l.entries[before:mid], l.entries[mid:], stringValue(u))
		}
		if j.Alias != nil && j.Alias.Aliasname != "" {
			// A join alias hides the inner names for qualification; keep
			// them anyway: resolving more only matters for pins, and a
			// query that qualifies through a hidden name fails to parse.
		}
	case *pg.Node_RangeSubselect:
		r := x.RangeSubselect
		child := a.statementLevel(l, r.Subquery, l.restricting && !nullable)
		if child == nil {
			return
		}
		child.derived = true
		child.nullable = nullable
		d := &derivedRel{level: child, cols: map[string]colRef{}}
		if sel, ok := r.Subquery.GetNode().(*pg.Node_SelectStmt); ok {
			var colnames []*pg.Node
			if r.Alias != nil {
				colnames = r.Alias.Colnames
			}
			a.deriveColumns(d, child, sel.SelectStmt, colnames)
		}
		alias := ""
		if r.Alias != nil {
			alias = r.Alias.Aliasname
		}
		l.entries = append(l.entries, scopeEntry{alias: alias, derived: d})
	case *pg.Node_RangeTableSample:
		a.fromItem(l, x.RangeTableSample.Relation, nullable, outerOn)
		for _, arg := range x.RangeTableSample.Args {
			a.expression(l, arg)
		}
	default:
		// Functions in FROM (generate_series, unnest, ROWS FROM, JSON_TABLE,
		// XMLTABLE): their arguments may hold sublinks.
		a.expression(l, n)
	}
}

// usingEquality co-locates JOIN ... USING (col) when col is a shard key on
// both sides.
func (a *analysis) usingEquality(left, right []scopeEntry, col string) {
	side := func(es []scopeEntry) *instance {
		var found *instance
		for _, e := range es {
			c := colRef{inst: e.inst, col: col}
			if e.derived != nil {
				c = e.derived.cols[col]
			}
			if _, ok := c.keyColumn(); ok && c.inst.rel.indexColumnCount() == 1 {
				if found != nil {
					return nil
				}
				found = c.inst
			}
		}
		return found
	}
	l, r := side(left), side(right)
	if l != nil && r != nil && l.rel.group == r.rel.group {
		a.uf.union(l.id, r.id)
	}
}

// deriveColumns maps the output columns of a derived table that are plain
// column references (SELECT o.customer_id, ... or SELECT customer_id AS
// cid) to their source, so outer conditions on them co-locate and pin.
func (a *analysis) deriveColumns(d *derivedRel, child *level, s *pg.SelectStmt, colnames []*pg.Node) {
	if s.Op != pg.SetOperation_SETOP_NONE && s.Op != pg.SetOperation_SET_OPERATION_UNDEFINED {
		return
	}
	for i, t := range s.TargetList {
		rt, ok := t.Node.(*pg.Node_ResTarget)
		if !ok {
			continue
		}
		cr, ok := rt.ResTarget.Val.GetNode().(*pg.Node_ColumnRef)
		if !ok {
			continue
		}
		src, ok := child.resolveColumn(cr.ColumnRef)
		if !ok {
			continue
		}
		name := rt.ResTarget.Name
		if name == "" {
			name = stringValue(cr.ColumnRef.Fields[len(cr.ColumnRef.Fields)-1])
		}
		if i < len(colnames) {
			name = stringValue(colnames[i])
		}
		if name != "" {
			d.cols[name] = src
		}
	}
}

// deriveReturning maps the RETURNING list of a data-modifying CTE:
// RETURNING * carries the target's key columns under their own names,
// plain column references as written.
func deriveReturning(d *derivedRel, l *level, list []*pg.Node) {
	for _, t := range list {
		rt, ok := t.Node.(*pg.Node_ResTarget)
		if !ok {
			continue
		}
		cr, ok := rt.ResTarget.Val.GetNode().(*pg.Node_ColumnRef)
		if !ok {
			continue
		}
		last := cr.ColumnRef.Fields[len(cr.ColumnRef.Fields)-1]
		if _, star := last.Node.(*pg.Node_AStar); star {
			if l.target != nil && len(cr.ColumnRef.Fields) == 1 {
				for col := range l.target.rel.keyCols {
					d.cols[col] = colRef{inst: l.target, col: col}
				}
			}
			continue
		}
		src, ok := l.resolveColumn(cr.ColumnRef)
		if !ok {
			continue
		}
		name := rt.ResTarget.Name
		if name == "" {
			name = stringValue(last)
		}
		d.cols[name] = src
	}
}

// renameDerived applies a column alias list to a CTE reference: FROM c AS
// x(a, b). Only names matter here; positions are not tracked for CTEs, so
// renamed CTE columns simply stop resolving.
func renameDerived(d *derivedRel, colnames []*pg.Node) *derivedRel {
	if len(colnames) == 0 {
		return d
	}
	return &derivedRel{level: d.level, cols: map[string]colRef{}}
}

// aggScan collects what expressions of one level contain.
type aggScan struct {
	aggregate bool
	windows   []*pg.FuncCall
}

// expression analyses an expression of level l: its sublinks become child
// levels (not restricting), and stray table references are registered.
func (a *analysis) expression(l *level, n *pg.Node) {
	a.expressionAgg(l, n, nil)
}

func (a *analysis) expressionAgg(l *level, n *pg.Node, agg *aggScan) {
	if n == nil {
		return
	}
	walk(n, func(m *pg.Node) bool {
		switch x := m.Node.(type) {
		case *pg.Node_SubLink:
			s := x.SubLink
			a.expressionAgg(l, s.Testexpr, agg)
			a.statementLevel(l, s.Subselect, false)
			return false
		case *pg.Node_SelectStmt, *pg.Node_InsertStmt, *pg.Node_UpdateStmt, *pg.Node_DeleteStmt:
			a.statementLevel(l, m, false)
			return false
		case *pg.Node_RangeVar:
			a.addInstance(l, x.RangeVar, true)
			return false
		case *pg.Node_FuncCall:
			f := x.FuncCall
			if agg != nil {
				if f.Over != nil {
					agg.windows = append(agg.windows, f)
				} else if isAggregate(f) {
					agg.aggregate = true
				}
			}
		}
		return true
	})
}

// groupsByKey reports whether GROUP BY includes a shard key of the level:
// every group then lives on one shard and per-shard results concatenate.
func (a *analysis) groupsByKey(l *level, s *pg.SelectStmt) bool {
	for _, g := range s.GroupClause {
		if a.isLevelKey(l, resolvePosition(g, s.TargetList)) {
			return true
		}
	}
	return false
}

// partitionsByKey reports whether a window function partitions by a key.
func (a *analysis) partitionsByKey(l *level, f *pg.FuncCall, s *pg.SelectStmt) bool {
	w := f.Over
	if w.Name != "" || w.Refname != "" {
		name := w.Name
		if name == "" {
			name = w.Refname
		}
		for _, wn := range s.WindowClause {
			if wd, ok := wn.Node.(*pg.Node_WindowDef); ok && wd.WindowDef.Name == name {
				w = wd.WindowDef
			}
		}
	}
	for _, p := range w.PartitionClause {
		if a.isLevelKey(l, p) {
			return true
		}
	}
	return false
}

// distinctByKey: rows that include a shard key cannot repeat across shards.
func (a *analysis) distinctByKey(l *level, s *pg.SelectStmt) bool {
	if len(s.DistinctClause) == 1 && s.DistinctClause[0].GetNode() == nil {
		for _, t := range s.TargetList {
			if rt, ok := t.Node.(*pg.Node_ResTarget); ok && a.isLevelKey(l, rt.ResTarget.Val) {
				return true
			}
		}
		return false
	}
	for _, d := range s.DistinctClause {
		if a.isLevelKey(l, resolvePosition(d, s.TargetList)) {
			return true
		}
	}
	return false
}

// isLevelKey: n is a key column of a sharded instance of level l itself,
// outside outer joins (a NULL-extended key would form one NULL group per
// shard).
func (a *analysis) isLevelKey(l *level, n *pg.Node) bool {
	if n == nil {
		return false
	}
	k, ok := a.keySide(l, n)
	return ok && k.inst.level == l && !k.inst.nullable && k.singleColumn()
}

// resolvePosition maps GROUP BY 1 to the first output expression.
func resolvePosition(n *pg.Node, targets []*pg.Node) *pg.Node {
	c, ok := n.GetNode().(*pg.Node_AConst)
	if !ok {
		return n
	}
	iv, ok := c.AConst.Val.(*pg.A_Const_Ival)
	if !ok || iv.Ival.Ival < 1 || int(iv.Ival.Ival) > len(targets) {
		return n
	}
	if rt, ok := targets[iv.Ival.Ival-1].Node.(*pg.Node_ResTarget); ok {
		return rt.ResTarget.Val
	}
	return n
}

// isAggregate recognises aggregate calls: anything with aggregate syntax
// (count(*), DISTINCT, ORDER BY, FILTER, WITHIN GROUP) and the built-in
// aggregates by name. A user-defined aggregate called like a plain function
// cannot be told from one without the catalog.
func isAggregate(f *pg.FuncCall) bool {
	if f.AggStar || f.AggDistinct || len(f.AggOrder) > 0 || f.AggFilter != nil || f.AggWithinGroup {
		return true
	}
	name := ""
	if len(f.Funcname) > 0 {
		name = stringValue(f.Funcname[len(f.Funcname)-1])
	}
	if len(f.Funcname) == 2 && stringValue(f.Funcname[0]) != "pg_catalog" {
		return false
	}
	return builtinAggregates[name]
}

var builtinAggregates = map[string]bool{
	"count": true, "sum": true, "avg": true, "min": true, "max": true,
	"array_agg": true, "string_agg": true, "json_agg": true, "jsonb_agg": true,
	"json_object_agg": true, "jsonb_object_agg": true, "json_agg_strict": true,
	"jsonb_agg_strict": true, "json_object_agg_strict": true, "json_object_agg_unique": true,
	"json_object_agg_unique_strict": true, "jsonb_object_agg_strict": true,
	"jsonb_object_agg_unique": true, "jsonb_object_agg_unique_strict": true,
	"xmlagg": true, "bit_and": true, "bit_or": true, "bit_xor": true,
	"bool_and": true, "bool_or": true, "every": true, "any_value": true,
	"stddev": true, "stddev_pop": true, "stddev_samp": true,
	"variance": true, "var_pop": true, "var_samp": true,
	"corr": true, "covar_pop": true, "covar_samp": true,
	"regr_avgx": true, "regr_avgy": true, "regr_count": true, "regr_intercept": true,
	"regr_r2": true, "regr_slope": true, "regr_sxx": true, "regr_sxy": true, "regr_syy": true,
	"mode": true, "percentile_cont": true, "percentile_disc": true,
	"rank": true, "dense_rank": true, "percent_rank": true, "cume_dist": true,
	"range_agg": true, "range_intersect_agg": true,
}
