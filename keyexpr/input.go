package keyexpr

import (
	"encoding/hex"

	"github.com/shardgate/shardgate/sqlerr"
)

// IntegerTypeName returns the SQL name of the integer type of the given
// width: "smallint" (16), "integer" (32) or "bigint" (64).
func IntegerTypeName(bits int) string {
	switch bits {
	case 16:
		return "smallint"
	case 32:
		return "integer"
	}
	return "bigint"
}

// ParseInteger converts the text form of an integer the way Postgres 16+'s
// int2in, int4in and int8in do (pg_strtoint64_safe and friends): optional
// leading and trailing whitespace, an optional sign, decimal digits or a
// 0x, 0o or 0b prefix, and single underscores between digits. bits is 16,
// 32 or 64. A malformed string is a 22P02 error, a value outside the type a
// 22003 error, both with Postgres's message text.
func ParseInteger(s string, bits int) (int64, error) {
	typ := IntegerTypeName(bits)
	invalid := func() error {
		return sqlerr.New(sqlerr.InvalidTextRepresentation, "invalid input syntax for type %s: %q", typ, s)
	}
	outOfRange := func() error {
		return sqlerr.New(sqlerr.NumericValueOutOfRange, "value %q is out of range for type %s", s, typ)
	}
	limit := uint64(1) << (bits - 1) // magnitude of the type's minimum

	p := 0
	for p < len(s) && isSpace(s[p]) {
		p++
	}
	neg := false
	if p < len(s) && (s[p] == '-' || s[p] == '+') {
		neg = s[p] == '-'
		p++
	}
	base := uint64(10)
	if p+1 < len(s) && s[p] == '0' {
		switch s[p+1] {
		case 'x', 'X':
			base = 16
		case 'o', 'O':
			base = 8
		case 'b', 'B':
			base = 2
		}
		if base != 10 {
			p += 2
		}
	}
	first := p
	var tmp uint64
	for p < len(s) {
		d, ok := digitValue(s[p], base)
		if ok {
			if tmp > limit/base {
				return 0, outOfRange()
			}
			tmp = tmp*base + d
			p++
			continue
		}
		if s[p] != '_' {
			break
		}
		// An underscore separates digits: it may follow a base prefix but
		// not start a decimal number, and a digit must follow it.
		if base == 10 && p == first {
			return 0, invalid()
		}
		p++
		if p >= len(s) {
			return 0, invalid()
		}
		if _, ok := digitValue(s[p], base); !ok {
			return 0, invalid()
		}
	}
	if p == first {
		return 0, invalid()
	}
	for p < len(s) && isSpace(s[p]) {
		p++
	}
	if p != len(s) {
		return 0, invalid()
	}
	if neg {
		if tmp > limit {
			return 0, outOfRange()
		}
		return int64(-tmp), nil
	}
	if tmp > limit-1 {
		return 0, outOfRange()
	}
	return int64(tmp), nil
}

// isSpace is C's isspace in the C locale, which Postgres uses here.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

func digitValue(c byte, base uint64) (uint64, bool) {
	var d uint64
	switch {
	case c >= '0' && c <= '9':
		d = uint64(c - '0')
	case c >= 'a' && c <= 'f':
		d = uint64(c-'a') + 10
	case c >= 'A' && c <= 'F':
		d = uint64(c-'A') + 10
	default:
		return 0, false
	}
	return d, d < base
}

// checkIntRange narrows v to the integer type of the given width, failing
// like Postgres's int84 and int82 casts ("integer out of range", 22003).
func checkIntRange(v int64, bits int) (int64, error) {
	if bits < 64 {
		limit := int64(1) << (bits - 1)
		if v < -limit || v >= limit {
			return 0, sqlerr.New(sqlerr.NumericValueOutOfRange, "%s out of range", IntegerTypeName(bits))
		}
	}
	return v, nil
}

// ParseUUID converts the text form of a uuid the way Postgres's uuid_in
// does: 32 hex digits, either case, optionally wrapped in braces, with an
// optional hyphen after any group of four digits. Anything else, including
// surrounding whitespace, is a 22P02 error.
func ParseUUID(s string) ([16]byte, error) {
	var u [16]byte
	invalid := sqlerr.New(sqlerr.InvalidTextRepresentation, "invalid input syntax for type uuid: %q", s)
	p := 0
	braces := len(s) > 0 && s[0] == '{'
	if braces {
		p++
	}
	for i := range u {
		if p+2 > len(s) {
			return u, invalid
		}
		hi, ok1 := digitValue(s[p], 16)
		lo, ok2 := digitValue(s[p+1], 16)
		if !ok1 || !ok2 {
			return u, invalid
		}
		u[i] = byte(hi<<4 | lo)
		p += 2
		if p < len(s) && s[p] == '-' && i%2 == 1 && i < len(u)-1 {
			p++
		}
	}
	if braces {
		if p >= len(s) || s[p] != '}' {
			return u, invalid
		}
		p++
	}
	if p != len(s) {
		return u, invalid
	}
	return u, nil
}

// FormatUUID returns the canonical text form of u, as uuid_out writes it:
// lower-case hex in groups of 8-4-4-4-12.
func FormatUUID(u [16]byte) string {
	var b [36]byte
	hex.Encode(b[0:8], u[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], u[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], u[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], u[8:10])
	b[23] = '-'
	hex.Encode(b[24:], u[10:])
	return string(b[:])
}
