package planner

import (
	"strconv"

	pg "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"github.com/shardgate/shardgate/sqlerr"
)

// aggBuilder holds the state of rewriting an aggregate query: the shard
// select list is the client's, each aggregate replaced by its partial
// (avg by sum, with count hidden), followed by hidden columns for the
// GROUP BY keys and what HAVING and ORDER BY need.
type aggBuilder struct {
	*mergeBuilder
	agg *Aggregate
	// anyCol finds a shard column computing a non-aggregate expression.
	anyCol map[string]int
	// hiddenAgg finds a hidden aggregate by its text.
	hiddenAgg map[string]int
	nvis      int
	// orig are the client's select-list expressions, before aggregates
	// became partials.
	orig []*pg.Node
	// distinctKeys are the arguments of DISTINCT aggregates, added to the
	// shards' GROUP BY.
	distinctKeys []*pg.Node
}

func (m *mergeBuilder) buildGrouped() (Primitive, error) {
	s := m.s
	distinct := len(s.DistinctClause) > 0
	if distinct && !(len(s.DistinctClause) == 1 && s.DistinctClause[0].GetNode() == nil) {
		return nil, m.refuse("DISTINCT ON with aggregates")
	}
	b := &aggBuilder{mergeBuilder: m, agg: &Aggregate{Input: m.route}, anyCol: map[string]int{}, hiddenAgg: map[string]int{}, nvis: len(m.targets)}
	m.changed = true

	// The client's columns, in place.
	for _, t := range m.targets {
		b.orig = append(b.orig, t.Val)
	}
	for i, t := range m.targets {
		if isStar(t.Val) {
			return nil, m.refuse("SELECT * with aggregates")
		}
		if sublinkAggregate(t.Val) {
			return nil, m.refuse("aggregate inside a subquery of the select list")
		}
		call, fn, ok, err := m.aggCall(t.Val)
		if err != nil {
			return nil, err
		}
		if ok {
			idx := b.addAgg(call, fn, outputName(t), i)
			b.agg.Outputs = append(b.agg.Outputs, AggOutput{Agg: idx})
			continue
		}
		if containsAggregate(t.Val) {
			// Evaluated by the proxy on the combined group; the shards
			// send what it reads instead.
			e, err := b.postExpr(t.Val)
			if err != nil {
				return nil, err
			}
			b.targets[i] = &pg.ResTarget{Name: outputName(t), Val: &pg.Node{Node: &pg.Node_AConst{AConst: &pg.A_Const{Isnull: true}}}}
			b.agg.Outputs = append(b.agg.Outputs, AggOutput{Agg: -1, Expr: e})
			continue
		}
		b.agg.Outputs = append(b.agg.Outputs, AggOutput{Agg: -1, Col: i})
		if k := exprKey(t.Val); k != "" {
			if _, seen := b.anyCol[k]; !seen {
				b.anyCol[k] = i
			}
		}
	}

	// GROUP BY keys.
	for _, g := range s.GroupClause {
		switch g.Node.(type) {
		case *pg.Node_GroupingSet:
			return nil, m.refuse("GROUPING SETS, ROLLUP or CUBE")
		}
		if err := m.checkEqualityCollation(g, "GROUP BY"); err != nil {
			return nil, err
		}
		if pos, ok := ordinal(g); ok {
			if pos < 1 || pos > b.nvis {
				return nil, sqlerr.New("42P10", "GROUP BY position %d is not in select list", pos)
			}
			if b.agg.Outputs[pos-1].Agg >= 0 {
				return nil, sqlerr.New("42803", "aggregate functions are not allowed in GROUP BY")
			}
			b.agg.Group = append(b.agg.Group, pos-1)
			continue
		}
		if name, ok := bareName(g); ok {
			out := -1
			for i, t := range m.targets {
				if n, isName := bareName(t.Val); t.Name == name && (!isName || n != name) && out < 0 {
					out = i
				}
			}
			if out >= 0 {
				// Postgres prefers an input column of that name over the
				// alias; the shard tells which one it is (merge_alias.go).
				col, ok := b.aliasGroup(name, out)
				if !ok {
					return nil, m.refuse("GROUP BY the output column alias \"" + name + "\"")
				}
				b.agg.Group = append(b.agg.Group, col)
				continue
			}
		}
		b.agg.Group = append(b.agg.Group, b.column(g))
	}

	// HAVING: conditions without aggregates stay with the shards (they
	// only read group keys, so every shard decides them alike); the rest
	// is evaluated on combined groups.
	if s.HavingClause != nil {
		var keep []*pg.Node
		var preds []*Predicate
		for _, c := range conjuncts(s.HavingClause, nil) {
			if !containsAggregate(c) && !sublinkAggregate(c) {
				keep = append(keep, c)
				continue
			}
			p, err := b.predicate(c)
			if err != nil {
				return nil, err
			}
			preds = append(preds, p)
		}
		switch len(keep) {
		case 0:
			s.HavingClause = nil
		case 1:
			s.HavingClause = keep[0]
		default:
			s.HavingClause = &pg.Node{Node: &pg.Node_BoolExpr{BoolExpr: &pg.BoolExpr{Boolop: pg.BoolExprType_AND_EXPR, Args: keep}}}
		}
		switch len(preds) {
		case 0:
		case 1:
			b.agg.Having = preds[0]
		default:
			b.agg.Having = &Predicate{Op: PredAnd, Args: preds}
		}
	}

	// ORDER BY over the groups, sorted by the proxy.
	var keys []SortKey
	for _, n := range s.SortClause {
		sb, _ := n.Node.(*pg.Node_SortBy)
		if sb == nil {
			return nil, m.refuse("ORDER BY")
		}
		k, inner, err := m.sortKey(sb.SortBy)
		if err != nil {
			return nil, err
		}
		out, collation, err := b.sortOutput(inner, !distinct)
		if err != nil {
			return nil, err
		}
		k.Column = out
		if k.Collation == "" {
			k.Collation = collation
		}
		keys = append(keys, k)
	}
	limit, err := m.limit()
	if err != nil {
		return nil, err
	}

	if len(b.distinctKeys) > 0 {
		if err := b.groupDistinct(); err != nil {
			return nil, err
		}
	}

	// The shard statement: no DISTINCT, ORDER BY or LIMIT (those apply
	// to the combined groups).
	s.TargetList = s.TargetList[:0]
	for _, t := range m.targets {
		s.TargetList = append(s.TargetList, &pg.Node{Node: &pg.Node_ResTarget{ResTarget: t}})
	}
	s.DistinctClause = nil
	s.SortClause = nil
	s.LimitCount, s.LimitOffset = nil, nil
	s.LimitOption = pg.LimitOption_LIMIT_OPTION_DEFAULT
	b.agg.ShardColumns = b.nvis + len(m.hidden)
	b.agg.Hidden = len(b.agg.Outputs) - b.nvis

	var root Primitive = b.agg
	if len(keys) > 0 {
		root = &Sort{Input: root, Keys: keys}
	}
	if distinct {
		root = &Distinct{Input: root}
	}
	if limit != nil {
		limit.Input = root
		root = limit
	}
	return root, nil
}

