package pgvalue

import (
	"encoding/binary"
	"errors"
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/shardgate/shardgate/sqlerr"
)

// Intervals in merges. An interval is months, days and microseconds, kept
// apart (1 day is not always 24 hours); ordering and equality use
// interval_cmp_value's span, months as 30 days and days as 24 hours, so
// '1 day' = '24 hours' as in Postgres. The text form read and written is
// IntervalStyle postgres (the default), the binary form interval_send's.

// Interval is a decoded interval.
type Interval struct {
	months int32
	days   int32
	micros int64
}

const (
	usecsPerDay    = 86_400_000_000
	usecsPerHour   = 3_600_000_000
	usecsPerMinute = 60_000_000
	usecsPerSec    = 1_000_000
)

// ErrIntervalStyle: an interval's text is not in IntervalStyle postgres.
var ErrIntervalStyle = errors.New("interval value is not in IntervalStyle postgres")

var errIntervalRange = sqlerr.New("22008", "interval out of range")

// span is interval_cmp_value: an exact total in microseconds.
func (iv Interval) span() Decimal {
	days := new(big.Int).SetInt64(int64(iv.months)*30 + int64(iv.days))
	days.Mul(days, big.NewInt(usecsPerDay))
	return Decimal{u: days.Add(days, big.NewInt(iv.micros))}
}

// Value is the interval as a Value of KindInterval.
func (iv Interval) Value() Value {
	return Value{N: iv.span(), B: iv.appendBinary(nil)}
}

// IntervalOf reads back a Value of KindInterval.
func IntervalOf(v Value) Interval {
	return Interval{
		micros: int64(binary.BigEndian.Uint64(v.B)),
		days:   int32(binary.BigEndian.Uint32(v.B[8:])),
		months: int32(binary.BigEndian.Uint32(v.B[12:])),
	}
}

func (iv Interval) appendBinary(dst []byte) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(iv.micros))
	dst = binary.BigEndian.AppendUint32(dst, uint32(iv.days))
	return binary.BigEndian.AppendUint32(dst, uint32(iv.months))
}

func intervalBinary(b []byte) (Value, error) {
	if len(b) != 16 {
		return Value{}, ErrMalformed
	}
	return Value{N: IntervalOf(Value{B: b}).span(), B: b}, nil
}

// intervalText reads IntervalStyle postgres: [N year[s]] [N mon[s]]
// [N day[s]] [[+|-]H:MM:SS[.ffffff]], each part signed on its own.
func intervalText(b []byte) (Value, error) {
	f := strings.Fields(string(b))
	var iv Interval
	var months, days int64
	for i := 0; i < len(f); i++ {
		tok := f[i]
		if strings.Contains(tok, ":") {
			us, err := parseIntervalClock(tok)
			if err != nil || i != len(f)-1 {
				return Value{}, ErrIntervalStyle
			}
			iv.micros = us
			continue
		}
		if i+1 >= len(f) {
			return Value{}, ErrIntervalStyle
		}
		n, err := strconv.ParseInt(tok, 10, 64)
		if err != nil {
			return Value{}, ErrIntervalStyle
		}
		i++
		switch f[i] {
		case "year", "years":
			months += n * 12
		case "mon", "mons":
			months += n
		case "day", "days":
			days += n
		default:
			return Value{}, ErrIntervalStyle
		}
	}
	if months < math.MinInt32 || months > math.MaxInt32 || days < math.MinInt32 || days > math.MaxInt32 {
		return Value{}, ErrIntervalStyle
	}
	iv.months, iv.days = int32(months), int32(days)
	return iv.Value(), nil
}

// parseIntervalClock reads [+|-]H:MM:SS[.ffffff] (hours may have any
// number of digits).
func parseIntervalClock(s string) (int64, error) {
	neg := false
	switch {
	case strings.HasPrefix(s, "-"):
		neg, s = true, s[1:]
	case strings.HasPrefix(s, "+"):
		s = s[1:]
	}
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return 0, ErrIntervalStyle
	}
	h, err1 := strconv.ParseInt(parts[0], 10, 64)
	m, err2 := strconv.ParseInt(parts[1], 10, 64)
	secText, frac, _ := strings.Cut(parts[2], ".")
	sec, err3 := strconv.ParseInt(secText, 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || len(frac) > 6 {
		return 0, ErrIntervalStyle
	}
	var us int64
	if frac != "" {
		var err error
		if us, err = strconv.ParseInt(frac+strings.Repeat("0", 6-len(frac)), 10, 64); err != nil {
			return 0, ErrIntervalStyle
		}
	}
	total := h*usecsPerHour + m*usecsPerMinute + sec*usecsPerSec + us
	if neg {
		total = -total
	}
	return total, nil
}

