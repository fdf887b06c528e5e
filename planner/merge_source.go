package planner

import (
	"strconv"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"github.com/shardgate/shardgate/keyexpr"
	"github.com/shardgate/shardgate/sqlerr"
	"github.com/shardgate/shardgate/vschema"
)

// MergeSource is a MERGE into a sharded table whose source the shards do
// not hold where its rows are matched (a table of another group or of
// main, a subquery across shards), joined on the target's key in ON
// (o.customer_id = s.cid) or pinning it to one value (o.customer_id = 5),
// or whose WHEN NOT MATCHED THEN INSERT leaves the
// sequence-bound column to the proxy. The proxy reads the source first,
// as an intermediate read (Source, every table pulled through the
// session's connections, so it sees the transaction's rows), then routes
// each source row by the value of the column ON joins the key on, as a
// MergeSplit routes VALUES rows (or all of them to the pinned shard): each cluster runs the MERGE, in the
// statement's transaction, with the rows whose key it holds as its source
// (a VALUES list of bound parameters cast to the types the source's
// columns were described with, under the statement's alias and the
// source's column names). A target row matches only source rows of its
// own key, so it meets the same source rows on its shard as in one
// database; a source row matching two target rows still fails with 21000
// there. A source of no row merges nothing (MERGE 0); the statement still
// runs once, on one cluster, over a source of no row typed as the
// source's columns, so that it fails where Postgres would find it does
// not type-check. A source row whose key
// is NULL matches no target row: it is left out when the MERGE has no
// WHEN NOT MATCHED THEN INSERT, and refused (0A000) otherwise, since the
// row it could insert has no shard. Package xwrite executes it.
type MergeSource struct {
	// Table is the target; Group its group.
	Table *vschema.Table
	Group *vschema.Group
	// Source reads the rows: its Root is an Intermediate whose statement
	// returns the source's columns, then the routing key (the ON column)
	// cast through the index type to text.
	Source *Plan
	// Alias names the source in the statement (quoted); Head and Tail are
	// the MERGE's text before and after its source relation.
	Alias, Head, Tail string
	// KeyColumn is the target's key column; SourceKey the source column
	// ON joins it on, or else Pinned routes every row: ON pins the key
	// to one value (every target row it matches is on that value's
	// shard, and the INSERT must insert that value).
	KeyColumn, SourceKey string
	Pinned               *Plan
	// Inserts: the MERGE has a WHEN NOT MATCHED THEN INSERT.
	Inserts bool
	// SeqColumn and Seq: the sequence-bound column the INSERT leaves to
	// the proxy and its sequence: a value is drawn for each source row
	// and passed as the source's column SeqSource, which the INSERT
	// takes (a row that does not insert leaves a gap, as Postgres's own
	// sequences may).
	SeqColumn, Seq string
	// SourceParams and MergeParams are the client's parameters (0-based)
	// that Source reads and that Head and Tail read: each numbers its own
	// from $1 in their order (the cluster's source values come after
	// MergeParams).
	SourceParams, MergeParams []int
	// Subqueries counts the source columns Source adds for the
	// subqueries outside the source (moveSubqueries): Head and Tail read
	// them in their place.
	Subqueries int
	// Cause is the refusal the plan replaces.
	Cause string
}

// MergeSubquery is the prefix of the source columns a MergeSource adds
// for the subqueries outside its source (numbered from 1).
const MergeSubquery = "shardgate_sub_"

// MergeSeqSource is the added source column a MergeSource's INSERT takes
// the sequence-bound column from.
const MergeSeqSource = "shardgate_seq"

// Name implements Primitive.
func (ms *MergeSource) Name() string { return "MergeSource" }

// Inputs implements Primitive.
func (ms *MergeSource) Inputs() []Primitive { return nil }

// mode: run in steps by the proxy, as an intermediate read.
func (ms *MergeSource) mode() RouteMode { return ModeIntermediate }

func (ms *MergeSource) targets(pl *Plan, params []Param) ([]Target, error) {
	return groupTargets(ms.Group), nil
}

