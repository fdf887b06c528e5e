package workflows

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/shardgate/shardgate/sqlerr"
)

// Backoff of a runner retrying a transient error: the first retry after
// retryBase, each next one twice as late, at most retryCap; a run that
// lasted retryResetAfter before failing starts the count again.
var (
	retryBase       = time.Second
	retryCap        = time.Minute
	retryResetAfter = time.Minute
)

// retrySchema records, in the workflow's row, the retry a runner waits for.
const retrySchema = `ALTER TABLE shardgate.workflows ADD COLUMN IF NOT EXISTS retry_attempt int NOT NULL DEFAULT 0;
ALTER TABLE shardgate.workflows ADD COLUMN IF NOT EXISTS retry_at timestamptz;
ALTER TABLE shardgate.workflows ADD COLUMN IF NOT EXISTS retry_error text NOT NULL DEFAULT '';
ALTER TABLE shardgate.workflows ADD COLUMN IF NOT EXISTS error_retryable boolean NOT NULL DEFAULT false`

// Transient reports whether err is one a runner retries by itself: the
// connection to a cluster lost or refused (a walsender's timeout, a broken
// pipe, a reset, an EOF, a timeout), a backend shut down or terminated by
// an administrator (57P01, 57P02, 57P03), connections exhausted (53300),
// connection exceptions (class 08), and serialization failures or
// deadlocks (40001, 40P01). Anything else — a column missing on a target,
// a constraint violated, a refusal of the workflow itself — is
// permanent: the workflow goes to phase error.
func Transient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, errStopped) || errors.Is(err, errDirection) {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "57P01", "57P02", "57P03", "53300", "40001", "40P01":
			return true
		}
		return len(pe.Code) == 5 && pe.Code[:2] == "08"
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	if pgconn.Timeout(err) {
		return true
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return true
	}
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, syscall.ETIMEDOUT)
}

// backoff is the wait before retry number attempt (1, 2, ...).
func backoff(attempt int) time.Duration {
	d := retryBase
	for i := 1; i < attempt && d < retryCap; i++ {
		d *= 2
	}
	return min(d, retryCap)
}

// setRetry records the retry the runner waits for (attempt 0: none).
func (s *Store) setRetry(ctx context.Context, id int64, attempt int, wait time.Duration, errText string) error {
	if attempt == 0 {
		return s.exec(ctx, `UPDATE shardgate.workflows SET retry_attempt = 0, retry_at = NULL, retry_error = '' WHERE id = $1 AND retry_attempt <> 0`, id)
	}
	return s.exec(ctx, `UPDATE shardgate.workflows SET retry_attempt = $2, retry_at = now() + make_interval(secs => $3), retry_error = $4, updated_at = now() WHERE id = $1`,
		id, attempt, wait.Seconds(), errText)
}

// retryWait waits d before a retry, ending early (errStopped) when a stop
// of the workflow is requested meanwhile.
func (r *Runner) retryWait(ctx context.Context, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(left, 500*time.Millisecond)):
		}
		if c, err := r.store.control(ctx, r.id); err == nil && c.stop {
			return errStopped
		}
	}
}

// runRetrying runs the workflow, retrying transient errors with capped
// exponential backoff (recorded in main for status; the workflow's lock
// checked, and taken again if main lost it, before each retry) and
// following a switch's change of direction; it returns the first
// permanent error, errStopped, or nil when ctx ends.
func (r *Runner) runRetrying(ctx context.Context, lock *heldLock) error {
	attempt := 0
	defer func() { _ = r.store.setRetry(context.WithoutCancel(ctx), r.id, 0, 0, "") }()
	for {
		started := time.Now()
		err := r.run(ctx)
		switch {
		case errors.Is(err, errDirection):
			r.logf("workflow %d: traffic switched; the stream changes direction", r.id)
			continue
		case err == nil || ctx.Err() != nil || !Transient(err):
			return err
		}
		if time.Since(started) >= retryResetAfter {
			attempt = 0
		}
		// The error may have been main's: a lock whose connection was
		// lost is taken again before the next run, or the run ends if
		// another runner has it.
		for {
			attempt++
			wait := backoff(attempt)
			r.logf("workflow %d: %v; retrying in %s (attempt %d)", r.id, err, wait, attempt)
			if serr := r.store.setRetry(ctx, r.id, attempt, wait, err.Error()); serr != nil {
				r.logf("workflow %d: record the retry: %v", r.id, serr) // main out of reach: retried all the same
			}
			if werr := r.retryWait(ctx, wait); werr != nil {
				if errors.Is(werr, errStopped) {
					return werr
				}
				return nil // ctx ended
			}
			lerr := lock.ensure(ctx)
			if lerr == nil {
				break
			}
			if sqlerr.Code(lerr) == sqlerr.LockNotAvailable {
				r.logf("workflow %d: another runner took it up while main was out of reach", r.id)
				return nil
			}
			if !Transient(lerr) {
				return lerr
			}
			err = lerr
		}
	}
}

// Retry is the retry a runner waits for after a transient error.
type Retry struct {
	Attempt int    `json:"attempt"`
	Error   string `json:"error"`
	// InSeconds is the time left until the retry (0: under way).
	InSeconds float64 `json:"in_seconds"`
}

// retry reads the workflow's retry, nil if none. s.mu is held.
func (s *Store) retry(ctx context.Context, id int64) (*Retry, error) {
	rt := &Retry{}
	err := s.conn.QueryRow(ctx, `SELECT retry_attempt, retry_error, greatest(coalesce(extract(epoch FROM retry_at - now()), 0), 0)::float8
		FROM shardgate.workflows WHERE id = $1`, id).Scan(&rt.Attempt, &rt.Error, &rt.InSeconds)
	if err != nil || rt.Attempt == 0 {
		return nil, err
	}
	return rt, nil
}

// Text is the status line of the retry.
func (rt *Retry) Text() string {
	return fmt.Sprintf("retrying (attempt %d, next in %.0fs): %s", rt.Attempt, rt.InSeconds, rt.Error)
}

// setError records a run's end in phase error. A transient error is
// marked retryable, and a `serve --workflows` takes the workflow up again
// (runnable).
func (s *Store) setError(ctx context.Context, id int64, err error) error {
	return s.exec(ctx, `UPDATE shardgate.workflows SET phase = $2, error = $3, error_retryable = $4, updated_at = now(),
		retry_attempt = 0, retry_at = NULL, retry_error = '' WHERE id = $1 AND phase NOT IN ('cancelled', 'completed')`, id, PhaseError, err.Error(), Transient(err))
}
