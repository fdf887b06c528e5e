package planner

import (
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"github.com/shardgate/shardgate/pgwire"
	"github.com/shardgate/shardgate/sqlerr"
)

// Pullout runs a SELECT whose WHERE has an uncorrelated scalar subquery
// (`col = (SELECT ...)`) or `IN (SELECT ...)` in steps, instead of over
// intermediate results as a whole: the subquery runs first as a
// statement of its own (Sub: one shard, merged, or itself intermediate),
// its value (scalar: NULL for no row) or values (IN: an array, for
// `= ANY($n)`, which keeps IN's NULL semantics) are bound as parameter
// $Param, typed as the subquery's column, and the statement with that
// parameter (Outer) is routed by it: one cluster when the key it names
// lives there. The proxy executes it (package intermediate).
type Pullout struct {
	// Sub is the subquery as a statement of its own, without parameters.
	Sub *Plan
	// In marks IN (subquery): the values go as one array parameter.
	In bool
	// Param is n of the $n that stands for the subquery in Outer.
	Param int
	// Names are the unqualified column names the subquery reads, Tables
	// its tables (as to_regclass reads them), CheckOn the cluster whose
	// catalog tells whether the tables have every name: one they lack
	// would be the outer query's (a correlated subquery), and Orig runs.
	Names, Tables []string
	CheckOn       string
	// Outer is the statement with $Param for the subquery. Steps is Outer
	// over intermediate results, for when Outer's route (once the value
	// is known) needs more than one cluster; nil when Outer runs in steps
	// itself or always on one cluster (it reads no sharded table).
	Outer, Steps *Plan
	// Orig is the whole statement over intermediate results: it
	// describes the statement (extended protocol) and runs when the
	// pullout cannot (a correlated name, more than one row for a scalar
	// subquery, too many values, a float column).
	Orig *Plan
	// link is the subquery in the statement's tree (planning only).
	link *pg.SubLink
}

// Name implements Primitive.
func (po *Pullout) Name() string { return "Pullout" }

// Inputs implements Primitive: the steps are plans of their own.
func (po *Pullout) Inputs() []Primitive { return nil }

func (po *Pullout) mode() RouteMode { return ModeIntermediate }

func (po *Pullout) targets(pl *Plan, params []Param) ([]Target, error) {
	return po.Orig.Root.targets(po.Orig, params)
}

func (po *Pullout) explain(w *explainWriter, pl *Plan, depth int) {
	kind := "scalar"
	if po.In {
		kind = "IN"
	}
	w.line(depth, "Pullout %s subquery as $%d", kind, po.Param)
	w.line(depth+1, "Subquery sql: %s", po.Sub.SQL)
	po.Sub.Root.explain(w, po.Sub, depth+2)
	w.line(depth+1, "Outer sql: %s", po.Outer.SQL)
	po.Outer.Root.explain(w, po.Outer, depth+2)
	if po.Steps != nil {
		w.line(depth+1, "on more than one cluster: the outer statement over intermediate results")
	}
}

// pullout replaces pl, a SELECT planned over intermediate results, by a
// Pullout of the first uncorrelated subquery of s's WHERE that can run
// on its own; pl stays as it is when there is none. s is the statement as
// written.
func (p *Planner) pullout(pl *Plan, s *pg.SelectStmt) {
	if s.Op != pg.SetOperation_SETOP_NONE || s.IntoClause != nil || len(s.LockingClause) > 0 {
		return
	}
	s = proto.Clone(s).(*pg.SelectStmt)
	var po *Pullout
	var link *pg.Node
	if s.WhereClause != nil {
		po, link = p.pulloutSub(s.WhereClause, pl.NumParams+1)
	}
	if po == nil && len(s.FromClause) == 0 && !wholeSublink(s) {
		// A FROM-less SELECT's target list: its subqueries correlate
		// with nothing.
		for _, t := range s.TargetList {
			if po == nil {
				po, link = p.pulloutTarget(t.GetResTarget(), pl.NumParams+1)
			}
		}
	}
	if po == nil {
		return
	}
	link.Node = po.stand().Node
	outerSQL, err := deparse(&pg.Node{Node: &pg.Node_SelectStmt{SelectStmt: s}})
	if err != nil {
		return
	}
	if po.Outer, err = p.Plan(outerSQL); err != nil || po.Outer.Kind != Select {
		return
	}
	if po.Outer.Mode() != ModeIntermediate {
		steps := &Plan{SQL: outerSQL, Kind: Select, Returns: true, NumParams: po.Param}
		cause := sqlerr.New(sqlerr.FeatureNotSupported, "a route over several clusters, for the subquery's value")
		if p.buildIntermediate(steps, s, cause) == nil {
			po.Steps = steps
		} else if !oneCluster(po.Outer) {
			return
		}
	}
	orig := *pl
	po.Orig, po.link = &orig, nil
	pl.Root = po
}

