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

// InsertSelect is an INSERT ... SELECT whose rows cannot be produced
// where they go (a SELECT over other shards, groups or clusters than the
// target's): the proxy reads the SELECT as an intermediate read (Source,
// every table it reads pulled to a connection of the coordinator's
// outside the transaction, which sees the transaction's rows through the
// pulls), routes each row by its shard key, draws the sequence-bound
// column when the statement omits it, and inserts the rows on their
// clusters in bounded multi-row batches, in the statement's transaction
// (package xwrite executes it).
type InsertSelect struct {
	// Table is the target; Group its group.
	Table *vschema.Table
	Group *vschema.Group
	// Source reads the rows: its Root is an Intermediate whose statement
	// returns the SELECT's columns (one per column of Columns), then one
	// text column per entry of KeyColumns: that column's value cast for
	// the sharding index (its type for a column index, text for an
	// expression's columns).
	Source *Plan
	// Columns are the statement's target columns, quoted (empty: the
	// table's, in order; only for tables that are not sharded).
	Columns []string
	// KeyColumns are the table columns the shard key is computed from
	// (sharded targets), in the order of Source's extra columns; a column
	// filled from the sequence has none there.
	KeyColumns []string
	// SeqColumn and Seq: the sequence-bound column the statement omits,
	// quoted, and its sequence; the proxy draws a value per row.
	SeqColumn, Seq string
	// Target is "INSERT INTO t [AS a]"; Suffix the ON CONFLICT and
	// RETURNING clauses as the statement has them; Alias how the
	// statement names the target (the table's name without AS).
	Target, Suffix, Alias string
	// Describe is a statement with the RETURNING list's columns (a DELETE
	// of no row), for the RowDescription.
	Describe string
	// Untyped marks the columns a plain SELECT gives as a string literal
	// or NULL without a type: Postgres types them as the target column,
	// so their values are bound untyped.
	Untyped []bool
	// Cause is the refusal the plan replaces.
	Cause string
}

// Name implements Primitive.
func (is *InsertSelect) Name() string { return "InsertSelect" }

// Inputs implements Primitive.
func (is *InsertSelect) Inputs() []Primitive { return nil }

// mode: run in steps by the proxy, as an intermediate read.
func (is *InsertSelect) mode() RouteMode { return ModeIntermediate }

func (is *InsertSelect) targets(pl *Plan, params []Param) ([]Target, error) {
	return groupTargets(is.Group), nil
}

// Replicated reports a target every cluster of whose group has every row.
func (is *InsertSelect) Replicated() bool { return is.Table.Reference }

func (is *InsertSelect) explain(w *explainWriter, pl *Plan, depth int) {
	w.line(depth, "InsertSelect into %s (group %s) on %s", is.Table, is.Group.Name, strings.Join(is.Group.Clusters, ", "))
	if is.Cause != "" {
		w.line(depth+1, "instead of: %s", is.Cause)
	}
	switch {
	case is.Table.Reference:
		w.line(depth+1, "rows: to every copy")
	case is.Table.Sharded():
		w.line(depth+1, "rows: routed by %s", strings.Join(is.KeyColumns, ", "))
	}
	if is.Seq != "" {
		w.line(depth+1, "column %s: drawn from %s", is.SeqColumn, is.Seq)
	}
	w.line(depth+1, "insert: %s (...) VALUES ...%s", is.Target, is.Suffix)
	if sis := is.Table.SecondaryIndexes; len(sis) > 0 {
		names := make([]string, len(sis))
		for i, si := range sis {
			names[i] = si.Name
		}
		w.line(depth+1, "entries: of each batch's rows (its RETURNING extended), written in %s", strings.Join(names, ", "))
	}
	is.Source.Root.explain(w, is.Source, depth+1)
}

