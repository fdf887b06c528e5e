package verify

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/shardgate/shardgate/twopc"
	"github.com/shardgate/shardgate/vschema"
)

// A reference table's copy is compared with the copy on the group's first
// cluster in primary-key chunks: each side's Postgres returns the chunk's
// row count and the md5 of its rows' text in key order, so a chunk that
// matches costs two small answers. A chunk that differs is read row by row
// (primary key and md5 of the row), the rows that differ are read again
// once the two-phase transactions prepared at that moment are finished (a
// write through the proxy commits every copy, one after the other), and
// those still different are reported: missing from the copy, extra on it,
// or different. Repairing copies the first cluster's row over.

func referenceRunner(t *vschema.Table) func(context.Context, *verifier, *Unit) error {
	return func(ctx context.Context, v *verifier, u *Unit) error {
		first := t.Group.Clusters[0]
		src, err := v.conn(ctx, first)
		if err != nil {
			return err
		}
		dst, err := v.conn(ctx, u.Cluster)
		if err != nil {
			return err
		}
		ti, err := readTable(ctx, src, t.Schema, t.Name)
		if err != nil {
			return fmt.Errorf("%s: %w", first, err)
		}
		r := &refDiff{v: v, ti: ti, src: src, dst: dst, first: first}
		if len(ti.pk) == 0 {
			start := time.Now()
			n, err := r.whole(ctx, u)
			if err != nil {
				return err
			}
			return v.chunkDone(ctx, u, n, time.Since(start), nil)
		}
		lo := u.Position
		for {
			start := time.Now()
			var hi []string
			where, args := ti.pkRange(lo, nil)
			err := src.QueryRow(ctx, fmt.Sprintf("SELECT ARRAY[%s] FROM %s WHERE %s ORDER BY %s OFFSET %d LIMIT 1",
				ti.pkTexts(), ti.name, where, ti.pkOrder(), v.chunkRows()-1), args...).Scan(&hi)
			if err != nil && !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
			n, err := r.chunk(ctx, u, lo, hi)
			if err != nil {
				return err
			}
			if err := v.chunkDone(ctx, u, n, time.Since(start), hi); err != nil {
				return err
			}
			if hi == nil {
				return nil
			}
			lo = hi
		}
	}
}

type refDiff struct {
	v        *verifier
	ti       *tableInfo
	src, dst *pgx.Conn
	first    string
}

// chunk compares the rows in (lo, hi]; it returns the first cluster's
// row count.
func (r *refDiff) chunk(ctx context.Context, u *Unit, lo, hi []string) (int64, error) {
	where, args := r.ti.pkRange(lo, hi)
	q := fmt.Sprintf("SELECT count(*), coalesce(md5(string_agg(%s, E'\\n' ORDER BY %s)), '') FROM %s WHERE %s",
		r.ti.rowText(), r.ti.pkOrder(), r.ti.name, where)
	var n, m int64
	var a, b string
	if err := r.src.QueryRow(ctx, q, args...).Scan(&n, &a); err != nil {
		return 0, err
	}
	if err := r.dst.QueryRow(ctx, q, args...).Scan(&m, &b); err != nil {
		return 0, err
	}
	if n == m && a == b {
		return n, nil
	}
	return n, r.rows(ctx, u, where, args)
}

// rowHashes reads the (primary key, md5 of the row) of a chunk's rows on c,
// and their row_to_json text when withRows.
func (r *refDiff) rowHashes(ctx context.Context, c *pgx.Conn, where string, args []any) (map[string]string, error) {
	rows, err := c.Query(ctx, fmt.Sprintf("SELECT %s, md5(%s) FROM %s WHERE %s", r.ti.pkText(""), r.ti.rowText(), r.ti.name, where), args...)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	var pk, h string
	_, err = pgx.ForEachRow(rows, []any{&pk, &h}, func() error { out[pk] = h; return nil })
	return out, err
}

