package gsi

import (
	"context"
	"fmt"
	"time"

	"github.com/shardgate/shardgate/internal/schemalock"

	"github.com/jackc/pgx/v5"
)

// Phases of a backfill, per owner cluster (shardgate.gsi_backfills.phase).
const (
	PhaseCopying    = "copying"    // batches being copied from this owner cluster
	PhaseCopied     = "copied"     // every batch of this owner cluster copied
	PhaseVerifying  = "verifying"  // the whole index is being verified
	PhaseVerified   = "verified"   // verified equal to its owner table: ready to be active
	PhaseDuplicates = "duplicates" // a unique index whose owner rows repeat a value
	PhaseActive     = "active"     // flipped to active through the routing state
	PhaseError      = "error"      // stopped by an error (last_error); a new run resumes
)

// mainSchema is created on the main group's cluster: one row per index and
// owner cluster, written after each batch.
const mainSchema = schemalock.Prefix + `CREATE SCHEMA IF NOT EXISTS shardgate;
CREATE TABLE IF NOT EXISTS shardgate.gsi_backfills (
	index_name text NOT NULL,
	owner text NOT NULL,
	phase text NOT NULL DEFAULT 'copying',
	last_key text[],
	rows_done bigint NOT NULL DEFAULT 0,
	rows_estimate bigint NOT NULL DEFAULT 0,
	batches bigint NOT NULL DEFAULT 0,
	run_started_at timestamptz,
	run_started_rows bigint NOT NULL DEFAULT 0,
	started_at timestamptz NOT NULL DEFAULT now(),
	updated_at timestamptz NOT NULL DEFAULT now(),
	last_error text NOT NULL DEFAULT '',
	duplicates text[] NOT NULL DEFAULT '{}',
	PRIMARY KEY (index_name, owner)
)`

// targetSchema is created on every lookup cluster: its position per owner
// cluster, committed in the same transaction as a batch's entries, so a
// batch is never written twice to one lookup cluster.
const targetSchema = schemalock.Prefix + `CREATE SCHEMA IF NOT EXISTS shardgate;
CREATE TABLE IF NOT EXISTS shardgate.gsi_backfill_target (
	index_name text NOT NULL,
	owner text NOT NULL,
	last_key text[],
	rows bigint NOT NULL DEFAULT 0,
	batches bigint NOT NULL DEFAULT 0,
	PRIMARY KEY (index_name, owner)
)`

// OwnerStatus is one owner cluster's backfill progress as main records it.
type OwnerStatus struct {
	Index        string    `json:"index"`
	Owner        string    `json:"owner"`
	Phase        string    `json:"phase"`
	LastKey      []string  `json:"last_key"`
	RowsDone     int64     `json:"rows_done"`
	RowsEstimate int64     `json:"rows_estimate"`
	Batches      int64     `json:"batches"`
	StartedAt    time.Time `json:"started_at"`
	UpdatedAt    time.Time `json:"updated_at"`
	LastError    string    `json:"last_error,omitempty"`
	Duplicates   []string  `json:"duplicates,omitempty"`
	// RowsPerSec is the rate of the current (or last) run.
	RowsPerSec float64 `json:"rows_per_sec"`
	// ETASeconds is the time left at that rate (-1: unknown, 0: done).
	ETASeconds float64 `json:"eta_seconds"`
}

// StatusSQL reads every backfill's rows with their rate and ETA, in the
// order of OwnerStatus's fields; the admin console runs it too.
const StatusSQL = `SELECT index_name, owner, phase, coalesce(last_key, '{}'), rows_done, rows_estimate, batches,
	started_at, updated_at, last_error, duplicates, rate,
	CASE WHEN phase <> 'copying' THEN 0 WHEN rate > 0 THEN greatest(rows_estimate - rows_done, 0) / rate ELSE -1 END
FROM (SELECT *, coalesce((rows_done - run_started_rows) / nullif(extract(epoch FROM updated_at - run_started_at), 0), 0)::float8 AS rate
	FROM shardgate.gsi_backfills) b`

// Status reads the backfill records of one index ("" for every index),
// by index and owner cluster. None if no backfill ever ran.
func Status(ctx context.Context, mainConn *pgx.Conn, index string) ([]OwnerStatus, error) {
	var exists bool
	if err := mainConn.QueryRow(ctx, "SELECT to_regclass('shardgate.gsi_backfills') IS NOT NULL").Scan(&exists); err != nil || !exists {
		return nil, err
	}
	rows, err := mainConn.Query(ctx, StatusSQL+` WHERE $1 = '' OR index_name = $1 ORDER BY index_name, owner`, index)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[OwnerStatus])
}

// IndexPhase sums up the phases of an index's owner clusters: error or
// duplicates if any has it, else the least advanced.
func IndexPhase(st []OwnerStatus) string {
	order := []string{PhaseError, PhaseDuplicates, PhaseCopying, PhaseCopied, PhaseVerifying, PhaseVerified, PhaseActive}
	best := len(order)
	for _, s := range st {
		for i, p := range order {
			if p == s.Phase && i < best {
				best = i
			}
		}
	}
	if best == len(order) {
		return ""
	}
	return order[best]
}

// Text renders an index's status for a terminal; bar draws a percentage.
func Text(st []OwnerStatus, bar func(pct float64) string) string {
	var out string
	for _, s := range st {
		pct := 100.0
		if s.Phase == PhaseCopying || s.Phase == PhaseError {
			pct = 0
			if s.RowsEstimate > 0 {
				pct = min(100*float64(s.RowsDone)/float64(s.RowsEstimate), 100)
			}
		}
		rate := ""
		if s.Phase == PhaseCopying && s.RowsPerSec > 0 {
			rate = fmt.Sprintf("  %.0f rows/s, ETA %s", s.RowsPerSec, (time.Duration(s.ETASeconds) * time.Second).String())
		}
		out += fmt.Sprintf("  %s from %-8s %s %5.1f%%  %d/%d rows  %d batches  %s%s\n", s.Index, s.Owner, bar(pct), pct,
			s.RowsDone, s.RowsEstimate, s.Batches, s.Phase, rate)
		if s.LastError != "" {
			out += "    error: " + s.LastError + "\n"
		}
		for _, d := range s.Duplicates {
			out += "    duplicate: " + d + "\n"
		}
	}
	return out
}
