package pgvalue

import (
	"encoding/binary"
	"errors"
	"math/big"
	"strconv"
	"strings"
)

// Decimal is a Postgres numeric: an exact decimal with its display scale
// (dscale, the number of digits after the point it prints), or NaN or an
// infinity. Merges add numerics exactly and divide them with the backend's
// result scale (numeric.c, select_div_scale), so sum() and avg() across
// shards print exactly what one Postgres prints.
type Decimal struct {
	special int8     // decFinite, decNaN, decPInf, decNInf
	u       *big.Int // unscaled value: the number is u / 10^scale
	scale   int
}

const (
	decFinite int8 = iota
	decNaN
	decPInf
	decNInf
)

// Binary numeric sign words (numeric.c).
const (
	numericPos  = 0x0000
	numericNeg  = 0x4000
	numericNaN  = 0xC000
	numericPInf = 0xD000
	numericNInf = 0xF000
)

var errBadNumeric = errors.New("malformed numeric value")

// DecimalFromInt is n as a numeric of scale 0.
func DecimalFromInt(n int64) Decimal { return Decimal{u: big.NewInt(n)} }

// ParseNumeric reads numeric_out's text (and the literals a client
// writes: an optional exponent is accepted too).
func ParseNumeric(s string) (Decimal, error) {
	t := strings.TrimSpace(s)
	switch strings.ToLower(t) {
	case "nan":
		return Decimal{special: decNaN}, nil
	case "infinity", "+infinity", "inf", "+inf":
		return Decimal{special: decPInf}, nil
	case "-infinity", "-inf":
		return Decimal{special: decNInf}, nil
	}
	neg := false
	switch {
	case strings.HasPrefix(t, "-"):
		neg, t = true, t[1:]
	case strings.HasPrefix(t, "+"):
		t = t[1:]
	}
	exp := 0
	if i := strings.IndexAny(t, "eE"); i >= 0 {
		e, err := parseSmallInt(t[i+1:])
		if err != nil {
			return Decimal{}, errBadNumeric
		}
		exp, t = e, t[:i]
	}
	intPart, frac, _ := strings.Cut(t, ".")
	digits := intPart + frac
	if digits == "" {
		return Decimal{}, errBadNumeric
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return Decimal{}, errBadNumeric
		}
	}
	u, ok := new(big.Int).SetString(digits, 10)
	if !ok {
		return Decimal{}, errBadNumeric
	}
	scale := len(frac) - exp
	if scale < 0 {
		u.Mul(u, pow10(-scale))
		scale = 0
	}
	if neg {
		u.Neg(u)
	}
	return Decimal{u: u, scale: scale}, nil
}

func parseSmallInt(s string) (int, error) {
	neg := false
	switch {
	case strings.HasPrefix(s, "-"):
		neg, s = true, s[1:]
	case strings.HasPrefix(s, "+"):
		s = s[1:]
	}
	if s == "" || len(s) > 6 {
		return 0, errBadNumeric
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, errBadNumeric
		}
		n = n*10 + int(s[i]-'0')
	}
	if neg {
		n = -n
	}
	return n, nil
}

// pow10Table holds 10^0 .. 10^63, computed once: shared by every
// goroutine, so never written after init.
var pow10Table = func() (t [64]*big.Int) {
	p := big.NewInt(1)
	for i := range t {
		t[i] = new(big.Int).Set(p)
		p.Mul(p, big.NewInt(10))
	}
	return t
}()

// pow10 is 10^n. The result may be shared: callers must not modify it.
func pow10(n int) *big.Int {
	if n < len(pow10Table) {
		return pow10Table[n]
	}
	return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil)
}

