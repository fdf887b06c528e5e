package planner

import (
	pg "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"github.com/shardgate/shardgate/keyexpr"
	"github.com/shardgate/shardgate/sqlerr"
	"github.com/shardgate/shardgate/vschema"
)

// An UPDATE that changes the shard key of its target moves the rows whose
// new key lives on another cluster (package gsi, move.go, executes it in
// the statement's transaction, on the targets the WHERE routes to):
//
//  1. LockSQL: SELECT ctid, (a table with secondary indexes: the key and
//     each index's value, its old entries), the new value of each SET
//     column, then the whole row (alias.*) FROM the target (and the FROM
//     list) WHERE the UPDATE's WHERE, FOR UPDATE of the target;
//  2. the new row of each locked row is the old one with the SET columns
//     replaced; its key names its cluster;
//  3. the rows that stay on their cluster are updated in place (UpdateSQL:
//     the UPDATE restricted to their ctids, the original WHERE kept);
//  4. the others are deleted by ctid and inserted on their new cluster
//     (Insert, with the statement's RETURNING);
//  5. a table with secondary indexes: the old entries of every locked row
//     are removed, the new ones written from what the in-place UPDATE and
//     the INSERTs return (their RETURNING extended by key and values).

// GSIMove is the Op of an UPDATE that changes the shard key (key_move.go).
const GSIMove GSIOp = GSIUpdate + 1

// keyMoveWork returns the work of an UPDATE of t that changes its shard
// key, or the refusal of one the proxy does not move.
func keyMoveWork(t *vschema.Table, u *pg.UpdateStmt) (*GSIWork, error) {
	refuse := func(why, hint string) error {
		return sqlerr.New(sqlerr.FeatureNotSupported, "changing the shard key of %s %s is not supported", t, why).WithHint("%s", hint)
	}
	if t == nil || !t.Sharded() {
		return nil, sqlerr.New(sqlerr.InternalError, "a shard-key update of a table that is not sharded")
	}
	if len(t.Group.Tables) > 1 && !t.MoveRows {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported,
			"changing the shard key of %s is not supported: its rows would move to another shard without the rows of the same key in the other tables of group %s", t, t.Group.Name).
			WithHint("Move the co-located rows yourself and set shard_key_update: move_row on table %s in the topology, or delete the row and insert it with the new key.", t.Name)
	}
	if u.WithClause != nil {
		return nil, refuse("with a WITH clause", "Write the UPDATE without WITH.")
	}
	if _, ok := u.WhereClause.GetNode().(*pg.Node_CurrentOfExpr); ok {
		return nil, refuse("WHERE CURRENT OF a cursor", "Update the row by its key.")
	}
	alias := aliasOf(u.Relation)
	w := &GSIWork{Op: GSIMove, Tables: []*vschema.Table{t}, Alias: alias}
	var values []*pg.Node
	for _, n := range u.TargetList {
		rt := n.GetResTarget()
		switch rt.GetVal().GetNode().(type) {
		case *pg.Node_MultiAssignRef, *pg.Node_SetToDefault:
			return nil, refuse("with SET (a, b) = ... or DEFAULT", "Set each column to a value of its own.")
		}
		if rt == nil || len(rt.Indirection) > 0 {
			return nil, refuse("with SET of a part of a column", "Set whole columns.")
		}
		w.Sets = append(w.Sets, rt.Name)
		values = append(values, rt.Val)
	}
	// The moved rows' RETURNING is the INSERT's: it may read the target's
	// columns only.
	ok := maxParam(&pg.UpdateStmt{ReturningList: u.ReturningList}) == 0
	walk(&pg.UpdateStmt{ReturningList: u.ReturningList}, func(n *pg.Node) bool {
		switch x := n.Node.(type) {
		case *pg.Node_SubLink:
			ok = false
		case *pg.Node_ColumnRef:
			f := x.ColumnRef.Fields
			ok = ok && (len(f) > 1 && stringValue(f[0]) == alias || len(f) == 1 && len(u.FromClause) == 0)
			return false
		}
		return true
	})
	if !ok {
		return nil, refuse("with RETURNING of parameters, subqueries or other tables' columns",
			"Return the target's columns only (qualified by its name with a FROM list).")
	}
	if len(u.ReturningList) > 0 {
		node := &pg.Node{Node: &pg.Node_InsertStmt{InsertStmt: &pg.InsertStmt{Relation: &pg.RangeVar{Relname: "x", Inh: true},
			ReturningList: cloneNodes(u.ReturningList), Override: pg.OverridingKind_OVERRIDING_NOT_SET}}}
		s, err := deparse(node)
		if err != nil {
			return nil, sqlerr.New(sqlerr.InternalError, "cannot print the RETURNING of the UPDATE: %v", err)
		}
		const head = "INSERT INTO x DEFAULT VALUES "
		if len(s) < len(head) || s[:len(head)] != head {
			return nil, sqlerr.New(sqlerr.InternalError, "cannot print the RETURNING of the UPDATE: %s", s)
		}
		w.Returning = s[len(head):]
	}
	q := keyexpr.QuoteIdentifier(alias) + "."
	clone := make([]*pg.Node, len(values))
	for i, v := range values {
		clone[i] = proto.Clone(v).(*pg.Node)
	}
	head := []string{q + "ctid"}
	if len(t.SecondaryIndexes) > 0 { // the old entries: key and values
		w.Indexes = t.SecondaryIndexes
		head = append(head, q+keyexpr.QuoteIdentifier(t.KeyColumn))
		for _, si := range t.SecondaryIndexes {
			head = append(head, si.Source(keyexpr.QuoteIdentifier(alias)))
		}
	}
	if err := w.lockAndUpdate(u, head, clone, []string{q + "*"}); err != nil {
		return nil, err
	}
	return w, nil
}