// addAgg rewrites the client's aggregate at select-list position i into
// its partial, named as the client's column would be, and records it.
func (b *aggBuilder) addAgg(call *pg.FuncCall, fn AggFunc, name string, i int) int {
	spec := AggSpec{Func: fn, Col: i, Count: -1, Distinct: -1, Expr: exprKey(&pg.Node{Node: &pg.Node_FuncCall{FuncCall: call}})}
	b.distinct(&spec, call)
	spec.Collation, _ = collationOfArgs(call)
	first := call
	switch {
	case fn == AggAvg:
		first = partialCall(call, "sum")
		spec.Count = b.hiddenExpr(&pg.Node{Node: &pg.Node_FuncCall{FuncCall: partialCall(call, "count")}})
		b.avgGuard(call)
	case fn.Variance():
		first = b.varianceParts(&spec, call)
	}
	b.targets[i] = &pg.ResTarget{Name: name, Val: &pg.Node{Node: &pg.Node_FuncCall{FuncCall: first}}}
	b.agg.Aggs = append(b.agg.Aggs, spec)
	return len(b.agg.Aggs) - 1
}

// hiddenAggregate adds an aggregate HAVING or ORDER BY needs (once).
func (b *aggBuilder) hiddenAggregate(call *pg.FuncCall, fn AggFunc) int {
	text := exprKey(&pg.Node{Node: &pg.Node_FuncCall{FuncCall: call}})
	if idx, ok := b.hiddenAgg[text]; ok && text != "" {
		return idx
	}
	for idx, spec := range b.agg.Aggs {
		if spec.Expr == text && text != "" {
			return idx // the client's own column already has it
		}
	}
	spec := AggSpec{Func: fn, Count: -1, Distinct: -1, Expr: text}
	b.distinct(&spec, call)
	spec.Collation, _ = collationOfArgs(call)
	switch {
	case fn == AggAvg:
		spec.Col = b.hiddenExpr(&pg.Node{Node: &pg.Node_FuncCall{FuncCall: partialCall(call, "sum")}})
		spec.Count = b.hiddenExpr(&pg.Node{Node: &pg.Node_FuncCall{FuncCall: partialCall(call, "count")}})
		b.avgGuard(call)
	case fn.Variance():
		spec.Col = b.hiddenExpr(&pg.Node{Node: &pg.Node_FuncCall{FuncCall: b.varianceParts(&spec, call)}})
	default:
		spec.Col = b.hiddenExpr(&pg.Node{Node: &pg.Node_FuncCall{FuncCall: call}})
	}
	b.agg.Aggs = append(b.agg.Aggs, spec)
	idx := len(b.agg.Aggs) - 1
	if text != "" {
		b.hiddenAgg[text] = idx
	}
	return idx
}

