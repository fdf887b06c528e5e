// Package gsi executes what global secondary indexes need beyond routing:
// the SQL of their lookup tables (layout.go: CREATE and DROP, entries
// written and removed) and the maintenance of a statement's entries
// (exec.go: an INSERT or DELETE runs with its RETURNING extended by the
// indexed values and the shard key, the entries of the returned rows are
// written to the lookup tables' shards on the same transaction, and the
// client sees the statement's own answer; extended.go: the same with the
// client's Bind, for the extended protocol; update.go: an UPDATE of an
// indexed column locks its rows and reads their old entries first;
// copy.go: the entries of the rows a COPY FROM copied, which package
// copyroute reads as it routes them; move.go: an UPDATE of the shard key,
// whose locking read carries the old entries and whose in-place UPDATE and
// INSERTs of moved rows return the new ones; written.go: the entries of
// rows another executor inserts (package xwrite's INSERT ... SELECT
// batches); lookup.go: the read of a Lookup, a statement prepared once per
// connection and bound with the value, or an array of the values;
// NarrowBound: the owner's statement of a client's bound statement, with
// the owners' keys as one more parameter).
// TRUNCATE of an owner truncates its lookup tables; an upsert's RETURNING
// tells the rows it inserted (xmax = 0), which alone get entries.
//
// The layout itself (a lookup table named after the index, in the owner
// table's schema: the indexed column (value, for an expression index, whose
// values Postgres computes in the owner's statement: SecondaryIndex.Source)
// and the owner's key column, plus the
// count n for a non-unique index; an index over several columns keeps
// their composite (vschema/composite.go) as its value, each column
// generated beside it; primary key the value, or (value, key);
// sharded by the xxhash of the value over the owner group's shards) is
// derived by vschema, so that the planner routes to it; this package
// writes its SQL. The planner decides which statements need the work
// (planner.Plan.GSI) and refuses the writes this package does not follow
// yet; the proxy opens the transaction and lends the connections
// (Session). A unique index's duplicate comes back as Postgres's unique
// violation (23505) named after the index.
//
// Under commit: best_effort (besteffort.go) the entries are kept in the
// consistent-lookup order instead: written in transactions of their own,
// committed before the owner's (Pending.End), removed after it once no
// owner row has them; a unique index's write takes a dangling entry over,
// and advisory locks on the owner's cluster keep those decisions from
// racing with an owner write about to commit.
//
// A session running as the client's own role writes and truncates the
// entries as the proxy's service identity, and reads through an index as
// it where the role may not read the lookup table (service.go:
// ServiceWriter, ServiceReader), so that the role needs no rights on the
// lookup tables, as Postgres needs none on an index.
//
// A backfilling index added by a reload gets its lookup table at once
// (added.go), where its owner table exists, so writes keep working.
//
// The backfill (backfill.go, state.go; docs/topology.md) fills a
// backfilling index's lookup table from the rows written before it, over
// connections of its own, while the proxies keep maintaining the entries
// of new writes. Each owner cluster is read in primary-key batches; the
// end of a batch is read first (ORDER BY ... LIMIT with a locking clause
// may return a row whose key an update moved), then its rows are read and
// locked FOR SHARE in a transaction held open until every lookup cluster
// committed the batch's entries with its position. The lock rather than a
// snapshot and a re-check: a client's DELETE or UPDATE of a batch's row
// then either came first (the batch waits for it and reads its result) or
// waits for the batch and removes the entry the batch wrote, so no entry
// is left for a row that is gone, with nothing to re-check; the cost is
// that such a write waits for one batch (a lock timeout breaks a wait
// cycle through a client's multi-statement transaction; the batch is
// retried). Entries are inserted ON CONFLICT DO NOTHING: one already there
// for the same key was written by a proxy; for another key it is a
// duplicate. A non-unique index's batch cannot add counts (a proxy may
// have counted some of its rows already), so it settles its pairs.
//
// Verify (verify.go) compares counts and order-independent checksums per
// lookup cluster and settles the entries that differ: lock the entry
// (placeholder if missing), wait for the two-phase transactions prepared
// on the owner clusters at that moment (an owner write whose entry was
// committed is then visible), read the owner rows again; an owner write
// not committed yet has its entry write still to come, which waits for
// the lock. While an index is backfilling, the proxies' removal of entries
// inserts placeholders first (exec.go: remove), which waits for an entry
// in flight and makes a missing one (a row older than the index) removable.
//
// A verified index is made active (activate.go) by a routing revision
// (package routestate) that every proxy follows, written back into the
// topology file.
//
// gsi sits above planner, vschema, backend, topology and routestate,
// below admin and proxy.
package gsi
