package planner

import (
	"math"
	"strconv"
	"strings"

	"github.com/shardgate/shardgate/keyexpr"
	"github.com/shardgate/shardgate/sqlerr"
	"github.com/shardgate/shardgate/vschema"
)

// ValueRef is a shard-key value as the planner sees it: a literal from the
// statement text or a parameter, with the casts applied to it. It is only
// a reference; converting it to the index type happens in Targets,
// through vschema, so a bad value fails with the backend's SQLSTATE
// (22P02, 22003) at execution, not at planning. How values of other
// types meet the key column is in sqlvalue.go.
type ValueRef struct {
	Param   int    // $n, 1-based; 0 for a literal
	Literal string // the literal's text: digits as written, strings unquoted
	Int     bool   // the literal is an integer constant (unquoted)
	Null    bool   // the literal NULL
	Negate  bool   // a unary minus applies (-5, -$1), before any cast
	// Seq is set for a value the proxy draws from a main-group sequence
	// (an omitted or DEFAULT sequence column, or nextval('seq') in VALUES):
	// the sequence as SQL names it. Draw numbers the value among the
	// statement's draws, 0-based. Targets substitutes the drawn value
	// (withDraws) before evaluating the key.
	Seq  string
	Draw int

	// numeric is set for a numeric constant with a point or an exponent
	// (7.0, 1e3): Literal is its text, its type numeric.
	numeric bool
	// ops are the casts (and unary minuses outside them) applied to the
	// value, innermost first: '5'::numeric, (7.5::float8)::bigint.
	ops []valueOp
	// list is set on each item of an IN list or ARRAY[...] of two or more
	// items: all the items, which Postgres converts to their common type.
	list *[]ValueRef
}

// valueOp is a cast to a type, or a unary minus.
type valueOp struct {
	negate bool
	to     sqlType
	name   string // the cast's type as written, for EXPLAIN
}

// eval resolves the reference against the statement's parameters: the
// literal or parameter with its type, through its casts.
func (v ValueRef) eval(params []Param) (sqlValue, error) {
	var val sqlValue
	var err error
	switch {
	case v.Seq != "":
		return val, sqlerr.New(sqlerr.InternalError, "the value of sequence %s was not drawn", v.Seq)
	case v.Null:
		val = sqlValue{null: true}
	case v.Param > 0:
		val, err = paramSQLValue(params, v.Param)
	case v.Int || v.numeric:
		val, err = textValue(typeUnknown, v.Literal).cast(v.literalType())
	default:
		val = textValue(typeUnknown, v.Literal)
	}
	if err == nil && v.Negate {
		val, err = val.negate()
	}
	for _, op := range v.ops {
		if err != nil {
			break
		}
		if op.negate {
			val, err = val.negate()
		} else {
			val, err = val.cast(op.to)
		}
	}
	return val, err
}

// literalType is the SQL type of a literal number or string.
func (v ValueRef) literalType() sqlType {
	switch {
	case v.numeric:
		return typeNumeric
	case v.Int:
		return numberType(v.Literal)
	}
	return typeUnknown
}

// typeOf is the type of the value: its last cast's, else the literal's
// or the parameter's declared type.
func (v ValueRef) typeOf(params []Param) sqlType {
	if t, ok := v.staticType(); ok {
		return t
	}
	if v.Param <= len(params) {
		return typeOfOID(params[v.Param-1].OID)
	}
	return typeUnknown
}

// staticType is the value's type when the statement alone gives it: ok is
// false for a parameter without a cast, whose type comes with its value.
func (v ValueRef) staticType() (sqlType, bool) {
	for i := len(v.ops) - 1; i >= 0; i-- {
		if !v.ops[i].negate {
			return v.ops[i].to, true
		}
	}
	if v.Param > 0 {
		return typeUnknown, false
	}
	return v.literalType(), true
}

