package keyexpr

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/shardgate/shardgate/sqlerr"
)

// node is one operation of a translated expression.
type node interface {
	eval(env func(string) (Value, bool)) (Value, error)
	columns(add func(string))
	// print writes the canonical text; operand says whether the node is
	// the operand of a cast and must be parenthesised if compound.
	print(b *printer, operand bool)
}

// MissingColumnError is returned by Eval when env has no value for a column
// the expression reads: a row or a statement that lacks its shard key. It
// carries SQLSTATE 23502 (not_null_violation) for callers that pass it on
// to a client; a planner that can fall back to a scatter checks for it with
// errors.As first.
type MissingColumnError struct {
	Column string
}

func (e *MissingColumnError) Error() string {
	return fmt.Sprintf("no value for column %q of the index expression", e.Column)
}

// SQLState makes sqlerr.Code report 23502.
func (e *MissingColumnError) SQLState() string { return sqlerr.NotNullViolation }

// columnRef reads a column from the environment.
type columnRef struct{ name string }

func (c *columnRef) eval(env func(string) (Value, bool)) (Value, error) {
	v, ok := env(c.name)
	if !ok {
		return Value{}, &MissingColumnError{Column: c.name}
	}
	if v.kind == KindText && !utf8.ValidString(v.s) {
		return Value{}, invalidUTF8(v.s)
	}
	return v, nil
}

func (c *columnRef) columns(add func(string)) { add(c.name) }

// invalidUTF8 is Postgres's report_invalid_encoding, naming the first bad
// byte.
func invalidUTF8(s string) error {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n <= 1 {
			return sqlerr.New(sqlerr.CharacterNotInRepertoire, "invalid byte sequence for encoding \"UTF8\": 0x%02x", s[i])
		}
		i += n
	}
	return nil
}

// constant is a literal.
type constant struct{ v Value }

func (c *constant) eval(func(string) (Value, bool)) (Value, error) { return c.v, nil }
func (c *constant) columns(func(string))                           {}

// fn identifies a supported function.
type fn uint8

const (
	fnLower fn = iota
	fnUpper
	fnLeft
	fnRight
	fnSubstr
	fnBtrim
)

// canonical names, as String prints them.
var fnNames = [...]string{fnLower: "lower", fnUpper: "upper", fnLeft: "left", fnRight: "right", fnSubstr: "substr", fnBtrim: "btrim"}

type funcSpec struct {
	fn               fn
	minArgs, maxArgs int
}

// functions maps every accepted spelling to its implementation. trim(x)
// and substring(x from a for b) reach us as pg_catalog.btrim and
// pg_catalog.substring.
var functions = map[string]funcSpec{
	"lower":     {fnLower, 1, 1},
	"upper":     {fnUpper, 1, 1},
	"left":      {fnLeft, 2, 2},
	"right":     {fnRight, 2, 2},
	"substr":    {fnSubstr, 2, 3},
	"substring": {fnSubstr, 2, 3},
	"btrim":     {fnBtrim, 1, 2},
	"trim":      {fnBtrim, 1, 2},
}

// funcCall applies a supported function to its arguments.
type funcCall struct {
	fn   fn
	args []node
}

func (f *funcCall) columns(add func(string)) {
	for _, a := range f.args {
		a.columns(add)
	}
}

func (f *funcCall) eval(env func(string) (Value, bool)) (Value, error) {
	var args [3]Value
	var ints [3]int64
	null := false
	for i, a := range f.args {
		v, err := a.eval(env)
		if err != nil {
			return Value{}, err
		}
		// Integer parameters are converted even when another argument is
		// NULL: Postgres coerces them before it calls the function.
		if i > 0 && f.fn != fnBtrim && !v.IsNull() {
			if ints[i], err = int32Of(v); err != nil {
				return Value{}, err
			}
		}
		args[i] = v
		null = null || v.IsNull()
	}
	// Every supported function is strict: NULL in, NULL out.
	if null {
		return Null(), nil
	}
	s := textOf(args[0])
	switch f.fn {
	case fnLower:
		return Text(strings.ToLower(s)), nil
	case fnUpper:
		return Text(strings.ToUpper(s)), nil
	case fnLeft:
		return Text(left(s, ints[1])), nil
	case fnRight:
		return Text(right(s, ints[1])), nil
	case fnSubstr:
		if len(f.args) == 2 {
			return Text(substr(s, ints[1], 0, false)), nil
		}
		if ints[2] < 0 {
			return Value{}, sqlerr.New(sqlerr.SubstringError, "negative substring length not allowed")
		}
		return Text(substr(s, ints[1], ints[2], true)), nil
	case fnBtrim:
		set := " "
		if len(f.args) == 2 {
			set = textOf(args[1])
		}
		return Text(strings.Trim(s, set)), nil
	}
	return Value{}, sqlerr.New(sqlerr.InternalError, "unknown function %d", f.fn)
}

