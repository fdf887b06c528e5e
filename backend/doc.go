// Package backend owns shardgate's connections to its backend clusters.
//
// It owns:
//
//   - Conn: one backend connection, dialed and authenticated by pgconn and
//     then taken over, so the proxy reads and writes protocol messages on
//     it directly (rows are relayed byte for byte); the proxy's own
//     statements on it (SimpleExec, DrainUntilReady, Query); a liveness
//     check at every lend of an idle connection: the flag the process's
//     hang-up watch sets (hangup_linux.go: an epoll set of every backend
//     socket, TLS ones included, for EPOLLRDHUP), a peek at the socket
//     where there is no epoll; and a non-blocking look for pending
//     input (Pending); CancelRequest (Cancel); notifications kept aside
//     while reading, and a watch for input on an idle connection
//     (notify.go).
//   - Pool: the connections of one cluster, lent for a statement, a
//     transaction or a session, with a bounded wait when all are lent
//     (53300 after max_wait; TryAcquire never waits), fail-fast while a
//     cluster is unreachable, and idle reaping; Interrupt closes the
//     sockets of the connections lent to one client (or all), the one
//     thing besides the owner that may touch a lent connection, so that a
//     session that must end is not held by a read or write that a cancel
//     cannot end.
//   - Logins (login.go, users.go): a pool holds the connections of every
//     role using its cluster, each logged in as one role (the DSN's user,
//     or a client's role with a password or by SCRAM pass-through with the
//     ClientKey a client proved) and lent only to sessions of that role;
//     size bounds the cluster, SetUserSize one role, and a role's idle
//     connections are reaped like the others.
//   - the collation probe: what each cluster's catalog says about text
//     comparison and its default extra_float_digits (CollationInfo,
//     Collations, Pool.Collation), cached for a minute per pool.
//
// Ownership: a Conn belongs to its pool while idle and to one caller while
// lent; only the owner touches it. A connection with an I/O error is
// marked Broken and closed when released, never reused. One that ran
// code the proxy cannot see into (SettingsUnseen) and comes back
// unchecked has its settings reset on release.
//
// It may import pgwire and sqlerr; it must never import proxy, merge,
// planner or topology (it knows clusters by name and DSN only).
package backend
