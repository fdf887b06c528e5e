package planner

import (
	"strconv"
	"strings"
)

// AggFunc is an aggregate the proxy can combine from per-shard partial
// results.
type AggFunc uint8

const (
	AggCount   AggFunc = iota + 1 // count(*), count(x): the sum of the shards' counts
	AggSum                        // sum(x): the sum of the shards' sums, in the type they return
	AggMin                        // min(x)
	AggMax                        // max(x)
	AggAvg                        // avg(x): shards send sum(x) and count(x); the proxy divides
	AggBoolAnd                    // bool_and(x), every(x)
	AggBoolOr                     // bool_or(x)
	AggBitAnd                     // bit_and(x) of integers
	AggBitOr                      // bit_or(x) of integers
	// The variances and standard deviations of integer or numeric
	// arguments, from the shards' count(x), sum(x::numeric) and
	// sum(x::numeric * x::numeric), as numeric_stddev_internal computes
	// them.
	AggVarSamp
	AggVarPop
	AggStddevSamp
	AggStddevPop
)

var aggNames = [...]string{AggCount: "count", AggSum: "sum", AggMin: "min", AggMax: "max", AggAvg: "avg", AggBoolAnd: "bool_and", AggBoolOr: "bool_or", AggBitAnd: "bit_and", AggBitOr: "bit_or",
	AggVarSamp: "var_samp", AggVarPop: "var_pop", AggStddevSamp: "stddev_samp", AggStddevPop: "stddev_pop"}

// Variance reports the variance and standard deviation aggregates.
func (f AggFunc) Variance() bool { return f >= AggVarSamp && f <= AggStddevPop }

func (f AggFunc) String() string {
	if int(f) < len(aggNames) && aggNames[f] != "" {
		return aggNames[f]
	}
	return "agg(?)"
}

// AggSpec is one aggregate to combine: the shard column holding each
// shard's partial result (and, for avg, the count).
type AggSpec struct {
	Func  AggFunc
	Col   int // shard column of the partial (avg, variances: sum(x))
	Count int // avg, variances: shard column of count(x); -1 otherwise
	// Square is the shard column of sum(x::numeric * x::numeric) for the
	// variances.
	Square int
	// Collation is an explicit COLLATE of min/max's argument, as in
	// SortKey.
	Collation string
	Expr      string
	// Distinct is the shard column of x for count, sum and avg(DISTINCT
	// x), -1 otherwise: the shards group by x too and send the aggregate
	// of each value once; the proxy adds each value's partial once per
	// group.
	Distinct int
}

// AggOutput is one column of an Aggregate's result: an aggregate, or a
// shard column whose value the group determines (a GROUP BY expression or
// anything computed from one), taken from the first shard row of the
// group.
type AggOutput struct {
	Agg int // index into Aggregate.Aggs; -1 for a shard column
	Col int // shard column when Agg < 0 and Expr is nil
	// Expr is an expression over aggregates and group values the proxy
	// evaluates (Agg is -1).
	Expr *PostExpr
}

// Aggregate combines the shards' partial aggregates, group by group, in a
// hash table: memory is bounded by the number of groups. Without GROUP BY
// (Group empty) there is one group, and no row at all when no shard
// returned one (HAVING filtered every shard).
type Aggregate struct {
	Input *Route
	// Group are the shard columns whose values identify a group.
	Group []int
	// AliasGroup, when not nil, has for each Group entry written as an
	// output column's alias the shard column of that output (-1 for the
	// others): the key when the Group column comes back of type
	// ScopeTypeOID, i.e. the name is not an input column (merge_alias.go).
	AliasGroup []int
	Aggs       []AggSpec
	// Outputs are the rows the Aggregate produces: the client's columns,
	// then Hidden more that only Sort reads.
	Outputs []AggOutput
	Hidden  int
	// ShardColumns is the number of columns of the shard statement.
	ShardColumns int
	// Having filters combined groups; nil for none. Conditions without
	// aggregates stay in the shards' HAVING.
	Having *Predicate
	// Scalar is an aggregate without GROUP BY whose shard statement groups
	// (by the arguments of DISTINCT aggregates): it returns one row even
	// when no shard returns any.
	Scalar bool
}

// Name implements Primitive.
func (a *Aggregate) Name() string { return "Aggregate" }

// Inputs implements Primitive.
func (a *Aggregate) Inputs() []Primitive { return []Primitive{a.Input} }

func (a *Aggregate) mode() RouteMode { return ModeMerge }

