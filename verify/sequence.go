package verify

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/shardgate/shardgate/pgwire"
	"github.com/shardgate/shardgate/vschema"
)

// A sequence is behind when its next value is one its column already
// holds: the next INSERT that draws it fails with a unique violation, or
// worse, succeeds where the column is not unique. Two kinds are checked
// per table: the topology's binding (a main sequence the proxies draw
// blocks from, against the column's largest value on every cluster of
// the table) and the column defaults and identities of the table on each
// of its clusters (that cluster's own sequence against that cluster's
// column). Repairing advances the sequence past the value under a lock
// that nextval waits for, so it never moves back.

func sequenceRunner(t *vschema.Table) func(context.Context, *verifier, *Unit) error {
	return func(ctx context.Context, v *verifier, u *Unit) error {
		start := time.Now()
		var checked int64
		if b := t.Sequence; b != nil {
			n, err := v.boundSequence(ctx, u, t, b)
			if err != nil {
				return err
			}
			checked += n
		}
		for _, cl := range t.Group.Clusters {
			n, err := v.localSequences(ctx, u, t, cl)
			if err != nil {
				return fmt.Errorf("%s: %w", cl, err)
			}
			checked += n
		}
		return v.chunkDone(ctx, u, checked, time.Since(start), nil)
	}
}

// seqState is a sequence's next value and increment.
type seqState struct {
	next, inc int64
}

func readSequence(ctx context.Context, c pgx.Tx, seq string) (seqState, error) {
	var s seqState
	var last int64
	var called bool
	if err := c.QueryRow(ctx, "SELECT last_value, is_called FROM "+seq).Scan(&last, &called); err != nil {
		return s, err
	}
	if err := c.QueryRow(ctx, "SELECT seqincrement FROM pg_sequence WHERE seqrelid = $1::regclass", seq).Scan(&s.inc); err != nil {
		return s, err
	}
	s.next = last
	if called {
		s.next += s.inc
	}
	return s, nil
}

// behind says whether the next value is among the values filled (up to
// top for an ascending sequence, down to it for a descending one).
func (s seqState) behind(top int64) bool {
	if s.inc > 0 {
		return s.next <= top
	}
	return s.next >= top
}

// extreme is the column's largest value (smallest for a descending
// sequence) on c; false if the table has no value.
func extreme(ctx context.Context, c *pgx.Conn, table, col string, inc int64) (int64, bool, error) {
	agg := "max"
	if inc < 0 {
		agg = "min"
	}
	var v *int64
	err := c.QueryRow(ctx, fmt.Sprintf("SELECT %s(%s)::bigint FROM %s", agg, pgwire.QuoteIdent(col), table)).Scan(&v)
	if err != nil || v == nil {
		return 0, false, err
	}
	return *v, true, nil
}

// checkSequence compares sequence seq on c with the column's extreme top
// and records a finding if it is behind (advancing it when repairing).
func (v *verifier) checkSequence(ctx context.Context, u *Unit, c *pgx.Conn, seq, where, col string, top func(inc int64) (int64, bool, error)) error {
	tx, err := c.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	st, err := readSequence(ctx, tx, seq)
	if err != nil {
		return err
	}
	_ = tx.Rollback(ctx)
	t, ok, err := top(st.inc)
	if err != nil || !ok || !st.behind(t) {
		return err
	}
	f := Finding{Key: seq + " on " + where, Detail: fmt.Sprintf("next value %d, but %s holds %d", st.next, col, t)}
	if v.opts.Repair {
		if next, err := advance(ctx, c, seq, t); err != nil {
			f.Detail += ": not advanced: " + err.Error()
		} else {
			f.Repaired = true
			f.Detail += fmt.Sprintf(": advanced, next value %d", next)
		}
	}
	u.find(f)
	return nil
}

