package pgvalue

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgtype"
)

// Values as merges see them. A merge compares column values (ORDER BY,
// min/max, DISTINCT, GROUP BY) and combines them (count, sum, avg) exactly
// as Postgres does, for the types listed in types, in the text or binary
// format the client asked for. Anything else is refused with 0A000 before
// the first row is sent.

// Kind is how a type's values compare.
type Kind uint8

const (
	KindInt      Kind = iota + 1 // int2, int4, int8, oid: i
	KindFloat                    // float4, float8: f (NaN after everything, -0 = 0)
	KindNumeric                  // numeric: n
	KindBytes                    // text types, bytea, uuid: b, bytewise
	KindBool                     // bool: i (0, 1)
	KindTime                     // date (days), time, timestamp, timestamptz (microseconds): i
	KindInterval                 // interval: n is its span, b its binary form (interval.go)
)

// Value is one decoded column value. Which fields hold it depends on its
// type's Kind (see the Kind constants).
type Value struct {
	Null bool    // SQL NULL: no other field is set
	I    int64   // KindInt, KindBool, KindTime
	F    float64 // KindFloat
	N    Decimal // KindNumeric; KindInterval: the span
	B    []byte  // KindBytes; KindInterval: the binary form
}

// Type is what a merge knows about a type.
type Type struct {
	OID  uint32 // the type's OID (pg_type.dat)
	Name string // as format_type prints it, for messages
	Kind Kind
	// Collatable types order by their collation; the proxy compares
	// bytes, which is right only for C (and POSIX) collation.
	Collatable bool
	// Text and Binary decode a non-NULL value in the text and binary
	// formats.
	Text   func([]byte) (Value, error)
	Binary func([]byte) (Value, error)
	// styled decodes the text of a type whose text depends on the
	// session's DateStyle, IntervalStyle or TimeZone (nil: Text).
	styled func([]byte, *Styles) (Value, error)
}

// types are the types merges know, by OID.
var types = map[uint32]*Type{}

// TypeOf returns what merges know about a type, nil for a type they cannot
// compare or combine.
func TypeOf(oid uint32) *Type { return types[oid] }

func init() {
	for _, t := range []*Type{
		{OID: pgtype.BoolOID, Name: "boolean", Kind: KindBool, Text: boolText, Binary: boolBinary},
		{OID: pgtype.ByteaOID, Name: "bytea", Kind: KindBytes, Text: byteaText, Binary: rawBytes},
		{OID: pgtype.QCharOID, Name: `"char"`, Kind: KindBytes, Text: rawBytes, Binary: rawBytes},
		{OID: pgtype.NameOID, Name: "name", Kind: KindBytes, Text: rawBytes, Binary: rawBytes},
		{OID: pgtype.Int8OID, Name: "bigint", Kind: KindInt, Text: intText, Binary: intBinary(8)},
		{OID: pgtype.Int2OID, Name: "smallint", Kind: KindInt, Text: intText, Binary: intBinary(2)},
		{OID: pgtype.Int4OID, Name: "integer", Kind: KindInt, Text: intText, Binary: intBinary(4)},
		{OID: pgtype.TextOID, Name: "text", Kind: KindBytes, Collatable: true, Text: rawBytes, Binary: rawBytes},
		{OID: pgtype.OIDOID, Name: "oid", Kind: KindInt, Text: intText, Binary: oidBinary},
		{OID: pgtype.Float4OID, Name: "real", Kind: KindFloat, Text: floatText(32), Binary: float4Binary},
		{OID: pgtype.Float8OID, Name: "double precision", Kind: KindFloat, Text: floatText(64), Binary: float8Binary},
		{OID: pgtype.BPCharOID, Name: "character", Kind: KindBytes, Collatable: true, Text: bpcharBytes, Binary: bpcharBytes},
		{OID: pgtype.VarcharOID, Name: "character varying", Kind: KindBytes, Collatable: true, Text: rawBytes, Binary: rawBytes},
		{OID: pgtype.DateOID, Name: "date", Kind: KindTime, Text: dateText, Binary: dateBinary, styled: dateStyled},
		{OID: pgtype.TimeOID, Name: "time without time zone", Kind: KindTime, Text: timeText, Binary: intBinary(8)},
		{OID: pgtype.TimestampOID, Name: "timestamp without time zone", Kind: KindTime, Text: timestampText(false), Binary: intBinary(8), styled: timestampStyled(false)},
		{OID: pgtype.TimestamptzOID, Name: "timestamp with time zone", Kind: KindTime, Text: timestampText(true), Binary: intBinary(8), styled: timestampStyled(true)},
		{OID: pgtype.NumericOID, Name: "numeric", Kind: KindNumeric, Text: numericText, Binary: numericBinary},
		{OID: pgtype.IntervalOID, Name: "interval", Kind: KindInterval, Text: intervalText, Binary: intervalBinary, styled: intervalStyled},
		{OID: pgtype.UUIDOID, Name: "uuid", Kind: KindBytes, Text: uuidText, Binary: uuidBinary},
	} {
		types[t.OID] = t
	}
}

