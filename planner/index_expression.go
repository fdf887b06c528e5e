package planner

import (
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"github.com/shardgate/shardgate/keyexpr"
)

// matchIndexExpression recognises the whole index expression of an
// expression index written in a statement: WHERE lower(p.sku) = 'abc' for
// an index on lower(sku). The candidate is compared in keyexpr's canonical
// form (the same printer the topology's expression went through), after
// dropping table qualifiers, so spelling, case and qualification do not
// matter. Every column in it must belong to one instance.
func (a *analysis) matchIndexExpression(l *level, n *pg.Node) (*instance, bool) {
	switch x := n.GetNode().(type) {
	case *pg.Node_FuncCall, *pg.Node_TypeCast:
	case *pg.Node_AExpr:
		if !isOperator(x.AExpr.Name, "||") {
			return nil, false
		}
	default:
		return nil, false
	}
	var inst *instance
	ok := true
	walk(n, func(m *pg.Node) bool {
		switch x := m.Node.(type) {
		case *pg.Node_ColumnRef:
			c, resolved := l.resolveColumn(x.ColumnRef)
			if !resolved || c.inst.rel.kind != relSharded || !c.inst.rel.expression ||
				(inst != nil && inst != c.inst) {
				ok = false
				return false
			}
			if _, isKey := c.inst.rel.keyCols[c.col]; !isKey {
				ok = false
				return false
			}
			inst = c.inst
		case *pg.Node_SubLink, *pg.Node_ParamRef:
			ok = false
			return false
		}
		return ok
	})
	if !ok || inst == nil {
		return nil, false
	}
	text, err := canonicalExpression(n)
	if err != nil || text != inst.rel.group.Index.Expr.String() {
		return nil, false
	}
	return inst, true
}

// canonicalExpression prints an expression the way keyexpr prints index
// expressions, with column references unqualified.
func canonicalExpression(n *pg.Node) (string, error) {
	c := proto.Clone(n).(*pg.Node)
	walk(c, func(m *pg.Node) bool {
		if cr, ok := m.Node.(*pg.Node_ColumnRef); ok && len(cr.ColumnRef.Fields) > 1 {
			cr.ColumnRef.Fields = cr.ColumnRef.Fields[len(cr.ColumnRef.Fields)-1:]
		}
		return true
	})
	sel := &pg.Node{Node: &pg.Node_SelectStmt{SelectStmt: &pg.SelectStmt{
		TargetList:  []*pg.Node{{Node: &pg.Node_ResTarget{ResTarget: &pg.ResTarget{Val: c}}}},
		LimitOption: pg.LimitOption_LIMIT_OPTION_DEFAULT,
		Op:          pg.SetOperation_SETOP_NONE,
	}}}
	out, err := deparse(sel)
	if err != nil {
		return "", err
	}
	e, err := keyexpr.Parse(strings.TrimPrefix(out, "SELECT "))
	if err != nil {
		return "", err
	}
	return e.String(), nil
}
