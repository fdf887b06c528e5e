package backend

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/shardgate/shardgate/sqlerr"
)

// Planned switchover: the cluster's writes are held (the pool's PAUSE,
// which also waits for the transactions running to end), the standby
// replays the primary's WAL up to its current position, is promoted
// (pg_promote) and recorded in main as the new primary, and the pool
// moves there and resumes: the held statements run on the new primary.
// The old primary is fenced, as after a failover. With WaitPromotion the
// standby is not promoted here: once it has replayed, the switchover
// waits (up to the failover buffer) for someone else — an operator,
// Patroni — to promote it.

// SwitchoverOptions says how Switchover promotes the standby.
type SwitchoverOptions struct {
	// WaitPromotion: do not promote the standby; once it has replayed
	// the fenced primary's WAL, wait up to the failover buffer for it to
	// answer pg_is_in_recovery() = false.
	WaitPromotion bool
}

// Switchover moves the cluster's writes to its standby host (host:port
// or its DSN); it reports how long writes were held.
func (rs *ReplicaSet) Switchover(ctx context.Context, host string, opts SwitchoverOptions) (time.Duration, int64, error) {
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
	inRec, _, err := oldCheck.run(ctx, rs.primary.DSN(), "SELECT pg_is_in_recovery()::text, '0/0'")
	if err != nil {
		return 0, 0, sqlerr.New("08006", "switchover of cluster %s: the primary did not answer: %v", rs.cluster, err)
	}
	if inRec {
		return 0, 0, sqlerr.New("55000", "switchover of cluster %s: the primary is in recovery", rs.cluster)
	}
	// The pool's pause holds only this proxy's writes; other proxies
	// sharing main (and anyone connected directly) could still commit on
	// the old primary after the standby is promoted, and those writes
	// would be lost. So the old primary itself is fenced first: made
	// read-only for every new transaction, and its other sessions ended.
	// Its WAL position is read after that, so every write it acknowledged
	// is replayed on the standby before the promotion.
	old := rs.primary.DSN()
	if err := fencePrimary(ctx, rs.cluster, old); err != nil {
		unfencePrimary(rs.cluster, old)
		return 0, 0, sqlerr.New("55000", "switchover of cluster %s: could not make the primary read-only before the promotion (the service identity needs ALTER SYSTEM and pg_terminate_backend): %v", rs.cluster, err)
	}
	promoted := false
	defer func() {
		if !promoted {
			unfencePrimary(rs.cluster, old)
		}
	}()
	oldCheck.close() // its session was ended with the others
	_, lsn, err := oldCheck.run(ctx, old, "SELECT pg_is_in_recovery()::text, pg_current_wal_flush_lsn()::text")
	if err != nil {
		return 0, 0, sqlerr.New("08006", "switchover of cluster %s: the primary did not answer: %v", rs.cluster, err)
	}
	var sbCheck checkConn
	defer sbCheck.close()
	for {
		inRec, replay, err := sbCheck.run(ctx, target.Pool.DSN(), "SELECT pg_is_in_recovery()::text, coalesce(pg_last_wal_replay_lsn(), '0/0')::text")
		if err != nil {
			return 0, 0, sqlerr.New("08006", "switchover of cluster %s: the standby %s did not answer: %v", rs.cluster, host, err)
		}
		if !inRec && opts.WaitPromotion && replay >= lsn {
			break // promoted already, once it had replayed all
		}
		if !inRec {
			return 0, 0, sqlerr.New("55000", "switchover of cluster %s: %s is not a standby (or was promoted before it replayed the primary's WAL)", rs.cluster, host)
		}
		if replay >= lsn {
			break
		}
		if err := pollWait(ctx, rs.cluster, "the standby did not replay the primary's WAL in time"); err != nil {
			return 0, 0, err
		}
	}
	if opts.WaitPromotion {
		if err := rs.waitPromotion(ctx, &sbCheck, target, host); err != nil {
			return 0, 0, err
		}
		promoted = true
	} else {
		// pg_promote(false) signals the promotion; its own wait polls
		// every 100 ms, this loop every 2 ms.
		promoted = true // from here on the old primary stays fenced, whatever happens
		failed, _, err := sbCheck.run(ctx, target.Pool.DSN(), "SELECT (NOT pg_promote(false))::text, '0/0'")
		if err != nil || failed {
			return 0, 0, sqlerr.New("08006", "switchover of cluster %s: pg_promote on %s did not promote it: %v", rs.cluster, host, err)
		}
		if err := waitOutOfRecovery(ctx, &sbCheck, target, rs.cluster, host, "the standby did not finish its promotion in time"); err != nil {
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

// waitPromotion waits, up to the failover buffer, for the standby to be
// promoted by someone else. If it is not, the switchover fails with
// 57014 and the old primary is unfenced (the caller's defer): writes go
// on there.
func (rs *ReplicaSet) waitPromotion(ctx context.Context, sbCheck *checkConn, target *Standby, host string) error {
	if rs.log != nil {
		rs.log.Info("switchover: the standby has replayed the fenced primary's WAL: waiting for it to be promoted", "cluster", rs.cluster, "host", host, "bound", rs.buffer)
	}
	wctx, cancel := context.WithTimeout(ctx, rs.buffer)
	defer cancel()
	return waitOutOfRecovery(wctx, sbCheck, target, rs.cluster, host, fmt.Sprintf("the standby %s was not promoted within the failover buffer (%s): writes go on on the old primary", host, rs.buffer))
}

// waitOutOfRecovery polls the standby until it answers
// pg_is_in_recovery() = false.
func waitOutOfRecovery(ctx context.Context, sbCheck *checkConn, target *Standby, cluster, host, why string) error {
	for {
		inRec, _, err := sbCheck.run(ctx, target.Pool.DSN(), "SELECT pg_is_in_recovery()::text, '0/0'")
		if err != nil {
			if ctx.Err() != nil {
				return sqlerr.New("57014", "switchover of cluster %s: %s", cluster, why)
			}
			return sqlerr.New("08006", "switchover of cluster %s: the standby %s did not answer while promoted: %v", cluster, host, err)
		}
		if !inRec {
			return nil
		}
		if err := pollWait(ctx, cluster, why); err != nil {
			return err
		}
	}
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

// fencePrimary makes the host at dsn refuse writes: default_transaction_
// read_only on in postgresql.auto.conf, the configuration reloaded (and
// seen by a new session), then every other client session terminated, so
// no transaction that began writable survives.
func fencePrimary(ctx context.Context, cluster, dsn string) error {
	conn, err := dialHost(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	for _, sql := range []string{
		"ALTER SYSTEM SET default_transaction_read_only = on",
		"SELECT pg_reload_conf()",
	} {
		if _, err := conn.Exec(ctx, sql).ReadAll(); err != nil {
			return err
		}
	}
	// The postmaster reloads asynchronously: wait until a new session
	// starts read-only before ending the others.
	if err := waitReadOnly(ctx, cluster, dsn, "on"); err != nil {
		return err
	}
	// pg_terminate_backend only signals: a session in the middle of its
	// commit may still acknowledge it, so wait until every session ended
	// is gone before reading how far the WAL goes.
	res, err := conn.Exec(ctx, `SELECT coalesce(array_agg(pid), '{}')::text FROM pg_stat_activity
		WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()`).ReadAll()
	if err != nil {
		return err
	}
	if len(res) != 1 || len(res[0].Rows) != 1 {
		return errors.New("unexpected answer listing the primary's sessions")
	}
	pids := "'" + string(res[0].Rows[0][0]) + "'::int[]" // digits, commas and braces only
	if _, err := conn.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM unnest("+pids+") AS pid").ReadAll(); err != nil {
		return err
	}
	for {
		res, err := conn.Exec(ctx, "SELECT count(*) FROM pg_stat_activity WHERE pid = ANY("+pids+")").ReadAll()
		if err != nil {
			return err
		}
		if len(res) == 1 && len(res[0].Rows) == 1 && string(res[0].Rows[0][0]) == "0" {
			break
		}
		if err := pollWait(ctx, cluster, "the primary's sessions did not end in time"); err != nil {
			return err
		}
	}
	// A commit of its own that writes WAL (a transactional logical message)
	// flushes every record before it (commits made with synchronous_commit
	// off included), so the flush position read next covers all the host
	// acknowledged; without it the standby would wait for the WAL writer
	// (up to wal_writer_delay) to have it.
	_, err = conn.Exec(ctx, "BEGIN READ WRITE; SET LOCAL synchronous_commit = on; SELECT pg_logical_emit_message(true, 'shardgate.fence', ''); COMMIT").ReadAll()
	return err
}

// waitReadOnly waits until a new session of the host at dsn starts with
// default_transaction_read_only = want (a reload is asynchronous).
func waitReadOnly(ctx context.Context, cluster, dsn, want string) error {
	for {
		probe, err := dialHost(ctx, dsn)
		if err != nil {
			return err
		}
		res, err := probe.Exec(ctx, "SHOW default_transaction_read_only").ReadAll()
		probe.Close(context.Background())
		if err != nil {
			return err
		}
		if len(res) == 1 && len(res[0].Rows) == 1 && string(res[0].Rows[0][0]) == want {
			return nil
		}
		if err := pollWait(ctx, cluster, "the primary did not reload its configuration in time"); err != nil {
			return err
		}
	}
}

// unfencePrimary undoes fencePrimary after a switchover that did not get
// as far as the promotion (best effort: the host may be down), and waits
// until new sessions start writable, so the writes held go on there.
func unfencePrimary(cluster, dsn string) {
	ctx, cancel := context.WithTimeout(context.Background(), checkTimeout)
	defer cancel()
	conn, err := dialHost(ctx, dsn)
	if err != nil {
		return
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "ALTER SYSTEM RESET default_transaction_read_only").ReadAll(); err != nil {
		return
	}
	if _, err := conn.Exec(ctx, "SELECT pg_reload_conf()").ReadAll(); err == nil {
		_ = waitReadOnly(ctx, cluster, dsn, "off")
	}
}
