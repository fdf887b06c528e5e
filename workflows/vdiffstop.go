package workflows

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/shardgate/shardgate/sqlerr"
)

// The stop position of a VDiff. To compare the targets with a source at
// one exact position, the vdiff asks that source's stream to stop there
// (workflow_streams.vdiff_stop) and waits until it reports it has
// (vdiff_stopped):
//
//  1. vdiff_stop = 0/0 pauses the stream: it applies what it has
//     received, reports P (everything before P applied) and waits.
//  2. On the source, a TEMPORARY logical slot is created with
//     EXPORT_SNAPSHOT on a replication connection: it returns its
//     consistent point C and a snapshot that shows exactly the
//     transactions whose commit record starts before C, and none after
//     (the slot decodes exactly the commits at or after C; the exported
//     snapshot is built by the same snapshot builder at that point). C >= P:
//     the slot's position is past any WAL the stream has received.
//  3. vdiff_stop = C: the stream applies every transaction whose commit
//     record starts before C (equivalently, whose end LSN is <= C, since
//     C is a record boundary), then stops and reports C. It knows it has
//     received all of them when the next transaction begins at or after
//     C, when a keepalive says the walsender has sent everything up to C
//     or more, or when the fence (a non-transactional logical message the
//     vdiff emits on the source after step 3) arrives.
//  4. The targets now hold exactly the source's state at C: the vdiff
//     compares them with the source read under the exported snapshot.
//  5. vdiff_stop = NULL: the stream resumes.
//
// A stream that already applied a transaction ending after C (a restart
// between steps 1 and 3 that skipped the pause) reports where it is
// instead, and the vdiff refuses to compare. The vdiff holds an advisory
// lock in main while a stop is set: a stream waiting on a stop whose
// vdiff died (no lock) clears it and goes on.

// vdiffLockClass is the first key of the advisory lock a vdiff holds in
// main (the second is the workflow id).
const vdiffLockClass = 0x73675644 // "sgVD"

// vdiffFence prefixes the logical message a vdiff emits on a source once
// its stop is set.
const vdiffFence = "shardgate_vdiff"

// vdiffHold is a stream's view of its source's vdiff stop.
type vdiffHold struct {
	r      *Runner
	source string
	active bool
	stop   pglogrepl.LSN
}

// refresh reads the stop requested for the stream, if any.
func (h *vdiffHold) refresh(ctx context.Context) error {
	stop, _, err := h.r.store.vdiffStop(ctx, h.r.id, h.source)
	if err != nil {
		return err
	}
	h.active, h.stop = stop != nil, 0
	if stop != nil {
		h.stop = *stop
	}
	return nil
}

// reached says whether a stream about to take what starts at lsn (a
// transaction's commit, or a position every commit before which has
// been received) must stop first.
func (h *vdiffHold) reached(lsn pglogrepl.LSN) bool { return h != nil && h.active && lsn >= h.stop }

// wait reports where the stream stopped and waits until the stop is
// cleared or moved past next, sending the source status updates
// meanwhile so that the walsender does not time out. processed is the
// position before which everything is applied, applied the end of the
// last transaction applied on any target.
func (h *vdiffHold) wait(ctx context.Context, repl *pgconn.PgConn, processed, applied, next pglogrepl.LSN) error {
	for h.reached(next) {
		at := h.stop
		if at == 0 || applied > at {
			// A pause, or a stop the stream has already passed: the vdiff
			// checks the position reported against the one it asked for.
			at = max(processed, applied)
		}
		if err := h.r.store.vdiffStopped(ctx, h.r.id, h.source, at); err != nil {
			return err
		}
		h.r.logf("workflow %d: stream from %s stopped at %s for a vdiff", h.r.id, h.source, at)
		lastStatus, lastCheck := time.Now(), time.Now()
		for {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
			if time.Since(lastStatus) > 5*time.Second {
				if err := pglogrepl.SendStandbyStatusUpdate(ctx, repl, pglogrepl.StandbyStatusUpdate{WALWritePosition: processed}); err != nil {
					return fmt.Errorf("source %s: status update: %w", h.source, err)
				}
				lastStatus = time.Now()
			}
			if time.Since(lastCheck) > time.Second {
				if err := h.r.checkStop(ctx); err != nil {
					return err
				}
				lastCheck = time.Now()
			}
			stop, locked, err := h.r.store.vdiffStop(ctx, h.r.id, h.source)
			if err != nil {
				return err
			}
			if stop != nil && !locked {
				h.r.logf("workflow %d: the vdiff that stopped %s is gone; resuming", h.r.id, h.source)
				if err := h.r.store.clearVDiffStop(ctx, h.r.id, h.source); err != nil {
					return err
				}
				stop = nil
			}
			if stop == nil {
				h.active = false
				return nil
			}
			if *stop != h.stop {
				h.stop = *stop
				break
			}
		}
	}
	return nil
}

