// Package proxy is shardgate's server side: it accepts Postgres client
// connections, speaks the wire protocol to them (startup with a deadline,
// TLS 1.2+, authentication through package auth, simple and extended query,
// COPY, cancel), plans every statement with package planner, and runs the
// plan on pooled backend connections.
//
// Layers, top to bottom:
//
//   - Server (server.go) owns the listener, the registry of sessions (for
//     CancelRequest) and the current routing: topology, vschema, planner and
//     one pool per cluster, swapped whole on reload.
//   - session (session.go) owns one client connection. Its goroutine reads
//     messages; simple queries run at once (simple.go), extended-protocol
//     messages are buffered until Sync or Flush and run as a batch
//     (extended.go), so the read loop never blocks in the middle of a
//     pipeline.
//   - lease.go lends backend connections to a session: for one statement,
//     for one transaction (transaction pooling, the default) or for the
//     session's life (session pooling). Session settings (SET, startup
//     parameters) are replayed on a connection when it is lent to a session
//     with different settings; client prepared statements are prepared on
//     each backend connection on first use, under names of the proxy's.
//   - backendConn (backend.go) is one backend connection taken over from
//     pgconn after authentication; rows are relayed to the client byte for
//     byte, never re-encoded.
//   - The merge executor (merge.go, aggregate.go, merge_extended.go) runs
//     reads whose rows from several clusters must be combined (plans of
//     mode planner.ModeMerge): it sends every shard statement at once,
//     reads each shard's rows with a reader goroutine of its own into a
//     bounded channel (shardStream; the connection is the reader's until
//     the merge waits for it to end), and turns the
//     plan's MergeSort, Aggregate, Sort, Distinct and Limit into a pipeline
//     that streams to the client. Values are decoded only where they are
//     compared or combined (values.go, numeric.go, pgfloat.go), with
//     Postgres's semantics; text is compared bytewise, so text ordering is
//     merged only under C collation (collation.go asks each cluster).
//
// Sequence values for INSERTs and SELECT nextval come from blocks that
// sequence.go reserves on the main cluster, on a connection of its own.
// A split INSERT ... RETURNING has its rows re-emitted in statement order
// (reorder, simple.go). A write on several clusters outside a transaction
// runs in an implicit transaction ended by two-phase commit: around the
// statement (simple protocol) or until Sync (extended protocol).
//
// Ownership: a backendConn is owned by its pool while idle and by exactly
// one session while lent; only the owner reads or writes it. A session
// returns connections clean (no open transaction); a connection with an I/O
// error is closed, never reused.
//
// Errors: every error the client sees is an ErrorResponse with a real
// SQLSTATE. Backend errors keep all their fields and gain a `where` line
// naming the cluster; the proxy's own errors come from sqlerr.
//
// This package may import auth, planner, vschema, topology and sqlerr; nothing
// below it may import proxy.
package proxy
