package sessionstate

import (
	"sort"
	"strings"

	"github.com/shardgate/shardgate/pgwire"
	"github.com/shardgate/shardgate/planner"
)

// Settings changed where the proxy cannot see: a DO block, a procedure or
// a function of the user's may call set_config(..., false) (or SET) one
// level deeper than the statement the planner reads. Such a connection is
// marked (backend.Conn.SettingsUnseen) and, before it goes back to its
// pool, asked what it carries. When that is what the tracked settings
// look like on the cluster (a baseline the proxy keeps per settings key),
// nothing changed. Otherwise the tracked ones are replayed (RESET ALL and
// the SETs) and read again, which is the baseline, and what differs is
// the statement's doing: it becomes the session's own (the same client
// keeps seeing it, as in Postgres), and the connection leaves carrying
// only the tracked settings, so no other client sees it.

// settingsList reads a connection's session settings: every one set in
// the session (source 'session', custom ones included) or tracked in s,
// as pg_show_all_settings has them (the setting in its base unit, which
// SET reads back the same), and role and session_authorization, which it
// does not show. Every name is schema-qualified and every operator named,
// so a search_path the unseen code set cannot divert it.
func (s Settings) settingsList() string {
	var b strings.Builder
	b.WriteString("SELECT pg_catalog.lower(s.name), s.setting FROM pg_catalog.pg_show_all_settings() s" +
		" WHERE s.source OPERATOR(pg_catalog.=) 'session'")
	if len(s) > 0 {
		b.WriteString(" OR pg_catalog.lower(s.name) OPERATOR(pg_catalog.=) ANY (ARRAY[")
		for i, k := range s.names() {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(pgwire.QuoteLiteral(k))
		}
		b.WriteString("]::pg_catalog.text[])")
	}
	b.WriteString(" UNION ALL SELECT 'role', pg_catalog.current_setting('role')" +
		" UNION ALL SELECT 'session_authorization', pg_catalog.current_setting('session_authorization');")
	return b.String()
}

// UnseenReadSQL reads the settings of a connection that ran code the
// proxy cannot see (ReadSettings reads the answer). It changes nothing.
func (s Settings) UnseenReadSQL() string { return s.settingsList() }

// UnseenResetSQL makes the connection carry s again (RESET ALL and the
// SETs) and reads its settings then: the baseline an unchanged
// connection's UnseenReadSQL answers.
func (s Settings) UnseenResetSQL() string { return s.ReplaySQL() + s.settingsList() }

// ReadSettings reads the rows of UnseenReadSQL or UnseenResetSQL (as
// backend.Conn.Query returns them): name → setting. ok is false when the
// answer is incomplete (role and session_authorization always come).
func ReadSettings(rows [][][]byte) (map[string]string, bool) {
	out := make(map[string]string, len(rows))
	for _, r := range rows {
		if len(r) == 2 && r[0] != nil && r[1] != nil {
			out[string(r[0])] = string(r[1])
		}
	}
	_, role := out["role"]
	_, auth := out["session_authorization"]
	return out, role && auth
}

// Same reports whether two readings agree.
func Same(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// UnseenChange is what unseen code did to a session's settings: the
// difference between the connection's settings (before) and the tracked
// ones replayed (after).
type UnseenChange struct {
	// Changed are the settings the code made, as SET values. Dropped are
	// the ones it changed to a value the proxy cannot write as SET or
	// cannot honour.
	Changed Settings
	Dropped []string
}

// Diff is the change from after (the tracked settings) to before (what
// the connection carried).
func Diff(before, after map[string]string) UnseenChange {
	var c UnseenChange
	for name, v := range before {
		if w, ok := after[name]; ok && w == v {
			continue
		}
		sql, ok := planner.SetConfigValue(name, v)
		if !ok || CheckSetting(name, v) != nil {
			c.Dropped = append(c.Dropped, name)
			continue
		}
		if c.Changed == nil {
			c.Changed = Settings{}
		}
		c.Changed[name] = sql
	}
	sort.Strings(c.Dropped)
	return c
}

// CheckSetting refuses a setting the proxy cannot honour on a session:
// standard_conforming_strings off (see CheckStartup).
func CheckSetting(name, value string) error {
	return CheckStartup(map[string]string{name: value})
}

// Adopt is s with c's changes, as a new Settings (s is left alone).
func (s Settings) Adopt(c UnseenChange) Settings {
	out := s.Clone()
	for k, v := range c.Changed {
		out[k] = v
	}
	return out
}

// PathChanged reports whether s lets a function or operator named
// without a schema be other than the built-in (planner.UnseenByPath): a
// search_path that names pg_catalog after another schema. Otherwise
// pg_catalog is searched first, whatever the path, role or session
// authorization (functions and operators are never looked up in pg_temp).
func (s Settings) PathChanged() bool {
	v := strings.ToLower(s["search_path"])
	i := strings.Index(v, "pg_catalog")
	return i > 0 && strings.Trim(v[:i], ` '"`) != ""
}