// vdiffStop returns the stop requested of a source's stream (nil: none)
// and whether a vdiff holds the workflow's vdiff lock.
func (s *Store) vdiffStop(ctx context.Context, id int64, source string) (*pglogrepl.LSN, bool, error) {
	s.mu.Lock()
	s.live(ctx)
	defer s.mu.Unlock()
	var text *string
	var locked bool
	err := s.conn.QueryRow(ctx, `SELECT vdiff_stop::text, EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted
			AND classid = $3 AND objid = $4 AND objsubid = 2 AND database = (SELECT oid FROM pg_database WHERE datname = current_database()))
		FROM shardgate.workflow_streams WHERE workflow_id = $1 AND source = $2`, id, source, uint32(vdiffLockClass), uint32(id)).Scan(&text, &locked)
	if errors.Is(err, pgx.ErrNoRows) || err == nil && text == nil {
		return nil, locked, nil
	}
	if err != nil {
		return nil, false, err
	}
	lsn, err := pglogrepl.ParseLSN(*text)
	return &lsn, locked, err
}

func (s *Store) vdiffStopped(ctx context.Context, id int64, source string, at pglogrepl.LSN) error {
	return s.exec(ctx, `UPDATE shardgate.workflow_streams SET vdiff_stopped = $3 WHERE workflow_id = $1 AND source = $2 AND vdiff_stop IS NOT NULL`,
		id, source, at.String())
}

func (s *Store) clearVDiffStop(ctx context.Context, id int64, source string) error {
	return s.exec(ctx, `UPDATE shardgate.workflow_streams SET vdiff_stop = NULL, vdiff_stopped = NULL WHERE workflow_id = $1 AND source = $2`, id, source)
}

// setVDiffStop asks a source's stream to stop at lsn (0: pause now).
func (s *Store) setVDiffStop(ctx context.Context, id int64, source string, lsn pglogrepl.LSN) error {
	return s.exec(ctx, `UPDATE shardgate.workflow_streams SET vdiff_stop = $3, vdiff_stopped = NULL WHERE workflow_id = $1 AND source = $2`,
		id, source, lsn.String())
}

// lockVDiff takes the workflow's vdiff lock on a connection of its own.
func (s *Store) lockVDiff(ctx context.Context, id int64) (func(), error) {
	if id <= 0 || id > math.MaxInt32 {
		return nil, sqlerr.New(sqlerr.InvalidParameterValue, "workflow id %d out of range", id)
	}
	c, err := pgx.Connect(ctx, s.dsn)
	if err != nil {
		return nil, err
	}
	var ok bool
	if err := c.QueryRow(ctx, "SELECT pg_try_advisory_lock($1, $2)", int32(vdiffLockClass), int32(id)).Scan(&ok); err != nil || !ok {
		c.Close(context.Background())
		if err == nil {
			err = sqlerr.New(sqlerr.LockNotAvailable, "workflow %d: another vdiff of it is running", id)
		}
		return nil, err
	}
	return func() {
		// Unlocked before the close returns, so a vdiff right after this
		// one does not find it still held (as Store.Lock's unlock).
		uctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, _ = c.Exec(uctx, "SELECT pg_advisory_unlock($1, $2)", int32(vdiffLockClass), int32(id))
		c.Close(context.Background())
	}, nil
}

// position is a source held at a vdiff's stop position: the temporary
// slot's replication connection keeps the exported snapshot valid.
type position struct {
	source   string
	dsn      string
	lsn      pglogrepl.LSN
	snapshot string
	repl     *pgconn.PgConn
}

// holdWait bounds each wait for the streams' reports.
const holdWait = time.Minute

