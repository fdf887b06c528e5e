package workflows

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Status is a workflow's progress as main records it.
type Status struct {
	*Workflow
	Tables  []TableStatus  `json:"tables"`
	Streams []StreamStatus `json:"streams"`
}

// TableStatus is the copy progress of one table from one source.
type TableStatus struct {
	Source     string `json:"source"`
	Table      string `json:"table"`
	RowsCopied int64  `json:"rows_copied"`
	RowsTotal  int64  `json:"rows_total"` // counted under the copy snapshot when the copy starts
	Done       bool   `json:"done"`
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
}

// Status reads a workflow's record and progress.
func (s *Store) Status(ctx context.Context, id int64) (*Status, error) {
	w, err := s.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	st := &Status{Workflow: w}
	s.mu.Lock()
	defer s.mu.Unlock()
	rows, err := s.conn.Query(ctx, `SELECT source, table_name, rows_copied, rows_total, done FROM shardgate.workflow_tables
		WHERE workflow_id = $1 ORDER BY table_name, source`, id)
	if err != nil {
		return nil, err
	}
	if st.Tables, err = pgx.CollectRows(rows, pgx.RowToStructByPos[TableStatus]); err != nil {
		return nil, err
	}
	rows, err = s.conn.Query(ctx, `SELECT source, slot, coalesce(start_lsn::text, ''), coalesce(applied_lsn::text, ''), coalesce(source_lsn::text, ''),
			coalesce((source_lsn - applied_lsn)::bigint, 0), applied_at
		FROM shardgate.workflow_streams WHERE workflow_id = $1 ORDER BY source`, id)
	if err != nil {
		return nil, err
	}
	st.Streams, err = pgx.CollectRows(rows, pgx.RowToStructByPos[StreamStatus])
	return st, err
}

// Text renders the status for a terminal.
func (st *Status) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "workflow %d (%s of group %s): %s\n", st.ID, st.Kind, st.Spec.Group, st.Phase)
	if st.Error != "" {
		fmt.Fprintf(&b, "error: %s\n", st.Error)
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
		fmt.Fprintf(&b, "  table %-24s from %-8s %s %5.1f%%  %d/%d rows  %s\n", t.Table, t.Source, bar(pct), pct, t.RowsCopied, t.RowsTotal, state)
	}
	for _, s := range st.Streams {
		fmt.Fprintf(&b, "  stream from %-8s slot %s applied %s, source at %s, lag %d bytes\n", s.Source, s.Slot,
			orDash(s.AppliedLSN), orDash(s.SourceLSN), s.LagBytes)
	}
	return b.String()
}

func bar(pct float64) string {
	n := int(pct / 5)
	return "[" + strings.Repeat("#", n) + strings.Repeat(".", 20-n) + "]"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
