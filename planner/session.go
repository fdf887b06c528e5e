package planner

import (
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/shardgate/shardgate/keyexpr"
	"github.com/shardgate/shardgate/sqlerr"
)

// SessionEffect says what a statement does to session state that lives on
// backend connections, which the proxy must know to give a client one
// consistent session over pooled connections. It is a set of bit flags,
// read from the parse tree (never from the text): comments, the simple
// protocol's several statements per Query and the literals a shape lifts
// do not change it. Effects of code the planner cannot see (functions,
// DO blocks) are not included.
type SessionEffect uint16

const (
	// SessionPins: the statement creates state that stays on the backend
	// connection it runs on and cannot be replayed elsewhere, so the
	// proxy must keep the session on its connections (session pooling
	// for this client) until the state is gone: a temporary table, view
	// or sequence (CREATE TEMP|TEMPORARY|LOCAL TEMP ..., SELECT ... INTO
	// TEMP, CREATE TEMP TABLE ... AS, any statement naming a pg_temp
	// schema); a session-level advisory lock (pg_advisory_lock,
	// pg_advisory_lock_shared, pg_try_advisory_lock,
	// pg_try_advisory_lock_shared; the _xact_ variants end with the
	// transaction and do not pin: SessionLocks); set_config(name, value, is_local)
	// whose arguments are not all constants; DECLARE ... WITH HOLD; LISTEN.
	SessionPins SessionEffect = 1 << iota
	// SessionUnlocks: pg_advisory_unlock, pg_advisory_unlock_shared or
	// pg_advisory_unlock_all: advisory locks may be gone, and with them
	// the reason for a pin (the proxy asks its connections' pg_locks).
	SessionUnlocks
	// SessionListen, SessionUnlisten and SessionNotify: LISTEN, UNLISTEN
	// and NOTIFY (or a pg_notify call); Plan.Channels names the channels.
	// UNLISTEN * has no channel name: it stops listening to all.
	SessionListen
	SessionUnlisten
	SessionNotify
	// SessionLocks: a session-level advisory lock (pg_advisory_lock,
	// pg_advisory_lock_shared, pg_try_advisory_lock,
	// pg_try_advisory_lock_shared). It pins like SessionPins, but only
	// while the session's connections hold advisory locks: the proxy
	// asks them (pg_locks) after an unlock.
	SessionLocks
)

var sessionEffectNames = [...]string{"pins", "unlocks", "listen", "unlisten", "notify", "locks"}

