package keyexpr

import (
	"errors"
	"testing"

	"github.com/shardgate/shardgate/sqlerr"
)

// row is an evaluation environment for tests.
type row map[string]Value

func (r row) env(col string) (Value, bool) {
	v, ok := r[col]
	return v, ok
}

// The expected results were checked against PostgreSQL 15 (C.UTF-8) where
// Postgres can run the expression as written.
func TestEval(t *testing.T) {
	s := Text
	tests := []struct {
		expr string
		row  row
		want Value
	}{
		{"x", row{"x": s("AbC")}, s("AbC")},
		{"lower(x)", row{"x": s("AbC-12")}, s("abc-12")},
		{"upper(x)", row{"x": s("straße")}, s("STRAßE")},
		{"lower(x)", row{"x": s("ÜNÏCØDÉ")}, s("ünïcødé")},
		{"lower(x)", row{"x": Int(12)}, s("12")},

		{"left(x, 2)", row{"x": s("abcdef")}, s("ab")},
		{"left(x, -2)", row{"x": s("abcdef")}, s("abcd")},
		{"left(x, -10)", row{"x": s("abcdef")}, s("")},
		{"left(x, 10)", row{"x": s("abcdef")}, s("abcdef")},
		{"left(x, 0)", row{"x": s("abcdef")}, s("")},
		{"left(x, 3)", row{"x": s("Ünïcødé")}, s("Ünï")},
		{"left(x, '1')", row{"x": s("abc")}, s("a")},
		{"right(x, 2)", row{"x": s("abcdef")}, s("ef")},
		{"right(x, -2)", row{"x": s("abcdef")}, s("cdef")},
		{"right(x, -10)", row{"x": s("abcdef")}, s("")},
		{"right(x, 10)", row{"x": s("abcdef")}, s("abcdef")},
		{"right(x, -3)", row{"x": s("Ünïcødé")}, s("cødé")},
		{"right(x, n)", row{"x": s("abcdef"), "n": s("3")}, s("def")},

		{"substr(x, 2)", row{"x": s("abcdef")}, s("bcdef")},
		{"substr(x, 0, 3)", row{"x": s("abcdef")}, s("ab")},
		{"substr(x, -2, 4)", row{"x": s("abcdef")}, s("a")},
		{"substr(x, -5, 3)", row{"x": s("abcdef")}, s("")},
		{"substr(x, 10)", row{"x": s("abcdef")}, s("")},
		{"substr(x, 3, 0)", row{"x": s("abcdef")}, s("")},
		{"substr(x, 2, 2147483647)", row{"x": s("abcdef")}, s("bcdef")},
		{"substr(x, -2147483647, 2147483647)", row{"x": s("abcdef")}, s("")},
		{"substring(x from 2 for 3)", row{"x": s("日本語テキスト")}, s("本語テ")},
		{"substr(x, 1, -1)", row{"x": Null()}, Null()},

		{"btrim(x)", row{"x": s("  x  ")}, s("x")},
		{"trim(x)", row{"x": s("\t x ")}, s("\t x")},
		{"btrim(x, 'x')", row{"x": s("xxaxx")}, s("a")},
		{"btrim(x, '')", row{"x": s("ab")}, s("ab")},
		{"trim(both 'xy' from x)", row{"x": s("xyaxy")}, s("a")},
		{"btrim(x, 'é')", row{"x": s("ééaé")}, s("a")},

		{"x || 'a'", row{"x": Null()}, Null()},
		{"x || y", row{"x": Int(1), "y": Int(2)}, s("12")},
		{"'a' || x", row{"x": Int(1)}, s("a1")},
		{"lower(x)", row{"x": Null()}, Null()},
		{"left(x, n)", row{"x": s("abc"), "n": Null()}, Null()},
		{"NULL", row{}, Null()},

		{"x::bigint", row{"x": s(" 42 ")}, Int(42)},
		{"x::bigint", row{"x": s("-9223372036854775808")}, Int(-9223372036854775808)},
		{"x::bigint", row{"x": s("0x1F")}, Int(31)},
		{"x::bigint", row{"x": s("1_000")}, Int(1000)},
		{"x::integer", row{"x": s("+5")}, Int(5)},
		{"x::smallint", row{"x": Int(-32768)}, Int(-32768)},
		{"x::text", row{"x": Int(-7)}, s("-7")},
		{"x::varchar(2)", row{"x": s("abc")}, s("ab")},
		{"x::varchar(2)", row{"x": Int(12345)}, s("12")},
		{"x::varchar(3)", row{"x": s("日本語テ")}, s("日本語")},
		{"x::uuid", row{"x": s("{A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11}")}, s("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11")},
		{"x::uuid", row{"x": s("a0eebc999c0b4ef8bb6d6bb9bd380a11")}, s("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11")},
		{"x::uuid", row{"x": s("a0ee-bc99-9c0b-4ef8-bb6d-6bb9-bd38-0a11")}, s("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11")},
		{"x::bigint::text", row{"x": s("007")}, s("7")},
		{"x::uuid", row{"x": Null()}, Null()},
	}
	for _, tc := range tests {
		e := MustParse(tc.expr)
		got, err := e.Eval(tc.row.env)
		if err != nil {
			t.Errorf("%s with %v: %v", tc.expr, tc.row, err)
			continue
		}
		if got != tc.want {
			t.Errorf("%s with %v = %v, want %v", tc.expr, tc.row, got, tc.want)
		}
	}
}

