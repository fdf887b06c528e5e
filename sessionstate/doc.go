// Package sessionstate is the pure part of keeping a client's session
// consistent over pooled backend connections: the key that tells whether a
// connection carries a session's settings, the SQL that makes it carry
// them (resetting role and session authorization, which RESET ALL leaves
// alone), the start-up parameters that become settings, and the replay of
// an open transaction's characteristics, transaction-local settings and
// savepoints on a cluster that joins the transaction late.
//
// It does no I/O; package proxy runs the SQL it writes. The table of what
// is tracked, what pins a session and what is reset on release is in
// docs/sessions.md.
package sessionstate