// textOf converts a non-NULL value to text, as Postgres's implicit
// conversion to text for || does (int8out for integers).
func textOf(v Value) string {
	if v.kind == KindInt {
		return strconv.FormatInt(v.i, 10)
	}
	return v.s
}

// int32Of reads an integer argument: left, right and substr take int4.
func int32Of(v Value) (int64, error) {
	if v.kind == KindText {
		return ParseInteger(v.s, 32)
	}
	return checkIntRange(v.i, 32)
}

// left is text_left: the first n characters, or all but the last -n.
func left(s string, n int64) string {
	if n < 0 {
		n += int64(utf8.RuneCountInString(s))
	}
	return s[:byteOffset(s, n)]
}

// right is text_right: the last n characters, or all but the first -n.
func right(s string, n int64) string {
	if n < 0 {
		return s[byteOffset(s, -n):]
	}
	return s[byteOffset(s, int64(utf8.RuneCountInString(s))-n):]
}

// substr is text_substring: start is 1-based and may be zero or negative,
// in which case the characters "before the string" still use up count.
// Postgres computes start+count in int4 and, when that overflows, runs to
// the end of the string; int64 arithmetic here gives the same answer.
func substr(s string, start, count int64, hasCount bool) string {
	from := max(start, 1)
	rest := s[byteOffset(s, from-1):]
	if !hasCount {
		return rest
	}
	end := start + count // exclusive, 1-based
	if end < 1 {
		return ""
	}
	return rest[:byteOffset(rest, end-from)]
}

// byteOffset returns the byte offset of the n-th rune of s, clamped to
// [0, len(s)].
func byteOffset(s string, n int64) int {
	if n <= 0 {
		return 0
	}
	for i := range s {
		if n == 0 {
			return i
		}
		n--
	}
	return len(s)
}

// castType is a type an expression may cast to.
type castType uint8

const (
	castText castType = iota
	castVarchar
	castBigint
	castInteger
	castSmallint
	castUUID
)

func (t castType) String() string {
	return [...]string{"text", "varchar", "bigint", "integer", "smallint", "uuid"}[t]
}

// maxVarcharLength is Postgres's MaxAttrSize limit on varchar(n).
const maxVarcharLength = 10485760

// castTypes maps type names as the parser produces them (CAST(x AS bigint)
// arrives as pg_catalog.int8) to cast targets.
var castTypes = map[string]castType{
	"text": castText, "varchar": castVarchar,
	"int8": castBigint, "int4": castInteger, "int2": castSmallint,
	"uuid": castUUID,
}

// typeCast converts its operand to another type.
type typeCast struct {
	arg    node
	to     castType
	typmod int // varchar length, or -1
}

func (c *typeCast) columns(add func(string)) { c.arg.columns(add) }

func (c *typeCast) eval(env func(string) (Value, bool)) (Value, error) {
	v, err := c.arg.eval(env)
	if err != nil || v.IsNull() {
		return v, err
	}
	switch c.to {
	case castText:
		return Text(textOf(v)), nil
	case castVarchar:
		s := textOf(v)
		if c.typmod > 0 {
			// An explicit cast to varchar(n) truncates silently.
			s = s[:byteOffset(s, int64(c.typmod))]
		}
		return Text(s), nil
	case castBigint, castInteger, castSmallint:
		bits := map[castType]int{castBigint: 64, castInteger: 32, castSmallint: 16}[c.to]
		if v.kind == KindText {
			n, err := ParseInteger(v.s, bits)
			return Int(n), err
		}
		n, err := checkIntRange(v.i, bits)
		return Int(n), err
	case castUUID:
		if v.kind == KindInt {
			return Value{}, sqlerr.New(sqlerr.CannotCoerce, "cannot cast type bigint to uuid")
		}
		u, err := ParseUUID(v.s)
		if err != nil {
			return Value{}, err
		}
		return Text(FormatUUID(u)), nil
	}
	return Value{}, sqlerr.New(sqlerr.InternalError, "unknown cast target %d", c.to)
}

// concat is ||. Postgres's textcat and anytextcat are strict, so NULL on
// either side gives NULL.
type concat struct{ l, r node }

func (c *concat) columns(add func(string)) {
	c.l.columns(add)
	c.r.columns(add)
}

func (c *concat) eval(env func(string) (Value, bool)) (Value, error) {
	l, err := c.l.eval(env)
	if err != nil {
		return Value{}, err
	}
	r, err := c.r.eval(env)
	if err != nil {
		return Value{}, err
	}
	if l.IsNull() || r.IsNull() {
		return Null(), nil
	}
	return Text(textOf(l) + textOf(r)), nil
}