// parseNumericBinary reads numeric_send's format: ndigits, weight, sign,
// dscale (int16 each), then ndigits base-10000 digits.
func parseNumericBinary(b []byte) (Decimal, error) {
	if len(b) < 8 {
		return Decimal{}, errBadNumeric
	}
	ndigits := int(binary.BigEndian.Uint16(b))
	weight := int(int16(binary.BigEndian.Uint16(b[2:])))
	sign := binary.BigEndian.Uint16(b[4:])
	dscale := int(binary.BigEndian.Uint16(b[6:]))
	switch sign {
	case numericNaN:
		return Decimal{special: decNaN}, nil
	case numericPInf:
		return Decimal{special: decPInf}, nil
	case numericNInf:
		return Decimal{special: decNInf}, nil
	case numericPos, numericNeg:
	default:
		return Decimal{}, errBadNumeric
	}
	if len(b) != 8+2*ndigits {
		return Decimal{}, errBadNumeric
	}
	// value = sum digit[i] * 10000^(weight-i); unscaled = value * 10^dscale.
	u := new(big.Int)
	var d big.Int
	scaleOfDigits := 4 * (ndigits - 1 - weight) // decimal places the digit string spans
	for i := 0; i < ndigits; i++ {
		u.Mul(u, big.NewInt(10000))
		u.Add(u, d.SetInt64(int64(binary.BigEndian.Uint16(b[8+2*i:]))))
	}
	switch {
	case scaleOfDigits < dscale:
		u.Mul(u, pow10(dscale-scaleOfDigits))
	case scaleOfDigits > dscale:
		// Trailing digits beyond dscale are zero in numeric_send's
		// output; divide them away.
		u.Quo(u, pow10(scaleOfDigits-dscale))
	}
	if sign == numericNeg {
		u.Neg(u)
	}
	return Decimal{u: u, scale: dscale}, nil
}

// AppendText appends numeric_out's text: no exponent, exactly scale digits
// after the point.
func (d Decimal) AppendText(dst []byte) []byte {
	switch d.special {
	case decNaN:
		return append(dst, "NaN"...)
	case decPInf:
		return append(dst, "Infinity"...)
	case decNInf:
		return append(dst, "-Infinity"...)
	}
	s := new(big.Int).Abs(d.u).String()
	if d.u.Sign() < 0 {
		dst = append(dst, '-')
	}
	if d.scale == 0 {
		return append(dst, s...)
	}
	if len(s) <= d.scale {
		s = strings.Repeat("0", d.scale-len(s)+1) + s
	}
	dst = append(dst, s[:len(s)-d.scale]...)
	dst = append(dst, '.')
	return append(dst, s[len(s)-d.scale:]...)
}

// AppendBinary appends numeric_send's format.
func (d Decimal) AppendBinary(dst []byte) []byte {
	put := func(v uint16) { dst = binary.BigEndian.AppendUint16(dst, v) }
	switch d.special {
	case decNaN:
		return append(dst, 0, 0, 0, 0, 0xC0, 0, 0, 0)
	case decPInf, decNInf:
		// numeric_send sends NUMERIC_DSCALE of the special header, which
		// for the infinities reads as 32.
		sign := uint16(numericPInf)
		if d.special == decNInf {
			sign = numericNInf
		}
		put(0)
		put(0)
		put(sign)
		put(32)
		return dst
	}
	digits := new(big.Int).Abs(d.u).String()
	if d.u.Sign() == 0 {
		digits = ""
	}
	// Align to base-10000 groups around the decimal point.
	intLen := len(digits) - d.scale
	frac := ""
	intPart := ""
	if intLen > 0 {
		intPart, frac = digits[:intLen], digits[intLen:]
	} else {
		frac = strings.Repeat("0", -intLen) + digits
	}
	if r := len(intPart) % 4; r != 0 {
		intPart = strings.Repeat("0", 4-r) + intPart
	}
	if r := len(frac) % 4; r != 0 {
		frac += strings.Repeat("0", 4-r)
	}
	all := intPart + frac
	groups := make([]uint16, 0, len(all)/4)
	for i := 0; i < len(all); i += 4 {
		g := 0
		for _, c := range all[i : i+4] {
			g = g*10 + int(c-'0')
		}
		groups = append(groups, uint16(g))
	}
	weight := len(intPart)/4 - 1
	for len(groups) > 0 && groups[0] == 0 {
		groups = groups[1:]
		weight--
	}
	for len(groups) > 0 && groups[len(groups)-1] == 0 {
		groups = groups[:len(groups)-1]
	}
	sign := uint16(numericPos)
	if d.u.Sign() < 0 {
		sign = numericNeg
	}
	if len(groups) == 0 {
		weight, sign = 0, numericPos
	}
	put(uint16(len(groups)))
	put(uint16(int16(weight)))
	put(sign)
	put(uint16(d.scale))
	for _, g := range groups {
		put(g)
	}
	return dst
}

// order maps specials onto the sort order: -Inf < finite < +Inf < NaN
// (NaN equals NaN, as in numeric_cmp).
func (d Decimal) order() int {
	switch d.special {
	case decNInf:
		return 0
	case decPInf:
		return 2
	case decNaN:
		return 3
	}
	return 1
}

