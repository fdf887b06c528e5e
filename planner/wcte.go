package planner

import (
	"slices"
	"strconv"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"github.com/shardgate/shardgate/pgwire"
	"github.com/shardgate/shardgate/sqlerr"
)

// WritableCTE runs a statement whose WITH holds data-modifying queries
// (INSERT, UPDATE, DELETE ... RETURNING) that the router cannot send
// whole to one place (WITH gone AS (DELETE FROM projects WHERE id = 4
// RETURNING *) INSERT INTO app_settings SELECT ... FROM gone, projects
// sharded and app_settings in main): each data-modifying query runs
// first as a statement of its own (Steps, in order, in the session's
// transaction: an implicit one outside a client's), its RETURNING rows
// are kept, and the outer statement (Template) is run with each
// reference to such a query replaced by a typed VALUES list of its rows
// ((VALUES ('4'::bigint, ...)) AS gone(id, ...); no rows: a typed
// zero-row SELECT), planned and routed as any other statement.
//
// It is exact because Postgres runs every part of the statement on one
// snapshot: a data-modifying query's target table must appear in no other
// part (the outer statement, its read-only WITH queries, another
// data-modifying query), or the statement is refused (0A000). A
// data-modifying query reading an earlier one gets its rows written in
// before it is planned (StepPlan); one reading a read-only WITH query
// takes it along. A statement with parameters is planned again with
// their values in place (InlineParams) when it runs.
type WritableCTE struct {
	// Steps are the data-modifying WITH queries, in the order written.
	Steps []*CTEStep
	// Template is the outer statement, without the data-modifying WITH
	// queries, each reference to one written as
	// (SELECT __sg_cte_N__) AS alias(__sg_cols_R__).
	Template string
	// Params are the $n the outer statement reads; NumParams the
	// statement's highest. A statement with parameters is planned anew
	// with their values written in as typed literals (InlineParams)
	// when it runs.
	Params    []int
	NumParams int
	refs      []cteRef
}

// CTEStep is one data-modifying WITH query of a WritableCTE.
type CTEStep struct {
	Name string
	// Cols are the query's column aliases (WITH gone(a, b) AS ...).
	Cols []string
	// Plan is the query planned as a statement of its own; nil when it
	// reads an earlier step's rows (Template, planned by StepPlan once
	// they are known).
	Plan     *Plan
	Template string
	// Params are the $n it reads.
	Params []int
	// Returns: it has a RETURNING list.
	Returns bool
}

// cteRef is one reference to a step in the outer statement: skip column
// names its alias gives itself.
type cteRef struct {
	step, skip int
	alias      string
}

// CTERows are a step's RETURNING rows: column names, types (as
// format_type names them) and text values (nil for NULL).
type CTERows struct {
	Names []string
	Types []string
	Rows  [][][]byte
}

// Name implements Primitive.
func (w *WritableCTE) Name() string { return "WritableCTE" }

// Inputs implements Primitive: the steps are plans of their own.
func (w *WritableCTE) Inputs() []Primitive { return nil }

func (w *WritableCTE) mode() RouteMode { return ModeProxy }

func (w *WritableCTE) targets(*Plan, []Param) ([]Target, error) { return nil, nil }

func (w *WritableCTE) explain(ew *explainWriter, pl *Plan, depth int) {
	ew.line(depth, "WritableCTE: the data-modifying WITH queries first, their RETURNING rows written into the statement as VALUES")
	for i, s := range w.Steps {
		if s.Plan == nil {
			ew.line(depth+1, "%s (step %d, planned once the rows it reads are known) sql: %s", s.Name, i+1, s.Template)
			continue
		}
		ew.line(depth+1, "%s (step %d) sql: %s", s.Name, i+1, s.Plan.SQL)
		s.Plan.Root.explain(ew, s.Plan, depth+2)
	}
	ew.line(depth+1, "then: %s", w.Template)
}

const (
	ctePlaceholder  = "__sg_cte_"
	colsPlaceholder = "__sg_cols_"
)

// OuterSQL is the outer statement with each step's rows (rows[i] for
// Steps[i]) in place of its references.
func (w *WritableCTE) OuterSQL(rows []CTERows) (string, error) { return w.fill(w.Template, rows) }

