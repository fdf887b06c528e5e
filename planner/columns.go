package planner

import (
	"errors"
	"sort"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/shardgate/shardgate/keyexpr"
	"github.com/shardgate/shardgate/sqlerr"
	"github.com/shardgate/shardgate/vschema"
)

// INSERT without a column list into a sharded table (and a MERGE's WHEN
// NOT MATCHED THEN INSERT without one). Postgres fills the
// table's columns in their catalog order; the proxy needs that order to
// find the shard key in each row, to add a sequence-filled column and to
// maintain secondary indexes. The planner does no I/O, so the order comes
// from a ColumnSource the proxy fills from a cluster's catalog and keeps
// per table. The statement is planned as if the client had written the
// list: it is inserted into the text, after the target table and its
// alias, and the text planned again. The column list names columns, so
// the shards insert into the same columns whatever their own order.
//
// A plan made this way depends on the source's answer, so the cache
// remembers which tables' columns it used, and ForgetColumns drops those
// plans when DDL may have changed them.

// ColumnSource is the catalog the planner reads the column order of tables
// from. Implementations are safe for concurrent use.
type ColumnSource interface {
	// Columns returns the columns an INSERT without a column list fills
	// in t, in attnum order, dropped columns left out (generated ones
	// kept: they take DEFAULT), and whether they are known.
	Columns(t *vschema.Table) ([]string, bool)
}

// ColumnsNeeded is the error of planning an INSERT without a column list
// into a table whose columns the ColumnSource does not know: the caller
// reads them from the catalog, stores them in the source and plans again.
// It is never cached. Unhandled, it reaches a client as the 0A000 the
// planner gives without a ColumnSource.
type ColumnsNeeded struct {
	Table *vschema.Table
}

func (e *ColumnsNeeded) Error() string { return e.refusal().Error() }

// Unwrap is the refusal a client gets when the question is not answered.
func (e *ColumnsNeeded) Unwrap() error { return e.refusal() }

func (e *ColumnsNeeded) refusal() *sqlerr.Error {
	return sqlerr.New(sqlerr.FeatureNotSupported,
		"INSERT into sharded table %s must name its columns", e.Table.String()).
		WithHint("Write INSERT INTO %s (column, ...) so the proxy can find the shard key.", e.Table.String())
}

// NeedsColumns reports whether err asks for the columns of a table.
func NeedsColumns(err error) (*vschema.Table, bool) {
	if err == nil {
		return nil, false // the hot path: errors.As's target would escape
	}
	var e *ColumnsNeeded
	if errors.As(err, &e) {
		return e.Table, true
	}
	return nil, false
}

// WithColumns makes the planner name the columns of INSERTs without a
// column list from src, and returns it. Without a source such INSERTs
// into sharded tables are refused.
func (p *Planner) WithColumns(src ColumnSource) *Planner {
	p.columns = src
	return p
}

// ForgetColumns drops the cached plans that used the column order of a
// table. The caller forgets the columns in its ColumnSource first. DDL is
// rare and may rename or recreate tables under other names, so it drops
// them all rather than those of the tables a DDL statement names.
func (p *Planner) ForgetColumns() {
	p.cache.dropIf(func(e *cacheEntry) bool { return len(e.columnsOf) > 0 })
}

// nameInsertColumns returns sql with a column list added to every INSERT
// of tree into a sharded table that has none, and the tables whose
// columns it used; sql itself and nil when there is none. With no
// ColumnSource it changes nothing, and the analysis refuses the INSERT.
func (p *Planner) nameInsertColumns(sql string, tree *pg.ParseResult) (string, []string, error) {
	if p.columns == nil {
		return sql, nil, nil
	}
	type addition struct {
		ins   *pg.InsertStmt
		merge *pg.MergeWhenClause // a MERGE's INSERT, when ins is nil
		table *vschema.Table
	}
	var adds []addition
	walk(tree, func(n *pg.Node) bool {
		if m, ok := n.Node.(*pg.Node_MergeStmt); ok && m.MergeStmt.Relation != nil {
			rv := m.MergeStmt.Relation
			if t := p.vs.Table(rv.Schemaname, rv.Relname); t != nil && t.Sharded() {
				for _, w := range m.MergeStmt.MergeWhenClauses {
					if wc := w.GetMergeWhenClause(); wc != nil && wc.CommandType == pg.CmdType_CMD_INSERT && len(wc.TargetList) == 0 && len(wc.Values) > 0 {
						adds = append(adds, addition{merge: wc, table: t})
					}
				}
			}
			return true
		}
		ins, ok := n.Node.(*pg.Node_InsertStmt)
		if !ok || len(ins.InsertStmt.Cols) > 0 || ins.InsertStmt.SelectStmt == nil || ins.InsertStmt.Relation == nil {
			return true
		}
		rv := ins.InsertStmt.Relation
		if t := p.vs.Table(rv.Schemaname, rv.Relname); t != nil && t.Sharded() {
			adds = append(adds, addition{ins: ins.InsertStmt, table: t})
		}
		return true
	})
	if len(adds) == 0 {
		return sql, nil, nil
	}
	s, err := scanSQL(sql)
	if err != nil {
		return sql, nil, nil // the analysis refuses it
	}
	type cut struct {
		at   int
		text string
	}
	cuts := make([]cut, 0, len(adds))
	var used []string
	for _, a := range adds {
		cols, ok := p.columns.Columns(a.table)
		if !ok {
			return "", nil, &ColumnsNeeded{Table: a.table}
		}
		var at, n int
		ok = false
		if a.merge != nil {
			at, n, ok = s.mergeInsertEnd(a.merge), len(a.merge.Values), true
		} else {
			at = s.insertTargetEnd(a.ins.Relation)
			n, ok = insertedWidth(a.ins)
		}
		if at < 0 {
			return sql, nil, nil
		}
		if ok && n < len(cols) {
			// INSERT INTO t VALUES (1) fills the first columns only.
			cols = cols[:n]
		}
		quoted := make([]string, len(cols))
		for i, c := range cols {
			quoted[i] = keyexpr.QuoteIdentifier(c)
		}
		cuts = append(cuts, cut{at, " (" + strings.Join(quoted, ", ") + ")"})
		used = append(used, a.table.String())
	}
	sort.Slice(cuts, func(i, j int) bool { return cuts[i].at > cuts[j].at })
	for _, c := range cuts {
		sql = sql[:c.at] + c.text + sql[c.at:]
	}
	return sql, used, nil
}

