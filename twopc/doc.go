// Package twopc is shardgate's two-phase commit: the Coordinator that ends
// a transaction which wrote on several clusters, and the Resolver that
// finishes the prepared transactions a coordinator left behind (a proxy
// that died, a cluster that was down, a lost connection).
//
// It knows neither the proxy nor its connection pools. A coordinator works
// on the connections that hold the transaction (Participant) and on a
// connection to the main cluster lent by its caller (MainConn); the
// resolver and the coordinator's background work open their own short
// connections from the DSNs of a ClusterSource.
//
// # Protocol
//
// The decision log is shardgate.commit_decisions on main: one row per
// global transaction id (gid), with its outcome ('commit' or 'abort'), the
// participant clusters and decided_at. The primary key on gid is the
// arbiter: whoever inserts first decides, and a row is never updated.
//
//  1. Phase one: PREPARE TRANSACTION gid on every participant, in order
//     (named gid@cluster; a second participant on a cluster, Parted,
//     gid#part@cluster). A failure rolls back what was prepared and
//     returns the error.
//  2. Decision: INSERT ... 'commit' ... ON CONFLICT (gid) DO NOTHING,
//     returning the outcome that won. If a resolver recorded 'abort' first,
//     the coordinator rolls back its prepared transactions and fails with
//     40001 "transaction aborted by in-doubt resolution". When the answer
//     to the INSERT is lost, the coordinator proposes 'abort' on a fresh
//     connection to learn the winner; if main cannot tell it either, the
//     client gets 08007 (transaction resolution unknown) and the resolver
//     finishes the transaction whichever way was recorded.
//  3. Phase two: COMMIT PREPARED on every participant. The client is told
//     the transaction committed once the decision is durable; a failed
//     COMMIT PREPARED keeps the decision and is retried in the background
//     with backoff (and by every resolver pass) until it succeeds.
//  4. Forgetting: the coordinator deletes a 'commit' row once COMMIT
//     PREPARED succeeded (or found the gid already finished) on every
//     participant. A resolver deletes a row only when every cluster it must
//     check answered and none holds the gid any more: the participants for
//     'commit', every cluster of the topology for 'abort'. An unreachable
//     cluster keeps the decision, however old.
//
// # Resolver
//
// For each prepared transaction whose gid starts with "shardgate_" on each
// cluster: decision 'commit' → COMMIT PREPARED; 'abort' → ROLLBACK
// PREPARED; no decision and prepared longer than the in-doubt timeout ago
// → propose 'abort' (INSERT ON CONFLICT DO NOTHING) and act on whatever
// outcome won, so a coordinator recording 'commit' at the same moment is
// arbitrated by main, never overruled. Younger undecided transactions are
// left alone: their coordinator may still be deciding.
//
// Resolve passes over every cluster; ResolveCluster over one, for a cluster
// reachable again after a failure (the proxy runs it on the first
// successful dial of that cluster's pool), so what was decided while it
// was down is finished without waiting for the next full pass.
//
// # Timing rules
//
// Let T be the in-doubt timeout (Config.InDoubtTimeout).
//
//   - A coordinator records 'commit' only before its commit deadline: the
//     time it sent its first PREPARE plus CommitWindowFactor × T. Main
//     enforces it (the INSERT carries the deadline and compares it with
//     main's clock), so a coordinator that stalls past it cannot commit.
//   - A resolver proposes 'abort' only for a transaction prepared more than
//     T ago, so an abort row is never written earlier than T after the
//     coordinator's first PREPARE.
//   - An 'abort' row is deleted only once it is older than
//     AbortRetentionFactor × T and no cluster holds the gid.
//
// Hence between the earliest moment an abort row can disappear and the
// latest moment its coordinator can still insert 'commit' there are
// (1 + AbortRetentionFactor − CommitWindowFactor) × T (nine in-doubt
// timeouts): a slow coordinator can never record 'commit' for a
// transaction that was rolled back, unless the clocks of the proxies and
// main disagree by more than that.
//
// All proxies sharing a main cluster must run a version with this
// protocol: an older proxy reads every row of commit_decisions as a commit
// decision. The table of older versions (without outcome) is upgraded in
// place; its rows are commit decisions and read as such.
//
// # Tests
//
// Hooks are failpoints for tests: a coordinator hook that returns an error
// abandons the commit as a crash would (ErrAbandoned), resolver hooks let
// a test interleave a resolver with a coordinator. Config.Now lets tests
// simulate time.
package twopc
