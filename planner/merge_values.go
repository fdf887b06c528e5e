package planner

import (
	"strconv"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/shardgate/shardgate/sqlerr"
)

// A MERGE into a sharded table whose source is a VALUES list joined on the
// key in ON (o.customer_id = v.cid) is routed per source row: each row
// goes to the shard of its key value, and each cluster runs the MERGE
// with its own rows (a MergeSplit: InsertSplit with mergeValues). A
// target row matches only source rows of its own key, so it meets the
// same source rows on its shard as in one database, and a row its WHEN
// NOT MATCHED THEN INSERT inserts (which must give the key the source's
// key column) lands on the shard it was routed to. A source row matching
// several target rows still raises 21000 there, as all of a key's rows
// live on one shard.
//
// The rows keep the types of the whole list: each cluster's source is
// (SELECT * FROM (VALUES its rows, then the others) AS shardgate_values
// LIMIT n) with the statement's alias, so Postgres resolves every column
// from all rows as it would for the statement written, and only the
// cluster's n rows are read. When every row is on one cluster the
// statement runs there as written.
//
// A row whose key is NULL matches no target row; it would insert a row
// without a shard, so it is refused (0A000), whatever the clauses. So is
// a key column of numbers with a fraction (the column would be numeric,
// and its comparison with an integer key is not a routing the proxy
// evaluates).

// mergeValuesSource is the VALUES source of a MERGE and the position of
// the column ON joins the target's key on.
type mergeValuesSource struct {
	values *pg.SelectStmt
	alias  string
	col    int
	name   string // the source column's name
	key    keySide
}

// mergeValuesKey finds a VALUES source joined on the target's key in the
// ON condition of m; ok false when the MERGE is not of that shape.
func (a *analysis) mergeValuesKey(l *level, m *pg.MergeStmt) (mergeValuesSource, bool) {
	var src mergeValuesSource
	rs, ok := m.SourceRelation.GetNode().(*pg.Node_RangeSubselect)
	if !ok || rs.RangeSubselect.Lateral || rs.RangeSubselect.Alias == nil {
		return src, false
	}
	sel, ok := rs.RangeSubselect.Subquery.GetNode().(*pg.Node_SelectStmt)
	if !ok || len(sel.SelectStmt.ValuesLists) == 0 || sel.SelectStmt.WithClause != nil || len(sel.SelectStmt.SortClause) > 0 ||
		sel.SelectStmt.LimitCount != nil || sel.SelectStmt.LimitOffset != nil {
		return src, false
	}
	rel := l.target.rel
	if rel.expression || len(rel.indexColumns) != 1 {
		return src, false
	}
	alias := rs.RangeSubselect.Alias
	src.values, src.alias = sel.SelectStmt, alias.Aliasname
	names := func(i int) string {
		if i < len(alias.Colnames) {
			if s, ok := alias.Colnames[i].Node.(*pg.Node_String_); ok {
				return s.String_.Sval
			}
			return ""
		}
		return "column" + strconv.Itoa(i+1)
	}
	sourceCol := func(n *pg.Node) int {
		cr, ok := n.GetNode().(*pg.Node_ColumnRef)
		if !ok || len(cr.ColumnRef.Fields) != 2 {
			return -1
		}
		q, ok1 := cr.ColumnRef.Fields[0].Node.(*pg.Node_String_)
		c, ok2 := cr.ColumnRef.Fields[1].Node.(*pg.Node_String_)
		if !ok1 || !ok2 || q.String_.Sval != src.alias {
			return -1
		}
		first := sel.SelectStmt.ValuesLists[0].GetList()
		for i := range first.GetItems() {
			if names(i) == c.String_.Sval {
				return i
			}
		}
		return -1
	}
	for _, c := range conjuncts(m.JoinCondition, nil) {
		e, ok := c.Node.(*pg.Node_AExpr)
		if !ok || e.AExpr.Kind != pg.A_Expr_Kind_AEXPR_OP || !isOperator(e.AExpr.Name, "=") {
			continue
		}
		for _, sides := range [][2]*pg.Node{{e.AExpr.Lexpr, e.AExpr.Rexpr}, {e.AExpr.Rexpr, e.AExpr.Lexpr}} {
			k, isKey := a.keySide(l, sides[0])
			if i := sourceCol(sides[1]); isKey && !k.whole && k.inst == l.target && i >= 0 {
				src.col, src.name, src.key = i, names(i), k
				return src, true
			}
		}
	}
	return src, false
}