// fill is sql (the outer statement or a step's template) with the rows of
// the first len(rows) steps in place of its references to them.
func (w *WritableCTE) fill(sql string, rows []CTERows) (string, error) {
	names := make([][]string, len(rows))
	for i, r := range rows {
		s := w.Steps[i]
		if len(s.Cols) > len(r.Names) {
			return "", sqlerr.New("42P10", "WITH query \"%s\" has %d columns available but %d columns specified", s.Name, len(r.Names), len(s.Cols))
		}
		names[i] = append(append([]string{}, s.Cols...), r.Names[len(s.Cols):]...)
		sql = strings.Replace(sql, "(SELECT "+ctePlaceholder+strconv.Itoa(i)+"__)", valuesOf(r), -1)
	}
	for i, ref := range w.refs {
		ph := colsPlaceholder + strconv.Itoa(i) + "__"
		if ref.step >= len(rows) || !strings.Contains(sql, ph) {
			continue
		}
		n := names[ref.step]
		if ref.skip > len(n) {
			return "", sqlerr.New("42P10", "table \"%s\" has %d columns available but %d columns specified", ref.alias, len(n), ref.skip)
		}
		quoted := make([]string, 0, len(n)-ref.skip)
		for _, c := range n[ref.skip:] {
			quoted = append(quoted, pgwire.QuoteIdent(c))
		}
		if ref.skip > 0 {
			ph = ", " + ph
			if len(quoted) > 0 {
				quoted[0] = ", " + quoted[0]
			}
		}
		sql = strings.Replace(sql, ph, strings.Join(quoted, ", "), 1)
	}
	return sql, nil
}

// valuesOf is the rows as a parenthesized typed VALUES list, or a typed
// SELECT of no row.
func valuesOf(r CTERows) string {
	var b strings.Builder
	value := func(v []byte, typ string) {
		if v == nil {
			b.WriteString("NULL::" + typ)
			return
		}
		b.WriteString(pgwire.QuoteLiteral(string(v)) + "::" + typ)
	}
	if len(r.Rows) == 0 {
		b.WriteString("(SELECT ")
		for i, t := range r.Types {
			if i > 0 {
				b.WriteString(", ")
			}
			value(nil, t)
		}
		b.WriteString(" WHERE false)")
		return b.String()
	}
	b.WriteString("(VALUES ")
	for i, row := range r.Rows {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('(')
		for j, v := range row {
			if j > 0 {
				b.WriteString(", ")
			}
			value(v, r.Types[j])
		}
		b.WriteByte(')')
	}
	b.WriteByte(')')
	return b.String()
}

// withOf is the WITH clause of a statement that may carry
// data-modifying WITH queries at its top.
func withOf(stmt *pg.Node) (*pg.WithClause, func(*pg.WithClause), StmtKind, bool) {
	switch x := stmt.Node.(type) {
	case *pg.Node_SelectStmt:
		return x.SelectStmt.WithClause, func(w *pg.WithClause) { x.SelectStmt.WithClause = w }, Select, true
	case *pg.Node_InsertStmt:
		return x.InsertStmt.WithClause, func(w *pg.WithClause) { x.InsertStmt.WithClause = w }, Insert, len(x.InsertStmt.ReturningList) > 0
	case *pg.Node_UpdateStmt:
		return x.UpdateStmt.WithClause, func(w *pg.WithClause) { x.UpdateStmt.WithClause = w }, Update, len(x.UpdateStmt.ReturningList) > 0
	case *pg.Node_DeleteStmt:
		return x.DeleteStmt.WithClause, func(w *pg.WithClause) { x.DeleteStmt.WithClause = w }, Delete, len(x.DeleteStmt.ReturningList) > 0
	}
	return nil, nil, 0, false
}

// dmlTarget is a data-modifying query's target table and whether it has
// RETURNING; ok is false for a read.
func dmlTarget(n *pg.Node) (rel *pg.RangeVar, returns, ok bool) {
	switch x := n.GetNode().(type) {
	case *pg.Node_InsertStmt:
		return x.InsertStmt.Relation, len(x.InsertStmt.ReturningList) > 0, true
	case *pg.Node_UpdateStmt:
		return x.UpdateStmt.Relation, len(x.UpdateStmt.ReturningList) > 0, true
	case *pg.Node_DeleteStmt:
		return x.DeleteStmt.Relation, len(x.DeleteStmt.ReturningList) > 0, true
	}
	return nil, false, false
}

