package intermediate

import (
	"testing"

	"github.com/shardgate/shardgate/sqlerr"
)

func TestTwoPhaseChecks(t *testing.T) {
	set := func(cs ...string) map[string]bool {
		m := map[string]bool{}
		for _, c := range cs {
			m[c] = true
		}
		return m
	}
	for _, c := range []struct {
		wrote  map[string]bool
		refuse bool
	}{
		{set(), false}, {set("pg0"), false}, {set("pg1", "pg2"), false}, {set("pg0", "pg1"), true},
	} {
		if err := CheckReadInTx("pg0", c.wrote); (err != nil) != c.refuse || err != nil && sqlerr.Code(err) != sqlerr.FeatureNotSupported {
			t.Errorf("read after writes on %v: %v", c.wrote, err)
		}
	}
	for _, c := range []struct {
		pulledOn string
		wrote    map[string]bool
		adding   []string
		refuse   bool
	}{
		{"", set("pg0"), []string{"pg1"}, false},
		{"pg0", set(), []string{"pg0"}, false},
		{"pg0", set(), []string{"pg1", "pg2"}, false},
		{"pg0", set("pg0"), []string{"pg1"}, true},
		{"pg0", set("pg1"), []string{"pg0"}, true},
		{"pg0", set(), []string{"pg0", "pg1"}, true},
	} {
		wrote := map[string]bool{}
		for k := range c.wrote {
			wrote[k] = true
		}
		err := MarkWrites(c.pulledOn, wrote, c.adding)
		if (err != nil) != c.refuse {
			t.Errorf("%+v: %v", c, err)
		}
		if err == nil {
			for _, a := range c.adding {
				if !wrote[a] {
					t.Errorf("%+v: %s not marked", c, a)
				}
			}
		}
	}
}