// keyInput resolves the reference for the key conversion of an index of
// type kt: compared with the key column, or stored in it with assign. ok
// is false when no key can equal the value. exprColumn is set for a
// column that an index expression reads. lists caches the common types
// of IN lists for one evaluation of the plan's keys (nil: no cache).
func (v ValueRef) keyInput(params []Param, kt vschema.KeyType, assign, exprColumn bool, column string, lists listTypes) (keyexpr.Value, bool, error) {
	val, err := v.eval(params)
	if err != nil {
		return keyexpr.Value{}, false, err
	}
	if v.list != nil && !exprColumn {
		if common, ok := lists.common(v.list, kt, params); ok {
			if val, err = val.cast(common); err != nil {
				return keyexpr.Value{}, false, err
			}
		}
	}
	return keyInput(val, kt, assign, exprColumn, column)
}

// listTypes caches the common type of each IN list (by its items) while
// one set of parameters is evaluated, so that a list of n items costs n
// type lookups, not n².
type listTypes map[*[]ValueRef]listType

type listType struct {
	t  sqlType
	ok bool
}

// common is commonType of the list's items with the given parameters.
func (lt listTypes) common(list *[]ValueRef, kt vschema.KeyType, params []Param) (sqlType, bool) {
	if c, ok := lt[list]; ok {
		return c.t, c.ok
	}
	types := make([]sqlType, len(*list))
	for i, item := range *list {
		types[i] = item.typeOf(params)
	}
	t, ok := commonType(kt, types)
	if lt != nil {
		lt[list] = listType{t, ok}
	}
	return t, ok
}

// negate applies a unary minus the way the backend would before the value
// reaches the key column: on integers arithmetically, on text (an untyped
// literal or a text-format parameter) by flipping the sign of its text, so
// the index type's input function sees "-5".
func negate(v keyexpr.Value) (keyexpr.Value, error) {
	if n, ok := v.AsInt(); ok {
		if n == math.MinInt64 {
			return v, sqlerr.New(sqlerr.NumericValueOutOfRange, "bigint out of range")
		}
		return keyexpr.Int(-n), nil
	}
	if s, ok := v.AsText(); ok {
		t := strings.TrimSpace(s)
		if strings.HasPrefix(t, "-") {
			return keyexpr.Text(t[1:]), nil
		}
		return keyexpr.Text("-" + strings.TrimPrefix(t, "+")), nil
	}
	return v, nil // -NULL is NULL
}

// String renders the reference as SQL: 5, 7.0, 'AbC', $1, -$2, NULL,
// '5'::numeric.
func (v ValueRef) String() string {
	var s string
	switch {
	case v.Seq != "":
		s = "nextval(" + keyexpr.Text(shortSequence(v.Seq)).String() + ")"
	case v.Null:
		s = "NULL"
	case v.Param > 0:
		s = "$" + strconv.Itoa(v.Param)
	case v.Int || v.numeric:
		s = v.Literal
	default:
		s = keyexpr.Text(v.Literal).String()
	}
	if v.Negate {
		s = "-" + s
	}
	for _, op := range v.ops {
		switch {
		case op.negate && strings.Contains(s, "::"):
			s = "-(" + s + ")"
		case op.negate:
			s = "-" + s
		case strings.HasPrefix(s, "-"):
			s = "(" + s + ")::" + op.name
		default:
			s += "::" + op.name
		}
	}
	return s
}

// render prints the reference for EXPLAIN. Parameters stay symbolic;
// the shards line shows what they resolve to.
func (v ValueRef) render([]Param) string { return v.String() }

// identity names the value for co-location: two references with the same
// identity always produce the same key.
func (v ValueRef) identity() string {
	var b strings.Builder
	if v.Negate {
		b.WriteByte('-')
	}
	switch {
	case v.Seq != "":
		b.WriteString("draw:" + strconv.Itoa(v.Draw)) // a fresh value: equal to no other
	case v.Null:
		b.WriteString("null")
	case v.Param > 0:
		b.WriteString("$" + strconv.Itoa(v.Param))
	case v.Int:
		b.WriteString("i:" + v.Literal)
	case v.numeric:
		b.WriteString("n:" + v.Literal)
	default:
		b.WriteString("s:" + v.Literal)
	}
	for _, op := range v.ops {
		if op.negate {
			b.WriteString("|-")
		} else {
			b.WriteString("|" + op.to.String())
		}
	}
	if v.list != nil {
		b.WriteString("|in") // converted to the list's common type
	}
	return b.String()
}

