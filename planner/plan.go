package planner

import (
	"strings"

	"github.com/shardgate/shardgate/vschema/sqlerr"
)

// StmtKind classifies a statement for the proxy: what it executes itself
// (transaction control, session settings), what it sends, and what kind of
// answer to expect.
type StmtKind uint8

// Statement kinds. The zero value is Other.
const (
	Other StmtKind = iota
	Empty          // no statement: the backend answers EmptyQueryResponse
	Select
	Insert
	Update
	Delete
	Merge
	DDL
	Begin        // BEGIN / START TRANSACTION; Plan.Tx.Options has the modes
	Commit       // COMMIT / END (Tx.Chain for AND CHAIN)
	Rollback     // ROLLBACK / ABORT (Tx.Chain for AND CHAIN)
	Savepoint    // Tx.Name
	RollbackTo   // ROLLBACK TO [SAVEPOINT] name; Tx.Name
	Release      // RELEASE [SAVEPOINT] name; Tx.Name
	Set          // SET, SET LOCAL, SET TRANSACTION ...; Plan.Set
	Reset        // RESET name / RESET ALL; Plan.Set
	Show         // SHOW name: answered by main
	Discard      // DISCARD ALL|PLANS|SEQUENCES|TEMP
	Deallocate   // DEALLOCATE [PREPARE] name|ALL: the proxy drops its prepared statements
	Copy         // COPY ... FROM STDIN / TO STDOUT
	Explain      // EXPLAIN [ANALYZE] stmt: routed like stmt
	ExplainRoute // EXPLAIN (ROUTE) stmt: answered by the proxy from Plan.Explain
	Listen
	Unlisten
	Notify
	Call // CALL proc(...), DO $$...$$
)

var kindNames = [...]string{
	Other: "Other", Empty: "Empty", Select: "Select", Insert: "Insert",
	Update: "Update", Delete: "Delete", Merge: "Merge", DDL: "DDL",
	Begin: "Begin", Commit: "Commit", Rollback: "Rollback",
	Savepoint: "Savepoint", RollbackTo: "RollbackTo", Release: "Release",
	Set: "Set", Reset: "Reset", Show: "Show", Discard: "Discard",
	Deallocate: "Deallocate", Copy: "Copy", Explain: "Explain",
	ExplainRoute: "ExplainRoute", Listen: "Listen", Unlisten: "Unlisten",
	Notify: "Notify", Call: "Call",
}

func (k StmtKind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return "StmtKind(?)"
}

// IsWrite reports whether statements of this kind change data or schema,
// which matters for the cross-shard commit.
func (k StmtKind) IsWrite() bool {
	switch k {
	case Insert, Update, Delete, Merge, DDL, Copy:
		return true
	}
	return false
}

// RouteMode tells the proxy how to run a plan's targets and combine their
// answers. It is fixed at plan time; the number of targets is not.
type RouteMode uint8

const (
	// ModeProxy: the proxy executes the statement itself (transaction
	// control, DEALLOCATE, EXPLAIN (ROUTE), the empty query). Targets
	// returns nothing.
	ModeProxy RouteMode = iota
	// ModeSession: SET, RESET, DISCARD. The proxy records the change as
	// session state (Plan.Set) and applies it to every backend connection
	// it uses; Targets names the main cluster, where it can be validated
	// and answered first.
	ModeSession
	// ModeSingle: exactly one target cluster. Relay the answer as is.
	ModeSingle
	// ModeScatter: one or more targets, each holding a different part of
	// the data. Concatenate rows (one RowDescription), sum command tags.
	// Reads, UPDATE/DELETE without the key, split INSERTs.
	ModeScatter
	// ModeReplicate: the same statement on every copy (reference-table
	// writes, DDL). Every target must succeed; the answer (rows and
	// command tag) is the first target's, since all copies agree.
	ModeReplicate
)

var modeNames = [...]string{"proxy", "session", "single", "scatter", "replicate"}

func (m RouteMode) String() string {
	if int(m) < len(modeNames) {
		return modeNames[m]
	}
	return "mode(?)"
}

// TxOptions describes a transaction-control statement.
type TxOptions struct {
	// Options is the mode list of BEGIN / START TRANSACTION as SQL text,
	// e.g. "ISOLATION LEVEL SERIALIZABLE, READ ONLY"; "" for none.
	Options string
	// Name is the savepoint name of SAVEPOINT, RELEASE and ROLLBACK TO.
	Name string
	// Chain is set for COMMIT AND CHAIN and ROLLBACK AND CHAIN.
	Chain bool
}

// SetInfo describes SET and RESET.
type SetInfo struct {
	// Name is the parameter name, lower-cased ("search_path"); for SET
	// TRANSACTION / SET SESSION CHARACTERISTICS it is "transaction" or
	// "session characteristics", and for SET TIME ZONE "timezone".
	Name string
	// Value is the new value as SQL text ("'$user', public", "DEFAULT");
	// "" for RESET.
	Value string
	// Local is set for SET LOCAL and SET TRANSACTION: the change lasts
	// until the end of the current transaction and is not session state.
	Local bool
	// ResetAll is set for RESET ALL.
	ResetAll bool
}

