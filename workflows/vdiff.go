package workflows

import (
	"context"
	"fmt"
	"math/big"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/shardgate/shardgate/keyexpr"
)

// TableDiff is VDiff's result for one table on one target cluster.
type TableDiff struct {
	Table      string   `json:"table"`
	Target     string   `json:"target"`
	Matching   int64    `json:"matching"`
	Missing    int64    `json:"missing"`    // on the source, not on the target
	Extra      int64    `json:"extra"`      // on the target, not on the source
	Mismatched int64    `json:"mismatched"` // on both, different
	Samples    []string `json:"samples,omitempty"`
}

// Clean reports whether the target matches.
func (d TableDiff) Clean() bool { return d.Missing == 0 && d.Extra == 0 && d.Mismatched == 0 }

// maxSamples bounds the sample keys of each kind per table and target.
const maxSamples = 5

// rowHash is the per-row hash Postgres computes on both sides: 60 bits
// of the md5 of the row's text form.
func rowHash(cols []column) string {
	var names []string
	for _, c := range cols {
		names = append(names, ident(c.Name))
	}
	return fmt.Sprintf("('x' || substr(md5(ROW(%s)::text), 1, 15))::bit(60)::bigint", strings.Join(names, ", "))
}

// VDiff compares every table on every target with its sources, in
// primary-key chunks: for each chunk, Postgres hashes each source row
// (the rows are routed to their targets here, with the target vschema)
// and sums the hashes of the target's rows; only chunks whose count or
// sum differ are compared row by row. Run it while the sources are
// quiet and the stream has caught up: changes in flight show as
// differences.
func VDiff(ctx context.Context, store *Store, id int64) ([]TableDiff, error) {
	w, err := store.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	p, err := NewPlan(w.Spec)
	if err != nil {
		return nil, err
	}
	srcs := map[string]*pgx.Conn{}
	var targets []*pgx.Conn
	defer func() {
		for _, c := range srcs {
			c.Close(context.Background())
		}
		for _, c := range targets {
			c.Close(context.Background())
		}
	}()
	for _, s := range p.Sources {
		if srcs[s.Cluster], err = pgx.Connect(ctx, s.DSN); err != nil {
			return nil, err
		}
	}
	for _, t := range p.Targets {
		c, err := pgx.Connect(ctx, t.DSN)
		if err != nil {
			return nil, err
		}
		targets = append(targets, c)
	}
	var out []TableDiff
	for _, tp := range p.Tables {
		first := srcs[tp.Sources[0]]
		ti, err := readTable(ctx, first, tp.Name, tp.Sources[0])
		if err != nil {
			return nil, err
		}
		d := &differ{p: p, tp: tp, ti: ti, rt: newRouter(p, tp), srcs: srcs, targets: targets}
		diffs, err := d.run(ctx)
		if err != nil {
			return nil, fmt.Errorf("vdiff %s: %w", tp.Name, err)
		}
		out = append(out, diffs...)
	}
	return out, nil
}

type differ struct {
	p       *Plan
	tp      *TablePlan
	ti      *tableInfo
	rt      *router
	srcs    map[string]*pgx.Conn
	targets []*pgx.Conn
}

// hashed is one row's primary key (joined text) and hash.
type hashed map[string]int64

func (d *differ) run(ctx context.Context) ([]TableDiff, error) {
	diffs := make([]TableDiff, len(d.targets))
	for i := range diffs {
		diffs[i] = TableDiff{Table: d.tp.Name.String(), Target: d.p.Targets[i].Name}
	}
	var lo []string
	first := d.srcs[d.tp.Sources[0]]
	for {
		where, args := pkRange(d.ti, lo, nil)
		var hi []string
		err := first.QueryRow(ctx, fmt.Sprintf("SELECT ARRAY[%s] FROM %s WHERE %s ORDER BY %s OFFSET %d LIMIT 1",
			textList(d.ti.PK), qname(d.tp.Name), where, identList(d.ti.PK), d.p.chunkRows()-1), args...).Scan(&hi)
		if err != nil && err != pgx.ErrNoRows {
			return nil, err
		}
		if err := d.chunk(ctx, lo, hi, diffs); err != nil {
			return nil, err
		}
		if hi == nil {
			return diffs, nil
		}
		lo = hi
	}
}

// chunk compares the rows with primary keys in (lo, hi].
func (d *differ) chunk(ctx context.Context, lo, hi []string, diffs []TableDiff) error {
	where, args := pkRange(d.ti, lo, hi)
	want := make([]hashed, len(d.targets))
	for i := range want {
		want[i] = hashed{}
	}
	keys := d.rt.cols
	for _, src := range d.tp.Sources {
		rows, err := d.srcs[src].Query(ctx, fmt.Sprintf("SELECT ARRAY[%s]::text, %s, ARRAY[%s] FROM %s WHERE %s",
			textList(d.ti.PK), rowHash(d.ti.Columns), textList(append([]string{d.ti.PK[0]}, keys...)), qname(d.tp.Name), where), args...)
		if err != nil {
			return err
		}
		var pk string
		var h int64
		var kv []*string
		_, err = pgx.ForEachRow(rows, []any{&pk, &h, &kv}, func() error {
			for i := range keys {
				if kv[i+1] == nil {
					return fmt.Errorf("row (%s) has a null shard key", pk)
				}
				d.rt.vals[i] = keyexpr.Text(*kv[i+1])
			}
			to, err := d.rt.route()
			for _, t := range to {
				want[t][pk] = h
			}
			return err
		})
		if err != nil {
			return err
		}
	}
	for i, c := range d.targets {
		var n int64
		var sum string
		if err := c.QueryRow(ctx, fmt.Sprintf("SELECT count(*), coalesce(sum(%s::numeric), 0)::text FROM %s WHERE %s",
			rowHash(d.ti.Columns), qname(d.tp.Name), where), args...).Scan(&n, &sum); err != nil {
			return err
		}
		wantSum := new(big.Int)
		for _, h := range want[i] {
			wantSum.Add(wantSum, big.NewInt(h))
		}
		if n == int64(len(want[i])) && wantSum.String() == sum {
			diffs[i].Matching += n
			continue
		}
		if err := d.drill(ctx, c, where, args, want[i], &diffs[i]); err != nil {
			return err
		}
	}
	return nil
}

// drill compares a differing chunk row by row.
func (d *differ) drill(ctx context.Context, c *pgx.Conn, where string, args []any, want hashed, diff *TableDiff) error {
	rows, err := c.Query(ctx, fmt.Sprintf("SELECT ARRAY[%s]::text, %s FROM %s WHERE %s",
		textList(d.ti.PK), rowHash(d.ti.Columns), qname(d.tp.Name), where), args...)
	if err != nil {
		return err
	}
	have := hashed{}
	var pk string
	var h int64
	if _, err := pgx.ForEachRow(rows, []any{&pk, &h}, func() error { have[pk] = h; return nil }); err != nil {
		return err
	}
	sample := func(kind, pk string) {
		if len(diff.Samples) < 3*maxSamples {
			diff.Samples = append(diff.Samples, kind+" ("+pk+")")
		}
	}
	for pk, h := range want {
		switch g, ok := have[pk]; {
		case !ok:
			diff.Missing++
			sample("missing", pk)
		case g != h:
			diff.Mismatched++
			sample("mismatched", pk)
		default:
			diff.Matching++
		}
	}
	for pk := range have {
		if _, ok := want[pk]; !ok {
			diff.Extra++
			sample("extra", pk)
		}
	}
	return nil
}
