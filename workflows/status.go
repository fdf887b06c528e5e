package workflows

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Status is a workflow's progress as main records it.
type Status struct {
	*Workflow
	Tables  []TableStatus  `json:"tables"`
	Streams []StreamStatus `json:"streams"`
	// Switches are the workflow's switches and reverses of traffic.
	Switches []*SwitchRecord `json:"switches"`
	// VDiff is the workflow's last vdiff, nil if none ran.
	VDiff *VDiffReport `json:"vdiff,omitempty"`
	// Runner is the process that runs (or last ran) the workflow.
	Runner *RunnerInfo `json:"runner"`
	// Retry is the retry its runner waits for after a transient error.
	Retry *Retry `json:"retry,omitempty"`
}

// TableStatus is the copy progress of one table from one source.
type TableStatus struct {
	Source     string `json:"source"`
	Table      string `json:"table"`
	RowsCopied int64  `json:"rows_copied"`
	RowsTotal  int64  `json:"rows_total"` // counted under the copy snapshot when the copy starts
	Done       bool   `json:"done"`
	// RowsPerSec is the copy rate of the current (or last) run: rows
	// copied since it started copying the table over the time since.
	RowsPerSec float64 `json:"rows_per_sec"`
	// ETASeconds is the time left at that rate (-1: unknown).
	ETASeconds float64 `json:"eta_seconds"`
}

// StreamStatus is one source's stream: its slot, the LSN applied on every
// target, the source's WAL position last seen, and the difference.
type StreamStatus struct {
	Source     string     `json:"source"`
	Slot       string     `json:"slot"`
	StartLSN   string     `json:"start_lsn,omitempty"`
	AppliedLSN string     `json:"applied_lsn,omitempty"`
	SourceLSN  string     `json:"source_lsn,omitempty"`
	LagBytes   int64      `json:"lag_bytes"`
	AppliedAt  *time.Time `json:"applied_at,omitempty"`
	// CommitTime is the source commit time of the last transaction applied.
	CommitTime *time.Time `json:"commit_time,omitempty"`
	// LagSeconds is 0 when everything the source wrote is applied, else
	// the time between the commit of the last transaction applied on the
	// source and its application; -1 (unknown) when read from the slot.
	LagSeconds float64 `json:"lag_seconds"`
	// FromSlot: no runner reports, so SourceLSN and LagBytes were read
	// from the source just now: its WAL position against the slot's
	// confirmed flush position (SlotLSN).
	FromSlot bool   `json:"from_slot,omitempty" db:"-"`
	SlotLSN  string `json:"slot_lsn,omitempty" db:"-"`
}

// Status reads a workflow's record and progress.
func (s *Store) Status(ctx context.Context, id int64) (*Status, error) {
	w, err := s.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	st := &Status{Workflow: w}
	if st.Switches, err = s.Switches(ctx, id); err != nil {
		return nil, err
	}
	if st.VDiff, err = s.LastVDiff(ctx, id); err != nil {
		return nil, err
	}
	if err := s.progress(ctx, st); err != nil {
		return nil, err
	}
	st.servingStreams(ctx)
	return st, nil
}

// progress reads the tables' and streams' progress and the runner.
func (s *Store) progress(ctx context.Context, st *Status) (err error) {
	id := st.ID
	s.mu.Lock()
	s.live(ctx)
	defer s.mu.Unlock()
	rows, err := s.conn.Query(ctx, `SELECT source, table_name, rows_copied, rows_total, done, rate,
			CASE WHEN done THEN 0 WHEN rate > 0 THEN greatest(rows_total - rows_copied, 0) / rate ELSE -1 END
		FROM (SELECT *, coalesce((rows_copied - copy_started_rows) / nullif(extract(epoch FROM updated_at - copy_started_at), 0), 0)::float8 AS rate
			FROM shardgate.workflow_tables WHERE workflow_id = $1) t
		ORDER BY table_name, source`, id)
	if err != nil {
		return err
	}
	if st.Tables, err = pgx.CollectRows(rows, pgx.RowToStructByPos[TableStatus]); err != nil {
		return err
	}
	rows, err = s.conn.Query(ctx, `SELECT source, slot, coalesce(start_lsn::text, ''), coalesce(applied_lsn::text, ''), coalesce(source_lsn::text, ''),
			coalesce((source_lsn - applied_lsn)::bigint, 0), applied_at, commit_time,
			CASE WHEN source_lsn <= applied_lsn THEN 0 ELSE coalesce(greatest(extract(epoch FROM applied_at - commit_time), 0), 0) END::float8
		FROM shardgate.workflow_streams WHERE workflow_id = $1 ORDER BY source`, id)
	if err != nil {
		return err
	}
	if st.Streams, err = pgx.CollectRows(rows, pgx.RowToStructByPos[StreamStatus]); err != nil {
		return err
	}
	if st.Runner, err = s.runner(ctx, id); err != nil {
		return err
	}
	st.Retry, err = s.retry(ctx, id)
	return err
}

