package backup

import (
	"strings"
	"testing"

	"github.com/shardgate/shardgate/sqlerr"
)

func TestValidName(t *testing.T) {
	for _, name := range []string{"nightly-2026-12-02", strings.Repeat("x", 63), "before migration"} {
		if err := ValidName(name); err != nil {
			t.Errorf("%q: %v", name, err)
		}
	}
	for _, name := range []string{"", strings.Repeat("x", 64), "a\nb"} {
		if err := ValidName(name); sqlerr.Code(err) != sqlerr.InvalidParameterValue {
			t.Errorf("%q: %v, want 22023", name, err)
		}
	}
}