// avgGuard adds the client's avg(x) itself as a hidden column whose value
// the proxy drops: avg of double precision keeps a sum of squared
// deviations beside the sum, and fails with 22003 where it overflows
// (rows far apart, past about 1e154); the shards' sum(x) and count(x)
// alone would give a finite answer. Each shard fails as one Postgres
// would over its own rows; the proxy checks the combination of the
// shards' partials (merge, avgSquares). avg of numeric shares its
// transition state with sum of numeric on the shard.
func (b *aggBuilder) avgGuard(call *pg.FuncCall) {
	if call.AggDistinct {
		return // the shards group by x: one value per group, nothing to overflow
	}
	b.hiddenExpr(&pg.Node{Node: &pg.Node_FuncCall{FuncCall: partialCall(call, "avg")}})
}

// varianceParts adds count(x) and sum(x::numeric * x::numeric) of a
// variance's argument as hidden columns and returns sum(x::numeric), the
// partial in the aggregate's own column.
func (b *aggBuilder) varianceParts(spec *AggSpec, call *pg.FuncCall) *pg.FuncCall {
	num := func() *pg.Node {
		return &pg.Node{Node: &pg.Node_TypeCast{TypeCast: &pg.TypeCast{
			Arg:      proto.Clone(call.Args[0]).(*pg.Node),
			TypeName: &pg.TypeName{Names: []*pg.Node{{Node: &pg.Node_String_{String_: &pg.String{Sval: "pg_catalog"}}}, {Node: &pg.Node_String_{String_: &pg.String{Sval: "numeric"}}}}, Typemod: -1},
		}}}
	}
	sum := partialCall(call, "sum")
	sum.Args = []*pg.Node{num()}
	sq := partialCall(call, "sum")
	sq.Args = []*pg.Node{{Node: &pg.Node_AExpr{AExpr: &pg.A_Expr{
		Kind: pg.A_Expr_Kind_AEXPR_OP, Name: []*pg.Node{{Node: &pg.Node_String_{String_: &pg.String{Sval: "*"}}}},
		Lexpr: num(), Rexpr: num(),
	}}}}
	spec.Count = b.hiddenExpr(&pg.Node{Node: &pg.Node_FuncCall{FuncCall: partialCall(call, "count")}})
	spec.Square = b.hiddenExpr(&pg.Node{Node: &pg.Node_FuncCall{FuncCall: sq}})
	return sum
}