// buildInsertSelect plans an INSERT ... SELECT that buildInsert refused
// with cause (0A000) as an InsertSelect, or returns cause when it cannot:
// a statement with WITH, ON CONFLICT DO UPDATE, parameters outside the
// SELECT, no column list into a sharded table, or a shard key column the
// statement does not give. A target with global secondary indexes gets
// the entries of the rows inserted (package xwrite with package gsi).
func (p *Planner) buildInsertSelect(pl *Plan, ins *pg.InsertStmt, cause error) error {
	sel, ok := ins.SelectStmt.GetNode().(*pg.Node_SelectStmt)
	if sqlerr.Code(cause) != sqlerr.FeatureNotSupported || !ok || isPlainValues(sel.SelectStmt) ||
		ins.WithClause != nil || sel.SelectStmt.IntoClause != nil {
		return cause
	}
	if oc := ins.OnConflictClause; oc != nil && oc.Action != pg.OnConflictAction_ONCONFLICT_NOTHING {
		return cause
	}
	if maxParam(&pg.InsertStmt{ReturningList: ins.ReturningList, OnConflictClause: ins.OnConflictClause}) > 0 {
		return cause
	}
	rv := ins.Relation
	t := p.vs.Table(rv.Schemaname, rv.Relname)
	if t == nil || t.LookupOf != nil || isCatalog(rv) {
		return cause
	}
	is := &InsertSelect{Table: t, Group: t.Group, Alias: aliasOf(rv)}
	if e, ok := sqlerr.As(cause); ok {
		is.Cause = e.Message
	}
	cols := make([]string, len(ins.Cols))
	pos := map[string]int{}
	for i, c := range ins.Cols {
		rt, ok := c.Node.(*pg.Node_ResTarget)
		if !ok || len(rt.ResTarget.Indirection) > 0 {
			return cause
		}
		cols[i] = rt.ResTarget.Name
		pos[rt.ResTarget.Name] = i
		is.Columns = append(is.Columns, keyexpr.QuoteIdentifier(rt.ResTarget.Name))
	}
	n := len(cols)
	var keyPos []int
	var keyCast []string
	if t.Sharded() {
		if n == 0 {
			return cause
		}
		if b := t.Sequence; b != nil {
			if _, given := pos[b.Column]; !given {
				is.SeqColumn, is.Seq = keyexpr.QuoteIdentifier(b.Column), b.Sequence.String()
			}
		}
		ix := t.Group.Index
		for _, kc := range t.KeyColumns() {
			i, given := pos[kc]
			if !given {
				if t.Sequence != nil && kc == t.Sequence.Column {
					continue // drawn
				}
				return cause
			}
			cast := []string{"text"}
			if ix.Expr == nil {
				cast = []string{ix.Type.String(), "text"}
			}
			is.KeyColumns = append(is.KeyColumns, kc)
			keyPos, keyCast = append(keyPos, i), append(keyCast, strings.Join(cast, " "))
		}
	}
	if ss := sel.SelectStmt; ss.Op == pg.SetOperation_SETOP_NONE && len(ss.ValuesLists) == 0 && !hasStar(ss.TargetList) {
		for _, t := range ss.TargetList {
			c, ok := t.GetResTarget().GetVal().GetNode().(*pg.Node_AConst)
			is.Untyped = append(is.Untyped, ok && (c.AConst.Isnull || c.AConst.GetSval() != nil))
		}
	}
	s, err := sourceSelect(sel.SelectStmt, n, keyPos, keyCast)
	if err != nil {
		return err
	}
	if s == nil {
		return cause
	}
	is.Source = &Plan{SQL: pl.SQL, Kind: Select, Returns: true, NumParams: pl.NumParams}
	if err := p.intermediatePlan(is.Source, s, cause, true, ""); err != nil {
		return err
	}
	// The INSERT's own clauses, deparsed from a copy without the SELECT.
	head := proto.Clone(ins).(*pg.InsertStmt)
	head.Cols, head.SelectStmt, head.ReturningList, head.OnConflictClause = nil, nil, nil, nil
	target, err := deparse(&pg.Node{Node: &pg.Node_InsertStmt{InsertStmt: head}})
	if err != nil {
		return cause
	}
	is.Target = strings.TrimSuffix(target, " DEFAULT VALUES")
	if ins.OnConflictClause != nil || len(ins.ReturningList) > 0 {
		tail := proto.Clone(ins).(*pg.InsertStmt)
		tail.Cols = nil
		tail.SelectStmt = &pg.Node{Node: &pg.Node_SelectStmt{SelectStmt: &pg.SelectStmt{
			ValuesLists: []*pg.Node{{Node: &pg.Node_List{List: &pg.List{Items: []*pg.Node{{Node: &pg.Node_AConst{AConst: &pg.A_Const{Isnull: true}}}}}}}},
			Op:          pg.SetOperation_SETOP_NONE, LimitOption: pg.LimitOption_LIMIT_OPTION_DEFAULT,
		}}}
		full, err := deparse(&pg.Node{Node: &pg.Node_InsertStmt{InsertStmt: tail}})
		i := strings.Index(full, " VALUES (NULL)")
		if err != nil || i < 0 {
			return cause
		}
		is.Suffix = full[i+len(" VALUES (NULL)"):]
	}
	if len(ins.ReturningList) > 0 {
		del := &pg.DeleteStmt{Relation: proto.Clone(rv).(*pg.RangeVar), ReturningList: ins.ReturningList,
			WhereClause: &pg.Node{Node: &pg.Node_AConst{AConst: &pg.A_Const{Val: &pg.A_Const_Boolval{Boolval: &pg.Boolean{Boolval: false}}}}}}
		if is.Describe, err = deparse(&pg.Node{Node: &pg.Node_DeleteStmt{DeleteStmt: del}}); err != nil {
			return cause
		}
	}
	pl.Root = is
	return nil
}

