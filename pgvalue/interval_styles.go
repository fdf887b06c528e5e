package pgvalue

import (
	"math"
	"strconv"
	"strings"
)

// Intervals in every IntervalStyle: interval_out's text (datetime.c,
// EncodeInterval) for the intervals a merge computes, and the same text
// read back for the ones it compares.

// itm is interval2itm: the fields an interval prints, each truncated
// toward zero as C does.
type itm struct {
	year, mon, mday, hour, min, sec, fsec int64
}

func (iv Interval) fields() itm {
	t := iv.micros
	hour := t / usecsPerHour
	t -= hour * usecsPerHour
	min := t / usecsPerMinute
	t -= min * usecsPerMinute
	sec := t / usecsPerSec
	return itm{year: int64(iv.months / 12), mon: int64(iv.months % 12), mday: int64(iv.days),
		hour: hour, min: min, sec: sec, fsec: t - sec*usecsPerSec}
}

// appendSeconds is AppendSeconds: |sec| (two digits when pad) and the
// fraction's digits without trailing zeros.
func appendSeconds(dst []byte, sec, fsec int64, pad bool) []byte {
	if pad {
		dst = appendPadded(dst, abs64(sec), 2)
	} else {
		dst = strconv.AppendInt(dst, abs64(sec), 10)
	}
	if fsec != 0 {
		frac := strconv.FormatInt(abs64(fsec)+1_000_000, 10)[1:] // six digits
		dst = append(dst, '.')
		dst = append(dst, strings.TrimRight(frac, "0")...)
	}
	return dst
}

// AppendStyle writes interval_out's text in an IntervalStyle.
func (iv Interval) AppendStyle(dst []byte, style IntervalStyle) []byte {
	switch style {
	case IntervalSQLStandard:
		return iv.appendSQLStandard(dst)
	case IntervalISO8601:
		return iv.appendISO8601(dst)
	case IntervalPostgresVerbose:
		return iv.appendVerbose(dst)
	}
	return iv.AppendText(dst)
}

func (iv Interval) appendSQLStandard(dst []byte) []byte {
	f := iv.fields()
	neg := f.year < 0 || f.mon < 0 || f.mday < 0 || f.hour < 0 || f.min < 0 || f.sec < 0 || f.fsec < 0
	pos := f.year > 0 || f.mon > 0 || f.mday > 0 || f.hour > 0 || f.min > 0 || f.sec > 0 || f.fsec > 0
	yearMonth := f.year != 0 || f.mon != 0
	dayTime := f.mday != 0 || f.hour != 0 || f.min != 0 || f.sec != 0 || f.fsec != 0
	standard := !(neg && pos) && !(yearMonth && dayTime)
	if neg && standard {
		dst = append(dst, '-')
		f = itm{-f.year, -f.mon, -f.mday, -f.hour, -f.min, -f.sec, -f.fsec}
	}
	clock := func(dst []byte) []byte {
		dst = strconv.AppendInt(dst, abs64(f.hour), 10)
		dst = append(dst, ':')
		dst = appendPadded(dst, abs64(f.min), 2)
		dst = append(dst, ':')
		return appendSeconds(dst, f.sec, f.fsec, true)
	}
	sign := func(dst []byte, negative bool) []byte {
		if negative {
			return append(dst, '-')
		}
		return append(dst, '+')
	}
	switch {
	case !neg && !pos:
		return append(dst, '0')
	case !standard:
		dst = sign(dst, f.year < 0 || f.mon < 0)
		dst = strconv.AppendInt(dst, abs64(f.year), 10)
		dst = append(dst, '-')
		dst = strconv.AppendInt(dst, abs64(f.mon), 10)
		dst = sign(append(dst, ' '), f.mday < 0)
		dst = strconv.AppendInt(dst, abs64(f.mday), 10)
		dst = sign(append(dst, ' '), f.hour < 0 || f.min < 0 || f.sec < 0 || f.fsec < 0)
		return clock(dst)
	case yearMonth:
		dst = strconv.AppendInt(dst, f.year, 10)
		dst = append(dst, '-')
		return strconv.AppendInt(dst, f.mon, 10)
	case f.mday != 0:
		dst = strconv.AppendInt(dst, f.mday, 10)
		return clock(append(dst, ' '))
	}
	return clock(dst)
}

func (iv Interval) appendISO8601(dst []byte) []byte {
	f := iv.fields()
	if f == (itm{}) {
		return append(dst, "PT0S"...)
	}
	part := func(v int64, unit byte) {
		if v != 0 {
			dst = strconv.AppendInt(dst, v, 10)
			dst = append(dst, unit)
		}
	}
	dst = append(dst, 'P')
	part(f.year, 'Y')
	part(f.mon, 'M')
	part(f.mday, 'D')
	if f.hour != 0 || f.min != 0 || f.sec != 0 || f.fsec != 0 {
		dst = append(dst, 'T')
	}
	part(f.hour, 'H')
	part(f.min, 'M')
	if f.sec != 0 || f.fsec != 0 {
		if f.sec < 0 || f.fsec < 0 {
			dst = append(dst, '-')
		}
		dst = appendSeconds(dst, f.sec, f.fsec, false)
		dst = append(dst, 'S')
	}
	return dst
}

