package workflows

import (
	"context"
	"errors"
	"time"
)

// errStopped ends a run whose stop was requested, at a consistent point:
// after a committed copy chunk, or between two streamed transactions.
var errStopped = errors.New("stop requested")

// errDirection ends a stream whose direction a switch changed (or that
// complete ended): the runner starts again in the new direction.
var errDirection = errors.New("traffic switched")

// checkStop returns errStopped if a stop of the workflow was requested,
// errDirection if its traffic moved since the run started.
func (r *Runner) checkStop(ctx context.Context) error {
	c, err := r.store.control(ctx, r.id)
	if err != nil {
		return err
	}
	switch {
	case c.traffic != r.traffic || c.phase == PhaseCompleted:
		return errDirection
	case c.stop:
		return errStopped
	case c.switching:
		// A switch no process holds died before the decision: roll it back.
		if unlock, err := r.store.lockSwitch(ctx, r.id); err == nil {
			defer unlock()
			return recoverSwitch(ctx, r.store, r.id)
		}
	}
	return nil
}

// control is what a runner checks of its workflow while it streams.
type control struct {
	stop      bool
	traffic   string
	phase     string
	switching bool // a switch is in progress, not decided yet
}

func (s *Store) control(ctx context.Context, id int64) (control, error) {
	s.mu.Lock()
	s.live(ctx)
	defer s.mu.Unlock()
	var c control
	err := s.conn.QueryRow(ctx, `SELECT stop_requested, traffic, phase, switching IS NOT NULL FROM shardgate.workflows WHERE id = $1`, id).
		Scan(&c.stop, &c.traffic, &c.phase, &c.switching)
	return c, err
}

// Stop asks the workflow's runner, wherever it runs, to stop at its next
// consistent point, and waits (up to wait) until it has: phase stopped.
// A workflow nobody runs is marked stopped at once.
func Stop(ctx context.Context, s *Store, id int64, wait time.Duration) error {
	w, err := s.Get(ctx, id)
	if err != nil {
		return err
	}
	switch w.Phase {
	case PhaseCancelled:
		return refused("workflow %d was cancelled", id)
	case PhaseStopped:
		return nil
	}
	if err := s.exec(ctx, `UPDATE shardgate.workflows SET stop_requested = true, updated_at = now() WHERE id = $1`, id); err != nil {
		return err
	}
	deadline := time.Now().Add(wait)
	for {
		if unlock, err := s.Lock(ctx, id); err == nil {
			// No runner (any more): record the stop ourselves.
			defer unlock()
			return s.exec(ctx, `UPDATE shardgate.workflows SET phase = $2, updated_at = now() WHERE id = $1 AND phase <> 'cancelled'`, id, PhaseStopped)
		}
		if time.Now().After(deadline) {
			return refused("workflow %d: its runner has not stopped within %s", id, wait).
				WithHint("The stop stays requested: the runner stops at its next consistent point.")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Start makes a stopped (or failed) workflow runnable again: the stop
// request is cleared and the phase set back to copying, or streaming if
// every table is copied. A `serve --workflows` picks it up; so does run.
func Start(ctx context.Context, s *Store, id int64) error {
	w, err := s.Get(ctx, id)
	if err != nil {
		return err
	}
	if w.Phase == PhaseCancelled {
		return refused("workflow %d was cancelled", id)
	}
	return s.exec(ctx, `UPDATE shardgate.workflows SET stop_requested = false, error = '', updated_at = now(),
		phase = CASE WHEN phase IN ($2, $3) THEN
			CASE WHEN EXISTS (SELECT 1 FROM shardgate.workflow_tables t WHERE t.workflow_id = $1 AND NOT t.done) THEN $4 ELSE $5 END
			ELSE phase END
		WHERE id = $1`, id, PhaseStopped, PhaseError, PhaseCopying, PhaseStreaming)
}