func (ms *MergeSource) explain(w *explainWriter, pl *Plan, depth int) {
	w.line(depth, "MergeSource into %s (group %s) on %s", ms.Table, ms.Group.Name, strings.Join(ms.Group.Clusters, ", "))
	if ms.Cause != "" {
		w.line(depth+1, "instead of: %s", ms.Cause)
	}
	if ms.Pinned != nil {
		w.line(depth+1, "rows: to the shard of key %s", ms.Pinned.Root.(*Route).Keys[0].render(w.params, true))
	} else {
		w.line(depth+1, "rows: routed by %s.%s (= %s)", ms.Alias, ms.SourceKey, ms.KeyColumn)
	}
	if ms.Seq != "" {
		w.line(depth+1, "column %s: drawn from %s per source row", ms.SeqColumn, ms.Seq)
	}
	if ms.Subqueries > 0 {
		w.line(depth+1, "subqueries outside the source: read with it, in its columns %s* (%d)", MergeSubquery, ms.Subqueries)
	}
	if len(ms.MergeParams) > 0 {
		w.line(depth+1, "merge parameters: %s", paramList(ms.MergeParams))
	}
	w.line(depth+1, "merge: %s(VALUES ...) AS %s (...)%s", ms.Head, ms.Alias, ms.Tail)
	ms.Source.Root.explain(w, ms.Source, depth+1)
}

// sourceMarker stands for the source relation in the deparsed MERGE.
const sourceMarker = "shardgate_merge_source_marker"