// tablesOf are the names of the tables m names (not WITH queries in
// ctes); a table is known by its name alone, which may only refuse more.
func tablesOf(m proto.Message, ctes map[string]bool) map[string]bool {
	out := map[string]bool{}
	walk(m, func(n *pg.Node) bool {
		if rv := n.GetRangeVar(); rv != nil && !(rv.Schemaname == "" && ctes[rv.Relname]) {
			out[rv.Relname] = true
		}
		return true
	})
	return out
}

// orWritableCTE plans stmt, which the router refused (err), into pl as
// a WritableCTE when it is of that shape (ok), or returns why that
// cannot be exact.
func (p *Planner) orWritableCTE(pl *Plan, stmt *pg.Node, err error) (ok bool, werr error) {
	if sqlerr.Code(err) != sqlerr.FeatureNotSupported {
		return false, nil
	}
	wpl, werr := p.writableCTE(stmt)
	if wpl == nil {
		return werr != nil, werr
	}
	pl.Kind, pl.Returns, pl.Root, pl.GSI, pl.Lookup = wpl.Kind, wpl.Returns, wpl.Root, nil, nil
	return true, nil
}

// writableCTE plans stmt, whose WITH has data-modifying queries, as a
// WritableCTE after the router refused it (cause). It returns nil, nil
// when the statement is not of that shape.
func (p *Planner) writableCTE(stmt *pg.Node) (*Plan, error) {
	stmt = proto.Clone(stmt).(*pg.Node)
	with, setWith, kind, returns := withOf(stmt)
	if with == nil {
		return nil, nil
	}
	recursive := with.Recursive // kept by every part the read-only queries go with
	names := map[string]bool{}
	for _, c := range with.Ctes {
		names[c.GetCommonTableExpr().GetCtename()] = true
	}
	w := &WritableCTE{NumParams: maxParam(stmt)}
	readOnly := map[string]*pg.Node{} // the read-only WITH queries by name
	var kept []*pg.Node
	targets := map[string]string{} // table -> the WITH query writing it
	parts := []map[string]bool{}   // the tables each step reads or writes
	var steps []*pg.Node           // each step's statement
	stepOf := map[string]int{}
	for _, c := range with.Ctes {
		cte := c.GetCommonTableExpr()
		rel, ret, ok := dmlTarget(cte.GetCtequery())
		if !ok {
			kept = append(kept, c)
			readOnly[cte.Ctename] = c
			continue
		}
		if _, isMerge := cte.GetCtequery().GetNode().(*pg.Node_MergeStmt); isMerge {
			return nil, nil
		}
		q := cte.Ctequery
		if inner, _, _, _ := withOf(q); inner != nil {
			return nil, nil // a WITH of its own: left to the router's refusal
		}
		// The read-only WITH queries the step reads go with it.
		if ro := readOnlyRead(q, kept, readOnly); len(ro) > 0 {
			_, set, _, _ := withOf(q)
			set(&pg.WithClause{Ctes: ro, Recursive: recursive})
		}
		if other, dup := targets[rel.Relname]; dup {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, "WITH queries %s and %s both modify %s: not supported across groups (Postgres runs them on one snapshot)", other, cte.Ctename, rel.Relname)
		}
		targets[rel.Relname] = cte.Ctename
		parts = append(parts, tablesOf(q, names))
		var cols []string
		for _, a := range cte.Aliascolnames {
			cols = append(cols, a.GetString_().GetSval())
		}
		stepOf[cte.Ctename] = len(w.Steps)
		steps = append(steps, q)
		w.Steps = append(w.Steps, &CTEStep{Name: cte.Ctename, Cols: cols, Returns: ret})
	}
	if len(w.Steps) == 0 {
		return nil, nil
	}
	// The outer statement keeps the read-only WITH queries it reads.
	setWith(nil)
	if ro := readOnlyRead(stmt, kept, readOnly); len(ro) > 0 {
		setWith(&pg.WithClause{Ctes: ro, Recursive: recursive})
	}
	outer := tablesOf(stmt, names)
	for t, q := range targets {
		if outer[t] {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, "the statement reads or writes %s, which its WITH query %s modifies: not supported across groups (Postgres runs every part on one snapshot)", t, q)
		}
		for i, part := range parts {
			if w.Steps[i].Name != q && part[t] {
				return nil, sqlerr.New(sqlerr.FeatureNotSupported, "the WITH query %s reads %s, which the WITH query %s modifies: not supported across groups (Postgres runs every part on one snapshot)", w.Steps[i].Name, t, q)
			}
		}
	}
	for i, q := range steps {
		before := len(w.refs)
		if err := w.replaceRefs(q, stepOf, i); err != nil {
			return nil, err
		}
		if later := laterStep(q, stepOf); later != "" {
			// WITH RECURSIVE lets a query read one written after it.
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, "the data-modifying WITH query %s reads the WITH query %s written after it: not supported across groups", w.Steps[i].Name, later)
		}
		sql, err := deparse(q)
		if err != nil {
			return nil, nil
		}
		s := w.Steps[i]
		s.Params = paramsOf(q)
		if len(w.refs) > before {
			s.Template = sql // planned once the rows it reads are known
			continue
		}
		if s.Plan, err = p.stepPlan(s.Name, sql); err != nil || s.Plan == nil {
			return nil, err
		}
	}
	if err := w.replaceRefs(stmt, stepOf, len(w.Steps)); err != nil {
		return nil, err
	}
	var err error
	if w.Template, err = deparse(stmt); err != nil {
		return nil, nil
	}
	w.Params = paramsOf(stmt)
	all := w.Template
	for _, s := range w.Steps {
		all += s.Template
	}
	for i := range w.refs {
		if strings.Count(all, colsPlaceholder+strconv.Itoa(i)+"__") != 1 {
			return nil, nil
		}
	}
	return &Plan{Kind: kind, Returns: returns, Root: w}, nil
}

