package planner

import (
	"strconv"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"github.com/shardgate/shardgate/sqlerr"
)

// Intermediate runs a read the streaming merge cannot answer exactly in
// steps: every table the statement reads that the coordinator (the main
// group's cluster) does not hold is pulled, from each cluster that holds
// some of its rows, into a temporary table on the coordinator (Pulls, in
// order); then the statement, its table references rewritten to the
// temporary tables, runs on the coordinator (SQL), which computes it with
// Postgres's own semantics. The proxy executes it (package intermediate);
// Targets names the coordinator.
type Intermediate struct {
	// Coordinator is the cluster the final statement runs on: the main
	// group's.
	Coordinator string
	// Pulls are the tables moved to the coordinator, one per table
	// reference.
	Pulls []Pull
	// SQL is the statement the coordinator runs, with the client's $n.
	SQL string
	// Cause is the message of the refusal the plan replaces (what the
	// streaming merge could not do), for EXPLAIN.
	Cause string
}

// Pull is one table reference moved to the coordinator.
type Pull struct {
	// Table names the table as messages do; Group is its group's name.
	Table, Group string
	// Temp is the temporary table's name on the coordinator (in pg_temp).
	Temp string
	// Clusters are the clusters whose rows are pulled: every cluster of
	// a sharded table's group, one copy of a reference or unsharded table.
	Clusters []string
	// SQL is the statement each cluster runs: SELECT * of the table with
	// the WHERE conditions that touch only this table, its parameters
	// renumbered $1..$k.
	SQL string
	// Params are the 0-based indices of the statement's parameters in the
	// $n order of SQL (empty: none).
	Params []int
	// Columns are the columns the statement may read, sorted: the
	// executor pulls those of them the table has (at least one), nil for
	// every column.
	Columns []string
	// Lock is the row lock the pull takes on the rows it reads ("FOR
	// UPDATE", "FOR NO KEY UPDATE"; "": none), appended to the SQL each
	// cluster runs: a write's target read in steps (RowWrite).
	Lock string
	// route is the plan of SQL as a statement of its own when its
	// conditions name shard-key values (Sources runs it on their
	// clusters only); nil: every cluster of Clusters.
	route *Plan
}

// Name implements Primitive.
func (im *Intermediate) Name() string { return "Intermediate" }

// Inputs implements Primitive: the steps are not primitives.
func (im *Intermediate) Inputs() []Primitive { return nil }

func (im *Intermediate) mode() RouteMode { return ModeIntermediate }

func (im *Intermediate) targets(pl *Plan, params []Param) ([]Target, error) {
	return []Target{{Cluster: im.Coordinator}}, nil
}

func (im *Intermediate) explain(w *explainWriter, pl *Plan, depth int) {
	w.line(depth, "Intermediate coordinator=%s", im.Coordinator)
	if im.Cause != "" {
		w.line(depth+1, "instead of: %s", im.Cause)
	}
	for i := range im.Pulls {
		im.Pulls[i].explain(w, depth+1)
	}
	w.line(depth+1, "Coordinator %s", im.Coordinator)
	w.line(depth+2, "sql: %s", im.SQL)
}

// IntermediateTempPrefix names the temporary tables of intermediate
// results: pg_temp._sg_pull_1, _sg_pull_2, ...
const IntermediateTempPrefix = "_sg_pull_"

// buildIntermediate plans a SELECT that decide or the merge builder
// refused (cause, a 0A000) as an Intermediate, or returns cause when the
// statement is not one the coordinator can compute exactly.
func (p *Planner) buildIntermediate(pl *Plan, s *pg.SelectStmt, cause error) error {
	return p.intermediatePlan(pl, s, cause, false, "")
}