// buildMergeSource plans a MERGE that buildMerge refused with cause
// (0A000) as a MergeSource, or returns cause when it cannot: a target
// that is not a sharded table keyed by one column, global secondary
// indexes (MERGE on Postgres 15 returns no rows: the proxy could not
// learn the entries it writes), WITH, a source that is not a table or an
// aliased subquery, no ON condition joining the key on a source column,
// a change of the key, an INSERT that does not insert that source column
// as the key, nextval() outside the source, or a subquery outside it
// that reads the target's columns. Parameters outside the source are
// bound in each cluster's MERGE; subqueries there become columns of the
// source (moveSubqueries).
func (p *Planner) buildMergeSource(pl *Plan, m *pg.MergeStmt, a *analysis, l *level, cause error) error {
	if sqlerr.Code(cause) != sqlerr.FeatureNotSupported || m.WithClause != nil || l.target == nil {
		return cause
	}
	target := l.target
	rel := target.rel
	t := rel.table
	if rel.kind != relSharded || t == nil || rel.expression || len(rel.indexColumns) != 1 || len(t.KeyColumns()) != 1 {
		return cause
	}
	if len(t.SecondaryIndexes) > 0 {
		return mergeIntoRefusal(target, "the proxy would not maintain its global secondary index "+t.SecondaryIndexes[0].Name).
			WithDetail("MERGE returns no rows on Postgres 15, so the proxy cannot learn which entries it changes.").
			WithHint("Use INSERT ... ON CONFLICT, UPDATE or DELETE, whose entries the proxy maintains.")
	}
	var alias string
	switch x := m.SourceRelation.GetNode().(type) {
	case *pg.Node_RangeVar:
		alias = aliasOf(x.RangeVar)
	case *pg.Node_RangeSubselect:
		if x.RangeSubselect.Lateral || x.RangeSubselect.Alias == nil {
			return cause
		}
		alias = x.RangeSubselect.Alias.Aliasname
	default:
		return cause
	}
	keyCol := t.KeyColumns()[0]
	var pinned *Route
	for _, pn := range l.pins {
		if pn.inst == target && len(pn.keys) == 1 && pn.keys[0].Array == nil {
			pinned = &Route{Opcode: EqualUnique, Group: t.Group, Keys: pn.keys, Tables: rel.display}
		}
	}
	sourceKey := ""
	for _, c := range conjuncts(m.JoinCondition, nil) {
		if pinned != nil {
			break
		}
		e, ok := c.Node.(*pg.Node_AExpr)
		if !ok || e.AExpr.Kind != pg.A_Expr_Kind_AEXPR_OP || !isOperator(e.AExpr.Name, "=") {
			continue
		}
		for _, sides := range [][2]*pg.Node{{e.AExpr.Lexpr, e.AExpr.Rexpr}, {e.AExpr.Rexpr, e.AExpr.Lexpr}} {
			if k, isKey := a.keySide(l, sides[0]); isKey && !k.whole && k.inst == target && sourceKey == "" {
				sourceKey = qualifiedColumn(sides[1], alias)
			}
		}
	}
	if sourceKey == "" && pinned == nil {
		return cause
	}
	ms := &MergeSource{Table: t, Group: t.Group, Alias: keyexpr.QuoteIdentifier(alias), KeyColumn: keyCol, SourceKey: sourceKey}
	if pinned != nil {
		ms.Pinned = &Plan{SQL: pl.SQL, Kind: Merge, Root: pinned}
	}
	insertsKey := func(v *pg.Node) bool {
		if pinned != nil {
			return a.keyUnchanged(l, target, keyCol, v)
		}
		return qualifiedColumn(v, alias) == sourceKey
	}
	if e, ok := sqlerr.As(cause); ok {
		ms.Cause = e.Message
	}
	m = proto.Clone(m).(*pg.MergeStmt)
	for _, n := range m.MergeWhenClauses {
		wc := n.GetMergeWhenClause()
		if wc == nil {
			continue
		}
		switch wc.CommandType {
		case pg.CmdType_CMD_UPDATE:
			for _, tn := range wc.TargetList {
				if rt := tn.GetResTarget(); rt != nil && !a.keyUnchanged(l, target, rt.Name, rt.Val) {
					return keyChangeRefusal(target, rt.Name, "MERGE", "Delete the row and insert it with the new key, or use UPDATE, which moves the row.")
				}
			}
		case pg.CmdType_CMD_INSERT:
			ms.Inserts = true
			if err := ms.insertClause(target, wc, alias, insertsKey); err != nil {
				return err
			}
		}
	}
	// The statement's text around its source, which each cluster gets
	// replaced by its rows; its subqueries go into the source read, its
	// parameters are bound on each cluster.
	src := m.SourceRelation
	m.SourceRelation = &pg.Node{Node: &pg.Node_RangeVar{RangeVar: &pg.RangeVar{Relname: sourceMarker, Inh: true, Relpersistence: "p"}}}
	subs, ok := moveSubqueries(m, target.alias, alias)
	if !ok {
		return cause // a subquery reading the target's row would run on each cluster alone
	}
	ms.Subqueries = len(subs)
	ms.MergeParams = renumberParams(m)
	text, err := deparse(&pg.Node{Node: &pg.Node_MergeStmt{MergeStmt: m}})
	marker := " USING " + sourceMarker + " "
	if err != nil || strings.Count(text, sourceMarker) != 1 || !strings.Contains(text, marker) || containsFoldASCII(text, "nextval") {
		return cause
	}
	i := strings.Index(text, marker)
	ms.Head, ms.Tail = text[:i+len(" USING ")], text[i+len(marker)-1:]
	// SELECT alias.*, CAST(CAST(alias.key AS <index type>) AS text) FROM <source>
	keyRef := &pg.Node{Node: &pg.Node_ColumnRef{ColumnRef: &pg.ColumnRef{Fields: []*pg.Node{
		{Node: &pg.Node_String_{String_: &pg.String{Sval: alias}}}, {Node: &pg.Node_String_{String_: &pg.String{Sval: sourceKey}}}}}}}
	star := &pg.Node{Node: &pg.Node_ColumnRef{ColumnRef: &pg.ColumnRef{Fields: []*pg.Node{
		{Node: &pg.Node_String_{String_: &pg.String{Sval: alias}}}, {Node: &pg.Node_AStar{AStar: &pg.A_Star{}}}}}}}
	key := castThrough(keyRef, t.Group.Index.Type.String()+" text")
	if pinned != nil {
		key = castThrough(&pg.Node{Node: &pg.Node_AConst{AConst: &pg.A_Const{Isnull: true}}}, "text")
	}
	targets := []*pg.Node{{Node: &pg.Node_ResTarget{ResTarget: &pg.ResTarget{Val: star}}}}
	targets = append(targets, subs...)
	targets = append(targets, &pg.Node{Node: &pg.Node_ResTarget{ResTarget: &pg.ResTarget{Val: key}}})
	sel := &pg.SelectStmt{
		TargetList: targets,
		FromClause: []*pg.Node{src},
		Op:         pg.SetOperation_SETOP_NONE, LimitOption: pg.LimitOption_LIMIT_OPTION_DEFAULT,
	}
	ms.SourceParams = renumberParams(sel)
	ms.Source = &Plan{SQL: pl.SQL, Kind: Select, Returns: true, NumParams: len(ms.SourceParams)}
	if err := p.intermediatePlan(ms.Source, sel, cause, true, ""); err != nil {
		return err
	}
	pl.Root = ms
	return nil
}

