package workflows

import (
	"context"
	"errors"
	"math"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/shardgate/shardgate/sqlerr"
)

// lockClass is the first key of the advisory locks runners hold in main
// (the second is the workflow id).
const lockClass = 0x73675746 // "sgWF"

// ErrLocked refuses to run a workflow another runner holds.
var ErrLocked = sqlerr.New(sqlerr.LockNotAvailable, "workflow is run by another process")

// Lock takes workflow id's lock in main: a session advisory lock on a
// connection of its own, released by the function returned — or by
// Postgres when the process holding it dies. Only one runner (a
// `workflow run`, or a `serve --workflows` of any proxy) holds it at once.
func (s *Store) Lock(ctx context.Context, id int64) (unlock func(), err error) {
	l, err := s.lock(ctx, id)
	if err != nil {
		return nil, err
	}
	return l.unlock, nil
}

// heldLock is a workflow's lock held on a connection of its own.
type heldLock struct {
	s  *Store
	id int64
	c  *pgx.Conn
}

func (s *Store) lock(ctx context.Context, id int64) (*heldLock, error) {
	if id <= 0 || id > math.MaxInt32 {
		return nil, sqlerr.New(sqlerr.InvalidParameterValue, "workflow id %d out of range", id)
	}
	c, err := pgx.Connect(ctx, s.dsn)
	if err != nil {
		return nil, err
	}
	var ok bool
	if err := c.QueryRow(ctx, "SELECT pg_try_advisory_lock($1, $2)", int32(lockClass), int32(id)).Scan(&ok); err != nil || !ok {
		c.Close(context.Background())
		if err != nil {
			return nil, err
		}
		var pid int32
		s.mu.Lock()
		s.live(ctx)
		_ = s.conn.QueryRow(ctx, `SELECT coalesce(min(pid), 0) FROM pg_locks WHERE locktype = 'advisory' AND granted
			AND classid = $1 AND objid = $2 AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
			uint32(lockClass), uint32(id)).Scan(&pid)
		s.mu.Unlock()
		return nil, ErrLocked.WithDetail("Workflow %d is locked by the main cluster's backend %d.", id, pid)
	}
	return &heldLock{s: s, id: id, c: c}, nil
}

// ensure makes sure the lock is still held: when its connection was lost
// (main restarted, the backend terminated), Postgres released it, and it
// is taken again — refused (55P03) if another runner took it meanwhile.
func (l *heldLock) ensure(ctx context.Context) error {
	var held bool
	if !l.c.IsClosed() {
		if err := l.c.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted AND pid = pg_backend_pid()
			AND classid = $1 AND objid = $2)`, uint32(lockClass), uint32(l.id)).Scan(&held); err == nil && held {
			return nil
		}
	}
	l.c.Close(context.Background())
	nl, err := l.s.lock(ctx, l.id)
	if err != nil {
		return err
	}
	l.c = nl.c
	return nil
}

func (l *heldLock) unlock() {
	// Unlocked before the close returns (a closed connection's backend
	// drops its locks a moment later): the next runner, or a check of
	// the lock, sees it free at once.
	uctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _ = l.c.Exec(uctx, "SELECT pg_advisory_unlock($1, $2)", int32(lockClass), int32(l.id))
	l.c.Close(context.Background())
}

// runnable returns the workflows a background runner picks up: created,
// copying or streaming (whose runner died: its lock is free), or in error
// with a transient error (not stopped, cancelled, or in error for good).
func (s *Store) runnable(ctx context.Context) ([]int64, error) {
	s.mu.Lock()
	s.live(ctx)
	defer s.mu.Unlock()
	rows, err := s.conn.Query(ctx, `SELECT id FROM shardgate.workflows WHERE phase IN ($1, $2, $3) OR phase = $4 AND error_retryable ORDER BY id`,
		PhaseCreated, PhaseCopying, PhaseStreaming, PhaseError)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}

// Background runs, until ctx ends, every runnable workflow recorded in
// main that no other process runs: it looks every `every`, one runner per
// workflow, each holding the workflow's lock. A runner retries transient
// errors itself (Transient); a workflow whose run fails for good is in
// phase error and waits for `workflow start`.
func Background(ctx context.Context, store *Store, every time.Duration, logf func(format string, args ...any)) {
	var mu sync.Mutex
	running := map[int64]bool{}
	var wg sync.WaitGroup
	defer wg.Wait()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		ids, err := store.runnable(ctx)
		if err != nil && ctx.Err() == nil {
			logf("workflows: list runnable: %v", err)
		}
		for _, id := range ids {
			mu.Lock()
			busy := running[id]
			running[id] = true
			mu.Unlock()
			if busy {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { mu.Lock(); delete(running, id); mu.Unlock() }()
				r, err := NewRunner(ctx, store, id)
				if err == nil {
					r.Logf = logf
					err = r.Run(ctx)
				}
				var se *sqlerr.Error
				if err != nil && !(errors.As(err, &se) && se.Code == sqlerr.LockNotAvailable) {
					logf("workflow %d: %v", id, err)
				}
			}()
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
