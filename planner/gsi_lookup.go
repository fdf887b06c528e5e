package planner

import (
	"slices"
	"strconv"
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
	// Parts, for an index over several columns, are the values of its
	// columns (one each, Whole) whose composite is looked up (Keys empty).
	Parts []KeyRef
	// keyed is the statement with "AND <owner's key column> IN (...)"
	// added to its WHERE, the list a hole (nil: not rewritten), so that
	// each owner shard reads its rows by its key (keyed.go).
	keyed *keyedSQL
	// sql are the reads of the lookup table (LookupQuery.SQL) of one
	// value and of several, id their IDs.
	sql, id [2]string
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
	keyed := func() {
		for i, many := range []bool{false, true} {
			pl.Lookup.sql[i] = lookupSQL(pl.Lookup.Index, many)
			pl.Lookup.id[i] = "\x00gsi\x00" + pl.Lookup.sql[i]
		}
		if r.Shard == nil && t.KeyColumn != "" {
			pl.Lookup.keyed = newKeyedSQL(stmt, alias, t.KeyColumn, t.Group.Index.Type.String(), pl.NumParams)
		}
	}
	if parts, si := compositeParts(t, where, alias); si != nil {
		pl.Lookup = &Lookup{Index: si, Parts: parts}
		keyed()
		return
	}
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
				keyed()
				return
			}
		}
	}
}

