package keyexpr

import (
	"strconv"
	"strings"
)

// Kind is the run-time type of a Value.
type Kind uint8

// The kinds of Value. Postgres's unknown-typed literals and text-format
// parameters are KindText until an operation needs something else.
const (
	KindNull Kind = iota
	KindInt       // a signed 64-bit integer (smallint, integer and bigint alike)
	KindText      // a UTF-8 string (text, varchar, and uuid in its text form)
)

// String names the kind.
func (k Kind) String() string {
	switch k {
	case KindNull:
		return "null"
	case KindInt:
		return "bigint"
	case KindText:
		return "text"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Value is the input or result of an expression: NULL, an int64 or text.
// The zero Value is NULL.
type Value struct {
	kind Kind
	i    int64
	s    string
}

// Null returns the NULL value.
func Null() Value { return Value{} }

// Int returns an integer value.
func Int(v int64) Value { return Value{kind: KindInt, i: v} }

// Text returns a text value.
func Text(s string) Value { return Value{kind: KindText, s: s} }

// Kind returns the value's kind.
func (v Value) Kind() Kind { return v.kind }

// IsNull reports whether v is NULL.
func (v Value) IsNull() bool { return v.kind == KindNull }

// AsInt returns the integer held by v; ok is false unless v is KindInt.
func (v Value) AsInt() (n int64, ok bool) { return v.i, v.kind == KindInt }

// AsText returns the string held by v; ok is false unless v is KindText.
func (v Value) AsText() (s string, ok bool) { return v.s, v.kind == KindText }

// String returns v as a SQL literal: NULL, 42, or a string in single
// quotes with embedded quotes doubled.
func (v Value) String() string {
	switch v.kind {
	case KindInt:
		return strconv.FormatInt(v.i, 10)
	case KindText:
		return quoteLiteral(v.s)
	}
	return "NULL"
}

// quoteLiteral writes s as a standard-conforming SQL string literal.
func quoteLiteral(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}