// TypeName names a type OID for messages as Postgres's format_type does:
// "integer", "character varying", an array as its element's name and "[]"
// ("integer[]", never the catalog's "_int4").
func TypeName(oid uint32) string {
	if t, ok := types[oid]; ok {
		return t.Name
	}
	if name, ok := formatNames[oid]; ok {
		return name
	}
	t, ok := builtinNames.TypeForOID(oid)
	if !ok {
		return "OID " + strconv.FormatUint(uint64(oid), 10)
	}
	if a, ok := t.Codec.(*pgtype.ArrayCodec); ok && a.ElementType != nil {
		return TypeName(a.ElementType.OID) + "[]"
	}
	return t.Name
}

// formatNames are the types outside types whose format_type name is not
// their catalog name (or that pgx does not know).
var formatNames = map[uint32]string{
	114:  "json",
	3802: "jsonb",
	790:  "money",
	1560: "bit",
	1562: "bit varying",
	1266: "time with time zone",
}

// builtinNames names the other built-in types pgx knows (tsvector, xml,
// arrays, ranges, ...) by their catalog names; a type it does not know
// (an enum, a domain, an extension's type) is named by its OID.
var builtinNames = pgtype.NewMap()

// ErrMalformed is a value whose bytes are not its type's text or binary
// form.
var ErrMalformed = errors.New("malformed value")

// Decode reads one column value in the given wire format (nil is NULL).
func (t *Type) Decode(raw []byte, format int16) (Value, error) {
	if raw == nil {
		return Value{Null: true}, nil
	}
	if format == 1 {
		return t.Binary(raw)
	}
	return t.Text(raw)
}

// DecodeStyled is Decode of text written under the session's styles (nil:
// the defaults).
func (t *Type) DecodeStyled(raw []byte, format int16, st *Styles) (Value, error) {
	if raw == nil || format == 1 || t.styled == nil || st == nil {
		return t.Decode(raw, format)
	}
	return t.styled(raw, st)
}

func rawBytes(b []byte) (Value, error) { return Value{B: b}, nil }

// bpcharBytes drops trailing blanks, which bpchar comparison ignores
// (bpcharcmp compares the lengths without them).
func bpcharBytes(b []byte) (Value, error) { return Value{B: bytes.TrimRight(b, " ")}, nil }

func boolText(b []byte) (Value, error) {
	switch string(b) {
	case "t":
		return Value{I: 1}, nil
	case "f":
		return Value{I: 0}, nil
	}
	return Value{}, ErrMalformed
}

func boolBinary(b []byte) (Value, error) {
	if len(b) != 1 {
		return Value{}, ErrMalformed
	}
	if b[0] != 0 {
		return Value{I: 1}, nil
	}
	return Value{}, nil
}

func intText(b []byte) (Value, error) {
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return Value{}, ErrMalformed
	}
	return Value{I: n}, nil
}

func intBinary(size int) func([]byte) (Value, error) {
	return func(b []byte) (Value, error) {
		if len(b) != size {
			return Value{}, ErrMalformed
		}
		switch size {
		case 2:
			return Value{I: int64(int16(binary.BigEndian.Uint16(b)))}, nil
		case 4:
			return Value{I: int64(int32(binary.BigEndian.Uint32(b)))}, nil
		}
		return Value{I: int64(binary.BigEndian.Uint64(b))}, nil
	}
}

func oidBinary(b []byte) (Value, error) {
	if len(b) != 4 {
		return Value{}, ErrMalformed
	}
	return Value{I: int64(binary.BigEndian.Uint32(b))}, nil
}

func floatText(bits int) func([]byte) (Value, error) {
	return func(b []byte) (Value, error) {
		switch string(b) {
		case "NaN":
			return Value{F: math.NaN()}, nil
		case "Infinity":
			return Value{F: math.Inf(1)}, nil
		case "-Infinity":
			return Value{F: math.Inf(-1)}, nil
		}
		f, err := strconv.ParseFloat(string(b), bits)
		if err != nil {
			return Value{}, ErrMalformed
		}
		return Value{F: f}, nil
	}
}

func float4Binary(b []byte) (Value, error) {
	if len(b) != 4 {
		return Value{}, ErrMalformed
	}
	return Value{F: float64(math.Float32frombits(binary.BigEndian.Uint32(b)))}, nil
}

