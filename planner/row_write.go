package planner

import (
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"github.com/shardgate/shardgate/keyexpr"
	"github.com/shardgate/shardgate/sqlerr"
	"github.com/shardgate/shardgate/vschema"
)

// RowWrite is an UPDATE ... FROM or DELETE ... USING (or one with
// subqueries) whose rows cannot be matched where its target lives (the
// FROM list or a subquery reads other groups or shards): the proxy reads
// the target rows' primary keys, with the new values of the SET columns
// computed there, as an intermediate read (Source, on a connection of
// the coordinator's own: see InsertSelect), one row per target row
// (DISTINCT ON the primary key: a target row joined to several FROM rows
// is updated once, with one of them), then updates or deletes the rows
// by key on their clusters in bounded batches, in the statement's
// transaction (package xwrite executes it).
type RowWrite struct {
	// Table is the target; Group its group.
	Table *vschema.Table
	Group *vschema.Group
	// Delete: a DELETE; otherwise an UPDATE.
	Delete bool
	// Source reads the rows: its Root is an Intermediate whose statement
	// returns one column per entry of Computed (the new values), then one
	// text column per key column of the table (KeyColumns, cast for the
	// sharding index), then Checks columns (ignored), then every column
	// of the target (alias.*). Its SQL has DistinctPlaceholder where the
	// primary key's columns go.
	Source *Plan
	// Computed are the quoted target columns whose new values the source
	// computes; KeyColumns the table columns of the shard key; Checks
	// counts the columns read only so that the coordinator checks them.
	Computed   []string
	KeyColumns []string
	Checks     int
	// Apply is the statement each cluster runs per batch: the target
	// (AS Alias) updated (deleted) FROM (USING) ValuesPlaceholder WHERE
	// the target's own conditions of the statement AND MatchPlaceholder,
	// with the statement's RETURNING; its $1..$n are ApplyParams of the
	// client's (0-based), the batch's values come after them.
	Apply       string
	ApplyParams []int
	// Alias is the target's alias (its name without one).
	Alias string
	// InlineParams are the client's parameters that only SET columns
	// directly (SET c = $n, in Apply): the source reads them as NULL, and
	// Shape (UPDATE of no row setting them) describes their types.
	InlineParams []int
	Shape        string
	// Describe is a statement with the RETURNING list's columns (a DELETE
	// of no row), for the RowDescription.
	Describe string
	// Cause is the refusal the plan replaces.
	Cause string
	// Sets are the quoted columns an UPDATE sets. The source's pull of
	// the target locks the rows it reads as Postgres's UPDATE or DELETE
	// would (Pull.Lock): FOR UPDATE for a DELETE, FOR NO KEY UPDATE for
	// an UPDATE (the executor makes it FOR UPDATE when Sets names a
	// column of a unique key, as Postgres does).
	Sets []string
}

// Row locks of a RowWrite's target pull.
const (
	LockUpdate      = "FOR UPDATE"
	LockNoKeyUpdate = "FOR NO KEY UPDATE"
)

// Placeholders of RowWrite's texts, replaced at execution.
const (
	DistinctPlaceholder = "DISTINCT ON (__sg_primary_key__)"
	ValuesPlaceholder   = "__sg_rows__ sg_v"
	MatchPlaceholder    = "__sg_match__"
)

// Name implements Primitive.
func (rw *RowWrite) Name() string { return "RowWrite" }

// Inputs implements Primitive.
func (rw *RowWrite) Inputs() []Primitive { return nil }

func (rw *RowWrite) mode() RouteMode { return ModeIntermediate }

func (rw *RowWrite) targets(pl *Plan, params []Param) ([]Target, error) {
	return groupTargets(rw.Group), nil
}

// Replicated reports a target every cluster of whose group has every row.
func (rw *RowWrite) Replicated() bool { return rw.Table.Reference }