// AppendText writes interval_out in IntervalStyle postgres (datetime.c,
// EncodeInterval): each non-zero field with its own sign, a field after a
// negative one marked '+' when positive, and the time of day last.
func (iv Interval) AppendText(dst []byte) []byte {
	year := int64(iv.months / 12) // truncation toward zero, as in C
	mon := int64(iv.months % 12)
	mday := int64(iv.days)
	t := iv.micros
	hour := t / usecsPerHour
	t -= hour * usecsPerHour
	min := t / usecsPerMinute
	t -= min * usecsPerMinute
	sec := t / usecsPerSec
	fsec := t - sec*usecsPerSec

	isZero, isBefore := true, false
	part := func(v int64, unit string) {
		if v == 0 {
			return
		}
		if !isZero {
			dst = append(dst, ' ')
		}
		if isBefore && v > 0 {
			dst = append(dst, '+')
		}
		dst = strconv.AppendInt(dst, v, 10)
		dst = append(dst, ' ')
		dst = append(dst, unit...)
		if v != 1 {
			dst = append(dst, 's')
		}
		isBefore = v < 0
		isZero = false
	}
	part(year, "year")
	part(mon, "mon")
	part(mday, "day")
	if isZero || hour != 0 || min != 0 || sec != 0 || fsec != 0 {
		if !isZero {
			dst = append(dst, ' ')
		}
		switch {
		case hour < 0 || min < 0 || sec < 0 || fsec < 0:
			dst = append(dst, '-')
		case isBefore:
			dst = append(dst, '+')
		}
		dst = appendPadded(dst, abs64(hour), 2)
		dst = append(dst, ':')
		dst = appendPadded(dst, abs64(min), 2)
		dst = append(dst, ':')
		dst = appendPadded(dst, abs64(sec), 2)
		if fsec != 0 {
			frac := strconv.FormatInt(abs64(fsec)+1_000_000, 10)[1:] // six digits
			dst = append(dst, '.')
			dst = append(dst, strings.TrimRight(frac, "0")...)
		}
	}
	return dst
}

func abs64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

func appendPadded(dst []byte, v int64, width int) []byte {
	s := strconv.FormatInt(v, 10)
	for i := len(s); i < width; i++ {
		dst = append(dst, '0')
	}
	return append(dst, s...)
}

// Add is interval_pl: field by field, with its overflow error.
func (iv Interval) Add(o Interval) (Interval, error) {
	months := int64(iv.months) + int64(o.months)
	days := int64(iv.days) + int64(o.days)
	micros := iv.micros + o.micros
	if months < math.MinInt32 || months > math.MaxInt32 || days < math.MinInt32 || days > math.MaxInt32 ||
		(micros > iv.micros) != (o.micros > 0) && o.micros != 0 {
		return Interval{}, errIntervalRange
	}
	return Interval{months: int32(months), days: int32(days), micros: micros}, nil
}

// Sub is interval_mi: field by field, with its overflow error.
func (iv Interval) Sub(o Interval) (Interval, error) {
	months := int64(iv.months) - int64(o.months)
	days := int64(iv.days) - int64(o.days)
	micros := iv.micros - o.micros
	if months < math.MinInt32 || months > math.MaxInt32 || days < math.MinInt32 || days > math.MaxInt32 ||
		(o.micros < 0 && micros < iv.micros) || (o.micros > 0 && micros > iv.micros) {
		return Interval{}, errIntervalRange
	}
	return Interval{months: int32(months), days: int32(days), micros: micros}, nil
}

// Neg is interval_um: the fields negated; a field at its type's minimum
// is out of range.
func (iv Interval) Neg() (Interval, error) {
	if iv.months == math.MinInt32 || iv.days == math.MinInt32 || iv.micros == math.MinInt64 {
		return Interval{}, errIntervalRange
	}
	return Interval{months: -iv.months, days: -iv.days, micros: -iv.micros}, nil
}