// servingStreams keeps the streams of the side that serves the traffic
// (after a switch the old direction's streams no longer run: their last
// figures are not the lag), none once the workflow is over; when no
// runner reports (or it has not reported a stream since it started),
// the stream's lag is read from its slot on the source.
func (st *Status) servingStreams(ctx context.Context) {
	if st.Phase == PhaseCompleted || st.Phase == PhaseCancelled {
		st.Streams = nil
		return
	}
	p, err := NewPlan(st.Spec)
	if err != nil {
		return // the streams are listed as recorded
	}
	dsn := map[string]string{}
	for _, src := range p.serving(st.Traffic).Sources {
		dsn[src.Cluster] = src.DSN
	}
	st.Streams = slices.DeleteFunc(st.Streams, func(s StreamStatus) bool { return dsn[s.Source] == "" })
	for i, s := range st.Streams {
		// The runner's figures count once it reports and has recorded
		// this stream's progress itself (a fresh runner's row holds the
		// figures of the last run until its first report).
		if st.Runner.Reporting && s.AppliedAt != nil && st.Runner.StartedAt != nil && !s.AppliedAt.Before(*st.Runner.StartedAt) {
			continue
		}
		// A slot not created yet, or a source out of reach: the recorded
		// figures stay.
		_ = slotLag(ctx, dsn[s.Source], &st.Streams[i])
	}
}

// Text renders the status for a terminal.
func (st *Status) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "workflow %d (%s of group %s): %s, traffic on the %ss\n", st.ID, st.Kind, st.Spec.Group, st.Phase, st.Traffic)
	if st.Error != "" {
		fmt.Fprintf(&b, "error: %s\n", st.Error)
	}
	if st.Runner != nil && st.Phase != PhaseCompleted && st.Phase != PhaseCancelled {
		b.WriteString("  " + st.Runner.Text() + "\n")
	}
	if st.Retry != nil {
		b.WriteString("  " + st.Retry.Text() + "\n")
	}
	for _, t := range st.Tables {
		pct := 0.0
		if t.RowsTotal > 0 {
			pct = 100 * float64(t.RowsCopied) / float64(t.RowsTotal)
		}
		state := "copying"
		if t.Done {
			state, pct = "copied", 100
		}
		rate := ""
		if !t.Done && t.RowsPerSec > 0 {
			rate = fmt.Sprintf("  %.0f rows/s, ETA %s", t.RowsPerSec, (time.Duration(t.ETASeconds) * time.Second).String())
		}
		fmt.Fprintf(&b, "  table %-24s from %-8s %s %5.1f%%  %d/%d rows  %s%s\n", t.Table, t.Source, Bar(pct), pct, t.RowsCopied, t.RowsTotal, state, rate)
	}
	for _, s := range st.Streams {
		if s.FromSlot {
			why := "no runner reports"
			if st.Runner != nil && st.Runner.Reporting {
				why = "not reported since the runner started"
			}
			fmt.Fprintf(&b, "  stream from %-8s slot %s applied %s (last recorded), slot confirmed %s, source at %s, lag %d bytes (read from the slot: %s)\n",
				s.Source, s.Slot, orDash(s.AppliedLSN), orDash(s.SlotLSN), orDash(s.SourceLSN), s.LagBytes, why)
			continue
		}
		fmt.Fprintf(&b, "  stream from %-8s slot %s applied %s, source at %s, lag %d bytes, %.1f s\n", s.Source, s.Slot,
			orDash(s.AppliedLSN), orDash(s.SourceLSN), s.LagBytes, s.LagSeconds)
	}
	for _, sw := range st.Switches {
		b.WriteString("  " + sw.Text())
	}
	if st.VDiff != nil {
		b.WriteString("  " + st.VDiff.Summary() + "\n")
	}
	return b.String()
}

// Bar draws a percentage as a 20-character progress bar.
func Bar(pct float64) string {
	n := min(max(int(pct/5), 0), 20)
	return "[" + strings.Repeat("#", n) + strings.Repeat(".", 20-n) + "]"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
