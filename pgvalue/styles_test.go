package pgvalue

import (
	"context"
	"fmt"
	"math/rand"
	"testing"

	"github.com/jackc/pgx/v5"
)

// Dates, times and intervals under every DateStyle, IntervalStyle and
// TimeZone, checked against the backend's own text and binary forms.

// textAndBinary returns the backend's text and binary of value::typ.
func textAndBinary(t *testing.T, c *pgx.Conn, value, typ string) (string, []byte) {
	t.Helper()
	ctx := context.Background()
	var text string
	if err := c.QueryRow(ctx, "SELECT $1::"+typ+"::text", value).Scan(&text); err != nil {
		t.Fatalf("%s::%s: %v", value, typ, err)
	}
	rr := c.PgConn().ExecParams(ctx, "SELECT $1::"+typ, [][]byte{[]byte(value)}, nil, nil, []int16{1})
	var bin []byte
	for rr.NextRow() {
		bin = append([]byte{}, rr.Values()[0]...)
	}
	if _, err := rr.Close(); err != nil {
		t.Fatal(err)
	}
	return text, bin
}

// sessionStyles are the styles the backend reports for the connection.
func sessionStyles(t *testing.T, c *pgx.Conn) *Styles {
	t.Helper()
	pc := c.PgConn()
	st, ok := NewStyles(pc.ParameterStatus("DateStyle"), pc.ParameterStatus("IntervalStyle"), pc.ParameterStatus("TimeZone"))
	if !ok {
		t.Fatalf("styles %q %q not understood", pc.ParameterStatus("DateStyle"), pc.ParameterStatus("IntervalStyle"))
	}
	return st
}

