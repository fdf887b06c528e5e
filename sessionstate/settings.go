package sessionstate

import (
	"maps"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/pgwire"
	"github.com/shardgate/shardgate/sqlerr"
)

// Settings maps a lower-cased parameter name to its value as SQL text
// (what SET name = value takes): a session's tracked settings.
type Settings map[string]string

// names are the settings' names in replay order: session_authorization
// first (setting it resets role), role last (a role without privileges
// could not make the settings before it), the rest sorted.
func (s Settings) names() []string {
	names := make([]string, 0, len(s))
	for k := range s {
		if k != "session_authorization" && k != "role" {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	if _, ok := s["session_authorization"]; ok {
		names = append([]string{"session_authorization"}, names...)
	}
	if _, ok := s["role"]; ok {
		names = append(names, "role")
	}
	return names
}

// Key identifies the settings: two sessions with equal keys need nothing
// replayed between them. It is never "", which marks a connection whose
// settings are unknown.
func (s Settings) Key() string {
	var b strings.Builder
	b.WriteString("settings;")
	for _, k := range s.names() {
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(s[k])
		b.WriteByte(';')
	}
	return b.String()
}

// ReplaySQL makes a backend connection carry exactly these settings,
// whatever session used it before: RESET SESSION AUTHORIZATION and RESET
// ROLE (RESET ALL resets neither), RESET ALL, then SET of each setting.
func (s Settings) ReplaySQL() string {
	var b strings.Builder
	b.WriteString(backend.ResetSettingsSQL + ";")
	for _, k := range s.names() {
		b.WriteString(SetSQL(k, s[k]))
	}
	return b.String()
}

// SetSQL is "SET name = value;"; a time zone given as an interval (SET
// TIME ZONE INTERVAL '+05:30' HOUR TO MINUTE), which only SET TIME ZONE
// takes, is replayed that way.
func SetSQL(name, value string) string {
	if name == "timezone" && len(value) > 8 && strings.EqualFold(value[:8], "INTERVAL") {
		return "SET TIME ZONE " + value + ";"
	}
	return "SET " + pgwire.QuoteIdent(name) + " = " + value + ";"
}

// Clone copies the settings.
func (s Settings) Clone() Settings {
	cp := make(Settings, len(s))
	for k, v := range s {
		cp[k] = v
	}
	return cp
}

// FromStartup are the settings a client's start-up parameters make (the
// session defaults RESET and RESET ALL return to): every parameter but
// user, database, replication and options, then the -c / --name=value
// settings of options.
func FromStartup(params map[string]string) Settings {
	s := Settings{}
	for k, v := range startupValues(params) {
		s[k] = pgwire.QuoteLiteral(v)
	}
	return s
}

func startupValues(params map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range params {
		switch k {
		case "user", "database", "replication", "options":
		default:
			out[strings.ToLower(k)] = v
		}
	}
	for k, v := range pgwire.ParseOptions(params["options"]) {
		out[strings.ToLower(k)] = v
	}
	return out
}

// CheckStartup refuses start-up parameters the proxy cannot honour:
// standard_conforming_strings off (its lexer reads literals as on does).
func CheckStartup(params map[string]string) error {
	if isOff(startupValues(params)["standard_conforming_strings"]) {
		return sqlerr.New(sqlerr.FeatureNotSupported, "standard_conforming_strings = off is not supported through shardgate").
			WithDetail("shardgate reads string literals as standard_conforming_strings = on does: backslashes are ordinary characters.").
			WithHint("Use E'...' strings for backslash escapes.")
	}
	return nil
}

// isOff is a false value of the backend's parse_bool: false, no, off, 0,
// or a unique prefix of the words, any case, around white space.
func isOff(v string) bool {
	l := strings.ToLower(strings.TrimSpace(v))
	prefix := func(word string, min int) bool {
		return len(l) >= min && len(l) <= len(word) && word[:len(l)] == l
	}
	return prefix("false", 1) || prefix("no", 1) || prefix("off", 2) || l == "0"
}

// Startup reads a client's start-up parameters: its user and database (the
// user's name when none is given), the parameters as sent, and the session
// settings they make, with statement_timeout defaulting to queryTimeout
// (proxy.timeouts.query) when the client sets none. Replication
// connections, a missing user and settings the proxy cannot honour
// (CheckStartup) are errors.
func Startup(params map[string]string, queryTimeout time.Duration) (user, database string, startup map[string]string, settings Settings, err error) {
	if r := params["replication"]; r != "" && r != "false" && r != "off" {
		return "", "", nil, nil, sqlerr.New("0A000", "replication connections are not supported through shardgate")
	}
	user, database = params["user"], params["database"]
	if user == "" {
		return "", "", nil, nil, sqlerr.New("28000", "no PostgreSQL user name specified in startup packet")
	}
	if database == "" {
		database = user
	}
	if err := CheckStartup(params); err != nil {
		return "", "", nil, nil, err
	}
	startup = maps.Clone(params)
	settings = FromStartup(params)
	if _, set := settings["statement_timeout"]; !set && queryTimeout > 0 {
		ms := strconv.FormatInt(queryTimeout.Milliseconds(), 10)
		settings["statement_timeout"] = pgwire.QuoteLiteral(ms)
		startup["statement_timeout"] = ms
	}
	return user, database, startup, settings, nil
}
