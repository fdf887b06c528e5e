package workflows

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Copy cycles. A table's rows are copied in primary-key chunks, each under
// the snapshot of its copy cycle: the slot's exported snapshot first, then
// a new snapshot per cycle (a cycle lasts at most Spec.SnapshotMax) and
// per resumed run. Each target records, in the same transaction as a
// chunk's rows, which snapshot its chunks up to which primary key were
// copied under (shardgate.workflow_target_cycles).
//
// A streamed transaction with xid x must then reach exactly the rows whose
// copy did not see it. Snapshots only grow: once x is visible in a cycle's
// snapshot it is visible in every later one. So x applies to the rows up to
// the upper bound of the last cycle whose snapshot does not see it, and to
// none if the first one does. Between cycles the stream catches up, but
// only with transactions the next cycle's snapshot sees (a gate): their
// changes to rows not copied yet are then in that copy, so skipping them
// is exact; the first transaction it does not see ends the catch-up, and
// it is streamed again later.

// snapshot is a Postgres MVCC snapshot as pg_current_snapshot() prints it
// (xmin:xmax:xip,...), with full (epoch-extended) transaction ids.
type snapshot struct {
	xmin, xmax uint64
	xip        []uint64
}

func parseSnapshot(text string) (snapshot, error) {
	parts := strings.Split(text, ":")
	if len(parts) != 3 {
		return snapshot{}, fmt.Errorf("bad snapshot %q", text)
	}
	var s snapshot
	var err error
	if s.xmin, err = strconv.ParseUint(parts[0], 10, 64); err != nil {
		return snapshot{}, fmt.Errorf("bad snapshot %q", text)
	}
	if s.xmax, err = strconv.ParseUint(parts[1], 10, 64); err != nil {
		return snapshot{}, fmt.Errorf("bad snapshot %q", text)
	}
	if parts[2] != "" {
		for _, x := range strings.Split(parts[2], ",") {
			v, err := strconv.ParseUint(x, 10, 64)
			if err != nil {
				return snapshot{}, fmt.Errorf("bad snapshot %q", text)
			}
			s.xip = append(s.xip, v)
		}
	}
	return s, nil
}

// visible says whether the transaction with 32-bit id xid (as pgoutput
// sends it) had committed for the snapshot. The id is extended with the
// epoch nearest the snapshot's xmax: decoded transactions are recent.
func (s snapshot) visible(xid uint32) bool {
	x := s.xmax&^0xffffffff | uint64(xid)
	switch {
	case x > s.xmax+1<<31:
		x -= 1 << 32
	case x+1<<31 < s.xmax:
		x += 1 << 32
	}
	return x < s.xmin || x < s.xmax && !slices.Contains(s.xip, x)
}

// cycle is the part of a table a target copied under one snapshot: its
// chunks up to upto (the whole rest of the table when done).
type cycle struct {
	snap snapshot
	upto []string
	done bool
}

// tableCycles are one target's cycles of one table, oldest first; done is
// the target's copy position (a copy recorded before cycles were: every
// change applies).
type tableCycles struct {
	cycles []cycle
	done   bool
}

// bound says which rows of the table on this target a transaction with
// id xid changes: none (skip), all (upto nil), or those with a primary key
// up to upto.
func (tc *tableCycles) bound(xid uint32) (skip bool, upto []string) {
	if tc == nil || len(tc.cycles) == 0 {
		return tc == nil || !tc.done, nil
	}
	m := slices.IndexFunc(tc.cycles, func(c cycle) bool { return c.snap.visible(xid) })
	if m < 0 {
		m = len(tc.cycles)
	}
	if m == 0 {
		return true, nil
	}
	if c := tc.cycles[m-1]; !c.done {
		return false, c.upto
	}
	return false, nil
}

// readCycles reads, per target, the copy cycles of every table a source
// sends it.
func (a *applier) readCycles(ctx context.Context) error {
	a.cycles = make([]map[string]*tableCycles, len(a.targets))
	for i, c := range a.targets {
		m := map[string]*tableCycles{}
		rows, err := c.Query(ctx, `SELECT t.table_name, t.done, c.snap, c.upto_pk, coalesce(c.done, false)
			FROM shardgate.workflow_target t LEFT JOIN shardgate.workflow_target_cycles c USING (workflow_id, source, table_name)
			WHERE t.workflow_id = $1 AND t.source = $2 AND t.table_name <> '' ORDER BY t.table_name, c.first_chunk`, a.r.id, a.source)
		if err != nil {
			return fmt.Errorf("target %s: %w", a.r.plan.Targets[i].Name, err)
		}
		var table string
		var done, cdone bool
		var snap *string
		var upto []string
		_, err = pgx.ForEachRow(rows, []any{&table, &done, &snap, &upto, &cdone}, func() error {
			tc := m[table]
			if tc == nil {
				tc = &tableCycles{done: done}
				m[table] = tc
			}
			if snap == nil {
				return nil
			}
			s, err := parseSnapshot(*snap)
			if err != nil {
				return err
			}
			tc.cycles = append(tc.cycles, cycle{snap: s, upto: slices.Clone(upto), done: cdone})
			return nil
		})
		if err != nil {
			return fmt.Errorf("target %s: %w", a.r.plan.Targets[i].Name, err)
		}
		a.cycles[i] = m
	}
	return nil
}

// recordCycle records, in a chunk's transaction, that the target copied
// the table's rows up to last (all of them when done) under snap.
func recordCycle(ctx context.Context, tx pgx.Tx, id int64, source, table, snap string, chunk int64, last []string, done bool) error {
	_, err := tx.Exec(ctx, `INSERT INTO shardgate.workflow_target_cycles (workflow_id, source, table_name, snap, first_chunk, upto_pk, done)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (workflow_id, source, table_name, snap) DO UPDATE SET upto_pk = EXCLUDED.upto_pk, done = EXCLUDED.done`,
		id, source, table, snap, chunk, last, done)
	return err
}
