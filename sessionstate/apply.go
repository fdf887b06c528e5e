package sessionstate

import (
	"strconv"
	"strings"

	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/pgwire"
	"github.com/shardgate/shardgate/planner"
)

// Apply records what a successful statement did to the session settings
// s, given startup, the session's start-up parameters (the defaults RESET
// returns to and RESET ALL and DISCARD keep): a session-level SET, RESET,
// RESET ALL or DISCARD ALL, and Plan.Settings (set_config(..., false)). out
// are the settings in force after it (s itself, changed in place, or new
// ones); changed is false when the statement made no session-level
// change (SET LOCAL, or not a setting at all). sql makes a connection
// that ran the statement elsewhere, or carried s, carry out ("" for
// nothing).
func Apply(s Settings, startup map[string]string, plan *planner.Plan) (out Settings, sql string, changed bool) {
	out = s
	changed = (plan.Set != nil || plan.DiscardAll || len(plan.Settings) > 0) &&
		!(plan.Set != nil && plan.Set.Local)
	resetAll := plan.DiscardAll || plan.Set != nil && plan.Set.ResetAll
	reset := plan.Kind == planner.Reset && plan.Set != nil
	if changed {
		switch {
		case resetAll:
			out = FromStartup(startup)
			for name := range s {
				if _, ok := out[name]; !ok && isCustom(name) {
					out[name] = "DEFAULT"
				}
			}
		case reset:
			if v, ok := startup[plan.Set.Name]; ok {
				out[plan.Set.Name] = pgwire.QuoteLiteral(v)
			} else if _, had := out[plan.Set.Name]; had && isCustom(plan.Set.Name) {
				out[plan.Set.Name] = "DEFAULT"
			} else {
				delete(out, plan.Set.Name)
			}
		default:
			for _, st := range plan.Settings {
				out[st.Name] = st.Value
			}
		}
	}
	var b strings.Builder
	switch {
	case resetAll:
		b.WriteString(out.ReplaySQL())
	case reset:
		if v, ok := out[plan.Set.Name]; ok {
			b.WriteString(SetSQL(plan.Set.Name, v))
		} else {
			b.WriteString("RESET " + pgwire.QuoteIdent(plan.Set.Name) + ";")
		}
	}
	for _, st := range plan.Settings {
		b.WriteString(SetSQL(st.Name, st.Value))
	}
	return out, b.String(), changed
}

// A custom setting (a dotted name, myapp.x) that a session set stays
// defined in its backend after RESET, RESET ALL and DISCARD ALL, as a
// placeholder whose value is '' (SHOW answers '' where a name never set
// is 42704). RESET of one is recorded as SET name TO DEFAULT, which makes
// the same placeholder on every other connection the session is lent.

// isCustom says whether name is a custom setting's.
func isCustom(name string) bool { return strings.Contains(name, ".") }

// ExtraFloatDigits is the settings' extra_float_digits, which shapes the
// text of the floats the proxy prints: its SET, or else server, the
// server's default.
func (s Settings) ExtraFloatDigits(server int) int {
	v, ok := s["extra_float_digits"]
	if !ok {
		return server
	}
	n, err := strconv.Atoi(strings.TrimSpace(strings.Trim(strings.TrimSpace(v), "'")))
	if err != nil {
		return server
	}
	return n
}

// FloatDigitsOn is ExtraFloatDigits over clusters whose collation facts
// are colls: the server's default is the first one's (1, Postgres's, with
// none).
func (s Settings) FloatDigitsOn(colls []*backend.CollationInfo) int {
	if len(colls) == 0 {
		return s.ExtraFloatDigits(1)
	}
	return s.ExtraFloatDigits(colls[0].ExtraFloatDigits)
}