func TestEvalErrors(t *testing.T) {
	tests := []struct {
		expr string
		row  row
		code string
		msg  string
	}{
		{"x::bigint", row{"x": Text("abc")}, "22P02", `invalid input syntax for type bigint: "abc"`},
		{"x::integer", row{"x": Text("5 x")}, "22P02", `invalid input syntax for type integer: "5 x"`},
		{"x::integer", row{"x": Text("")}, "22P02", `invalid input syntax for type integer: ""`},
		{"x::bigint", row{"x": Text("1__0")}, "22P02", `invalid input syntax for type bigint: "1__0"`},
		{"x::bigint", row{"x": Text("_1")}, "22P02", `invalid input syntax for type bigint: "_1"`},
		{"x::bigint", row{"x": Text("0x")}, "22P02", `invalid input syntax for type bigint: "0x"`},
		{"x::bigint", row{"x": Text("9223372036854775808")}, "22003", `value "9223372036854775808" is out of range for type bigint`},
		{"x::bigint", row{"x": Text("99999999999999999999")}, "22003", `value "99999999999999999999" is out of range for type bigint`},
		{"x::integer", row{"x": Text("3000000000")}, "22003", `value "3000000000" is out of range for type integer`},
		{"x::integer", row{"x": Int(3000000000)}, "22003", "integer out of range"},
		{"x::smallint", row{"x": Int(70000)}, "22003", "smallint out of range"},
		{"x::uuid", row{"x": Text(" a0eebc999c0b4ef8bb6d6bb9bd380a11")}, "22P02", `invalid input syntax for type uuid: " a0eebc999c0b4ef8bb6d6bb9bd380a11"`},
		{"x::uuid", row{"x": Text("a0eebc99-9c0b4ef8-bb6d-6bb9bd380a11-")}, "22P02", `invalid input syntax for type uuid: "a0eebc99-9c0b4ef8-bb6d-6bb9bd380a11-"`},
		{"x::uuid", row{"x": Int(1)}, "42846", "cannot cast type bigint to uuid"},
		{"substr(x, 1, -1)", row{"x": Text("abc")}, "22011", "negative substring length not allowed"},
		{"left(x, n)", row{"x": Text("abc"), "n": Text("two")}, "22P02", `invalid input syntax for type integer: "two"`},
		{"left(x, n)", row{"x": Null(), "n": Text("two")}, "22P02", `invalid input syntax for type integer: "two"`},
		{"left(x, n)", row{"x": Text("abc"), "n": Int(3000000000)}, "22003", "integer out of range"},
		{"lower(x)", row{"x": Text("a\xffb")}, "22021", `invalid byte sequence for encoding "UTF8": 0xff`},
	}
	for _, tc := range tests {
		_, err := MustParse(tc.expr).Eval(tc.row.env)
		e, ok := sqlerr.As(err)
		if !ok {
			t.Errorf("%s with %v: error %v, want a *sqlerr.Error", tc.expr, tc.row, err)
			continue
		}
		if e.Code != tc.code || e.Message != tc.msg {
			t.Errorf("%s with %v: %s %q, want %s %q", tc.expr, tc.row, e.Code, e.Message, tc.code, tc.msg)
		}
	}
}

func TestEvalMissingColumn(t *testing.T) {
	_, err := MustParse("lower(a) || b").Eval(row{"a": Text("x")}.env)
	var mc *MissingColumnError
	if !errors.As(err, &mc) || mc.Column != "b" {
		t.Fatalf("err = %v, want MissingColumnError for b", err)
	}
	if got := sqlerr.Code(err); got != sqlerr.NotNullViolation {
		t.Errorf("code = %s", got)
	}
}

func TestParseInteger(t *testing.T) {
	tests := []struct {
		in   string
		bits int
		want int64
		code string
	}{
		{"0", 64, 0, ""},
		{"-0", 64, 0, ""},
		{"9223372036854775807", 64, 9223372036854775807, ""},
		{"-9223372036854775809", 64, 0, "22003"},
		{"2147483647", 32, 2147483647, ""},
		{"-2147483648", 32, -2147483648, ""},
		{"2147483648", 32, 0, "22003"},
		{"32767", 16, 32767, ""},
		{"-32769", 16, 0, "22003"},
		{"0o17", 64, 15, ""},
		{"0b101", 64, 5, ""},
		{"0B1_01", 64, 5, ""},
		{"0x_ff", 64, 255, ""},
		{"0x7FFFFFFFFFFFFFFF", 64, 9223372036854775807, ""},
		{"-0x8000000000000000", 64, -9223372036854775808, ""},
		{"0x8000000000000000", 64, 0, "22003"},
		{"0o8", 64, 0, "22P02"},
		{"1_", 64, 0, "22P02"},
		{"\t\n 12 \r", 32, 12, ""},
		{"1 2", 32, 0, "22P02"},
		{"+", 32, 0, "22P02"},
		{"١٢", 32, 0, "22P02"},
		{"1.0", 32, 0, "22P02"},
	}
	for _, tc := range tests {
		got, err := ParseInteger(tc.in, tc.bits)
		if code := sqlerr.Code(err); code != tc.code || got != tc.want {
			t.Errorf("ParseInteger(%q, %d) = %d, %v; want %d, code %q", tc.in, tc.bits, got, err, tc.want, tc.code)
		}
	}
}
