package planner

import (
	"strconv"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/shardgate/shardgate/sqlerr"
)

// mergeBuilder turns the top level of a SELECT whose rows come from
// several clusters into the statement each shard runs and the primitives
// that combine their answers:
//
//	SELECT ... ORDER BY ... LIMIT n OFFSET m
//	  -> Limit(MergeSort(Route)); shards: ORDER BY kept, sort keys outside
//	     the select list added as hidden trailing columns, LIMIT n+m
//	SELECT DISTINCT [ON (...)] ...
//	  -> Distinct over the merge; shards run DISTINCT themselves
//	SELECT g, count(*), avg(x) ... GROUP BY g HAVING ... ORDER BY ... LIMIT
//	  -> Limit(Sort(Aggregate(Route))); shards: partial aggregates (avg as
//	     sum and count), group keys and what HAVING and ORDER BY need
//
// The statement's parse tree is rewritten in place (build owns it) and
// deparsed once into a ShardSQL template.
type mergeBuilder struct {
	s     *pg.SelectStmt
	route *Route
	// targets are the select list's entries; cols[i] is the result column
	// of targets[i], or -1 when a * before it (or itself) leaves that
	// unknown.
	targets []*pg.ResTarget
	cols    []int
	// hidden are the ResTargets appended to the shard's select list;
	// hiddenAt finds an expression already there.
	hidden   []*pg.Node
	hiddenAt map[string]int
	// changed is set when the select list itself was rewritten
	// (aggregates into their pieces).
	changed bool
	// scope are the GROUP BY aliases the shard statement's scope defines
	// (merge_alias.go).
	scope []string
}

// buildMergeSelect wraps route r of SELECT s into merge primitives. in is
// the IN list that pins r, if its items can be cut per cluster.
func (p *Planner) buildMergeSelect(s *pg.SelectStmt, r *Route, top *level, in *inListSource) (Primitive, error) {
	m := &mergeBuilder{s: s, route: r, hiddenAt: map[string]int{}}
	col := 0
	for _, t := range s.TargetList {
		rt, _ := t.Node.(*pg.Node_ResTarget)
		if rt == nil {
			return nil, m.refuse("select list")
		}
		m.targets = append(m.targets, rt.ResTarget)
		switch {
		case col < 0 || isStar(rt.ResTarget.Val):
			col = -1
			m.cols = append(m.cols, -1)
		default:
			m.cols = append(m.cols, col)
			col++
		}
	}
	var root Primitive
	var limit *Limit
	var err error
	switch {
	case top.setOp:
		root, limit, err = m.buildSetOp()
	case len(s.GroupClause) > 0 || s.HavingClause != nil || m.hasAggregate():
		root, err = m.buildGrouped()
	default:
		root, limit, err = m.buildSorted()
	}
	if err != nil {
		return nil, err
	}
	if err := m.template(in, limit); err != nil {
		return nil, err
	}
	return root, nil
}

// refuse is the 0A000 of a construct the merge primitives cannot do
// exactly.
func (m *mergeBuilder) refuse(what string) *sqlerr.Error {
	return mergeRefusal(what, m.route)
}

func mergeRefusal(what string, r *Route) *sqlerr.Error {
	e := sqlerr.New(sqlerr.FeatureNotSupported, "cross-shard %s is not supported", what)
	if r != nil && r.Tables != "" {
		e = e.WithDetail("The statement reads %s on %d clusters, and their results would have to be merged.", r.Tables, len(r.Group.Clusters))
	}
	if r != nil && r.Group.Index != nil {
		e = e.WithHint("Add a condition on the shard key (%s) to run the statement on one shard.", r.Group.Index.String())
	}
	return e
}