// distinct makes the shards group by the argument of count, sum or
// avg(DISTINCT x), which the proxy reads to add each value once.
func (b *aggBuilder) distinct(spec *AggSpec, call *pg.FuncCall) {
	if !call.AggDistinct {
		return
	}
	arg := call.Args[0]
	spec.Distinct = b.column(arg)
	key := exprKey(arg)
	for _, k := range b.distinctKeys {
		if exprKey(k) == key {
			return
		}
	}
	b.distinctKeys = append(b.distinctKeys, proto.Clone(arg).(*pg.Node))
}

// collationOfArgs is the COLLATE of min(x COLLATE "C")'s argument.
func collationOfArgs(call *pg.FuncCall) (string, *pg.Node) {
	if len(call.Args) != 1 {
		return "", nil
	}
	return collationOf(call.Args[0])
}

// partialCall is pg_catalog.name(args) with the call's FILTER and ORDER BY:
// avg(x) FILTER (WHERE c) is sum(x) FILTER (WHERE c) / count(x) FILTER
// (WHERE c).
func partialCall(call *pg.FuncCall, name string) *pg.FuncCall {
	c := proto.Clone(call).(*pg.FuncCall)
	c.Funcname = []*pg.Node{
		{Node: &pg.Node_String_{String_: &pg.String{Sval: "pg_catalog"}}},
		{Node: &pg.Node_String_{String_: &pg.String{Sval: name}}},
	}
	return c
}

// hiddenExpr appends an expression to the shard's select list and returns
// its (absolute) shard column.
func (b *aggBuilder) hiddenExpr(n *pg.Node) int {
	return b.nvis - 1 - b.hiddenColumn(n)
}

// column finds or adds a shard column computing a non-aggregate
// expression.
func (b *aggBuilder) column(n *pg.Node) int {
	if c, ok := b.anyCol[exprKey(n)]; ok {
		return c
	}
	return b.hiddenExpr(n)
}

// sortOutput resolves an ORDER BY key of an aggregate query to an output
// of the Aggregate, adding a hidden output if allowed.
func (b *aggBuilder) sortOutput(n *pg.Node, allowHidden bool) (int, string, error) {
	if pos, ok := ordinal(n); ok {
		if pos < 1 || pos > b.nvis {
			return 0, "", sqlerr.New("42P10", "ORDER BY position %d is not in select list", pos)
		}
		return pos - 1, b.outputCollation(pos - 1), nil
	}
	if name, ok := bareName(n); ok {
		for i, t := range b.targets[:b.nvis] {
			if t.Name == name || t.Name == "" && figureColname(t.Val) == name {
				return i, b.outputCollation(i), nil
			}
		}
	}
	key := exprKey(n)
	for i, t := range b.orig {
		if key != "" && exprKey(t) == key {
			return i, b.outputCollation(i), nil
		}
	}
	if !allowHidden {
		return 0, "", b.refuse("SELECT DISTINCT with an ORDER BY expression that is not written as in the select list")
	}
	call, fn, ok, err := b.aggCall(n)
	if err != nil {
		return 0, "", err
	}
	if ok {
		idx := b.hiddenAggregate(call, fn)
		b.agg.Outputs = append(b.agg.Outputs, AggOutput{Agg: idx})
		return len(b.agg.Outputs) - 1, b.agg.Aggs[idx].Collation, nil
	}
	if sublinkAggregate(n) {
		return 0, "", b.refuse("ORDER BY an expression over an aggregate (" + key + ")")
	}
	if containsAggregate(n) {
		e, err := b.postExpr(n)
		if err != nil {
			return 0, "", err
		}
		b.agg.Outputs = append(b.agg.Outputs, AggOutput{Agg: -1, Expr: e})
		return len(b.agg.Outputs) - 1, "", nil
	}
	b.agg.Outputs = append(b.agg.Outputs, AggOutput{Agg: -1, Col: b.column(n)})
	return len(b.agg.Outputs) - 1, "", nil
}

