package workflows

import (
	"context"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"

	"github.com/shardgate/shardgate/keyexpr"
	"github.com/shardgate/shardgate/pgwire"
	"github.com/shardgate/shardgate/sqlerr"
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
	// Done: every chunk compared; else LastPK is the last primary key
	// compared so far (nil: none).
	Done   bool     `json:"done"`
	LastPK []string `json:"last_pk,omitempty"`
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

// VDiffOptions tune a vdiff.
type VDiffOptions struct {
	// Parallel is how many (table, target) pairs are compared at once
	// (default 2).
	Parallel int
	// Resume continues the workflow's last vdiff where it stopped; without
	// it a vdiff starts over.
	Resume bool
	// Logf receives progress lines; nil = none.
	Logf func(format string, args ...any)

	// chunkHook runs after each chunk compared and recorded; an error
	// ends the vdiff (tests).
	chunkHook func(table, target string) error
}

// VDiff compares every table on every target with its sources (RunVDiff
// with the default options).
func VDiff(ctx context.Context, store *Store, id int64) ([]TableDiff, error) {
	return RunVDiff(ctx, store, id, VDiffOptions{})
}

// RunVDiff compares every table on every target with its sources at one
// consistent position: each source's stream is stopped at a position its
// source is read at (vdiffstop.go) — by the runner streaming the
// workflow wherever it runs, or, when none does, by one started here for
// the vdiff's duration. Each table on each target is compared in
// primary-key chunks, up to Parallel pairs at once: for each chunk,
// Postgres hashes each source row (the rows are routed to their targets
// here, with the target vschema) and sums the hashes of the target's
// rows; only chunks whose count or sum differ are compared row by row.
// The progress is recorded in main after each chunk (Store.LastVDiff).
func RunVDiff(ctx context.Context, store *Store, id int64, o VDiffOptions) ([]TableDiff, error) {
	w, err := store.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	switch w.Phase {
	case PhaseStreaming:
	case PhaseCreated, PhaseCopying:
		return nil, refused("workflow %d is %s: vdiff compares once every table is copied", id, w.Phase)
	case PhaseStopped, PhaseError:
		return nil, refused("workflow %d is %s: vdiff compares at a position its stream stops at, and no stream runs", id, w.Phase).
			WithHint("Resume it first: shardgate workflow start %d.", id)
	default:
		return nil, refused("workflow %d is %s", id, w.Phase)
	}
	fwd, err := NewPlan(w.Spec)
	if err != nil {
		return nil, err
	}
	p := fwd.serving(w.Traffic)
	unlock, err := store.lockVDiff(ctx, id)
	if err != nil {
		return nil, err
	}
	defer unlock()
	var units []*TableDiff
	for _, tp := range p.Tables {
		for _, t := range p.Targets {
			units = append(units, &TableDiff{Table: tp.Name.String(), Target: t.Name})
		}
	}
	done, err := store.startVDiff(context.WithoutCancel(ctx), id, units, o.Resume)
	if err != nil {
		return nil, err
	}
	if !done {
		err = runVDiff(ctx, store, id, p, units, o)
		if ferr := store.finishVDiff(context.WithoutCancel(ctx), id, err); err == nil {
			err = ferr
		}
	}
	out := make([]TableDiff, len(units))
	for i, u := range units {
		out[i] = *u
	}
	return out, err
}

func runVDiff(ctx context.Context, store *Store, id int64, p *Plan, units []*TableDiff, o VDiffOptions) error {
	// The vdiff's goroutines and the runner it may start log concurrently.
	o.Logf = serialized(o.Logf)
	stopRunner, err := ensureRunner(ctx, store, id, o.Logf)
	if err != nil {
		return err
	}
	defer stopRunner()
	held, release, err := holdStreams(ctx, store, id, p, o.Logf)
	if err != nil {
		return err
	}
	defer release()
	if err := store.vdiffPositions(context.WithoutCancel(ctx), id, held); err != nil {
		return err
	}
	snaps := map[string]string{}
	for _, h := range held {
		snaps[h.source] = h.snapshot
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	work := make(chan *TableDiff)
	errs := make(chan error, len(units))
	var wg sync.WaitGroup
	for range max(o.Parallel, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for u := range work {
				if err := diffUnit(ctx, store, id, p, snaps, u, o); err != nil {
					errs <- fmt.Errorf("vdiff %s on %s: %w", u.Table, u.Target, err)
					cancel()
				}
			}
		}()
	}
feed:
	for _, u := range units {
		if u.Done {
			continue
		}
		select {
		case work <- u:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	return ctx.Err()
}

// Main's queries of a vdiff run without its cancellation (context.
// WithoutCancel): a query cancelled on the store's one connection would
// close it for the rest of the vdiff.

// ensureRunner starts a runner here when no process runs the workflow,
// so that its streams can stop at the vdiff's position; stop ends it.
func ensureRunner(ctx context.Context, store *Store, id int64, logf func(string, ...any)) (stop func(), err error) {
	unlock, err := store.Lock(ctx, id)
	if sqlerr.Code(err) == sqlerr.LockNotAvailable {
		return func() {}, nil // a runner streams elsewhere
	}
	if err != nil {
		return nil, err
	}
	unlock()
	// The runner has its store (main connection) of its own: cancelling
	// it must not break the vdiff's.
	rstore, err := OpenStore(ctx, store.dsn)
	if err != nil {
		return nil, err
	}
	r, err := NewRunner(ctx, rstore, id)
	if err != nil {
		rstore.Close()
		return nil, err
	}
	r.Logf = logf
	if logf != nil {
		logf("workflow %d: no runner streams it; streaming here for the vdiff", id)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = r.Run(rctx) // an error is recorded as the workflow's; the vdiff's wait sees it
	}()
	return func() { cancel(); <-done; rstore.Close() }, nil
}

// diffUnit compares one table on one target, from where it stopped.
func diffUnit(ctx context.Context, store *Store, id int64, p *Plan, snaps map[string]string, u *TableDiff, o VDiffOptions) error {
	var tp *TablePlan
	for _, t := range p.Tables {
		if t.Name.String() == u.Table {
			tp = t
		}
	}
	target := p.targetIndex(u.Target)
	if tp == nil || target < 0 {
		return sqlerr.New(sqlerr.InternalError, "no table %s or target %s in the workflow", u.Table, u.Target)
	}
	srcs := map[string]*pgx.Conn{}
	var tc *pgx.Conn
	defer func() {
		for _, c := range srcs {
			c.Close(context.Background())
		}
		if tc != nil {
			tc.Close(context.Background())
		}
	}()
	for _, name := range tp.Sources {
		s := p.Sources[slices.IndexFunc(p.Sources, func(s *Source) bool { return s.Cluster == name })]
		c, err := pgx.Connect(ctx, s.DSN)
		if err != nil {
			return fmt.Errorf("source %s: %w", name, err)
		}
		srcs[name] = c
		// The source as it was at the stream's stop position.
		if _, err := c.Exec(ctx, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"); err != nil {
			return err
		}
		if _, err := c.Exec(ctx, "SET TRANSACTION SNAPSHOT "+pgwire.QuoteLiteral(snaps[name])); err != nil {
			return fmt.Errorf("source %s: import the vdiff's snapshot: %w", name, err)
		}
	}
	tc, err := pgx.Connect(ctx, p.Targets[target].DSN)
	if err != nil {
		return fmt.Errorf("target %s: %w", u.Target, err)
	}
	if _, err := tc.Exec(ctx, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"); err != nil {
		return err
	}
	ti, err := readTable(ctx, srcs[tp.Sources[0]], tp.Name, tp.Sources[0])
	if err != nil {
		return err
	}
	d := &differ{p: p, tp: tp, ti: ti, rt: newRouter(p, tp), srcs: srcs, target: target, tc: tc}
	lo := u.LastPK
	for {
		hi, err := d.boundary(ctx, lo)
		if err != nil {
			return err
		}
		if err := d.chunk(ctx, lo, hi, u); err != nil {
			return err
		}
		u.LastPK, u.Done = hi, hi == nil
		if err := store.vdiffProgress(context.WithoutCancel(ctx), id, u); err != nil {
			return err
		}
		if o.chunkHook != nil {
			if err := o.chunkHook(u.Table, u.Target); err != nil {
				return err
			}
		}
		if hi == nil {
			return nil
		}
		lo = hi
	}
}

type differ struct {
	p      *Plan
	tp     *TablePlan
	ti     *tableInfo
	rt     *router
	srcs   map[string]*pgx.Conn
	target int
	tc     *pgx.Conn
}

// hashed is one row's primary key (joined text) and hash.
type hashed map[string]int64

// boundary returns the last primary key of the chunk after lo (nil: the
// chunk runs to the end of the table).
func (d *differ) boundary(ctx context.Context, lo []string) ([]string, error) {
	where, args := pkRange(d.ti, lo, nil)
	var hi []string
	err := d.srcs[d.tp.Sources[0]].QueryRow(ctx, fmt.Sprintf("SELECT ARRAY[%s] FROM %s WHERE %s ORDER BY %s OFFSET %d LIMIT 1",
		textList(d.ti.PK), qname(d.tp.Name), where, identList(d.ti.PK), d.p.chunkRows()-1), args...).Scan(&hi)
	if err == pgx.ErrNoRows {
		return nil, nil
	}
	return hi, err
}

// chunk compares the rows with primary keys in (lo, hi] on the target.
func (d *differ) chunk(ctx context.Context, lo, hi []string, diff *TableDiff) error {
	where, args := pkRange(d.ti, lo, hi)
	want := hashed{}
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
			if slices.Contains(to, d.target) {
				want[pk] = h
			}
			return err
		})
		if err != nil {
			return err
		}
	}
	var n int64
	var sum string
	if err := d.tc.QueryRow(ctx, fmt.Sprintf("SELECT count(*), coalesce(sum(%s::numeric), 0)::text FROM %s WHERE %s",
		rowHash(d.ti.Columns), qname(d.tp.Name), where), args...).Scan(&n, &sum); err != nil {
		return err
	}
	wantSum := new(big.Int)
	for _, h := range want {
		wantSum.Add(wantSum, big.NewInt(h))
	}
	if n == int64(len(want)) && wantSum.String() == sum {
		diff.Matching += n
		return nil
	}
	return d.drill(ctx, d.tc, where, args, want, diff)
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