// template rewrites the shard statement's IN list and LIMIT into holes and
// deparses it; nothing changed leaves Route.Shard nil.
func (m *mergeBuilder) template(in *inListSource, limit *Limit) error {
	s := m.s
	for _, h := range m.hidden {
		s.TargetList = append(s.TargetList, h)
	}
	m.route.Hidden += len(m.hidden)
	var shardLimit *Limit
	if limit != nil {
		s.LimitOffset = nil
		s.LimitCount = nil
		s.LimitOption = pg.LimitOption_LIMIT_OPTION_DEFAULT
		if limit.Count != nil {
			s.LimitCount = markerNode(markerLimit)
			s.LimitOption = pg.LimitOption_LIMIT_OPTION_COUNT
			if limit.WithTies {
				s.LimitOption = pg.LimitOption_LIMIT_OPTION_WITH_TIES
			}
			shardLimit = limit
		}
	}
	if in != nil && in.array && in.items == nil {
		// a parameter: no hole, a value per cluster
		m.route.anyCut, in = paramCuttable(m.s, in), nil
	}
	var items []*pg.Node
	or := false
	if in != nil {
		items, or = in.items, in.or
		in.replace([]*pg.Node{markerNode(markerInList)})
	}
	if !m.changed && items == nil && limit == nil && len(m.hidden) == 0 {
		return nil
	}
	stmt, err := scoped(&pg.Node{Node: &pg.Node_SelectStmt{SelectStmt: s}}, m.scope)
	if err != nil {
		return sqlerr.New(sqlerr.FeatureNotSupported, "cannot rewrite the statement for its shards: %v", err)
	}
	sh, err := newShardSQL(stmt, items, or, shardLimit)
	if err == errNoTemplate && items != nil {
		// The statement names a marker itself: send every cluster the
		// whole IN list instead.
		in.replace(items)
		sh, err = newShardSQL(stmt, nil, false, shardLimit)
	}
	if err != nil {
		return sqlerr.New(sqlerr.FeatureNotSupported, "cannot rewrite the statement for its shards: %v", err)
	}
	if in != nil && in.array && sh.items != nil {
		sh.array, m.route.anyCut = true, true
	}
	m.route.Shard = sh
	return nil
}

// pruneIN gives a concatenating IN route (no merge) a template that sends
// each cluster only its own items of the IN list that pins it. Failure
// only costs the pruning.
func (p *Planner) pruneIN(s *pg.Node, r *Route, in *inListSource) {
	if in.array && in.items == nil {
		r.anyCut = paramCuttable(s, in) // a parameter: a value per cluster (prune_arrays.go)
		return
	}
	items := in.items
	in.replace([]*pg.Node{markerNode(markerInList)})
	sh, err := newShardSQL(s, items, in.or, nil)
	in.replace(items) // the tree as written, for whatever reads it next
	if err != nil {
		return
	}
	sh.array = in.array
	r.anyCut = in.array
	r.Shard = sh
}

// --- ORDER BY, DISTINCT, LIMIT without aggregation -------------------------

func (m *mergeBuilder) buildSorted() (Primitive, *Limit, error) {
	s := m.s
	distinct := len(s.DistinctClause) > 0
	distinctOn := distinct && !(len(s.DistinctClause) == 1 && s.DistinctClause[0].GetNode() == nil)
	// A hidden column in a plain DISTINCT's select list would change
	// which rows are distinct (and hide Postgres's own "ORDER BY
	// expressions must appear in select list").
	allowHidden := !distinct || distinctOn
	var keys []SortKey
	for _, n := range s.SortClause {
		sb, _ := n.Node.(*pg.Node_SortBy)
		if sb == nil {
			return nil, nil, m.refuse("ORDER BY")
		}
		k, inner, err := m.sortKey(sb.SortBy)
		if err != nil {
			return nil, nil, err
		}
		c, collation, err := m.outputColumn(inner, "ORDER BY", allowHidden)
		if err != nil {
			return nil, nil, err
		}
		k.Column = c
		if k.Collation == "" {
			k.Collation = collation
		}
		keys = append(keys, k)
	}
	var root Primitive = m.route
	if len(keys) > 0 {
		root = &MergeSort{Input: m.route, Keys: keys}
	}
	if distinct {
		d := &Distinct{Input: root, Sorted: len(keys) > 0}
		if distinctOn {
			for _, n := range s.DistinctClause {
				if err := m.checkEqualityCollation(n, "DISTINCT ON"); err != nil {
					return nil, nil, err
				}
				c, _, err := m.outputColumn(n, "DISTINCT ON", true)
				if err != nil {
					return nil, nil, err
				}
				d.On = append(d.On, c)
			}
		}
		root = d
	}
	limit, err := m.limit()
	if err != nil {
		return nil, nil, err
	}
	if limit != nil {
		limit.Input = root
		root = limit
	}
	return root, limit, nil
}

