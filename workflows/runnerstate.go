package workflows

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
)

// RunnerStaleAfter bounds a runner's heartbeat: a runner whose last beat
// is older (or whose lock in main is gone) no longer reports, and status
// reads the streams' lag from the slots themselves.
var RunnerStaleAfter = 10 * time.Second

// heartbeatEvery is how often a runner records that it is alive.
var heartbeatEvery = time.Second

// runnerSchema records, in the workflow's row, the process running it.
const runnerSchema = `ALTER TABLE shardgate.workflows ADD COLUMN IF NOT EXISTS runner_host text NOT NULL DEFAULT '';
ALTER TABLE shardgate.workflows ADD COLUMN IF NOT EXISTS runner_pid int NOT NULL DEFAULT 0;
ALTER TABLE shardgate.workflows ADD COLUMN IF NOT EXISTS runner_started_at timestamptz;
ALTER TABLE shardgate.workflows ADD COLUMN IF NOT EXISTS runner_heartbeat_at timestamptz`

// RunnerInfo is the process that runs (or last ran) a workflow, as it
// records itself in main.
type RunnerInfo struct {
	Host        string     `json:"host,omitempty"`
	PID         int        `json:"pid,omitempty"`
	StartedAt   *time.Time `json:"started_at,omitempty"`
	HeartbeatAt *time.Time `json:"heartbeat_at,omitempty"`
	// HeartbeatAge is the seconds since the last heartbeat, by main's clock.
	HeartbeatAge float64 `json:"heartbeat_age_seconds"`
	// Locked: some process holds the workflow's lock in main.
	Locked bool `json:"locked"`
	// Reporting: the lock is held and the heartbeat is within
	// RunnerStaleAfter; the progress recorded in main is current.
	Reporting bool `json:"reporting"`
}

// beatRunner records this process as the workflow's runner and beats its
// heartbeat every heartbeatEvery, on a connection of its own (the store's
// one connection serves the run), until the function returned is called.
func (s *Store) beatRunner(ctx context.Context, id int64) (stop func(), err error) {
	host, _ := os.Hostname()
	c, err := pgx.Connect(ctx, s.dsn)
	if err != nil {
		return nil, fmt.Errorf("record the runner: %w", err)
	}
	if _, err := c.Exec(ctx, `UPDATE shardgate.workflows SET runner_host = $2, runner_pid = $3, runner_started_at = now(), runner_heartbeat_at = now()
		WHERE id = $1`, id, host, os.Getpid()); err != nil {
		c.Close(context.Background())
		return nil, fmt.Errorf("record the runner: %w", err)
	}
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		defer func() { c.Close(context.Background()) }()
		tick := time.NewTicker(heartbeatEvery)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			bctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if c.IsClosed() {
				if nc, err := pgx.Connect(bctx, s.dsn); err == nil {
					c = nc
				}
			}
			_, _ = c.Exec(bctx, `UPDATE shardgate.workflows SET runner_heartbeat_at = now() WHERE id = $1 AND runner_host = $2 AND runner_pid = $3`,
				id, host, os.Getpid())
			cancel()
		}
	}()
	return func() { close(done); <-stopped }, nil
}

// runner reads the workflow's runner record and whether it reports.
// s.mu is held.
func (s *Store) runner(ctx context.Context, id int64) (*RunnerInfo, error) {
	ri := &RunnerInfo{}
	var age *float64
	err := s.conn.QueryRow(ctx, `SELECT runner_host, runner_pid, runner_started_at, runner_heartbeat_at,
			extract(epoch FROM now() - runner_heartbeat_at)::float8,
			EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted AND classid = $2 AND objid = $3
				AND database = (SELECT oid FROM pg_database WHERE datname = current_database()))
		FROM shardgate.workflows WHERE id = $1`, id, uint32(lockClass), uint32(id)).
		Scan(&ri.Host, &ri.PID, &ri.StartedAt, &ri.HeartbeatAt, &age, &ri.Locked)
	if err != nil {
		return nil, err
	}
	if age != nil {
		ri.HeartbeatAge = *age
	}
	ri.Reporting = ri.Locked && age != nil && *age <= RunnerStaleAfter.Seconds()
	return ri, nil
}

// Text is one line naming the runner, or saying that none reports.
func (ri *RunnerInfo) Text() string {
	switch {
	case ri.HeartbeatAt == nil:
		return "no runner has run it yet"
	case ri.Reporting:
		return fmt.Sprintf("runner %s pid %d, started %s, heartbeat %.1f s ago", ri.Host, ri.PID, ri.StartedAt.Format(time.RFC3339), ri.HeartbeatAge)
	default:
		return fmt.Sprintf("no runner since %s (last: %s pid %d, heartbeat %.0f s ago)", ri.HeartbeatAt.Format(time.RFC3339), ri.Host, ri.PID, ri.HeartbeatAge)
	}
}

// slotLag reads a stream's lag from its slot on the source: the slot's
// confirmed flush position against the source's current WAL position.
// It is what status shows when no runner reports.
func slotLag(ctx context.Context, dsn string, st *StreamStatus) error {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c, err := pgx.Connect(cctx, dsn)
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	var confirmed *string
	var lag *int64
	if err := c.QueryRow(cctx, `SELECT pg_current_wal_lsn()::text, (SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = $1),
			(SELECT (pg_current_wal_lsn() - confirmed_flush_lsn)::bigint FROM pg_replication_slots WHERE slot_name = $1)`, st.Slot).
		Scan(&st.SourceLSN, &confirmed, &lag); err != nil {
		return err
	}
	if confirmed == nil {
		return fmt.Errorf("slot %s does not exist on the source", st.Slot)
	}
	st.SlotLSN, st.LagBytes, st.FromSlot = *confirmed, max(*lag, 0), true
	st.LagSeconds = -1
	return nil
}