// oneCluster reports a plan that always runs on one cluster: a statement
// that reads no sharded table (SELECT 1 WHERE 5 = $1, a reference table's
// rows), which has no steps over intermediate results to fall back to.
func oneCluster(pl *Plan) bool {
	r, ok := pl.Root.(*Route)
	return ok && pl.Lookup == nil && (r.Opcode == Unsharded || r.Opcode == AnyShard)
}

// pulloutSub finds the first uncorrelated subquery of where that can
// run on its own and plans it: a Pullout with Sub, In, Names, Tables and
// CheckOn filled, its value to stand as $param, and the node of where
// that holds it (the caller replaces it: stand); nil when there is none.
func (p *Planner) pulloutSub(where *pg.Node, param int) (*Pullout, *pg.Node) {
	return p.pulloutFound(firstSubLink(where, false), param)
}

// firstSubLink is the node of where's first uncorrelated subquery that
// can be pulled out. evaluated: only among the parts Postgres always
// evaluates, as a target list's: not a CASE's later conditions and
// results, COALESCE's later arguments or AND's and OR's after the first,
// which it may never reach (a subquery run first there could fail,
// 21000 or 22012, where Postgres answers).
func firstSubLink(where *pg.Node, evaluated bool) *pg.Node {
	var link *pg.Node
	var visit func(n *pg.Node) bool
	visit = func(n *pg.Node) bool {
		if link != nil {
			return false
		}
		switch x := n.Node.(type) {
		case *pg.Node_SubLink:
			if pullable(x.SubLink) {
				link = n
			}
			return false // a subquery's own subqueries stay in it
		case *pg.Node_BoolExpr:
			if evaluated && x.BoolExpr.Boolop != pg.BoolExprType_NOT_EXPR {
				if len(x.BoolExpr.Args) > 0 {
					walk(x.BoolExpr.Args[0], visit)
				}
				return false
			}
		case *pg.Node_CaseExpr:
			if evaluated {
				if x.CaseExpr.Arg != nil {
					walk(x.CaseExpr.Arg, visit)
				}
				if len(x.CaseExpr.Args) > 0 {
					if w := x.CaseExpr.Args[0].GetCaseWhen(); w != nil && w.Expr != nil {
						walk(w.Expr, visit)
					}
				}
				return false
			}
		case *pg.Node_CoalesceExpr:
			if evaluated {
				if len(x.CoalesceExpr.Args) > 0 {
					walk(x.CoalesceExpr.Args[0], visit)
				}
				return false
			}
		}
		return true
	}
	walk(where, visit)
	return link
}

// pulloutFound plans the subquery of link (pulloutSub).
func (p *Planner) pulloutFound(link *pg.Node, param int) (*Pullout, *pg.Node) {
	if link == nil {
		return nil, nil
	}
	sl := link.Node.(*pg.Node_SubLink).SubLink
	sub := sl.Subselect.Node.(*pg.Node_SelectStmt).SelectStmt
	names, tables, ok := pulloutNames(sub)
	if !ok {
		return nil, nil
	}
	subSQL, err := deparse(sl.Subselect)
	if err != nil {
		return nil, nil
	}
	subPlan, err := p.Plan(subSQL)
	if err != nil || subPlan.Kind != Select || subPlan.Lookup != nil || subPlan.GSI != nil {
		return nil, nil
	}
	switch m := subPlan.Mode(); {
	case m == ModeIntermediate:
		if _, ok := subPlan.Root.(*Intermediate); !ok {
			return nil, nil
		}
	case m != ModeSingle && m != ModeScatter && m != ModeMerge:
		return nil, nil
	}
	po := &Pullout{Sub: subPlan, Param: param, Names: names, In: sl.SubLinkType == pg.SubLinkType_ANY_SUBLINK, link: sl}
	for _, t := range tables {
		tb := p.vs.Table(t.Schemaname, t.Relname)
		if tb == nil {
			return nil, nil
		}
		if po.CheckOn == "" {
			po.CheckOn = tb.Group.Clusters[0]
		}
		name := pgwire.QuoteIdent(t.Relname)
		if t.Schemaname != "" {
			name = pgwire.QuoteIdent(t.Schemaname) + "." + name
		}
		po.Tables = append(po.Tables, name)
	}
	return po, link
}

