// Package sessionstate is the pure part of keeping a client's session
// consistent over pooled backend connections: the key that tells whether a
// connection carries a session's settings, the SQL that makes it carry
// them (resetting role and session authorization, which RESET ALL leaves
// alone), the start-up parameters that become settings, the replay of an
// open transaction's characteristics, transaction-local settings and
// savepoints on a cluster that joins the transaction late, which
// connection holds each cursor (Cursors), which notification channels
// the session listens on (Channels), the ParameterStatus values
// sessions share while they agree (ParamSets), and the check of a
// connection that ran code the proxy cannot see into (unseen.go): what
// that code did to settings is read, adopted as the session's own and
// reset on the connection before anyone else gets it.
//
// It does no I/O; package proxy runs the SQL it writes and decides from it
// where FETCH, MOVE and CLOSE run and whether the session must keep its
// connections. The table of what is tracked, what pins a session and what
// is reset on release is in docs/sessions.md.
//
// It may import backend, planner, pgwire and sqlerr; it must never import
// proxy.
package sessionstate