// sourceSelect is the SELECT of an INSERT ... SELECT with the key columns
// added: after its n columns, the value at each of keyPos cast through
// the types of keyCast ("bigint text"). A plain SELECT whose key items
// are columns, constants or parameters gets them added to its own list
// (so that conditions still narrow its pulls); any other is wrapped in a
// derived table. nil: not one the proxy can read.
func sourceSelect(sel *pg.SelectStmt, n int, keyPos []int, keyCast []string) (*pg.SelectStmt, error) {
	s := proto.Clone(sel).(*pg.SelectStmt)
	cast := castThrough
	if len(keyPos) == 0 {
		return s, nil
	}
	plain := s.Op == pg.SetOperation_SETOP_NONE && len(s.ValuesLists) == 0 && !hasStar(s.TargetList)
	if plain {
		if len(s.TargetList) != n {
			what := "more expressions than target columns"
			if len(s.TargetList) < n {
				what = "more target columns than expressions"
			}
			return nil, sqlerr.New(sqlerr.SyntaxError, "INSERT has %s", what)
		}
		for _, i := range keyPos {
			if !simpleValue(s.TargetList[i].GetResTarget().GetVal()) {
				plain = false
			}
		}
	}
	if plain {
		for j, i := range keyPos {
			v := proto.Clone(s.TargetList[i].GetResTarget().GetVal()).(*pg.Node)
			s.TargetList = append(s.TargetList, &pg.Node{Node: &pg.Node_ResTarget{ResTarget: &pg.ResTarget{Val: cast(v, keyCast[j])}}})
		}
		return s, nil
	}
	names := make([]*pg.Node, n)
	targets := []*pg.Node{{Node: &pg.Node_ResTarget{ResTarget: &pg.ResTarget{Val: &pg.Node{Node: &pg.Node_ColumnRef{ColumnRef: &pg.ColumnRef{
		Fields: []*pg.Node{{Node: &pg.Node_String_{String_: &pg.String{Sval: "sg_src"}}}, {Node: &pg.Node_AStar{AStar: &pg.A_Star{}}}}}}}}}}}
	for i := range names {
		names[i] = &pg.Node{Node: &pg.Node_String_{String_: &pg.String{Sval: "sg_" + strconv.Itoa(i+1)}}}
	}
	for j, i := range keyPos {
		col := &pg.Node{Node: &pg.Node_ColumnRef{ColumnRef: &pg.ColumnRef{Fields: []*pg.Node{
			{Node: &pg.Node_String_{String_: &pg.String{Sval: "sg_src"}}}, {Node: &pg.Node_String_{String_: &pg.String{Sval: "sg_" + strconv.Itoa(i+1)}}}}}}}
		targets = append(targets, &pg.Node{Node: &pg.Node_ResTarget{ResTarget: &pg.ResTarget{Val: cast(col, keyCast[j])}}})
	}
	return &pg.SelectStmt{
		TargetList: targets,
		FromClause: []*pg.Node{{Node: &pg.Node_RangeSubselect{RangeSubselect: &pg.RangeSubselect{
			Subquery: &pg.Node{Node: &pg.Node_SelectStmt{SelectStmt: s}},
			Alias:    &pg.Alias{Aliasname: "sg_src", Colnames: names}}}}},
		Op: pg.SetOperation_SETOP_NONE, LimitOption: pg.LimitOption_LIMIT_OPTION_DEFAULT,
	}, nil
}

// internalTypeNames are the catalog names of the key types' SQL names.
var internalTypeNames = map[string]string{"bigint": "int8", "integer": "int4", "smallint": "int2"}

// simpleValue reports a column reference, constant or parameter, under
// casts: evaluated twice, it gives the same value.
func simpleValue(n *pg.Node) bool {
	switch x := n.GetNode().(type) {
	case *pg.Node_ColumnRef, *pg.Node_AConst, *pg.Node_ParamRef:
		return true
	case *pg.Node_TypeCast:
		return simpleValue(x.TypeCast.Arg)
	}
	return false
}
