package planner

import (
	"sort"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"
)

// PullSource is one cluster a pull reads, with the statement it runs
// there.
type PullSource struct {
	Cluster string
	// Shards are the shards of the cluster the pull's key conditions
	// name (every shard of it when they name none).
	Shards []string
	// SQL is the pull's statement, or the same with an IN list cut down
	// to the cluster's keys; Params are the 0-based indices of the
	// client's parameters in its $n order.
	SQL    string
	Params []int
	// Arg, when set, replaces one of the client's parameters (Index is
	// the client's): the ANY array cut to the cluster (Target.Arg).
	Arg *TargetArg
}

// Sources resolves the clusters a pull reads for the statement's
// parameters (nil in the simple protocol, where the pull's SQL carries
// literals): when its pushed-down conditions name shard-key values, only
// the clusters of those keys' shards, as the planner routes the pull's
// own statement; every cluster of Clusters otherwise.
func (p *Pull) Sources(params []Param) []PullSource {
	var ts []Target
	if p.route != nil {
		ts, _ = p.route.Targets(p.subParams(params))
	}
	if len(ts) == 0 {
		// No key condition, or keys the planner cannot evaluate (a
		// binary parameter of unknown type): every cluster, where the
		// coordinator's own statement judges the conditions.
		out := make([]PullSource, len(p.Clusters))
		for i, c := range p.Clusters {
			out[i] = PullSource{Cluster: c, SQL: p.locked(p.SQL), Params: p.Params}
		}
		return out
	}
	out := make([]PullSource, len(ts))
	for i, t := range ts {
		src := PullSource{Cluster: t.Cluster, Shards: t.Shards, SQL: p.SQL, Params: p.Params}
		if t.SQL != "" {
			src.SQL, src.Params = t.SQL, p.Params
			if t.Params != nil {
				src.Params = pickAt(p.Params, t.Params)
			}
		}
		if t.Arg != nil && t.Arg.Index < len(p.Params) {
			src.Arg = &TargetArg{Index: p.Params[t.Arg.Index], Value: t.Arg.Value}
		}
		src.SQL = p.locked(src.SQL)
		out[i] = src
	}
	return out
}

// locked is a statement of the pull with its row lock.
func (p *Pull) locked(sql string) string {
	if p.Lock == "" {
		return sql
	}
	return sql + " " + p.Lock
}

// subParams are the statement's parameters in the $n order of the pull's
// SQL (nil when the statement has none bound).
func (p *Pull) subParams(params []Param) []Param {
	if params == nil {
		return nil
	}
	return pickAt(params, p.Params)
}

// pullRoute plans a sharded table's pull statement as a statement of its
// own: its Route picks the shards of the key values its conditions name.
// nil when it reads every shard anyway, or is not a plain Route.
func (p *Planner) pullRoute(sql string) *Plan {
	pl, err := p.build(sql)
	if err != nil || pl.Lookup != nil {
		return nil
	}
	r, ok := pl.Root.(*Route)
	if !ok || r.MergeReason != "" || r.Hidden > 0 || r.Opcode != EqualUnique && r.Opcode != IN {
		return nil
	}
	return pl
}

// explainPull writes one pull's EXPLAIN rows.
func (p *Pull) explain(w *explainWriter, depth int) {
	from := strings.Join(p.Clusters, ", ")
	if p.route != nil {
		from = "the clusters of its keys among " + from
		if w.resolvable(p.route.Root.(*Route).Keys) {
			srcs := p.Sources(w.params)
			cs := make([]string, len(srcs))
			for i, s := range srcs {
				cs[i] = s.Cluster
			}
			from = strings.Join(cs, ", ")
		}
	}
	w.line(depth, "Pull %s (group %s) into pg_temp.%s from %s", p.Table, p.Group, p.Temp, from)
	if p.route != nil {
		sub := &explainWriter{params: p.subParams(w.params), known: w.known}
		p.route.Root.explain(sub, p.route, 0)
		for _, r := range sub.rows {
			if !strings.HasPrefix(r, "  sql: ") {
				w.line(depth+1, "%s", r)
			}
		}
	}
	switch {
	case p.Columns == nil:
		w.line(depth+1, "columns: all")
	case len(p.Columns) == 0:
		w.line(depth+1, "columns: none read (the first is pulled)")
	default:
		w.line(depth+1, "columns: %s (those the table has)", strings.Join(p.Columns, ", "))
	}
	w.line(depth+1, "sql: %s", p.locked(p.SQL))
}

// pullColumns names the columns of inst's table the statement may read,
// sorted; nil for every column. It errs on the side of more: every
// column qualified by the instance's alias anywhere in the statement, and
// every unqualified column name (the executor keeps those the table has);
// every column for a whole-row reference (o, o.*), a * in the select list
// of the instance's level (or anywhere else than a select list), NATURAL
// joins and column aliases in FROM.
func pullColumns(root *pg.SelectStmt, inst *instance, stmtOf map[*level]*pg.SelectStmt) []string {
	if inst.rv.Alias != nil && len(inst.rv.Alias.Colnames) > 0 {
		return nil
	}
	stars, listed := 0, 0
	for l, st := range stmtOf {
		for _, t := range st.TargetList {
			rt, ok := t.Node.(*pg.Node_ResTarget)
			if !ok || rt.ResTarget.Val == nil || !isBareStar(rt.ResTarget.Val) {
				continue
			}
			if l == inst.level {
				return nil
			}
			listed++
		}
	}
	all := false
	names := map[string]bool{}
	walk(root, func(n *pg.Node) bool {
		switch x := n.Node.(type) {
		case *pg.Node_ColumnRef:
			f := x.ColumnRef.Fields
			switch {
			case len(f) == 1 && isBareStar(n):
				stars++
			case len(f) == 1:
				name := stringValue(f[0])
				all = all || name == inst.alias
				names[name] = true
			case stringValue(f[0]) != inst.alias:
			case len(f) == 2 && stringValue(f[1]) != "":
				names[stringValue(f[1])] = true
			default:
				all = true
			}
			return false
		case *pg.Node_JoinExpr:
			all = all || x.JoinExpr.IsNatural
			for _, u := range x.JoinExpr.UsingClause {
				names[stringValue(u)] = true
			}
		}
		return !all
	})
	if all || stars > listed {
		return nil
	}
	out := make([]string, 0, len(names))
	for name := range names {
		if name != "" {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// isBareStar reports an unqualified * column reference.
func isBareStar(n *pg.Node) bool {
	c, ok := n.Node.(*pg.Node_ColumnRef)
	if !ok || len(c.ColumnRef.Fields) != 1 {
		return false
	}
	_, ok = c.ColumnRef.Fields[0].Node.(*pg.Node_AStar)
	return ok
}
