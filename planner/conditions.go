package planner

import (
	pg "github.com/pganalyze/pg_query_go/v6"
)

// condition says where a boolean expression sits, which decides what its
// conjuncts may do.
type condition uint8

const (
	// condFilter: a WHERE clause or the ON clause of an inner join that
	// is not inside an outer join. Equalities co-locate; key conditions
	// pin if the level is restricting.
	condFilter condition = iota
	// condOuterOn: the ON clause of an outer join (or of an inner join
	// nested in one). Equalities co-locate, nothing pins: a preserved
	// row survives a failed condition.
	condOuterOn
)

// conjuncts flattens an AND tree.
func conjuncts(n *pg.Node, out []*pg.Node) []*pg.Node {
	if n == nil {
		return out
	}
	if b, ok := n.Node.(*pg.Node_BoolExpr); ok && b.BoolExpr.Boolop == pg.BoolExprType_AND_EXPR {
		for _, arg := range b.BoolExpr.Args {
			out = conjuncts(arg, out)
		}
		return out
	}
	if e, ok := n.Node.(*pg.Node_AExpr); ok && e.AExpr.Kind == pg.A_Expr_Kind_AEXPR_OP && isOperator(e.AExpr.Name, "=") {
		if parts := rowEquality(e.AExpr); parts != nil {
			return append(out, parts...)
		}
	}
	return append(out, n)
}

// condition analyses a WHERE or ON clause of level l: sublinks become
// child levels, key equalities co-locate, key conditions pin.
func (a *analysis) condition(l *level, expr *pg.Node, where condition) {
	if expr == nil {
		return
	}
	for _, c := range conjuncts(expr, nil) {
		a.expression(l, c) // sublinks, aggregates
		a.equality(l, c, where)
		if where == condFilter {
			for inst, keys := range a.pinsOf(l, c) {
				if !owns(l, inst) {
					continue
				}
				// A pin through a derived table with a LIMIT or an
				// aggregate restricts rows computed from every shard.
				if l.restricting && mergeFreePath(l, inst) {
					l.pins = append(l.pins, pinSet{inst: inst, keys: keys})
				}
				a.filters = append(a.filters, levelPin{l: l, pin: pinSet{inst: inst, keys: keys}})
			}
		}
	}
}

// equality co-locates what one conjunct proves equal: two shard-key
// columns (o.customer_id = c.id), a key and a single value (the instance
// joins that value's node: two instances pinned to the same literal or
// parameter are co-located), or a key and a subquery's key
// (o.customer_id IN (SELECT c.id ...)).
//
// A key = value in an outer join's ON co-locates nothing: the preserved
// side keeps its rows whatever their key, so the value does not tie it to
// other instances pinned to that value.
//
// A condition of level l only constrains rows of l: an equality between
// two outer tables written inside a scalar subquery in the SELECT list
// filters nothing of theirs. So at least one side must belong to l (or to
// a subquery in l's FROM list).
func (a *analysis) equality(l *level, c *pg.Node, where condition) {
	switch x := c.Node.(type) {
	case *pg.Node_AExpr:
		e := x.AExpr
		if e.Kind != pg.A_Expr_Kind_AEXPR_OP || !isOperator(e.Name, "=") || e.Lexpr == nil {
			return
		}
		lk, lok := a.keySide(l, e.Lexpr)
		rk, rok := a.keySide(l, e.Rexpr)
		switch {
		case lok && rok:
			if (owns(l, lk.inst) || owns(l, rk.inst)) && lk.inst.rel.group == rk.inst.rel.group &&
				lk.whole == rk.whole && lk.singleColumn() {
				a.uf.union(lk.inst.id, rk.inst.id)
				markCorrelated(l, lk.inst, rk.inst)
				a.ties = append(a.ties, keyTie{l: l, x: lk.inst, y: rk.inst, where: where})
			}
		case lok:
			if k, ok := a.keyValue(lk, e.Rexpr); ok && !k.hasNull() && owns(l, lk.inst) && where == condFilter {
				a.uf.union(lk.inst.id, a.valueNode(k))
			}
		case rok:
			if k, ok := a.keyValue(rk, e.Lexpr); ok && !k.hasNull() && owns(l, rk.inst) && where == condFilter {
				a.uf.union(rk.inst.id, a.valueNode(k))
			}
		}
	case *pg.Node_SubLink:
		a.sublinkEquality(l, x.SubLink)
	}
}

