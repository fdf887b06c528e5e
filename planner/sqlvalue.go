package planner

import (
	"encoding/binary"
	"math"
	"strconv"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/shardgate/shardgate/keyexpr"
	"github.com/shardgate/shardgate/sqlerr"
	"github.com/shardgate/shardgate/vschema"
)

// Shard keys compared with (or assigned) values of another type follow
// Postgres's rules, so that routing never disagrees with the backend:
//
//   - A quoted literal, or a parameter of unspecified type, takes the key
//     column's type: the type's input function reads it ('7.0' against a
//     bigint key is 22P02, as in Postgres).
//   - A number is typed: integer constants are integer or bigint, others
//     numeric (7.0, 1e3, and integers beyond bigint); casts and a
//     parameter's declared type (Param.OID) give numeric, real or double
//     precision too. Comparing an integer key with numeric is exact (7.0
//     finds key 7; 7.5, 1e30 and NaN find none), with real or double
//     precision it happens in double precision, which is exact below
//     2^53; an integer outside a smallint or integer key's range finds
//     none. A value no key can equal routes to one shard (where the
//     answer is empty, with the right row shape) or drops out of an IN
//     list.
//   - An INSERT assigns: numeric rounds half away from zero (7.5 is 8),
//     real and double precision to the nearest even (6.5 is 6), and a
//     value out of the key type's range is 22003.
//   - The items of an IN list or ARRAY[...] are converted to their common
//     type first (IN (7.5, '7.0') reads '7.0' as numeric).
//
// sqlValue carries a value with its type through those conversions.

// sqlType is the SQL type of a key value on its way to the key column.
type sqlType uint8

const (
	// typeUnknown is a quoted literal or a parameter of unspecified type:
	// the type it meets decides how it is read.
	typeUnknown sqlType = iota
	typeInt2
	typeInt4
	typeInt8
	typeNumeric
	typeFloat4
	typeFloat8
	typeText // text, varchar, bpchar, name
	typeUUID
)

var sqlTypeNames = [...]string{"unknown", "smallint", "integer", "bigint", "numeric", "real", "double precision", "text", "uuid"}

func (t sqlType) String() string {
	if int(t) < len(sqlTypeNames) {
		return sqlTypeNames[t]
	}
	return "type(?)"
}

func (t sqlType) isInt() bool    { return t == typeInt2 || t == typeInt4 || t == typeInt8 }
func (t sqlType) isFloat() bool  { return t == typeFloat4 || t == typeFloat8 }
func (t sqlType) isNumber() bool { return t >= typeInt2 && t <= typeFloat8 }

// bits is the width of an integer or floating-point type.
func (t sqlType) bits() int {
	switch t {
	case typeInt2:
		return 16
	case typeInt4, typeFloat4:
		return 32
	}
	return 64
}

// typeOfOID is the type of a parameter declared with the given OID;
// other types (and none, 0) are typeUnknown: the parameter's text is read
// by the type it meets, as before.
func typeOfOID(oid uint32) sqlType {
	switch oid {
	case oidInt2:
		return typeInt2
	case oidInt4:
		return typeInt4
	case oidInt8:
		return typeInt8
	case oidNumeric:
		return typeNumeric
	case oidFloat4:
		return typeFloat4
	case oidFloat8:
		return typeFloat8
	case oidText, oidVarchar, oidBpchar, oidName:
		return typeText
	case oidUUID:
		return typeUUID
	}
	return typeUnknown
}

// elementTypeOfArrayOID is the element type of an array parameter type.
func elementTypeOfArrayOID(oid uint32) sqlType {
	switch oid {
	case 1005:
		return typeInt2
	case 1007:
		return typeInt4
	case 1016:
		return typeInt8
	case 1231:
		return typeNumeric
	case 1021:
		return typeFloat4
	case 1022:
		return typeFloat8
	case 1009, 1015, 1014, 1003:
		return typeText
	case 2951:
		return typeUUID
	}
	return typeUnknown
}

// castTarget maps the type of a cast to the types a key value may pass
// through. A type modifier (numeric(10,2) rounds, varchar(3) truncates),
// an array or any other type makes the value opaque: ok is false.
func castTarget(t *pg.TypeName) (sqlType, bool) {
	if t == nil || len(t.Names) == 0 || len(t.ArrayBounds) > 0 || len(t.Typmods) > 0 {
		return 0, false
	}
	switch stringValue(t.Names[len(t.Names)-1]) {
	case "int2", "smallint":
		return typeInt2, true
	case "int4", "integer", "int":
		return typeInt4, true
	case "int8", "bigint":
		return typeInt8, true
	case "numeric", "decimal":
		return typeNumeric, true
	case "float4", "real":
		return typeFloat4, true
	case "float8":
		return typeFloat8, true
	case "text", "varchar":
		return typeText, true
	case "uuid":
		return typeUUID, true
	case "unknown":
		return typeUnknown, true
	}
	return 0, false
}

