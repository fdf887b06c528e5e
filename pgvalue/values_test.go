package pgvalue

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/jackc/pgx/v5/pgtype"
)

// The value arithmetic and text output of merges, checked against the
// backend itself.

// TestNumericDivisionMatchesPostgres checks avg's arithmetic (sum / count
// with select_div_scale's scale) against the backend's numeric division.
func TestNumericDivisionMatchesPostgres(t *testing.T) {
	ctx := context.Background()
	c := backendConn(t)
	sums := []string{"0", "1", "-1", "3", "7", "10", "1234567", "-98765432109876543210", "0.001", "-0.5", "12.345",
		"99999999", "100000000", "0.0000001", "123456789.123456789", "1e30", "5e-20", "9999.9999", "1.000"}
	counts := []int64{1, 2, 3, 6, 7, 9, 10, 11, 9999, 10000, 10001, 123456789, 1 << 40}
	for _, s := range sums {
		for _, n := range counts {
			var want string
			if err := c.QueryRow(ctx, "SELECT ($1::numeric / $2::numeric)::text", s, n).Scan(&want); err != nil {
				t.Fatal(err)
			}
			d, err := ParseNumeric(s)
			if err != nil {
				t.Fatal(err)
			}
			// The backend's sum prints with its own dscale: read it back.
			var sumText string
			if err := c.QueryRow(ctx, "SELECT $1::numeric::text", s).Scan(&sumText); err != nil {
				t.Fatal(err)
			}
			if d, err = ParseNumeric(sumText); err != nil {
				t.Fatal(err)
			}
			got := string(d.Div(DecimalFromInt(n)).AppendText(nil))
			if got != want {
				t.Errorf("%s / %d = %s, want %s", sumText, n, got, want)
			}
		}
	}
}

// TestNumericBinaryMatchesPostgres checks the numeric wire codec against
// numeric_send.
func TestNumericBinaryMatchesPostgres(t *testing.T) {
	ctx := context.Background()
	c := backendConn(t)
	for _, s := range []string{"0", "0.000", "1", "-1", "10000", "12345.6789", "0.00012", "-0.5", "1e100", "123456789012345678901234567890.123",
		"NaN", "Infinity", "-Infinity", "99990000", "0.10"} {
		rr := c.PgConn().ExecParams(ctx, "SELECT $1::numeric", [][]byte{[]byte(s)}, nil, nil, []int16{1})
		var want []byte
		for rr.NextRow() {
			want = append([]byte{}, rr.Values()[0]...)
		}
		if _, err := rr.Close(); err != nil {
			t.Fatal(err)
		}
		d, err := parseNumericBinary(want)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		if got := d.AppendBinary(nil); string(got) != string(want) {
			t.Errorf("%s: encoded %x, want %x", s, got, want)
		}
		var text string
		if err := c.QueryRow(ctx, "SELECT $1::numeric::text", s).Scan(&text); err != nil {
			t.Fatal(err)
		}
		if got := string(d.AppendText(nil)); got != text {
			t.Errorf("%s: text %s, want %s", s, got, text)
		}
	}
}

// TestFloatTextMatchesPostgres checks the float output the proxy writes
// for sums and averages against float8out/float4out, for every
// extra_float_digits style.
func TestFloatTextMatchesPostgres(t *testing.T) {
	ctx := context.Background()
	c := backendConn(t)
	vals := []float64{0, math.Copysign(0, -1), 1, -1, 0.5, 0.1, 1.0 / 3, 2.0 / 3, 100, 123456, 1234567, 1e14, 1e15, 1e16,
		123456789012345678, 1e-4, 1e-5, 0.00012345, 1.5e-300, 5e-324, 1.7976931348623157e308, math.Pi * 1e10, math.NaN(),
		math.Inf(1), math.Inf(-1), 1e21, 12345.678, 0.000123456789}
	for _, efd := range []int{1, 0, 3, -5} {
		if _, err := c.Exec(ctx, fmt.Sprintf("SET extra_float_digits = %d", efd)); err != nil {
			t.Fatal(err)
		}
		for _, v := range vals {
			var want8 string
			if err := c.QueryRow(ctx, "SELECT $1::float8::text", v).Scan(&want8); err != nil {
				t.Fatal(err)
			}
			if got := string(AppendFloat8Text(nil, v, efd)); got != want8 {
				t.Errorf("float8 %v (extra_float_digits %d): %s, want %s", v, efd, got, want8)
			}
			f := float32(v)
			if !math.IsInf(v, 0) && (math.IsInf(float64(f), 0) || f == 0 && v != 0) {
				continue // out of real's range
			}
			var want4 string
			if err := c.QueryRow(ctx, "SELECT $1::float4::text", f).Scan(&want4); err != nil {
				t.Fatal(err)
			}
			if got := string(AppendFloat4Text(nil, f, efd)); got != want4 {
				t.Errorf("float4 %v (extra_float_digits %d): %s, want %s", f, efd, got, want4)
			}
		}
	}
}

