// Package planner turns SQL into routing plans: which clusters must run a
// statement, with what text, and how their answers combine.
//
// # What it owns
//
// Parsing (pg_query_go, the real Postgres parser), statement
// classification (StmtKind), shard-key extraction (equalities, IN lists,
// = ANY(array), row equalities, OR trees, casts, parameters, index
// expressions), co-location of joins and
// subqueries, the rewrite of reads that span clusters into shard
// statements and merge primitives, the refusals that keep answers right
// (0A000 for cross-shard joins and for merges the proxy could not do
// exactly, 23502 for rows without a key, 42601 for syntax, 54001 for
// statements nested too deeply to parse safely, see depth.go), the split of
// multi-row INSERTs, and the plan cache. Plans print themselves
// (Plan.Explain) for EXPLAIN (ROUTE), `shardgate explain` and the golden
// tests in testdata.
//
// The package is pure: no I/O, no goroutines, no clocks. It imports
// vschema (for groups, shards and key functions) and pg_query_go, and must
// never import the proxy, gsi or workflows: those execute plans.
//
// # How a statement is planned
//
// build parses, then analyses the statement into query levels (analyze.go):
// every table occurrence is an instance; shard-key equalities between
// instances, or between an instance and a literal or parameter, join them
// in a union-find, so that "co-located" is a question of one component;
// conditions in WHERE (and inner-join ON) that restrict the result pin
// instances to keys. decide (decide.go) then picks the group, checks that
// every sharded instance is co-located, chooses the opcode from the pins,
// and refuses what would need merging across clusters, except the
// statement's own ORDER BY, LIMIT/OFFSET, aggregates, GROUP BY/HAVING and
// DISTINCT, which buildSelect hands to the merge builder
// (merge_build.go, merge_aggregate.go). When in doubt the
// analysis neither pins nor co-locates: a missed pin costs a scatter, a
// wrong one a wrong answer.
//
// A statement whose own rows come from no sharded table (no FROM, only
// reference or main tables, sharded ones only on the nullable side of an
// outer join: unpartitioned.go) would repeat its rows on every cluster:
// decide routes it to one shard when every sharded instance is confined
// to one key (pinned by its own level's conditions, or tied by a key
// equality to a confined instance of an enclosing level), and refuses it
// otherwise, so that a SELECT runs over intermediate results.
//
// An UPDATE or DELETE the router refuses runs as a RowWrite (its rows
// read over intermediate results) or, when that cannot (it sets the shard
// key, its table has global secondary indexes), as a WritePullout
// (write_pullout.go): its uncorrelated WHERE subquery runs first and its
// value, written into the statement as a literal, routes it.
//
// A statement the router refuses whose WITH holds data-modifying queries
// is a WritableCTE (wcte.go) when that is exact: each such query runs
// first as a plan of its own, and the outer statement, with a typed
// VALUES list of its RETURNING rows in place of each reference, is
// planned when they ran.
//
// Key values stay references (KeyRef) in the plan: a literal's text or a
// parameter's number, with its casts. Plan.Targets evaluates them through
// vschema on every execution, so a bad value fails there with the SQLSTATE
// the backend would use (22P02, 22003, 22004). A value of another type than
// the key's (7.0, 1e3, '5'::float8, a parameter declared numeric) meets the
// key column as in Postgres (sqlvalue.go): compared exactly, assigned with
// rounding in an INSERT; a value that no key can equal (7.5 against an
// integer key) routes to one shard, which answers with no rows, or drops
// out of an IN list.
//
// # Plans
//
// A Plan is a tree of Primitives, a closed set with one file each: Route
// (one group; opcodes Unsharded, EqualUnique, IN, Scatter, AnyShard,
// AllClusters), EveryCluster (index statements, which name no table: main
// as written, the other clusters IF EXISTS; indexddl.go), InsertSplit
// (also MergeSplit: a MERGE's VALUES source cut by the key ON joins it
// on, merge_values.go), MergeSource (a MERGE whose source is read first
// over intermediate results and routed per row by the key ON joins it
// on, or to the pinned shard: merge_source.go, run by package xwrite),
// DDLSplit (DROP TABLE or TRUNCATE of tables of several groups, cut per
// cluster: ddl_split.go), TxControl, SessionSet, ProxyLocal and CursorOp
// (FETCH, MOVE and CLOSE, which run where their cursor was declared:
// cursor.go; SQL-level PREPARE and EXECUTE are ProxyLocal with
// Plan.Prepared: prepare.go), and the
// merge primitives over one Route: MergeSort (k-way merge of shards that
// sort alike), Aggregate (combine partial aggregates per group), Sort
// (order the groups), Distinct and Limit; and for COPY of sharded groups
// (copy.go) CopyIn (COPY FROM STDIN: every row to the shard of its key, or
// to every copy of a reference table; the proxy reads the rows) and
// CopyOut (COPY TO STDOUT over a Route: the clusters' data concatenated).
// A merge plan has mode ModeMerge;
// its Route carries the shard statement (ShardSQL: the client's statement
// rewritten on the parse tree and deparsed once, with hidden sort columns,
// aggregate pieces, LIMIT offset+count, and the IN list cut to each
// cluster's keys, filled in per execution by Targets). An ANY array on
// the key is cut the same way: a literal in the shard statement, a
// parameter as a value per target (Target.Arg, which Target.Bind puts in
// place of the client's). The planner knows
// no column types: the proxy checks at execution that the values it must
// compare or combine are of types it handles, and refuses (0A000) before
// the first row otherwise.
//
// Lifecycle: a Plan is immutable once returned. Plans are cached by the
// statement's text (Plan) or its normalized shape (PlanSimple) in a
// bounded LRU, and one *Plan is shared by every session and goroutine
// that runs the same statement. A Planner is bound to one VSchema; when
// the topology changes the proxy builds a new Planner, and plans of the old
// one finish against the old VSchema.
//
// # Sequences
//
// Sequences live in the main group (sequence.go). An INSERT ... VALUES
// into a member table that omits its sequence-bound column (or gives
// DEFAULT), and nextval('seq') of a sequence main lists in VALUES rows or
// in a table-less SELECT, become draws: references (ValueRef.Seq) that
// Plan.TargetsWith resolves through the proxy's SequenceSource and writes
// into the targets' SQL as literals; a drawn shard key routes the row
// (InsertSplit; SequenceFill wraps a Route for reference tables and
// SELECT). nextval elsewhere in a statement that runs outside main's
// cluster is refused (0A000).
//
// # Column order
//
// An INSERT into a sharded table without a column list, and a MERGE's
// WHEN NOT MATCHED THEN INSERT without one, is planned as if it named the
// table's columns in catalog order (columns.go): the list is written into
// the text after the target (after a MERGE's INSERT keyword), and the
// text planned. The order
// comes from a ColumnSource the proxy fills; a table it does not know yet
// is a ColumnsNeeded error (never cached) that the proxy answers by
// reading the catalog and planning again. Cache entries made with column
// orders are dropped by ForgetColumns after DDL.
//
// # Reference-table copies
//
// A write to a reference table runs the same statement on every copy, so
// a value each cluster would compute itself (random(), now(), a function
// not on a short list of built-ins that agree everywhere, the clock words
// 'now' and 'today', a serial or volatile column default set through the
// proxy) is refused with 0A000 (copies.go), at plan time, or in Targets
// for parameter values; nextval in VALUES is drawn once (SequenceFill).
//
// A split INSERT ... RETURNING names, per Target, the statement rows it
// carries (Target.Rows, and Target.Each, one statement per row, when ON
// CONFLICT may skip rows), so that the proxy returns the rows in
// statement order, as Postgres would.
//
// # Session state
//
// Every plan says, from the parse tree, what its statement does to session
// state on the backend connections it runs on (session.go): Plan.Session
// flags temporary objects, session-level advisory locks, set_config calls
// the proxy cannot replay and WITH HOLD cursors (SessionPins), advisory
// unlocks, and LISTEN, UNLISTEN and NOTIFY (Plan.Channels);
// Plan.Settings lists the session settings to record and replay (SET,
// SET SESSION CHARACTERISTICS as default_transaction_*, constant
// set_config(..., false)); Plan.TxLocal the transaction-local ones (SET
// LOCAL, SET TRANSACTION, SET CONSTRAINTS, constant set_config(...,
// true)) that must reach every cluster of the transaction.
// standard_conforming_strings = off is refused (0A000): the lexer reads
// strings as standard_conforming_strings = on does.
//
// # The simple protocol
//
// PlanSimple splits a Query message with a small lexer (lexer.go), lifts
// numeric and string literals out of DML (normalize.go) and looks the shape
// up in the cache, so a pgbench-style statement with new literals each time
// costs a lex and a map lookup, not a parse. The backend always receives the
// statement as the client wrote it (Bound.SQL); the lifted literals only
// feed Targets.
//
// # Text rewrites
//
// Rewrites that keep the client's text (the split of a multi-row INSERT,
// sequence fills, the statement under EXPLAIN or PREPARE) cut it at
// parse-tree locations and, where the tree records no boundary (the end of
// a VALUES row, of a column list, of a function call), at the tokens of
// Postgres's own scanner (pg_query's Scan, scan.go), never at the small
// lexer's. Both give byte offsets into the statement text.
package planner
