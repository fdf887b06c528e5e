package planner

import (
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"
)

// keyedSQL is a statement read through a global secondary index with its
// WHERE narrowed to the owners' keys: "(<WHERE>) AND alias.key IN (...)",
// the list a hole filled per cluster at execution. On an owner shard the
// statement then finds its rows by the shard key, which the owner table's
// primary key or indexes usually lead with, instead of scanning for the
// indexed value.
type keyedSQL struct {
	pre, post string // the deparsed statement around the hole
}

// markerOwnerKeys is deparsed where the owners' keys go.
const markerOwnerKeys = "sg_hole_owner_keys"

// newKeyedSQL rewrites a SELECT, UPDATE or DELETE of one table (alias)
// keyed by column; nil when it cannot (the statement names the marker,
// or does not deparse).
func newKeyedSQL(stmt *pg.Node, alias, column string) *keyedSQL {
	c := proto.Clone(stmt).(*pg.Node)
	var where **pg.Node
	switch x := c.Node.(type) {
	case *pg.Node_SelectStmt:
		where = &x.SelectStmt.WhereClause
	case *pg.Node_UpdateStmt:
		where = &x.UpdateStmt.WhereClause
	case *pg.Node_DeleteStmt:
		where = &x.DeleteStmt.WhereClause
	default:
		return nil
	}
	col := &pg.Node{Node: &pg.Node_ColumnRef{ColumnRef: &pg.ColumnRef{Fields: []*pg.Node{
		{Node: &pg.Node_String_{String_: &pg.String{Sval: alias}}}, {Node: &pg.Node_String_{String_: &pg.String{Sval: column}}}}}}}
	in := &pg.Node{Node: &pg.Node_AExpr{AExpr: &pg.A_Expr{Kind: pg.A_Expr_Kind_AEXPR_IN,
		Name:  []*pg.Node{{Node: &pg.Node_String_{String_: &pg.String{Sval: "="}}}},
		Lexpr: col, Rexpr: &pg.Node{Node: &pg.Node_List{List: &pg.List{Items: []*pg.Node{markerNode(markerOwnerKeys)}}}}}}}
	if b, ok := (*where).GetNode().(*pg.Node_BoolExpr); ok && b.BoolExpr.Boolop == pg.BoolExprType_AND_EXPR {
		b.BoolExpr.Args = append(b.BoolExpr.Args, in)
	} else {
		*where = &pg.Node{Node: &pg.Node_BoolExpr{BoolExpr: &pg.BoolExpr{Boolop: pg.BoolExprType_AND_EXPR, Args: []*pg.Node{*where, in}}}}
	}
	text, err := deparse(c)
	if err != nil || strings.Count(text, markerOwnerKeys) != 1 {
		return nil
	}
	i := strings.Index(text, markerOwnerKeys)
	return &keyedSQL{pre: text[:i], post: text[i+len(markerOwnerKeys):]}
}

// render fills the hole with keys (SQL literals). simple: the client's
// statement as written, whose literals the normalized statement's $n
// stand for (the simple protocol); "" leaves the $n for the Bind.
func (k *keyedSQL) render(keys []string, simple string) string {
	pre, post := k.pre, k.post
	if simple != "" {
		lits, _ := findLiterals(simple, nil)
		pre, post = inlineLiterals(pre, nil, simple, lits), inlineLiterals(post, nil, simple, lits)
	}
	return pre + strings.Join(keys, ", ") + post
}
