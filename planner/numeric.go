package planner

import (
	"encoding/binary"
	"math"
	"strconv"
	"strings"

	"github.com/shardgate/shardgate/keyexpr"
	"github.com/shardgate/shardgate/sqlerr"
)

// decimal is a value of Postgres's numeric type: neg, digits and exp
// give (-1)^neg × digits × 10^exp (digits without leading zeros, "" for
// zero), scale is the display scale numeric_in keeps (the digits after
// the point, so that 7.50 prints as 7.50), and special marks NaN and the
// infinities. Shard keys only need comparisons and conversions, so
// there is no arithmetic.
type decimal struct {
	special decimalSpecial
	neg     bool
	digits  string
	exp     int
	scale   int
}

type decimalSpecial uint8

const (
	decFinite decimalSpecial = iota
	decNaN
	decPosInf
	decNegInf
)

// Limits of the numeric type's storage (src/backend/utils/adt/numeric.c):
// the display scale is 14 bits, the weight a 16-bit count of base-10000
// digits.
const (
	numericMaxScale  = 0x3FFF
	numericMaxWeight = 32767
)

func numericOverflow() error {
	return sqlerr.New(sqlerr.NumericValueOutOfRange, "value overflows numeric format")
}

// parseNumeric is numeric_in (Postgres 15): optional white space around
// NaN, [+-]Infinity, [+-]inf, or a decimal number with an optional point
// and exponent. Malformed text is 22P02, a value beyond the type's range
// 22003, both with Postgres's messages.
func parseNumeric(s string) (decimal, error) {
	invalid := func() (decimal, error) {
		return decimal{}, sqlerr.New(sqlerr.InvalidTextRepresentation, "invalid input syntax for type numeric: %s", strconv.Quote(s))
	}
	t := strings.TrimLeft(s, " \t\n\r\v\f")
	end := strings.TrimRight(t, " \t\n\r\v\f")
	if end == "" {
		return invalid()
	}
	for _, sp := range []struct {
		text string
		v    decimalSpecial
	}{
		{"nan", decNaN}, {"infinity", decPosInf}, {"+infinity", decPosInf}, {"-infinity", decNegInf},
		{"inf", decPosInf}, {"+inf", decPosInf}, {"-inf", decNegInf},
	} {
		if strings.EqualFold(end, sp.text) {
			return decimal{special: sp.v}, nil
		}
	}
	var d decimal
	i := 0
	switch end[0] {
	case '-':
		d.neg = true
		i++
	case '+':
		i++
	}
	var digits strings.Builder
	seenPoint, seenDigit := false, false
	frac := 0
	for ; i < len(end); i++ {
		c := end[i]
		switch {
		case isDigit(c):
			seenDigit = true
			digits.WriteByte(c)
			if seenPoint {
				frac++
			}
			continue
		case c == '.' && !seenPoint:
			seenPoint = true
			continue
		}
		break
	}
	if !seenDigit {
		return invalid()
	}
	exp := 0
	if i < len(end) && (end[i] == 'e' || end[i] == 'E') {
		i++
		j := i
		if j < len(end) && (end[j] == '+' || end[j] == '-') {
			j++
		}
		k := j
		for k < len(end) && isDigit(end[k]) {
			k++
		}
		if k == j {
			return invalid()
		}
		e, err := strconv.Atoi(end[i:k])
		if err != nil || e >= math.MaxInt32/2 || e <= -(math.MaxInt32/2) {
			return decimal{}, numericOverflow()
		}
		exp = e
		i = k
	}
	if i != len(end) {
		return invalid()
	}
	d.scale = max(frac-exp, 0)
	d.exp = exp - frac
	d.digits = strings.TrimLeft(digits.String(), "0")
	if d.digits == "" {
		d.neg, d.exp = false, 0 // zero, whatever its exponent (0e999999999)
	}
	if d.scale > numericMaxScale || d.digits != "" && floorDiv(len(d.digits)-1+d.exp, 4) > numericMaxWeight {
		return decimal{}, numericOverflow()
	}
	return d, nil
}