// buildSetOp merges a UNION [ALL] whose ORDER BY and LIMIT apply to the
// combined rows: keys can only name output columns.
func (m *mergeBuilder) buildSetOp() (Primitive, *Limit, error) {
	s := m.s
	left := s
	for left.Op != pg.SetOperation_SETOP_NONE && left.Larg != nil {
		left = left.Larg
	}
	var keys []SortKey
	for _, n := range s.SortClause {
		sb, _ := n.Node.(*pg.Node_SortBy)
		if sb == nil {
			return nil, nil, m.refuse("ORDER BY")
		}
		k, inner, err := m.sortKey(sb.SortBy)
		if err != nil {
			return nil, nil, err
		}
		k.Column = -1
		if pos, ok := ordinal(inner); ok {
			k.Column = pos - 1
		} else if name, ok := bareName(inner); ok {
			col := 0
			for _, t := range left.TargetList {
				rt, _ := t.Node.(*pg.Node_ResTarget)
				if rt == nil || isStar(rt.ResTarget.Val) {
					break
				}
				if outputName(rt.ResTarget) == name {
					k.Column = col
					break
				}
				col++
			}
		}
		if k.Column < 0 {
			return nil, nil, m.refuse("ORDER BY of a set operation on an expression")
		}
		keys = append(keys, k)
	}
	var root Primitive = m.route
	if len(keys) > 0 {
		root = &MergeSort{Input: m.route, Keys: keys}
	}
	if s.Op == pg.SetOperation_SETOP_UNION && !s.All {
		// Each shard's UNION is distinct; rows of several shards may
		// still repeat.
		root = &Distinct{Input: root, Sorted: len(keys) > 0}
	}
	limit, err := m.limit()
	if err != nil {
		return nil, nil, err
	}
	if limit != nil {
		limit.Input = root
		root = limit
	}
	return root, limit, nil
}

// sortKey reads direction, NULLS and COLLATE of one ORDER BY item; inner
// is the key without a top-level COLLATE.
func (m *mergeBuilder) sortKey(sb *pg.SortBy) (SortKey, *pg.Node, error) {
	k := SortKey{Expr: exprKey(sb.Node)}
	switch sb.SortbyDir {
	case pg.SortByDir_SORTBY_DESC:
		k.Desc = true
	case pg.SortByDir_SORTBY_USING:
		switch {
		case isOperator(sb.UseOp, "<"):
		case isOperator(sb.UseOp, ">"):
			k.Desc = true
		default:
			return k, nil, m.refuse("ORDER BY ... USING an operator other than < and >")
		}
	}
	switch sb.SortbyNulls {
	case pg.SortByNulls_SORTBY_NULLS_FIRST:
		k.NullsFirst = true
	case pg.SortByNulls_SORTBY_NULLS_LAST:
	default:
		k.NullsFirst = k.Desc // NULLS LAST is the default for ASC, FIRST for DESC
	}
	inner := sb.Node
	k.Collation, inner = collationOf(inner)
	return k, inner, nil
}