// pulloutTarget is pulloutSub over an entry of a FROM-less SELECT's
// target list, where EXISTS (...) and ARRAY(...) run first too (as
// SELECT EXISTS (...), a value). The name Postgres gives the column must
// not depend on the subquery: a subquery that is the entry's whole value
// needs an alias (EXISTS and ARRAY get theirs: exists, array), and one
// under a cast at its top stays.
func (p *Planner) pulloutTarget(rt *pg.ResTarget, param int) (*Pullout, *pg.Node) {
	if rt == nil || rt.Val == nil {
		return nil, nil
	}
	top := rt.Val
	if rt.Name == "" {
		switch x := top.Node.(type) {
		case *pg.Node_TypeCast, *pg.Node_CollateClause, *pg.Node_AIndirection:
			return nil, nil
		case *pg.Node_SubLink:
			switch x.SubLink.SubLinkType {
			case pg.SubLinkType_EXISTS_SUBLINK:
				rt.Name = "exists"
			case pg.SubLinkType_ARRAY_SUBLINK:
				rt.Name = "array"
			default:
				return nil, nil
			}
		}
	}
	// EXISTS and ARRAY first become scalar subqueries of their own.
	walk(top, func(n *pg.Node) bool {
		sl, ok := n.Node.(*pg.Node_SubLink)
		if !ok {
			return true
		}
		if t := sl.SubLink.SubLinkType; t == pg.SubLinkType_EXISTS_SUBLINK || t == pg.SubLinkType_ARRAY_SUBLINK {
			if inner, ok := sl.SubLink.Subselect.GetNode().(*pg.Node_SelectStmt); ok {
				if _, _, ok := subqueryNames(inner.SelectStmt); ok {
					wrapped := &pg.SelectStmt{Op: pg.SetOperation_SETOP_NONE, LimitOption: pg.LimitOption_LIMIT_OPTION_DEFAULT,
						TargetList: []*pg.Node{pg.MakeResTargetNodeWithVal(&pg.Node{Node: &pg.Node_SubLink{SubLink: sl.SubLink}}, 0)}}
					n.Node = &pg.Node_SubLink{SubLink: &pg.SubLink{SubLinkType: pg.SubLinkType_EXPR_SUBLINK,
						Subselect: &pg.Node{Node: &pg.Node_SelectStmt{SelectStmt: wrapped}}}}
				}
			}
		}
		return false
	})
	return p.pulloutFound(firstSubLink(top, true), param)
}

// stand is what replaces the subquery in the outer statement: $Param, or
// for IN, expr = ANY($Param).
func (po *Pullout) stand() *pg.Node {
	return po.standFor(&pg.Node{Node: &pg.Node_ParamRef{ParamRef: &pg.ParamRef{Number: int32(po.Param)}}})
}

// standFor is stand with v in the place of $Param.
func (po *Pullout) standFor(v *pg.Node) *pg.Node {
	if po.In {
		return &pg.Node{Node: &pg.Node_AExpr{AExpr: &pg.A_Expr{Kind: pg.A_Expr_Kind_AEXPR_OP_ANY,
			Name: []*pg.Node{pg.MakeStrNode("=")}, Lexpr: po.link.Testexpr, Rexpr: v}}}
	}
	return v
}

// pullable reports a subquery the pullout may run first: `expr =
// (SELECT ...)` or `expr IN (SELECT ...)` of one column.
func pullable(sl *pg.SubLink) bool {
	if _, ok := sl.Subselect.GetNode().(*pg.Node_SelectStmt); !ok {
		return false
	}
	switch sl.SubLinkType {
	case pg.SubLinkType_EXPR_SUBLINK:
		return true
	case pg.SubLinkType_ANY_SUBLINK:
		if _, row := sl.Testexpr.GetNode().(*pg.Node_RowExpr); row || sl.Testexpr == nil {
			return false
		}
		return len(sl.OperName) == 0 || len(sl.OperName) == 1 && stringValue(sl.OperName[0]) == "="
	}
	return false
}

// volatile are the functions of noSideEffects whose value differs per
// evaluation or per cluster: a subquery calling them keeps the
// statement's own plan.
var volatile = map[string]bool{
	"random": true, "now": true, "clock_timestamp": true, "statement_timestamp": true,
	"transaction_timestamp": true, "timeofday": true, "gen_random_uuid": true,
}

