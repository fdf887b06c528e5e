// Package intermediate executes planner.Intermediate plans: reads the
// streaming merge cannot answer exactly, computed by the coordinator (the
// main group's cluster) over intermediate results.
//
// For each pull of the plan it resolves its source clusters for the
// statement's parameters (planner.Pull.Sources: only the clusters of the
// shard keys its conditions name), asks the first of them to describe
// the pull statement and the catalog for its columns' type names and
// collations, keeps the columns the plan says the statement may read
// (Pull.Columns; the pull statement is wrapped to select only those),
// creates a temporary table (ON COMMIT DROP) on the coordinator, and
// fills it: from a source cluster other than the
// coordinator by running the pull statement there with binary results and
// streaming every DataRow, which is a binary COPY tuple as it stands, into
// COPY ... FROM STDIN (FORMAT binary) on the coordinator (no whole result
// is held in memory); from the coordinator's own cluster by INSERT ...
// SELECT there. Then the coordinator runs the plan's statement and its
// rows go to the client as they come. The temporary tables are dropped at
// the statement's end: by COMMIT of the transaction the executor opened
// on the coordinator, or explicitly inside the client's transaction.
//
// An Execute with a row limit (portal.go, Execute) binds the
// coordinator's statement to a portal there and executes it with that
// limit; a suspended one is a merge.Portal the session holds until it
// ends, with the coordinator's connection and the temporary tables.
//
// A data-modifying WITH query run first (planner.WritableCTE, wcte.go):
// Returning runs it on the session's connections and keeps its
// RETURNING rows, in text, within Limits, with their type names.
//
// A write's pullout (planner.WritePullout, write_pullout.go): the
// subquery runs as a read's pullout's does, and WriteLiteral returns its
// value as a typed SQL literal for the proxy to write into the statement
// and run it.
//
// Limits: the rows and bytes moved per statement (Limits); beyond them the
// statement fails with 54000 naming the limit. The coordinator's default
// collation must be the source clusters' (checked on the collation facts
// package backend caches per cluster), or the statement is refused.
//
// It imports backend, pgwire, planner and sqlerr, and never proxy: the
// session hands it connections (Conns) and a client (merge.Client's
// shape, Client here).
package intermediate