// Cmp orders d and e as numeric_cmp does: -1, 0 or +1 (any sign for
// specials: -Inf < finite < +Inf < NaN).
func (d Decimal) Cmp(e Decimal) int {
	if od, oe := d.order(), e.order(); od != oe || od != 1 {
		return od - oe
	}
	a, b := d.u, e.u
	switch {
	case d.scale < e.scale:
		a = new(big.Int).Mul(a, pow10(e.scale-d.scale))
	case d.scale > e.scale:
		b = new(big.Int).Mul(b, pow10(d.scale-e.scale))
	}
	return a.Cmp(b)
}

// Add is numeric_add: the result's scale is the larger one; NaN absorbs,
// +Inf plus -Inf is NaN.
func (d Decimal) Add(e Decimal) Decimal {
	if d.special != decFinite || e.special != decFinite {
		switch {
		case d.special == decNaN || e.special == decNaN:
			return Decimal{special: decNaN}
		case d.special == decPInf && e.special == decNInf, d.special == decNInf && e.special == decPInf:
			return Decimal{special: decNaN}
		case d.special != decFinite:
			return d
		}
		return e
	}
	a, b := d.u, e.u
	scale := d.scale
	switch {
	case d.scale < e.scale:
		a = new(big.Int).Mul(a, pow10(e.scale-d.scale))
		scale = e.scale
	case d.scale > e.scale:
		b = new(big.Int).Mul(b, pow10(d.scale-e.scale))
	}
	return Decimal{u: new(big.Int).Add(a, b), scale: scale}
}

// canonical is a text equal for equal values (1.50 = 1.5): the hash key
// of GROUP BY and DISTINCT.
func (d Decimal) canonical() string {
	if d.special != decFinite {
		return [...]string{"", "NaN", "+Inf", "-Inf"}[d.special]
	}
	u := new(big.Int).Set(d.u)
	scale := d.scale
	var m big.Int
	ten := big.NewInt(10)
	for scale > 0 {
		q, r := new(big.Int).QuoRem(u, ten, &m)
		if r.Sign() != 0 {
			break
		}
		u, scale = q, scale-1
	}
	return u.String() + "e-" + strconv.Itoa(scale)
}

// weightAndFirstDigit describes |d| in base 10000 as numeric.c's
// NumericVar does: the weight of its first non-zero digit and that
// digit; 0, 0 for zero.
func (d Decimal) weightAndFirstDigit() (weight int, first int64) {
	a := new(big.Int).Abs(d.u)
	if a.Sign() == 0 {
		return 0, 0
	}
	e10 := len(a.String()) - 1 - d.scale // |d| is in [10^e10, 10^(e10+1))
	weight = floorDiv(e10, 4)
	// first = floor(|d| / 10000^weight) = floor(a / 10^(scale + 4*weight))
	shift := d.scale + 4*weight
	q := new(big.Int)
	if shift >= 0 {
		q.Quo(a, pow10(shift))
	} else {
		q.Mul(a, pow10(-shift))
	}
	return weight, q.Int64()
}

func floorDiv[T int | int64](a, b T) T {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// Scale limits of numeric division (numeric.c, numeric.h).
const (
	numericMinSigDigits    = 16
	numericMinDisplayScale = 0
	numericMaxDisplayScale = 1000
	numericDecDigits       = 4 // decimal digits per base-10000 digit
)

// divScale is numeric.c's select_div_scale: enough digits for at least
// NUMERIC_MIN_SIG_DIGITS significant digits, and no fewer than either
// input's display scale.
func divScale(n, d Decimal) int {
	w1, f1 := n.weightAndFirstDigit()
	w2, f2 := d.weightAndFirstDigit()
	qweight := w1 - w2
	if f1 <= f2 {
		qweight--
	}
	rscale := numericMinSigDigits - qweight*numericDecDigits
	rscale = max(rscale, n.scale, d.scale, numericMinDisplayScale)
	return min(rscale, numericMaxDisplayScale)
}

// Div is numeric_div rounded to divScale, half away from zero (div_var
// with round = true). e must be finite and non-zero.
func (d Decimal) Div(e Decimal) Decimal {
	if d.special != decFinite {
		if d.special == decNaN {
			return d
		}
		if e.u.Sign() < 0 {
			if d.special == decPInf {
				return Decimal{special: decNInf}
			}
			return Decimal{special: decPInf}
		}
		return d
	}
	return d.divRound(e, divScale(d, e))
}

// Neg negates a finite numeric.
func (d Decimal) Neg() Decimal {
	switch d.special {
	case decPInf:
		return Decimal{special: decNInf}
	case decNInf:
		return Decimal{special: decPInf}
	case decNaN:
		return d
	}
	return Decimal{u: new(big.Int).Neg(d.u), scale: d.scale}
}
