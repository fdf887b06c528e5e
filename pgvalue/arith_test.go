package pgvalue

import (
	"context"
	"math"
	"strings"
	"testing"
)

// The arithmetic of expressions over combined aggregates, checked against
// the backend.

// TestVarianceMatchesPostgres computes the four variances from count, sum
// and sum of squares and compares them with the backend's aggregates over
// the same values.
func TestVarianceMatchesPostgres(t *testing.T) {
	ctx := context.Background()
	c := backendConn(t)
	sets := [][]string{
		{"1", "2", "3", "4"}, {"5"}, {"2", "2", "2"}, {"1.5", "2.25", "-3.125"},
		{"0.001", "1000000", "42.42", "-7"}, {"123456789.987654321", "0.000000001", "3"},
		{"10", "20"}, {"1e20", "1", "2"}, {"0.1", "0.2", "0.3", "0.4", "0.5", "0.6", "0.7"},
	}
	for _, set := range sets {
		values := "(VALUES (" + strings.Join(set, "::numeric), (") + "::numeric)) v(x)"
		var want [4]*string
		if err := c.QueryRow(ctx, "SELECT var_samp(x)::text, var_pop(x)::text, stddev_samp(x)::text, stddev_pop(x)::text FROM "+values).
			Scan(&want[0], &want[1], &want[2], &want[3]); err != nil {
			t.Fatal(err)
		}
		var sx, sxx Decimal
		for i, s := range set {
			var text string
			if err := c.QueryRow(ctx, "SELECT $1::numeric::text", s).Scan(&text); err != nil {
				t.Fatal(err)
			}
			x, err := ParseNumeric(text)
			if err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				sx, sxx = x, x.Mul(x)
			} else {
				sx, sxx = sx.Add(x), sxx.Add(x.Mul(x))
			}
		}
		for i, f := range [][2]bool{{true, false}, {false, false}, {true, true}, {false, true}} {
			got, null := VarianceFromSums(int64(len(set)), sx, sxx, f[0], f[1])
			g := ""
			if !null {
				g = string(got.AppendText(nil))
			}
			switch {
			case null != (want[i] == nil):
				t.Errorf("%v variant %d: null %v, want %v", set, i, null, want[i])
			case !null && g != *want[i]:
				t.Errorf("%v variant %d: %s, want %s", set, i, g, *want[i])
			}
		}
	}
}

// TestNumericRoundAndCastsMatchPostgres checks round(numeric, n), numeric
// multiplication, float8 to numeric and numeric to bigint.
func TestNumericRoundAndCastsMatchPostgres(t *testing.T) {
	ctx := context.Background()
	c := backendConn(t)
	for _, s := range []string{"0", "1.5", "-1.5", "2.345", "-2.345", "123.456789", "0.0049", "99.995", "1e-10"} {
		d, err := ParseNumeric(s)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{0, 1, 2, 4, -1} {
			var want string
			if err := c.QueryRow(ctx, "SELECT round($1::numeric, $2::int)::text", s, n).Scan(&want); err != nil {
				t.Fatal(err)
			}
			var in string
			if err := c.QueryRow(ctx, "SELECT $1::numeric::text", s).Scan(&in); err != nil {
				t.Fatal(err)
			}
			d, _ = ParseNumeric(in)
			if got := string(d.Round(n).AppendText(nil)); got != want {
				t.Errorf("round(%s, %d) = %s, want %s", in, n, got, want)
			}
		}
		var mul, i8 string
		if err := c.QueryRow(ctx, "SELECT ($1::numeric * 1.25)::text, round($1::numeric)::int8::text", s).Scan(&mul, &i8); err != nil {
			t.Fatal(err)
		}
		if got := string(d.Mul(mustNumeric(t, "1.25")).AppendText(nil)); got != mul {
			t.Errorf("%s * 1.25 = %s, want %s", s, got, mul)
		}
	}
	for _, f := range []float64{0, 0.5, 1.0 / 3, -2.5e-7, 123456789.125, 1e20, 6.02214076e23, math.Pi, -0.1, 100} {
		var want string
		if err := c.QueryRow(ctx, "SELECT $1::float8::numeric::text", f).Scan(&want); err != nil {
			t.Fatal(err)
		}
		if got := string(DecimalFromFloat(f, 15).AppendText(nil)); got != want {
			t.Errorf("%v::numeric = %s, want %s", f, got, want)
		}
	}
}

func mustNumeric(t *testing.T, s string) Decimal {
	d, err := ParseNumeric(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestIntervalArithMatchesPostgres: interval_pl, interval_mi and
// interval_um, results and out-of-range errors, as the backend computes
// them.
func TestIntervalArithMatchesPostgres(t *testing.T) {
	ctx := context.Background()
	c := backendConn(t)
	vals := []string{"1 day 02:00:00", "-3 mons +4 days -00:00:01.5", "00:00:00", "1 year 2 mons",
		"-178956970 years -8 mons", "178956970 years 7 mons", "2147483647 days", "-2147483648 days",
		"-2562047788:00:54.775807", "2562047788:00:54.775807", "-2562047787:00:00", "-1 days +23:59:59.999999"}
	for _, a := range vals {
		for _, b := range vals {
			for _, op := range []string{"+", "-", "neg"} {
				q := "SELECT ($1::interval " + op + " $2::interval)::text"
				if op == "neg" {
					q = "SELECT (-$1::interval)::text WHERE $2::text IS NOT NULL"
				}
				var want string
				werr := c.QueryRow(ctx, q, a, b).Scan(&want)
				x, err1 := intervalText([]byte(a))
				y, err2 := intervalText([]byte(b))
				if err1 != nil || err2 != nil {
					t.Fatalf("%s, %s: %v %v", a, b, err1, err2)
				}
				var res Interval
				var err error
				switch op {
				case "+":
					res, err = IntervalOf(x).Add(IntervalOf(y))
				case "-":
					res, err = IntervalOf(x).Sub(IntervalOf(y))
				default:
					res, err = IntervalOf(x).Neg()
				}
				if (werr != nil) != (err != nil) {
					t.Fatalf("%s %s %s: backend %v, proxy %v", a, op, b, werr, err)
				}
				if err == nil && string(res.AppendText(nil)) != want {
					t.Fatalf("%s %s %s: backend %s, proxy %s", a, op, b, want, res.AppendText(nil))
				}
			}
		}
	}
}