func (rw *RowWrite) explain(w *explainWriter, pl *Plan, depth int) {
	what := "update"
	if rw.Delete {
		what = "delete"
	}
	w.line(depth, "RowWrite %s of %s (group %s) on %s", what, rw.Table, rw.Group.Name, strings.Join(rw.Group.Clusters, ", "))
	if rw.Cause != "" {
		w.line(depth+1, "instead of: %s", rw.Cause)
	}
	w.line(depth+1, "rows: by primary key, one per target row; routed by %s", strings.Join(append([]string{"cluster"}, rw.KeyColumns...), ", "))
	w.line(depth+1, "apply: %s", rw.Apply)
	if !rw.Delete {
		w.line(depth+1, "rows locked by the target's pull: %s (%s when a column set is in a unique key)", LockNoKeyUpdate, LockUpdate)
	}
	rw.Source.Root.explain(w, rw.Source, depth+1)
}

// buildRowWrite plans an UPDATE or DELETE that the router refused with
// cause (0A000) as a RowWrite, or returns cause when it cannot: a WITH
// clause, WHERE CURRENT OF, a change of the shard key, SET of several
// columns at once or of a part of one, RETURNING with parameters,
// subqueries or other tables' columns; a target with global secondary
// indexes is refused naming the index.
func (p *Planner) buildRowWrite(pl *Plan, stmt *pg.Node, cause error) error {
	if sqlerr.Code(cause) != sqlerr.FeatureNotSupported {
		return cause
	}
	var rv *pg.RangeVar
	var from, sets, returning []*pg.Node
	var where *pg.Node
	rw := &RowWrite{}
	switch x := stmt.Node.(type) {
	case *pg.Node_UpdateStmt:
		u := x.UpdateStmt
		if u.WithClause != nil {
			return cause
		}
		rv, from, sets, returning, where = u.Relation, u.FromClause, u.TargetList, u.ReturningList, u.WhereClause
	case *pg.Node_DeleteStmt:
		d := x.DeleteStmt
		if d.WithClause != nil {
			return cause
		}
		rv, from, returning, where, rw.Delete = d.Relation, d.UsingClause, d.ReturningList, d.WhereClause, true
	default:
		return cause
	}
	if _, ok := where.GetNode().(*pg.Node_CurrentOfExpr); ok || !rv.Inh || isCatalog(rv) {
		return cause
	}
	t := p.vs.Table(rv.Schemaname, rv.Relname)
	if t == nil || t.LookupOf != nil {
		return cause
	}
	if len(t.SecondaryIndexes) > 0 {
		return gsiCrossRefusal(t, cause)
	}
	rw.Table, rw.Group, rw.Alias = t, t.Group, aliasOf(rv)
	if e, ok := sqlerr.As(cause); ok {
		rw.Cause = e.Message
	}
	col := func(fields ...string) *pg.Node {
		var fs []*pg.Node
		for _, f := range fields {
			fs = append(fs, &pg.Node{Node: &pg.Node_String_{String_: &pg.String{Sval: f}}})
		}
		return &pg.Node{Node: &pg.Node_ColumnRef{ColumnRef: &pg.ColumnRef{Fields: fs}}}
	}
	target := func(v *pg.Node) *pg.Node { return &pg.Node{Node: &pg.Node_ResTarget{ResTarget: &pg.ResTarget{Val: v}}} }
	// RETURNING reads the target only (the apply has no other table): its
	// unqualified columns are read by the source too, where an ambiguous
	// or unknown one fails as it would in Postgres.
	var checks []*pg.Node
	ok := maxParam(&pg.UpdateStmt{ReturningList: returning}) == 0
	walk(&pg.UpdateStmt{ReturningList: returning}, func(n *pg.Node) bool {
		switch x := n.Node.(type) {
		case *pg.Node_SubLink:
			ok = false
		case *pg.Node_ColumnRef:
			f := x.ColumnRef.Fields
			if len(f) > 1 && stringValue(f[0]) != rw.Alias {
				ok = false
			}
			if len(f) == 1 && stringValue(f[0]) != "" && len(from) > 0 {
				checks = append(checks, target(proto.Clone(n).(*pg.Node)))
			}
			return false
		}
		return true
	})
	if !ok {
		return cause
	}
	// SET: constants, DEFAULT and bare parameters stay in the apply; other
	// values are computed by the source.
	keyCols := map[string]bool{}
	for _, kc := range t.KeyColumns() {
		keyCols[kc] = true
	}
	var inline, computed []*pg.Node
	for _, n := range sets {
		rt, isRT := n.Node.(*pg.Node_ResTarget)
		if !isRT || len(rt.ResTarget.Indirection) > 0 || keyCols[rt.ResTarget.Name] {
			return cause
		}
		if _, multi := rt.ResTarget.Val.GetNode().(*pg.Node_MultiAssignRef); multi {
			return cause
		}
		rw.Sets = append(rw.Sets, keyexpr.QuoteIdentifier(rt.ResTarget.Name))
		switch rt.ResTarget.Val.GetNode().(type) {
		case *pg.Node_AConst, *pg.Node_SetToDefault, *pg.Node_ParamRef:
			inline = append(inline, proto.Clone(n).(*pg.Node))
			continue
		}
		computed = append(computed, target(proto.Clone(rt.ResTarget.Val).(*pg.Node)))
		rw.Computed = append(rw.Computed, keyexpr.QuoteIdentifier(rt.ResTarget.Name))
		inline = append(inline, &pg.Node{Node: &pg.Node_ResTarget{ResTarget: &pg.ResTarget{Name: rt.ResTarget.Name,
			Val: col("sg_v", "sg_n"+itoa(len(rw.Computed)))}}})
	}
	// The source: new values, key columns as text, checks, the target row.
	srcList := computed
	if t.Sharded() {
		ix := t.Group.Index
		for _, kc := range t.KeyColumns() {
			v := col(rw.Alias, kc)
			if ix.Expr == nil {
				v = castTo(v, ix.Type.String())
			}
			srcList = append(srcList, target(castTo(v, "text")))
			rw.KeyColumns = append(rw.KeyColumns, kc)
		}
	}
	srcList = append(srcList, checks...)
	rw.Checks = len(checks)
	srcList = append(srcList, target(col(rw.Alias, "*")))
	srcList[len(srcList)-1].GetResTarget().Val.GetColumnRef().Fields[1] = &pg.Node{Node: &pg.Node_AStar{AStar: &pg.A_Star{}}}
	src := &pg.SelectStmt{
		DistinctClause: []*pg.Node{col("__sg_primary_key__")},
		TargetList:     srcList,
		FromClause:     append([]*pg.Node{{Node: &pg.Node_RangeVar{RangeVar: proto.Clone(rv).(*pg.RangeVar)}}}, cloneNodes(from)...),
		Op:             pg.SetOperation_SETOP_NONE, LimitOption: pg.LimitOption_LIMIT_OPTION_DEFAULT,
	}
	if where != nil {
		src.WhereClause = proto.Clone(where).(*pg.Node)
	}
	srcParams := map[int]bool{}
	walk(src, func(n *pg.Node) bool {
		if pr, isP := n.Node.(*pg.Node_ParamRef); isP {
			srcParams[int(pr.ParamRef.Number)-1] = true
		}
		return true
	})
	rw.Source = &Plan{SQL: pl.SQL, Kind: Select, Returns: true, NumParams: pl.NumParams}
	lock := LockNoKeyUpdate
	if rw.Delete {
		lock = LockUpdate
	}
	if err := p.intermediatePlan(rw.Source, src, cause, true, lock); err != nil {
		return err
	}
	if !strings.Contains(rw.Source.Root.(*Intermediate).SQL, DistinctPlaceholder) {
		return cause
	}
	// The apply: the target's own conditions re-checked on its cluster.
	var recheck []*pg.Node
	for _, c := range conjuncts(where, nil) {
		if pushable(c, rw.Alias, len(from) == 0) {
			recheck = append(recheck, proto.Clone(c).(*pg.Node))
		}
	}
	recheck = append(recheck, col(MatchPlaceholder))
	cond := recheck[0]
	if len(recheck) > 1 {
		cond = &pg.Node{Node: &pg.Node_BoolExpr{BoolExpr: &pg.BoolExpr{Boolop: pg.BoolExprType_AND_EXPR, Args: recheck}}}
	}
	values := &pg.Node{Node: &pg.Node_RangeVar{RangeVar: &pg.RangeVar{Relname: "__sg_rows__", Inh: true,
		Alias: &pg.Alias{Aliasname: "sg_v"}}}}
	head := proto.Clone(rv).(*pg.RangeVar)
	head.Alias = &pg.Alias{Aliasname: rw.Alias}
	var apply *pg.Node
	if rw.Delete {
		apply = &pg.Node{Node: &pg.Node_DeleteStmt{DeleteStmt: &pg.DeleteStmt{Relation: head, UsingClause: []*pg.Node{values},
			WhereClause: cond, ReturningList: cloneNodes(returning)}}}
	} else {
		apply = &pg.Node{Node: &pg.Node_UpdateStmt{UpdateStmt: &pg.UpdateStmt{Relation: head, TargetList: inline,
			FromClause: []*pg.Node{values}, WhereClause: cond, ReturningList: cloneNodes(returning)}}}
		var shape []*pg.Node
		for _, n := range inline {
			if pr, isP := n.GetResTarget().Val.GetNode().(*pg.Node_ParamRef); isP && !srcParams[int(pr.ParamRef.Number)-1] {
				rw.InlineParams = append(rw.InlineParams, int(pr.ParamRef.Number)-1)
				shape = append(shape, proto.Clone(n).(*pg.Node))
			}
		}
		if len(shape) > 0 {
			s, err := deparse(&pg.Node{Node: &pg.Node_UpdateStmt{UpdateStmt: &pg.UpdateStmt{Relation: proto.Clone(head).(*pg.RangeVar),
				TargetList: shape, WhereClause: &pg.Node{Node: &pg.Node_AConst{AConst: &pg.A_Const{Val: &pg.A_Const_Boolval{Boolval: &pg.Boolean{}}}}}}}})
			if err != nil {
				return cause
			}
			rw.Shape = s
		}
	}
	rw.ApplyParams = renumberParams(apply)
	var err error
	if rw.Apply, err = deparse(apply); err != nil || !strings.Contains(rw.Apply, ValuesPlaceholder) || !strings.Contains(rw.Apply, MatchPlaceholder) {
		return cause
	}
	if len(returning) > 0 {
		del := &pg.DeleteStmt{Relation: proto.Clone(head).(*pg.RangeVar), ReturningList: cloneNodes(returning),
			WhereClause: &pg.Node{Node: &pg.Node_AConst{AConst: &pg.A_Const{Val: &pg.A_Const_Boolval{Boolval: &pg.Boolean{}}}}}}
		if rw.Describe, err = deparse(&pg.Node{Node: &pg.Node_DeleteStmt{DeleteStmt: del}}); err != nil {
			return cause
		}
	}
	pl.Root, pl.GSI = rw, nil
	return nil
}