// collationOf splits a top-level COLLATE off an expression: the
// collation's name, and "?" when a COLLATE sits deeper inside.
func collationOf(n *pg.Node) (string, *pg.Node) {
	coll := ""
	if cc, ok := n.GetNode().(*pg.Node_CollateClause); ok {
		if names := cc.CollateClause.Collname; len(names) > 0 {
			coll = stringValue(names[len(names)-1])
		}
		n = cc.CollateClause.Arg
	}
	walk(n, func(x *pg.Node) bool {
		switch x.Node.(type) {
		case *pg.Node_CollateClause:
			coll = "?"
			return false
		case *pg.Node_SubLink:
			return false
		}
		return true
	})
	return coll, n
}

// checkEqualityCollation refuses a key whose equality a COLLATE other than
// C may change (a nondeterministic collation makes 'a' = 'A').
func (m *mergeBuilder) checkEqualityCollation(n *pg.Node, what string) error {
	bad := false
	walk(n, func(x *pg.Node) bool {
		if cc, ok := x.Node.(*pg.Node_CollateClause); ok {
			names := cc.CollateClause.Collname
			if len(names) == 0 || !isCCollation(stringValue(names[len(names)-1])) {
				bad = true
			}
		}
		return true
	})
	if bad {
		return m.refuse(what + " with a COLLATE other than \"C\"")
	}
	return nil
}

func isCCollation(name string) bool { return name == "C" || name == "POSIX" || name == "default" }

// outputColumn finds the result column an ORDER BY or DISTINCT ON item
// reads, the way Postgres resolves it: a position, then an output column
// name, then an expression equal to a select-list entry; otherwise, if
// allowed, a hidden column computing it. collation is the COLLATE of the
// select-list entry it names, if any.
func (m *mergeBuilder) outputColumn(n *pg.Node, clause string, allowHidden bool) (col int, collation string, err error) {
	if pos, ok := ordinal(n); ok {
		if pos < 1 || pos > len(m.targets) && !m.hasStar() {
			return 0, "", sqlerr.New("42P10", "%s position %d is not in select list", clause, pos)
		}
		if pos <= len(m.targets) && m.cols[pos-1] >= 0 {
			collation, _ = collationOf(m.targets[pos-1].Val)
		}
		return pos - 1, collation, nil
	}
	if name, ok := bareName(n); ok {
		for i, t := range m.targets {
			if m.cols[i] >= 0 && outputName(t) == name {
				collation, _ = collationOf(t.Val)
				return m.cols[i], collation, nil
			}
		}
		for i, t := range m.targets {
			if m.cols[i] < 0 && !isStar(t.Val) && outputName(t) == name {
				if !allowHidden {
					return 0, "", m.refuse(clause + " on a column after *")
				}
				collation, _ = collationOf(t.Val)
				return m.hiddenColumn(t.Val), collation, nil
			}
		}
	}
	key := exprKey(n)
	for i, t := range m.targets {
		if m.cols[i] >= 0 && key != "" && exprKey(t.Val) == key {
			collation, _ = collationOf(t.Val)
			return m.cols[i], collation, nil
		}
	}
	if !allowHidden {
		return 0, "", m.refuse("SELECT DISTINCT with an " + clause + " expression that is not written as in the select list")
	}
	return m.hiddenColumn(n), "", nil
}

// hiddenColumn appends an expression to the shard's select list (once)
// and returns its column in SortKey's negative numbering.
func (m *mergeBuilder) hiddenColumn(n *pg.Node) int {
	key := exprKey(n)
	if h, ok := m.hiddenAt[key]; ok && key != "" {
		return -(h + 1)
	}
	h := len(m.hidden)
	m.hidden = append(m.hidden, &pg.Node{Node: &pg.Node_ResTarget{ResTarget: &pg.ResTarget{
		Name: "sg_hidden_" + strconv.Itoa(h+1), Val: n,
	}}})
	if key != "" {
		m.hiddenAt[key] = h
	}
	return -(h + 1)
}