// floorDiv divides rounding towards minus infinity.
func floorDiv(a, b int) int {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// decimalFromInt is the numeric value of an integer.
func decimalFromInt(n int64) decimal {
	s := strconv.FormatInt(n, 10)
	d := decimal{neg: n < 0}
	d.digits = strings.TrimLeft(strings.TrimPrefix(s, "-"), "0")
	return d
}

// exactInt returns the value as an int64 when it is an integer within
// int64's range.
func (d decimal) exactInt() (int64, bool) {
	if d.special != decFinite {
		return 0, false
	}
	digits, exp := strings.TrimRight(d.digits, "0"), d.exp+len(d.digits)-len(strings.TrimRight(d.digits, "0"))
	if digits == "" {
		return 0, true
	}
	if exp < 0 || len(digits)+exp > 19 {
		return 0, false
	}
	return parseMagnitude(digits+strings.Repeat("0", exp), d.neg)
}

// parseMagnitude converts at most 19 decimal digits with a sign to an
// int64, if it fits.
func parseMagnitude(digits string, neg bool) (int64, bool) {
	u, err := strconv.ParseUint(digits, 10, 64)
	if err != nil {
		return 0, false
	}
	switch {
	case neg && u <= 1<<63:
		return int64(-u), true
	case !neg && u < 1<<63:
		return int64(u), true
	}
	return 0, false
}

// toInt is the cast of numeric to smallint, integer or bigint (bits 16,
// 32, 64): rounded half away from zero; NaN and the infinities are 0A000,
// values outside the type 22003, as numeric_int8 and friends say.
func (d decimal) toInt(bits int) (int64, error) {
	typ := keyexpr.IntegerTypeName(bits)
	switch d.special {
	case decNaN:
		return 0, sqlerr.New(sqlerr.FeatureNotSupported, "cannot convert NaN to %s", typ)
	case decPosInf, decNegInf:
		return 0, sqlerr.New(sqlerr.FeatureNotSupported, "cannot convert infinity to %s", typ)
	}
	outOfRange := sqlerr.New(sqlerr.NumericValueOutOfRange, "%s out of range", typ)
	var n int64
	if d.exp >= 0 {
		if len(d.digits)+d.exp > 19 && d.digits != "" {
			return 0, outOfRange
		}
		var ok bool
		if n, ok = parseMagnitude(d.digits+strings.Repeat("0", d.exp), d.neg); !ok && d.digits != "" {
			return 0, outOfRange
		}
	} else {
		cut := len(d.digits) + d.exp // digits before the point
		intPart, roundUp := "", false
		switch {
		case cut > 19:
			return 0, outOfRange
		case cut > 0:
			intPart, roundUp = d.digits[:cut], d.digits[cut] >= '5'
		case cut == 0:
			roundUp = d.digits != "" && d.digits[0] >= '5'
		}
		u, err := strconv.ParseUint("0"+intPart, 10, 64)
		if err != nil {
			return 0, outOfRange
		}
		if roundUp {
			u++
		}
		if d.neg && u > 1<<63 || !d.neg && u >= 1<<63 {
			return 0, outOfRange
		}
		n = int64(u)
		if d.neg {
			n = int64(-u)
		}
	}
	if !intFits(n, bits) {
		return 0, outOfRange
	}
	return n, nil
}

// toFloat is the cast of numeric to double precision (bits 64) or real
// (32): the nearest value; overflow and underflow are 22003.
func (d decimal) toFloat(bits int) (float64, error) {
	switch d.special {
	case decNaN:
		return math.NaN(), nil
	case decPosInf:
		return math.Inf(1), nil
	case decNegInf:
		return math.Inf(-1), nil
	}
	if d.digits == "" {
		return 0, nil
	}
	f, err := strconv.ParseFloat(d.mantissaText(), bits)
	if err != nil || math.IsInf(f, 0) || f == 0 {
		return 0, sqlerr.New(sqlerr.NumericValueOutOfRange, "%s is out of range for type %s", strconv.Quote(d.String()), floatTypeName(bits))
	}
	return f, nil
}

// mantissaText is the value as digits with an exponent, for
// strconv.ParseFloat.
func (d decimal) mantissaText() string {
	s := d.digits + "e" + strconv.Itoa(d.exp)
	if d.neg {
		return "-" + s
	}
	return s
}

// String is numeric_out: plain notation with the display scale's
// fraction digits.
func (d decimal) String() string {
	switch d.special {
	case decNaN:
		return "NaN"
	case decPosInf:
		return "Infinity"
	case decNegInf:
		return "-Infinity"
	}
	digits, exp := d.digits, d.exp
	if digits == "" {
		digits, exp = "0", 0
	}
	// Put the digits on the display scale: pad or cut (numeric_in keeps
	// every digit it was given, so a cut only drops zeros).
	if -exp < d.scale {
		digits += strings.Repeat("0", d.scale+exp)
	} else if -exp > d.scale {
		digits = digits[:len(digits)-(-exp-d.scale)]
	}
	if len(digits) <= d.scale {
		digits = strings.Repeat("0", d.scale-len(digits)+1) + digits
	}
	out := digits
	if d.scale > 0 {
		out = digits[:len(digits)-d.scale] + "." + digits[len(digits)-d.scale:]
	}
	if d.neg {
		return "-" + out
	}
	return out
}

// decimalFromFloat is the cast of double precision (bits 64) or real (32)
// to numeric: float8_numeric prints the value with 15 significant digits
// (real: 6) and reads that back.
func decimalFromFloat(f float64, bits int) decimal {
	switch {
	case math.IsNaN(f):
		return decimal{special: decNaN}
	case math.IsInf(f, 1):
		return decimal{special: decPosInf}
	case math.IsInf(f, -1):
		return decimal{special: decNegInf}
	}
	prec := 15
	if bits == 32 {
		prec = 6
	}
	d, err := parseNumeric(strconv.FormatFloat(f, 'g', prec, bits))
	if err != nil {
		return decimal{special: decNaN} // cannot happen: %g of a finite float parses
	}
	return d
}

// parseFloat is float8in (bits 64) and float4in (32): optional white
// space around a number as strtod reads it (hexadecimal included), NaN,
// [+-]Infinity or [+-]inf; a value beyond the type's range, including one
// that underflows to zero, is 22003.
func parseFloat(s string, bits int) (float64, error) {
	typ := floatTypeName(bits)
	invalid := sqlerr.New(sqlerr.InvalidTextRepresentation, "invalid input syntax for type %s: %s", typ, strconv.Quote(s))
	t := strings.Trim(s, " \t\n\r\v\f")
	body := strings.ToLower(t)
	neg := false
	if body != "" && (body[0] == '+' || body[0] == '-') {
		neg, body = body[0] == '-', body[1:]
	}
	switch body {
	case "nan":
		return math.NaN(), nil
	case "infinity", "inf":
		if neg {
			return math.Inf(-1), nil
		}
		return math.Inf(1), nil
	case "":
		return 0, invalid
	}
	hex := strings.HasPrefix(body, "0x")
	mantissa := body
	if hex {
		mantissa, _, _ = strings.Cut(body[2:], "p")
	} else {
		mantissa, _, _ = strings.Cut(body, "e")
	}
	if strings.ContainsAny(body, "_in") || !hex && strings.ContainsAny(body, "abcdfx") {
		return 0, invalid
	}
	text := t
	if hex && !strings.Contains(body, "p") {
		text += "p0" // strtod reads hexadecimal without an exponent; Go needs one
	}
	f, err := strconv.ParseFloat(text, bits)
	if ne, ok := err.(*strconv.NumError); ok && ne.Err != strconv.ErrRange {
		return 0, invalid
	}
	if err != nil || f == 0 && strings.ContainsAny(mantissa, "123456789abcdef") {
		return 0, sqlerr.New(sqlerr.NumericValueOutOfRange, "%s is out of range for type %s", strconv.Quote(s), typ)
	}
	return f, nil
}

// floatToInt is the cast of double precision or real to an integer type:
// rounded to the nearest integer, ties to even (rint); NaN, the
// infinities and values outside the type are 22003.
func floatToInt(f float64, bits int) (int64, error) {
	r := math.RoundToEven(f)
	limit := math.Ldexp(1, bits-1)
	if math.IsNaN(r) || r < -limit || r >= limit {
		return 0, sqlerr.New(sqlerr.NumericValueOutOfRange, "%s out of range", keyexpr.IntegerTypeName(bits))
	}
	return int64(r), nil
}

// toFloat4 is the cast of double precision to real: overflow and
// underflow are 22003.
func toFloat4(f float64) (float64, error) {
	r := float32(f)
	switch {
	case math.IsInf(float64(r), 0) && !math.IsInf(f, 0):
		return 0, sqlerr.New(sqlerr.NumericValueOutOfRange, "value out of range: overflow")
	case r == 0 && f != 0:
		return 0, sqlerr.New(sqlerr.NumericValueOutOfRange, "value out of range: underflow")
	}
	return float64(r), nil
}

// decodeBinaryNumeric reads numeric_send's format: the count of base-10000
// digits, the weight of the first, the sign (0x0000, 0x4000 negative,
// 0xC000 NaN, 0xD000 Infinity, 0xF000 -Infinity), the display scale, then
// the digits.
func decodeBinaryNumeric(b []byte) (decimal, bool) {
	if len(b) < 8 {
		return decimal{}, false
	}
	ndigits := int(int16(binary.BigEndian.Uint16(b)))
	weight := int(int16(binary.BigEndian.Uint16(b[2:])))
	sign := binary.BigEndian.Uint16(b[4:])
	scale := int(binary.BigEndian.Uint16(b[6:]))
	if ndigits < 0 || len(b) != 8+2*ndigits || scale > numericMaxScale {
		return decimal{}, false
	}
	switch sign {
	case 0xC000:
		return decimal{special: decNaN}, true
	case 0xD000:
		return decimal{special: decPosInf}, true
	case 0xF000:
		return decimal{special: decNegInf}, true
	case 0x0000, 0x4000:
	default:
		return decimal{}, false
	}
	var sb strings.Builder
	for i := 0; i < ndigits; i++ {
		g := binary.BigEndian.Uint16(b[8+2*i:])
		if g > 9999 {
			return decimal{}, false
		}
		s := strconv.Itoa(int(g))
		sb.WriteString(strings.Repeat("0", 4-len(s)) + s)
	}
	d := decimal{neg: sign == 0x4000, scale: scale}
	// The first base-10000 digit has weight `weight`: its last decimal
	// digit stands for 10^(4*weight).
	d.exp = 4 * (weight - ndigits + 1)
	d.digits = strings.TrimLeft(sb.String(), "0")
	if cut := -d.exp - scale; cut > 0 {
		// Digits the display scale hides are truncated away, as
		// numeric_recv does.
		d.digits = d.digits[:max(len(d.digits)-cut, 0)]
		d.exp = -scale
	}
	if d.digits == "" {
		d.neg, d.exp = false, 0
	}
	return d, true
}

func floatTypeName(bits int) string {
	if bits == 32 {
		return "real"
	}
	return "double precision"
}

// intFits reports whether n fits a signed integer of the given width.
func intFits(n int64, bits int) bool {
	if bits >= 64 {
		return true
	}
	limit := int64(1) << (bits - 1)
	return n >= -limit && n < limit
}