// String lists the flags: "pins|unlocks"; "none" for no effect.
func (e SessionEffect) String() string {
	var parts []string
	for i, name := range sessionEffectNames {
		if e&(1<<i) != 0 {
			parts = append(parts, name)
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "|")
}

// TxSettingKind is the kind of a transaction-local setting.
type TxSettingKind uint8

const (
	// TxSetLocal: SET LOCAL name = value, or set_config(name, value, true)
	// with constants.
	TxSetLocal TxSettingKind = iota + 1
	// TxSetTransaction: SET TRANSACTION modes (isolation level, read
	// only, deferrable).
	TxSetTransaction
	// TxSetConstraints: SET CONSTRAINTS ... DEFERRED | IMMEDIATE.
	TxSetConstraints
)

var txSettingNames = [...]string{TxSetLocal: "set local", TxSetTransaction: "set transaction", TxSetConstraints: "set constraints"}

func (k TxSettingKind) String() string {
	if int(k) < len(txSettingNames) && txSettingNames[k] != "" {
		return txSettingNames[k]
	}
	return "TxSettingKind(?)"
}

// TxSetting is a setting that lasts until the end of the current
// transaction. The statement runs on one cluster, but the transaction
// spans every cluster it touches: the proxy runs SQL on each of them,
// including clusters that join the transaction later (right after its
// BEGIN there, in statement order with the others).
type TxSetting struct {
	Kind TxSettingKind
	// SQL applies the setting on a backend connection, built from the
	// parse tree (no comments, no semicolon): "SET LOCAL work_mem TO
	// '64MB'", "SET TRANSACTION ISOLATION LEVEL SERIALIZABLE", "SET
	// CONSTRAINTS ALL DEFERRED".
	SQL string
}

// classifySession fills the session fields of pl (Session, Settings,
// TxLocal, Channels) from the statement's tree, and refuses what the
// proxy cannot keep correct (standard_conforming_strings off).
func classifySession(pl *Plan, stmt *pg.Node) error {
	c := sessionClassifier{pl: pl}
	return c.statement(stmt)
}

type sessionClassifier struct {
	pl *Plan
}

func (c *sessionClassifier) statement(stmt *pg.Node) error {
	pl := c.pl
	if namesTempObject(stmt) {
		pl.Session |= SessionPins
	}
	switch x := stmt.Node.(type) {
	case *pg.Node_ExplainStmt:
		// EXPLAIN runs its statement only with ANALYZE.
		for _, o := range x.ExplainStmt.Options {
			if d, ok := o.Node.(*pg.Node_DefElem); ok && d.DefElem.Defname == "analyze" && constText(d.DefElem.Arg) != "false" {
				return c.statement(x.ExplainStmt.Query)
			}
		}
	case *pg.Node_VariableSetStmt:
		return c.set(x.VariableSetStmt)
	case *pg.Node_ConstraintsSetStmt:
		if sql, err := deparse(stmt); err == nil {
			pl.TxLocal = append(pl.TxLocal, TxSetting{Kind: TxSetConstraints, SQL: sql})
		}
	case *pg.Node_ListenStmt:
		pl.Session |= SessionListen | SessionPins
		pl.Channels = append(pl.Channels, x.ListenStmt.Conditionname)
	case *pg.Node_UnlistenStmt:
		pl.Session |= SessionUnlisten
		if n := x.UnlistenStmt.Conditionname; n != "" {
			pl.Channels = append(pl.Channels, n)
		}
	case *pg.Node_NotifyStmt:
		pl.Session |= SessionNotify
		pl.Channels = append(pl.Channels, x.NotifyStmt.Conditionname)
	case *pg.Node_DeclareCursorStmt:
		if x.DeclareCursorStmt.Options&cursorOptHold != 0 {
			pl.Session |= SessionPins
		}
		return c.calls(x.DeclareCursorStmt.Query)
	case *pg.Node_CreateTableAsStmt:
		if x.CreateTableAsStmt.Into == nil || !x.CreateTableAsStmt.Into.SkipData {
			return c.calls(x.CreateTableAsStmt.Query)
		}
	case *pg.Node_SelectStmt, *pg.Node_InsertStmt, *pg.Node_UpdateStmt, *pg.Node_DeleteStmt,
		*pg.Node_MergeStmt, *pg.Node_CallStmt, *pg.Node_CopyStmt:
		return c.calls(stmt)
	}
	return nil
}

// namesTempObject reports a statement that creates or names a temporary
// object: a relation with temporary persistence or in a pg_temp schema, a
// function in pg_temp, or a DROP of a pg_temp object.
func namesTempObject(stmt *pg.Node) bool {
	found := false
	walk(stmt, func(n *pg.Node) bool {
		switch x := n.Node.(type) {
		case *pg.Node_RangeVar:
			found = found || x.RangeVar.Relpersistence == "t" || isTempSchema(x.RangeVar.Schemaname)
		case *pg.Node_CreateFunctionStmt:
			names := x.CreateFunctionStmt.Funcname
			found = found || len(names) > 1 && isTempSchema(stringValue(names[0]))
		case *pg.Node_DropStmt:
			for _, o := range x.DropStmt.Objects {
				if l, ok := o.Node.(*pg.Node_List); ok && len(l.List.Items) > 1 && isTempSchema(stringValue(l.List.Items[0])) {
					found = true
				}
			}
		}
		return !found
	})
	return found
}

func isTempSchema(s string) bool { return strings.HasPrefix(s, "pg_temp") }

// calls classifies the function calls a statement runs: advisory locks,
// set_config and pg_notify.
func (c *sessionClassifier) calls(stmt *pg.Node) error {
	var err error
	walk(stmt, func(n *pg.Node) bool {
		f, ok := n.Node.(*pg.Node_FuncCall)
		if !ok || err != nil {
			return err == nil
		}
		name, ok := catalogFunction(f.FuncCall.Funcname)
		if !ok {
			return true
		}
		switch name {
		case "pg_advisory_lock", "pg_advisory_lock_shared", "pg_try_advisory_lock", "pg_try_advisory_lock_shared":
			c.pl.Session |= SessionLocks
		case "pg_advisory_unlock", "pg_advisory_unlock_shared", "pg_advisory_unlock_all":
			c.pl.Session |= SessionUnlocks
		case "set_config":
			err = c.setConfig(f.FuncCall.Args)
		case "pg_notify":
			c.pl.Session |= SessionNotify
			if len(f.FuncCall.Args) > 0 {
				if ch, ok := stringConst(f.FuncCall.Args[0]); ok {
					c.pl.Channels = append(c.pl.Channels, ch)
				}
			}
		}
		return true
	})
	return err
}

// catalogFunction returns the name of a call to a function written
// without a schema or in pg_catalog.
func catalogFunction(names []*pg.Node) (string, bool) {
	switch len(names) {
	case 1:
		return stringValue(names[0]), true
	case 2:
		if stringValue(names[0]) == "pg_catalog" {
			return stringValue(names[1]), true
		}
	}
	return "", false
}

// setConfig classifies set_config(name, value, is_local): with constants,
// a session setting the proxy records and replays (Plan.Settings) or a
// transaction-local one (Plan.TxLocal); otherwise the session pins.
func (c *sessionClassifier) setConfig(args []*pg.Node) error {
	if len(args) != 3 {
		return nil // no such function: the backend says so
	}
	name, okName := stringConst(args[0])
	value, okValue := stringConst(args[1])
	local, okLocal := boolConst(args[2])
	if !okName || !okValue || !okLocal {
		c.pl.Session |= SessionPins
		return nil
	}
	name = strings.ToLower(name)
	if err := checkSetting(name, value); err != nil {
		return err
	}
	sqlValue, ok := setConfigValue(name, value)
	if !ok {
		c.pl.Session |= SessionPins // a list the backend will refuse, or we cannot write as SET
		return nil
	}
	if local {
		c.pl.TxLocal = append(c.pl.TxLocal, TxSetting{Kind: TxSetLocal, SQL: "SET LOCAL " + keyexpr.QuoteIdentifier(name) + " TO " + sqlValue})
		return nil
	}
	c.pl.Settings = append(c.pl.Settings, SetInfo{Name: name, Value: sqlValue})
	return nil
}

// setConfigValue writes the value set_config gives a setting as SET's
// value list. For most settings that is the string itself; the list
// settings whose elements are identifiers (search_path, temp_tablespaces)
// read a string given to SET as one element, so their list is split as
// the backend splits it and each element written as an identifier.
func setConfigValue(name, value string) (string, bool) {
	switch name {
	case "search_path", "temp_tablespaces", "session_preload_libraries", "local_preload_libraries":
	default:
		return keyexpr.Text(value).String(), true
	}
	items, ok := splitIdentifierList(value)
	if !ok {
		return "", false
	}
	if len(items) == 0 {
		return "''", true
	}
	for i, it := range items {
		items[i] = `"` + strings.ReplaceAll(it, `"`, `""`) + `"`
	}
	return strings.Join(items, ", "), true
}

// splitIdentifierList is the backend's SplitIdentifierString with a comma
// separator: white space around elements is skipped, a double-quoted
// element keeps its case ("" is a quote), an unquoted one is lower-cased
// (ASCII, as downcase_identifier does), and an empty element or bad
// quoting is an error.
func splitIdentifierList(s string) ([]string, bool) {
	var out []string
	i := 0
	skip := func() {
		for i < len(s) && isSpace(s[i]) {
			i++
		}
	}
	skip()
	if i == len(s) {
		return nil, true
	}
	for {
		var b strings.Builder
		if i < len(s) && s[i] == '"' {
			i++
			for {
				if i >= len(s) {
					return nil, false
				}
				if s[i] == '"' {
					if i+1 < len(s) && s[i+1] == '"' {
						b.WriteByte('"')
						i += 2
						continue
					}
					i++
					break
				}
				b.WriteByte(s[i])
				i++
			}
			if b.Len() == 0 {
				return nil, false
			}
		} else {
			start := i
			for i < len(s) && s[i] != ',' && !isSpace(s[i]) {
				i++
			}
			if i == start {
				return nil, false
			}
			b.WriteString(strings.ToLower(s[start:i]))
		}
		out = append(out, b.String())
		skip()
		if i == len(s) {
			return out, true
		}
		if s[i] != ',' {
			return nil, false
		}
		i++
		skip()
	}
}

// stringConst is the text of a constant: a string or number literal,
// possibly cast to text or varchar.
func stringConst(n *pg.Node) (string, bool) {
	switch x := n.GetNode().(type) {
	case *pg.Node_AConst:
		if x.AConst.Isnull {
			return "", false
		}
		switch x.AConst.Val.(type) {
		case *pg.A_Const_Sval, *pg.A_Const_Ival, *pg.A_Const_Fval:
			return constText(n), true
		}
	case *pg.Node_TypeCast:
		if t, ok := castTarget(x.TypeCast.TypeName); ok && t == typeText {
			return stringConst(x.TypeCast.Arg)
		}
	}
	return "", false
}

// boolConst is a constant boolean: TRUE/FALSE, or a string boolin reads,
// possibly cast to boolean.
func boolConst(n *pg.Node) (bool, bool) {
	switch x := n.GetNode().(type) {
	case *pg.Node_AConst:
		switch v := x.AConst.Val.(type) {
		case *pg.A_Const_Boolval:
			return v.Boolval.Boolval, true
		case *pg.A_Const_Sval:
			return parseBool(strings.TrimSpace(v.Sval.Sval))
		}
	case *pg.Node_TypeCast:
		t := x.TypeCast.TypeName
		if t != nil && len(t.Names) > 0 && len(t.ArrayBounds) == 0 {
			if name := stringValue(t.Names[len(t.Names)-1]); name == "bool" || name == "boolean" {
				return boolConst(x.TypeCast.Arg)
			}
		}
	}
	return false, false
}

// parseBool is the backend's parse_bool: true, yes, on, 1 and false, no,
// off, 0, case-insensitively, with unique prefixes of the words.
func parseBool(s string) (bool, bool) {
	l := strings.ToLower(s)
	prefixOf := func(word string, min int) bool {
		return len(l) >= min && len(l) <= len(word) && word[:len(l)] == l
	}
	switch {
	case prefixOf("true", 1), prefixOf("yes", 1), prefixOf("on", 2), l == "1":
		return true, true
	case prefixOf("false", 1), prefixOf("no", 1), prefixOf("off", 2), l == "0":
		return false, true
	}
	return false, false
}

// checkSetting refuses settings the proxy cannot honour:
// standard_conforming_strings off changes how the proxy's own lexer must
// read string literals (it assumes on: backslashes are plain characters).
func checkSetting(name, value string) error {
	if name != "standard_conforming_strings" {
		return nil
	}
	if on, ok := parseBool(value); ok && !on {
		return sqlerr.New(sqlerr.FeatureNotSupported, "standard_conforming_strings = off is not supported through shardgate").
			WithDetail("shardgate reads string literals as standard_conforming_strings = on does: backslashes are ordinary characters.").
			WithHint("Use E'...' strings for backslash escapes.")
	}
	return nil
}

// set classifies SET: the standard_conforming_strings refusal,
// transaction-local settings, and SET SESSION CHARACTERISTICS as the
// default_transaction_* settings it stands for.
func (c *sessionClassifier) set(s *pg.VariableSetStmt) error {
	pl := c.pl
	name := strings.ToLower(s.Name)
	if s.Kind == pg.VariableSetKind_VAR_SET_VALUE && len(s.Args) == 1 {
		if err := checkSetting(name, constText(s.Args[0])); err != nil {
			return err
		}
	}
	info := pl.Set
	switch {
	case info == nil:
	case s.Kind == pg.VariableSetKind_VAR_SET_MULTI && name == "transaction":
		pl.TxLocal = append(pl.TxLocal, TxSetting{Kind: TxSetTransaction, SQL: "SET TRANSACTION " + info.Value})
	case s.Kind == pg.VariableSetKind_VAR_SET_MULTI && name == "transaction snapshot":
		return sqlerr.New(sqlerr.FeatureNotSupported, "SET TRANSACTION SNAPSHOT is not supported through shardgate").
			WithDetail("A snapshot belongs to one cluster; the transaction may span several.")
	case s.Kind == pg.VariableSetKind_VAR_SET_MULTI && name == "session characteristics":
		for _, a := range s.Args {
			d, ok := a.Node.(*pg.Node_DefElem)
			if !ok {
				continue
			}
			var set SetInfo
			switch d.DefElem.Defname {
			case "transaction_isolation":
				set = SetInfo{Name: "default_transaction_isolation", Value: keyexpr.Text(constText(d.DefElem.Arg)).String()}
			case "transaction_read_only":
				set = SetInfo{Name: "default_transaction_read_only", Value: onOff(constText(d.DefElem.Arg) == "1")}
			case "transaction_deferrable":
				set = SetInfo{Name: "default_transaction_deferrable", Value: onOff(constText(d.DefElem.Arg) == "1")}
			default:
				continue
			}
			pl.Settings = append(pl.Settings, set)
		}
		if len(pl.Settings) > 0 {
			first := pl.Settings[0]
			pl.Set = &first // replayable as SET name = value, unlike "session characteristics"
			if r, ok := pl.Root.(*SessionSet); ok {
				r.Set = pl.Set
			}
		}
	case info.Local && pl.Kind == Set:
		sql := "SET LOCAL " + keyexpr.QuoteIdentifier(info.Name)
		if info.Name == "timezone" && strings.HasPrefix(strings.ToLower(info.Value), "interval") {
			sql = "SET LOCAL TIME ZONE " + info.Value // only SET TIME ZONE takes an interval
		} else if info.Value == "FROM CURRENT" {
			sql += " FROM CURRENT"
		} else {
			sql += " TO " + info.Value
		}
		pl.TxLocal = append(pl.TxLocal, TxSetting{Kind: TxSetLocal, SQL: sql})
	case pl.Kind == Set:
		pl.Settings = append(pl.Settings, *info)
	}
	return nil
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}