// insertsSourceKey reports whether val is the source's key column.
func (src mergeValuesSource) insertsSourceKey(val *pg.Node) bool {
	return src.name != "" && qualifiedColumn(val, src.alias) == src.name
}

// newMergeSplit routes the rows of a MERGE's VALUES source by their key.
func (a *analysis) newMergeSplit(sql string, l *level, src mergeValuesSource) (*InsertSplit, error) {
	rel := l.target.rel
	refuse := func(why string) error {
		return mergeIntoRefusal(l.target, why).
			WithHint("Give every source row a non-NULL integer key, or merge the rows one statement at a time.")
	}
	var keys []KeyRef
	for i, row := range src.values.ValuesLists {
		items := row.GetList().GetItems()
		if src.col >= len(items) {
			return nil, refuse("a VALUES row is shorter than the others")
		}
		ref, ok := valueRef(items[src.col])
		switch {
		case !ok:
			return nil, refuse("the key of source row " + strconv.Itoa(i+1) + " is not a literal or a parameter")
		case ref.Null:
			return nil, refuse("the key of source row " + strconv.Itoa(i+1) + " is NULL: it matches no row and would insert one without a shard")
		case ref.numeric:
			return nil, refuse("the key of source row " + strconv.Itoa(i+1) + " is a number with a fraction")
		}
		k, ok := a.keyValueRef(src.key, ref)
		if !ok {
			return nil, refuse("its shard key has several columns")
		}
		keys = append(keys, k)
	}
	sc, err := scanSQL(sql)
	if err != nil {
		return nil, refuse("its text could not be cut by row")
	}
	first := nodeLocation(src.values.ValuesLists[0].GetList().GetItems()[0])
	at := -1
	for i, t := range sc.toks {
		if first >= 0 && int(t.Start) < first && t.Token == pg.Token_VALUES {
			at = i
		}
	}
	if at < 0 {
		return nil, refuse("its text could not be cut by row")
	}
	spans, suffixStart, ok := sc.valuesRowsAfter(at, src.values)
	if !ok || len(spans) != len(keys) {
		return nil, refuse("its text could not be cut by row")
	}
	s := &InsertSplit{Group: rel.group, Table: rel.display, Rows: keys, mergeValues: true}
	s.prefix = sc.segment(0, sc.start(at))
	s.suffix = sc.segment(suffixStart, len(sql))
	for _, sp := range spans {
		s.rows = append(s.rows, sc.segment(sp.start, sp.end))
	}
	return s, nil
}

// mergeRewrite is the MERGE with the given rows first in its VALUES
// source, limited to them; the others keep the columns' types. Parameters
// keep their numbers: every row is still in the text.
func (s *InsertSplit) mergeRewrite(rows []int) string {
	same := func(n int) int { return n }
	var b strings.Builder
	s.prefix.write(&b, same, nil)
	b.WriteString("SELECT * FROM (VALUES ")
	in := make([]bool, len(s.rows))
	order := append([]int(nil), rows...)
	for _, r := range rows {
		in[r] = true
	}
	for r := range s.rows {
		if !in[r] {
			order = append(order, r)
		}
	}
	for i, r := range order {
		if i > 0 {
			b.WriteString(", ")
		}
		s.rows[r].write(&b, same, nil)
	}
	b.WriteString(") AS shardgate_values LIMIT " + strconv.Itoa(len(rows)))
	s.suffix.write(&b, same, nil)
	return b.String()
}

// errMergeValuesRow is the refusal of a source row whose key evaluates to
// no shard at execution (a NULL parameter, a value with a fraction).
func errMergeValuesRow(table string, row int, why string) error {
	return sqlerr.New(sqlerr.FeatureNotSupported,
		"MERGE into sharded table %s is not supported: the key of source row %d %s", table, row, why)
}

// routed is the source for mergeIntoSharded: nil when none was found.
func (src mergeValuesSource) routed() *mergeValuesSource {
	if src.values == nil {
		return nil
	}
	return &src
}

// shardedInstances lists the statement's instances of sharded tables.
func (a *analysis) shardedInstances() []*instance {
	var out []*instance
	for _, inst := range a.insts {
		if inst.rel.kind == relSharded {
			out = append(out, inst)
		}
	}
	return out
}

// nullParamKey reports whether a source row's key is a parameter bound to
// NULL.
func nullParamKey(k KeyRef, params []Param) bool {
	for _, c := range k.Columns {
		if n := c.Value.Param; n > 0 && n <= len(params) && params[n-1].Null {
			return true
		}
	}
	return false
}
