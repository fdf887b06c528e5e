package pgvalue

import (
	"math"
	"strconv"
	"strings"
)

// Text output of float4 and float8 as float.c writes it, for sums and
// averages the proxy computes itself. With extra_float_digits > 0 (the
// default, 1) the backend prints the shortest text that reads back to the
// same value (Ryu, src/common/d2s.c and f2s.c), in fixed notation when the
// decimal exponent is in [-4, 15) for float8 and [-4, 6) for float4, else
// as d.ddde+XX. Otherwise it prints "%.*g" with DBL_DIG (FLT_DIG) +
// extra_float_digits significant digits.

// AppendFloat8Text appends float8out's text of f under extra_float_digits
// extraDigits.
func AppendFloat8Text(dst []byte, f float64, extraDigits int) []byte {
	if s, ok := floatSpecial(f); ok {
		return append(dst, s...)
	}
	if extraDigits > 0 {
		return appendShortest(dst, f, 64, 15)
	}
	return appendPrintfG(dst, f, 15+extraDigits)
}

// AppendFloat4Text appends float4out's text of f under extra_float_digits
// extraDigits.
func AppendFloat4Text(dst []byte, f float32, extraDigits int) []byte {
	if s, ok := floatSpecial(float64(f)); ok {
		return append(dst, s...)
	}
	if extraDigits > 0 {
		return appendShortest(dst, float64(f), 32, 6)
	}
	return appendPrintfG(dst, float64(f), 6+extraDigits)
}

func floatSpecial(f float64) (string, bool) {
	switch {
	case math.IsNaN(f):
		return "NaN", true
	case math.IsInf(f, 1):
		return "Infinity", true
	case math.IsInf(f, -1):
		return "-Infinity", true
	case f == 0 && math.Signbit(f):
		return "-0", true
	case f == 0:
		return "0", true
	}
	return "", false
}

// appendShortest formats the shortest round-tripping digits the way Ryu's
// to_chars does in Postgres: fixed notation for exponents in [-4, fixedMax),
// scientific with at least two exponent digits otherwise.
func appendShortest(dst []byte, f float64, bits, fixedMax int) []byte {
	e := strconv.FormatFloat(f, 'e', -1, bits) // -d.ddde±XX
	neg := strings.HasPrefix(e, "-")
	if neg {
		e = e[1:]
		dst = append(dst, '-')
	}
	mant, expText, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(expText)
	digits := strings.Replace(mant, ".", "", 1)
	if exp >= -4 && exp < fixedMax {
		switch {
		case exp < 0:
			dst = append(dst, "0."...)
			dst = append(dst, strings.Repeat("0", -exp-1)...)
			return append(dst, digits...)
		case len(digits) <= exp+1:
			dst = append(dst, digits...)
			return append(dst, strings.Repeat("0", exp+1-len(digits))...)
		default:
			dst = append(dst, digits[:exp+1]...)
			dst = append(dst, '.')
			return append(dst, digits[exp+1:]...)
		}
	}
	dst = append(dst, digits[0])
	if len(digits) > 1 {
		dst = append(dst, '.')
		dst = append(dst, digits[1:]...)
	}
	dst = append(dst, 'e')
	if exp < 0 {
		dst = append(dst, '-')
		exp = -exp
	} else {
		dst = append(dst, '+')
	}
	if exp < 10 {
		dst = append(dst, '0')
	}
	return strconv.AppendInt(dst, int64(exp), 10)
}

// appendPrintfG is C's "%.*g" (which Go's 'g' format matches: trailing
// zeros removed, exponent of at least two digits).
func appendPrintfG(dst []byte, f float64, digits int) []byte {
	if digits < 1 {
		digits = 1
	}
	return strconv.AppendFloat(dst, f, 'g', digits, 64)
}
