package pgvalue

import (
	"math"
	"math/big"
	"strconv"

	"github.com/shardgate/shardgate/sqlerr"
)

// Numeric arithmetic as numeric.c does it, for the expressions a merge
// evaluates over combined aggregates (sum(x) * 2, round(avg(x), 2),
// stddev from partial sums).

// IsNaN reports the numeric NaN.
func (d Decimal) IsNaN() bool { return d.special == decNaN }

// Finite reports a numeric that is neither NaN nor an infinity.
func (d Decimal) Finite() bool { return d.special == decFinite }

// Sign is -1, 0 or +1 (+1 for NaN and +Infinity).
func (d Decimal) Sign() int {
	switch d.special {
	case decNInf:
		return -1
	case decFinite:
		return d.u.Sign()
	}
	return 1
}

// Scale is the display scale.
func (d Decimal) Scale() int { return d.scale }

// Sub is numeric_sub.
func (d Decimal) Sub(e Decimal) Decimal { return d.Add(e.Neg()) }

// Mul is numeric_mul: exact, the scales added; NaN absorbs, an infinity
// times zero is NaN.
func (d Decimal) Mul(e Decimal) Decimal {
	if d.special != decFinite || e.special != decFinite {
		if d.special == decNaN || e.special == decNaN || d.Sign() == 0 || e.Sign() == 0 {
			return Decimal{special: decNaN}
		}
		if d.Sign()*e.Sign() < 0 {
			return Decimal{special: decNInf}
		}
		return Decimal{special: decPInf}
	}
	return Decimal{u: new(big.Int).Mul(d.u, e.u), scale: d.scale + e.scale}
}

// Round is numeric_round(d, s): half away from zero to s digits after the
// point (s < 0 rounds left of it and prints no fraction).
func (d Decimal) Round(s int) Decimal {
	if d.special != decFinite {
		return d
	}
	s = max(min(s, numericMaxResultScale), -numericMaxResultScale)
	out := Decimal{u: roundShift(d.u, d.scale-s), scale: s}
	if s < 0 {
		out.u.Mul(out.u, pow10(-s))
		out.scale = 0
	}
	return out
}

// numericMaxResultScale is NUMERIC_MAX_RESULT_SCALE.
const numericMaxResultScale = 2000

// roundShift is u / 10^k rounded half away from zero (k <= 0 multiplies).
func roundShift(u *big.Int, k int) *big.Int {
	if k <= 0 {
		return new(big.Int).Mul(u, pow10(-k))
	}
	den := pow10(k)
	q, r := new(big.Int).QuoRem(new(big.Int).Abs(u), den, new(big.Int))
	if r.Lsh(r, 1).Cmp(den) >= 0 {
		q.Add(q, big.NewInt(1))
	}
	if u.Sign() < 0 {
		q.Neg(q)
	}
	return q
}

// Int64 is numeric_int8 and friends: rounded half away from zero; ok is
// false out of int64's range or for a special value.
func (d Decimal) Int64() (int64, bool) {
	if d.special != decFinite {
		return 0, false
	}
	q := roundShift(d.u, d.scale)
	if !q.IsInt64() {
		return 0, false
	}
	return q.Int64(), true
}

// Float64 is numeric_float8: the text read by strtod, correctly rounded.
func (d Decimal) Float64() float64 {
	switch d.special {
	case decNaN:
		return math.NaN()
	case decPInf:
		return math.Inf(1)
	case decNInf:
		return math.Inf(-1)
	}
	f, _ := strconv.ParseFloat(string(d.AppendText(nil)), 64)
	return f
}

// DecimalFromFloat is float8_numeric (digits 15, DBL_DIG) and
// float4_numeric (6, FLT_DIG): the value printed with %.*g, read back.
func DecimalFromFloat(f float64, digits int) Decimal {
	switch {
	case math.IsNaN(f):
		return Decimal{special: decNaN}
	case math.IsInf(f, 1):
		return Decimal{special: decPInf}
	case math.IsInf(f, -1):
		return Decimal{special: decNInf}
	}
	d, err := ParseNumeric(formatG(f, digits))
	if err != nil {
		return Decimal{special: decNaN}
	}
	return d
}