// stepPlan plans a data-modifying WITH query as a statement of its own;
// nil, nil: left to the router's refusal.
func (p *Planner) stepPlan(name, sql string) (*Plan, error) {
	sp, err := p.Plan(sql)
	if err != nil {
		return nil, err
	}
	if sp.GSI != nil || sp.Lookup != nil {
		return nil, nil // the router's refusal names the index
	}
	if m := sp.Mode(); m == ModeProxy || m == ModeIntermediate || m == ModeMerge || m == ModeCursor {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "the data-modifying WITH query %s cannot run as one statement across groups: %s", name, sql)
	}
	return sp, nil
}

// StepPlan plans step i of w once the rows of the steps before it
// (rows) are known: its own plan, or, for a step reading an earlier
// one's rows, its template with them written in.
func (p *Planner) StepPlan(w *WritableCTE, i int, rows []CTERows) (*Plan, error) {
	s := w.Steps[i]
	if s.Template == "" {
		return s.Plan, nil
	}
	sql, err := w.fill(s.Template, rows[:i])
	if err != nil {
		return nil, err
	}
	sp, err := p.stepPlan(s.Name, sql)
	if err == nil && sp == nil {
		err = sqlerr.New(sqlerr.FeatureNotSupported, "the data-modifying WITH query %s cannot run as one statement across groups: %s", s.Name, sql)
	}
	return sp, err
}

// readOnlyRead are the read-only WITH queries of kept (in order) that
// n reads, directly or through one another.
func readOnlyRead(n proto.Message, kept []*pg.Node, byName map[string]*pg.Node) []*pg.Node {
	need := map[string]bool{}
	var visit func(m proto.Message)
	visit = func(m proto.Message) {
		walk(m, func(x *pg.Node) bool {
			if rv := x.GetRangeVar(); rv != nil && rv.Schemaname == "" {
				if c, ok := byName[rv.Relname]; ok && !need[rv.Relname] {
					need[rv.Relname] = true
					visit(c.GetCommonTableExpr().Ctequery)
				}
			}
			return true
		})
	}
	visit(n)
	var out []*pg.Node
	for _, c := range kept {
		if need[c.GetCommonTableExpr().Ctename] {
			out = append(out, proto.Clone(c).(*pg.Node))
		}
	}
	return out
}

// laterStep is the name of a step n still reads (one not before it), or "".
func laterStep(n proto.Message, stepOf map[string]int) string {
	found := ""
	walk(n, func(x *pg.Node) bool {
		if rv := x.GetRangeVar(); rv != nil && rv.Schemaname == "" && found == "" {
			if _, ok := stepOf[rv.Relname]; ok {
				found = rv.Relname
			}
		}
		return true
	})
	return found
}

