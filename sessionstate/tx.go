package sessionstate

import (
	"strings"

	"github.com/shardgate/shardgate/pgwire"
	"github.com/shardgate/shardgate/planner"
)

// TxReplay is what a cluster joining an open transaction late must run
// after BEGIN: the transaction's SET TRANSACTION, SET LOCAL, SET
// CONSTRAINTS and set_config(..., true) statements and its savepoints, in
// the order the client issued them, less what ROLLBACK TO undid. The zero
// value is an empty replay.
//
// It also keeps the transaction's LISTEN and UNLISTEN, which the replay
// does not run: Postgres applies them to the session when the transaction
// commits, and drops them when it rolls back or rolls back to a savepoint
// before them (CommitListens).
type TxReplay struct {
	steps []txStep
}

type txStep struct {
	savepoint string // a SAVEPOINT of this name; else sql or listen
	sql       string
	listen    *planner.Plan
}

// Listen records a successful LISTEN or UNLISTEN of the transaction.
func (r *TxReplay) Listen(plan *planner.Plan) {
	r.steps = append(r.steps, txStep{listen: plan})
}

// CommitListens applies the transaction's LISTEN and UNLISTEN, in order,
// to the session's channels: the transaction committed.
func (r *TxReplay) CommitListens(chs Channels) {
	for _, st := range r.steps {
		if st.listen != nil {
			chs.Track(st.listen)
		}
	}
}

// Local records transaction-local settings made in the transaction (SQL
// without a semicolon).
func (r *TxReplay) Local(sql ...string) {
	for _, s := range sql {
		r.steps = append(r.steps, txStep{sql: s})
	}
}

// Characteristics are the steps that set the transaction's isolation
// level, read-only or deferrable mode (SET TRANSACTION, SET LOCAL
// transaction_*, set_config of them), in order, less what ROLLBACK TO
// undid: with BEGIN's modes, what a transaction COMMIT AND CHAIN starts
// must run to have the characteristics this one ends with.
func (r *TxReplay) Characteristics() []string {
	var out []string
	for _, st := range r.steps {
		if isCharacteristic(st.sql) {
			out = append(out, st.sql)
		}
	}
	return out
}

// characteristicForms are how the planner writes the statements that set
// a transaction's characteristics (planner.TxSetting's SQL).
var characteristicForms = []string{
	"SET TRANSACTION ",
	"SET LOCAL transaction_isolation ",
	"SET LOCAL transaction_read_only ",
	"SET LOCAL transaction_deferrable ",
}

func isCharacteristic(sql string) bool {
	for _, f := range characteristicForms {
		if len(sql) > len(f) && strings.EqualFold(sql[:len(f)], f) {
			return true
		}
	}
	return false
}

// Savepoint records SAVEPOINT name.
func (r *TxReplay) Savepoint(name string) {
	r.steps = append(r.steps, txStep{savepoint: name})
}

// HasSavepoint says whether a savepoint called name is open.
func (r *TxReplay) HasSavepoint(name string) bool { return r.last(name) >= 0 }

// last is the index of the newest savepoint called name, or -1.
func (r *TxReplay) last(name string) int {
	for i := len(r.steps) - 1; i >= 0; i-- {
		if r.steps[i].savepoint == name {
			return i
		}
	}
	return -1
}

// Release records RELEASE SAVEPOINT name: the savepoint and the newer ones
// go; the settings made after them stay (they now belong to the enclosing
// transaction).
func (r *TxReplay) Release(name string) {
	i := r.last(name)
	if i < 0 {
		return
	}
	kept := r.steps[:i]
	for _, st := range r.steps[i+1:] {
		if st.savepoint == "" {
			kept = append(kept, st)
		}
	}
	r.steps = kept
}

// RollbackTo records ROLLBACK TO SAVEPOINT name: what came after the
// savepoint is undone; the savepoint stays.
func (r *TxReplay) RollbackTo(name string) {
	if i := r.last(name); i >= 0 {
		r.steps = r.steps[:i+1]
	}
}

// Savepoints is begin and the transaction's savepoints alone, each ended
// with a semicolon: the replay of a connection that joins the transaction
// as another role (GSI entries written as the proxy's service identity),
// which must follow its savepoints but not its settings.
func (r *TxReplay) Savepoints(begin string) string {
	var b strings.Builder
	b.WriteString(begin)
	b.WriteByte(';')
	for _, st := range r.steps {
		if st.savepoint != "" {
			b.WriteString("SAVEPOINT " + pgwire.QuoteIdent(st.savepoint) + ";")
		}
	}
	return b.String()
}

// SQL is the replay for a joining cluster: begin (BEGIN with the
// transaction's modes), then every step, each ended with a semicolon.
func (r *TxReplay) SQL(begin string) string {
	var b strings.Builder
	b.WriteString(begin)
	b.WriteByte(';')
	for _, st := range r.steps {
		if st.listen != nil {
			continue
		}
		if st.savepoint != "" {
			b.WriteString("SAVEPOINT " + pgwire.QuoteIdent(st.savepoint))
		} else {
			b.WriteString(st.sql)
		}
		b.WriteByte(';')
	}
	return b.String()
}

// WithLocal is s with the transaction-local values (SET LOCAL, and
// set_config(..., true)) of the named settings that r holds over them; r
// may be nil (no transaction). ROLLBACK TO has already dropped what it
// undid.
func (s Settings) WithLocal(r *TxReplay, names ...string) Settings {
	if r == nil {
		return s
	}
	var out Settings
	for _, name := range names {
		forms := []string{"SET LOCAL " + name + " TO ", "SET LOCAL " + pgwire.QuoteIdent(name) + " TO ", `SET LOCAL "` + name + `" TO `}
		for i := len(r.steps) - 1; i >= 0; i-- {
			sql, found := r.steps[i].sql, false
			for _, f := range forms {
				if len(sql) > len(f) && strings.EqualFold(sql[:len(f)], f) {
					if out == nil {
						out = s.Clone()
					}
					out[name] = sql[len(f):]
					found = true
					break
				}
			}
			if found {
				break
			}
		}
	}
	if out == nil {
		return s
	}
	return out
}
