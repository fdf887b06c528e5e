package proxy

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math"
	"strconv"
	"strings"
)

// Values as merges see them. A merge compares column values (ORDER BY,
// min/max, DISTINCT, GROUP BY) and combines them (count, sum, avg) exactly
// as Postgres does, for the types listed in pgTypes, in the text or binary
// format the client asked for. Anything else is refused with 0A000 before
// the first row is sent.

// vkind is how a type's values compare.
type vkind uint8

const (
	kInt      vkind = iota + 1 // int2, int4, int8, oid: i
	kFloat                     // float4, float8: f (NaN after everything, -0 = 0)
	kNumeric                   // numeric: n
	kBytes                     // text types, bytea, uuid: b, bytewise
	kBool                      // bool: i (0, 1)
	kTime                      // date (days), time, timestamp, timestamptz (microseconds): i
	kInterval                  // interval: n is its span, b its binary form (interval.go)
)

// value is one decoded column value.
type value struct {
	null bool
	i    int64
	f    float64
	n    decimal
	b    []byte
}

// pgType is what a merge knows about a type.
type pgType struct {
	oid  uint32
	name string
	kind vkind
	// collatable types order by their collation; the proxy compares
	// bytes, which is right only for C (and POSIX) collation.
	collatable bool
	text       func([]byte) (value, error)
	binary     func([]byte) (value, error)
}

// Type OIDs (pg_type.dat).
const (
	oidBool        = 16
	oidBytea       = 17
	oidChar        = 18
	oidName        = 19
	oidInt8        = 20
	oidInt2        = 21
	oidInt4        = 23
	oidText        = 25
	oidOID         = 26
	oidFloat4      = 700
	oidFloat8      = 701
	oidBpchar      = 1042
	oidVarchar     = 1043
	oidDate        = 1082
	oidTime        = 1083
	oidTimestamp   = 1114
	oidTimestamptz = 1184
	oidInterval    = 1186
	oidNumeric     = 1700
	oidUUID        = 2950
)

var pgTypes = map[uint32]*pgType{}

func init() {
	for _, t := range []*pgType{
		{oid: oidBool, name: "boolean", kind: kBool, text: boolText, binary: boolBinary},
		{oid: oidBytea, name: "bytea", kind: kBytes, text: byteaText, binary: rawBytes},
		{oid: oidChar, name: `"char"`, kind: kBytes, text: rawBytes, binary: rawBytes},
		{oid: oidName, name: "name", kind: kBytes, text: rawBytes, binary: rawBytes},
		{oid: oidInt8, name: "bigint", kind: kInt, text: intText, binary: intBinary(8)},
		{oid: oidInt2, name: "smallint", kind: kInt, text: intText, binary: intBinary(2)},
		{oid: oidInt4, name: "integer", kind: kInt, text: intText, binary: intBinary(4)},
		{oid: oidText, name: "text", kind: kBytes, collatable: true, text: rawBytes, binary: rawBytes},
		{oid: oidOID, name: "oid", kind: kInt, text: intText, binary: oidBinary},
		{oid: oidFloat4, name: "real", kind: kFloat, text: floatText(32), binary: float4Binary},
		{oid: oidFloat8, name: "double precision", kind: kFloat, text: floatText(64), binary: float8Binary},
		{oid: oidBpchar, name: "character", kind: kBytes, collatable: true, text: bpcharBytes, binary: bpcharBytes},
		{oid: oidVarchar, name: "character varying", kind: kBytes, collatable: true, text: rawBytes, binary: rawBytes},
		{oid: oidDate, name: "date", kind: kTime, text: dateText, binary: dateBinary},
		{oid: oidTime, name: "time without time zone", kind: kTime, text: timeText, binary: intBinary(8)},
		{oid: oidTimestamp, name: "timestamp without time zone", kind: kTime, text: timestampText(false), binary: intBinary(8)},
		{oid: oidTimestamptz, name: "timestamp with time zone", kind: kTime, text: timestampText(true), binary: intBinary(8)},
		{oid: oidNumeric, name: "numeric", kind: kNumeric, text: numericText, binary: numericBinary},
		{oid: oidInterval, name: "interval", kind: kInterval, text: intervalText, binary: intervalBinary},
		{oid: oidUUID, name: "uuid", kind: kBytes, text: uuidText, binary: uuidBinary},
	} {
		pgTypes[t.oid] = t
	}
}

// typeName names a type OID for messages.
func typeName(oid uint32) string {
	if t, ok := pgTypes[oid]; ok {
		return t.name
	}
	switch oid {
	case 114:
		return "json"
	case 3802:
		return "jsonb"
	case 790:
		return "money"
	}
	return "type OID " + strconv.FormatUint(uint64(oid), 10)
}

var errBadValue = errors.New("malformed value")

