package planner

import (
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/shardgate/shardgate/keyexpr"
	"github.com/shardgate/shardgate/sqlerr"
	"github.com/shardgate/shardgate/vschema"
)

// Lookup narrows a statement that would scatter over a group: its WHERE
// pins the column of an active secondary index (col = v, col IN (...),
// col = ANY($1)), so the executor first reads the owners' keys from the
// index's lookup shards (Queries), then runs the statement on the owners'
// clusters only (Narrow). Plan.Lookup holds it; the plan's Root is the
// scatter it narrows.
type Lookup struct {
	Index *vschema.SecondaryIndex
	// Keys are the values looked up, as keys of the lookup table.
	Keys []KeyRef
}

// gsiLookup gives a scatter over a group with active indexes its Lookup,
// when the statement reads or writes one owner table (rel, named alias in
// the statement) and where's conjuncts pin an indexed column.
func (p *Planner) gsiLookup(pl *Plan, from []*pg.Node, rel *pg.RangeVar, where *pg.Node) {
	r := LeafRoute(pl.Root)
	if r == nil || r.Opcode != Scatter {
		return
	}
	if rel == nil {
		if len(from) != 1 {
			return
		}
		rv, ok := from[0].Node.(*pg.Node_RangeVar)
		if !ok {
			return
		}
		rel = rv.RangeVar
	}
	t := p.vs.Table(rel.Schemaname, rel.Relname)
	alias := aliasOf(rel)
	for _, c := range conjuncts(where, nil) {
		e, ok := c.Node.(*pg.Node_AExpr)
		if !ok || !isOperator(e.AExpr.Name, "=") {
			continue
		}
		col, isCol := columnOf(e.AExpr.Lexpr, alias)
		expr, isExpr := expressionOf(e.AExpr.Lexpr, alias)
		if !isCol && !isExpr {
			continue
		}
		for _, si := range t.SecondaryIndexes {
			if !si.Active || (si.Expr == nil && (!isCol || si.Column != col)) || (si.Expr != nil && (!isExpr || si.Expr.String() != expr)) {
				continue
			}
			if keys, ok := lookupKeys(e.AExpr); ok {
				pl.Lookup = &Lookup{Index: si, Keys: keys}
				return
			}
		}
	}
}

// lookupKeys reads the values of col = v, col IN (v, ...) and col =
// ANY(array).
func lookupKeys(e *pg.A_Expr) ([]KeyRef, bool) {
	switch e.Kind {
	case pg.A_Expr_Kind_AEXPR_OP:
		if v, ok := valueRef(e.Rexpr); ok {
			return []KeyRef{{Whole: &v}}, true
		}
	case pg.A_Expr_Kind_AEXPR_IN:
		l, ok := e.Rexpr.Node.(*pg.Node_List)
		if !ok {
			return nil, false
		}
		var keys []KeyRef
		for _, item := range l.List.Items {
			v, ok := valueRef(item)
			if !ok {
				return nil, false
			}
			keys = append(keys, KeyRef{Whole: &v})
		}
		return keys, len(keys) > 0
	case pg.A_Expr_Kind_AEXPR_OP_ANY:
		if v, ok := arrayValueRef(e.Rexpr); ok {
			return []KeyRef{{Array: &ArrayRef{Value: v, Whole: true}}}, true
		}
	}
	return nil, false
}

// columnOf names the column of a ColumnRef that is unqualified or
// qualified by alias.
func columnOf(n *pg.Node, alias string) (string, bool) {
	cr, ok := n.GetNode().(*pg.Node_ColumnRef)
	if !ok {
		return "", false
	}
	var parts []string
	for _, f := range cr.ColumnRef.Fields {
		s, ok := f.Node.(*pg.Node_String_)
		if !ok {
			return "", false
		}
		parts = append(parts, s.String_.Sval)
	}
	switch {
	case len(parts) == 1:
		return parts[0], true
	case len(parts) == 2 && parts[0] == alias:
		return parts[1], true
	}
	return "", false
}

// expressionOf prints an expression whose column references are all
// unqualified or qualified by alias the way keyexpr prints index
// expressions (lower(email)), to compare with an expression index's.
func expressionOf(n *pg.Node, alias string) (string, bool) {
	switch n.GetNode().(type) {
	case *pg.Node_FuncCall, *pg.Node_TypeCast, *pg.Node_AExpr:
	default:
		return "", false
	}
	ok := true
	walk(n, func(m *pg.Node) bool {
		switch m.Node.(type) {
		case *pg.Node_ColumnRef:
			if _, own := columnOf(m, alias); !own {
				ok = false
			}
		case *pg.Node_SubLink, *pg.Node_ParamRef:
			ok = false
		}
		return ok
	})
	if !ok {
		return "", false
	}
	text, err := canonicalExpression(n)
	return text, err == nil
}

