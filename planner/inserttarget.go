package planner

import pg "github.com/pganalyze/pg_query_go/v6"

// InsertTarget names the table the first statement of sql inserts into:
// an INSERT's, a COPY ... FROM's or a MERGE's target, schema "" when the
// statement gives none. ok is false for anything else. It parses sql, so
// it is for paths off the hot one (a privilege refusal that must name
// the table first, as Postgres checks the table's privileges before it
// evaluates a column default).
func InsertTarget(sql string) (schema, name string, ok bool) {
	tree, err := parse(sql)
	if err != nil || len(tree.Stmts) == 0 {
		return "", "", false
	}
	var rel *pg.RangeVar
	switch n := tree.Stmts[0].Stmt.Node.(type) {
	case *pg.Node_InsertStmt:
		rel = n.InsertStmt.Relation
	case *pg.Node_CopyStmt:
		if n.CopyStmt.IsFrom {
			rel = n.CopyStmt.Relation
		}
	case *pg.Node_MergeStmt:
		rel = n.MergeStmt.Relation
	}
	if rel == nil {
		return "", "", false
	}
	return rel.Schemaname, rel.Relname, true
}