// decode reads one column value in the given wire format (nil is NULL).
func (t *pgType) decode(raw []byte, format int16) (value, error) {
	if raw == nil {
		return value{null: true}, nil
	}
	if format == 1 {
		return t.binary(raw)
	}
	return t.text(raw)
}

func rawBytes(b []byte) (value, error) { return value{b: b}, nil }

// bpcharBytes drops trailing blanks, which bpchar comparison ignores
// (bpcharcmp compares the lengths without them).
func bpcharBytes(b []byte) (value, error) { return value{b: bytes.TrimRight(b, " ")}, nil }

func boolText(b []byte) (value, error) {
	switch string(b) {
	case "t":
		return value{i: 1}, nil
	case "f":
		return value{i: 0}, nil
	}
	return value{}, errBadValue
}

func boolBinary(b []byte) (value, error) {
	if len(b) != 1 {
		return value{}, errBadValue
	}
	if b[0] != 0 {
		return value{i: 1}, nil
	}
	return value{}, nil
}

func intText(b []byte) (value, error) {
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return value{}, errBadValue
	}
	return value{i: n}, nil
}

func intBinary(size int) func([]byte) (value, error) {
	return func(b []byte) (value, error) {
		if len(b) != size {
			return value{}, errBadValue
		}
		switch size {
		case 2:
			return value{i: int64(int16(binary.BigEndian.Uint16(b)))}, nil
		case 4:
			return value{i: int64(int32(binary.BigEndian.Uint32(b)))}, nil
		}
		return value{i: int64(binary.BigEndian.Uint64(b))}, nil
	}
}

func oidBinary(b []byte) (value, error) {
	if len(b) != 4 {
		return value{}, errBadValue
	}
	return value{i: int64(binary.BigEndian.Uint32(b))}, nil
}

func floatText(bits int) func([]byte) (value, error) {
	return func(b []byte) (value, error) {
		switch string(b) {
		case "NaN":
			return value{f: math.NaN()}, nil
		case "Infinity":
			return value{f: math.Inf(1)}, nil
		case "-Infinity":
			return value{f: math.Inf(-1)}, nil
		}
		f, err := strconv.ParseFloat(string(b), bits)
		if err != nil {
			return value{}, errBadValue
		}
		return value{f: f}, nil
	}
}

func float4Binary(b []byte) (value, error) {
	if len(b) != 4 {
		return value{}, errBadValue
	}
	return value{f: float64(math.Float32frombits(binary.BigEndian.Uint32(b)))}, nil
}

func float8Binary(b []byte) (value, error) {
	if len(b) != 8 {
		return value{}, errBadValue
	}
	return value{f: math.Float64frombits(binary.BigEndian.Uint64(b))}, nil
}

func numericText(b []byte) (value, error) {
	d, err := parseNumericText(string(b))
	return value{n: d}, err
}

func numericBinary(b []byte) (value, error) {
	d, err := parseNumericBinary(b)
	return value{n: d}, err
}

func byteaText(b []byte) (value, error) {
	if bytes.HasPrefix(b, []byte(`\x`)) {
		out := make([]byte, hex.DecodedLen(len(b)-2))
		if _, err := hex.Decode(out, b[2:]); err != nil {
			return value{}, errBadValue
		}
		return value{b: out}, nil
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
				return value{}, errBadValue
			}
			out = append(out, byte(n))
			i += 3
		default:
			return value{}, errBadValue
		}
	}
	return value{b: out}, nil
}

func uuidText(b []byte) (value, error) {
	s := strings.ReplaceAll(string(b), "-", "")
	out, err := hex.DecodeString(s)
	if err != nil || len(out) != 16 {
		return value{}, errBadValue
	}
	return value{b: out}, nil
}

func uuidBinary(b []byte) (value, error) {
	if len(b) != 16 {
		return value{}, errBadValue
	}
	return value{b: b}, nil
}

// Dates and times count from 2000-01-01 (POSTGRES_EPOCH_JDATE); infinities
// are the int64 extremes, as timestamps store them.
const postgresEpochJDate = 2451545