// compositeParts finds an active index over several columns of t whose
// every column the conjuncts of where pin with col = v (v a literal or a
// parameter), and returns the values in the index's column order.
func compositeParts(t *vschema.Table, where *pg.Node, alias string) ([]KeyRef, *vschema.SecondaryIndex) {
	pinned := map[string]KeyRef{}
	for _, c := range conjuncts(where, nil) {
		e, ok := c.Node.(*pg.Node_AExpr)
		if !ok || !isOperator(e.AExpr.Name, "=") || e.AExpr.Kind != pg.A_Expr_Kind_AEXPR_OP {
			continue
		}
		col, isCol := columnOf(e.AExpr.Lexpr, alias)
		v, isVal := valueRef(e.AExpr.Rexpr)
		if isCol && isVal {
			pinned[col] = KeyRef{Whole: &v}
		}
	}
	for _, si := range t.SecondaryIndexes {
		if !si.Active || len(si.Columns) == 0 {
			continue
		}
		parts := make([]KeyRef, 0, len(si.Columns))
		for _, c := range si.Columns {
			if k, ok := pinned[c]; ok {
				parts = append(parts, k)
			}
		}
		if len(parts) == len(si.Columns) {
			return parts, si
		}
	}
	return nil, nil
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
// read of the index with as many values (so a connection prepares it
// once, under ID in its prepared statements), whose $1 is Values: the
// looked-up value's text, or the text of an array of several.
type LookupQuery struct {
	Cluster, SQL, ID string
	Values           []byte
	keys             []vschema.Key
}

// lookupSQL reads the owners' keys of a value ($1; many: an array of
// values) from si's lookup table. One value has a text of its own so
// that Postgres's plan cache settles on a generic plan.
func lookupSQL(si *vschema.SecondaryIndex, many bool) string {
	rhs := "$1::" + si.Type.String()
	if many {
		rhs = "ANY(" + rhs + "[])"
	}
	return "SELECT " + keyexpr.QuoteIdentifier(si.KeyColumn()) + "::text FROM " + keyexpr.QuoteIdentifier(si.Lookup.Schema) + "." + keyexpr.QuoteIdentifier(si.Lookup.Name) +
		" WHERE " + keyexpr.QuoteIdentifier(si.Column) + " = " + rhs
}

// Queries returns, per lookup cluster, the query that reads the owners'
// keys of the looked-up values (one text column, a row per entry).
func (lk *Lookup) Queries(params []Param) ([]LookupQuery, error) {
	si := lk.Index
	g := si.Lookup.Group
	var out []LookupQuery
	add := func(key vschema.Key) error {
		s, err := g.ShardFor(key)
		if err != nil {
			return err
		}
		i := 0
		for i < len(out) && out[i].Cluster != s.Cluster {
			i++
		}
		if i == len(out) {
			out = append(out, LookupQuery{Cluster: s.Cluster})
		}
		out[i].keys = append(out[i].keys, key)
		return nil
	}
	lists := listTypes{}
	if len(lk.Parts) > 0 {
		keys := make([]vschema.Key, len(lk.Parts))
		for i, k := range lk.Parts {
			ix := &vschema.Index{Name: si.Name, Column: si.Columns[i], Type: si.ColumnTypes[i]}
			key, ok, err := keyFor(ix, k, params, lists)
			if err != nil && sqlerr.Code(err) != sqlerr.NullValueNotAllowed {
				return nil, err
			}
			if !ok || err != nil { // a NULL part: no row has the value
				keys = nil
				break
			}
			keys[i] = key
		}
		if keys != nil {
			if err := add(vschema.TextKey(vschema.Composite(keys))); err != nil {
				return nil, err
			}
		}
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
	for i := range out {
		q := &out[i]
		q.SQL, q.ID, q.Values = lk.sql[0], lk.id[0], appendKeyText(nil, q.keys[0])
		if len(q.keys) > 1 {
			q.SQL, q.ID, q.Values = lk.sql[1], lk.id[1], appendArray(nil, q.keys)
		}
	}
	return out, nil
}

// appendKeyText appends key's text, as a parameter's value.
func appendKeyText(dst []byte, key vschema.Key) []byte {
	if s, ok := key.Text(); ok {
		return append(dst, s...)
	}
	return appendArrayElement(dst, key)
}

// appendArrayElement appends key as an element of an array's text: text
// quoted with its quotes and backslashes escaped.
func appendArrayElement(dst []byte, key vschema.Key) []byte {
	if i, ok := key.Int(); ok {
		return strconv.AppendInt(dst, i, 10)
	}
	s, ok := key.Text()
	if !ok {
		return append(dst, strings.Trim(key.String(), "'")...)
	}
	return appendQuotedElement(dst, s)
}

// Narrow keeps the targets on the clusters of the owners' keys (text, as
// the lookup tables return them), each with the owners' shards only and,
// when the statement could be rewritten, its WHERE narrowed to their keys
// (simple: the client's statement as written, for the simple protocol; ""
// for the extended one). No owner: the first target alone answers, with
// no rows. One target left otherwise runs the statement as written.
func (lk *Lookup) Narrow(targets []Target, owners []string, simple string) ([]Target, error) {
	return lk.narrow(targets, owners, func(t *Target, keys ownerKeys) {
		lits := make([]string, len(keys.keys))
		for i, k := range keys.keys {
			lits[i] = k.String()
		}
		t.SQL = lk.keyed.render(lits, simple)
	})
}

// NarrowBound is Narrow for a statement the client bound (numParams: its
// parameters) and the proxy prepares on the owners' clusters: a rewritten
// statement's text is the same for every execution, the owners' keys its
// last parameter (Target.Extra: one key's text, or an array of several),
// so that a backend connection prepares it once and each execution only
// binds it.
func (lk *Lookup) NarrowBound(targets []Target, owners []string, numParams int) ([]Target, error) {
	return lk.narrow(targets, owners, func(t *Target, keys ownerKeys) {
		t.Params = make([]int, numParams)
		for i := range t.Params {
			t.Params[i] = i
		}
		t.SQL, t.Extra = lk.keyed.bound[0], appendKeyText(nil, keys.keys[0])
		if len(keys.keys) > 1 {
			t.SQL, t.Extra = lk.keyed.bound[1], appendArray(nil, keys.keys)
		}
	})
}

// appendArray appends the text of an array of keys.
func appendArray(dst []byte, keys []vschema.Key) []byte {
	dst = append(dst, '{')
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendArrayElement(dst, k)
	}
	return append(dst, '}')
}

// ownerKeys are the owners on one cluster: their shards (in keyspace
// order) and their keys, once each.
type ownerKeys struct {
	cluster string
	shards  []string
	keys    []vschema.Key
}

// clusterKeys is the owners of on on cluster (nil: none).
func clusterKeys(on []ownerKeys, cluster string) *ownerKeys {
	for i := range on {
		if on[i].cluster == cluster {
			return &on[i]
		}
	}
	return nil
}

// narrow is Narrow with the keys put into a rewritten target by fill.
func (lk *Lookup) narrow(targets []Target, owners []string, fill func(t *Target, keys ownerKeys)) ([]Target, error) {
	g := lk.Index.Group
	var buf [1]ownerKeys
	on := buf[:0] // per cluster, usually one
	for _, o := range owners {
		key, err := g.Index.KeyFromText(o)
		if err != nil {
			return nil, err
		}
		s, err := g.ShardFor(key)
		if err != nil {
			return nil, err
		}
		c := clusterKeys(on, s.Cluster)
		if c == nil {
			on = append(on, ownerKeys{cluster: s.Cluster})
			c = &on[len(on)-1]
		}
		if !slices.Contains(c.shards, s.Name) {
			c.shards = append(c.shards, s.Name)
		}
		if !slices.Contains(c.keys, key) {
			c.keys = append(c.keys, key)
		}
	}
	var out []Target
	for _, t := range targets {
		if c := clusterKeys(on, t.Cluster); c != nil {
			t.Shards = onlyShards(t.Shards, c.shards)
			out = append(out, t)
		}
	}
	switch {
	case len(out) == 0:
		out = []Target{{Cluster: targets[0].Cluster, Shards: targets[0].Shards}}
	case lk.keyed != nil:
		for i := range out {
			out[i] = Target{Cluster: out[i].Cluster, Shards: out[i].Shards}
			fill(&out[i], *clusterKeys(on, out[i].Cluster))
		}
	case len(out) == 1:
		out = []Target{{Cluster: out[0].Cluster, Shards: out[0].Shards}}
	}
	return out, nil
}

// onlyShards keeps of shards (a target's, in keyspace order) those in
// owners.
func onlyShards(shards, owners []string) []string {
	if len(owners) == 1 {
		return owners // one shard: in keyspace order already
	}
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
	if len(lk.Parts) > 0 { // one composite of the columns' values
		parts := make([]string, len(lk.Parts))
		for i, k := range lk.Parts {
			parts[i] = k.render(w.params, true)
		}
		keys = []string{"(" + strings.Join(parts, ", ") + ")"}
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
