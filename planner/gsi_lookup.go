package planner

import (
	"slices"
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
	// keyed is the statement with "AND <owner's key column> IN (...)"
	// added to its WHERE, the list a hole (nil: not rewritten), so that
	// each owner shard reads its rows by its key (keyed.go).
	keyed *keyedSQL
}

// gsiLookup gives a scatter over a group with active indexes its Lookup,
// when the statement reads or writes one owner table (rel, named alias in
// the statement) and where's conjuncts pin an indexed column.
func (p *Planner) gsiLookup(pl *Plan, stmt *pg.Node, from []*pg.Node, rel *pg.RangeVar, where *pg.Node) {
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
				if r.Shard == nil && t.KeyColumn != "" {
					pl.Lookup.keyed = newKeyedSQL(stmt, alias, t.KeyColumn, t.Group.Index.Type.String(), pl.NumParams)
				}
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

// LookupQuery is the read of one lookup cluster: SQL, the same for every
// read of the index (so a connection prepares it once), whose $1 is
// Values, the looked-up values as the text of an array.
type LookupQuery struct {
	SQL, Values string
}

// Queries returns, per lookup cluster, the query that reads the owners'
// keys of the looked-up values (one text column, a row per entry).
func (lk *Lookup) Queries(params []Param) (map[string]LookupQuery, error) {
	si := lk.Index
	g := si.Lookup.Group
	byCluster := map[string][]string{}
	lists := listTypes{}
	add := func(key vschema.Key) error {
		s, err := g.ShardFor(key)
		if err != nil {
			return err
		}
		byCluster[s.Cluster] = append(byCluster[s.Cluster], arrayElement(key))
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
	sql := "SELECT " + keyexpr.QuoteIdentifier(si.KeyColumn()) + "::text FROM " + keyexpr.QuoteIdentifier(si.Lookup.Schema) + "." + keyexpr.QuoteIdentifier(si.Lookup.Name) +
		" WHERE " + keyexpr.QuoteIdentifier(si.Column) + " = ANY($1::" + si.Type.String() + "[])"
	out := map[string]LookupQuery{}
	for c, vals := range byCluster {
		out[c] = LookupQuery{SQL: sql, Values: "{" + strings.Join(vals, ",") + "}"}
	}
	return out, nil
}

// arrayElement is key as an element of an array's text: text quoted
// with its quotes and backslashes escaped.
func arrayElement(key vschema.Key) string {
	if s, ok := key.Text(); ok {
		return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
	}
	return strings.Trim(key.String(), "'")
}

// Narrow keeps the targets on the clusters of the owners' keys (text, as
// the lookup tables return them), each with the owners' shards only and,
// when the statement could be rewritten, its WHERE narrowed to their keys
// (simple: the client's statement as written, for the simple protocol; ""
// for the extended one). No owner: the first target alone answers, with
// no rows. One target left otherwise runs the statement as written.
func (lk *Lookup) Narrow(targets []Target, owners []string, simple string) ([]Target, error) {
	return lk.narrow(targets, owners, func(t *Target, keys ownerKeys) {
		t.SQL = lk.keyed.render(keys.literals, simple)
	})
}

// NarrowBound is Narrow for a statement the client bound (numParams: its
// parameters) and the proxy prepares on the owners' clusters: a rewritten
// statement's text is the same for every execution, the owners' keys its
// last parameter (Target.Extra, an array), so that a backend connection
// prepares it once and each execution only binds it.
func (lk *Lookup) NarrowBound(targets []Target, owners []string, numParams int) ([]Target, error) {
	return lk.narrow(targets, owners, func(t *Target, keys ownerKeys) {
		t.SQL, t.Params = lk.keyed.bound, make([]int, numParams)
		for i := range t.Params {
			t.Params[i] = i
		}
		t.Extra = []byte("{" + strings.Join(keys.elements, ",") + "}")
	})
}

// ownerKeys are the owners' keys on one cluster, once each: as SQL
// literals and as elements of an array's text.
type ownerKeys struct {
	literals, elements []string
}

// narrow is Narrow with the keys put into a rewritten target by fill.
func (lk *Lookup) narrow(targets []Target, owners []string, fill func(t *Target, keys ownerKeys)) ([]Target, error) {
	g := lk.Index.Group
	keep := map[string][]string{}  // cluster -> owners' shards, in keyspace order
	keys := map[string]ownerKeys{} // cluster -> owners' keys
	seen := map[string]bool{}
	for _, o := range owners {
		key, err := g.Index.KeyFromText(o)
		if err != nil {
			return nil, err
		}
		s, err := g.ShardFor(key)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(keep[s.Cluster], s.Name) {
			keep[s.Cluster] = append(keep[s.Cluster], s.Name)
		}
		if lit := key.String(); !seen[lit] {
			seen[lit] = true
			k := keys[s.Cluster]
			k.literals, k.elements = append(k.literals, lit), append(k.elements, arrayElement(key))
			keys[s.Cluster] = k
		}
	}
	var out []Target
	for _, t := range targets {
		if shards, ok := keep[t.Cluster]; ok {
			t.Shards = onlyShards(t.Shards, shards)
			out = append(out, t)
		}
	}
	switch {
	case len(out) == 0:
		out = []Target{{Cluster: targets[0].Cluster, Shards: targets[0].Shards}}
	case lk.keyed != nil:
		for i := range out {
			out[i] = Target{Cluster: out[i].Cluster, Shards: out[i].Shards}
			fill(&out[i], keys[out[i].Cluster])
		}
	case len(out) == 1:
		out = []Target{{Cluster: out[0].Cluster, Shards: out[0].Shards}}
	}
	return out, nil
}

// onlyShards keeps of shards (a target's, in keyspace order) those in
// owners.
func onlyShards(shards, owners []string) []string {
	var out []string
	for _, s := range shards {
		if slices.Contains(owners, s) {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return owners
	}
	return out
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
			p.gsiLookup(pl, stmt, s.FromClause, nil, s.WhereClause)
		}
	case *pg.Node_UpdateStmt:
		if u := x.UpdateStmt; len(u.FromClause) == 0 && u.WithClause == nil {
			p.gsiLookup(pl, stmt, nil, u.Relation, u.WhereClause)
		}
	case *pg.Node_DeleteStmt:
		if d := x.DeleteStmt; len(d.UsingClause) == 0 && d.WithClause == nil {
			p.gsiLookup(pl, stmt, nil, d.Relation, d.WhereClause)
		}
	}
}
