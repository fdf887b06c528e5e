package keyexpr

import (
	"errors"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/sqlerr"
)

// Expressions nested deeper than pg_query can take are 54001, never a
// crash: before the guard the 30,000-level chains killed the test binary
// inside pg_query's C code (SIGSEGV), and 5,000 levels of +1 were a syntax
// error "proto: exceeded maximum recursion depth".
func TestTooDeepExpressionIsStackDepthError(t *testing.T) {
	for name, unit := range map[string]string{"concat": "||a", "cast": "::text", "plus": "+1"} {
		if _, err := Parse("a" + strings.Repeat(unit, 30000)); sqlerr.Code(err) != tooDeep {
			t.Errorf("%s x 30000: got %v, want SQLSTATE 54001", name, err)
		}
		// Just under the length limit: parsed, refused for what it
		// contains, or too deep for the parser's decoder, never anything
		// else.
		_, err := Parse("a" + strings.Repeat(unit, (MaxLength-1)/len(unit)))
		var ue *UnsupportedError
		e, isSQL := sqlerr.As(err)
		switch {
		case err == nil, errors.As(err, &ue):
		case isSQL && e.Code == tooDeep && e.Message == "stack depth limit exceeded":
		default:
			t.Errorf("%s under the length limit: %v", name, err)
		}
	}
	_, err := Parse("a" + strings.Repeat("||a", 30000))
	if e, ok := sqlerr.As(err); !ok || e.Code != tooDeep || !strings.Contains(e.Message, "longer than the 10000 allowed") {
		t.Errorf("length: %v", err)
	}
}
