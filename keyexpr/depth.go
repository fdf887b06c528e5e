package keyexpr

import (
	"errors"
	"strings"

	"github.com/shardgate/shardgate/sqlerr"
)

// MaxLength bounds the text of an index expression handed to pg_query.
//
// pg_query serializes its parse tree recursively in C, which overflows the
// thread's stack and kills the whole process somewhere above 20,000 levels
// of left-associative chains (a||a||a..., x::text::text...), and its Go
// side refuses trees deeper than about 5,000 levels ("proto: exceeded
// maximum recursion depth"). The planner guards statements with a bound
// computed from their tokens (planner/depth.go); an index expression is
// never deeper than its length in bytes, so this bound is enough here and
// keeps a pathological topology file from crashing the loader.
const MaxLength = 10000

// tooDeep is SQLSTATE 54001 (statement_too_complex), as Postgres reports an
// expression nested beyond its stack depth limit.
const tooDeep = "54001"

// checkLength refuses an expression longer than MaxLength.
func checkLength(src string) error {
	if len(src) <= MaxLength {
		return nil
	}
	return sqlerr.New(tooDeep, "index expression of %d bytes is longer than the %d allowed", len(src), MaxLength).
		WithHint("An index expression longer than this could nest too deeply for the parser; shorten it.")
}

// recursionLimit maps the protobuf decoder's refusal of a tree deeper
// than its recursion limit to 54001, and returns nil for other errors.
func recursionLimit(err error) error {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if strings.Contains(e.Error(), "exceeded maximum recursion depth") {
			return sqlerr.New(tooDeep, "stack depth limit exceeded").
				WithHint("The index expression nests too deeply; simplify it.")
		}
	}
	return nil
}