// holdStreams stops every source's stream at an exact position (see
// above) and returns those positions with their snapshots, and a release
// that clears the stops. Call it with the vdiff lock held.
func holdStreams(ctx context.Context, store *Store, id int64, p *Plan, logf func(string, ...any)) (_ []*position, release func(), err error) {
	var held []*position
	release = func() {
		bg := context.WithoutCancel(ctx)
		for _, s := range p.Sources {
			_ = store.clearVDiffStop(bg, id, s.Cluster)
		}
		for _, h := range held {
			h.repl.Close(bg)
		}
	}
	defer func() {
		if err != nil {
			release()
		}
	}()
	for _, s := range p.Sources {
		if err := store.setVDiffStop(context.WithoutCancel(ctx), id, s.Cluster, 0); err != nil {
			return nil, nil, err
		}
	}
	paused := map[string]pglogrepl.LSN{}
	for _, s := range p.Sources {
		if paused[s.Cluster], err = awaitStopped(ctx, store, id, s.Cluster); err != nil {
			return nil, nil, err
		}
	}
	for _, s := range p.Sources {
		repl, err := pgconn.Connect(ctx, replicationDSN(s.DSN))
		if err != nil {
			return nil, nil, fmt.Errorf("source %s: replication connection: %w", s.Cluster, err)
		}
		slot := fmt.Sprintf("shardgate_vdiff%d_%s", id, sanitize(s.Cluster))
		res, err := pglogrepl.CreateReplicationSlot(ctx, repl, slot, "pgoutput",
			pglogrepl.CreateReplicationSlotOptions{Temporary: true, SnapshotAction: "EXPORT_SNAPSHOT", Mode: pglogrepl.LogicalReplication})
		if err != nil {
			repl.Close(context.Background())
			return nil, nil, fmt.Errorf("source %s: create temporary slot: %w", s.Cluster, err)
		}
		c, err := pglogrepl.ParseLSN(res.ConsistentPoint)
		if err != nil {
			repl.Close(context.Background())
			return nil, nil, err
		}
		held = append(held, &position{source: s.Cluster, dsn: s.DSN, lsn: c, snapshot: res.SnapshotName, repl: repl})
		if c < paused[s.Cluster] {
			return nil, nil, sqlerr.New(sqlerr.InternalError, "source %s: the stream paused at %s, past the snapshot's position %s", s.Cluster, paused[s.Cluster], c)
		}
		if err := store.setVDiffStop(context.WithoutCancel(ctx), id, s.Cluster, c); err != nil {
			return nil, nil, err
		}
		if err := emitFence(ctx, s.DSN); err != nil {
			return nil, nil, fmt.Errorf("source %s: %w", s.Cluster, err)
		}
	}
	for _, h := range held {
		at, err := awaitStopped(ctx, store, id, h.source)
		if err != nil {
			return nil, nil, err
		}
		if at != h.lsn {
			return nil, nil, refused("workflow %d: the stream from %s stopped at %s, not at the vdiff's position %s", id, h.source, at, h.lsn).
				WithHint("Run the vdiff again.")
		}
		if logf != nil {
			logf("workflow %d: stream from %s stopped at %s", id, h.source, h.lsn)
		}
	}
	return held, release, nil
}

// emitFence writes the logical message that tells a stream it has
// received every transaction before the stop (when the source is idle).
func emitFence(ctx context.Context, dsn string) error {
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	_, err = c.Exec(ctx, "SELECT pg_logical_emit_message(false, $1, '')", vdiffFence)
	return err
}

// awaitStopped waits until a source's stream reports where it stopped.
func awaitStopped(ctx context.Context, store *Store, id int64, source string) (pglogrepl.LSN, error) {
	deadline := time.Now().Add(holdWait)
	for {
		var at *string
		var phase, errText string
		store.mu.Lock()
		err := store.conn.QueryRow(context.WithoutCancel(ctx), `SELECT s.vdiff_stopped::text, w.phase, w.error FROM shardgate.workflow_streams s
			JOIN shardgate.workflows w ON w.id = s.workflow_id WHERE s.workflow_id = $1 AND s.source = $2`, id, source).Scan(&at, &phase, &errText)
		store.mu.Unlock()
		if err != nil {
			return 0, err
		}
		if at != nil {
			return pglogrepl.ParseLSN(*at)
		}
		if phase != PhaseStreaming {
			return 0, refused("workflow %d is %s, its stream from %s does not run %s", id, phase, source, errText)
		}
		if time.Now().After(deadline) {
			return 0, refused("workflow %d: the stream from %s did not stop for the vdiff within %s", id, source, holdWait).
				WithHint("Check that its runner (workflow run, or serve --workflows) is streaming: workflow status %d.", id)
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func maxLSN(l []pglogrepl.LSN) pglogrepl.LSN {
	var m pglogrepl.LSN
	for _, v := range l {
		m = max(m, v)
	}
	return m
}