// formatG is C's printf("%.*g", digits, f): trailing zeros of the
// fraction removed.
func formatG(f float64, digits int) string {
	s := strconv.FormatFloat(f, 'e', digits-1, 64)
	mant, exp := s, 0
	for i := 0; i < len(s); i++ {
		if s[i] == 'e' {
			mant = s[:i]
			exp, _ = strconv.Atoi(s[i+1:])
			break
		}
	}
	if exp < -4 || exp >= digits {
		return trimFraction(mant) + "e" + strconv.Itoa(exp)
	}
	return trimFraction(strconv.FormatFloat(f, 'f', max(digits-1-exp, 0), 64))
}

func trimFraction(s string) string {
	dot := -1
	for i := range s {
		if s[i] == '.' {
			dot = i
		}
	}
	if dot < 0 {
		return s
	}
	end := len(s)
	for end > dot+1 && s[end-1] == '0' {
		end--
	}
	if end == dot+1 {
		end = dot
	}
	return s[:end]
}

// Sqrt is sqrt_var(d, rscale): the square root rounded half away from
// zero to rscale digits; d must be finite and not negative.
func (d Decimal) Sqrt(rscale int) Decimal {
	// sqrt(u / 10^s) * 10^(rscale+1) = sqrt(u * 10^(2*rscale+2-s)),
	// made integral by an even exponent.
	e := 2*(rscale+1) - d.scale
	n := new(big.Int).Set(d.u)
	extra := 0
	if e < 0 {
		// Scale up further so no digit of u is dropped before the root.
		extra = (-e + 1) / 2
		e += 2 * extra
	}
	n.Mul(n, pow10(e))
	r := new(big.Int).Sqrt(n) // floor: digits to rscale+1+extra places
	if extra > 0 {
		r.Quo(r, pow10(extra))
	}
	return Decimal{u: roundShift(r, 1), scale: rscale}
}

// VarianceFromSums is numeric_stddev_internal over the count n, the sum
// sx and the sum of squares sxx of numeric (or integer) values: the
// sample or population variance, or its square root (stddev). null is
// true when Postgres returns NULL (no rows; n = 1 for the sample forms).
func VarianceFromSums(n int64, sx, sxx Decimal, sample, stddev bool) (res Decimal, null bool) {
	if n == 0 || sample && n <= 1 {
		return Decimal{}, true
	}
	if !sx.Finite() || !sxx.Finite() {
		return Decimal{special: decNaN}, false
	}
	vn := DecimalFromInt(n)
	rscale := sx.scale * 2
	sq := sx.Mul(sx).Round(rscale)
	num := vn.Mul(sxx).Round(rscale).Sub(sq)
	if num.Sign() <= 0 {
		return DecimalFromInt(0), false
	}
	den := vn.Mul(DecimalFromInt(n))
	if sample {
		den = vn.Mul(DecimalFromInt(n - 1))
	}
	den.scale = 0
	rscale = divScale(num, den)
	v := num.divRound(den, rscale)
	if stddev {
		v = v.Sqrt(rscale)
	}
	return v, false
}

// divRound is div_var(d, e, rscale, round = true).
func (d Decimal) divRound(e Decimal, rscale int) Decimal {
	num := new(big.Int).Mul(d.u, pow10(rscale+e.scale))
	den := new(big.Int).Mul(e.u, pow10(d.scale))
	neg := (num.Sign() < 0) != (den.Sign() < 0)
	num.Abs(num)
	den.Abs(den)
	q, r := new(big.Int).QuoRem(num, den, new(big.Int))
	if r.Lsh(r, 1).Cmp(den) >= 0 {
		q.Add(q, big.NewInt(1))
	}
	if neg {
		q.Neg(q)
	}
	return Decimal{u: q, scale: rscale}
}

// IntervalFromMicros is timestamp_mi's result: a span of microseconds
// as days and time (interval_justify_hours), no months.
func IntervalFromMicros(us int64) Interval {
	days := us / usecsPerDay // C's truncating TMODULO
	us -= days * usecsPerDay
	if days > 0 && us < 0 {
		us += usecsPerDay
		days--
	} else if days < 0 && us > 0 {
		us -= usecsPerDay
		days++
	}
	return Interval{days: int32(days), micros: us}
}

// ErrDivisionByZero is 22012 as Postgres words it.
var ErrDivisionByZero = sqlerr.New("22012", "division by zero")
