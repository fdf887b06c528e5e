package planner

import (
	"strings"
	"sync/atomic"
	"unsafe"

	"github.com/shardgate/shardgate/sqlerr"
	"github.com/shardgate/shardgate/stats"
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
	// DeclareCursor is DECLARE name CURSOR FOR query: routed like the
	// query (one cluster: a cursor over a merge is refused), Plan.Cursor
	// names the cursor.
	DeclareCursor
	Fetch       // FETCH ... name: Plan.Cursor; mode ModeCursor
	Move        // MOVE ... name: Plan.Cursor; mode ModeCursor
	ClosePortal // CLOSE name | CLOSE ALL: Plan.Cursor; mode ModeCursor
	// Prepare is SQL-level PREPARE name [(types)] AS statement; Plan.Prepared
	// has the name, the types and the statement's text, Plan.Inner its plan.
	Prepare
	// Execute is SQL-level EXECUTE name [(args)]; Plan.Prepared has the
	// name and the arguments. The proxy runs the prepared statement's own
	// plan: Returns, Session and the rest are that plan's, not this one's.
	Execute
)

var kindNames = [...]string{
	Other: "Other", Empty: "Empty", Select: "Select", Insert: "Insert",
	Update: "Update", Delete: "Delete", Merge: "Merge", DDL: "DDL",
	Begin: "Begin", Commit: "Commit", Rollback: "Rollback",
	Savepoint: "Savepoint", RollbackTo: "RollbackTo", Release: "Release",
	Set: "Set", Reset: "Reset", Show: "Show", Discard: "Discard",
	Deallocate: "Deallocate", Copy: "Copy", Explain: "Explain",
	ExplainRoute: "ExplainRoute", Listen: "Listen", Unlisten: "Unlisten",
	Notify: "Notify", Call: "Call", DeclareCursor: "DeclareCursor",
	Fetch: "Fetch", Move: "Move", ClosePortal: "ClosePortal",
	Prepare: "Prepare", Execute: "Execute",
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

// WritesData reports whether the statement may change data, which
// decides whether its clusters take part in a two-phase commit: unlike
// Kind.IsWrite, COPY TO and DECLARE do not.
func (pl *Plan) WritesData() bool {
	switch pl.Kind {
	case Select, Show, Explain, Set, Reset, Discard, Listen, Unlisten, DeclareCursor, Fetch, Move, ClosePortal:
		return false
	case Copy:
		return pl.Copy == nil || pl.Copy.Writes // COPY TO only reads
	}
	return true
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
	// ModeMerge: a read whose rows from several clusters must be merged
	// (ORDER BY, LIMIT/OFFSET, aggregates, GROUP BY, DISTINCT): Root is a
	// tree of MergeSort, Aggregate, Sort, Distinct and Limit over one
	// Route, and each target's SQL is the shard statement. With one
	// target, Targets returns the statement unchanged: relay it as
	// ModeSingle.
	ModeMerge
	// ModeCursor: FETCH, MOVE and CLOSE. The statement has no route of its
	// own: the proxy sends it, unchanged, to the backend connection that
	// holds the cursor Plan.Cursor.Name, the one where the session's
	// DECLARE of that name ran (its Targets); CLOSE ALL goes to every
	// connection that holds cursors of the session (none: the proxy
	// answers CLOSE CURSOR ALL itself). An unknown cursor is the backend's
	// 34000 "cursor \"name\" does not exist". Targets returns nothing.
	ModeCursor
	// ModeIntermediate: a read in steps (Root is an Intermediate): tables
	// pulled into temporary tables on the coordinator, then the statement
	// run there over them. Targets names the coordinator.
	ModeIntermediate
)

var modeNames = [...]string{"proxy", "session", "single", "scatter", "replicate", "merge", "cursor", "intermediate"}

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

// ProxySetting is the setting the proxy keeps itself: shardgate.target,
// where a session's statements go (primary or standbys).
const ProxySetting = "shardgate.target"

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
	// Show names the parameter of SHOW (lower-cased; "all" for SHOW ALL).
	// SHOW of ProxySetting is answered by the proxy (ProxyLocal).
	Show string
	// Deallocate names the statement of DEALLOCATE; "" with Kind
	// Deallocate means DEALLOCATE ALL.
	Deallocate string
	// DiscardAll marks DISCARD ALL among the Discard plans: it alone
	// resets the session (settings, prepared statements, cursors,
	// LISTEN); DISCARD PLANS, SEQUENCES and TEMP leave that as it is.
	DiscardAll bool
	// Copy describes a COPY statement (Kind Copy): direction, column list
	// and options.
	Copy *CopyInfo
	// Cursor names the cursor of DECLARE, FETCH, MOVE and CLOSE.
	Cursor *CursorInfo
	// Prepared describes SQL-level PREPARE and EXECUTE.
	Prepared *PreparedInfo
	// Signal is set for SELECT pg_terminate_backend(pid),
	// pg_cancel_backend(pid) or pg_backend_pid() alone (see SignalInfo).
	Signal *SignalInfo
	// GSI is the lookup-table work of a statement on a table with global
	// secondary indexes (gsi.go); nil for none.
	GSI *GSIWork
	// Lookup narrows the scatter of Root through an active secondary
	// index (gsi_lookup.go); nil for none.
	Lookup *Lookup

	// Session flags what the statement does to session state on the
	// backend connections it runs on (see SessionEffect); 0 for nothing.
	Session SessionEffect
	// Settings are the session-level settings the statement makes, for
	// the proxy to record once it succeeds and replay on every backend
	// connection the session uses, as SET name = value (Name and Value as
	// in SetInfo): a SET, the default_transaction_* settings SET SESSION
	// CHARACTERISTICS AS TRANSACTION stands for, and set_config(name,
	// value, false) calls with constant arguments. RESET and DISCARD are
	// in Plan.Set and Kind.
	Settings []SetInfo
	// TxLocal are the transaction-local settings the statement makes (SET
	// LOCAL, SET TRANSACTION, SET CONSTRAINTS, set_config(name, value,
	// true) with constants), in order: the proxy applies them on every
	// cluster the transaction touches, including ones it joins later.
	TxLocal []TxSetting
	// UnseenCode says whether the statement may run code the proxy
	// cannot see into, which may change settings (see Unseen).
	UnseenCode UnseenCode
	// Relations are the relations a statement that is not UnseenAlways
	// names, as RelationKey writes them: a view, trigger, rule, policy or
	// default of one may run code the proxy cannot see (Unseen).
	Relations []string
	// Channels names the notification channels of LISTEN, UNLISTEN and
	// NOTIFY, and of pg_notify calls whose channel is a constant, as
	// Postgres folds them (Session says which).
	Channels []string

	// fallback runs the statement over intermediate results when its
	// merge turns out impossible at execution (fallback.go).
	fallback *mergeFallback
	// queryStats is the *stats.Query of the plan's fingerprint, once the
	// proxy looked it up (QueryStats); an unsafe.Pointer, not an
	// atomic.Pointer, so that a Plan may still be copied while built.
	queryStats unsafe.Pointer
}