// subqueryNames checks a subquery the pullout may run on its own: a
// plain SELECT without WITH, subqueries, parameters or row locks, over
// tables (joined or listed) whose qualified column references name its
// own tables, calling built-in functions without side effects. It returns
// the unqualified column names it reads and its tables.
func subqueryNames(sub *pg.SelectStmt) (names []string, tables []*pg.RangeVar, ok bool) {
	if sub.Op != pg.SetOperation_SETOP_NONE || sub.WithClause != nil || len(sub.LockingClause) > 0 || sub.IntoClause != nil ||
		len(sub.FromClause) == 0 || maxParam(sub) > 0 {
		return nil, nil, false
	}
	aliases := map[string]bool{}
	ok = true
	var from func(n *pg.Node)
	from = func(n *pg.Node) {
		switch x := n.Node.(type) {
		case *pg.Node_RangeVar:
			rv := x.RangeVar
			if rv.Alias != nil && len(rv.Alias.Colnames) > 0 || isCatalog(rv) {
				ok = false
			}
			tables = append(tables, rv)
			aliases[aliasOf(rv)] = true
		case *pg.Node_JoinExpr:
			if x.JoinExpr.Alias != nil {
				ok = false
			}
			from(x.JoinExpr.Larg)
			from(x.JoinExpr.Rarg)
		default:
			ok = false
		}
	}
	for _, n := range sub.FromClause {
		from(n)
	}
	walk(sub, func(n *pg.Node) bool {
		switch x := n.Node.(type) {
		case *pg.Node_SubLink, *pg.Node_RangeSubselect, *pg.Node_RangeFunction:
			ok = false
		case *pg.Node_FuncCall:
			name, catalog := catalogFunction(x.FuncCall.Funcname)
			ok = ok && catalog && (sameEverywhere[name] || noSideEffects[name]) && !volatile[name]
		case *pg.Node_ColumnRef:
			f := x.ColumnRef.Fields
			switch {
			case len(f) == 1 && stringValue(f[0]) != "":
				names = append(names, stringValue(f[0]))
			case len(f) == 1: // *
			case len(f) == 2 && aliases[stringValue(f[0])]:
			default:
				ok = false
			}
			return false
		}
		return ok
	})
	return names, tables, ok
}

// wholeSublink reports SELECT EXISTS (...) or SELECT ARRAY(...) alone:
// what pulloutTarget runs first, so not pulled out of itself again.
func wholeSublink(s *pg.SelectStmt) bool {
	if len(s.TargetList) != 1 {
		return false
	}
	sl := s.TargetList[0].GetResTarget().GetVal().GetSubLink()
	return sl != nil && (sl.SubLinkType == pg.SubLinkType_EXISTS_SUBLINK || sl.SubLinkType == pg.SubLinkType_ARRAY_SUBLINK)
}

// pulloutNames is subqueryNames of sub, or of the subquery of
// SELECT EXISTS (...) or SELECT ARRAY(...) (pulloutTarget).
func pulloutNames(sub *pg.SelectStmt) (names []string, tables []*pg.RangeVar, ok bool) {
	if len(sub.FromClause) == 0 && len(sub.TargetList) == 1 && sub.WhereClause == nil && sub.WithClause == nil &&
		sub.Op == pg.SetOperation_SETOP_NONE && len(sub.GroupClause) == 0 && sub.HavingClause == nil && sub.LimitCount == nil && sub.LimitOffset == nil {
		sl := sub.TargetList[0].GetResTarget().GetVal().GetSubLink()
		if sl != nil && (sl.SubLinkType == pg.SubLinkType_EXISTS_SUBLINK || sl.SubLinkType == pg.SubLinkType_ARRAY_SUBLINK) {
			if inner := sl.Subselect.GetSelectStmt(); inner != nil {
				return subqueryNames(inner)
			}
		}
	}
	return subqueryNames(sub)
}

// CheckSQL is the catalog query whose one row counts the names the
// pullout's tables lack (a pullout runs only when it is 0).
func (po *Pullout) CheckSQL() string {
	var ns, ts []string
	for _, n := range po.Names {
		ns = append(ns, pgwire.QuoteLiteral(n))
	}
	for _, t := range po.Tables {
		ts = append(ts, "pg_catalog.to_regclass("+pgwire.QuoteLiteral(t)+")")
	}
	return "SELECT count(*) FROM unnest(ARRAY[" + strings.Join(ns, ", ") + "]::text[]) AS n(name) WHERE NOT EXISTS (" +
		"SELECT FROM pg_catalog.pg_attribute a WHERE a.attrelid IN (" + strings.Join(ts, ", ") +
		") AND a.attname = n.name AND a.attnum > 0 AND NOT a.attisdropped)"
}