func dateBinary(b []byte) (value, error) {
	if len(b) != 4 {
		return value{}, errBadValue
	}
	d := int32(binary.BigEndian.Uint32(b))
	switch d {
	case math.MinInt32:
		return value{i: math.MinInt64}, nil
	case math.MaxInt32:
		return value{i: math.MaxInt64}, nil
	}
	return value{i: int64(d)}, nil
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

// errDateStyle: a date or time value that is not in ISO style.
var errDateStyle = errors.New("date/time value is not in ISO DateStyle")

// parseISODate reads YYYY-MM-DD (more year digits allowed) and returns
// days since 2000-01-01 and the rest of the text; bc marks a year before
// Christ (the text ended in " BC").
func parseISODate(s string, bc bool) (int64, string, error) {
	if s == "" {
		return 0, "", errDateStyle
	}
	dash := strings.IndexByte(s[1:], '-') + 1
	if dash <= 0 || len(s) < dash+6 || s[dash+3] != '-' {
		return 0, "", errDateStyle
	}
	y, err1 := strconv.ParseInt(s[:dash], 10, 64)
	m, err2 := strconv.ParseInt(s[dash+1:dash+3], 10, 64)
	d, err3 := strconv.ParseInt(s[dash+4:dash+6], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return 0, "", errDateStyle
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

func dateText(b []byte) (value, error) {
	s := string(b)
	if v, ok := infinity(s); ok {
		return value{i: v}, nil
	}
	bc := strings.HasSuffix(s, " BC")
	days, rest, err := parseISODate(strings.TrimSuffix(s, " BC"), bc)
	if err != nil || rest != "" {
		return value{}, errDateStyle
	}
	return value{i: days}, nil
}

// parseClock reads HH:MM:SS[.ffffff] into microseconds and returns the
// rest.
func parseClock(s string) (int64, string, error) {
	if len(s) < 8 || s[2] != ':' || s[5] != ':' {
		return 0, "", errDateStyle
	}
	h, err1 := strconv.ParseInt(s[0:2], 10, 64)
	m, err2 := strconv.ParseInt(s[3:5], 10, 64)
	sec, err3 := strconv.ParseInt(s[6:8], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return 0, "", errDateStyle
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
			return 0, "", errDateStyle
		}
		f, err := strconv.ParseInt(frac+strings.Repeat("0", 6-len(frac)), 10, 64)
		if err != nil {
			return 0, "", errDateStyle
		}
		us += f
		rest = rest[j:]
	}
	return us, rest, nil
}

func timeText(b []byte) (value, error) {
	us, rest, err := parseClock(string(b))
	if err != nil || rest != "" {
		return value{}, errDateStyle
	}
	return value{i: us}, nil
}

func timestampText(withZone bool) func([]byte) (value, error) {
	return func(b []byte) (value, error) {
		s := string(b)
		if v, ok := infinity(s); ok {
			return value{i: v}, nil
		}
		bc := strings.HasSuffix(s, " BC")
		days, rest, err := parseISODate(strings.TrimSuffix(s, " BC"), bc)
		if err != nil || !strings.HasPrefix(rest, " ") {
			return value{}, errDateStyle
		}
		us, rest, err := parseClock(rest[1:])
		if err != nil {
			return value{}, errDateStyle
		}
		t := days*86_400_000_000 + us
		if withZone {
			off, err := parseOffset(rest)
			if err != nil {
				return value{}, errDateStyle
			}
			t -= off
		} else if rest != "" {
			return value{}, errDateStyle
		}
		return value{i: t}, nil
	}
}

// parseOffset reads +HH[:MM[:SS]] into microseconds east of UTC.
func parseOffset(s string) (int64, error) {
	if len(s) < 3 || (s[0] != '+' && s[0] != '-') {
		return 0, errDateStyle
	}
	parts := strings.Split(s[1:], ":")
	if len(parts) > 3 {
		return 0, errDateStyle
	}
	var secs int64
	mult := []int64{3600, 60, 1}
	for i, p := range parts {
		n, err := strconv.ParseInt(p, 10, 64)
		if err != nil || len(p) != 2 {
			return 0, errDateStyle
		}
		secs += n * mult[i]
	}
	if s[0] == '-' {
		secs = -secs
	}
	return secs * 1_000_000, nil
}

// compareValues orders two non-NULL values of one kind as Postgres's
// btree comparison does.
func compareValues(k vkind, a, b value) int {
	switch k {
	case kInt, kBool, kTime:
		return cmp3(a.i, b.i)
	case kFloat:
		an, bn := math.IsNaN(a.f), math.IsNaN(b.f)
		switch {
		case an && bn:
			return 0
		case an:
			return 1
		case bn:
			return -1
		case a.f < b.f:
			return -1
		case a.f > b.f:
			return 1
		}
		return 0 // includes -0 = 0
	case kNumeric, kInterval:
		return a.n.cmp(b.n)
	case kBytes:
		return bytes.Compare(a.b, b.b)
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

// appendKey appends a text that is equal for equal values (numeric 1.0 and
// 1.00, float -0 and 0, every NaN): hash keys of GROUP BY and DISTINCT.
func appendKey(dst []byte, k vkind, v value) []byte {
	if v.null {
		return append(dst, 0)
	}
	dst = append(dst, 1)
	switch k {
	case kInt, kBool, kTime:
		return binary.BigEndian.AppendUint64(dst, uint64(v.i))
	case kFloat:
		f := v.f
		switch {
		case math.IsNaN(f):
			f = math.NaN()
		case f == 0:
			f = 0
		}
		return binary.BigEndian.AppendUint64(dst, math.Float64bits(f))
	case kNumeric, kInterval:
		c := v.n.canonical()
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(c)))
		return append(dst, c...)
	}
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(v.b)))
	return append(dst, v.b...)
}
