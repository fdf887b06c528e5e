package planner

import (
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/shardgate/shardgate/keyexpr"

	"github.com/shardgate/shardgate/sqlerr"
)

// buildTransaction classifies transaction control. PREPARE TRANSACTION and
// its COMMIT/ROLLBACK PREPARED belong to the proxy's own two-phase commit;
// a client issuing them would corrupt it.
func buildTransaction(pl *Plan, t *pg.TransactionStmt) error {
	tx := TxOptions{Chain: t.Chain}
	switch t.Kind {
	case pg.TransactionStmtKind_TRANS_STMT_BEGIN, pg.TransactionStmtKind_TRANS_STMT_START:
		pl.Kind = Begin
		tx.Options = transactionModes(t.Options)
	case pg.TransactionStmtKind_TRANS_STMT_COMMIT:
		pl.Kind = Commit
	case pg.TransactionStmtKind_TRANS_STMT_ROLLBACK:
		pl.Kind = Rollback
	case pg.TransactionStmtKind_TRANS_STMT_SAVEPOINT:
		pl.Kind, tx.Name = Savepoint, t.SavepointName
	case pg.TransactionStmtKind_TRANS_STMT_RELEASE:
		pl.Kind, tx.Name = Release, t.SavepointName
	case pg.TransactionStmtKind_TRANS_STMT_ROLLBACK_TO:
		pl.Kind, tx.Name = RollbackTo, t.SavepointName
	default:
		return sqlerr.New(sqlerr.FeatureNotSupported, "PREPARE TRANSACTION, COMMIT PREPARED and ROLLBACK PREPARED are not supported through shardgate").
			WithDetail("The proxy uses two-phase commit itself to commit transactions that wrote on several shards.")
	}
	pl.Tx = &tx
	pl.Root = &TxControl{Kind: pl.Kind, Tx: tx}
	return nil
}

// transactionModes renders BEGIN's mode list as SQL text.
func transactionModes(opts []*pg.Node) string {
	var parts []string
	for _, o := range opts {
		d, ok := o.Node.(*pg.Node_DefElem)
		if !ok {
			continue
		}
		switch d.DefElem.Defname {
		case "transaction_isolation":
			parts = append(parts, "ISOLATION LEVEL "+strings.ToUpper(constText(d.DefElem.Arg)))
		case "transaction_read_only":
			if constText(d.DefElem.Arg) == "1" {
				parts = append(parts, "READ ONLY")
			} else {
				parts = append(parts, "READ WRITE")
			}
		case "transaction_deferrable":
			if constText(d.DefElem.Arg) == "1" {
				parts = append(parts, "DEFERRABLE")
			} else {
				parts = append(parts, "NOT DEFERRABLE")
			}
		}
	}
	return strings.Join(parts, ", ")
}

func constText(n *pg.Node) string {
	c, ok := n.GetNode().(*pg.Node_AConst)
	if !ok {
		return ""
	}
	switch v := c.AConst.Val.(type) {
	case *pg.A_Const_Ival:
		return itoa(int(v.Ival.Ival))
	case *pg.A_Const_Sval:
		return v.Sval.Sval
	case *pg.A_Const_Fval:
		return v.Fval.Fval
	case *pg.A_Const_Boolval:
		if v.Boolval.Boolval {
			return "true"
		}
		return "false"
	}
	return ""
}

