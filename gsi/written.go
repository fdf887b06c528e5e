package gsi

import (
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/shardgate/shardgate/planner"
	"github.com/shardgate/shardgate/vschema"
)

// Inserted is the lookup-table work of rows another executor inserts in
// statements of its own (package xwrite's batches of an INSERT ...
// SELECT): each statement's RETURNING is extended by the owner's key and
// each index's value (Suffix, Formats), the rows it returns are split
// into the client's columns and the added ones (Split), and the entries
// of the rows collected are written on the transaction's connections
// (Maintain) before the statement's answer completes.
type Inserted struct {
	owner *vschema.Table
	extra int
	cols  string
	rows  []row
}

// NewInserted returns the work of an INSERT into t (named alias in the
// statement), or nil when t has no secondary index.
func NewInserted(t *vschema.Table, alias string) *Inserted {
	if t == nil || len(t.SecondaryIndexes) == 0 {
		return nil
	}
	extra, cols := returning(t, alias)
	return &Inserted{owner: t, extra: extra, cols: cols}
}

// Suffix is what to append to the statement after its own ON CONFLICT
// and RETURNING clauses (returns: it has a RETURNING list).
func (in *Inserted) Suffix(returns bool) string {
	if returns {
		return ", " + in.cols
	}
	return " RETURNING " + in.cols
}

// Formats are the result formats of the extended statement: the client's
// (formats) for its own columns, text for the added ones. own tells the
// number of the statement's own RETURNING columns, needed for one format
// for all that is binary.
func (in *Inserted) Formats(returns bool, formats []int16, own func() (int, error)) ([]int16, error) {
	return addedFormats(formats, returns, in.extra, own)
}

// Split keeps the added columns of a returned row for Maintain and
// returns the client's DataRow of it.
func (in *Inserted) Split(values [][]byte) *pgproto3.DataRow {
	in.rows = append(in.rows, row{stmtRow: -1, values: values})
	return &pgproto3.DataRow{Values: values[:len(values)-in.extra]}
}

// Maintain writes the entries of the rows split since the last call.
func (in *Inserted) Maintain(s Session) error {
	rows := in.rows
	in.rows = nil
	return maintain(s, in.owner, planner.GSIInsert, rows, in.extra)
}