// paramsOf are the $n numbers n reads, in order, once each.
func paramsOf(n proto.Message) []int {
	seen := map[int]bool{}
	var out []int
	walk(n, func(x *pg.Node) bool {
		if p, ok := x.Node.(*pg.Node_ParamRef); ok && !seen[int(p.ParamRef.Number)] {
			seen[int(p.ParamRef.Number)] = true
			out = append(out, int(p.ParamRef.Number))
		}
		return true
	})
	slices.Sort(out)
	return out
}

// replaceRefs writes each reference in n to one of the first upto steps
// as a placeholder relation (OuterSQL and fill write the rows in).
func (w *WritableCTE) replaceRefs(n *pg.Node, stepOf map[string]int, upto int) error {
	var err error
	walk(n, func(n *pg.Node) bool {
		if c := n.GetCommonTableExpr(); c != nil {
			if _, ok := stepOf[c.Ctename]; ok {
				err = sqlerr.New(sqlerr.FeatureNotSupported, "a WITH query named %s inside a statement with the data-modifying WITH query %s is not supported across groups", c.Ctename, c.Ctename)
			}
		}
		rv := n.GetRangeVar()
		if rv == nil || rv.Schemaname != "" || rv.Catalogname != "" {
			return true
		}
		i, ok := stepOf[rv.Relname]
		if !ok || i >= upto {
			return true
		}
		if !w.Steps[i].Returns {
			err = sqlerr.New(sqlerr.FeatureNotSupported, "WITH query \"%s\" does not have a RETURNING clause", rv.Relname)
			return true
		}
		alias := &pg.Alias{Aliasname: rv.Relname}
		if rv.Alias != nil {
			alias.Aliasname = rv.Alias.Aliasname
			alias.Colnames = append(alias.Colnames, rv.Alias.Colnames...)
		}
		w.refs = append(w.refs, cteRef{step: i, skip: len(alias.Colnames), alias: alias.Aliasname})
		alias.Colnames = append(alias.Colnames, pg.MakeStrNode(colsPlaceholder+strconv.Itoa(len(w.refs)-1)+"__"))
		sub := &pg.SelectStmt{TargetList: []*pg.Node{pg.MakeResTargetNodeWithVal(
			&pg.Node{Node: &pg.Node_ColumnRef{ColumnRef: &pg.ColumnRef{Fields: []*pg.Node{pg.MakeStrNode(ctePlaceholder + strconv.Itoa(i) + "__")}}}}, 0)}}
		n.Node = &pg.Node_RangeSubselect{RangeSubselect: &pg.RangeSubselect{
			Subquery: &pg.Node{Node: &pg.Node_SelectStmt{SelectStmt: sub}}, Alias: alias}}
		return false
	})
	return err
}

// InlineParams is sql with each $n replaced by lits[n-1], an expression
// (a typed literal: '7'::bigint, NULL::text).
func InlineParams(sql string, lits []string) (string, error) {
	tree, err := pg.Parse(sql)
	if err != nil || len(tree.Stmts) != 1 {
		return "", sqlerr.New(sqlerr.SyntaxError, "cannot write the parameters into %s", sql)
	}
	exprs := make([]*pg.Node, len(lits))
	for i, l := range lits {
		t, err := pg.Parse("SELECT " + l)
		if err != nil {
			return "", sqlerr.New(sqlerr.SyntaxError, "parameter $%d: %s is not an expression", i+1, l)
		}
		exprs[i] = t.Stmts[0].Stmt.GetSelectStmt().TargetList[0].GetResTarget().Val
	}
	walk(tree.Stmts[0].Stmt, func(n *pg.Node) bool {
		if p, ok := n.Node.(*pg.Node_ParamRef); ok {
			if k := int(p.ParamRef.Number) - 1; k >= 0 && k < len(exprs) {
				n.Node = proto.Clone(exprs[k]).(*pg.Node).Node
			} else if err == nil {
				err = sqlerr.New("42P02", "there is no parameter $%d", k+1)
			}
			return false
		}
		return true
	})
	if err != nil {
		return "", err
	}
	return deparse(tree.Stmts[0].Stmt)
}
