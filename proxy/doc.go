// Package proxy is shardgate's server side: it accepts Postgres client
// connections, speaks the wire protocol to them (startup with a deadline, TLS
// 1.2+, authentication through package auth, simple and extended query, COPY,
// cancel), plans every statement with package planner, and runs the plan on
// backend connections of package backend.
//
// What it owns, top to bottom:
//
//   - Server (server.go): the listener, the sessions (for CancelRequest)
//     and the current routing: topology, vschema, planner and one
//     backend.Pool per cluster, swapped whole on reload. Shutdown
//     (drain.go) drains it: idle sessions end at once with 57P01, the
//     others when their transaction ends or the drain times out.
//     SELECT pg_terminate_backend(pid) / pg_cancel_backend(pid) of a
//     session's pid (terminate.go) ends or cancels that one session. A
//     session that must end and does not within a second has its backend
//     connections and client socket closed, and one whose client left
//     while its statement runs is ended (sessionend.go). Start-up reports
//     a ParameterStatus set cached per settings key, so it needs no
//     pooled backend (startparams.go).
//   - session (session.go): one client connection. Its goroutine reads
//     messages; simple queries run at once (simple.go), extended-protocol
//     messages are buffered until Sync or Flush and run as a batch
//     (extended.go, batch.go), so the read loop never blocks in the middle
//     of a pipeline. Answers of one or several backends are relayed byte
//     for byte (relay, simple.go).
//   - Leases and transactions (lease.go, tx.go): backend connections lent
//     for one statement, one transaction (transaction pooling, the
//     default) or the session's life (session pooling), with the session's
//     settings replayed and its prepared statements prepared on each
//     connection on first use; transaction control and savepoints on every
//     cluster a transaction touched; two-phase commit (twophase.go: twopc).
//   - Session state on backend connections (cursors.go, listen.go,
//     sqlprepare.go): FETCH, MOVE and CLOSE run where their cursor was
//     declared (registry: package sessionstate); a cursor WITH HOLD or
//     LISTEN keeps the session's connections until closed or unlistened;
//     notifications are delivered before ReadyForQuery and, while the
//     session waits for its client, as they arrive. SQL PREPARE makes a
//     client statement and EXECUTE runs it as a Bind and Execute would.
//   - The session's side of merges (merges.go: sending the shard
//     statements, the extended protocol's portals) and of COPY across
//     clusters (copy.go); a row-limited Execute of a scatter read, shard
//     after shard (scatterfetch.go); a DECLAREd cursor as a portal of the
//     extended protocol (cursorportal.go). The merge executor is package merge; COPY FROM
//     STDIN split by shard key is package copyroute.
//   - Client limits (limits.go, proxy.limits): max clients (53300 after the
//     start-up packet), the bytes of client messages held at once across
//     sessions (a pgwire.Budget; over it, FATAL 53200 after the body is
//     read through), one message's size (54000), the start-up packet's
//     size and time; proxy.tls.required (28000 without TLS). Logins under
//     trust that skip a password are warned about loudly (authwarn.go).
//
// Sessions run on the backends as the client's own role (identity.go,
// proxy.auth.identity client): their connections are that role's, logged
// in with the Proof of the client's login (package auth); the DSN's user
// is the proxy's service identity, for its own work only
// (docs/sessions.md, "Who runs what").
//
// Sequence values for INSERTs and SELECT nextval come from package seqblock
// (for a session running as its own role, once the role may use the
// sequence: seqpriv.go).
// A write on several clusters outside a transaction runs in an implicit
// transaction ended by two-phase commit: around the statement (simple
// protocol) or until Sync (extended protocol, where a batch that writes
// and spans several clusters does too: batchtx.go).
//
// Ownership: a backend connection is owned by its pool while idle and by
// exactly one session while lent; only the owner reads or writes it. A session
// returns connections clean (no open transaction); a connection with an I/O
// error is closed, never reused.
//
// Errors: every error the client sees is an ErrorResponse with a real SQLSTATE
// (pgwire.ErrorResponse). Backend errors keep all their fields and gain a
// `where` line naming the cluster; the proxy's own errors come from sqlerr.
//
// This package may import every package of shardgate but cmd; nothing may
// import proxy but cmd and tests.
package proxy
