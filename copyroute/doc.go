// Package copyroute runs COPY FROM STDIN into a sharded group's table
// across its clusters (planner.CopyIn): each row goes to the cluster of
// its shard key.
//
// The same statement starts on every cluster of the group, inside the
// session's transaction (the proxy wraps a multi-cluster write in one, so
// a failure anywhere rolls back everywhere and success commits with
// two-phase commit). The client gets one CopyInResponse; its data is cut
// into rows by a pgcopy.Scanner, each row's key is computed with vschema
// and the row appended to its cluster's buffer, sent as CopyData once it
// holds 64 KiB. Rows of a reference table are not parsed: every cluster
// gets every byte. Nothing is buffered beyond one row and one buffer per
// cluster. A sequence-bound column the COPY leaves out (planner.CopyFill)
// is added to the clusters' column list and filled with one value drawn
// per row, appended to the row (fill.go); a filled key routes by it.
//
// Errors: a row the proxy cannot place (malformed, a key that does not
// convert, a NULL key or a key column taking its default) and an error of
// any cluster end the COPY everywhere (CopyFail to the clusters still
// copying). Errors name the line of the client's stream, as Postgres's
// CONTEXT does: a cluster counts only the lines it received, so its line
// numbers are mapped back (pgcopy.LineMap).
//
// For a table with global secondary indexes (planner.CopyIn.Indexes) the
// scanner also decodes the indexed columns, and each routed row's key and
// indexed values go to the caller's Entries (entries.go), which writes
// them to the lookup tables once the COPY has ended.
//
// Relay is the COPY FROM STDIN that one cluster answers: the client's
// data passed through, an early error of the cluster heard at once.
//
// It knows no session: what it needs of one is the Client interface (the
// client's next message, messages to the client, parameter changes) and
// the arguments of In (the plan, the target connections the proxy leased,
// the session's client_encoding, its sequence values). Leasing the connections and sending the
// command tag are the proxy's.
//
// It may import backend, keyexpr, pgcopy, pgwire, planner, sqlerr and
// vschema; it must never import proxy or merge.
package copyroute