// Queries returns, per lookup cluster, the query that reads the owners'
// keys of the looked-up values (one text column).
func (lk *Lookup) Queries(params []Param) (map[string]string, error) {
	si := lk.Index
	g := si.Lookup.Group
	byCluster := map[string][]string{}
	lists := listTypes{}
	add := func(key vschema.Key) error {
		s, err := g.ShardFor(key)
		if err != nil {
			return err
		}
		byCluster[s.Cluster] = append(byCluster[s.Cluster], key.String()+"::"+si.Type.String())
		return nil
	}
	for _, k := range lk.Keys {
		if k.Array != nil {
			ks, err := k.Array.elementKeys(g.Index, params)
			if err != nil {
				return nil, err
			}
			for _, key := range ks {
				if err := add(key); err != nil {
					return nil, err
				}
			}
			continue
		}
		key, ok, err := keyFor(g.Index, k, params, lists)
		if err != nil && sqlerr.Code(err) != sqlerr.NullValueNotAllowed {
			return nil, err
		}
		if ok && err == nil {
			if err := add(key); err != nil {
				return nil, err
			}
		}
	}
	out := map[string]string{}
	for c, vals := range byCluster {
		out[c] = "SELECT DISTINCT " + keyexpr.QuoteIdentifier(si.KeyColumn()) + "::text FROM " + keyexpr.QuoteIdentifier(si.Lookup.Schema) + "." + keyexpr.QuoteIdentifier(si.Lookup.Name) +
			" WHERE " + keyexpr.QuoteIdentifier(si.Column) + " IN (" + strings.Join(vals, ", ") + ")"
	}
	return out, nil
}

// Narrow keeps the targets on the clusters of the owners' keys (text, as
// the lookup tables return them). No owner: the first target alone
// answers, with no rows. One target left runs the statement as written.
func (lk *Lookup) Narrow(targets []Target, owners []string) ([]Target, error) {
	g := lk.Index.Group
	keep := map[string]bool{}
	for _, o := range owners {
		key, err := g.Index.KeyFromText(o)
		if err != nil {
			return nil, err
		}
		s, err := g.ShardFor(key)
		if err != nil {
			return nil, err
		}
		keep[s.Cluster] = true
	}
	var out []Target
	for _, t := range targets {
		if keep[t.Cluster] {
			out = append(out, t)
		}
	}
	if len(out) == 0 {
		out = targets[:1]
	}
	if len(out) == 1 {
		out = []Target{{Cluster: out[0].Cluster, Shards: out[0].Shards}}
	}
	return out, nil
}

func (lk *Lookup) explain(w *explainWriter) {
	keys := make([]string, len(lk.Keys))
	for i, k := range lk.Keys {
		keys[i] = k.render(w.params, true)
	}
	w.line(0, "Lookup %s(%s) IN (%s): owners' %s from the lookup shards, then the Route to their clusters only",
		lk.Index.Name, lk.Index.Label(), strings.Join(keys, ", "), lk.Index.KeyColumn())
}

// planLookup looks for a Lookup in a SELECT of one table, or an UPDATE or
// DELETE without FROM or USING.
func (p *Planner) planLookup(pl *Plan, stmt *pg.Node) {
	switch x := stmt.Node.(type) {
	case *pg.Node_SelectStmt:
		if s := x.SelectStmt; s.Op == pg.SetOperation_SETOP_NONE && s.WithClause == nil && s.IntoClause == nil && pl.Kind == Select {
			p.gsiLookup(pl, s.FromClause, nil, s.WhereClause)
		}
	case *pg.Node_UpdateStmt:
		if u := x.UpdateStmt; len(u.FromClause) == 0 && u.WithClause == nil {
			p.gsiLookup(pl, nil, u.Relation, u.WhereClause)
		}
	case *pg.Node_DeleteStmt:
		if d := x.DeleteStmt; len(d.UsingClause) == 0 && d.WithClause == nil {
			p.gsiLookup(pl, nil, d.Relation, d.WhereClause)
		}
	}
}