func float8Binary(b []byte) (Value, error) {
	if len(b) != 8 {
		return Value{}, ErrMalformed
	}
	return Value{F: math.Float64frombits(binary.BigEndian.Uint64(b))}, nil
}

func numericText(b []byte) (Value, error) {
	d, err := ParseNumeric(string(b))
	return Value{N: d}, err
}

func numericBinary(b []byte) (Value, error) {
	d, err := parseNumericBinary(b)
	return Value{N: d}, err
}

func byteaText(b []byte) (Value, error) {
	if bytes.HasPrefix(b, []byte(`\x`)) {
		out := make([]byte, hex.DecodedLen(len(b)-2))
		if _, err := hex.Decode(out, b[2:]); err != nil {
			return Value{}, ErrMalformed
		}
		return Value{B: out}, nil
	}
	// bytea_output = escape: \\ and \ooo escapes, other bytes as is.
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' {
			out = append(out, b[i])
			continue
		}
		switch {
		case i+1 < len(b) && b[i+1] == '\\':
			out = append(out, '\\')
			i++
		case i+3 < len(b):
			n, err := strconv.ParseUint(string(b[i+1:i+4]), 8, 8)
			if err != nil {
				return Value{}, ErrMalformed
			}
			out = append(out, byte(n))
			i += 3
		default:
			return Value{}, ErrMalformed
		}
	}
	return Value{B: out}, nil
}

func uuidText(b []byte) (Value, error) {
	s := strings.ReplaceAll(string(b), "-", "")
	out, err := hex.DecodeString(s)
	if err != nil || len(out) != 16 {
		return Value{}, ErrMalformed
	}
	return Value{B: out}, nil
}

func uuidBinary(b []byte) (Value, error) {
	if len(b) != 16 {
		return Value{}, ErrMalformed
	}
	return Value{B: b}, nil
}

// Dates and times count from 2000-01-01 (POSTGRES_EPOCH_JDATE); infinities
// are the int64 extremes, as timestamps store them.
const postgresEpochJDate = 2451545

func dateBinary(b []byte) (Value, error) {
	if len(b) != 4 {
		return Value{}, ErrMalformed
	}
	d := int32(binary.BigEndian.Uint32(b))
	switch d {
	case math.MinInt32:
		return Value{I: math.MinInt64}, nil
	case math.MaxInt32:
		return Value{I: math.MaxInt64}, nil
	}
	return Value{I: int64(d)}, nil
}

// date2j is datetime.c's date2j (proleptic Gregorian Julian day).
func date2j(year, month, day int64) int64 {
	if month > 2 {
		month++
		year += 4800
	} else {
		month += 13
		year += 4799
	}
	century := year / 100
	julian := year*365 - 32167
	julian += year/4 - century + century/4
	julian += 7834*month/256 + day
	return julian
}

// ErrDateStyle: a date or time value that is not in ISO style.
var ErrDateStyle = errors.New("date/time value is not in ISO DateStyle")

// parseISODate reads YYYY-MM-DD (more year digits allowed, never fewer:
// a HAVING literal '1-02-03' is read by Postgres under its DateStyle's
// field order, not as year 1) and returns
// days since 2000-01-01 and the rest of the text; bc marks a year before
// Christ (the text ended in " BC").
func parseISODate(s string, bc bool) (int64, string, error) {
	if s == "" {
		return 0, "", ErrDateStyle
	}
	dash := strings.IndexByte(s[1:], '-') + 1
	if dash < 4 || len(s) < dash+6 || s[dash+3] != '-' {
		return 0, "", ErrDateStyle
	}
	y, err1 := strconv.ParseInt(s[:dash], 10, 64)
	m, err2 := strconv.ParseInt(s[dash+1:dash+3], 10, 64)
	d, err3 := strconv.ParseInt(s[dash+4:dash+6], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return 0, "", ErrDateStyle
	}
	if bc {
		y = -(y - 1) // there is no year 0: 1 BC is year 0
	}
	return date2j(y, m, d) - postgresEpochJDate, s[dash+6:], nil
}

func infinity(s string) (int64, bool) {
	switch s {
	case "infinity":
		return math.MaxInt64, true
	case "-infinity":
		return math.MinInt64, true
	}
	return 0, false
}

func dateText(b []byte) (Value, error) {
	s := string(b)
	if v, ok := infinity(s); ok {
		return Value{I: v}, nil
	}
	bc := strings.HasSuffix(s, " BC")
	days, rest, err := parseISODate(strings.TrimSuffix(s, " BC"), bc)
	if err != nil || rest != "" {
		return Value{}, ErrDateStyle
	}
	return Value{I: days}, nil
}

