package planner

import (
	"strconv"
	"strings"
	"unicode/utf8"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/shardgate/shardgate/keyexpr"
)

// An OR of key equalities (aid = 1 OR aid = 2 OR ...) pins its route to
// the keys of its branches like an IN list, and is cut down the same way:
// each cluster gets only the branches whose key lives there. That is exact
// only when every branch pins the instance to exactly one key — then a
// row a branch matches has that key, and lives on that key's cluster; an
// OR with a branch pinning several keys (an IN list inside), none (a NULL,
// another column) or another instance is sent whole.

// orPins remembers the OR node c as a list source for the instance its
// branches each pin to one key (single), so that a route pinned by it is
// pruned (inListOf, pruneIN). The node itself is replaced by the marker:
// the template's hole renders the chosen branches joined by OR, in
// parentheses.
func (a *analysis) orPins(c *pg.Node, out map[*instance][]KeyRef, single map[*instance]bool) {
	b, ok := c.Node.(*pg.Node_BoolExpr)
	if !ok || len(out) != 1 {
		return
	}
	for inst, keys := range out {
		if !single[inst] || len(keys) != len(b.BoolExpr.Args) {
			return
		}
		orig := b
		a.inLists = append(a.inLists, inListSource{keys: keys, items: b.BoolExpr.Args, or: true, replace: func(items []*pg.Node) {
			if len(items) == 1 && isMarker(items[0]) {
				c.Node = items[0].Node
				return
			}
			orig.BoolExpr.Args = items
			c.Node = orig
		}})
	}
}

// isMarker reports whether n is one of the shard template's markers.
func isMarker(n *pg.Node) bool {
	cr, ok := n.Node.(*pg.Node_ColumnRef)
	if !ok || len(cr.ColumnRef.Fields) != 1 {
		return false
	}
	switch stringValue(cr.ColumnRef.Fields[0]) {
	case markerInList, markerLimit:
		return true
	}
	return false
}

// pruneWrite cuts the IN list or OR that pins an UPDATE or DELETE on
// several clusters down to each cluster's keys, as pruneIN does for a
// read: a cluster holds only the rows of its own keys, so it matches the
// same rows. Writes with secondary-index or key-move work (Plan.GSI) run
// their own statements and are left whole.
func (a *analysis) pruneWrite(pl *Plan, stmt *pg.Node) {
	r, ok := pl.Root.(*Route)
	if !ok || pl.GSI != nil || r.Opcode != IN || len(r.Group.Clusters) < 2 || r.MergeReason != "" {
		return
	}
	if in := a.inListOf(r.Keys); in != nil {
		a.p.pruneIN(stmt, r, in)
	}
}

// itemClusters is the cluster each item of a pruned list goes to ("" for
// an item no key can equal: a NULL, 7.5 for an integer key).
func (r *Route) itemClusters(params []Param) ([]string, error) {
	clusterOf := make([]string, len(r.Keys))
	lists := listTypes{}
	for i, k := range r.Keys {
		if k.hasNull() {
			continue
		}
		s, err := shardForKey(r.Group, k, params, lists)
		if err != nil {
			return nil, err
		}
		if s != nil {
			clusterOf[i] = s.Cluster
		}
	}
	return clusterOf, nil
}

// listKind names what a pruned template cuts, for EXPLAIN.
func (sh *ShardSQL) listKind() string {
	switch {
	case sh.or:
		return "OR"
	case sh.array:
		return "ANY array"
	}
	return "IN list"
}

// explainItems says, when the keys can be evaluated, how many of the
// pruned list's items each cluster gets: "pg0: 4987 of 10000 values".
func (r *Route) explainItems(w *explainWriter, depth int) {
	if !w.resolvable(r.Keys) {
		return
	}
	itemClusters := r.itemClusters
	if r.anyCut {
		itemClusters = r.arrayClusters
	}
	clusterOf, err := itemClusters(w.params)
	if err != nil {
		return // the shards line said why
	}
	n := map[string]int{}
	for _, c := range clusterOf {
		n[c]++
	}
	for _, c := range r.Group.Clusters {
		if n[c] > 0 {
			w.line(depth, "%s: %d of %d values", c, n[c], len(clusterOf))
		}
	}
}

// explainKeysShown is how many keys EXPLAIN lists before it only counts.
const explainKeysShown = 20

// explainKeys lists a route's keys, the first explainKeysShown of a long
// list and then how many there are.
func explainKeys(keys []KeyRef, params []Param, plain bool) string {
	shown := keys
	if len(keys) > explainKeysShown {
		shown = keys[:explainKeysShown]
	}
	out := make([]string, len(shown))
	for i, k := range shown {
		out[i] = k.render(params, plain)
	}
	s := strings.Join(out, ", ")
	if len(shown) < len(keys) {
		s += ", … (" + strconv.Itoa(len(keys)) + " keys)"
	}
	return s
}

// explainSQLShown is how much of a statement EXPLAIN prints.
const explainSQLShown = 2000

// explainSQL is a statement on one line, cut after explainSQLShown bytes
// (at a character boundary) with its length said.
func explainSQL(sql string) string {
	s := oneLine(sql)
	if len(s) <= explainSQLShown {
		return s
	}
	cut := explainSQLShown
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + " … (" + strconv.Itoa(len(s)) + " characters)"
}

// itemText prints the commonest items of a long list without a deparse
// (a call into the C parser each): a constant, a parameter, or a branch
// column = constant of an OR. ok is false for anything else, which the
// caller deparses.
func itemText(n *pg.Node) (string, bool) {
	switch x := n.Node.(type) {
	case *pg.Node_AConst:
		c := x.AConst
		if c.Isnull {
			return "NULL", true
		}
		switch v := c.Val.(type) {
		case *pg.A_Const_Ival:
			return strconv.FormatInt(int64(v.Ival.Ival), 10), true
		case *pg.A_Const_Fval:
			return v.Fval.Fval, true
		case *pg.A_Const_Sval:
			return "'" + strings.ReplaceAll(v.Sval.Sval, "'", "''") + "'", true
		}
	case *pg.Node_ParamRef:
		return "$" + strconv.Itoa(int(x.ParamRef.Number)), true
	case *pg.Node_ColumnRef:
		parts := make([]string, len(x.ColumnRef.Fields))
		for i, f := range x.ColumnRef.Fields {
			s, ok := f.Node.(*pg.Node_String_)
			if !ok {
				return "", false // a.*
			}
			parts[i] = keyexpr.QuoteIdentifier(s.String_.Sval)
		}
		return strings.Join(parts, "."), true
	case *pg.Node_AExpr:
		e := x.AExpr
		if e.Kind != pg.A_Expr_Kind_AEXPR_OP || len(e.Name) != 1 || stringValue(e.Name[0]) != "=" {
			return "", false
		}
		l, lok := itemText(e.Lexpr)
		r, rok := itemText(e.Rexpr)
		if !lok || !rok {
			return "", false
		}
		return l + " = " + r, true
	}
	return "", false
}
