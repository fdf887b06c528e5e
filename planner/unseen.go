package planner

import (
	"slices"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"
)

// UnseenCode says whether a statement may run code the proxy cannot see
// into — a DO block, a procedure, a function of the user's, a view — which
// may change session settings (set_config(..., false) one function deeper
// than the statement) without the proxy knowing. The proxy compares such
// a connection's settings with the ones it tracks before the connection
// serves anyone else (docs/sessions.md).
type UnseenCode uint8

const (
	// UnseenNone: the statement runs no code of the user's: SET, SHOW,
	// transaction control, FETCH, a read or write that calls only
	// built-in functions, under the default search_path and role.
	// The relations it names (Plan.Relations) may still run code — a
	// view, rule, trigger, policy, default — which the proxy looks up
	// in the catalog it keeps of such relations.
	UnseenNone UnseenCode = iota
	// UnseenByPath: as UnseenNone, but the statement names functions,
	// operators or types without a schema: a session whose search_path
	// names pg_catalog after another schema may reach functions of its
	// own with them (otherwise pg_catalog is searched first).
	UnseenByPath
	// UnseenAlways: DO, CALL, a function outside the built-ins the
	// planner knows, and every statement the planner does not prove
	// harmless (DDL runs event triggers and index expressions).
	UnseenAlways
)

// Unseen says whether a session with the given settings state may have
// had its settings changed unseen by the statement: pathChanged is set
// when the session's search_path names pg_catalog after another schema.
func (pl *Plan) Unseen(pathChanged bool) bool {
	return pl.UnseenCode == UnseenAlways || pl.UnseenCode == UnseenByPath && pathChanged
}

// harmlessStatements are the statement kinds that run no code of the
// user's themselves; the ones with a query in them are walked.
func (p *Planner) unseenCode(stmt *pg.Node) UnseenCode {
	switch x := stmt.Node.(type) {
	case *pg.Node_VariableSetStmt, *pg.Node_VariableShowStmt, *pg.Node_TransactionStmt,
		*pg.Node_ListenStmt, *pg.Node_UnlistenStmt, *pg.Node_NotifyStmt,
		*pg.Node_FetchStmt, *pg.Node_ClosePortalStmt, *pg.Node_PrepareStmt,
		*pg.Node_DeallocateStmt, *pg.Node_DiscardStmt, *pg.Node_ConstraintsSetStmt:
		return UnseenNone
	case *pg.Node_ExecuteStmt:
		// The prepared statement runs as its own plan, classified alone.
		return UnseenNone
	case *pg.Node_ExplainStmt:
		// EXPLAIN plans its statement, and planning folds immutable
		// functions: as unseen as the statement itself.
		return p.unseenQuery(x.ExplainStmt.Query)
	case *pg.Node_DeclareCursorStmt:
		return p.unseenQuery(x.DeclareCursorStmt.Query)
	case *pg.Node_SelectStmt, *pg.Node_InsertStmt, *pg.Node_UpdateStmt, *pg.Node_DeleteStmt:
		return p.unseenQuery(stmt)
	case *pg.Node_CopyStmt:
		if x.CopyStmt.Query != nil {
			return p.unseenQuery(x.CopyStmt.Query)
		}
		return p.unseenQuery(stmt)
	}
	return UnseenAlways
}

// unseenQuery walks a query: its functions must be built-ins; functions,
// operators and types named without a schema make it UnseenByPath.
// Relations are not looked into here: the planner does no I/O, and the
// proxy looks the relations of Plan.Relations up in its catalog.
func (p *Planner) unseenQuery(q *pg.Node) UnseenCode {
	code := UnseenNone
	walk(q, func(n *pg.Node) bool {
		switch x := n.Node.(type) {
		case *pg.Node_FuncCall:
			names := x.FuncCall.Funcname
			name, catalog := catalogFunction(names)
			if !catalog || !builtinFunction(name) {
				code = UnseenAlways
			} else if len(names) == 1 {
				code = max(code, UnseenByPath)
			}
		case *pg.Node_AExpr:
			// An operator is a function, found along search_path.
			if len(x.AExpr.Name) != 2 || stringValue(x.AExpr.Name[0]) != "pg_catalog" {
				code = max(code, UnseenByPath)
			}
		case *pg.Node_TypeCast:
			// A cast to a type of the user's runs its input function.
			code = max(code, UnseenByPath)
		}
		return code != UnseenAlways
	})
	return code
}

// builtinFunction: a function of pg_catalog that runs no code of the
// user's: those evaluated the same everywhere (copies.go), those without
// side effects (fallback.go), and the ones whose effects the proxy tracks
// or that change no setting.
func builtinFunction(name string) bool {
	return sameEverywhere[name] || noSideEffects[name] || trackedBuiltins[name]
}

var trackedBuiltins = map[string]bool{}

func init() {
	for _, f := range strings.Fields(`count min max every bool_and bool_or set_config current_setting
		nextval currval setval lastval pg_advisory_lock pg_advisory_lock_shared pg_try_advisory_lock
		pg_try_advisory_lock_shared pg_advisory_unlock pg_advisory_unlock_shared pg_advisory_unlock_all
		pg_advisory_xact_lock pg_advisory_xact_lock_shared pg_try_advisory_xact_lock
		pg_try_advisory_xact_lock_shared pg_notify pg_backend_pid pg_sleep version txid_current
		pg_current_xact_id current_database current_schema current_user session_user current_role`) {
		trackedBuiltins[f] = true
	}
}

// SetConfigValue writes a value a setting has on a backend (what
// current_setting returns, or set_config takes) as SET's value: a string
// literal, or an identifier list for search_path and the other lists of
// identifiers. ok is false for a list the backend would refuse.
func SetConfigValue(name, value string) (sql string, ok bool) {
	return setConfigValue(strings.ToLower(name), value)
}

// unseen classifies stmt (unseenCode) and lists the relations it names
// unless it is UnseenAlways anyway.
func (p *Planner) unseen(stmt *pg.Node) (UnseenCode, []string) {
	code := p.unseenCode(stmt)
	if code == UnseenAlways {
		return code, nil
	}
	return code, unseenRelations(stmt)
}

// unseenRelations lists the relations stmt names (RelationKey), once
// each, for the proxy to look up in its catalog of relations that run
// code; nil when it names none.
func unseenRelations(stmt *pg.Node) []string {
	var rels []string
	walk(stmt, func(n *pg.Node) bool {
		if rv, ok := n.Node.(*pg.Node_RangeVar); ok && rv.RangeVar.Relname != "" {
			if k := RelationKey(rv.RangeVar.Schemaname, rv.RangeVar.Relname); !slices.Contains(rels, k) {
				rels = append(rels, k)
			}
		}
		return true
	})
	return rels
}

// RelationKey names a relation as Plan.Relations does: the schema and
// the name apart by a NUL, or the name alone when the statement gives no
// schema (search_path then finds it, in any schema).
func RelationKey(schema, name string) string {
	if schema == "" {
		return name
	}
	return schema + "\x00" + name
}