// parseClock reads HH:MM:SS[.ffffff] into microseconds and returns the
// rest.
func parseClock(s string) (int64, string, error) {
	if len(s) < 8 || s[2] != ':' || s[5] != ':' {
		return 0, "", ErrDateStyle
	}
	h, err1 := strconv.ParseInt(s[0:2], 10, 64)
	m, err2 := strconv.ParseInt(s[3:5], 10, 64)
	sec, err3 := strconv.ParseInt(s[6:8], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return 0, "", ErrDateStyle
	}
	us := ((h*60+m)*60 + sec) * 1_000_000
	rest := s[8:]
	if strings.HasPrefix(rest, ".") {
		j := 1
		for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
			j++
		}
		frac := rest[1:j]
		if len(frac) > 6 {
			return 0, "", ErrDateStyle
		}
		f, err := strconv.ParseInt(frac+strings.Repeat("0", 6-len(frac)), 10, 64)
		if err != nil {
			return 0, "", ErrDateStyle
		}
		us += f
		rest = rest[j:]
	}
	return us, rest, nil
}

func timeText(b []byte) (Value, error) {
	us, rest, err := parseClock(string(b))
	if err != nil || rest != "" {
		return Value{}, ErrDateStyle
	}
	return Value{I: us}, nil
}

func timestampText(withZone bool) func([]byte) (Value, error) {
	return func(b []byte) (Value, error) {
		s := string(b)
		if v, ok := infinity(s); ok {
			return Value{I: v}, nil
		}
		bc := strings.HasSuffix(s, " BC")
		days, rest, err := parseISODate(strings.TrimSuffix(s, " BC"), bc)
		if err != nil || !strings.HasPrefix(rest, " ") {
			return Value{}, ErrDateStyle
		}
		us, rest, err := parseClock(rest[1:])
		if err != nil {
			return Value{}, ErrDateStyle
		}
		t := days*86_400_000_000 + us
		if withZone {
			off, err := parseOffset(rest)
			if err != nil {
				return Value{}, ErrDateStyle
			}
			t -= off
		} else if rest != "" {
			return Value{}, ErrDateStyle
		}
		return Value{I: t}, nil
	}
}

// parseOffset reads +HH[:MM[:SS]] into microseconds east of UTC.
func parseOffset(s string) (int64, error) {
	if len(s) < 3 || (s[0] != '+' && s[0] != '-') {
		return 0, ErrDateStyle
	}
	parts := strings.Split(s[1:], ":")
	if len(parts) > 3 {
		return 0, ErrDateStyle
	}
	var secs int64
	mult := []int64{3600, 60, 1}
	for i, p := range parts {
		n, err := strconv.ParseInt(p, 10, 64)
		if err != nil || len(p) != 2 {
			return 0, ErrDateStyle
		}
		secs += n * mult[i]
	}
	if s[0] == '-' {
		secs = -secs
	}
	return secs * 1_000_000, nil
}

// Compare orders two non-NULL values of one kind as Postgres's
// btree comparison does.
func Compare(k Kind, a, b Value) int {
	switch k {
	case KindInt, KindBool, KindTime:
		return cmp3(a.I, b.I)
	case KindFloat:
		an, bn := math.IsNaN(a.F), math.IsNaN(b.F)
		switch {
		case an && bn:
			return 0
		case an:
			return 1
		case bn:
			return -1
		case a.F < b.F:
			return -1
		case a.F > b.F:
			return 1
		}
		return 0 // includes -0 = 0
	case KindNumeric, KindInterval:
		return a.N.Cmp(b.N)
	case KindBytes:
		return bytes.Compare(a.B, b.B)
	}
	return 0
}

func cmp3(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// AppendKey appends a text that is equal for equal values (numeric 1.0 and
// 1.00, float -0 and 0, every NaN): hash keys of GROUP BY and DISTINCT.
func AppendKey(dst []byte, k Kind, v Value) []byte {
	if v.Null {
		return append(dst, 0)
	}
	dst = append(dst, 1)
	switch k {
	case KindInt, KindBool, KindTime:
		return binary.BigEndian.AppendUint64(dst, uint64(v.I))
	case KindFloat:
		f := v.F
		switch {
		case math.IsNaN(f):
			f = math.NaN()
		case f == 0:
			f = 0
		}
		return binary.BigEndian.AppendUint64(dst, math.Float64bits(f))
	case KindNumeric, KindInterval:
		c := v.N.canonical()
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(c)))
		return append(dst, c...)
	}
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(v.B)))
	return append(dst, v.B...)
}
