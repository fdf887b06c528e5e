package workflows

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// vdiffSchema is created in main with mainSchema: the stop position each
// stream honours (vdiffstop.go) and the last vdiff of each workflow, its
// progress per table and target (last primary key compared, counts), so
// that an interrupted vdiff resumes.
const vdiffSchema = `ALTER TABLE shardgate.workflow_streams ADD COLUMN IF NOT EXISTS vdiff_stop pg_lsn;
ALTER TABLE shardgate.workflow_streams ADD COLUMN IF NOT EXISTS vdiff_stopped pg_lsn;
CREATE TABLE IF NOT EXISTS shardgate.workflow_vdiffs (
	workflow_id bigint PRIMARY KEY REFERENCES shardgate.workflows ON DELETE CASCADE,
	state text NOT NULL,
	error text NOT NULL DEFAULT '',
	positions jsonb NOT NULL DEFAULT '{}',
	runs int NOT NULL DEFAULT 1,
	started_at timestamptz NOT NULL DEFAULT now(),
	updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS shardgate.workflow_vdiff_tables (
	workflow_id bigint NOT NULL REFERENCES shardgate.workflows ON DELETE CASCADE,
	table_name text NOT NULL,
	target text NOT NULL,
	ord int NOT NULL,
	last_pk text[],
	done boolean NOT NULL DEFAULT false,
	matching bigint NOT NULL DEFAULT 0,
	missing bigint NOT NULL DEFAULT 0,
	extra bigint NOT NULL DEFAULT 0,
	mismatched bigint NOT NULL DEFAULT 0,
	samples text[] NOT NULL DEFAULT '{}',
	PRIMARY KEY (workflow_id, table_name, target)
)`

// States of a vdiff (VDiffReport.State).
const (
	VDiffRunning     = "running"
	VDiffDone        = "done"
	VDiffError       = "error"
	VDiffInterrupted = "interrupted" // recorded as running, but no process holds its lock: resume it
)

// VDiffReport is the last vdiff of a workflow: its result, or its
// progress while it runs or once interrupted.
type VDiffReport struct {
	State string `json:"state"`
	Error string `json:"error,omitempty"`
	// Positions are, per source cluster, the WAL position its stream was
	// stopped at and the source read at, by the last run (a resumed vdiff
	// compared its earlier chunks at its earlier runs' positions).
	Positions map[string]string `json:"positions"`
	Runs      int               `json:"runs"`
	StartedAt time.Time         `json:"started_at"`
	UpdatedAt time.Time         `json:"updated_at"`
	Tables    []TableDiff       `json:"tables"`
}

// Clean reports whether the vdiff is done and found no difference.
func (r *VDiffReport) Clean() bool {
	if r.State != VDiffDone {
		return false
	}
	for _, d := range r.Tables {
		if !d.Clean() {
			return false
		}
	}
	return true
}

// Summary is the report in one line: its state and the rows compared.
func (r *VDiffReport) Summary() string {
	var matching, differ int64
	done := 0
	for _, d := range r.Tables {
		matching += d.Matching
		differ += d.Missing + d.Extra + d.Mismatched
		if d.Done {
			done++
		}
	}
	return fmt.Sprintf("last vdiff %s at %s: %d/%d tables x targets compared, %d rows matching, %d differing",
		r.State, r.UpdatedAt.Format("2006-01-02 15:04:05"), done, len(r.Tables), matching, differ)
}

// Text renders the report, one line per table and target.
func (r *VDiffReport) Text() string {
	var b strings.Builder
	var pos []string
	for s, l := range r.Positions {
		pos = append(pos, s+" at "+l)
	}
	slices.Sort(pos)
	fmt.Fprintf(&b, "vdiff %s (run %d, started %s, updated %s; sources %s)\n", r.State, r.Runs,
		r.StartedAt.Format("2006-01-02 15:04:05"), r.UpdatedAt.Format("15:04:05"), strings.Join(pos, ", "))
	if r.Error != "" {
		fmt.Fprintf(&b, "  error: %s\n", r.Error)
	}
	for _, d := range r.Tables {
		b.WriteString("  " + d.Text() + "\n")
	}
	return b.String()
}

// Text renders one table's result on one target.
func (d TableDiff) Text() string {
	state := ""
	if !d.Done {
		state = " (compared up to " + orDash(strings.Join(d.LastPK, ",")) + ")"
	}
	return strings.TrimSpace(fmt.Sprintf("%s on %s: %d matching, %d missing, %d extra, %d mismatched%s %s",
		d.Table, d.Target, d.Matching, d.Missing, d.Extra, d.Mismatched, state, strings.Join(d.Samples, " ")))
}