func (b *aggBuilder) outputCollation(i int) string {
	if o := b.agg.Outputs[i]; o.Expr != nil {
		return ""
	} else if o.Agg >= 0 {
		return b.agg.Aggs[o.Agg].Collation
	}
	c, _ := collationOf(b.targets[i].Val)
	return c
}

// predicate compiles one HAVING condition with aggregates.
func (b *aggBuilder) predicate(n *pg.Node) (*Predicate, error) {
	cannot := func() error { return b.refuse("HAVING condition " + exprKey(n)) }
	switch x := n.Node.(type) {
	case *pg.Node_BoolExpr:
		p := &Predicate{}
		switch x.BoolExpr.Boolop {
		case pg.BoolExprType_AND_EXPR:
			p.Op = PredAnd
		case pg.BoolExprType_OR_EXPR:
			p.Op = PredOr
		case pg.BoolExprType_NOT_EXPR:
			p.Op = PredNot
		default:
			return nil, cannot()
		}
		for _, a := range x.BoolExpr.Args {
			q, err := b.predicate(a)
			if err != nil {
				return nil, err
			}
			p.Args = append(p.Args, q)
		}
		return p, nil
	case *pg.Node_AExpr:
		e := x.AExpr
		if e.Kind != pg.A_Expr_Kind_AEXPR_OP || e.Lexpr == nil || e.Rexpr == nil {
			return nil, cannot()
		}
		var cmp string
		for _, op := range []string{"=", "<>", "!=", "<", "<=", ">", ">="} {
			if isOperator(e.Name, op) {
				cmp = op
			}
		}
		if cmp == "" {
			return nil, cannot()
		}
		if cmp == "!=" {
			cmp = "<>"
		}
		l, err := b.operand(e.Lexpr)
		if err != nil {
			return nil, err
		}
		r, err := b.operand(e.Rexpr)
		if err != nil {
			return nil, err
		}
		if l.Value != nil && r.Value != nil {
			return nil, cannot()
		}
		return &Predicate{Op: PredCompare, Cmp: cmp, Left: l, Right: r}, nil
	case *pg.Node_NullTest:
		t := x.NullTest
		if t.Argisrow {
			return nil, cannot()
		}
		o, err := b.operand(t.Arg)
		if err != nil {
			return nil, err
		}
		if o.Value != nil {
			return nil, cannot()
		}
		op := PredIsNull
		if t.Nulltesttype == pg.NullTestType_IS_NOT_NULL {
			op = PredIsNotNull
		}
		return &Predicate{Op: op, Left: o}, nil
	}
	return nil, cannot()
}

// operand compiles one side of a HAVING comparison: an aggregate, a
// literal, a parameter, or a value the group determines.
func (b *aggBuilder) operand(n *pg.Node) (Operand, error) {
	call, fn, ok, err := b.aggCall(n)
	if err != nil {
		return Operand{}, err
	}
	if ok {
		return Operand{Agg: b.hiddenAggregate(call, fn)}, nil
	}
	if v, ok := literalOperand(n); ok {
		_, quoted := n.GetNode().(*pg.Node_AConst)
		quoted = quoted && !v.Int && !v.Null && !isNumericConst(n)
		return Operand{Agg: -1, Value: v, Quoted: quoted}, nil
	}
	if sublinkAggregate(n) {
		return Operand{}, b.refuse("HAVING on an expression over an aggregate (" + exprKey(n) + ")")
	}
	if containsAggregate(n) {
		e, err := b.postExpr(n)
		if err != nil {
			return Operand{}, err
		}
		return Operand{Agg: -1, Expr: e}, nil
	}
	return Operand{Agg: -1, Col: b.column(n)}, nil
}