// TestIntervalMatchesPostgres checks interval text (IntervalStyle
// postgres) and binary decoding, text output, ordering and addition
// against the backend.
func TestIntervalMatchesPostgres(t *testing.T) {
	ctx := context.Background()
	c := backendConn(t)
	vals := []string{"0", "1 day", "24 hours", "-1 day", "1 mon", "30 days", "1 year 2 mons 3 days 04:05:06.789",
		"-1 year -2 mons +3 days -04:05:06", "1 day -00:00:01", "-1 day +00:00:01", "00:00:00.000001", "-00:00:00.5",
		"178000000 years", "-178000000 years", "100000 hours", "1 mon -30 days", "13 mons", "-13 mons 1 day", "2 years -1 day 01:00:00",
		"12:00:00", "-12:00:00.123456", "5 days 00:00:00.1"}
	type iv struct {
		text string
		v    Value
	}
	var all []iv
	for _, s := range vals {
		var text string
		if err := c.QueryRow(ctx, "SELECT $1::interval::text", s).Scan(&text); err != nil {
			t.Fatal(err)
		}
		rr := c.PgConn().ExecParams(ctx, "SELECT $1::interval", [][]byte{[]byte(s)}, nil, nil, []int16{1})
		var bin []byte
		for rr.NextRow() {
			bin = append([]byte{}, rr.Values()[0]...)
		}
		if _, err := rr.Close(); err != nil {
			t.Fatal(err)
		}
		fromText, err := intervalText([]byte(text))
		if err != nil {
			t.Fatalf("%s: reading %q: %v", s, text, err)
		}
		fromBin, err := intervalBinary(bin)
		if err != nil {
			t.Fatal(err)
		}
		if string(fromText.B) != string(fromBin.B) {
			t.Errorf("%s: text %q reads as %x, binary is %x", s, text, fromText.B, fromBin.B)
		}
		if got := string(IntervalOf(fromBin).AppendText(nil)); got != text {
			t.Errorf("%s: writes %q, want %q", s, got, text)
		}
		all = append(all, iv{text, fromBin})
	}
	for _, a := range all {
		for _, b := range all {
			var lt, eq bool
			var sum string
			err := c.QueryRow(ctx, "SELECT $1::interval < $2::interval, $1::interval = $2::interval, ($1::interval + $2::interval)::text", a.text, b.text).Scan(&lt, &eq, &sum)
			if err != nil {
				if sqlstate(err) == "22008" {
					if _, aerr := IntervalOf(a.v).Add(IntervalOf(b.v)); aerr == nil {
						t.Errorf("%s + %s: Postgres overflows, the proxy does not", a.text, b.text)
					}
					continue
				}
				t.Fatal(err)
			}
			c := Compare(KindInterval, a.v, b.v)
			if (c < 0) != lt || (c == 0) != eq {
				t.Errorf("%s vs %s: compare %d, Postgres says < %v, = %v", a.text, b.text, c, lt, eq)
			}
			s, err := IntervalOf(a.v).Add(IntervalOf(b.v))
			if err != nil {
				t.Errorf("%s + %s: %v", a.text, b.text, err)
				continue
			}
			if got := string(s.AppendText(nil)); got != sum {
				t.Errorf("%s + %s = %s, want %s", a.text, b.text, got, sum)
			}
		}
	}
}

// TestTypeNameReadsOnce: a type the proxy does not compute with is named
// as Postgres's format_type names it where pgx knows it (an array as
// "integer[]", not "_int4"), else by its OID — never "type type OID n" in
// messages that say "of type %s" (issue 19's note).
func TestTypeNameReadsOnce(t *testing.T) {
	for oid, want := range map[uint32]string{
		pgtype.Int4OID:      "integer",
		pgtype.XMLOID:       "xml",
		pgtype.Int4ArrayOID: "integer[]",
		1015:                "character varying[]",
		1002:                `"char"[]`,
		1562:                "bit varying",
		3614:                "tsvector",
		987654:              "OID 987654",
	} {
		if got := TypeName(oid); got != want {
			t.Errorf("TypeName(%d) = %q, want %q", oid, got, want)
		}
	}
}
