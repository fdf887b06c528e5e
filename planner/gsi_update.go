package planner

import (
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"github.com/shardgate/shardgate/keyexpr"
	"github.com/shardgate/shardgate/sqlerr"
	"github.com/shardgate/shardgate/vschema"
)

// An UPDATE that sets the column of a secondary index runs in three steps
// on each of its clusters, in the owner's transaction (package gsi):
//
//  1. LockSQL: SELECT ctid, key, each index's value FROM the target (and
//     the UPDATE's FROM list) WHERE the UPDATE's WHERE, FOR UPDATE of the
//     target: the matching rows, locked, with their old values;
//  2. UpdateSQL: the UPDATE with its WHERE extended by "AND ctid =
//     ANY(the locked rows)" (the original WHERE stays: it is what the rows
//     were locked by), its RETURNING extended by the key and the values;
//  3. the old entries of the locked rows removed, the new ones written.

// ctidPlaceholder stands in UpdateSQL for the array of locked rows.
const ctidPlaceholder = "'__shardgate_locked_ctids__'"

// gsiUpdateWork returns the work of an UPDATE of t setting an indexed
// column (nil: it sets none).
func gsiUpdateWork(t *vschema.Table, u *pg.UpdateStmt) (*GSIWork, error) {
	if t == nil {
		return nil, nil
	}
	var changed []*vschema.SecondaryIndex
	for _, si := range t.SecondaryIndexes {
		for _, n := range u.TargetList {
			if rt, ok := n.Node.(*pg.Node_ResTarget); ok && si.Reads(rt.ResTarget.Name) {
				changed = append(changed, si)
				break
			}
		}
	}
	if len(changed) == 0 {
		return nil, nil
	}
	refuse := func(what string) error {
		return sqlerr.New(sqlerr.FeatureNotSupported,
			"UPDATE of column %s of %s %s is not supported yet: the proxy would not maintain its global secondary index %s",
			changed[0].Label(), t, what, changed[0].Name).
			WithHint("Write the UPDATE without it, or delete the row and insert it again with the new value.")
	}
	if u.WithClause != nil {
		return nil, refuse("with a WITH clause")
	}
	if _, ok := u.WhereClause.GetNode().(*pg.Node_CurrentOfExpr); ok {
		return nil, refuse("WHERE CURRENT OF a cursor")
	}
	alias := aliasOf(u.Relation)
	w := &GSIWork{Op: GSIUpdate, Tables: []*vschema.Table{t}, Alias: alias, Indexes: changed}
	q := keyexpr.QuoteIdentifier(alias) + "."
	cols := []string{q + "ctid", q + keyexpr.QuoteIdentifier(t.KeyColumn)}
	for _, si := range t.SecondaryIndexes {
		cols = append(cols, si.Source(keyexpr.QuoteIdentifier(alias)))
	}
	if err := w.lockAndUpdate(u, cols, nil, nil); err != nil {
		return nil, err
	}
	return w, nil
}

// lockAndUpdate sets the lock and the update of u (above): the lock
// selects head, the values, then tail (SQL texts over the target's alias).
func (w *GSIWork) lockAndUpdate(u *pg.UpdateStmt, head []string, values []*pg.Node, tail []string) error {
	q := keyexpr.QuoteIdentifier(w.Alias) + "."
	lock, err := parse("SELECT " + strings.Join(head, ", ") + " FROM x FOR UPDATE OF " + keyexpr.QuoteIdentifier(w.Alias))
	if err != nil {
		return err
	}
	sel := lock.Stmts[0].Stmt.GetSelectStmt()
	for _, v := range values {
		sel.TargetList = append(sel.TargetList, &pg.Node{Node: &pg.Node_ResTarget{ResTarget: &pg.ResTarget{Val: v}}})
	}
	if len(tail) > 0 {
		t, err := parse("SELECT " + strings.Join(tail, ", "))
		if err != nil {
			return err
		}
		sel.TargetList = append(sel.TargetList, t.Stmts[0].Stmt.GetSelectStmt().TargetList...)
	}
	sel.FromClause = append([]*pg.Node{{Node: &pg.Node_RangeVar{RangeVar: u.Relation}}}, u.FromClause...)
	sel.WhereClause = u.WhereClause
	node, ok := proto.Clone(&pg.Node{Node: &pg.Node_SelectStmt{SelectStmt: sel}}).(*pg.Node)
	if !ok {
		return sqlerr.New(sqlerr.InternalError, "cannot copy the UPDATE's WHERE")
	}
	w.LockParams = renumberParams(node)
	if w.LockSQL, err = deparse(node); err != nil {
		return sqlerr.New(sqlerr.InternalError, "cannot print the lock of the UPDATE: %v", err)
	}
	cond, err := parse("SELECT WHERE " + q + "ctid = ANY(" + ctidPlaceholder + "::tid[])")
	if err != nil {
		return err
	}
	node, ok = proto.Clone(&pg.Node{Node: &pg.Node_UpdateStmt{UpdateStmt: u}}).(*pg.Node)
	if !ok {
		return sqlerr.New(sqlerr.InternalError, "cannot copy the UPDATE")
	}
	cu := node.GetUpdateStmt()
	where := cond.Stmts[0].Stmt.GetSelectStmt().WhereClause
	if cu.WhereClause != nil {
		where = &pg.Node{Node: &pg.Node_BoolExpr{BoolExpr: &pg.BoolExpr{Boolop: pg.BoolExprType_AND_EXPR,
			Args: []*pg.Node{cu.WhereClause, where}}}}
	}
	cu.WhereClause = where
	if w.UpdateSQL, err = deparse(node); err != nil {
		return sqlerr.New(sqlerr.InternalError, "cannot print the UPDATE: %v", err)
	}
	return nil
}

// renumberParams numbers the $n of a tree 1, 2, ... in order of first
// appearance and returns the original 0-based index of each.
func renumberParams(m proto.Message) []int {
	seen := map[int32]int32{}
	orig := []int{} // not nil: no parameter at all
	walk(m, func(n *pg.Node) bool {
		p, ok := n.Node.(*pg.Node_ParamRef)
		if !ok {
			return true
		}
		k, ok := seen[p.ParamRef.Number]
		if !ok {
			orig = append(orig, int(p.ParamRef.Number)-1)
			k = int32(len(orig))
			seen[p.ParamRef.Number] = k
		}
		p.ParamRef.Number = k
		return true
	})
	return orig
}

// UpdateTexts are the lock and the update of a GSIUpdate work (see
// above), the update restricted to the rows of ctids (Postgres's text of
// each). simple: for the simple protocol, with the literals of the
// client's statement (sql) put back where the plan lifted them; otherwise
// the lock's parameters are LockParams of the client's and the update's
// all of them.
func (w *GSIWork) UpdateTexts(sql string, simple bool, ctids []string) (lock, update string) {
	quoted := make([]string, len(ctids))
	for i, c := range ctids {
		quoted[i] = `"` + c + `"`
	}
	lock = w.LockSQL
	update = strings.Replace(w.UpdateSQL, ctidPlaceholder, "'{"+strings.Join(quoted, ",")+"}'", 1)
	if simple {
		lits, _ := findLiterals(sql, nil)
		lock = inlineLiterals(lock, w.LockParams, sql, lits)
		update = inlineLiterals(update, nil, sql, lits)
	}
	return lock, update
}