// sqlValue is a typed value: an integer (i), a numeric (d), a real or
// double precision (f, a real widened exactly), or text (s) for the
// unknown, text and uuid types.
type sqlValue struct {
	typ  sqlType
	null bool
	i    int64
	f    float64
	d    decimal
	s    string
}

func textValue(t sqlType, s string) sqlValue { return sqlValue{typ: t, s: s} }

// String renders the value as SQL: NULL, 42, 7.50, 1e+300, 'text'.
func (v sqlValue) String() string {
	switch {
	case v.null:
		return "NULL"
	case v.typ.isInt():
		return strconv.FormatInt(v.i, 10)
	case v.typ == typeNumeric:
		return v.d.String()
	case v.typ.isFloat():
		return strconv.FormatFloat(v.f, 'g', -1, 64)
	}
	return keyexpr.Text(v.s).String()
}

// cast converts v to type t as Postgres's casts between these types do
// (explicit, assignment and implicit casts compute the same values here).
func (v sqlValue) cast(t sqlType) (sqlValue, error) {
	if v.null || v.typ == t {
		return sqlValue{typ: t, null: v.null, i: v.i, f: v.f, d: v.d, s: v.s}, nil
	}
	out := sqlValue{typ: t}
	var err error
	switch v.typ {
	case typeUnknown, typeText, typeUUID:
		// The target type's input function reads the text.
		switch {
		case t.isInt():
			out.i, err = keyexpr.ParseInteger(v.s, t.bits())
		case t == typeNumeric:
			out.d, err = parseNumeric(v.s)
		case t.isFloat():
			out.f, err = parseFloat(v.s, t.bits())
		default:
			out.s = v.s
		}
		return out, err
	case typeInt2, typeInt4, typeInt8:
		switch {
		case t.isInt():
			if !intFits(v.i, t.bits()) {
				return out, sqlerr.New(sqlerr.NumericValueOutOfRange, "%s out of range", t)
			}
			out.i = v.i
		case t == typeNumeric:
			out.d = decimalFromInt(v.i)
		case t == typeFloat8:
			out.f = float64(v.i)
		case t == typeFloat4:
			out.f = float64(float32(v.i))
		case t == typeText:
			out.s = strconv.FormatInt(v.i, 10)
		default:
			return out, cannotCast(v.typ, t)
		}
	case typeNumeric:
		switch {
		case t.isInt():
			out.i, err = v.d.toInt(t.bits())
		case t.isFloat():
			out.f, err = v.d.toFloat(t.bits())
		case t == typeText:
			out.s = v.d.String()
		default:
			return out, cannotCast(v.typ, t)
		}
	case typeFloat4, typeFloat8:
		switch {
		case t.isInt():
			out.i, err = floatToInt(v.f, t.bits())
		case t == typeNumeric:
			out.d = decimalFromFloat(v.f, v.typ.bits())
		case t == typeFloat8:
			out.f = v.f
		case t == typeFloat4:
			out.f, err = toFloat4(v.f)
		case t == typeText:
			return out, sqlerr.New(sqlerr.FeatureNotSupported, "a shard key value cast from %s to text is not supported", v.typ)
		default:
			return out, cannotCast(v.typ, t)
		}
	}
	return out, err
}

func cannotCast(from, to sqlType) error {
	return sqlerr.New(sqlerr.CannotCoerce, "cannot cast type %s to %s", from, to)
}

// negate applies a unary minus in v's type. Text (a parameter of
// unspecified type) gets its sign flipped, so the type it meets reads
// the negative number.
func (v sqlValue) negate() (sqlValue, error) {
	if v.null {
		return v, nil
	}
	switch {
	case v.typ.isInt():
		if !intFits(-v.i, v.typ.bits()) || v.i == math.MinInt64 {
			return v, sqlerr.New(sqlerr.NumericValueOutOfRange, "%s out of range", v.typ)
		}
		v.i = -v.i
	case v.typ == typeNumeric:
		switch v.d.special {
		case decPosInf:
			v.d.special = decNegInf
		case decNegInf:
			v.d.special = decPosInf
		case decFinite:
			v.d.neg = !v.d.neg && v.d.digits != ""
		}
	case v.typ.isFloat():
		v.f = -v.f
	default:
		n, err := negate(keyexpr.Text(v.s))
		if err != nil {
			return v, err
		}
		v.s, _ = n.AsText()
	}
	return v, nil
}