// ColumnValue is the value of one column the sharding index reads.
type ColumnValue struct {
	Column string // the index's column name (not the member table's alias)
	Value  ValueRef
}

// KeyRef is one shard key of a statement: either the values of the columns
// the index expression reads (WHERE customer_id = 5; WHERE sku = 'AbC' for
// lower(sku)), or the value of the whole expression (WHERE lower(sku) =
// 'abc').
//
// Array is set instead for key = ANY(array): one KeyRef standing for as
// many keys as the array has elements.
type KeyRef struct {
	Columns []ColumnValue
	Whole   *ValueRef
	Array   *ArrayRef

	// assign is set for the key of a row an INSERT stores, where the value
	// is assigned to the key column (numeric rounds to an integer key)
	// rather than compared with it.
	assign bool
}

// hasNull reports a literal NULL key, which can match no row.
func (k KeyRef) hasNull() bool {
	if k.Array != nil {
		return k.Array.Value.Null
	}
	if k.Whole != nil {
		return k.Whole.Null
	}
	for _, c := range k.Columns {
		if c.Value.Null {
			return true
		}
	}
	return false
}

// hasDraw reports a key holding a value drawn from a sequence, known only
// at execution.
func (k KeyRef) hasDraw() bool {
	for _, c := range k.Columns {
		if c.Value.Seq != "" {
			return true
		}
	}
	return k.Whole != nil && k.Whole.Seq != ""
}

// withDraws returns the key with drawn sequence values in place of their
// references.
func (k KeyRef) withDraws(vals []int64) KeyRef {
	if !k.hasDraw() {
		return k
	}
	subst := func(v ValueRef) ValueRef {
		if v.Seq == "" {
			return v
		}
		return ValueRef{Literal: strconv.FormatInt(vals[v.Draw], 10), Int: true}
	}
	out := KeyRef{Array: k.Array, assign: k.assign}
	if k.Whole != nil {
		w := subst(*k.Whole)
		out.Whole = &w
	}
	for _, c := range k.Columns {
		out.Columns = append(out.Columns, ColumnValue{Column: c.Column, Value: subst(c.Value)})
	}
	return out
}

// literal reports whether the key needs no parameters.
func (k KeyRef) literal() bool {
	if k.Array != nil {
		return k.Array.Value.Param == 0
	}
	if k.Whole != nil {
		return k.Whole.Param == 0
	}
	for _, c := range k.Columns {
		if c.Value.Param > 0 {
			return false
		}
	}
	return true
}

func (k KeyRef) identity() string {
	if k.Array != nil {
		return "any:" + k.Array.Value.identity()
	}
	if k.Whole != nil {
		return "=" + k.Whole.identity()
	}
	parts := make([]string, len(k.Columns))
	for i, c := range k.Columns {
		parts[i] = c.Column + ":" + c.Value.identity()
	}
	return strings.Join(parts, ",")
}

// render prints the key for EXPLAIN: 5, $1, 'abc' for a whole-expression
// value, (sku='AbC') for the columns of an expression index.
func (k KeyRef) render(params []Param, plainColumn bool) string {
	if k.Array != nil {
		return k.Array.String()
	}
	if k.Whole != nil {
		return k.Whole.render(params)
	}
	if plainColumn && len(k.Columns) == 1 {
		return k.Columns[0].Value.render(params)
	}
	parts := make([]string, len(k.Columns))
	for i, c := range k.Columns {
		parts[i] = keyexpr.QuoteIdentifier(c.Column) + "=" + c.Value.render(params)
	}
	return "(" + strings.Join(parts, ", ") + ")"
}