// sublinkEquality handles key IN (SELECT key ...) and key = ANY (SELECT key
// ...): the subquery is analysed already (expression ran first).
func (a *analysis) sublinkEquality(l *level, s *pg.SubLink) {
	if s.SubLinkType != pg.SubLinkType_ANY_SUBLINK || s.Testexpr == nil {
		return
	}
	if len(s.OperName) > 0 && !isOperator(s.OperName, "=") {
		return
	}
	outer, ok := a.keySide(l, s.Testexpr)
	if !ok || !outer.singleColumn() {
		return
	}
	sel, ok := s.Subselect.GetNode().(*pg.Node_SelectStmt)
	if !ok || len(sel.SelectStmt.TargetList) != 1 {
		return
	}
	inner := a.levelOf[sel.SelectStmt]
	if inner == nil {
		return
	}
	rt, ok := sel.SelectStmt.TargetList[0].Node.(*pg.Node_ResTarget)
	if !ok {
		return
	}
	// The semi-join co-locates, but the subquery itself still runs once
	// per shard over all of its rows: it is not correlated, and a LIMIT or
	// an aggregate in it keeps needing a merge.
	ik, ok := a.keySide(inner, rt.ResTarget.Val)
	if ok && owns(l, outer.inst) && owns(inner, ik.inst) && ik.inst.rel.group == outer.inst.rel.group &&
		ik.whole == outer.whole && ik.singleColumn() {
		a.uf.union(outer.inst.id, ik.inst.id)
	}
}

// markCorrelated flags level l as running within one key per outer row:
// its own condition ties one of its tables to a table of an enclosing
// level by the shard key.
func markCorrelated(l *level, x, y *instance) {
	if x.level == l && isAncestor(y.level, l) || y.level == l && isAncestor(x.level, l) {
		l.correlated = true
	}
}

// owns reports whether inst belongs to level l or to a level below it.
func owns(l *level, inst *instance) bool {
	return inst.level == l || isAncestor(l, inst.level)
}

func isAncestor(anc, l *level) bool {
	for s := l.parent; s != nil; s = s.parent {
		if s == anc {
			return true
		}
	}
	return false
}

// keySide is one side of a key comparison: a shard-key column of a sharded
// instance, or (for expression indexes) the whole index expression over
// one instance's columns.
type keySide struct {
	inst  *instance
	col   string // the index column, for a column side
	whole bool   // the side is the whole index expression
}

func (k keySide) singleColumn() bool {
	return k.whole || len(k.inst.rel.indexColumns) == 1
}

func (a *analysis) keySide(l *level, n *pg.Node) (keySide, bool) {
	if n == nil {
		return keySide{}, false
	}
	if c, ok := l.keyColumnRef(n); ok {
		ix, _ := c.keyColumn()
		return keySide{inst: c.inst, col: ix}, true
	}
	if inst, ok := a.matchIndexExpression(l, n); ok {
		return keySide{inst: inst, whole: true}, true
	}
	return keySide{}, false
}

// keyValue builds the key a comparison with side k pins, if v is a value.
func (a *analysis) keyValue(k keySide, v *pg.Node) (KeyRef, bool) {
	ref, ok := valueRef(v)
	if !ok {
		return KeyRef{}, false
	}
	return a.keyValueRef(k, ref)
}

// keyValueRef builds the key a comparison of side k with ref pins.
func (a *analysis) keyValueRef(k keySide, ref ValueRef) (KeyRef, bool) {
	if k.whole {
		return KeyRef{Whole: &ref}, true
	}
	if len(k.inst.rel.indexColumns) != 1 {
		return KeyRef{}, false // one column of a multi-column expression pins nothing alone
	}
	return KeyRef{Columns: []ColumnValue{{Column: k.col, Value: ref}}}, true
}

