package backend

import (
	"context"
	"time"

	"github.com/shardgate/shardgate/sqlerr"
)

// Planned switchover: the cluster's writes are held (the pool's PAUSE,
// which also waits for the transactions running to end), the standby
// replays the primary's WAL up to its current position, is promoted
// (pg_promote) and recorded in main as the new primary, and the pool
// moves there and resumes: the held statements run on the new primary.
// The old primary is fenced, as after a failover.

// Switchover moves the cluster's writes to its standby host (host:port
// or its DSN); it reports how long writes were held.
func (rs *ReplicaSet) Switchover(ctx context.Context, host string) (time.Duration, int64, error) {
	var target *Standby
	for _, s := range rs.standbys {
		if s.Pool.Host() == host || s.Pool.DSN() == host {
			target = s
		}
	}
	if target == nil {
		return 0, 0, sqlerr.New("42704", "cluster %s has no standby %s (SHOW CLUSTERS lists its hosts)", rs.cluster, host)
	}
	if rs.record == nil || rs.buffer <= 0 {
		return 0, 0, sqlerr.New("55000", "cluster %s does not fail over (no failover_buffer)", rs.cluster)
	}
	if !rs.switching.CompareAndSwap(false, true) {
		return 0, 0, sqlerr.New("55006", "cluster %s is already switching over", rs.cluster)
	}
	defer rs.switching.Store(false)
	start := time.Now()
	if err := rs.primary.Pause(ctx); err != nil {
		rs.primary.Resume()
		return 0, 0, err
	}
	defer rs.primary.Resume()
	var oldCheck checkConn
	defer oldCheck.close()
	inRec, lsn, err := oldCheck.run(ctx, rs.primary.DSN(), "SELECT pg_is_in_recovery()::text, pg_current_wal_lsn()::text")
	if err != nil {
		return 0, 0, sqlerr.New("08006", "switchover of cluster %s: the primary did not answer: %v", rs.cluster, err)
	}
	if inRec {
		return 0, 0, sqlerr.New("55000", "switchover of cluster %s: the primary is in recovery", rs.cluster)
	}
	var sbCheck checkConn
	defer sbCheck.close()
	for {
		inRec, replay, err := sbCheck.run(ctx, target.Pool.DSN(), "SELECT pg_is_in_recovery()::text, coalesce(pg_last_wal_replay_lsn(), '0/0')::text")
		if err != nil {
			return 0, 0, sqlerr.New("08006", "switchover of cluster %s: the standby %s did not answer: %v", rs.cluster, host, err)
		}
		if !inRec {
			return 0, 0, sqlerr.New("55000", "switchover of cluster %s: %s is not a standby", rs.cluster, host)
		}
		if replay >= lsn {
			break
		}
		if err := pollWait(ctx, rs.cluster, "the standby did not replay the primary's WAL in time"); err != nil {
			return 0, 0, err
		}
	}
	// pg_promote(false) signals the promotion; its own wait polls every
	// 100 ms, this loop every 2 ms.
	failed, _, err := sbCheck.run(ctx, target.Pool.DSN(), "SELECT (NOT pg_promote(false))::text, '0/0'")
	if err != nil || failed {
		return 0, 0, sqlerr.New("08006", "switchover of cluster %s: pg_promote on %s did not promote it: %v", rs.cluster, host, err)
	}
	for {
		inRec, _, err := sbCheck.run(ctx, target.Pool.DSN(), "SELECT pg_is_in_recovery()::text, '0/0'")
		if err != nil {
			return 0, 0, sqlerr.New("08006", "switchover of cluster %s: the standby %s did not answer after pg_promote: %v", rs.cluster, host, err)
		}
		if !inRec {
			break
		}
		if err := pollWait(ctx, rs.cluster, "the standby did not finish its promotion in time"); err != nil {
			return 0, 0, err
		}
	}
	got, epoch, err := rs.record.Claim(ctx, rs.cluster, target.Pool.Host(), rs.epochNow())
	if err != nil {
		return 0, 0, sqlerr.New("08006", "switchover of cluster %s: main did not record the new primary: %v", rs.cluster, err)
	}
	rs.follow(got, epoch)
	return time.Since(start), epoch, nil
}

// pollWait waits 2 ms, or fails with 57014 saying why when ctx ends.
func pollWait(ctx context.Context, cluster, why string) error {
	select {
	case <-ctx.Done():
		return sqlerr.New("57014", "switchover of cluster %s: %s", cluster, why)
	case <-time.After(2 * time.Millisecond):
		return nil
	}
}
