package verify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/shardgate/shardgate/internal/schemalock"
	"github.com/shardgate/shardgate/sqlerr"
)

// mainSchema is created on the main group's cluster: one row per run, one
// per unit of a run, written after each chunk.
const mainSchema = schemalock.Prefix + `CREATE SCHEMA IF NOT EXISTS shardgate;
CREATE TABLE IF NOT EXISTS shardgate.verify_runs (
	id bigserial PRIMARY KEY,
	scope text NOT NULL,
	repair boolean NOT NULL,
	status text NOT NULL DEFAULT 'running',
	last_error text NOT NULL DEFAULT '',
	started_at timestamptz NOT NULL DEFAULT now(),
	updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS shardgate.verify_units (
	run_id bigint NOT NULL REFERENCES shardgate.verify_runs ON DELETE CASCADE,
	name text NOT NULL,
	position text[],
	done boolean NOT NULL DEFAULT false,
	rows bigint NOT NULL DEFAULT 0,
	found bigint NOT NULL DEFAULT 0,
	repaired bigint NOT NULL DEFAULT 0,
	samples jsonb NOT NULL DEFAULT '[]',
	seconds float8 NOT NULL DEFAULT 0,
	PRIMARY KEY (run_id, name)
)`

// Statuses of a run (shardgate.verify_runs.status).
const (
	StatusRunning = "running" // a process is at it, or was killed (its lock is gone)
	StatusError   = "error"   // stopped by an error or an interrupt: --resume continues it
	StatusDone    = "done"    // every unit checked
)

// lockSQL is the one lock of every verify, held by the main connection: a
// second verify is refused while one runs; a killed one releases it.
const lockSQL = "SELECT pg_try_advisory_lock(hashtext('shardgate.verify'), 0)"

// store is a run's record in main.
type store struct {
	main *pgx.Conn
	run  int64
}

// open creates the tables, takes the lock and starts a run, or, resume,
// continues the last one of the scope not done (its units' positions and
// findings loaded into units).
func openStore(ctx context.Context, main *pgx.Conn, scope string, repair, resume bool, units []*Unit) (*store, error) {
	if _, err := main.Exec(ctx, mainSchema); err != nil {
		return nil, fmt.Errorf("create shardgate.verify_runs on main: %w", err)
	}
	var got bool
	if err := main.QueryRow(ctx, lockSQL).Scan(&got); err != nil {
		return nil, err
	}
	if !got {
		return nil, sqlerr.New(sqlerr.LockNotAvailable, "another verify is running")
	}
	s := &store{main: main}
	if !resume {
		return s, main.QueryRow(ctx, "INSERT INTO shardgate.verify_runs (scope, repair) VALUES ($1, $2) RETURNING id", scope, repair).Scan(&s.run)
	}
	var status string
	err := main.QueryRow(ctx, "SELECT id, status FROM shardgate.verify_runs WHERE scope = $1 AND repair = $2 ORDER BY id DESC LIMIT 1",
		scope, repair).Scan(&s.run, &status)
	if errors.Is(err, pgx.ErrNoRows) || status == StatusDone {
		return nil, sqlerr.New(sqlerr.ObjectNotInPrerequisiteState, "no unfinished verify of %s to resume", scopeText(scope, repair)).
			WithHint("Run it without --resume.")
	}
	if err != nil {
		return nil, err
	}
	byName := map[string]*Unit{}
	for _, u := range units {
		byName[u.Name] = u
	}
	rows, err := main.Query(ctx, "SELECT name, position, done, rows, found, repaired, samples, seconds FROM shardgate.verify_units WHERE run_id = $1", s.run)
	if err != nil {
		return nil, err
	}
	var name string
	var r Unit
	var samples []byte
	if _, err := pgx.ForEachRow(rows, []any{&name, &r.Position, &r.Done, &r.Rows, &r.Found, &r.Repaired, &samples, &r.Seconds}, func() error {
		u := byName[name]
		if u == nil {
			return nil // the topology no longer has it
		}
		u.Position, u.Done, u.Rows, u.Found, u.Repaired, u.Seconds = r.Position, r.Done, r.Rows, r.Found, r.Repaired, r.Seconds
		u.Samples = nil
		return json.Unmarshal(samples, &u.Samples)
	}); err != nil {
		return nil, err
	}
	_, err = main.Exec(ctx, "UPDATE shardgate.verify_runs SET status = $2, last_error = '', updated_at = now() WHERE id = $1", s.run, StatusRunning)
	return s, err
}

func scopeText(scope string, repair bool) string {
	if repair {
		return scope + " with --repair"
	}
	return scope
}

// save records a unit's progress.
func (s *store) save(ctx context.Context, u *Unit) error {
	samples, err := json.Marshal(u.Samples)
	if err != nil {
		return err
	}
	_, err = s.main.Exec(ctx, `INSERT INTO shardgate.verify_units (run_id, name, position, done, rows, found, repaired, samples, seconds)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
		ON CONFLICT (run_id, name) DO UPDATE SET position = $3, done = $4, rows = $5, found = $6, repaired = $7, samples = $8, seconds = $9`,
		s.run, u.Name, u.Position, u.Done, u.Rows, u.Found, u.Repaired, samples, u.Seconds)
	if err == nil {
		_, err = s.main.Exec(ctx, "UPDATE shardgate.verify_runs SET updated_at = now() WHERE id = $1", s.run)
	}
	return err
}

// finish records the run's end.
func (s *store) finish(ctx context.Context, runErr error) error {
	status, msg := StatusDone, ""
	if runErr != nil {
		status, msg = StatusError, runErr.Error()
	}
	_, err := s.main.Exec(ctx, "UPDATE shardgate.verify_runs SET status = $2, last_error = $3, updated_at = now() WHERE id = $1", s.run, status, msg)
	return err
}