// insertTargetEnd returns the offset just past an INSERT's target: its
// possibly qualified name and its AS alias (INSERT's grammar requires AS).
// -1 if the tokens there are not of that form.
func (s scanned) insertTargetEnd(rv *pg.RangeVar) int {
	i := s.startsAt(int(rv.Location))
	namePart := func(i int) bool {
		return i >= 0 && i < len(s.toks) && (s.toks[i].Token == pg.Token_IDENT || s.toks[i].KeywordKind != pg.KeywordKind_NO_KEYWORD)
	}
	if !namePart(i) {
		return -1
	}
	for {
		dot := s.next(i + 1)
		if !s.is(dot, pg.Token_ASCII_46) {
			break
		}
		if i = s.next(dot + 1); !namePart(i) {
			return -1
		}
	}
	if rv.Alias != nil {
		as := s.next(i + 1)
		if !s.is(as, pg.Token_AS) {
			return -1
		}
		if i = s.next(as + 1); !namePart(i) {
			return -1
		}
	}
	return s.end(i)
}

// mergeInsertEnd returns the offset just past the INSERT keyword of a
// MERGE's WHEN NOT MATCHED THEN INSERT without a column list: the last
// INSERT before its first value. -1 if the tree gives no location.
func (s scanned) mergeInsertEnd(wc *pg.MergeWhenClause) int {
	loc := nodeLocation(wc.Values[0])
	at := -1
	for i, t := range s.toks {
		if loc >= 0 && int(t.Start) < loc && t.Token == pg.Token_INSERT {
			at = s.end(i)
		}
	}
	return at
}

// insertedWidth returns how many values each row of an INSERT's source
// has, when the text says: the first VALUES row, or a SELECT's target
// list without *.
func insertedWidth(ins *pg.InsertStmt) (int, bool) {
	sel, ok := ins.SelectStmt.GetNode().(*pg.Node_SelectStmt)
	if !ok {
		return 0, false
	}
	s := sel.SelectStmt
	if len(s.ValuesLists) > 0 {
		if l, ok := s.ValuesLists[0].Node.(*pg.Node_List); ok {
			return len(l.List.Items), true
		}
		return 0, false
	}
	if s.Op != pg.SetOperation_SETOP_NONE || len(s.TargetList) == 0 || hasStar(s.TargetList) {
		return 0, false
	}
	return len(s.TargetList), true
}

// buildNamed plans sql, with the column lists of its INSERTs named first
// when it has INSERTs without one, and returns the tables whose columns
// it used.
func (p *Planner) buildNamed(sql string) (*Plan, []string, error) {
	if p.columns != nil && containsFold(sql, "insert") {
		if tree, err := parse(sql); err == nil && len(tree.Stmts) == 1 {
			named, used, err := p.nameInsertColumns(sql, tree)
			if err != nil {
				return nil, nil, err
			}
			if used != nil {
				pl, err := p.build(named)
				return pl, used, err
			}
		}
	}
	pl, err := p.build(sql)
	return pl, nil, err
}

// containsFold reports whether s contains the lower-case ASCII word w in
// any case.
func containsFold(s, w string) bool {
	for i := 0; i+len(w) <= len(s); i++ {
		if equalFoldASCII(s[i:i+len(w)], w) {
			return true
		}
	}
	return false
}