// rows compares a differing chunk row by row, settles the rows that differ
// and records (and repairs) those still different.
func (r *refDiff) rows(ctx context.Context, u *Unit, where string, args []any) error {
	want, err := r.rowHashes(ctx, r.src, where, args)
	if err != nil {
		return err
	}
	have, err := r.rowHashes(ctx, r.dst, where, args)
	if err != nil {
		return err
	}
	var cands []string
	for pk, h := range want {
		if have[pk] != h {
			cands = append(cands, pk)
		}
	}
	for pk := range have {
		if _, ok := want[pk]; !ok {
			cands = append(cands, pk)
		}
	}
	if len(cands) == 0 {
		return nil
	}
	sort.Strings(cands)
	for _, c := range []*pgx.Conn{r.src, r.dst} {
		if err := waitPrepared(ctx, c); err != nil {
			return err
		}
	}
	where += fmt.Sprintf(" AND %s = ANY($%d)", r.ti.pkText(""), len(args)+1)
	args = append(args, cands)
	if want, err = r.rowHashes(ctx, r.src, where, args); err != nil {
		return err
	}
	if have, err = r.rowHashes(ctx, r.dst, where, args); err != nil {
		return err
	}
	for _, pk := range cands {
		w, inFirst := want[pk]
		h, inCopy := have[pk]
		var f Finding
		switch {
		case inFirst && inCopy && w == h:
			continue // a write in flight when first read
		case !inFirst && !inCopy:
			continue
		case !inCopy:
			f = Finding{Key: pk, Detail: "missing from this copy"}
		case !inFirst:
			f = Finding{Key: pk, Detail: "not on " + r.first}
		default:
			f = Finding{Key: pk, Detail: "differs from " + r.first + "'s"}
		}
		if r.v.opts.Repair {
			if err := r.recopy(ctx, pk, inFirst); err != nil {
				f.Detail += ": not repaired: " + err.Error()
			} else {
				f.Repaired = true
				f.Detail += ": copied from " + r.first
			}
		}
		u.find(f)
	}
	return nil
}

// recopy makes the copy's row of primary key pk the first cluster's (none,
// if !inFirst) in one transaction.
func (r *refDiff) recopy(ctx context.Context, pk string, inFirst bool) error {
	var rowJSON string
	if inFirst {
		if err := r.src.QueryRow(ctx, fmt.Sprintf("SELECT row_to_json(t)::text FROM %s t WHERE %s", r.ti.name, r.ti.pkMatch(1)), pk).Scan(&rowJSON); err != nil {
			return err
		}
	}
	tx, err := r.dst.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, fmt.Sprintf("DELETE FROM %s WHERE %s", r.ti.name, r.ti.pkMatch(1)), pk); err != nil {
		return err
	}
	if inFirst {
		if _, err := tx.Exec(ctx, r.ti.insertJSON(), rowJSON); err != nil {
			return err
		}
	}
	return tx.Commit(ctx)
}

// whole compares a table without a primary key as one chunk (count and
// md5 of its rows in text order): a difference is one finding, not
// narrowed down and not repaired, a row having nothing to name it by.
func (r *refDiff) whole(ctx context.Context, u *Unit) (int64, error) {
	q := fmt.Sprintf("SELECT count(*), coalesce(md5(string_agg(r, E'\\n' ORDER BY r)), '') FROM (SELECT %s AS r FROM %s) t",
		r.ti.rowText(), r.ti.name)
	var n, m int64
	var a, b string
	if err := r.src.QueryRow(ctx, q).Scan(&n, &a); err != nil {
		return 0, err
	}
	if err := r.dst.QueryRow(ctx, q).Scan(&m, &b); err != nil {
		return 0, err
	}
	if n != m || a != b {
		f := Finding{Key: "(every row)", Detail: fmt.Sprintf("%d rows on %s, %d here, contents differ", n, r.first, m)}
		if r.v.opts.Repair {
			f.Detail += ": " + errNoPK.Error()
		}
		u.find(f)
	}
	return n, nil
}

// waitPrepared waits until shardgate's two-phase transactions prepared
// on c when it is called have finished.
func waitPrepared(ctx context.Context, c *pgx.Conn) error {
	var gids []string
	if err := c.QueryRow(ctx, `SELECT coalesce(array_agg(gid), '{}') FROM pg_prepared_xacts
		WHERE database = current_database() AND starts_with(gid, $1)`, twopc.GIDPrefix).Scan(&gids); err != nil || len(gids) == 0 {
		return err
	}
	for deadline := time.Now().Add(time.Minute); ; {
		var left int
		if err := c.QueryRow(ctx, "SELECT count(*) FROM pg_prepared_xacts WHERE gid = ANY($1)", gids).Scan(&left); err != nil || left == 0 {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d prepared transactions still in doubt after a minute", left)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}