// limit reads LIMIT and OFFSET; nil when the statement has neither.
func (m *mergeBuilder) limit() (*Limit, error) {
	s := m.s
	if s.LimitCount == nil && s.LimitOffset == nil {
		return nil, nil
	}
	count, ok := limitRef(s.LimitCount)
	if !ok {
		return nil, m.refuse("LIMIT with an expression")
	}
	offset, ok := limitRef(s.LimitOffset)
	if !ok {
		return nil, m.refuse("OFFSET with an expression")
	}
	withTies := s.LimitOption == pg.LimitOption_LIMIT_OPTION_WITH_TIES
	if count != nil && count.Null && !withTies {
		count = nil // LIMIT ALL, LIMIT NULL
	}
	if count == nil && offset == nil {
		return nil, nil
	}
	return &Limit{Count: count, Offset: offset, WithTies: withTies}, nil
}

func (m *mergeBuilder) hasStar() bool {
	for _, c := range m.cols {
		if c < 0 {
			return true
		}
	}
	return false
}

func isStar(n *pg.Node) bool {
	cr, ok := n.GetNode().(*pg.Node_ColumnRef)
	if !ok || len(cr.ColumnRef.Fields) == 0 {
		return false
	}
	_, star := cr.ColumnRef.Fields[len(cr.ColumnRef.Fields)-1].Node.(*pg.Node_AStar)
	return star
}

// ordinal recognises ORDER BY 2.
func ordinal(n *pg.Node) (int, bool) {
	c, ok := n.GetNode().(*pg.Node_AConst)
	if !ok {
		return 0, false
	}
	iv, ok := c.AConst.Val.(*pg.A_Const_Ival)
	if !ok {
		return 0, false
	}
	return int(iv.Ival.Ival), true
}

// bareName recognises an unqualified column name.
func bareName(n *pg.Node) (string, bool) {
	cr, ok := n.GetNode().(*pg.Node_ColumnRef)
	if !ok || len(cr.ColumnRef.Fields) != 1 {
		return "", false
	}
	s, ok := cr.ColumnRef.Fields[0].Node.(*pg.Node_String_)
	if !ok {
		return "", false
	}
	return s.String_.Sval, true
}

// outputName is the column name Postgres gives a select-list entry: its
// alias, or what FigureColname derives from the expression.
func outputName(rt *pg.ResTarget) string {
	if rt.Name != "" {
		return rt.Name
	}
	return figureColname(rt.Val)
}

// figureColname follows parse_target.c's FigureColnameInternal for the
// expressions whose name matters here.
func figureColname(n *pg.Node) string {
	switch x := n.GetNode().(type) {
	case *pg.Node_ColumnRef:
		f := x.ColumnRef.Fields
		if len(f) > 0 {
			if s, ok := f[len(f)-1].Node.(*pg.Node_String_); ok {
				return s.String_.Sval
			}
		}
	case *pg.Node_FuncCall:
		if f := x.FuncCall.Funcname; len(f) > 0 {
			return stringValue(f[len(f)-1])
		}
	case *pg.Node_TypeCast:
		if name := figureColname(x.TypeCast.Arg); name != "?column?" {
			return name
		}
		if t := x.TypeCast.TypeName; t != nil && len(t.Names) > 0 {
			return stringValue(t.Names[len(t.Names)-1])
		}
	case *pg.Node_CollateClause:
		return figureColname(x.CollateClause.Arg)
	case *pg.Node_AIndirection:
		ind := x.AIndirection.Indirection
		for i := len(ind) - 1; i >= 0; i-- {
			if s, ok := ind[i].Node.(*pg.Node_String_); ok {
				return s.String_.Sval
			}
		}
		return figureColname(x.AIndirection.Arg)
	case *pg.Node_CaseExpr:
		if name := figureColname(x.CaseExpr.Defresult); name != "?column?" && x.CaseExpr.Defresult != nil {
			return name
		}
		return "case"
	case *pg.Node_AArrayExpr:
		return "array"
	case *pg.Node_RowExpr:
		return "row"
	case *pg.Node_CoalesceExpr:
		return "coalesce"
	case *pg.Node_MinMaxExpr:
		if x.MinMaxExpr.Op == pg.MinMaxOp_IS_LEAST {
			return "least"
		}
		return "greatest"
	case *pg.Node_NullIfExpr:
		return "nullif"
	case *pg.Node_AExpr:
		if x.AExpr.Kind == pg.A_Expr_Kind_AEXPR_NULLIF { // NULLIF as the parser gives it
			return "nullif"
		}
	}
	return "?column?"
}