// isNumericConst reports a numeric (Fval) or boolean constant, as opposed
// to a quoted string.
func isNumericConst(n *pg.Node) bool {
	c, ok := n.GetNode().(*pg.Node_AConst)
	if !ok {
		return false
	}
	switch c.AConst.Val.(type) {
	case *pg.A_Const_Fval, *pg.A_Const_Ival, *pg.A_Const_Boolval:
		return true
	}
	return false
}

// literalOperand recognises an uncast literal or parameter, possibly
// negated: its type is the other side's, as for an untyped constant.
func literalOperand(n *pg.Node) (*ValueRef, bool) {
	switch x := n.GetNode().(type) {
	case *pg.Node_ParamRef:
		return &ValueRef{Param: int(x.ParamRef.Number)}, true
	case *pg.Node_AConst:
		c := x.AConst
		if c.Isnull {
			return &ValueRef{Null: true}, true
		}
		switch v := c.Val.(type) {
		case *pg.A_Const_Ival:
			return &ValueRef{Literal: strconv.Itoa(int(v.Ival.Ival)), Int: true}, true
		case *pg.A_Const_Fval:
			return &ValueRef{Literal: v.Fval.Fval}, true
		case *pg.A_Const_Sval:
			return &ValueRef{Literal: v.Sval.Sval}, true
		case *pg.A_Const_Boolval:
			return &ValueRef{Literal: strconv.FormatBool(v.Boolval.Boolval)}, true
		}
	case *pg.Node_AExpr:
		e := x.AExpr
		if e.Kind == pg.A_Expr_Kind_AEXPR_OP && e.Lexpr == nil && isOperator(e.Name, "-") {
			v, ok := literalOperand(e.Rexpr)
			if ok && !v.Null && (v.Param > 0 || isNumeric(v.Literal) || v.Int) {
				v.Negate = !v.Negate
				return v, true
			}
		}
	}
	return nil, false
}

// groupDistinct adds the arguments of DISTINCT aggregates to the shards'
// GROUP BY. Without a GROUP BY of the client's the Aggregate is scalar
// (one row even when no shard sends any), which it can only be when every
// output is an aggregate or computed from aggregates and constants, and
// no condition without aggregates stayed in the shards' HAVING.
func (b *aggBuilder) groupDistinct() error {
	s := b.s
	if len(s.GroupClause) == 0 {
		if s.HavingClause != nil {
			return b.refuse("DISTINCT aggregate with HAVING on no aggregate")
		}
		for _, o := range b.agg.Outputs {
			if o.Agg < 0 && (o.Expr == nil || o.Expr.readsColumns()) {
				return b.refuse("DISTINCT aggregate beside a value without GROUP BY")
			}
		}
		if b.agg.Having != nil && b.agg.Having.readsColumns() {
			return b.refuse("DISTINCT aggregate beside a value without GROUP BY")
		}
		b.agg.Scalar = true
	}
	s.GroupClause = append(s.GroupClause, b.distinctKeys...)
	return nil
}

// readsColumns reports a shard column read outside an aggregate.
func (e *PostExpr) readsColumns() bool {
	if e.Op == PostCol {
		return true
	}
	for _, a := range e.Args {
		if a.readsColumns() {
			return true
		}
	}
	for _, w := range e.Whens {
		if w.readsColumns() {
			return true
		}
	}
	return false
}

func (p *Predicate) readsColumns() bool {
	for _, a := range p.Args {
		if a.readsColumns() {
			return true
		}
	}
	for _, o := range []Operand{p.Left, p.Right} {
		switch {
		case o.Expr != nil && o.Expr.readsColumns():
			return true
		case o.Expr == nil && o.Value == nil && o.Agg < 0 && (p.Op == PredCompare || o == p.Left && p.Op != PredAnd && p.Op != PredOr && p.Op != PredNot):
			return true
		}
	}
	return false
}
