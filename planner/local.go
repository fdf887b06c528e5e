package planner

import (
	"github.com/shardgate/shardgate/vschema"
)

// TxControl is a transaction-control statement: BEGIN, COMMIT, ROLLBACK,
// SAVEPOINT, RELEASE, ROLLBACK TO. The proxy executes it itself, since it
// owns the per-shard transactions (opened lazily, committed with two-phase
// commit when several shards wrote). Plan.Tx carries the details.
type TxControl struct {
	Kind StmtKind
	Tx   TxOptions
}

// Name implements Primitive.
func (t *TxControl) Name() string { return "TxControl" }

// Inputs implements Primitive.
func (t *TxControl) Inputs() []Primitive { return nil }

func (t *TxControl) mode() RouteMode { return ModeProxy }

func (t *TxControl) targets(*Plan, []Param) ([]Target, error) { return nil, nil }

func (t *TxControl) explain(w *explainWriter, pl *Plan, depth int) {
	s := "TxControl " + t.Kind.String()
	switch {
	case t.Tx.Options != "":
		s += " " + t.Tx.Options
	case t.Tx.Name != "":
		s += " " + t.Tx.Name
	}
	if t.Tx.Chain {
		s += " AND CHAIN"
	}
	w.line(depth, "%s", s)
}

// SessionSet is SET, RESET or DISCARD: session state the proxy keeps and
// applies to every backend connection a session uses (or, for SET LOCAL
// and SET TRANSACTION, to the current transaction's). Targets names the
// group's cluster (main) so the value can be checked and the command
// answered there first.
type SessionSet struct {
	Group *vschema.Group
	Set   *SetInfo // nil for DISCARD
}

// Name implements Primitive.
func (s *SessionSet) Name() string { return "SessionSet" }

// Inputs implements Primitive.
func (s *SessionSet) Inputs() []Primitive { return nil }

func (s *SessionSet) mode() RouteMode { return ModeSession }

func (s *SessionSet) targets(*Plan, []Param) ([]Target, error) {
	return []Target{clusterTarget(s.Group, s.Group.Clusters[0], true)}, nil
}

func (s *SessionSet) explain(w *explainWriter, pl *Plan, depth int) {
	switch {
	case s.Set == nil:
		w.line(depth, "SessionSet %s", oneLine(pl.SQL))
	case s.Set.ResetAll:
		w.line(depth, "SessionSet RESET ALL")
	case s.Set.Value == "":
		w.line(depth, "SessionSet RESET %s", s.Set.Name)
	default:
		scope := "session"
		if s.Set.Local {
			scope = "transaction"
		}
		w.line(depth, "SessionSet %s = %s (%s)", s.Set.Name, s.Set.Value, scope)
	}
	w.line(depth+1, "validated on: %s (%s)", s.Group.Name, s.Group.Clusters[0])
}

// ProxyLocal is a statement the proxy answers without any backend: the
// empty query, DEALLOCATE, EXPLAIN (ROUTE).
type ProxyLocal struct {
	What string
}

// Name implements Primitive.
func (p *ProxyLocal) Name() string { return "ProxyLocal" }

// Inputs implements Primitive.
func (p *ProxyLocal) Inputs() []Primitive { return nil }

func (p *ProxyLocal) mode() RouteMode { return ModeProxy }

func (p *ProxyLocal) targets(*Plan, []Param) ([]Target, error) { return nil, nil }

func (p *ProxyLocal) explain(w *explainWriter, pl *Plan, depth int) {
	w.line(depth, "ProxyLocal %s", p.What)
}