// pinsOf returns, for one restricting conjunct, the instances whose keys it
// limits and to which keys: key = v, key IN (v, ...), and OR-trees whose
// every branch pins the same instance. Literal NULLs never match and are
// dropped.
func (a *analysis) pinsOf(l *level, c *pg.Node) map[*instance][]KeyRef {
	switch x := c.Node.(type) {
	case *pg.Node_AExpr:
		e := x.AExpr
		switch {
		case e.Kind == pg.A_Expr_Kind_AEXPR_OP && isOperator(e.Name, "=") && e.Lexpr != nil:
			if parts := rowEquality(e); parts != nil {
				return a.pinsOf(l, &pg.Node{Node: &pg.Node_BoolExpr{BoolExpr: &pg.BoolExpr{Boolop: pg.BoolExprType_AND_EXPR, Args: parts}}})
			}
			if k, ok := a.keySide(l, e.Lexpr); ok {
				if ref, ok := a.keyValue(k, e.Rexpr); ok {
					return pinMap(k.inst, []KeyRef{ref})
				}
			}
			if k, ok := a.keySide(l, e.Rexpr); ok {
				if ref, ok := a.keyValue(k, e.Lexpr); ok {
					return pinMap(k.inst, []KeyRef{ref})
				}
			}
		case e.Kind == pg.A_Expr_Kind_AEXPR_OP_ANY && isOperator(e.Name, "="):
			k, ok := a.keySide(l, e.Lexpr)
			if !ok || !k.singleColumn() {
				return nil
			}
			if arr, isArray := e.Rexpr.GetNode().(*pg.Node_AArrayExpr); isArray {
				ae := arr.AArrayExpr
				return a.listPins(l, k, ae.Elements, func(items []*pg.Node) { ae.Elements = items })
			}
			ref, ok := arrayValueRef(e.Rexpr)
			if !ok {
				return nil
			}
			m := pinMap(k.inst, []KeyRef{{Array: &ArrayRef{Value: ref, Column: k.col, Whole: k.whole}}})
			a.arrayPins(m, e.Rexpr)
			return m
		case e.Kind == pg.A_Expr_Kind_AEXPR_IN && isOperator(e.Name, "="):
			k, ok := a.keySide(l, e.Lexpr)
			list, isList := e.Rexpr.GetNode().(*pg.Node_List)
			if !ok || !isList {
				return nil
			}
			ll := list.List
			return a.listPins(l, k, ll.Items, func(items []*pg.Node) { ll.Items = items })
		}
	case *pg.Node_BoolExpr:
		b := x.BoolExpr
		switch b.Boolop {
		case pg.BoolExprType_AND_EXPR:
			// Any conjunct's pins restrict the whole conjunction.
			out := map[*instance][]KeyRef{}
			for _, arg := range b.Args {
				for inst, keys := range a.pinsOf(l, arg) {
					if old, ok := out[inst]; !ok || len(keys) < len(old) {
						out[inst] = keys
					}
				}
			}
			return out
		case pg.BoolExprType_OR_EXPR:
			var out map[*instance][]KeyRef
			// single: the instances every branch so far pins to exactly
			// one key, which makes the OR prunable (orPins).
			single := map[*instance]bool{}
			for i, arg := range b.Args {
				m := a.pinsOf(l, arg)
				if i == 0 {
					out = m
					for inst, keys := range m {
						single[inst] = len(keys) == 1 && keys[0].Array == nil
					}
					continue
				}
				for inst := range out {
					if keys, ok := m[inst]; ok {
						out[inst] = append(out[inst], keys...)
						single[inst] = single[inst] && len(keys) == 1 && keys[0].Array == nil
					} else {
						delete(out, inst)
					}
				}
			}
			a.orPins(c, out, single)
			return out
		}
	}
	return nil
}

// listPins pins k to every value of an IN list or ARRAY[...]. The list is
// remembered (a.inLists) with a way to replace its items, so that a route
// pinned by it can send each cluster only the items of its own keys.
func (a *analysis) listPins(l *level, k keySide, items []*pg.Node, replace func([]*pg.Node)) map[*instance][]KeyRef {
	// Postgres converts the items of a list of two or more to their
	// common type (IN (7.5, '7.0') reads '7.0' as numeric): every item
	// carries the list.
	refs := make([]ValueRef, len(items))
	for i, item := range items {
		ref, ok := valueRef(item)
		if !ok {
			return nil
		}
		refs[i] = ref
	}
	if len(refs) > 1 {
		list := &refs
		for i := range refs {
			refs[i].list = list
		}
	}
	keys := make([]KeyRef, 0, len(items))
	var kept []*pg.Node
	for i, item := range items {
		ref, ok := a.keyValueRef(k, refs[i])
		if !ok {
			return nil
		}
		if ref.hasNull() {
			continue // never matches, as in pinMap
		}
		keys = append(keys, ref)
		kept = append(kept, item)
	}
	if len(keys) == 0 {
		return nil
	}
	a.inLists = append(a.inLists, inListSource{keys: keys, items: kept, replace: replace})
	return map[*instance][]KeyRef{k.inst: keys}
}