// intermediatePlan is buildIntermediate; pullAll pulls every table the
// statement reads, the coordinator's own too, and plans a statement that
// reads none (a write's source read runs on a connection of its own,
// outside the transaction: see InsertSelect); lock, when set, is the row
// lock the pull of the statement's first FROM item (a write's target)
// takes (Pull.Lock).
func (p *Planner) intermediatePlan(pl *Plan, s *pg.SelectStmt, cause error, pullAll bool, lock string) error {
	if sqlerr.Code(cause) != sqlerr.FeatureNotSupported {
		return cause
	}
	if why := intermediateBlocker(s); why != "" {
		return cause
	}
	// The rewrite changes table references: leave the caller's tree
	// (session classification reads it) as it is.
	s = proto.Clone(s).(*pg.SelectStmt)
	var locked *pg.RangeVar
	if lock != "" && len(s.FromClause) > 0 {
		locked = s.FromClause[0].GetRangeVar()
	}
	a := newAnalysis(p)
	a.selectLevel(nil, s, true)
	if a.err != nil {
		return cause
	}
	stmtOf := map[*level]*pg.SelectStmt{}
	for st, l := range a.levelOf {
		stmtOf[l] = st
	}
	main := p.vs.Main()
	coord := main.Clusters[0]
	im := &Intermediate{Coordinator: coord}
	if e, ok := sqlerr.As(cause); ok {
		im.Cause = e.Message
	}
	var rewrite []*instance
	for _, inst := range a.insts {
		if inst.rel.table.Group == main && isCatalog(inst.rv) {
			// Every cluster has catalogs of its own: which one the
			// statement meant is not the coordinator's to guess.
			return cause
		}
	}
	for _, inst := range a.insts {
		var from []string
		g := inst.rel.group
		switch inst.rel.kind {
		case relSharded:
			from = g.Clusters
		case relReference:
			if pullAll || !containsString(g.Clusters, coord) {
				from = g.Clusters[:1]
			}
		default:
			if pullAll || g.Clusters[0] != coord {
				from = g.Clusters[:1]
			}
		}
		if len(from) == 0 {
			continue
		}
		pull := Pull{
			Table: inst.rel.display, Group: g.Name, Clusters: from,
			Temp: IntermediateTempPrefix + strconv.Itoa(len(im.Pulls)+1),
		}
		sql, params, err := pullSQL(inst, stmtOf[inst.level])
		if err != nil {
			return cause
		}
		pull.SQL, pull.Params = sql, params
		if inst.rel.kind == relSharded {
			pull.route = p.pullRoute(sql)
		}
		pull.Columns = pullColumns(s, inst, stmtOf)
		if locked != nil && inst.rv == locked {
			pull.Lock = lock
		}
		im.Pulls = append(im.Pulls, pull)
		rewrite = append(rewrite, inst)
	}
	if len(im.Pulls) == 0 && !pullAll || locked != nil && !hasLock(im.Pulls) {
		return cause
	}
	for i, inst := range rewrite {
		rv := inst.rv
		if rv.Alias == nil {
			rv.Alias = &pg.Alias{Aliasname: rv.Relname}
		}
		rv.Catalogname, rv.Schemaname, rv.Relname = "", "pg_temp", im.Pulls[i].Temp
	}
	sql, err := deparse(&pg.Node{Node: &pg.Node_SelectStmt{SelectStmt: s}})
	if err != nil {
		return cause
	}
	im.SQL = sql
	pl.Root = im
	return nil
}

// hasLock reports a pull that locks its rows.
func hasLock(pulls []Pull) bool {
	for _, p := range pulls {
		if p.Lock != "" {
			return true
		}
	}
	return false
}

// intermediateBlocker names what keeps a statement from running on the
// coordinator over intermediate results: row locks (FOR UPDATE must lock
// the shards' rows), data-modifying WITH, references to columns through a
// schema-qualified table name (the temporary table has another), and
// SELECT INTO.
func intermediateBlocker(s *pg.SelectStmt) string {
	why := ""
	walk(s, func(n *pg.Node) bool {
		switch x := n.Node.(type) {
		case *pg.Node_LockingClause:
			why = "FOR UPDATE/SHARE"
		case *pg.Node_InsertStmt, *pg.Node_UpdateStmt, *pg.Node_DeleteStmt, *pg.Node_MergeStmt:
			why = "data-modifying WITH"
		case *pg.Node_IntoClause:
			why = "SELECT INTO"
		case *pg.Node_ColumnRef:
			if len(x.ColumnRef.Fields) > 2 {
				why = "schema-qualified column reference"
			}
		}
		return why == ""
	})
	if len(s.LockingClause) > 0 {
		why = "FOR UPDATE/SHARE"
	}
	return why
}

