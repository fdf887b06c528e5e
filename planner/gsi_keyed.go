package planner

import (
	"strconv"
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
	// bound is the statement with "AND alias.key = $n::type" instead
	// (bound[0], for one owner's key) or "AND alias.key = ANY($n::type[])"
	// (bound[1], for several), $n one past the statement's own parameters:
	// the same texts for every execution, so that the proxy prepares them
	// once per backend connection and binds the owners' keys
	// (NarrowBound). One key gets its own text so that Postgres's plan
	// cache can settle on a generic plan, which it never does for ANY of
	// an array parameter (each execution would be planned again).
	bound [2]string
}

// markerOwnerKeys is deparsed where the owners' keys go.
const markerOwnerKeys = "sg_hole_owner_keys"

// newKeyedSQL rewrites a SELECT, UPDATE or DELETE of one table (alias)
// keyed by column, of type typ, whose highest parameter is $numParams;
// nil when it cannot (the statement names the marker, or does not
// deparse).
func newKeyedSQL(stmt *pg.Node, alias, column, typ string, numParams int) *keyedSQL {
	pre, post, ok := keyedText(stmt, alias, column, pg.A_Expr_Kind_AEXPR_IN)
	if !ok {
		return nil
	}
	k := &keyedSQL{pre: pre, post: post}
	param := "$" + strconv.Itoa(numParams+1) + "::" + typ
	for i, kind := range []pg.A_Expr_Kind{pg.A_Expr_Kind_AEXPR_OP, pg.A_Expr_Kind_AEXPR_OP_ANY} {
		bpre, bpost, ok := keyedText(stmt, alias, column, kind)
		if !ok {
			return nil
		}
		k.bound[i] = bpre + param + [2]string{"", "[]"}[i] + bpost
	}
	return k
}

// keyedText deparses stmt with "AND alias.column IN (marker)" (kind
// AEXPR_IN), "AND alias.column = marker" (AEXPR_OP) or "AND alias.column
// = ANY(marker)" (AEXPR_OP_ANY) added to its WHERE, and returns the text
// around the marker.
func keyedText(stmt *pg.Node, alias, column string, kind pg.A_Expr_Kind) (pre, post string, ok bool) {
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
		return "", "", false
	}
	col := &pg.Node{Node: &pg.Node_ColumnRef{ColumnRef: &pg.ColumnRef{Fields: []*pg.Node{
		{Node: &pg.Node_String_{String_: &pg.String{Sval: alias}}}, {Node: &pg.Node_String_{String_: &pg.String{Sval: column}}}}}}}
	keys := markerNode(markerOwnerKeys)
	if kind == pg.A_Expr_Kind_AEXPR_IN {
		keys = &pg.Node{Node: &pg.Node_List{List: &pg.List{Items: []*pg.Node{keys}}}}
	}
	in := &pg.Node{Node: &pg.Node_AExpr{AExpr: &pg.A_Expr{Kind: kind,
		Name:  []*pg.Node{{Node: &pg.Node_String_{String_: &pg.String{Sval: "="}}}},
		Lexpr: col, Rexpr: keys}}}
	if b, ok := (*where).GetNode().(*pg.Node_BoolExpr); ok && b.BoolExpr.Boolop == pg.BoolExprType_AND_EXPR {
		b.BoolExpr.Args = append(b.BoolExpr.Args, in)
	} else {
		*where = &pg.Node{Node: &pg.Node_BoolExpr{BoolExpr: &pg.BoolExpr{Boolop: pg.BoolExprType_AND_EXPR, Args: []*pg.Node{*where, in}}}}
	}
	text, err := deparse(c)
	if err != nil || strings.Count(text, markerOwnerKeys) != 1 {
		return "", "", false
	}
	i := strings.Index(text, markerOwnerKeys)
	return text[:i], text[i+len(markerOwnerKeys):], true
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
