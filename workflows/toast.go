package workflows

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"

	"github.com/shardgate/shardgate/sqlerr"
)

// Unchanged TOASTed values. pgoutput does not send a TOASTed value an
// UPDATE left as it was (the 'u' marker). An update that keeps its row on
// its target updates the other columns in place. One that moves the row
// (a shard key change) must insert the whole row elsewhere; the value is
// then taken, in this order, from the old tuple (REPLICA IDENTITY FULL
// sends it), from an earlier change of the same source transaction that
// sent it, or from the row on the target it moves from, as it was before
// the transaction: that target has applied every earlier transaction of
// the source (the pending ones are applied first) and none after.

// rowState is what the open source transaction has made of a row so far.
type rowState struct {
	orig [][]byte                     // primary key before the transaction
	cols []*pglogrepl.TupleDataColumn // nil: not known in this transaction
}

func rowKey(rel *relInfo, pk [][]byte) string {
	return rel.name + "\x00" + string(bytes.Join(pk, []byte{0}))
}

// remember records the values a change of the open transaction gave a
// row (t nil: deleted), moving its state from its old primary key.
func (a *applier) remember(rel *relInfo, oldPK [][]byte, t *pglogrepl.TupleData) {
	old := rowKey(rel, oldPK)
	st := a.rows[old]
	delete(a.rows, old)
	if t == nil {
		return
	}
	if st == nil {
		st = &rowState{orig: oldPK, cols: make([]*pglogrepl.TupleDataColumn, len(t.Columns))}
	}
	for i, c := range t.Columns {
		if c.DataType != pglogrepl.TupleDataTypeToast && i < len(st.cols) {
			st.cols[i] = &pglogrepl.TupleDataColumn{DataType: c.DataType, Data: bytes.Clone(c.Data)}
		}
	}
	a.rows[rowKey(rel, rel.pk(t))] = st
}

// fillUnchanged returns the update's new tuple with its unchanged TOASTed
// values filled in, and whether any is still unknown.
func (a *applier) fillUnchanged(rel *relInfo, m *pglogrepl.UpdateMessage, oldPK [][]byte) (*pglogrepl.TupleData, bool) {
	st := a.rows[rowKey(rel, oldPK)]
	out := &pglogrepl.TupleData{Columns: make([]*pglogrepl.TupleDataColumn, len(m.NewTuple.Columns))}
	missing := false
	for i, c := range m.NewTuple.Columns {
		out.Columns[i] = c
		if c.DataType != pglogrepl.TupleDataTypeToast {
			continue
		}
		switch {
		case m.OldTuple != nil && m.OldTuple.Columns[i].DataType != pglogrepl.TupleDataTypeToast:
			out.Columns[i] = m.OldTuple.Columns[i]
		case st != nil && st.cols[i] != nil:
			out.Columns[i] = st.cols[i]
		default:
			missing = true
		}
	}
	return out, missing
}

// fetchUnchanged fills the values still unknown from the row before the
// transaction, read on the targets it may be on (from) where the open
// transaction applies to it. Not found there, the row's new place must
// not take the change either: else the move is refused (0A000).
func (a *applier) fetchUnchanged(rel *relInfo, from, to []int, oldPK [][]byte, t *pglogrepl.TupleData) error {
	if st := a.rows[rowKey(rel, oldPK)]; st != nil {
		oldPK = st.orig
	}
	var cols []string
	var idx []int
	for i, c := range t.Columns {
		if c.DataType == pglogrepl.TupleDataTypeToast {
			cols = append(cols, ident(rel.cols[i])+"::text")
			idx = append(idx, i)
		}
	}
	if _, err := a.flush(a.ctx); err != nil {
		return err
	}
	for _, i := range from {
		if ok, err := a.rowApplies(rel, i, oldPK); err != nil || !ok {
			if err != nil {
				return err
			}
			continue
		}
		vals := make([]*string, len(cols))
		dest := make([]any, len(cols))
		for j := range vals {
			dest[j] = &vals[j]
		}
		err := a.targets[i].QueryRow(a.ctx, fmt.Sprintf("SELECT %s FROM %s WHERE %s", strings.Join(cols, ", "), rel.name, rel.pkCond), textArgs(oldPK)...).Scan(dest...)
		if err == pgx.ErrNoRows {
			continue
		}
		if err != nil {
			return fmt.Errorf("target %s: read the unchanged values of a row of %s: %w", a.r.plan.Targets[i].Name, rel.tp.Name, err)
		}
		for j, ix := range idx {
			c := &pglogrepl.TupleDataColumn{DataType: pglogrepl.TupleDataTypeNull}
			if vals[j] != nil {
				c = &pglogrepl.TupleDataColumn{DataType: pglogrepl.TupleDataTypeText, Data: []byte(*vals[j])}
			}
			t.Columns[ix] = c
		}
		return nil
	}
	for _, i := range to {
		if ok, err := a.rowApplies(rel, i, rel.pk(t)); err != nil || ok {
			if err != nil {
				return err
			}
			return sqlerr.New(sqlerr.FeatureNotSupported, "an UPDATE of %s moved a row whose unchanged TOASTed values were not sent, and the row is not on the target it moved from", rel.tp.Name).
				WithHint("Set REPLICA IDENTITY FULL on the source table, cancel the workflow and create it again.")
		}
	}
	return nil
}

// rowApplies says whether the open transaction changes the row with
// primary key pk on target i: not if the target applied the transaction
// already, else as its copy cycles say (cycles.go), the bound compared by
// the target.
func (a *applier) rowApplies(rel *relInfo, i int, pk [][]byte) (bool, error) {
	if a.applied[i] > a.final {
		return false, nil
	}
	skip, upto := a.cycles[i][rel.tp.Name.String()].bound(a.xid)
	if skip || upto == nil {
		return !skip, nil
	}
	args := textArgs(pk)
	var ps, bs []string
	for j := range pk {
		ps = append(ps, fmt.Sprintf("$%d::text::%s", j+1, rel.pkTypes[j]))
	}
	for j, v := range upto {
		args = append(args, v)
		bs = append(bs, fmt.Sprintf("$%d::text::%s", len(args), rel.pkTypes[j]))
	}
	var ok bool
	err := a.targets[i].QueryRow(a.ctx, fmt.Sprintf("SELECT (%s) <= (%s)", strings.Join(ps, ", "), strings.Join(bs, ", ")), args...).Scan(&ok)
	return ok, err
}

func textArgs(vals [][]byte) []any {
	out := make([]any, len(vals))
	for i, v := range vals {
		out[i] = string(v)
	}
	return out
}
