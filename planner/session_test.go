package planner

import (
	"strings"
	"testing"
)

func TestSplitIdentifierList(t *testing.T) {
	for _, c := range []struct {
		in   string
		want string // elements joined by |; "!" for an error
	}{
		{"", ""},
		{"  ", ""},
		{"public", "public"},
		{"MySchema, public", "myschema|public"},
		{` "X y" ,"a""b",c `, `X y|a"b|c`},
		{`"$user", public`, "$user|public"},
		{"a,,b", "!"},
		{"a,", "!"},
		{`"open`, "!"},
		{`""`, "!"},
		{"a b", "!"},
	} {
		items, ok := splitIdentifierList(c.in)
		got := strings.Join(items, "|")
		if !ok {
			got = "!"
		}
		if got != c.want {
			t.Errorf("%q: %q, want %q", c.in, got, c.want)
		}
	}
}

func TestParseBool(t *testing.T) {
	for in, want := range map[string]int{ // 1 true, 0 false, -1 not a boolean
		"on": 1, "ON": 1, "t": 1, "tru": 1, "yes": 1, "y": 1, "1": 1,
		"off": 0, "of": 0, "f": 0, "FALSE": 0, "no": 0, "n": 0, "0": 0,
		"o": -1, "": -1, "truex": -1, "10": -1, "onn": -1,
	} {
		b, ok := parseBool(in)
		got := -1
		if ok && b {
			got = 1
		} else if ok {
			got = 0
		}
		if got != want {
			t.Errorf("%q: %d, want %d", in, got, want)
		}
	}
}

func TestSessionEffectString(t *testing.T) {
	if s := (SessionPins | SessionNotify).String(); s != "pins|notify" {
		t.Errorf("got %q", s)
	}
	if s := SessionEffect(0).String(); s != "none" {
		t.Errorf("got %q", s)
	}
}
