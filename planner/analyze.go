package planner

import (
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"
)

// The analysis of one DML statement. It records every table occurrence
// (an instance), the query level (SELECT block) it belongs to, which
// instances are provably co-located (equated on their shard keys, directly
// or through the same key value), which conditions restrict the result to
// some keys (pins), and which constructs would need the proxy to merge
// results from several clusters. decide (route_decide.go) turns that into a
// Route or a 0A000 error.
//
// The rule behind every choice here: when in doubt, do not pin and do not
// co-locate. A missed pin costs a scatter; a wrong pin is a wrong answer.

// instance is one occurrence of a table in a statement.
type instance struct {
	id       int
	rel      *relInfo
	alias    string // the name the statement uses for it (alias or table name)
	level    *level
	nullable bool // on the nullable side of an outer join
	// rv is the table reference in the parse tree (intermediate.go
	// rewrites it to a temporary table).
	rv *pg.RangeVar
}

// derivedRel is a subquery in FROM or a CTE: its output columns that are
// plain references to table columns, so that s.customer_id can be traced
// back to orders.customer_id.
type derivedRel struct {
	level *level
	cols  map[string]colRef
}

// scopeEntry is one name a query level can qualify columns with.
type scopeEntry struct {
	alias   string
	inst    *instance
	derived *derivedRel
}

// colRef is a resolved column of a table instance.
type colRef struct {
	inst *instance
	col  string
}

// keyColumn returns the index column this table column feeds, if any.
func (c colRef) keyColumn() (string, bool) {
	if c.inst == nil || c.inst.rel.kind != relSharded {
		return "", false
	}
	ix, ok := c.inst.rel.keyCols[c.col]
	return ix, ok
}

// level is one query level: a SELECT block, a set-operation node, or the
// body of an UPDATE/DELETE/INSERT.
type level struct {
	parent   *level
	entries  []scopeEntry
	ctes     map[string]*derivedRel
	insts    []*instance
	children []*level
	// restricting is set for the levels whose WHERE restricts the
	// statement's result: the top level, the branches of a top-level set
	// operation, and subqueries in their FROM lists outside outer joins.
	restricting bool
	// pins are the key restrictions found in this level's WHERE and inner
	// join conditions (restricting conjuncts only).
	pins []pinSet
	// reason names a construct of this level that needs merging when the
	// level runs on several clusters ("ORDER BY", "aggregate", ...).
	reason string
	// correlated is set when the level is tied to an outer level by a
	// shard-key equality, so it runs within one key.
	correlated bool
	// write is set for a data-modifying level (the DML of a WITH).
	write bool
	// setOp is set for a set-operation node; its children are branches.
	setOp bool
	// derived is set for subqueries in FROM and CTEs.
	derived bool
	// cte is set for the query of a WITH entry.
	cte bool
	// top is set for the statement's own level.
	top bool
	// noFrom is set for a SELECT (or VALUES) level without FROM: it
	// has no columns an inner level's unqualified name could name.
	noFrom bool
	// target is the table an INSERT, UPDATE or DELETE level writes.
	target *instance
	// cteRefs are the CTEs this level reads in its FROM list outside
	// outer joins: their pins restrict this level too.
	cteRefs []*level
	uf      *unionFind
	// nullable is set for derived levels on the nullable side of a join.
	nullable bool
}

// pinSet is one restricting condition: the instance's key is one of keys.
type pinSet struct {
	inst *instance
	keys []KeyRef
}

// analysis holds the state for one statement.
type analysis struct {
	p      *Planner
	levels []*level
	insts  []*instance
	uf     unionFind
	// values maps a key identity to its union-find node. All value nodes
	// belong to the one group a valid statement touches; a mix of groups
	// is refused before they matter.
	values  map[string]int
	levelOf map[*pg.SelectStmt]*level
	inserts map[*level]*insertInfo
	// inLists are the IN lists that pinned keys (see listPins).
	inLists []inListSource
	// allowMerge lets decide leave reasons of the top level that merge
	// primitives handle to the caller (buildSelect).
	allowMerge bool
	// topMerge lists the top level's reasons left to the merge
	// primitives ("ORDER BY, LIMIT"); "" when nothing needs merging.
	topMerge string
	err      error
	// gsiStmt is the one write statement allowed to target a table with
	// secondary indexes (gsi.go).
	gsiStmt any
	// filters are the key conditions of every level's WHERE (and inner
	// join ON), restricting or not; ties the key equalities between
	// instances (unpartitioned.go).
	filters []levelPin
	ties    []keyTie
	// keyMove: the top-level UPDATE changes its target's shard key (its
	// rows move: key_move.go).
	keyMove bool
}