// QueryStats is the statistics entry SetQueryStats kept in the plan, or nil.
func (pl *Plan) QueryStats() *stats.Query {
	return (*stats.Query)(atomic.LoadPointer(&pl.queryStats))
}

// SetQueryStats keeps q, the statistics entry of the plan's fingerprint,
// in the plan, so that its next runs count without a lookup.
func (pl *Plan) SetQueryStats(q *stats.Query) {
	atomic.StorePointer(&pl.queryStats, unsafe.Pointer(q))
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
//
// A plan that needs values of main-group sequences (see SequenceSource)
// fails here with 0A000; the proxy calls TargetsWith.
func (pl *Plan) Targets(params []Param) ([]Target, error) {
	return pl.TargetsWith(params, nil)
}

// TargetsWith is Targets for a plan that may need values of main-group
// sequences: an INSERT that omits (or gives DEFAULT for) a column bound
// to a sequence, nextval('seq') in its VALUES, a table-less SELECT
// nextval('seq'). It draws them from seqs, once per call, and writes them
// into the targets' SQL.
func (pl *Plan) TargetsWith(params []Param, seqs SequenceSource) ([]Target, error) {
	switch r := pl.Root.(type) {
	case nil:
		return nil, nil
	case drawer:
		return r.targetsWith(pl, params, seqs)
	}
	return pl.Root.targets(pl, params)
}

// DescribeTarget names a cluster that can describe the statement: answer
// Parse/Describe with parameter types and a RowDescription before Bind,
// when the key is not known yet. Every cluster of a group holds the same
// tables, so the group's first cluster serves. SQL, when set, is the text
// to describe there instead of the statement (the statement with its
// sequence draws written in, same parameters and result columns). ok is false when the proxy
// answers the statement itself (transaction control, EXPLAIN (ROUTE)).
func (pl *Plan) DescribeTarget() (t Target, ok bool) {
	switch r := pl.Root.(type) {
	case *Route:
		return Target{Cluster: r.Group.Clusters[0]}, true
	case *MergeSort, *Aggregate, *Sort, *Distinct, *Limit:
		return Target{Cluster: LeafRoute(r).Group.Clusters[0]}, true
	case *InsertSplit:
		return Target{Cluster: r.Group.Clusters[0], SQL: r.describeSQL()}, true
	case *SequenceFill:
		return Target{Cluster: r.Route.Group.Clusters[0], SQL: r.describeSQL()}, true
	case *SessionSet:
		return Target{Cluster: r.Group.Clusters[0]}, true
	case *EveryCluster:
		return Target{Cluster: r.Main}, true
	case *CopyIn:
		return Target{Cluster: r.Group.Clusters[0]}, true
	case *CopyOut:
		return Target{Cluster: r.Route.Group.Clusters[0]}, true
	case *DDLSplit:
		return Target{Cluster: r.Parts[0].Cluster, SQL: r.Parts[0].SQL}, true
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
	if p.Lookup != nil {
		p.Lookup.explain(w)
	}
	if p.Root == nil {
		w.line(0, "%s (executed by the proxy)", p.Kind)
	} else {
		p.Root.explain(w, p, 0)
	}
	if fb := p.Fallback(); fb != nil && (p.Mode() == ModeMerge || p.spanRoute()) {
		w.line(0, "fallback:")
		fb.Root.explain(w, fb, 1)
	}
	p.explainSession(w)
	return w.rows
}

// explainSession adds what the statement does to session state.
func (pl *Plan) explainSession(w *explainWriter) {
	if pl.Session != 0 {
		w.line(0, "session: %s", pl.Session)
	}
	for _, st := range pl.Settings {
		w.line(0, "session setting: %s = %s", st.Name, st.Value)
	}
	for _, tl := range pl.TxLocal {
		w.line(0, "transaction-local (%s): %s", tl.Kind, tl.SQL)
	}
	if len(pl.Channels) > 0 {
		w.line(0, "channels: %s", strings.Join(pl.Channels, ", "))
	}
	if pl.GSI != nil {
		w.line(0, "gsi: %s, in the statement's transaction", pl.GSI.describe())
	}
	if pl.Signal != nil && pl.Signal.OwnPID() {
		w.line(0, "signal: pg_backend_pid(): answered by the proxy with the session's process ID")
	} else if pl.Signal != nil {
		w.line(0, "signal: %s(%s): answered by the proxy when the pid is one of its sessions", pl.Signal.Func, pl.Signal.PID)
	}
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
	// Extra, when set, is one more parameter after Params, in text: the
	// owners' keys of a read through a global secondary index (an array,
	// Lookup.NarrowBound).
	Extra []byte
	// Arg, when set, replaces one of the client's parameters: an ANY
	// array cut to this target's cluster (prune_arrays.go).
	Arg *TargetArg
	// Rows is set for a split INSERT ... RETURNING that runs on several
	// clusters: the statement's VALUES rows (0-based) that SQL inserts, in
	// its order. Postgres returns RETURNING rows in insertion order, so
	// the proxy re-emits every target's rows in statement row order: the
	// j-th row a target returns belongs to Rows[j] when the counts match.
	Rows []int
	// Each is set when the counts may not match (ON CONFLICT DO NOTHING,
	// or DO UPDATE ... WHERE, can return nothing for an input row) and the
	// target holds several rows: the same rows as one statement per row,
	// in order, each with its one entry in Rows. Running these instead of
	// SQL tells the proxy which input row every returned row belongs to.
	Each []Target
}

// Query is the statement text the target runs with the simple protocol:
// its own SQL, else sql; with Each, one statement per row, so that every
// RETURNING row can be told apart (the backend runs them in order and
// answers each with its own CommandComplete).
func (t Target) Query(sql string) string {
	if len(t.Each) > 0 {
		parts := make([]string, len(t.Each))
		for j, e := range t.Each {
			parts[j] = e.SQL
		}
		return strings.Join(parts, ";\n")
	}
	if t.SQL != "" {
		return t.SQL
	}
	return sql
}

// ParamOIDs are the parameter types of the target's statement, given
// oids, the original statement's (Parse's; missing ones unspecified, 0).
func (t Target) ParamOIDs(oids []uint32) []uint32 {
	if t.Params == nil {
		return oids
	}
	return pickAt(oids, t.Params)
}

// pickAt returns xs[idx[0]], xs[idx[1]], ...: the zero value for an index
// beyond xs.
func pickAt[T any](xs []T, idx []int) []T {
	out := make([]T, len(idx))
	for j, i := range idx {
		if i < len(xs) {
			out[j] = xs[i]
		}
	}
	return out
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
func (b *Bound) Targets() ([]Target, error) { return b.TargetsWith(nil) }

// TargetsWith is Targets drawing sequence values from seqs (see
// Plan.TargetsWith).
func (b *Bound) TargetsWith(seqs SequenceSource) ([]Target, error) {
	if b.Plan.NumParams > len(b.Params) {
		// $n written by the client in a simple Query: Postgres rejects it
		// while parsing.
		return nil, sqlerr.New(undefinedParameter, "there is no parameter $%d", len(b.Params)+1)
	}
	ts, err := b.Plan.TargetsWith(b.Params, seqs)
	if err != nil {
		return nil, err
	}
	var lits []litSpan
	if b.Params != nil {
		for i := range ts {
			if ts[i].SQL != "" {
				lits, _ = findLiterals(b.SQL, nil)
				break
			}
		}
	}
	for i := range ts {
		b.complete(&ts[i], lits)
		for j := range ts[i].Each {
			b.complete(&ts[i].Each[j], lits)
		}
	}
	return ts, nil
}

// complete makes a target's SQL a complete simple-protocol statement: the
// client's text if unchanged, else the rewrite of the normalized shape
// with every lifted literal put back exactly as the client wrote it.
func (b *Bound) complete(t *Target, lits []litSpan) {
	switch {
	case t.SQL == "":
		t.SQL = b.SQL
	case b.Params != nil:
		t.SQL = inlineLiterals(t.SQL, t.Params, b.SQL, lits)
	}
	t.Params = nil
}

// inlineLiterals replaces each $j of sql (a rewrite of a normalized
// statement) with the literal of orig it was lifted from: literal idx[j-1],
// or j-1 when idx is nil.
//
// It keeps the hand lexer: it runs on every execution of a rewritten
// simple-protocol statement, where a pg_query Scan would add a cgo call
// and a protobuf decode, and the literal spans it puts back come from the
// same lexer (findLiterals) that lifted them.
func inlineLiterals(sql string, idx []int, orig string, lits []litSpan) string {
	var b strings.Builder
	l := lexer{src: sql}
	from := 0
	for {
		t := l.next()
		if t.kind == tokEOF {
			break
		}
		if t.kind != tokParam {
			continue
		}
		k := 0
		for _, c := range sql[t.start+1 : t.end] {
			k = k*10 + int(c-'0')
		}
		k--
		if idx != nil {
			if k < 0 || k >= len(idx) {
				continue
			}
			k = idx[k]
		}
		if k < 0 || k >= len(lits) {
			continue
		}
		b.WriteString(sql[from:t.start])
		b.WriteString(orig[lits[k].start:lits[k].end])
		from = t.end
	}
	b.WriteString(sql[from:])
	return b.String()
}

// undefinedParameter is SQLSTATE 42P02 (undefined_parameter); sqlerr
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
