package keyexpr

import (
	"testing"
)

// FuzzParseEval checks that any text either fails to parse or yields an
// expression whose canonical form parses back to itself and whose
// evaluation, on any input, returns a value or an error without panicking.
func FuzzParseEval(f *testing.F) {
	for _, s := range []string{
		"lower(sku)", "substring(x from 2 for 3)", "trim(both 'x' from y)", "left(a, -2) || b::text",
		"x::varchar(3)", "(a || b)::bigint", "right(a, n)", "md5(a)", "'a' || NULL", "x::uuid",
	} {
		f.Add(s, "AbC-12", int64(-3))
	}
	f.Fuzz(func(t *testing.T, src, text string, n int64) {
		e, err := Parse(src)
		if err != nil {
			return
		}
		again, err := Parse(e.String())
		if err != nil || again.String() != e.String() {
			t.Fatalf("canonical form %q of %q does not round-trip: %v", e.String(), src, err)
		}
		for _, v := range []Value{Text(text), Int(n), Null()} {
			_, _ = e.Eval(func(string) (Value, bool) { return v, true })
		}
	})
}

// FuzzParseInteger checks ParseInteger against itself: a value it
// accepts prints back to the same value.
func FuzzParseInteger(f *testing.F) {
	for _, s := range []string{"0", "-9223372036854775808", " 0x_ff ", "1_000", "0b101", "abc", "+"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, bits := range []int{16, 32, 64} {
			v, err := ParseInteger(s, bits)
			if err != nil {
				continue
			}
			if _, err := checkIntRange(v, bits); err != nil {
				t.Fatalf("ParseInteger(%q, %d) = %d, outside the type", s, bits, v)
			}
		}
		if u, err := ParseUUID(s); err == nil {
			if back, err := ParseUUID(FormatUUID(u)); err != nil || back != u {
				t.Fatalf("uuid %q does not round-trip", s)
			}
		}
	})
}