// startVDiff records a new vdiff of the units (the previous one's rows
// replaced) or, with resume, continues the last one: its units come back
// with their progress. A resume of a vdiff that is done returns it as is.
func (s *Store) startVDiff(ctx context.Context, id int64, units []*TableDiff, resume bool) (done bool, err error) {
	s.mu.Lock()
	s.live(ctx)
	defer s.mu.Unlock()
	err = pgx.BeginFunc(ctx, s.conn, func(tx pgx.Tx) error {
		var state string
		err := tx.QueryRow(ctx, `SELECT state FROM shardgate.workflow_vdiffs WHERE workflow_id = $1 FOR UPDATE`, id).Scan(&state)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if resume && err == nil {
			rows, err := tx.Query(ctx, `SELECT table_name, target, last_pk, done, matching, missing, extra, mismatched, samples
				FROM shardgate.workflow_vdiff_tables WHERE workflow_id = $1`, id)
			if err != nil {
				return err
			}
			saved, err := pgx.CollectRows(rows, scanTableDiff)
			if err != nil {
				return err
			}
			found := 0
			for _, d := range saved {
				for _, u := range units {
					if u.Table == d.Table && u.Target == d.Target {
						*u = d
						found++
					}
				}
			}
			if found == len(units) {
				if state == VDiffDone {
					done = true
					return nil
				}
				_, err = tx.Exec(ctx, `UPDATE shardgate.workflow_vdiffs SET state = $2, error = '', runs = runs + 1, updated_at = now() WHERE workflow_id = $1`, id, VDiffRunning)
				return err
			}
			for _, u := range units { // another set of tables: start over
				*u = TableDiff{Table: u.Table, Target: u.Target}
			}
		}
		if _, err := tx.Exec(ctx, `DELETE FROM shardgate.workflow_vdiff_tables WHERE workflow_id = $1`, id); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO shardgate.workflow_vdiffs (workflow_id, state) VALUES ($1, $2)
			ON CONFLICT (workflow_id) DO UPDATE SET state = EXCLUDED.state, error = '', positions = '{}', runs = 1, started_at = now(), updated_at = now()`,
			id, VDiffRunning); err != nil {
			return err
		}
		for i, u := range units {
			if _, err := tx.Exec(ctx, `INSERT INTO shardgate.workflow_vdiff_tables (workflow_id, table_name, target, ord) VALUES ($1, $2, $3, $4)`,
				id, u.Table, u.Target, i); err != nil {
				return err
			}
		}
		return nil
	})
	return done, err
}

// vdiffPositions records the positions the sources are read at.
func (s *Store) vdiffPositions(ctx context.Context, id int64, held []*position) error {
	pos := map[string]string{}
	for _, h := range held {
		pos[h.source] = h.lsn.String()
	}
	data, err := json.Marshal(pos)
	if err != nil {
		return err
	}
	return s.exec(ctx, `UPDATE shardgate.workflow_vdiffs SET positions = $2, updated_at = now() WHERE workflow_id = $1`, id, data)
}

// vdiffProgress records a unit's progress after a chunk.
func (s *Store) vdiffProgress(ctx context.Context, id int64, d *TableDiff) error {
	samples := d.Samples
	if samples == nil {
		samples = []string{}
	}
	return s.exec(ctx, `WITH u AS (UPDATE shardgate.workflow_vdiff_tables SET last_pk = $4, done = $5, matching = $6, missing = $7, extra = $8,
			mismatched = $9, samples = $10 WHERE workflow_id = $1 AND table_name = $2 AND target = $3)
		UPDATE shardgate.workflow_vdiffs SET updated_at = now() WHERE workflow_id = $1`,
		id, d.Table, d.Target, d.LastPK, d.Done, d.Matching, d.Missing, d.Extra, d.Mismatched, samples)
}

// finishVDiff records the end of a vdiff run: done, interrupted, or the
// error that ended it. Resume continues either of the last two.
func (s *Store) finishVDiff(ctx context.Context, id int64, runErr error) error {
	state, text := VDiffDone, ""
	switch {
	case errors.Is(runErr, context.Canceled):
		state = VDiffInterrupted
	case runErr != nil:
		state, text = VDiffError, runErr.Error()
	}
	return s.exec(ctx, `UPDATE shardgate.workflow_vdiffs SET state = $2, error = $3, updated_at = now() WHERE workflow_id = $1`, id, state, text)
}

// LastVDiff returns the workflow's last vdiff (nil: none yet). One
// recorded as running whose process is gone is reported interrupted.
func (s *Store) LastVDiff(ctx context.Context, id int64) (*VDiffReport, error) {
	s.mu.Lock()
	s.live(ctx)
	defer s.mu.Unlock()
	r := &VDiffReport{}
	var locked bool
	err := s.conn.QueryRow(ctx, `SELECT state, error, positions, runs, started_at, updated_at,
			EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted AND classid = $2 AND objid = $3 AND objsubid = 2
				AND database = (SELECT oid FROM pg_database WHERE datname = current_database()))
		FROM shardgate.workflow_vdiffs WHERE workflow_id = $1`, id, uint32(vdiffLockClass), uint32(id)).
		Scan(&r.State, &r.Error, &r.Positions, &r.Runs, &r.StartedAt, &r.UpdatedAt, &locked)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if r.State == VDiffRunning && !locked {
		r.State = VDiffInterrupted
	}
	rows, err := s.conn.Query(ctx, `SELECT table_name, target, last_pk, done, matching, missing, extra, mismatched, samples
		FROM shardgate.workflow_vdiff_tables WHERE workflow_id = $1 ORDER BY ord`, id)
	if err != nil {
		return nil, err
	}
	r.Tables, err = pgx.CollectRows(rows, scanTableDiff)
	return r, err
}

func scanTableDiff(row pgx.CollectableRow) (TableDiff, error) {
	var d TableDiff
	err := row.Scan(&d.Table, &d.Target, &d.LastPK, &d.Done, &d.Matching, &d.Missing, &d.Extra, &d.Mismatched, &d.Samples)
	return d, err
}