// paramSQLValue reads parameter $n (1-based) with its declared type:
// text format through the type's input function (unspecified and other
// types stay text, read by the type they meet), binary format decoded by
// OID.
func paramSQLValue(params []Param, n int) (sqlValue, error) {
	if n < 1 || n > len(params) {
		return sqlValue{}, sqlerr.New(sqlerr.ProtocolViolation,
			"bind message supplies %d parameters, but the statement's shard key uses $%d", len(params), n)
	}
	p := params[n-1]
	t := typeOfOID(p.OID)
	if p.Null {
		return sqlValue{typ: t, null: true}, nil
	}
	if !p.Binary {
		return textValue(typeUnknown, string(p.Value)).cast(t)
	}
	return binaryValue(p.Value, p.OID, n)
}

// binaryValue decodes one binary parameter (or array element) by its
// type OID: the integer types, uuid, the text types, real, double
// precision and numeric; other binary types cannot be shard keys.
func binaryValue(v []byte, oid uint32, n int) (sqlValue, error) {
	badLen := func(typ string) error {
		return sqlerr.New(sqlerr.ProtocolViolation,
			"incorrect binary data format in bind parameter %d: %d bytes for type %s", n, len(v), typ)
	}
	switch oid {
	case oidInt2:
		if len(v) != 2 {
			return sqlValue{}, badLen("smallint")
		}
		return sqlValue{typ: typeInt2, i: int64(int16(binary.BigEndian.Uint16(v)))}, nil
	case oidInt4:
		if len(v) != 4 {
			return sqlValue{}, badLen("integer")
		}
		return sqlValue{typ: typeInt4, i: int64(int32(binary.BigEndian.Uint32(v)))}, nil
	case oidInt8:
		if len(v) != 8 {
			return sqlValue{}, badLen("bigint")
		}
		return sqlValue{typ: typeInt8, i: int64(binary.BigEndian.Uint64(v))}, nil
	case oidFloat4:
		if len(v) != 4 {
			return sqlValue{}, badLen("real")
		}
		return sqlValue{typ: typeFloat4, f: float64(math.Float32frombits(binary.BigEndian.Uint32(v)))}, nil
	case oidFloat8:
		if len(v) != 8 {
			return sqlValue{}, badLen("double precision")
		}
		return sqlValue{typ: typeFloat8, f: math.Float64frombits(binary.BigEndian.Uint64(v))}, nil
	case oidNumeric:
		d, ok := decodeBinaryNumeric(v)
		if !ok {
			return sqlValue{}, sqlerr.New(sqlerr.ProtocolViolation, "incorrect binary data format in bind parameter %d", n)
		}
		return sqlValue{typ: typeNumeric, d: d}, nil
	case oidUUID:
		if len(v) != 16 {
			return sqlValue{}, badLen("uuid")
		}
		var u [16]byte
		copy(u[:], v)
		return textValue(typeUUID, keyexpr.FormatUUID(u)), nil
	case oidText, oidVarchar, oidBpchar, oidName:
		return textValue(typeText, string(v)), nil
	case oidUnknown:
		return textValue(typeUnknown, string(v)), nil
	}
	return sqlValue{}, sqlerr.New(sqlerr.FeatureNotSupported,
		"binary parameter $%d of type OID %d cannot be used as a shard key", n, oid).
		WithHint("Send the parameter in text format, or as int2, int4, int8, numeric, float4, float8, uuid or text.")
}