// insertClause checks a WHEN NOT MATCHED THEN INSERT of a MergeSource: it
// inserts the source's key column as the key, and takes the sequence-bound
// column it leaves to the proxy from the added source column (wc is
// changed so).
func (ms *MergeSource) insertClause(target *instance, wc *pg.MergeWhenClause, alias string, insertsKey func(*pg.Node) bool) error {
	rel := target.rel
	valueOf := func(col string) (*pg.Node, bool) {
		for i, tn := range wc.TargetList {
			if rt := tn.GetResTarget(); rt != nil && rt.Name == col && i < len(wc.Values) {
				return wc.Values[i], true
			}
		}
		return nil, false
	}
	if len(wc.TargetList) == 0 {
		return mergeIntoRefusal(target, "its INSERT names no columns").
			WithHint("Write INSERT (%s, ...) VALUES (...) in the WHEN NOT MATCHED clause.", rel.keyDisplay)
	}
	if seq := ms.Table.Sequence; seq != nil {
		if v, given := valueOf(seq.Column); !given || isDefault(v) {
			if ms.Seq != "" && ms.SeqColumn != keyexpr.QuoteIdentifier(seq.Column) {
				return mergeIntoRefusal(target, "its INSERTs leave different sequence-bound columns to the proxy")
			}
			ms.SeqColumn, ms.Seq = keyexpr.QuoteIdentifier(seq.Column), rel.sequenceFor(seq.Column)
			drawn := &pg.Node{Node: &pg.Node_ColumnRef{ColumnRef: &pg.ColumnRef{Fields: []*pg.Node{
				{Node: &pg.Node_String_{String_: &pg.String{Sval: alias}}}, {Node: &pg.Node_String_{String_: &pg.String{Sval: MergeSeqSource}}}}}}}
			if given {
				for i, tn := range wc.TargetList {
					if tn.GetResTarget().GetName() == seq.Column {
						wc.Values[i] = drawn
					}
				}
			} else {
				wc.TargetList = append(wc.TargetList, &pg.Node{Node: &pg.Node_ResTarget{ResTarget: &pg.ResTarget{Name: seq.Column}}})
				wc.Values = append(wc.Values, drawn)
			}
		}
	}
	v, _ := valueOf(ms.KeyColumn)
	if v == nil || isDefault(v) || !insertsKey(v) {
		return mergeIntoRefusal(target, "its INSERT does not give shard key column \""+ms.KeyColumn+"\" the key the row is merged by").
			WithHint("Insert the source's key column (the one ON joins on), or pin the key to one value in ON and insert that value.")
	}
	return nil
}

// qualifiedColumn is the column name of alias.column n ("" otherwise).
func qualifiedColumn(n *pg.Node, alias string) string {
	cr, ok := n.GetNode().(*pg.Node_ColumnRef)
	if !ok || len(cr.ColumnRef.Fields) != 2 {
		return ""
	}
	q, ok1 := cr.ColumnRef.Fields[0].Node.(*pg.Node_String_)
	c, ok2 := cr.ColumnRef.Fields[1].Node.(*pg.Node_String_)
	if !ok1 || !ok2 || q.String_.Sval != alias {
		return ""
	}
	return c.String_.Sval
}

// castThrough casts v through each of the space-separated types
// ("bigint text"), by their catalog names.
func castThrough(v *pg.Node, types string) *pg.Node {
	for _, t := range strings.Fields(types) {
		if internal, ok := internalTypeNames[t]; ok {
			t = internal
		}
		v = &pg.Node{Node: &pg.Node_TypeCast{TypeCast: &pg.TypeCast{Arg: v, TypeName: &pg.TypeName{
			Names: []*pg.Node{{Node: &pg.Node_String_{String_: &pg.String{Sval: "pg_catalog"}}}, {Node: &pg.Node_String_{String_: &pg.String{Sval: t}}}}, Typemod: -1}}}}
	}
	return v
}

