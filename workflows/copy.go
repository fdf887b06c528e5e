package workflows

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/shardgate/shardgate/pgcopy"
	"github.com/shardgate/shardgate/sqlerr"
)

// targetPos is a target cluster's copy position for one table from one
// source, as recorded in its shardgate.workflow_target.
type targetPos struct {
	chunk  int64
	lastPK []string // nil before the first chunk
	done   bool
}

// readPos reads the copy positions of a table on every target.
func (r *Runner) readPos(ctx context.Context, targets []*pgx.Conn, source, table string) ([]targetPos, error) {
	pos := make([]targetPos, len(targets))
	for i, c := range targets {
		err := c.QueryRow(ctx, `SELECT chunk, last_pk, done FROM shardgate.workflow_target WHERE workflow_id = $1 AND source = $2 AND table_name = $3`,
			r.id, source, table).Scan(&pos[i].chunk, &pos[i].lastPK, &pos[i].done)
		if err != nil && err != pgx.ErrNoRows {
			return nil, fmt.Errorf("target %s: %w", r.plan.Targets[i].Name, err)
		}
	}
	return pos, nil
}

func allDone(pos []targetPos) bool {
	return !slices.ContainsFunc(pos, func(p targetPos) bool { return !p.done })
}

// pkRange is the WHERE clause of rows after lo and up to hi (nil: no bound).
func pkRange(ti *tableInfo, lo, hi []string) (string, []any) {
	var conds []string
	var args []any
	bound := func(op string, vals []string) {
		var ps []string
		for i, v := range vals {
			args = append(args, v)
			c, _ := ti.column(ti.PK[i])
			ps = append(ps, fmt.Sprintf("$%d::text::%s", len(args), c.Type))
		}
		conds = append(conds, fmt.Sprintf("(%s) %s (%s)", identList(ti.PK), op, strings.Join(ps, ", ")))
	}
	if lo != nil {
		bound(">", lo)
	}
	if hi != nil {
		bound("<=", hi)
	}
	if len(conds) == 0 {
		return "true", nil
	}
	return strings.Join(conds, " AND "), args
}

// copyTable copies one table from one source to the targets, in
// primary-key chunks, under the transaction tx's snapshot (snap, as
// pg_current_snapshot prints it). Each target commits a chunk's rows, its
// position and its copy cycle together, so after a restart a target
// receives exactly the chunks it has not committed. Past deadline (if
// set) it stops after a chunk with errCycleEnd.
func (r *Runner) copyTable(ctx context.Context, src *Source, tx pgx.Tx, targets []*pgx.Conn, tp *TablePlan, snap string, deadline time.Time) error {
	ti := r.info[tp.Name]
	table := tp.Name.String()
	pos, err := r.readPos(ctx, targets, src.Cluster, table)
	if err != nil || allDone(pos) {
		return err
	}
	var total int64
	if err := tx.QueryRow(ctx, "SELECT count(*) FROM "+qname(tp.Name)).Scan(&total); err != nil {
		return err
	}
	copied, err := r.store.rowsCopied(ctx, r.id, src.Cluster, table)
	if err != nil {
		return err
	}
	if err := r.store.copyStarted(ctx, r.id, src.Cluster, table, copied); err != nil {
		return err
	}
	cols := ti.copyColumns()
	cfg := pgcopy.Config{Format: pgcopy.Binary, Columns: len(cols)}
	rt := newRouter(r.plan, tp)
	var keyOIDs []uint32
	for _, k := range rt.cols {
		i := slices.IndexFunc(cols, func(c column) bool { return c.Name == k })
		cfg.KeyPos = append(cfg.KeyPos, i)
		keyOIDs = append(keyOIDs, cols[i].OID)
	}
	colList := identList(columnNames(cols))
	bufs := make([]bytes.Buffer, len(targets))
	for !allDone(pos) {
		// The targets furthest behind receive the next chunk; its upper
		// bound is the one a target ahead already committed, or a new one.
		low := int64(-1)
		for _, p := range pos {
			if !p.done && (low < 0 || p.chunk < low) {
				low = p.chunk
			}
		}
		var recv []int
		var lo, hi []string
		final, known := false, false
		for i, p := range pos {
			switch {
			case p.chunk == low && !p.done:
				recv = append(recv, i)
				lo = p.lastPK
			case p.chunk == low+1:
				hi, final, known = p.lastPK, p.done, true
			}
		}
		if known && final {
			hi = nil
		}
		if !known {
			where, args := pkRange(ti, lo, nil)
			var next []string
			err := tx.QueryRow(ctx, fmt.Sprintf("SELECT ARRAY[%s] FROM %s WHERE %s ORDER BY %s OFFSET %d LIMIT 1",
				textList(ti.PK), qname(tp.Name), where, identList(ti.PK), r.plan.chunkRows()-1), args...).Scan(&next)
			switch {
			case err == pgx.ErrNoRows:
				final = true
			case err != nil:
				return fmt.Errorf("%s: chunk bound of %s: %w", src.Cluster, table, err)
			default:
				hi = next
			}
		}
		where, args := pkRange(ti, lo, hi)
		var out bytes.Buffer
		sql := fmt.Sprintf("COPY (SELECT %s FROM %s WHERE %s ORDER BY %s) TO STDOUT (FORMAT binary)",
			colList, qname(tp.Name), where, identList(ti.PK))
		if _, err := tx.Conn().PgConn().CopyTo(ctx, &out, sqlWithArgs(sql, args)); err != nil {
			return fmt.Errorf("%s: copy %s: %w", src.Cluster, table, err)
		}
		rows, err := r.split(out.Bytes(), cfg, keyOIDs, rt, recv, bufs)
		if err != nil {
			return fmt.Errorf("%s: copy %s: %w", src.Cluster, table, err)
		}
		last := hi
		if final {
			last = lo
		}
		for _, i := range recv {
			if err := r.commitChunk(ctx, targets[i], src.Cluster, tp, colList, &bufs[i], snap, low+1, last, final); err != nil {
				return fmt.Errorf("target %s: copy %s: %w", r.plan.Targets[i].Name, table, err)
			}
			pos[i] = targetPos{chunk: low + 1, lastPK: last, done: final}
		}
		copied += rows
		if err := r.store.tableProgress(ctx, r.id, src.Cluster, table, total, copied, last, allDone(pos)); err != nil {
			return err
		}
		if r.chunkHook != nil {
			if err := r.chunkHook(table); err != nil {
				return err
			}
		}
		// Every committed chunk is a consistent point to stop at.
		if err := r.checkStop(ctx); err != nil {
			return err
		}
		if !deadline.IsZero() && time.Now().After(deadline) && !allDone(pos) {
			return errCycleEnd
		}
	}
	return nil
}