func exec(t *testing.T, c *pgx.Conn, sql string) {
	t.Helper()
	if _, err := c.Exec(context.Background(), sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// TestIntervalStylesMatchPostgres: the text the proxy writes for an
// interval in each IntervalStyle is interval_out's, and that text reads
// back to the backend's binary value.
func TestIntervalStylesMatchPostgres(t *testing.T) {
	c := backendConn(t)
	vals := []string{"0", "1 day", "24 hours", "-1 day", "1 mon", "30 days", "1 year 2 mons 3 days 04:05:06.789",
		"-1 year -2 mons +3 days -04:05:06", "1 day -00:00:01", "-1 day +00:00:01", "00:00:00.000001", "-00:00:00.5",
		"178000000 years", "-178000000 years", "100000 hours", "1 mon -30 days", "13 mons", "-13 mons 1 day", "2 years -1 day 01:00:00",
		"12:00:00", "-12:00:00.123456", "5 days 00:00:00.1", "1 second", "-1 second", "1 minute", "-1 year", "-1 mon",
		"-1 year 2 mons", "1 day 1 second", "-1 day -1 second", "-2 days +00:00:01.5", "3 days -01:00:00", "1 year 00:00:01",
		"-1 year -00:00:01", "00:00:00.1", "-00:00:00.000001", "2147483647 days", "-2147483648 days", "2147483647 mons",
		"-2147483648 mons", "2562047788 hours", "-2562047788 hours"}
	rng := rand.New(rand.NewSource(19))
	for i := 0; i < 60; i++ {
		vals = append(vals, fmt.Sprintf("%d mons %d days %d microseconds", rng.Intn(41)-20, rng.Intn(81)-40, rng.Int63n(400_000_000_000)-200_000_000_000))
	}
	for _, style := range []struct {
		name string
		s    IntervalStyle
	}{{"postgres", IntervalPostgres}, {"postgres_verbose", IntervalPostgresVerbose}, {"sql_standard", IntervalSQLStandard}, {"iso_8601", IntervalISO8601}} {
		// The values are typed in postgres style: sql_standard reads a
		// leading sign differently.
		exec(t, c, "SET IntervalStyle = postgres")
		bins := make([][]byte, len(vals))
		for i, v := range vals {
			_, bins[i] = textAndBinary(t, c, v, "interval")
		}
		exec(t, c, "SET IntervalStyle = "+style.name)
		st := sessionStyles(t, c)
		if st.Interval() != style.s {
			t.Fatalf("%s read as %d", style.name, st.Interval())
		}
		for i, v := range vals {
			rr := c.PgConn().ExecParams(context.Background(), "SELECT $1::interval::text", [][]byte{bins[i]}, nil, []int16{1}, nil)
			var text string
			for rr.NextRow() {
				text = string(rr.Values()[0])
			}
			if _, err := rr.Close(); err != nil {
				t.Fatal(err)
			}
			iv := IntervalOf(Value{B: bins[i]})
			if got := string(iv.AppendStyle(nil, style.s)); got != text {
				t.Errorf("%s (%s): writes %q, want %q", v, style.name, got, text)
			}
			back, err := TypeOf(1186).DecodeStyled([]byte(text), 0, st)
			if err != nil {
				t.Errorf("%s (%s): reading %q: %v", v, style.name, text, err)
				continue
			}
			if string(back.B) != string(bins[i]) {
				t.Errorf("%s (%s): %q reads as %x, want %x", v, style.name, text, back.B, bins[i])
			}
		}
	}
}

// TestDateStylesMatchPostgres: date, timestamp and timestamptz text under
// every DateStyle (both its parts) and several time zones (daylight
// saving's repeated hour, half-hour offsets, numeric zones, before
// Christ) reads as the backend's binary value; a time zone the proxy has
// no rules for is ErrTimeZone, never a wrong value.
func TestDateStylesMatchPostgres(t *testing.T) {
	c := backendConn(t)
	dates := []string{"2026-12-01", "2000-01-01", "1999-12-31", "0001-01-01", "0044-03-15 BC", "4713-11-24 BC", "10000-01-01",
		"5874897-12-31", "infinity", "-infinity", "2024-02-29", "1970-01-01"}
	stamps := []string{"2026-12-01 23:44:37.214695", "2000-01-01 00:00:00", "1999-12-31 23:59:59.999999", "0044-03-15 12:00:00 BC",
		"10000-01-01 00:00:00.5", "294276-12-31 23:59:59.999999", "4713-11-24 00:00:00 BC", "infinity", "-infinity",
		"2026-03-29 01:30:00", "2026-03-29 02:30:00+00", "2026-10-25 00:30:00+00", "2026-10-25 01:30:00+00",
		"2026-11-01 05:30:00+00", "2026-11-01 06:30:00+00", "1900-01-01 00:00:00", "1850-06-01 12:34:56.7", "1969-12-31 23:59:59.5"}
	zones := []string{"UTC", "Europe/Berlin", "America/New_York", "America/Sao_Paulo", "Asia/Kolkata", "Australia/Lord_Howe",
		"INTERVAL '+05:30' HOUR TO MINUTE", "-7", "Pacific/Chatham"}
	for _, ds := range []string{"ISO, MDY", "ISO, DMY", "SQL, MDY", "SQL, DMY", "Postgres, MDY", "Postgres, DMY", "German", "Postgres, YMD", "SQL, YMD"} {
		for _, zone := range zones {
			exec(t, c, "SET DateStyle = ISO; SET TimeZone = 'UTC'")
			type val struct {
				typ, in string
				bin     []byte
			}
			var all []val
			for _, d := range dates {
				_, bin := textAndBinary(t, c, d, "date")
				all = append(all, val{"date", d, bin})
			}
			for _, s := range stamps {
				_, bin := textAndBinary(t, c, s, "timestamp")
				all = append(all, val{"timestamp", s, bin})
				_, bin = textAndBinary(t, c, s, "timestamptz")
				all = append(all, val{"timestamptz", s, bin})
			}
			z := "'" + zone + "'"
			if zone[0] == 'I' || zone[0] == '-' {
				z = zone
			}
			exec(t, c, "SET DateStyle = '"+ds+"'; SET TIME ZONE "+z)
			st := sessionStyles(t, c)
			for _, v := range all {
				rr := c.PgConn().ExecParams(context.Background(), "SELECT $1::"+v.typ+"::text", [][]byte{v.bin}, nil, []int16{1}, nil)
				var text string
				for rr.NextRow() {
					text = string(rr.Values()[0])
				}
				if _, err := rr.Close(); err != nil {
					t.Fatal(err)
				}
				typ := map[string]*Type{"date": TypeOf(1082), "timestamp": TypeOf(1114), "timestamptz": TypeOf(1184)}[v.typ]
				want, err := typ.Binary(v.bin)
				if err != nil {
					t.Fatal(err)
				}
				got, err := typ.DecodeStyled([]byte(text), 0, st)
				if err != nil {
					t.Errorf("%s %s (%s, %s): reading %q: %v", v.typ, v.in, ds, zone, text, err)
					continue
				}
				if got.I != want.I {
					t.Errorf("%s %s (%s, %s): %q reads as %d, want %d", v.typ, v.in, ds, zone, text, got.I, want.I)
				}
			}
		}
	}
	// A POSIX zone with rules the proxy does not read: UTC+3 prints the
	// abbreviation "UTC" three hours west of Greenwich.
	exec(t, c, "SET DateStyle = SQL; SET TimeZone = 'UTC+3'")
	text, _ := textAndBinary(t, c, "2026-12-01 12:00:00+00", "timestamptz")
	if v, err := TypeOf(1184).DecodeStyled([]byte(text), 0, sessionStyles(t, c)); err != ErrTimeZone {
		t.Errorf("%q under TimeZone UTC+3: %v, %v; want ErrTimeZone", text, v, err)
	}
}
