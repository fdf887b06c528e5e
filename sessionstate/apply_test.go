package sessionstate

import (
	"testing"

	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/planner"
)

// TestApply: SET records and re-sets, SET LOCAL changes nothing, RESET
// returns to the start-up value or drops the setting, RESET ALL and
// DISCARD return to the start-up settings and replay them all.
func TestApply(t *testing.T) {
	startup := map[string]string{"user": "u", "application_name": "boot"}
	s := FromStartup(startup)
	set := &planner.Plan{Kind: planner.Set, Set: &planner.SetInfo{Name: "work_mem", Value: "'8MB'"},
		Settings: []planner.SetInfo{{Name: "work_mem", Value: "'8MB'"}}}
	s, sql, changed := Apply(s, startup, set)
	if !changed || s["work_mem"] != "'8MB'" || sql != "SET work_mem = '8MB';" {
		t.Fatalf("SET: %v %q %v", s, sql, changed)
	}
	local := &planner.Plan{Kind: planner.Set, Set: &planner.SetInfo{Name: "work_mem", Value: "'1MB'", Local: true}}
	if s2, sql, changed := Apply(s, startup, local); changed || sql != "" || s2["work_mem"] != "'8MB'" {
		t.Fatalf("SET LOCAL: %v %q %v", s2, sql, changed)
	}
	reset := func(name string) *planner.Plan {
		return &planner.Plan{Kind: planner.Reset, Set: &planner.SetInfo{Name: name}}
	}
	s, sql, _ = Apply(s, startup, reset("work_mem"))
	if _, ok := s["work_mem"]; ok || sql != "RESET work_mem;" {
		t.Fatalf("RESET work_mem: %v %q", s, sql)
	}
	s["application_name"] = "'other'"
	s, sql, _ = Apply(s, startup, reset("application_name"))
	if s["application_name"] != "'boot'" || sql != "SET application_name = 'boot';" {
		t.Fatalf("RESET application_name: %v %q", s, sql)
	}
	s["search_path"] = "x"
	s, sql, _ = Apply(s, startup, &planner.Plan{Kind: planner.Discard, DiscardAll: true})
	if len(s) != 1 || sql != "RESET SESSION AUTHORIZATION;RESET ROLE;RESET ALL;SET application_name = 'boot';" {
		t.Fatalf("DISCARD: %v %q", s, sql)
	}
	if _, _, changed := Apply(s, startup, &planner.Plan{Kind: planner.Select}); changed {
		t.Fatal("SELECT changed settings")
	}
	if got := (Settings{"extra_float_digits": "' 3 '"}).ExtraFloatDigits(1); got != 3 {
		t.Fatalf("ExtraFloatDigits: %d", got)
	}
	if got := (Settings{}).ExtraFloatDigits(1); got != 1 {
		t.Fatalf("ExtraFloatDigits default: %d", got)
	}
	if got := (Settings{}).FloatDigitsOn([]*backend.CollationInfo{{ExtraFloatDigits: 0}}); got != 0 {
		t.Fatalf("FloatDigitsOn: the server's default: %d", got)
	}
	if got := (Settings{"extra_float_digits": "2"}).FloatDigitsOn(nil); got != 2 {
		t.Fatalf("FloatDigitsOn: the SET: %d", got)
	}
	if got := (Settings{}).FloatDigitsOn(nil); got != 1 {
		t.Fatalf("FloatDigitsOn without clusters: %d", got)
	}
}