// buildSet plans SET and RESET. The value is kept as SQL text, as the
// backend would accept it back (SET name TO value).
func (p *Planner) buildSet(pl *Plan, s *pg.VariableSetStmt, stmt *pg.Node) error {
	info := &SetInfo{Name: strings.ToLower(s.Name), Local: s.IsLocal}
	pl.Kind = Set
	switch s.Kind {
	case pg.VariableSetKind_VAR_RESET:
		pl.Kind = Reset
	case pg.VariableSetKind_VAR_RESET_ALL:
		pl.Kind, info.ResetAll = Reset, true
	case pg.VariableSetKind_VAR_SET_DEFAULT:
		info.Value = "DEFAULT"
	case pg.VariableSetKind_VAR_SET_CURRENT:
		// The value is whatever the backend connection has now, which
		// the proxy cannot write down to replay on other connections.
		return sqlerr.New(sqlerr.FeatureNotSupported, "SET %s FROM CURRENT is not supported through shardgate", info.Name).
			WithDetail("The session's settings are replayed on pooled backend connections as SET name = value; FROM CURRENT has no value to replay.").
			WithHint("SET %s TO the value itself (SHOW %s gives it).", info.Name, info.Name)
	case pg.VariableSetKind_VAR_SET_MULTI:
		// SET TRANSACTION ... / SET SESSION CHARACTERISTICS AS TRANSACTION ...
		if info.Name == "transaction" || info.Name == "transaction snapshot" {
			info.Local = true
		}
		v := deparsedSetValue(stmt, strings.ToUpper(s.Name))
		info.Value = strings.TrimPrefix(v, "AS TRANSACTION ")
	default:
		info.Value = setValue(s.Args, stmt)
	}
	pl.Set = info
	pl.Root = &SessionSet{Group: p.vs.Main(), Set: info}
	return nil
}

// setValue renders SET's value list: strings as standard literals (the
// deparser would write them as quoted identifiers, which the backend
// truncates at 63 bytes), numbers as written; anything else (SET TIME ZONE
// INTERVAL ...) as the deparser prints it.
func setValue(args []*pg.Node, stmt *pg.Node) string {
	parts := make([]string, 0, len(args))
	for _, a := range args {
		c, ok := a.Node.(*pg.Node_AConst)
		if !ok {
			return deparsedSetValue(stmt, " TO ")
		}
		switch v := c.AConst.Val.(type) {
		case *pg.A_Const_Sval:
			parts = append(parts, keyexpr.Text(v.Sval.Sval).String())
		case *pg.A_Const_Ival, *pg.A_Const_Fval:
			parts = append(parts, constText(a))
		default:
			return deparsedSetValue(stmt, " TO ")
		}
	}
	return strings.Join(parts, ", ")
}

// deparsedSetValue deparses a SET statement and returns the text after
// marker: "SET search_path TO '$user', public" gives "'$user', public".
func deparsedSetValue(stmt *pg.Node, marker string) string {
	out, err := deparse(stmt)
	if err != nil {
		return ""
	}
	// SET TIME ZONE INTERVAL '+05:30' HOUR TO MINUTE deparses as itself
	// (no TO before its value): the value is the interval.
	for _, p := range []string{"SET TIME ZONE ", "SET LOCAL TIME ZONE ", "SET SESSION TIME ZONE "} {
		if strings.HasPrefix(out, p) {
			return out[len(p):]
		}
	}
	if i := strings.Index(out, marker); i >= 0 {
		return strings.TrimSpace(out[i+len(marker):])
	}
	return out
}

