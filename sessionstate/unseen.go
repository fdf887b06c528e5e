package sessionstate

import (
	"strings"

	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/pgwire"
	"github.com/shardgate/shardgate/planner"
)

// Settings changed where the proxy cannot see: a DO block, a procedure or
// a function of the user's may call set_config(..., false) (or SET) one
// level deeper than the statement the planner reads. Such a connection is
// marked (backend.Conn.SettingsUnseen) and, before it goes back to its
// pool, asked once what it carries: its settings as they are, then the
// tracked ones replayed (RESET ALL and the SETs) and read again, in one
// round trip. What differs is the statement's doing: it becomes the
// session's own (the same client keeps seeing it, as in Postgres), and
// the connection leaves carrying only the tracked settings, so no other
// client sees it.

// settingsList reads a connection's session settings, names lower-cased:
// every one set in the session (pg_settings' source 'session', custom
// ones included) or tracked in s, and role and session_authorization,
// which pg_settings does not show. Every name is schema-qualified and
// every operator named, so a search_path the unseen code set cannot
// divert it.
func (s Settings) settingsList() string {
	var b strings.Builder
	b.WriteString("SELECT pg_catalog.lower(name), pg_catalog.current_setting(name) FROM pg_catalog.pg_settings" +
		" WHERE source OPERATOR(pg_catalog.=) 'session'")
	if len(s) > 0 {
		b.WriteString(" OR pg_catalog.lower(name) OPERATOR(pg_catalog.=) ANY (ARRAY[")
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

// UnseenCheckSQL is the check of a connection that ran code the proxy
// cannot see: the settings it carries, a row of two NULLs, the tracked
// settings replayed, and the settings again (Unseen reads the answer).
// The connection carries s afterwards.
func (s Settings) UnseenCheckSQL() string {
	list := s.settingsList()
	return list + "SELECT NULL, NULL;" + s.ReplaySQL() + list
}

// UnseenCheck is what the answer to UnseenCheckSQL says.
type UnseenCheck struct {
	// Read: the first list arrived (the connection's settings are known,
	// and they were not touched if the check failed after all).
	Read bool
	// Complete: both lists arrived.
	Complete bool
	// Changed are the settings the unseen code made, as SET values:
	// what differs between the two lists. Dropped are the ones it
	// changed to a value the proxy cannot write as SET.
	Changed Settings
	Dropped []string
}

// ReadUnseen reads the rows of UnseenCheckSQL's answer (as
// backend.Conn.Query returns them: a NULL is nil).
func ReadUnseen(rows [][][]byte) UnseenCheck {
	var c UnseenCheck
	before, after := map[string]string{}, map[string]string{}
	into := before
	for _, r := range rows {
		if len(r) != 2 {
			continue
		}
		if r[0] == nil {
			c.Read, into = true, after
			continue
		}
		into[string(r[0])] = string(r[1])
	}
	c.Complete = c.Read && len(after) > 0
	if !c.Complete {
		return c
	}
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
	return c
}

// CheckSetting refuses a setting the proxy cannot honour on a session:
// standard_conforming_strings off (see CheckStartup).
func CheckSetting(name, value string) error {
	return CheckStartup(map[string]string{name: value})
}

// Adopt is s with c's changes, as a new Settings (s is left alone).
func (s Settings) Adopt(c UnseenCheck) Settings {
	out := s.Clone()
	for k, v := range c.Changed {
		out[k] = v
	}
	return out
}

// PathChanged reports whether s moves name resolution away from the
// default: a search_path, a role or a session authorization of its own
// (planner.UnseenByPath).
func (s Settings) PathChanged() bool {
	_, path := s["search_path"]
	_, role := s["role"]
	_, auth := s["session_authorization"]
	return path || role || auth
}

// MarkUnseen marks conns as having run code that may have changed their
// settings unseen when plan may (see planner.Plan.Unseen), for the check
// before they serve anyone else.
func MarkUnseen(plan *planner.Plan, s Settings, conns []*backend.Conn) {
	if !plan.Unseen(s.PathChanged()) {
		return
	}
	for _, b := range conns {
		b.SettingsUnseen = true
	}
}
