// Package merge is the merge executor: it runs the reads whose rows from
// several clusters must be combined (plans of mode planner.ModeMerge) and
// streams the combined rows to the client.
//
// It owns:
//
//   - Stream and StreamSet: each shard's answer read by a reader goroutine
//     of its own into a bounded channel; the first error cancels the other
//     shards' statements (simple protocol); Exec.Finish reads every answer
//     to its end so the connections come back clean;
//   - the pipeline (Exec.Build): MergeSort, Aggregate (with HAVING), Sort,
//     Distinct and Limit as stages over a narrow row interface (next()
//     returns a row's values, nil at the end), deciding what it can
//     compare exactly and refusing the rest with 0A000 before any row;
//   - what a merge asks of the shard statements (ShardFormats: binary for
//     the values it decodes) and the checks Postgres makes before any work
//     (CheckLimit, CheckFormats);
//   - an Execute with a row limit (portal.go): StreamN sends at most that
//     many merged rows and leaves the merge suspended, its readers holding
//     their connections; Suspended is a session's suspended portals (a
//     Portal: a merge, or package intermediate's read on the coordinator);
//   - cursors over merged reads (cursor.go): a cursor of the shard
//     statement on every cluster, streams that FETCH a batch when the
//     merge needs a row, FETCH/MOVE/CLOSE of the client's cursor
//     (Cursors); ReadAnswer, a backend's answer read to ReadyForQuery;
//   - Relay (relay.go): one statement's answers from the backends it ran
//     on, as one answer (rows streamed, the first RowDescription, tags
//     summed, one copy answering for replicated writes); what a single
//     backend sent that the relay passes on as it is (rows, notices, the
//     tag, COPY data) and that is read already goes to the client in
//     runs, one copy each, with only message headers looked at (Bulk,
//     to a RunWriter);
//   - WireClient, a Client (and RunWriter) writing to a client
//     connection's buffer;
//   - COPY ... TO STDOUT over several clusters as one COPY answer
//     (CopyOut), and a split INSERT's RETURNING rows put back in VALUES
//     order (Reorder).
//
// It knows no session: what it needs of one is in Exec (the client's
// result formats, extra_float_digits, DateStyle, IntervalStyle and
// TimeZone, the clusters' collation facts: the shards' text is read in
// the session's styles and computed intervals written in its
// IntervalStyle; text a merge cannot read exactly, a timestamptz under a
// zone without rules or floats under extra_float_digits below 1, is
// refused before any row) and Client (where rows, notices and parameter changes
// go). Sending the shard statements and ending the statement is the
// proxy's (simple and extended protocol alike).
//
// It may import backend, pgcopy, pgvalue, pgwire, planner and sqlerr; it
// must never import proxy.
package merge