// buildUtility plans DDL and the remaining utility statements. Statements
// naming member or reference tables run on every cluster of their group;
// DROP TABLE and TRUNCATE naming tables of several groups are split per
// cluster (DDLSplit), other statements naming several groups are refused;
// everything else (sequences, extensions, types, functions, schemas, roles,
// and tables the topology does not name) runs on main.
func (p *Planner) buildUtility(pl *Plan, stmt *pg.Node) error {
	pl.Kind = DDL
	switch stmt.Node.(type) {
	case *pg.Node_CheckPointStmt, *pg.Node_LoadStmt,
		*pg.Node_LockStmt, *pg.Node_VacuumStmt, *pg.Node_ClusterStmt, *pg.Node_ReindexStmt,
		*pg.Node_ConstraintsSetStmt, *pg.Node_AlterSystemStmt:
		pl.Kind = Other
	}
	if err := p.gsiUtility(pl, stmt); err != nil {
		return err
	}
	if ok, err := p.indexStatement(pl, stmt); ok {
		return err
	}
	rels := p.utilityRelations(stmt)
	var first *relInfo
	var firstName string
	for _, r := range rels {
		info := p.lookup(r.schema, r.name)
		if r.creates && !info.table.Named {
			continue // a new, unnamed object goes where what it depends on is
		}
		if first == nil {
			first, firstName = info, info.display
			continue
		}
		if info.group != first.group {
			if ok, err := p.buildDDLSplit(pl, stmt); ok || err != nil {
				return err
			}
			return sqlerr.New(sqlerr.FeatureNotSupported,
				"a statement naming %s (group %s) and %s (group %s) is not supported",
				firstName, first.group.Name, info.display, info.group.Name).
				WithHint("The groups live on different clusters; run one statement per group.")
		}
	}
	g := p.vs.Main()
	if first != nil {
		g = first.group
	}
	if g.Unsharded {
		pl.Root = &Route{Opcode: Unsharded, Group: g}
		return nil
	}
	pl.Root = &Route{Opcode: AllClusters, Group: g}
	return nil
}

// utilityRel is a relation a utility statement names.
type utilityRel struct {
	schema, name string
	creates      bool // the statement creates it (CREATE VIEW v)
}

// utilityRelations finds the relations a utility statement names: every
// RangeVar in its tree, plus the name lists of DROP, COMMENT ON and
// similar statements that carry names as strings.
func (p *Planner) utilityRelations(stmt *pg.Node) []utilityRel {
	var out []utilityRel
	created := map[*pg.RangeVar]bool{}
	switch x := stmt.Node.(type) {
	case *pg.Node_ViewStmt:
		// A view the topology does not name is created where the tables
		// it reads live.
		created[x.ViewStmt.View] = true
	case *pg.Node_DropStmt:
		if isRelationObject(x.DropStmt.RemoveType) {
			for _, o := range x.DropStmt.Objects {
				out = append(out, nameListRel(o, false))
			}
		}
	case *pg.Node_CommentStmt:
		c := x.CommentStmt
		switch {
		case isRelationObject(c.Objtype):
			out = append(out, nameListRel(c.Object, false))
		case c.Objtype == pg.ObjectType_OBJECT_COLUMN:
			out = append(out, nameListRel(c.Object, true))
		}
	case *pg.Node_SecLabelStmt:
		if isRelationObject(x.SecLabelStmt.Objtype) {
			out = append(out, nameListRel(x.SecLabelStmt.Object, false))
		}
	}
	walk(stmt, func(n *pg.Node) bool {
		if rv, ok := n.Node.(*pg.Node_RangeVar); ok {
			out = append(out, utilityRel{schema: rv.RangeVar.Schemaname, name: rv.RangeVar.Relname, creates: created[rv.RangeVar]})
		}
		return true
	})
	return out
}

// isRelationObject lists the object types that are tables for routing.
func isRelationObject(t pg.ObjectType) bool {
	switch t {
	case pg.ObjectType_OBJECT_TABLE, pg.ObjectType_OBJECT_VIEW, pg.ObjectType_OBJECT_MATVIEW,
		pg.ObjectType_OBJECT_FOREIGN_TABLE:
		return true
	}
	return false
}

// nameListRel reads a List of String names (schema.table, or
// schema.table.column when dropColumn is set).
func nameListRel(n *pg.Node, dropColumn bool) utilityRel {
	l, ok := n.GetNode().(*pg.Node_List)
	if !ok {
		return utilityRel{}
	}
	var parts []string
	for _, item := range l.List.Items {
		parts = append(parts, stringValue(item))
	}
	if dropColumn && len(parts) > 0 {
		parts = parts[:len(parts)-1]
	}
	schema, name := qualifiedName(parts)
	return utilityRel{schema: schema, name: name}
}
