// Package backup makes a restore point that is one consistent cut of the
// whole fleet: a named position in the WAL of every Postgres server of the
// topology, such that a fleet restored to it (point-in-time recovery with
// recovery_target_name) holds every transaction of the cut on every
// cluster it wrote, and no half of a two-phase commit.
//
// # How a restore point is made (CreateRestorePoint)
//
//  1. Pre-flight, nothing held: every cluster of the effective topology (the
//     file overlaid with main's routing revision) is reached; the clusters
//     are grouped by server (pg_control_system's system identifier), and
//     each server must be a primary with wal_level replica or logical,
//     archive_mode on and something archiving, and the role of the DSN
//     must see other sessions' transactions and run
//     pg_create_restore_point. A refusal is 55000 (42501 for privileges)
//     listing every problem. A name already recorded is 42710. One pass of
//     the two-phase commit resolver finishes what is decided and creates
//     the decision log if need be.
//  2. Hold: a routing revision carries a buffer request naming every table
//     and sequence of every cluster's database; every live proxy arms its
//     switch gate (routestate.Gate) and acknowledges within AckTimeout, or
//     the restore point is refused with 55P03.
//  3. Settle: every server is polled until no client session other than
//     ours has a transaction id (a transaction that wrote and has not
//     ended: those a proxy opened before it armed, or a client's that
//     bypasses the proxies) and no shardgate_ prepared transaction is left.
//     Past half of TxWait the resolver runs once more (a decided commit
//     whose COMMIT PREPARED is late); past TxWait the restore point is
//     refused with 55P03 naming what is still open.
//  4. Cut: in one transaction on main, the decision log
//     (shardgate.commit_decisions) is locked IN EXCLUSIVE MODE, so no
//     two-phase commit can be decided while the points are written; the
//     servers are checked again for prepared transactions (any: the lock is
//     released and the settle goes on); then pg_create_restore_point runs
//     on every other server at once and last on main's, and the
//     transaction ends.
//  5. Release: a routing revision withdraws the buffer request; the held
//     statements run. The pause is from the arming revision to this one.
//  6. Afterwards: each server switches to a new WAL file (unless told not
//     to), so the file holding the point is archived at once, and the
//     restore point is recorded in main's shardgate.restore_points.
//
// Why the cut is consistent: a cross-cluster transaction commits on its
// clusters only after main recorded its decision. No decision is recorded
// between the first and the last point (the lock), and none decided
// before is still prepared anywhere (the check under the lock). Writes
// held by the gate and sessions settled, nothing commits on any server
// between the points either, so a transaction acknowledged before the
// hold is in the cut on every cluster and one held is in none. Main's
// point is the last: a sequence block or decision used on a shard before
// its point was recorded on main before main's.
//
// backup sits above routestate, twopc and topology, beside workflows; it
// must never import proxy.
package backup