func (iv Interval) appendVerbose(dst []byte) []byte {
	f := iv.fields()
	isZero, isBefore := true, false
	dst = append(dst, '@')
	part := func(v int64, unit string) {
		if v == 0 {
			return
		}
		if isZero {
			isBefore = v < 0
			v = abs64(v)
		} else if isBefore {
			v = -v
		}
		dst = append(dst, ' ')
		dst = strconv.AppendInt(dst, v, 10)
		dst = append(dst, ' ')
		dst = append(dst, unit...)
		if v != 1 {
			dst = append(dst, 's')
		}
		isZero = false
	}
	part(f.year, "year")
	part(f.mon, "mon")
	part(f.mday, "day")
	part(f.hour, "hour")
	part(f.min, "min")
	if f.sec != 0 || f.fsec != 0 {
		dst = append(dst, ' ')
		if f.sec < 0 || f.sec == 0 && f.fsec < 0 {
			if isZero {
				isBefore = true
			} else if !isBefore {
				dst = append(dst, '-')
			}
		} else if isBefore {
			dst = append(dst, '-')
		}
		dst = appendSeconds(dst, f.sec, f.fsec, false)
		dst = append(dst, " sec"...)
		if abs64(f.sec) != 1 || f.fsec != 0 {
			dst = append(dst, 's')
		}
		isZero = false
	}
	if isZero {
		dst = append(dst, " 0"...)
	}
	if isBefore {
		dst = append(dst, " ago"...)
	}
	return dst
}

// intervalStyled reads an interval in the session's IntervalStyle.
func intervalStyled(b []byte, st *Styles) (Value, error) {
	var iv Interval
	var err error
	switch st.Interval() {
	case IntervalPostgres:
		return intervalText(b)
	case IntervalSQLStandard:
		iv, err = parseSQLStandardInterval(string(b))
	case IntervalISO8601:
		iv, err = parseISO8601Interval(string(b))
	case IntervalPostgresVerbose:
		iv, err = parseVerboseInterval(string(b))
	}
	if err != nil {
		return Value{}, ErrIntervalStyle
	}
	return iv.Value(), nil
}

// intervalOf builds an interval from its parts, ErrIntervalStyle when a
// part is out of its range.
func intervalOf(months, days, micros int64, neg bool) (Interval, error) {
	if neg {
		months, days, micros = -months, -days, -micros
	}
	if months < math.MinInt32 || months > math.MaxInt32 || days < math.MinInt32 || days > math.MaxInt32 {
		return Interval{}, ErrIntervalStyle
	}
	return Interval{months: int32(months), days: int32(days), micros: micros}, nil
}

// parseUnsigned reads digits only.
func parseUnsigned(s string) (int64, error) {
	if s == "" || s[0] < '0' || s[0] > '9' {
		return 0, ErrIntervalStyle
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, ErrIntervalStyle
	}
	return n, nil
}

// signOf strips a leading + or -.
func signOf(s string) (neg bool, rest string) {
	if strings.HasPrefix(s, "-") {
		return true, s[1:]
	}
	return false, strings.TrimPrefix(s, "+")
}

// parseSQLStandardInterval reads "0", "[-]Y-M", "[-]D H:MM:SS[.f]",
// "[-]H:MM:SS[.f]", or the mixed-sign "±Y-M ±D ±H:MM:SS[.f]".
func parseSQLStandardInterval(s string) (Interval, error) {
	f := strings.Fields(s)
	yearMonth := func(t string) (int64, error) {
		y, m, ok := strings.Cut(t, "-")
		if !ok {
			return 0, ErrIntervalStyle
		}
		yv, err1 := parseUnsigned(y)
		mv, err2 := parseUnsigned(m)
		if err1 != nil || err2 != nil {
			return 0, ErrIntervalStyle
		}
		return yv*12 + mv, nil
	}
	clock := func(t string) (int64, error) {
		if t == "" || t[0] < '0' || t[0] > '9' {
			return 0, ErrIntervalStyle
		}
		return parseIntervalClock(t)
	}
	switch len(f) {
	case 1:
		if f[0] == "0" {
			return Interval{}, nil
		}
		neg, t := signOf(f[0])
		if strings.Contains(t, ":") {
			us, err := clock(t)
			if err != nil {
				return Interval{}, err
			}
			return intervalOf(0, 0, us, neg)
		}
		months, err := yearMonth(t)
		if err != nil {
			return Interval{}, err
		}
		return intervalOf(months, 0, 0, neg)
	case 2:
		neg, t := signOf(f[0])
		days, err1 := parseUnsigned(t)
		us, err2 := clock(f[1])
		if err1 != nil || err2 != nil {
			return Interval{}, ErrIntervalStyle
		}
		return intervalOf(0, days, us, neg)
	case 3:
		var parts [3]int64
		for i, t := range f {
			if t == "" || t[0] != '+' && t[0] != '-' {
				return Interval{}, ErrIntervalStyle
			}
			neg, body := signOf(t)
			var err error
			switch i {
			case 0:
				parts[i], err = yearMonth(body)
			case 1:
				parts[i], err = parseUnsigned(body)
			case 2:
				parts[i], err = clock(body)
			}
			if err != nil {
				return Interval{}, err
			}
			if neg {
				parts[i] = -parts[i]
			}
		}
		return intervalOf(parts[0], parts[1], parts[2], false)
	}
	return Interval{}, ErrIntervalStyle
}

