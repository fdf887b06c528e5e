package proxy

import (
	"context"
	"fmt"
	"math"
	"testing"
)

// The merge executor's value arithmetic and text output, checked against
// the backend itself.

// TestNumericDivisionMatchesPostgres checks avg's arithmetic (sum / count
// with select_div_scale's scale) against the backend's numeric division.
func TestNumericDivisionMatchesPostgres(t *testing.T) {
	ctx := context.Background()
	c := connect(t, env.Clusters[0].DSN("shop"))
	sums := []string{"0", "1", "-1", "3", "7", "10", "1234567", "-98765432109876543210", "0.001", "-0.5", "12.345",
		"99999999", "100000000", "0.0000001", "123456789.123456789", "1e30", "5e-20", "9999.9999", "1.000"}
	counts := []int64{1, 2, 3, 6, 7, 9, 10, 11, 9999, 10000, 10001, 123456789, 1 << 40}
	for _, s := range sums {
		for _, n := range counts {
			var want string
			if err := c.QueryRow(ctx, "SELECT ($1::numeric / $2::numeric)::text", s, n).Scan(&want); err != nil {
				t.Fatal(err)
			}
			d, err := parseNumericText(s)
			if err != nil {
				t.Fatal(err)
			}
			// The backend's sum prints with its own dscale: read it back.
			var sumText string
			if err := c.QueryRow(ctx, "SELECT $1::numeric::text", s).Scan(&sumText); err != nil {
				t.Fatal(err)
			}
			if d, err = parseNumericText(sumText); err != nil {
				t.Fatal(err)
			}
			got := string(d.div(decimalFromInt(n)).appendText(nil))
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
	c := connect(t, env.Clusters[0].DSN("shop"))
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
		if got := d.appendBinary(nil); string(got) != string(want) {
			t.Errorf("%s: encoded %x, want %x", s, got, want)
		}
		var text string
		if err := c.QueryRow(ctx, "SELECT $1::numeric::text", s).Scan(&text); err != nil {
			t.Fatal(err)
		}
		if got := string(d.appendText(nil)); got != text {
			t.Errorf("%s: text %s, want %s", s, got, text)
		}
	}
}

// TestFloatTextMatchesPostgres checks the float output the proxy writes
// for sums and averages against float8out/float4out, for every
// extra_float_digits style.
func TestFloatTextMatchesPostgres(t *testing.T) {
	ctx := context.Background()
	c := connect(t, env.Clusters[0].DSN("shop"))
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
			if got := string(appendFloat8Text(nil, v, efd)); got != want8 {
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
			if got := string(appendFloat4Text(nil, f, efd)); got != want4 {
				t.Errorf("float4 %v (extra_float_digits %d): %s, want %s", f, efd, got, want4)
			}
		}
	}
}