// Plan is the immutable routing decision for one statement. Plans are cached
// and shared by every session; nothing may modify a Plan after it is
// returned.
type Plan struct {
	SQL       string // the statement text as planned
	Kind      StmtKind
	Root      Primitive
	NumParams int // highest $n referenced
	Tx        *TxOptions
	Set       *SetInfo
	Returns   bool // the statement returns rows (SELECT, RETURNING, SHOW, EXPLAIN)

	// Inner is the plan of the statement under EXPLAIN (ROUTE).
	Inner *Plan
	// Deallocate names the statement of DEALLOCATE; "" with Kind
	// Deallocate means DEALLOCATE ALL.
	Deallocate string
}

// Mode returns how the proxy runs the plan's targets.
func (pl *Plan) Mode() RouteMode {
	if pl.Root == nil {
		return ModeProxy
	}
	return pl.Root.mode()
}

// Targets resolves the plan for the given parameter values to the clusters
// that must run it. Parameters are the extended protocol's Bind values (or
// the literals PlanSimple lifted, see Bound). An error carries a SQLSTATE:
// 22P02 or 22003 for a key value that does not convert to the index type,
// 23502 for a NULL key in an INSERT, 0A000 for an IN list that turns out to
// span clusters where the statement needs merging.
func (pl *Plan) Targets(params []Param) ([]Target, error) {
	if pl.Root == nil {
		return nil, nil
	}
	return pl.Root.targets(pl, params)
}

// DescribeTarget names a cluster that can describe the statement: answer
// Parse/Describe with parameter types and a RowDescription before Bind,
// when the key is not known yet. Every cluster of a group holds the same
// tables, so the group's first cluster serves. ok is false when the proxy
// answers the statement itself (transaction control, EXPLAIN (ROUTE)).
func (pl *Plan) DescribeTarget() (t Target, ok bool) {
	switch r := pl.Root.(type) {
	case *Route:
		return Target{Cluster: r.Group.Clusters[0]}, true
	case *InsertSplit:
		return Target{Cluster: r.Group.Clusters[0]}, true
	case *SessionSet:
		return Target{Cluster: r.Group.Clusters[0]}, true
	}
	return Target{}, false
}

// Explain returns the EXPLAIN (ROUTE) rows of the plan. Keys given as
// literals are resolved to their shards; parameters are shown as $n.
func (pl *Plan) Explain() []string {
	return pl.ExplainParams(nil)
}

// ExplainParams is Explain with parameter values (for EXPLAIN (ROUTE) sent
// through the extended protocol, or a Bound's lifted literals): keys that
// can be evaluated show their shards.
func (pl *Plan) ExplainParams(params []Param) []string {
	p := pl
	if p.Kind == ExplainRoute && p.Inner != nil {
		p = p.Inner
	}
	w := &explainWriter{params: params, known: params != nil}
	if p.Root == nil {
		w.line(0, "%s (executed by the proxy)", p.Kind)
	} else {
		p.Root.explain(w, p, 0)
	}
	return w.rows
}

// Target is one cluster that must run the statement.
type Target struct {
	Cluster string   // cluster name from the topology
	Shards  []string // shards of this cluster the statement touches (for EXPLAIN and logs)
	// SQL is "" to send the statement unchanged, otherwise the statement
	// rewritten for this cluster (the rows of a split INSERT).
	SQL string
	// Params is nil when all parameters go unchanged; otherwise the
	// 0-based indices into the original parameters, in the $n order of SQL.
	Params []int
}

// Bound is one statement of a simple-protocol Query with the literals that
// PlanSimple lifted out of it.
type Bound struct {
	Plan *Plan
	// Params are the lifted literals, in the $n order of Plan.SQL; nil if
	// the statement was planned as written.
	Params []Param
	// SQL is the statement exactly as the client wrote it (no ';'). In the
	// simple protocol, this, never Plan.SQL, is what the backend receives.
	SQL string
}

// Targets resolves the statement's clusters. Unlike Plan.Targets, every
// Target's SQL is complete SQL with literals inline, ready for a simple
// Query message, and Params is always nil.
func (b *Bound) Targets() ([]Target, error) {
	if b.Plan.NumParams > len(b.Params) {
		// $n written by the client in a simple Query: Postgres rejects it
		// while parsing.
		return nil, sqlerr.New(undefinedParameter, "there is no parameter $%d", len(b.Params)+1)
	}
	ts, err := b.Plan.Targets(b.Params)
	if err != nil {
		return nil, err
	}
	for i := range ts {
		if ts[i].SQL == "" {
			ts[i].SQL = b.SQL
		}
		ts[i].Params = nil // split INSERTs of lifted literals are planned verbatim, see PlanSimple
	}
	return ts, nil
}

// undefinedParameter is SQLSTATE 42P02 (undefined_parameter); vschema/sqlerr
// has no name for it yet.
const undefinedParameter = "42P02"

// Explain returns the EXPLAIN (ROUTE) rows with the lifted literals known.
func (b *Bound) Explain() []string { return b.Plan.ExplainParams(b.Params) }

// Param is one parameter value, in the shape of the extended protocol's
// Bind message.
type Param struct {
	Value  []byte
	Null   bool
	Binary bool   // format code 1
	OID    uint32 // the parameter's type OID from Parse; 0 = unspecified
}

// explainWriter collects EXPLAIN rows.
type explainWriter struct {
	rows   []string
	params []Param
	known  bool
}

func (w *explainWriter) line(depth int, format string, args ...any) {
	w.rows = append(w.rows, strings.Repeat("  ", depth)+sprintf(format, args...))
}
