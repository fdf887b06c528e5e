package pgvalue

import (
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Styles are the session settings that shape the text of dates, times and
// intervals: DateStyle (its output format and its field order),
// IntervalStyle and TimeZone, as the backends report them
// (ParameterStatus). A merge reads the shards' text of these types with
// them and writes the intervals it computes in the session's
// IntervalStyle, so its answer is byte for byte what one Postgres prints.
//
// A nil *Styles is DateStyle ISO and IntervalStyle postgres (the
// defaults), with no time zone known.
type Styles struct {
	date     dateFormat
	dmy      bool // DateStyle's order is DMY (SQL and Postgres print day first)
	interval IntervalStyle
	// floatDigits is extra_float_digits; floatSet tells it was given.
	floatDigits int
	floatSet    bool
	zoneName    string
	zone        *time.Location // once looked up
	zoneErr     error
	looked      bool
}

// dateFormat is DateStyle's output format.
type dateFormat uint8

const (
	dateISO dateFormat = iota
	dateSQL
	datePostgres
	dateGerman
)

// IntervalStyle is the session's IntervalStyle.
type IntervalStyle uint8

const (
	IntervalPostgres        IntervalStyle = iota // 1 year 2 mons 3 days 04:05:06
	IntervalPostgresVerbose                      // @ 1 year 2 mons 3 days 4 hours 5 mins 6 secs
	IntervalSQLStandard                          // +1-2 +3 +4:05:06
	IntervalISO8601                              // P1Y2M3DT4H5M6S
)

// ErrTimeZone: a timestamptz text whose zone abbreviation the proxy
// cannot turn into an offset (a TimeZone it has no rules for, or an
// abbreviation the rules do not give at that local time).
var ErrTimeZone = errors.New("timestamptz value's time zone cannot be read")

// NewStyles reads the settings as ParameterStatus reports them ("SQL,
// DMY", "iso_8601", "Europe/Berlin"). An empty or unknown value is the
// default (ISO, MDY; postgres); ok is false when a value is not one
// Postgres reports.
func NewStyles(dateStyle, intervalStyle, timeZone string) (st *Styles, ok bool) {
	st, ok = &Styles{zoneName: timeZone}, true
	for _, part := range strings.Split(dateStyle, ",") {
		switch strings.ToLower(strings.TrimSpace(part)) {
		case "iso", "":
			st.date = dateISO
		case "sql":
			st.date = dateSQL
		case "postgres":
			st.date = datePostgres
		case "german":
			st.date = dateGerman
		case "dmy", "euro", "european":
			st.dmy = true
		case "mdy", "us", "noneuro", "noneuropean", "ymd":
			st.dmy = false
		default:
			ok = false
		}
	}
	switch strings.ToLower(intervalStyle) {
	case "postgres", "":
		st.interval = IntervalPostgres
	case "postgres_verbose":
		st.interval = IntervalPostgresVerbose
	case "sql_standard":
		st.interval = IntervalSQLStandard
	case "iso_8601":
		st.interval = IntervalISO8601
	default:
		ok = false
	}
	return st, ok
}

// Interval is the IntervalStyle (postgres for nil).
func (st *Styles) Interval() IntervalStyle {
	if st == nil {
		return IntervalPostgres
	}
	return st.interval
}

func (st *Styles) dateFormat() dateFormat {
	if st == nil {
		return dateISO
	}
	return st.date
}

// zones caches the time zone rules by TimeZone name.
var zones sync.Map // string -> *time.Location or error

// location is the session's time zone rules: the tz database's zone of
// that name (the same files a Debian Postgres reads), or the fixed offset
// Postgres names "<+05:30>-05:30" (SET TIME ZONE with a number or an
// interval).
func (st *Styles) location() (*time.Location, error) {
	if st == nil {
		return nil, ErrTimeZone
	}
	if st.looked {
		return st.zone, st.zoneErr
	}
	st.looked = true
	if v, ok := zones.Load(st.zoneName); ok {
		if loc, ok := v.(*time.Location); ok {
			st.zone = loc
		} else {
			st.zoneErr = ErrTimeZone
		}
		return st.zone, st.zoneErr
	}
	loc := fixedZone(st.zoneName)
	if loc == nil && st.zoneName != "" && st.zoneName != "Local" && st.zoneName != "localtime" {
		if l, err := time.LoadLocation(st.zoneName); err == nil {
			loc = l
		}
	}
	if loc == nil {
		zones.Store(st.zoneName, ErrTimeZone)
		st.zoneErr = ErrTimeZone
		return nil, st.zoneErr
	}
	zones.Store(st.zoneName, loc)
	st.zone = loc
	return loc, nil
}

// fixedZone reads a POSIX zone of one abbreviation and no daylight rule
// as Postgres writes it for a numeric zone: "<+05>-05", "<-03:30>+03:30"
// (POSIX offsets count west of Greenwich).
func fixedZone(s string) *time.Location {
	if !strings.HasPrefix(s, "<") {
		return nil
	}
	end := strings.IndexByte(s, '>')
	if end < 2 {
		return nil
	}
	abbr, off := s[1:end], s[end+1:]
	if off == "" || off[0] != '+' && off[0] != '-' {
		return nil
	}
	us, err := parseOffset(off)
	if err != nil {
		return nil
	}
	return time.FixedZone(abbr, -int(us/usecsPerSec))
}

// unixEpochShift is seconds from 1970-01-01 to 2000-01-01.
const unixEpochShift = 946_684_800

// utcOf turns a local time (microseconds since 2000-01-01, as if UTC)
// printed with the zone abbreviation label into UTC: the instant whose
// offset in the session's zone makes that local time and whose
// abbreviation is label. None, or two different instants, is ErrTimeZone.
func (st *Styles) utcOf(local int64, label string) (int64, error) {
	loc, err := st.location()
	if err != nil {
		return 0, err
	}
	sec := floorDiv(local, int64(usecsPerSec)) + unixEpochShift
	found, utc := false, int64(0)
	tried := map[int]bool{}
	for _, probe := range []int64{sec, sec - 86_400, sec + 86_400} {
		_, off := time.Unix(probe, 0).In(loc).Zone()
		if tried[off] {
			continue
		}
		tried[off] = true
		name, off2 := time.Unix(sec-int64(off), 0).In(loc).Zone()
		if off2 != off || name != label {
			continue
		}
		u := local - int64(off)*usecsPerSec
		if found && u != utc {
			return 0, ErrTimeZone
		}
		found, utc = true, u
	}
	if !found {
		return 0, ErrTimeZone
	}
	return utc, nil
}

// dateStyled reads a date in any DateStyle.
func dateStyled(b []byte, st *Styles) (Value, error) {
	if st.dateFormat() == dateISO {
		return dateText(b)
	}
	s := string(b)
	if v, ok := infinity(s); ok {
		return Value{I: v}, nil
	}
	bc := strings.HasSuffix(s, " BC")
	days, rest, err := parseStyledDate(strings.TrimSuffix(s, " BC"), bc, st)
	if err != nil || rest != "" {
		return Value{}, ErrDateStyle
	}
	return Value{I: days}, nil
}

// parseStyledDate reads the date of SQL (MM/DD/YYYY, DD/MM/YYYY), German
// (DD.MM.YYYY) and Postgres (MM-DD-YYYY, DD-MM-YYYY) style.
func parseStyledDate(s string, bc bool, st *Styles) (int64, string, error) {
	sep := byte('/')
	dayFirst := st.dmy
	switch st.date {
	case dateGerman:
		sep, dayFirst = '.', true
	case datePostgres:
		sep = '-'
	}
	if len(s) < 10 || s[2] != sep || s[5] != sep {
		return 0, "", ErrDateStyle
	}
	a, err1 := twoDigits(s[0:2])
	c, err2 := twoDigits(s[3:5])
	y, rest, err3 := yearDigits(s[6:])
	if err1 != nil || err2 != nil || err3 != nil {
		return 0, "", ErrDateStyle
	}
	m, d := a, c
	if dayFirst {
		m, d = c, a
	}
	return julianDays(y, m, d, bc), rest, nil
}

func julianDays(y, m, d int64, bc bool) int64 {
	if bc {
		y = -(y - 1)
	}
	return date2j(y, m, d) - postgresEpochJDate
}

func twoDigits(s string) (int64, error) {
	if len(s) != 2 || s[0] < '0' || s[0] > '9' || s[1] < '0' || s[1] > '9' {
		return 0, ErrDateStyle
	}
	return int64(s[0]-'0')*10 + int64(s[1]-'0'), nil
}

// yearDigits reads a year of four or more digits.
func yearDigits(s string) (int64, string, error) {
	j := 0
	for j < len(s) && s[j] >= '0' && s[j] <= '9' {
		j++
	}
	if j < 4 {
		return 0, "", ErrDateStyle
	}
	y, err := strconv.ParseInt(s[:j], 10, 64)
	if err != nil {
		return 0, "", ErrDateStyle
	}
	return y, s[j:], nil
}

var monthAbbrevs = []string{"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"}

func monthOf(s string) (int64, error) {
	for i, m := range monthAbbrevs {
		if s == m {
			return int64(i + 1), nil
		}
	}
	return 0, ErrDateStyle
}

// timestampStyled reads a timestamp (with or without time zone) in any
// DateStyle; a non-ISO timestamptz ends in its zone's abbreviation, read
// with the session's time zone rules.
func timestampStyled(withZone bool) func([]byte, *Styles) (Value, error) {
	iso := timestampText(withZone)
	return func(b []byte, st *Styles) (Value, error) {
		if st.dateFormat() == dateISO {
			return iso(b)
		}
		s := string(b)
		if v, ok := infinity(s); ok {
			return Value{I: v}, nil
		}
		bc := strings.HasSuffix(s, " BC")
		s = strings.TrimSuffix(s, " BC")
		var days, us int64
		var rest string
		var err error
		if st.date == datePostgres {
			days, us, rest, err = parsePostgresTimestamp(s, bc, st.dmy)
		} else {
			days, rest, err = parseStyledDate(s, bc, st)
			if err == nil && !strings.HasPrefix(rest, " ") {
				err = ErrDateStyle
			}
			if err == nil {
				us, rest, err = parseClock(rest[1:])
			}
		}
		if err != nil {
			return Value{}, ErrDateStyle
		}
		t := days*usecsPerDay + us
		switch {
		case !withZone && rest == "":
			return Value{I: t}, nil
		case !withZone || !strings.HasPrefix(rest, " ") || len(rest) < 2:
			return Value{}, ErrDateStyle
		}
		u, err := st.utcOf(t, rest[1:])
		if err != nil {
			return Value{}, err
		}
		return Value{I: u}, nil
	}
}

// parsePostgresTimestamp reads DateStyle Postgres's "Wed Dec 17
// 07:37:16.5 1997" (DMY: "Wed 17 Dec ...") and returns days, the time of
// day and the rest.
func parsePostgresTimestamp(s string, bc, dmy bool) (int64, int64, string, error) {
	if len(s) < 24 || s[3] != ' ' || s[10] != ' ' {
		return 0, 0, "", ErrDateStyle
	}
	mon, day, gap := s[4:7], s[8:10], s[7]
	if dmy {
		day, mon, gap = s[4:6], s[7:10], s[6]
	}
	if gap != ' ' {
		return 0, 0, "", ErrDateStyle
	}
	m, err1 := monthOf(mon)
	d, err2 := twoDigits(day)
	us, rest, err3 := parseClock(s[11:])
	if err1 != nil || err2 != nil || err3 != nil || !strings.HasPrefix(rest, " ") {
		return 0, 0, "", ErrDateStyle
	}
	y, rest, err := yearDigits(rest[1:])
	if err != nil {
		return 0, 0, "", ErrDateStyle
	}
	return julianDays(y, m, d, bc), us, rest, nil
}

// SetFloatDigits records the session's extra_float_digits, which decides
// whether float text is exact (CanRead).
func (st *Styles) SetFloatDigits(n int) {
	st.floatDigits, st.floatSet = n, true
}

// ErrFloatDigits: float text under extra_float_digits 0 or less, rounded
// to fewer digits than the value has.
var ErrFloatDigits = errors.New("float text under extra_float_digits below 1 is rounded")

// CanRead reports, before any value, whether text of type t can be read
// exactly under the styles: a timestamptz outside DateStyle ISO needs
// time zone rules (ErrTimeZone); a float's text is its exact value only
// under extra_float_digits 1 or more (shortest text that reads back),
// ErrFloatDigits otherwise.
func (st *Styles) CanRead(t *Type, format int16) error {
	if format == 1 || t == nil || st == nil {
		return nil
	}
	if t.Kind == KindFloat && st.floatSet && st.floatDigits < 1 {
		return ErrFloatDigits
	}
	if t.OID != 1184 || st.dateFormat() == dateISO {
		return nil
	}
	_, err := st.location()
	return err
}