// pullSQL is the statement that reads one table reference's rows on a
// cluster: every column (the executor projects Pull.Columns), and the conjuncts of its level's WHERE that
// touch only this table (kept in the coordinator's statement too).
func pullSQL(inst *instance, s *pg.SelectStmt) (string, []int, error) {
	rv := proto.Clone(inst.rv).(*pg.RangeVar)
	rv.Location = 0
	sel := &pg.SelectStmt{
		TargetList: []*pg.Node{{Node: &pg.Node_ResTarget{ResTarget: &pg.ResTarget{Val: &pg.Node{Node: &pg.Node_ColumnRef{ColumnRef: &pg.ColumnRef{
			Fields: []*pg.Node{{Node: &pg.Node_AStar{AStar: &pg.A_Star{}}}},
		}}}}}}},
		FromClause:  []*pg.Node{{Node: &pg.Node_RangeVar{RangeVar: rv}}},
		Op:          pg.SetOperation_SETOP_NONE,
		LimitOption: pg.LimitOption_LIMIT_OPTION_DEFAULT,
	}
	var pushed []*pg.Node
	if s != nil && !inst.nullable && inst.level != nil {
		unqualified := len(inst.level.entries) == 1 && closedLevel(inst.level)
		for _, c := range conjuncts(s.WhereClause, nil) {
			if pushable(c, inst.alias, unqualified) {
				pushed = append(pushed, proto.Clone(c).(*pg.Node))
			}
		}
	}
	params := []int{}
	if len(pushed) > 0 {
		renum := map[int32]int32{}
		for _, c := range pushed {
			walk(c, func(n *pg.Node) bool {
				if pr, ok := n.Node.(*pg.Node_ParamRef); ok {
					k, seen := renum[pr.ParamRef.Number]
					if !seen {
						params = append(params, int(pr.ParamRef.Number)-1)
						k = int32(len(params))
						renum[pr.ParamRef.Number] = k
					}
					pr.ParamRef.Number = k
				}
				return true
			})
		}
		if len(pushed) == 1 {
			sel.WhereClause = pushed[0]
		} else {
			sel.WhereClause = &pg.Node{Node: &pg.Node_BoolExpr{BoolExpr: &pg.BoolExpr{Boolop: pg.BoolExprType_AND_EXPR, Args: pushed}}}
		}
	}
	sql, err := deparse(&pg.Node{Node: &pg.Node_SelectStmt{SelectStmt: sel}})
	return sql, params, err
}

// closedLevel reports a level whose unqualified column names cannot
// refer to an outer query: the statement's own level, a WITH query of
// it, or a subquery whose enclosing levels all have no FROM (SELECT
// EXISTS (SELECT 1 FROM orders WHERE customer_id = $1)), where there is
// no outer column to name.
func closedLevel(l *level) bool {
	if l.parent == nil || l.cte && l.parent.parent == nil && !l.parent.setOp {
		return true
	}
	for up := l.parent; up != nil; up = up.parent {
		if !up.noFrom && !up.setOp {
			return false
		}
	}
	return true
}

// pushableFuncs are immutable functions a pushed condition may call.
var pushableFuncs = map[string]bool{
	"lower": true, "upper": true, "length": true, "abs": true, "btrim": true,
	"trim": true, "substr": true, "substring": true, "left": true, "right": true,
	"round": true, "floor": true, "ceil": true, "mod": true,
}

// pushable reports a condition that reads only the table named alias (by
// qualified columns, or unqualified ones when unqualified is set), with
// operators, literals, parameters, casts and the immutable functions
// above: evaluated on the table's clusters, it keeps exactly the rows the
// coordinator's copy of it would keep.
func pushable(c *pg.Node, alias string, unqualified bool) bool {
	ok, cols := true, 0
	walk(c, func(n *pg.Node) bool {
		switch x := n.Node.(type) {
		case *pg.Node_ColumnRef:
			f := x.ColumnRef.Fields
			switch {
			case len(f) == 1 && unqualified && stringValue(f[0]) != "":
			case len(f) == 2 && stringValue(f[0]) == alias && stringValue(f[1]) != "":
			default:
				ok = false
			}
			cols++
			return false
		case *pg.Node_FuncCall:
			f := x.FuncCall
			name := stringValue(f.Funcname[len(f.Funcname)-1])
			if len(f.Funcname) > 2 || len(f.Funcname) == 2 && stringValue(f.Funcname[0]) != "pg_catalog" ||
				!pushableFuncs[name] || f.Over != nil || f.AggStar || f.AggDistinct || f.AggFilter != nil || len(f.AggOrder) > 0 {
				ok = false
			}
		case *pg.Node_AExpr, *pg.Node_BoolExpr, *pg.Node_NullTest, *pg.Node_BooleanTest,
			*pg.Node_TypeCast, *pg.Node_TypeName, *pg.Node_AConst, *pg.Node_ParamRef, *pg.Node_List,
			*pg.Node_String_, *pg.Node_Integer, *pg.Node_CoalesceExpr, *pg.Node_NullIfExpr:
		default:
			ok = false
		}
		return ok
	})
	return ok && cols > 0
}

// isCatalog reports a reference to a system catalog or view.
func isCatalog(rv *pg.RangeVar) bool {
	switch rv.Schemaname {
	case "pg_catalog", "information_schema":
		return true
	case "":
		return strings.HasPrefix(rv.Relname, "pg_")
	}
	return false
}