// advance sets seq past top, unless it got there meanwhile, under the
// lock ALTER SEQUENCE takes (nextval waits for it): the next value after.
func advance(ctx context.Context, c *pgx.Conn, seq string, top int64) (int64, error) {
	tx, err := c.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	st, err := readSequence(ctx, tx, seq)
	if err != nil {
		return 0, err
	}
	if _, err := tx.Exec(ctx, "SET LOCAL lock_timeout = '10s'"); err != nil {
		return 0, err
	}
	if _, err := tx.Exec(ctx, fmt.Sprintf("ALTER SEQUENCE %s INCREMENT BY %d", seq, st.inc)); err != nil {
		return 0, err
	}
	if st, err = readSequence(ctx, tx, seq); err != nil {
		return 0, err
	}
	if st.behind(top) {
		if _, err := tx.Exec(ctx, "SELECT setval($1::regclass, $2)", seq, top); err != nil {
			return 0, err
		}
		st.next = top + st.inc
	}
	return st.next, tx.Commit(ctx)
}

// boundSequence checks the main sequence the topology binds to a column of
// t against the column's extreme over t's clusters: the clusters read.
func (v *verifier) boundSequence(ctx context.Context, u *Unit, t *vschema.Table, b *vschema.SequenceBinding) (int64, error) {
	main, err := v.conn(ctx, v.topo.Main().Cluster)
	if err != nil {
		return 0, err
	}
	var n int64
	top := func(inc int64) (int64, bool, error) {
		var best int64
		found := false
		for _, cl := range t.Group.Clusters {
			c, err := v.conn(ctx, cl)
			if err != nil {
				return 0, false, err
			}
			x, ok, err := extreme(ctx, c, qualified(t), b.Column, inc)
			if err != nil {
				return 0, false, fmt.Errorf("%s: %w", cl, err)
			}
			n++
			if ok && (!found || (inc > 0 && x > best) || (inc < 0 && x < best)) {
				best, found = x, true
			}
		}
		return best, found, nil
	}
	seq := pgwire.QuoteIdent(b.Sequence.Name)
	if b.Sequence.Schema != "" {
		seq = pgwire.QuoteIdent(b.Sequence.Schema) + "." + seq
	}
	return n, v.checkSequence(ctx, u, main, seq, v.topo.Main().Cluster, t.String()+"."+b.Column, top)
}

// localSequences checks the sequences of t's column defaults and
// identities on cluster cl: how many.
func (v *verifier) localSequences(ctx context.Context, u *Unit, t *vschema.Table, cl string) (int64, error) {
	c, err := v.conn(ctx, cl)
	if err != nil {
		return 0, err
	}
	rows, err := c.Query(ctx, `SELECT a.attname, d.refobjid::regclass::text FROM pg_attrdef ad
		JOIN pg_attribute a ON a.attrelid = ad.adrelid AND a.attnum = ad.adnum
		JOIN pg_depend d ON d.classid = 'pg_attrdef'::regclass AND d.objid = ad.oid AND d.refclassid = 'pg_class'::regclass
		JOIN pg_class s ON s.oid = d.refobjid AND s.relkind = 'S'
		WHERE ad.adrelid = to_regclass($1)
		UNION
		SELECT a.attname, pg_get_serial_sequence($1, a.attname) FROM pg_attribute a
		WHERE a.attrelid = to_regclass($1) AND a.attidentity <> '' AND NOT a.attisdropped
		ORDER BY 1, 2`, qualified(t))
	if err != nil {
		return 0, err
	}
	type colSeq struct{ col, seq string }
	var list []colSeq
	var cs colSeq
	if _, err := pgx.ForEachRow(rows, []any{&cs.col, &cs.seq}, func() error { list = append(list, cs); return nil }); err != nil {
		return 0, err
	}
	for _, cs := range list {
		top := func(inc int64) (int64, bool, error) { return extreme(ctx, c, qualified(t), cs.col, inc) }
		if err := v.checkSequence(ctx, u, c, cs.seq, cl, t.String()+"."+cs.col, top); err != nil {
			return 0, err
		}
	}
	return int64(len(list)), nil
}

// qualified is a table's quoted name.
func qualified(t *vschema.Table) string {
	qn := pgwire.QuoteIdent(t.Name)
	if t.Schema != "" {
		qn = pgwire.QuoteIdent(t.Schema) + "." + qn
	}
	return qn
}