func newAnalysis(p *Planner) *analysis {
	return &analysis{p: p, values: map[string]int{}, levelOf: map[*pg.SelectStmt]*level{}, inserts: map[*level]*insertInfo{}}
}

func (a *analysis) fail(err error) {
	if a.err == nil {
		a.err = err
	}
}

func (a *analysis) newLevel(parent *level) *level {
	l := &level{parent: parent, top: parent == nil, uf: &a.uf}
	if parent != nil {
		parent.children = append(parent.children, l)
	}
	a.levels = append(a.levels, l)
	return l
}

// addInstance registers a table occurrence in level l.
func (a *analysis) addInstance(l *level, rv *pg.RangeVar, nullable bool) *instance {
	rel := a.p.lookup(rv.Schemaname, rv.Relname)
	inst := &instance{id: a.uf.add(), rel: rel, level: l, nullable: nullable, rv: rv}
	inst.alias = rv.Relname
	if rv.Alias != nil && rv.Alias.Aliasname != "" {
		inst.alias = rv.Alias.Aliasname
	}
	l.insts = append(l.insts, inst)
	l.entries = append(l.entries, scopeEntry{alias: inst.alias, inst: inst})
	a.insts = append(a.insts, inst)
	return inst
}

// valueNode returns the union-find node standing for one key value.
func (a *analysis) valueNode(k KeyRef) int {
	id := k.identity()
	if n, ok := a.values[id]; ok {
		return n
	}
	n := a.uf.add()
	a.values[id] = n
	return n
}

// cte looks a WITH name up from level l outwards.
func (l *level) lookupCTE(name string) *derivedRel {
	for s := l; s != nil; s = s.parent {
		if d, ok := s.ctes[name]; ok {
			return d
		}
	}
	return nil
}

// resolveColumn resolves a column reference to a table instance's column.
// Qualified references search the levels outwards, as Postgres does.
// An unqualified name resolves only when exactly one relation of the
// innermost level has it as a shard-key column: Postgres would then pick
// that relation too (or fail with "ambiguous column"). Anything else is
// unresolved, which only ever costs a pin, never correctness.
func (l *level) resolveColumn(cr *pg.ColumnRef) (colRef, bool) {
	var names []string
	for _, f := range cr.Fields {
		s, ok := f.Node.(*pg.Node_String_)
		if !ok {
			return colRef{}, false // a.* and friends
		}
		names = append(names, s.String_.Sval)
	}
	switch len(names) {
	case 0:
		return colRef{}, false
	case 1:
		return l.resolveUnqualified(names[0])
	}
	col := names[len(names)-1]
	qual := names[len(names)-2]
	for s := l; s != nil; s = s.parent {
		for _, e := range s.entries {
			if e.alias != qual {
				continue
			}
			if e.inst != nil {
				if len(names) >= 3 && e.inst.rel.schema != names[len(names)-3] {
					continue
				}
				return colRef{inst: e.inst, col: col}, true
			}
			c, ok := e.derived.cols[col]
			return c, ok
		}
	}
	return colRef{}, false
}

// Several candidates are accepted when they are all co-located by key
// equalities (JOIN ... USING (customer_id) merges the columns, and equal
// keys are one value anyway); otherwise Postgres reports the name as
// ambiguous.
func (l *level) resolveUnqualified(col string) (colRef, bool) {
	var found []colRef
	for _, e := range l.entries {
		if e.inst != nil {
			if _, ok := e.inst.rel.keyCols[col]; ok && e.inst.rel.kind == relSharded {
				found = append(found, colRef{inst: e.inst, col: col})
			}
			continue
		}
		if c, ok := e.derived.cols[col]; ok {
			if _, isKey := c.keyColumn(); isKey {
				found = append(found, c)
			}
		}
	}
	if len(found) == 0 {
		return colRef{}, false
	}
	for _, c := range found[1:] {
		if l.uf.find(c.inst.id) != l.uf.find(found[0].inst.id) {
			return colRef{}, false
		}
	}
	return found[0], true
}

