package planner

import (
	"fmt"
	"sync"

	pg "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"
)

// GROUP BY a bare name that is also an output column's alias
// (SELECT date_trunc('month', due) AS m ... GROUP BY m) groups by the
// input column of that name when the FROM list has one, and by the output
// column otherwise. The planner cannot see the tables' columns; the
// shards can. So the shard statement keeps GROUP BY m as written, sends m
// itself as a hidden column, and runs inside a scope that defines m as
// NULL::void one query level up:
//
//	SELECT _sg_s.* FROM (SELECT NULL::void AS m) _sg_scope,
//	  LATERAL (SELECT date_trunc('month', due) AS m, count(*), m AS sg_hidden_1
//	           FROM t GROUP BY m) _sg_s
//
// A bare name resolves to the nearest query level that has it, so the
// hidden column is the input column m when there is one (and GROUP BY m
// groups by it on the shard, as on one Postgres), and the outer void
// otherwise (GROUP BY only looks for input columns on its own level, so it
// takes the alias). The hidden column's type in the shard's
// RowDescription says which: void is never the type of a table's column.
// The merge groups by the hidden column, or by the output column when it
// is void (merge/aggregate.go).
//
// Only when the FROM list has tables and joins alone, the name appears
// nowhere else in the statement (the scope would give any other bare
// reference the void instead of Postgres's "column does not exist"), and
// the output column has no aggregate.

// ScopeTypeOID is the type (void) of a name the shard statement's scope
// defines: a hidden GROUP BY column of that type is the output alias.
const ScopeTypeOID = 2278

// scopeAlias is the alias of the scope's subquery; shardAlias the shard
// statement's.
const (
	scopeAlias = "_sg_scope"
	shardAlias = "_sg_s"
)

// aliasGroup returns the shard column to group by for GROUP BY name,
// where name is the alias of output column out, and records the output
// column as the key to use instead when name is not an input column.
// ok is false when the statement does not allow it.
func (b *aggBuilder) aliasGroup(name string, out int) (int, bool) {
	if containsAggregate(b.orig[out]) || sublinkAggregate(b.orig[out]) || !tablesOnly(b.s.FromClause) ||
		b.bareUses(name) != b.allowedUses(name) {
		return 0, false
	}
	col := b.hiddenExpr(&pg.Node{Node: &pg.Node_ColumnRef{ColumnRef: &pg.ColumnRef{
		Fields: []*pg.Node{{Node: &pg.Node_String_{String_: &pg.String{Sval: name}}}}}}})
	for len(b.agg.AliasGroup) < len(b.agg.Group) {
		b.agg.AliasGroup = append(b.agg.AliasGroup, -1)
	}
	b.agg.AliasGroup = append(b.agg.AliasGroup, out)
	for _, n := range b.scope {
		if n == name {
			return col, true
		}
	}
	b.scope = append(b.scope, name)
	return col, true
}

// tablesOnly reports whether a FROM list has only tables and joins of
// tables: their columns are never of type void (Postgres refuses
// pseudo-types in tables and views), where a subquery's or a function's
// may be.
func tablesOnly(from []*pg.Node) bool {
	for _, f := range from {
		switch x := f.Node.(type) {
		case *pg.Node_RangeVar:
		case *pg.Node_JoinExpr:
			if !tablesOnly([]*pg.Node{x.JoinExpr.Larg, x.JoinExpr.Rarg}) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// bareUses counts the bare references to name in the statement, at any
// depth: the client's select list and every other clause.
func (b *aggBuilder) bareUses(name string) int {
	s := b.s
	rest := &pg.SelectStmt{DistinctClause: s.DistinctClause, FromClause: s.FromClause, WhereClause: s.WhereClause,
		GroupClause: s.GroupClause, HavingClause: s.HavingClause, WindowClause: s.WindowClause, SortClause: s.SortClause,
		LimitCount: s.LimitCount, LimitOffset: s.LimitOffset, WithClause: s.WithClause, LockingClause: s.LockingClause}
	n := 0
	count := func(x *pg.Node) bool {
		if got, ok := bareName(x); ok && got == name {
			n++
		}
		return true
	}
	walk(rest, count)
	for _, o := range b.orig {
		walk(o, count)
	}
	return n
}

// allowedUses counts the GROUP BY and ORDER BY entries that are name
// itself: ORDER BY is the proxy's (it prefers the output column, as
// Postgres does), GROUP BY the shard's.
func (b *aggBuilder) allowedUses(name string) int {
	n := 0
	for _, g := range b.s.GroupClause {
		if got, ok := bareName(g); ok && got == name {
			n++
		}
	}
	for _, o := range b.s.SortClause {
		if got, ok := bareName(o.GetSortBy().GetNode()); ok && got == name {
			n++
		}
	}
	return n
}

var (
	scopeOnce     sync.Once
	scopeTemplate *pg.SelectStmt
)

// scoped wraps the shard statement in the scope defining names as void
// (see above); stmt itself without names.
func scoped(stmt *pg.Node, names []string) (*pg.Node, error) {
	if len(names) == 0 {
		return stmt, nil
	}
	var err error
	scopeOnce.Do(func() {
		var res *pg.ParseResult
		res, err = pg.Parse("SELECT " + shardAlias + ".* FROM (SELECT NULL::void AS x) " + scopeAlias + ", LATERAL (SELECT) " + shardAlias)
		if err == nil {
			scopeTemplate = res.Stmts[0].Stmt.GetSelectStmt()
		}
	})
	if scopeTemplate == nil {
		return nil, fmt.Errorf("the scope of a GROUP BY alias does not parse: %v", err)
	}
	outer := proto.Clone(scopeTemplate).(*pg.SelectStmt)
	scope := outer.FromClause[0].GetRangeSubselect().Subquery.GetSelectStmt()
	def := scope.TargetList[0].GetResTarget()
	scope.TargetList = nil
	for _, name := range names {
		t := proto.Clone(def).(*pg.ResTarget)
		t.Name = name
		scope.TargetList = append(scope.TargetList, &pg.Node{Node: &pg.Node_ResTarget{ResTarget: t}})
	}
	outer.FromClause[1].GetRangeSubselect().Subquery = stmt
	return &pg.Node{Node: &pg.Node_SelectStmt{SelectStmt: outer}}, nil
}