// moveSubqueries takes the subqueries out of m (a MERGE whose source is
// read first: its source relation replaced already) and returns the
// source columns (ResTargets) that compute them instead: the source read
// computes each over every table with Postgres's semantics, where each
// cluster's MERGE alone would see only its own rows. A subquery the
// source can compute reads nothing of the target (no column qualified by
// outer, the target's name, nor by a schema), so that it means there what
// it means in the MERGE: uncorrelated, or correlated with the source's
// row only. An unqualified name it does not resolve itself resolves, in
// the source read, to the source's column or is an error (42703), never
// to another value. EXISTS, IN, ANY, ALL and ARRAY subqueries become one
// column (alias.MergeSubqueryN) each. A scalar subquery becomes two, its
// first row's value and how many rows it has (up to 2), and the MERGE
// reads them through (SELECT value FROM generate_series(1, rows)), which
// fails with 21000 as the subquery would, only where the MERGE evaluates
// it. false: a subquery reads the target, calls a function whose value
// differs per call, or is a row comparison.
func moveSubqueries(m *pg.MergeStmt, outer, alias string) ([]*pg.Node, bool) {
	var cols []*pg.Node
	ok, k := true, 0
	column := func(name string, v *pg.Node) {
		cols = append(cols, &pg.Node{Node: &pg.Node_ResTarget{ResTarget: &pg.ResTarget{Name: name, Val: v}}})
	}
	walk(m, func(n *pg.Node) bool {
		sl, is := n.Node.(*pg.Node_SubLink)
		if !is || !ok {
			return ok
		}
		walk(n, func(c *pg.Node) bool {
			switch x := c.Node.(type) {
			case *pg.Node_ColumnRef:
				f := x.ColumnRef.Fields
				if len(f) > 2 || len(f) == 2 && stringValue(f[0]) == outer {
					ok = false
				}
			case *pg.Node_FuncCall:
				if name, _ := catalogFunction(x.FuncCall.Funcname); volatile[name] {
					ok = false
				}
			}
			return ok
		})
		k++
		name := MergeSubquery + strconv.Itoa(k)
		switch t := sl.SubLink.SubLinkType; {
		case !ok:
		case t == pg.SubLinkType_EXPR_SUBLINK:
			value, rows := scalarParts(sl.SubLink.Subselect)
			column(name, value)
			column(name+"_rows", rows)
			n.Node = scalarRead(alias, name).Node
		case t == pg.SubLinkType_EXISTS_SUBLINK || t == pg.SubLinkType_ANY_SUBLINK || t == pg.SubLinkType_ALL_SUBLINK || t == pg.SubLinkType_ARRAY_SUBLINK:
			column(name, &pg.Node{Node: n.Node})
			n.Node = &pg.Node_ColumnRef{ColumnRef: &pg.ColumnRef{Fields: []*pg.Node{pg.MakeStrNode(alias), pg.MakeStrNode(name)}}}
		default:
			ok = false
		}
		return false
	})
	return cols, ok
}

// scalarParts are the source columns of a scalar subquery (its
// Subselect): its first row's value, and how many rows it has, up to 2.
func scalarParts(sub *pg.Node) (value, rows *pg.Node) {
	tree, err := pg.Parse("SELECT (SELECT shardgate_q.* FROM (SELECT) AS shardgate_q LIMIT 1), " +
		"(SELECT pg_catalog.count(*) FROM (SELECT FROM (SELECT) AS shardgate_q LIMIT 2) AS shardgate_q)")
	if err != nil {
		panic(err) // a constant statement
	}
	tl := tree.Stmts[0].Stmt.GetSelectStmt().TargetList
	value, rows = tl[0].GetResTarget().Val, tl[1].GetResTarget().Val
	value.GetSubLink().Subselect.GetSelectStmt().FromClause[0].GetRangeSubselect().Subquery = sub
	inner := rows.GetSubLink().Subselect.GetSelectStmt().FromClause[0].GetRangeSubselect().Subquery.GetSelectStmt()
	inner.FromClause[0].GetRangeSubselect().Subquery = proto.Clone(sub).(*pg.Node)
	return value, rows
}

// scalarRead is what a MERGE reads in the place of a scalar subquery the
// source computed as the columns name and name_rows of alias.
func scalarRead(alias, name string) *pg.Node {
	a := keyexpr.QuoteIdentifier(alias)
	tree, err := pg.Parse("SELECT (SELECT " + a + "." + name + " FROM pg_catalog.generate_series(1, " + a + "." + name + "_rows))")
	if err != nil {
		panic(err) // a quoted alias and a constant name
	}
	return tree.Stmts[0].Stmt.GetSelectStmt().TargetList[0].GetResTarget().Val
}

// paramList describes the parameters idx (0-based) of a statement that
// numbers them from $1: "$3 as $1, $5 as $2".
func paramList(idx []int) string {
	var b strings.Builder
	for i, k := range idx {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("$" + strconv.Itoa(k+1) + " as $" + strconv.Itoa(i+1))
	}
	return b.String()
}