// --- aggregates -----------------------------------------------------------

// supportedAggs are the aggregates the proxy combines exactly.
var supportedAggs = map[string]AggFunc{
	"count": AggCount, "sum": AggSum, "min": AggMin, "max": AggMax, "avg": AggAvg,
	"bool_and": AggBoolAnd, "every": AggBoolAnd, "bool_or": AggBoolOr,
	"bit_and": AggBitAnd, "bit_or": AggBitOr,
	"variance": AggVarSamp, "var_samp": AggVarSamp, "var_pop": AggVarPop,
	"stddev": AggStddevSamp, "stddev_samp": AggStddevSamp, "stddev_pop": AggStddevPop,
}

// aggCall recognises a call of an aggregate the proxy can combine. It
// returns an error for other aggregates, and for forms it cannot combine
// (DISTINCT, WITHIN GROUP).
func (m *mergeBuilder) aggCall(n *pg.Node) (*pg.FuncCall, AggFunc, bool, error) {
	fc, ok := n.GetNode().(*pg.Node_FuncCall)
	if !ok || fc.FuncCall.Over != nil || !isAggregate(fc.FuncCall) {
		return nil, 0, false, nil
	}
	f := fc.FuncCall
	name := stringValue(f.Funcname[len(f.Funcname)-1])
	fn, ok := supportedAggs[name]
	if !ok {
		return nil, 0, false, m.refuse("aggregate " + name + "()")
	}
	switch {
	case f.AggDistinct && (fn != AggCount && fn != AggSum && fn != AggAvg || len(f.Args) != 1 || len(f.AggOrder) > 0):
		return nil, 0, false, m.refuse(name + "(DISTINCT ...)")
	case fn.Variance() && !numericCast(f):
		// Of float arguments Postgres computes them in floating point,
		// row by row: only an argument cast to an integer or numeric type
		// says at planning time that they are numeric.
		return nil, 0, false, m.refuse("aggregate " + name + "() of an argument not cast to numeric")
	case f.AggWithinGroup:
		return nil, 0, false, m.refuse(name + "() WITHIN GROUP")
	case f.AggStar && fn != AggCount:
		return nil, 0, false, nil // the backend's error
	}
	return f, fn, true, nil
}

// containsAggregate reports an aggregate call of this level in n (not
// inside a sublink, whose aggregates are usually the subquery's own).
func containsAggregate(n *pg.Node) bool {
	found := false
	walk(n, func(x *pg.Node) bool {
		switch y := x.Node.(type) {
		case *pg.Node_SubLink:
			return false
		case *pg.Node_GroupingFunc:
			found = true
		case *pg.Node_FuncCall:
			if y.FuncCall.Over == nil && isAggregate(y.FuncCall) {
				found = true
			}
		}
		return !found
	})
	return found
}

// sublinkAggregate reports an aggregate call inside a sublink of n: it
// might belong to this level (an outer reference), which the proxy could
// not combine.
func sublinkAggregate(n *pg.Node) bool {
	found := false
	walk(n, func(x *pg.Node) bool {
		if sl, ok := x.Node.(*pg.Node_SubLink); ok {
			walk(sl.SubLink.Subselect, func(y *pg.Node) bool {
				if fc, ok := y.Node.(*pg.Node_FuncCall); ok && fc.FuncCall.Over == nil && isAggregate(fc.FuncCall) {
					found = true
				}
				return !found
			})
		}
		return !found
	})
	return found
}

func (m *mergeBuilder) hasAggregate() bool {
	for _, t := range m.targets {
		if containsAggregate(t.Val) {
			return true
		}
	}
	for _, n := range m.s.SortClause {
		if containsAggregate(n) {
			return true
		}
	}
	return false
}