// split cuts a binary COPY stream into rows and appends each row to the
// buffer of its target (only targets in recv take rows), each buffer
// starting with the stream's header and ending with its trailer. It
// returns the number of source rows.
func (r *Runner) split(data []byte, cfg pgcopy.Config, keyOIDs []uint32, rt *router, recv []int, bufs []bytes.Buffer) (int64, error) {
	sc := pgcopy.NewScanner(cfg)
	sc.Feed(data)
	var n int64
	for {
		row, err := sc.Next(true)
		if err != nil {
			return 0, err
		}
		if row == nil {
			break
		}
		switch row.Kind {
		case pgcopy.RowHeader:
			for i := range bufs {
				bufs[i].Reset()
				bufs[i].Write(row.Data)
			}
			continue
		case pgcopy.RowTrailer:
			continue
		}
		n++
		for i, f := range row.Fields {
			if f.Null {
				return 0, sqlerr.New(sqlerr.NotNullViolation, "null value in shard key column %q of table %s", rt.cols[i], rt.t.Name)
			}
			v, err := pgcopy.KeyValue(keyOIDs[i], f.Value)
			if err != nil {
				return 0, err
			}
			rt.vals[i] = v
		}
		to, err := rt.route()
		if err != nil {
			return 0, err
		}
		for _, i := range to {
			if slices.Contains(recv, i) {
				bufs[i].Write(row.Data)
			}
		}
	}
	for i := range bufs {
		bufs[i].Write([]byte{0xff, 0xff})
	}
	return n, nil
}

// commitChunk writes a chunk's rows, the target's new position and its
// copy cycle in one transaction.
func (r *Runner) commitChunk(ctx context.Context, c *pgx.Conn, source string, tp *TablePlan, colList string, data *bytes.Buffer, snap string, chunk int64, last []string, done bool) error {
	return pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error {
		if _, err := tx.Conn().PgConn().CopyFrom(ctx, data, fmt.Sprintf("COPY %s (%s) FROM STDIN (FORMAT binary)", qname(tp.Name), colList)); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO shardgate.workflow_target (workflow_id, source, table_name, chunk, last_pk, done) VALUES ($1, $2, $3, $4, $5, $6)
			ON CONFLICT (workflow_id, source, table_name) DO UPDATE SET chunk = EXCLUDED.chunk, last_pk = EXCLUDED.last_pk, done = EXCLUDED.done`,
			r.id, source, tp.Name.String(), chunk, last, done)
		if err != nil {
			return err
		}
		return recordCycle(ctx, tx, r.id, source, tp.Name.String(), snap, chunk, last, done)
	})
}

func textList(cols []string) string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = ident(c) + "::text"
	}
	return strings.Join(out, ", ")
}

// sqlWithArgs inlines text arguments as literals: COPY takes no
// parameters.
func sqlWithArgs(sql string, args []any) string {
	for i := len(args); i >= 1; i-- {
		lit := "'" + strings.ReplaceAll(args[i-1].(string), "'", "''") + "'"
		sql = strings.ReplaceAll(sql, fmt.Sprintf("$%d::", i), lit+"::")
	}
	return sql
}
