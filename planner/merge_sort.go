package planner

import (
	"strconv"
	"strings"
)

// SortKey is one ORDER BY key of a merge: which column of the input rows
// holds the key, and how Postgres orders it.
type SortKey struct {
	// Column is the 0-based column of the input rows. For a Route's rows
	// a negative value -k-1 names its k-th hidden column (counted after
	// all visible columns, whose number SELECT * leaves unknown until the
	// shards answer).
	Column     int
	Desc       bool
	NullsFirst bool
	// Collation is the collation an explicit COLLATE on the key names
	// ("C"); "" when the column's own (or the database's) applies, and
	// "?" when a COLLATE sits inside the key's expression, where the
	// proxy cannot tell what it does.
	Collation string
	// Expr is the key as written, for EXPLAIN.
	Expr string
}

func (k SortKey) String() string {
	var b strings.Builder
	b.WriteString(k.Expr)
	if k.Collation != "" && k.Collation != "?" && !strings.Contains(strings.ToUpper(k.Expr), "COLLATE") {
		b.WriteString(" COLLATE " + strconv.Quote(k.Collation))
	}
	if k.Desc {
		b.WriteString(" DESC")
	}
	switch {
	case k.NullsFirst && !k.Desc:
		b.WriteString(" NULLS FIRST")
	case !k.NullsFirst && k.Desc:
		b.WriteString(" NULLS LAST")
	}
	b.WriteString(" (" + columnName(k.Column) + ")")
	return b.String()
}

// columnName renders a SortKey column for EXPLAIN: col 2, hidden 1.
func columnName(c int) string {
	if c < 0 {
		return "hidden " + strconv.Itoa(-c)
	}
	return "col " + strconv.Itoa(c+1)
}

func sortKeysString(keys []SortKey) string {
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k.String()
	}
	return strings.Join(parts, ", ")
}

// MergeSort merges the shards' answers, each already sorted by Keys (the
// shard statement keeps the ORDER BY), into one sorted stream: a k-way
// merge holding one row per shard, so memory is bounded by the number of
// shards, not rows.
type MergeSort struct {
	Input *Route
	Keys  []SortKey
}

// Name implements Primitive.
func (m *MergeSort) Name() string { return "MergeSort" }

// Inputs implements Primitive.
func (m *MergeSort) Inputs() []Primitive { return []Primitive{m.Input} }

func (m *MergeSort) mode() RouteMode { return ModeMerge }

func (m *MergeSort) targets(pl *Plan, params []Param) ([]Target, error) {
	return m.Input.targets(pl, params)
}

func (m *MergeSort) explain(w *explainWriter, pl *Plan, depth int) {
	w.line(depth, "MergeSort keys=%s", sortKeysString(m.Keys))
	m.Input.explain(w, pl, depth+1)
}

// LeafRoute returns the Route at the bottom of a merge plan (or p itself
// if it is a Route), nil for other primitives.
func LeafRoute(p Primitive) *Route {
	for p != nil {
		if r, ok := p.(*Route); ok {
			return r
		}
		in := p.Inputs()
		if len(in) != 1 {
			return nil
		}
		p = in[0]
	}
	return nil
}