// parseSeconds reads [-]S[.ffffff] into microseconds.
func parseSeconds(s string) (int64, error) {
	neg, s := signOf(s)
	whole, frac, _ := strings.Cut(s, ".")
	sec, err := parseUnsigned(whole)
	if err != nil || len(frac) > 6 {
		return 0, ErrIntervalStyle
	}
	us := sec * usecsPerSec
	if frac != "" {
		f, err := parseUnsigned(frac + strings.Repeat("0", 6-len(frac)))
		if err != nil {
			return 0, ErrIntervalStyle
		}
		us += f
	}
	if neg {
		us = -us
	}
	return us, nil
}

// parseISO8601Interval reads "PT0S" or P[nY][nM][nD][T[nH][nM][[-]s[.f]S]].
func parseISO8601Interval(s string) (Interval, error) {
	if len(s) < 3 || s[0] != 'P' {
		return Interval{}, ErrIntervalStyle
	}
	s = s[1:]
	var months, days, micros int64
	inTime := false
	for s != "" {
		if s[0] == 'T' {
			if inTime {
				return Interval{}, ErrIntervalStyle
			}
			inTime, s = true, s[1:]
			continue
		}
		j := 0
		if s[j] == '-' {
			j++
		}
		for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == '.') {
			j++
		}
		if j == len(s) {
			return Interval{}, ErrIntervalStyle
		}
		num, unit := s[:j], s[j]
		s = s[j+1:]
		if unit == 'S' && inTime {
			us, err := parseSeconds(num)
			if err != nil {
				return Interval{}, err
			}
			micros += us
			continue
		}
		neg, body := signOf(num)
		n, err := parseUnsigned(body)
		if err != nil {
			return Interval{}, err
		}
		if neg {
			n = -n
		}
		switch {
		case !inTime && unit == 'Y':
			months += n * 12
		case !inTime && unit == 'M':
			months += n
		case !inTime && unit == 'D':
			days += n
		case inTime && unit == 'H':
			micros += n * usecsPerHour
		case inTime && unit == 'M':
			micros += n * usecsPerMinute
		default:
			return Interval{}, ErrIntervalStyle
		}
	}
	return intervalOf(months, days, micros, false)
}

// parseVerboseInterval reads "@ 1 year 2 mons -3 days 4 hours 5 mins
// 6.5 secs ago" ("@ 0" for zero): each part as printed, all negated by
// "ago".
func parseVerboseInterval(s string) (Interval, error) {
	if !strings.HasPrefix(s, "@ ") {
		return Interval{}, ErrIntervalStyle
	}
	f := strings.Fields(s[2:])
	ago := len(f) > 0 && f[len(f)-1] == "ago"
	if ago {
		f = f[:len(f)-1]
	}
	if len(f) == 1 && f[0] == "0" && !ago {
		return Interval{}, nil
	}
	if len(f) == 0 || len(f)%2 != 0 {
		return Interval{}, ErrIntervalStyle
	}
	var months, days, micros int64
	for i := 0; i < len(f); i += 2 {
		unit := strings.TrimSuffix(f[i+1], "s")
		if unit == "sec" {
			us, err := parseSeconds(f[i])
			if err != nil {
				return Interval{}, err
			}
			micros += us
			continue
		}
		neg, body := signOf(f[i])
		n, err := parseUnsigned(body)
		if err != nil {
			return Interval{}, err
		}
		if neg {
			n = -n
		}
		switch unit {
		case "year":
			months += n * 12
		case "mon":
			months += n
		case "day":
			days += n
		case "hour":
			micros += n * usecsPerHour
		case "min":
			micros += n * usecsPerMinute
		default:
			return Interval{}, ErrIntervalStyle
		}
	}
	return intervalOf(months, days, micros, ago)
}
