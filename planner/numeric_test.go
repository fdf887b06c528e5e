package planner

import (
	"math"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/sqlerr"
	"github.com/shardgate/shardgate/vschema"
)

// Expected values below were checked once against Postgres 15.

func TestParseNumeric(t *testing.T) {
	for _, c := range []struct {
		in, out, code string
	}{
		{"7.0", "7.0", ""},
		{" +1e3 ", "1000", ""},
		{"1E+2", "100", ""},
		{"1.50e1", "15.0", ""},
		{"5.", "5", ""},
		{".5", "0.5", ""},
		{"-0.0", "0.0", ""},
		{"0.000e-3", "0.000000", ""},
		{"-7.25", "-7.25", ""},
		{"007", "7", ""},
		{"NaN", "NaN", ""},
		{" -Infinity ", "-Infinity", ""},
		{"inf", "Infinity", ""},
		{"1e", "", sqlerr.InvalidTextRepresentation},
		{"abc", "", sqlerr.InvalidTextRepresentation},
		{"1_000", "", sqlerr.InvalidTextRepresentation},
		{"1.2.3", "", sqlerr.InvalidTextRepresentation},
		{"", "", sqlerr.InvalidTextRepresentation},
		{"-", "", sqlerr.InvalidTextRepresentation},
		{"0e999999999", "0", ""},
		{"0.00e999999", "0", ""},
		{"1e131072", "", sqlerr.NumericValueOutOfRange},
		{"1e-16384", "", sqlerr.NumericValueOutOfRange},
		{"1e99999999999", "", sqlerr.NumericValueOutOfRange},
	} {
		d, err := parseNumeric(c.in)
		if sqlerr.Code(err) != c.code {
			t.Errorf("%q: error %v, want %s", c.in, err, c.code)
			continue
		}
		if err == nil && d.String() != c.out {
			t.Errorf("%q: %s, want %s", c.in, d.String(), c.out)
		}
	}
	for _, in := range []string{"1e131071", "1e-16383"} {
		if _, err := parseNumeric(in); err != nil {
			t.Errorf("%q: %v", in, err)
		}
	}
}

// numeric -> integer casts round half away from zero (numeric_int8).
func TestNumericToInt(t *testing.T) {
	for _, c := range []struct {
		in   string
		bits int
		want int64
		code string
	}{
		{"7.5", 64, 8, ""},
		{"-7.5", 64, -8, ""},
		{"6.5", 64, 7, ""},
		{"0.5", 64, 1, ""},
		{"-0.5", 64, -1, ""},
		{"0.4", 64, 0, ""},
		{"0.0001", 64, 0, ""},
		{"0e999999999", 64, 0, ""},
		{"1e18", 64, 1000000000000000000, ""},
		{"9223372036854775807.4", 64, math.MaxInt64, ""},
		{"-9223372036854775808.4", 64, math.MinInt64, ""},
		{"9223372036854775807.5", 64, 0, sqlerr.NumericValueOutOfRange},
		{"-9223372036854775808.5", 64, 0, sqlerr.NumericValueOutOfRange},
		{"1e30", 64, 0, sqlerr.NumericValueOutOfRange},
		{"32767.4", 16, 32767, ""},
		{"32767.5", 16, 0, sqlerr.NumericValueOutOfRange},
		{"2147483647.5", 32, 0, sqlerr.NumericValueOutOfRange},
		{"NaN", 64, 0, sqlerr.FeatureNotSupported},
		{"Infinity", 32, 0, sqlerr.FeatureNotSupported},
	} {
		d, err := parseNumeric(c.in)
		if err != nil {
			t.Fatal(err)
		}
		n, err := d.toInt(c.bits)
		if sqlerr.Code(err) != c.code || err == nil && n != c.want {
			t.Errorf("%s to int%d: %d, %v; want %d %s", c.in, c.bits/8, n, err, c.want, c.code)
		}
	}
	d, _ := parseNumeric("32767.5")
	if _, err := d.toInt(16); err == nil || !strings.Contains(err.Error(), "smallint out of range") {
		t.Errorf("message: %v", err)
	}
}

// double precision -> integer casts round to the nearest even (dtoi8).
func TestFloatToInt(t *testing.T) {
	for _, c := range []struct {
		in   float64
		bits int
		want int64
		ok   bool
	}{
		{6.5, 64, 6, true},
		{7.5, 64, 8, true},
		{-6.5, 64, -6, true},
		{-0.4, 32, 0, true},
		{math.Ldexp(1, 63), 64, 0, false},
		{-math.Ldexp(1, 63), 64, math.MinInt64, true},
		{32767.5, 16, 0, false},
		{math.NaN(), 64, 0, false},
		{math.Inf(-1), 64, 0, false},
	} {
		n, err := floatToInt(c.in, c.bits)
		if (err == nil) != c.ok || c.ok && n != c.want {
			t.Errorf("%v to int%d: %d, %v", c.in, c.bits/8, n, err)
		}
	}
}