func (a *Aggregate) targets(pl *Plan, params []Param) ([]Target, error) {
	return a.Input.targets(pl, params)
}

func (a *Aggregate) explain(w *explainWriter, pl *Plan, depth int) {
	s := "Aggregate"
	if len(a.Group) > 0 {
		cols := make([]string, len(a.Group))
		for i, c := range a.Group {
			cols[i] = columnName(c)
		}
		s += " group=(" + strings.Join(cols, ", ") + ")"
	}
	aggs := make([]string, len(a.Aggs))
	for i, g := range a.Aggs {
		aggs[i] = g.Func.String() + "("
		if g.Distinct >= 0 {
			aggs[i] += "DISTINCT " + columnName(g.Distinct) + ": "
		}
		aggs[i] += columnName(g.Col)
		if g.Func == AggAvg {
			aggs[i] += " / " + columnName(g.Count)
		}
		if g.Func.Variance() {
			aggs[i] += ", " + columnName(g.Square) + ", " + columnName(g.Count)
		}
		aggs[i] += ")"
	}
	s += " aggs=(" + strings.Join(aggs, ", ") + ")"
	outs := make([]string, len(a.Outputs))
	for i, o := range a.Outputs {
		if o.Expr != nil {
			outs[i] = o.Expr.String()
		} else if o.Agg >= 0 {
			outs[i] = "agg " + strconv.Itoa(o.Agg+1)
		} else {
			outs[i] = columnName(o.Col)
		}
	}
	s += " outputs=(" + strings.Join(outs, ", ") + ")"
	if a.Hidden > 0 {
		s += " hidden=" + strconv.Itoa(a.Hidden)
	}
	if a.Scalar {
		s += " scalar"
	}
	w.line(depth, "%s", s)
	for i, c := range a.AliasGroup {
		if c >= 0 {
			w.line(depth+1, "alias: %s, or %s when the shards return it as void (the name is not an input column)", columnName(a.Group[i]), columnName(c))
		}
	}
	if a.Having != nil {
		w.line(depth+1, "having: %s", a.Having.String())
	}
	a.Input.explain(w, pl, depth+1)
}

// PredOp is the kind of a Predicate node.
type PredOp uint8

const (
	PredAnd PredOp = iota + 1
	PredOr
	PredNot
	PredCompare // Left Cmp Right
	PredIsNull
	PredIsNotNull
)

// Predicate is a HAVING condition the proxy evaluates on combined groups,
// with SQL's three-valued logic: comparisons of aggregates and group
// values with literals and parameters, under AND, OR and NOT.
type Predicate struct {
	Op   PredOp
	Args []*Predicate // And, Or, Not
	// Cmp is the comparison operator: =, <>, <, <=, >, >=.
	Cmp         string
	Left, Right Operand // Compare; IsNull and IsNotNull use Left
}

// Operand is one side of a comparison.
type Operand struct {
	Agg   int       // index into Aggregate.Aggs, or -1
	Col   int       // shard column, when Agg < 0 and Value and Expr are nil
	Value *ValueRef // a literal or parameter
	Expr  *PostExpr // an expression over aggregates
	// Quoted marks a string literal: like Postgres's unknown-type
	// constant, it takes the other side's type. Other literals are
	// numbers (or true/false) and compare as such.
	Quoted bool
}

func (o Operand) String() string {
	switch {
	case o.Value != nil && !o.Quoted && o.Value.Param == 0 && !o.Value.Null:
		if o.Value.Negate {
			return "-" + o.Value.Literal
		}
		return o.Value.Literal
	case o.Value != nil:
		return o.Value.String()
	case o.Expr != nil:
		return o.Expr.String()
	case o.Agg >= 0:
		return "agg " + strconv.Itoa(o.Agg+1)
	}
	return columnName(o.Col)
}

func (p *Predicate) String() string {
	switch p.Op {
	case PredAnd, PredOr:
		op := " AND "
		if p.Op == PredOr {
			op = " OR "
		}
		parts := make([]string, len(p.Args))
		for i, a := range p.Args {
			parts[i] = a.String()
		}
		return "(" + strings.Join(parts, op) + ")"
	case PredNot:
		return "NOT " + p.Args[0].String()
	case PredIsNull:
		return p.Left.String() + " IS NULL"
	case PredIsNotNull:
		return p.Left.String() + " IS NOT NULL"
	}
	return p.Left.String() + " " + p.Cmp + " " + p.Right.String()
}