// isKeyRef reports whether n is a shard-key column of a sharded instance.
func (l *level) keyColumnRef(n *pg.Node) (colRef, bool) {
	cr, ok := n.GetNode().(*pg.Node_ColumnRef)
	if !ok {
		return colRef{}, false
	}
	c, ok := l.resolveColumn(cr.ColumnRef)
	if !ok {
		return colRef{}, false
	}
	if _, isKey := c.keyColumn(); !isKey {
		return colRef{}, false
	}
	return c, true
}

// valueRef recognises a key value: a literal or parameter, possibly under
// a sign and casts to the types a key value may pass through (integers,
// numeric, real, double precision, text, varchar, uuid; see castTarget).
func valueRef(n *pg.Node) (ValueRef, bool) {
	switch x := n.GetNode().(type) {
	case *pg.Node_ParamRef:
		return ValueRef{Param: int(x.ParamRef.Number)}, true
	case *pg.Node_AConst:
		c := x.AConst
		if c.Isnull {
			return ValueRef{Null: true}, true
		}
		switch v := c.Val.(type) {
		case *pg.A_Const_Ival:
			return ValueRef{Literal: itoa(int(v.Ival.Ival)), Int: true}, true
		case *pg.A_Const_Fval:
			s := v.Fval.Fval
			isInt := isDigits(strings.TrimPrefix(s, "-"))
			return ValueRef{Literal: s, Int: isInt, numeric: !isInt}, true
		case *pg.A_Const_Sval:
			return ValueRef{Literal: v.Sval.Sval}, true
		}
		return ValueRef{}, false
	case *pg.Node_TypeCast:
		to, ok := castTarget(x.TypeCast.TypeName)
		if !ok {
			return ValueRef{}, false
		}
		v, ok := valueRef(x.TypeCast.Arg)
		if !ok {
			return ValueRef{}, false
		}
		v.ops = append(v.ops[:len(v.ops):len(v.ops)], valueOp{to: to, name: castName(to, x.TypeCast.TypeName)})
		return v, true
	case *pg.Node_AExpr:
		e := x.AExpr
		if e.Kind != pg.A_Expr_Kind_AEXPR_OP || e.Lexpr != nil || len(e.Name) != 1 {
			return ValueRef{}, false
		}
		op := stringValue(e.Name[0])
		v, ok := valueRef(e.Rexpr)
		if !ok || v.Null || !(v.Int || v.numeric || v.Param > 0 || len(v.ops) > 0) {
			return ValueRef{}, false
		}
		if t, known := v.staticType(); known && !t.isNumber() && t != typeUnknown {
			return ValueRef{}, false // -'5'::text: no such operator
		}
		switch {
		case op == "+":
			return v, true
		case op == "-" && len(v.ops) == 0:
			v.Negate = !v.Negate
			return v, true
		case op == "-":
			v.ops = append(v.ops[:len(v.ops):len(v.ops)], valueOp{negate: true})
			return v, true
		}
	}
	return ValueRef{}, false
}

// castName is the name EXPLAIN shows for a cast: the SQL name of its type
// (bigint for int8), varchar as written.
func castName(to sqlType, t *pg.TypeName) string {
	if stringValue(t.Names[len(t.Names)-1]) == "varchar" {
		return "varchar"
	}
	return to.String()
}

// valuePreservingCast reports a cast a key value may pass through.
func valuePreservingCast(t *pg.TypeName) bool {
	_, ok := castTarget(t)
	return ok
}

func stringValue(n *pg.Node) string {
	if s, ok := n.GetNode().(*pg.Node_String_); ok {
		return s.String_.Sval
	}
	return ""
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return true
}

func isNumeric(s string) bool {
	s = strings.TrimPrefix(s, "-")
	return s != "" && plainDecimal(s) && isDigit(s[0])
}

func itoa(n int) string {
	var b strings.Builder
	if n < 0 {
		b.WriteByte('-')
		n = -n
	}
	writeInt(&b, n)
	return b.String()
}

// unionFind is the co-location relation over instances and key values.
type unionFind struct{ parent []int }

func (u *unionFind) add() int {
	u.parent = append(u.parent, len(u.parent))
	return len(u.parent) - 1
}

func (u *unionFind) find(x int) int {
	for u.parent[x] != x {
		u.parent[x] = u.parent[u.parent[x]]
		x = u.parent[x]
	}
	return x
}

func (u *unionFind) union(x, y int) { u.parent[u.find(x)] = u.find(y) }