// keyInput turns a typed value into the input of the index's key
// conversion (vschema): the value compared with the key column, or, with
// assign, stored in it (INSERT). ok is false when no key can equal the
// value. exprColumn is set for a column an index expression reads, whose
// type the topology does not give.
func keyInput(v sqlValue, kt vschema.KeyType, assign, exprColumn bool, column string) (_ keyexpr.Value, ok bool, _ error) {
	if v.null {
		return keyexpr.Null(), true, nil
	}
	if exprColumn {
		switch {
		case v.typ == typeNumeric || v.typ.isFloat():
			return keyexpr.Value{}, false, sqlerr.New(sqlerr.FeatureNotSupported,
				"a %s value for column %q, which the sharding index expression reads, is not supported", v.typ, column).
				WithHint("Give the value as an integer or a string.")
		case v.typ.isInt():
			return keyexpr.Int(v.i), true, nil
		}
		return keyexpr.Text(v.s), true, nil
	}
	switch {
	case v.typ == typeUnknown || v.typ == typeText || v.typ == typeUUID:
		return keyexpr.Text(v.s), true, nil // the key type's input function reads it
	case kt.IsInteger():
		bits := integerKeyBits(kt)
		if assign {
			if !v.typ.isInt() {
				c, err := v.cast(integerKeyType(kt))
				if err != nil {
					return keyexpr.Value{}, false, err
				}
				v = c
			}
			return keyexpr.Int(v.i), true, nil // vschema checks the key type's range
		}
		n, ok, err := exactKey(v, bits)
		if err != nil || !ok {
			return keyexpr.Value{}, false, err
		}
		return keyexpr.Int(n), true, nil
	case v.typ.isInt():
		return keyexpr.Int(v.i), true, nil // text keys: its decimal text
	case !assign:
		return keyexpr.Value{}, false, nil // text = numeric: Postgres refuses the statement itself
	case kt == vschema.Text || kt == vschema.Varchar:
		if v.typ == typeNumeric {
			return keyexpr.Text(v.d.String()), true, nil
		}
		return keyexpr.Value{}, false, sqlerr.New(sqlerr.FeatureNotSupported,
			"a %s value for the %s shard key column %q is not supported", v.typ, kt, column).
			WithHint("Give the key as a string.")
	}
	return keyexpr.Value{}, false, sqlerr.New("42804", "column %q is of type %s but expression is of type %s", column, kt, v.typ)
}

// exactKey is the integer key that equals a number in a comparison with
// an integer key column of the given width: ok is false when no integer
// of that type equals it.
func exactKey(v sqlValue, bits int) (int64, bool, error) {
	switch {
	case v.typ.isInt():
		return v.i, intFits(v.i, bits), nil
	case v.typ == typeNumeric:
		n, ok := v.d.exactInt()
		return n, ok && intFits(n, bits), nil
	}
	// Postgres compares an integer column with real or double precision in
	// double precision (int8 = float8 is float8(key) = value), which maps
	// every integer below 2^53 to itself and larger ones to shared values.
	f := v.f
	if math.IsNaN(f) || math.IsInf(f, 0) || f != math.Trunc(f) {
		return 0, false, nil
	}
	limit := math.Ldexp(1, bits-1)
	if f < -limit || f > limit || bits < 64 && f == limit {
		return 0, false, nil
	}
	if math.Abs(f) < 1<<53 {
		return int64(f), true, nil
	}
	return 0, false, sqlerr.New(sqlerr.FeatureNotSupported,
		"comparing a bigint shard key with the %s value %s is not supported", v.typ, strconv.FormatFloat(f, 'g', -1, 64)).
		WithDetail("Postgres compares them in double precision, where several bigint keys equal a value beyond 2^53.").
		WithHint("Compare the key with a bigint or numeric value.")
}

func integerKeyBits(kt vschema.KeyType) int {
	switch kt {
	case vschema.Smallint:
		return 16
	case vschema.Integer:
		return 32
	}
	return 64
}

func integerKeyType(kt vschema.KeyType) sqlType {
	switch kt {
	case vschema.Smallint:
		return typeInt2
	case vschema.Integer:
		return typeInt4
	}
	return typeInt8
}

// commonType is the type Postgres converts the items of an IN list or
// ARRAY[...] to (select_common_type): among the numeric types, the
// widest of the key column's and the items', in the order smallint,
// integer, bigint, numeric, real, double precision; items of unknown
// type take it. ok is false when no conversion applies: a key that is not
// an integer, or an item of another type (Postgres refuses the statement).
func commonType(kt vschema.KeyType, types []sqlType) (sqlType, bool) {
	if !kt.IsInteger() {
		return 0, false
	}
	common := integerKeyType(kt)
	for _, t := range types {
		switch {
		case t == typeUnknown:
		case !t.isNumber():
			return 0, false
		case t > common:
			common = t
		}
	}
	return common, true
}

// numberOID is the type a numeric constant has in SQL: integer, bigint, or
// numeric (a point, an exponent, or beyond bigint), as the parser types
// it; as a type OID for a text-format Param.
func numberOID(s string) uint32 {
	switch numberType(s) {
	case typeInt4:
		return oidInt4
	case typeInt8:
		return oidInt8
	}
	return oidNumeric
}

func numberType(s string) sqlType {
	if !isDigits(s) {
		return typeNumeric
	}
	n, err := strconv.ParseInt(s, 10, 64)
	switch {
	case err != nil:
		return typeNumeric
	case n <= math.MaxInt32:
		return typeInt4
	}
	return typeInt8
}
