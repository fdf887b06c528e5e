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
// copyroute reads as it routes them; lookup.go: the read of a Lookup, a
// statement prepared once per connection and bound with the values).
// TRUNCATE of an owner truncates its lookup tables; an upsert's RETURNING
// tells the rows it inserted (xmax = 0), which alone get entries.
//
// The layout itself (a lookup table named after the index, in the owner
// table's schema: the indexed column and the owner's key column, plus the
// count n for a non-unique index; primary key the value, or (value, key);
// sharded by the xxhash of the value over the owner group's shards) is
// derived by vschema, so that the planner routes to it; this package
// writes its SQL. The planner decides which statements need the work
// (planner.Plan.GSI) and refuses the writes this package does not follow
// yet; the proxy opens the transaction and lends the connections
// (Session). A unique index's duplicate comes back as Postgres's unique
// violation (23505) named after the index.
//
// gsi sits above planner, vschema and backend, below proxy.
package gsi