func TestParseFloat(t *testing.T) {
	for _, c := range []struct {
		in   string
		bits int
		want float64
		code string
	}{
		{" 1e3 ", 64, 1000, ""},
		{"0x10", 64, 16, ""},
		{"-inf", 64, math.Inf(-1), ""},
		{"Infinity", 32, math.Inf(1), ""},
		{"7.5", 32, 7.5, ""},
		{"1e-400", 64, 0, sqlerr.NumericValueOutOfRange},
		{"1e400", 64, 0, sqlerr.NumericValueOutOfRange},
		{"1e40", 32, 0, sqlerr.NumericValueOutOfRange},
		{"4e-320", 64, 4e-320, ""},
		{"0", 64, 0, ""},
		{"0.0e-999", 64, 0, ""},
		{"1_000", 64, 0, sqlerr.InvalidTextRepresentation},
		{"abc", 64, 0, sqlerr.InvalidTextRepresentation},
		{"", 64, 0, sqlerr.InvalidTextRepresentation},
	} {
		f, err := parseFloat(c.in, c.bits)
		if sqlerr.Code(err) != c.code || err == nil && f != c.want {
			t.Errorf("%q: %v, %v; want %v %s", c.in, f, err, c.want, c.code)
		}
	}
	if f, err := parseFloat("nan", 64); err != nil || !math.IsNaN(f) {
		t.Errorf("nan: %v %v", f, err)
	}
}

// keyInput compares a number with an integer key column as Postgres does:
// numeric exactly, real and double precision in double precision, and an
// integer outside a narrower key's range equal to no key.
func TestKeyInputComparisons(t *testing.T) {
	num := func(s string) sqlValue {
		d, err := parseNumeric(s)
		if err != nil {
			t.Fatal(err)
		}
		return sqlValue{typ: typeNumeric, d: d}
	}
	for _, c := range []struct {
		name string
		v    sqlValue
		kt   vschema.KeyType
		want string // the key value, "none" for no match, or a SQLSTATE
	}{
		{"numeric 7.0", num("7.0"), vschema.Bigint, "7"},
		{"numeric 7.5", num("7.5"), vschema.Bigint, "none"},
		{"numeric 1e30", num("1e30"), vschema.Bigint, "none"},
		{"numeric NaN", num("NaN"), vschema.Bigint, "none"},
		{"numeric -Infinity", num("-Infinity"), vschema.Integer, "none"},
		{"numeric 40000 vs smallint", num("40000"), vschema.Smallint, "none"},
		{"int 40000 vs smallint", sqlValue{typ: typeInt4, i: 40000}, vschema.Smallint, "none"},
		{"int -32768 vs smallint", sqlValue{typ: typeInt4, i: -32768}, vschema.Smallint, "-32768"},
		{"int8 vs integer", sqlValue{typ: typeInt8, i: 3000000000}, vschema.Integer, "none"},
		{"float8 7", sqlValue{typ: typeFloat8, f: 7}, vschema.Bigint, "7"},
		{"float8 7.5", sqlValue{typ: typeFloat8, f: 7.5}, vschema.Bigint, "none"},
		{"float8 2^53-1", sqlValue{typ: typeFloat8, f: 1<<53 - 1}, vschema.Bigint, "9007199254740991"},
		{"float8 2^53", sqlValue{typ: typeFloat8, f: 1 << 53}, vschema.Bigint, sqlerr.FeatureNotSupported},
		{"float8 2^53 vs integer", sqlValue{typ: typeFloat8, f: 1 << 53}, vschema.Integer, "none"},
		{"float8 2^31 vs integer", sqlValue{typ: typeFloat8, f: 1 << 31}, vschema.Integer, "none"},
		{"float8 -2^31 vs integer", sqlValue{typ: typeFloat8, f: -(1 << 31)}, vschema.Integer, "-2147483648"},
		{"float8 2^63", sqlValue{typ: typeFloat8, f: math.Ldexp(1, 63)}, vschema.Bigint, sqlerr.FeatureNotSupported},
		{"float8 2^64", sqlValue{typ: typeFloat8, f: math.Ldexp(1, 64)}, vschema.Bigint, "none"},
		{"float4 NaN", sqlValue{typ: typeFloat4, f: math.NaN()}, vschema.Bigint, "none"},
		{"unknown text", textValue(typeUnknown, "7.0"), vschema.Bigint, "'7.0'"},
		{"numeric vs text key", num("7"), vschema.Text, "none"},
		{"int vs text key", sqlValue{typ: typeInt4, i: 7}, vschema.Text, "7"},
	} {
		in, ok, err := keyInput(c.v, c.kt, false, false, "k")
		got := in.String()
		switch {
		case err != nil:
			got = sqlerr.Code(err)
		case !ok:
			got = "none"
		}
		if got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}

// An IN list of type real converts its items to real first: 16777217
// becomes 16777216 (Postgres finds key 16777216, not 16777217).
func TestInListCommonTypeRounds(t *testing.T) {
	p := testPlanner(t)
	shardOf := func(sql string) []Target {
		pl, err := p.Plan(sql)
		if err != nil {
			t.Fatal(err)
		}
		ts, err := pl.Targets(nil)
		if err != nil {
			t.Fatal(err)
		}
		return ts
	}
	// Modulo 3: key 16777216 is on shard 1 (pg2), 16777217 on shard 2 (pg1).
	got := shardOf("SELECT * FROM events WHERE tenant_id IN (16777217, 1.5::float4)")
	want := shardOf("SELECT * FROM events WHERE tenant_id = 16777216")
	other := shardOf("SELECT * FROM events WHERE tenant_id = 16777217")
	if want[0].Shards[0] == other[0].Shards[0] {
		t.Fatalf("keys 16777216 and 16777217 share shard %s", other[0].Shards[0])
	}
	if len(got) != 1 || got[0].Cluster != want[0].Cluster || got[0].Shards[0] != want[0].Shards[0] {
		t.Errorf("IN (16777217, 1.5::float4) goes to %v, key 16777216 to %v", got, want)
	}
}