// inListSource is an IN list or ARRAY[...] of = ANY whose items pinned keys.
type inListSource struct {
	keys    []KeyRef         // the pinned keys, NULL items dropped
	items   []*pg.Node       // the items, aligned with keys
	or      bool             // the items are an OR's branches (prune_lists.go)
	array   bool             // keys[0] is an ANY array: items its literal, or none for a parameter (prune_arrays.go)
	replace func([]*pg.Node) // sets the list's items in the parse tree
}

// inListOf returns the IN list that produced exactly the given keys (the
// same slice, as levelKeys returns a pin's keys), if any.
func (a *analysis) inListOf(keys []KeyRef) *inListSource {
	if len(keys) == 0 {
		return nil
	}
	for i := range a.inLists {
		src := &a.inLists[i]
		if len(src.keys) == len(keys) && &src.keys[0] == &keys[0] {
			return src
		}
	}
	return nil
}

// arrayValueRef recognises the array of key = ANY(...): a parameter or a
// string literal, possibly cast to an array of a type a key value may
// pass through ('{7.5}'::numeric[]): the element casts are the result's
// ops.
func arrayValueRef(n *pg.Node) (ValueRef, bool) {
	switch x := n.GetNode().(type) {
	case *pg.Node_ParamRef:
		return ValueRef{Param: int(x.ParamRef.Number)}, true
	case *pg.Node_AConst:
		if sv, ok := x.AConst.Val.(*pg.A_Const_Sval); ok && !x.AConst.Isnull {
			return ValueRef{Literal: sv.Sval.Sval}, true
		}
	case *pg.Node_TypeCast:
		t := x.TypeCast.TypeName
		if t == nil || len(t.ArrayBounds) != 1 {
			return ValueRef{}, false
		}
		to, ok := castTarget(&pg.TypeName{Names: t.Names, Typmods: t.Typmods})
		if !ok {
			return ValueRef{}, false
		}
		v, ok := arrayValueRef(x.TypeCast.Arg)
		if !ok {
			return ValueRef{}, false
		}
		v.ops = append(v.ops[:len(v.ops):len(v.ops)], valueOp{to: to, name: castName(to, t) + "[]"})
		return v, true
	}
	return ValueRef{}, false
}

// rowEquality splits (a, b) = (1, 2) into a = 1 and b = 2.
func rowEquality(e *pg.A_Expr) []*pg.Node {
	lr, lok := e.Lexpr.GetNode().(*pg.Node_RowExpr)
	rr, rok := e.Rexpr.GetNode().(*pg.Node_RowExpr)
	if !lok || !rok || len(lr.RowExpr.Args) != len(rr.RowExpr.Args) {
		return nil
	}
	parts := make([]*pg.Node, len(lr.RowExpr.Args))
	for i := range parts {
		parts[i] = &pg.Node{Node: &pg.Node_AExpr{AExpr: &pg.A_Expr{
			Kind: pg.A_Expr_Kind_AEXPR_OP, Name: e.Name, Lexpr: lr.RowExpr.Args[i], Rexpr: rr.RowExpr.Args[i],
		}}}
	}
	return parts
}

func pinMap(inst *instance, keys []KeyRef) map[*instance][]KeyRef {
	var kept []KeyRef
	for _, k := range keys {
		if !k.hasNull() {
			kept = append(kept, k)
		}
	}
	if len(kept) == 0 {
		// key = NULL matches nothing: any one shard answers correctly,
		// and so does a scatter; do not pin to a NULL key.
		return nil
	}
	return map[*instance][]KeyRef{inst: kept}
}

// isOperator reports whether an operator name list is op, optionally
// qualified with pg_catalog (OPERATOR(pg_catalog.=)).
func isOperator(name []*pg.Node, op string) bool {
	switch len(name) {
	case 1:
		return stringValue(name[0]) == op
	case 2:
		return stringValue(name[0]) == "pg_catalog" && stringValue(name[1]) == op
	}
	return false
}