// castTo wraps v in a cast to the catalog type named by an SQL type name
// ("bigint", "text").
func castTo(v *pg.Node, typ string) *pg.Node {
	if internal, ok := internalTypeNames[typ]; ok {
		typ = internal
	}
	return &pg.Node{Node: &pg.Node_TypeCast{TypeCast: &pg.TypeCast{Arg: v, TypeName: &pg.TypeName{
		Names: []*pg.Node{{Node: &pg.Node_String_{String_: &pg.String{Sval: "pg_catalog"}}}, {Node: &pg.Node_String_{String_: &pg.String{Sval: typ}}}}, Typemod: -1}}}}
}

func cloneNodes(ns []*pg.Node) []*pg.Node {
	out := make([]*pg.Node, len(ns))
	for i, n := range ns {
		out[i] = proto.Clone(n).(*pg.Node)
	}
	return out
}

// groupTargets are the clusters of a group, for plans whose rows go to
// any of them.
func groupTargets(g *vschema.Group) []Target {
	ts := make([]Target, len(g.Clusters))
	for i, c := range g.Clusters {
		ts[i] = Target{Cluster: c}
	}
	return ts
}

// gsiCrossRefusal is cause, for a write across groups into t, which has global
// secondary indexes: it names the index the proxy would not maintain.
func gsiCrossRefusal(t *vschema.Table, cause error) error {
	e, ok := sqlerr.As(cause)
	if !ok || e.Code != sqlerr.FeatureNotSupported {
		return cause
	}
	return sqlerr.New(sqlerr.FeatureNotSupported, "%s", e.Message).
		WithDetail("Table %s has the global secondary index %s, which the proxy does not maintain for writes across groups.", t, t.SecondaryIndexes[0].Name).
		WithHint("Write the statement against one group, or select the keys first and write by key.")
}
