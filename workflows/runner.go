package workflows

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/shardgate/shardgate/topology"
)

// Runner runs one workflow: the copy, then the stream until its context
// ends. A Runner started on a workflow that already ran resumes it.
type Runner struct {
	logMu sync.Mutex // Logf is called by one goroutine at a time
	store *Store
	id    int64
	fwd   *Plan // the workflow's plan
	plan  *Plan // the plan of this run's direction: fwd, or its reverse once traffic is switched
	info  map[topology.QualifiedName]*tableInfo
	// traffic is where the tables were served when this run started; the
	// stream ends when a switch changes it (errDirection).
	traffic string
	// Logf receives progress lines; nil = none.
	Logf func(format string, args ...any)

	// chunkHook, when set, runs after each committed copy chunk; an error
	// stops the run as a crash would (tests).
	chunkHook func(table string) error
	// groupLimit caps the changes applied as one target transaction
	// (default groupChanges); flushHook runs after each applied group
	// (tests: a backlog applied slowly enough to be watched).
	groupLimit int
	flushHook  func()

	mu        sync.Mutex
	processed map[string]pglogrepl.LSN // per source: everything before it is applied
}

// NewRunner loads workflow id.
func NewRunner(ctx context.Context, store *Store, id int64) (*Runner, error) {
	w, err := store.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	switch w.Phase {
	case PhaseCancelled:
		return nil, refused("workflow %d was cancelled", id)
	case PhaseStopped:
		return nil, refused("workflow %d is stopped", id).WithHint("Resume it with: shardgate workflow start %d", id)
	}
	p, err := NewPlan(w.Spec)
	if err != nil {
		return nil, err
	}
	return &Runner{store: store, id: id, fwd: p, plan: p, processed: map[string]pglogrepl.LSN{}}, nil
}

// logf passes a progress line to Logf, one call at a time: the streams of
// every source (and a vdiff's hold) log from goroutines of their own.
func (r *Runner) logf(format string, args ...any) {
	if r.Logf != nil {
		r.logMu.Lock()
		defer r.logMu.Unlock()
		r.Logf(format, args...)
	}
}

// serialized returns logf made safe for concurrent calls (nil: nil).
func serialized(logf func(string, ...any)) func(string, ...any) {
	if logf == nil {
		return nil
	}
	var mu sync.Mutex
	return func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		logf(format, args...)
	}
}

// source is one source cluster's connections during a run.
type source struct {
	*Source
	conn     *pgx.Conn      // queries and the copy transaction
	repl     *pgconn.PgConn // the replication connection
	snapshot string         // the slot's exported snapshot, until the first cycle imports it
}

func (s *source) close() {
	if s.conn != nil {
		s.conn.Close(context.Background())
	}
	if s.repl != nil {
		s.repl.Close(context.Background())
	}
}

// Run copies what is left to copy, then streams changes until ctx ends
// (returning nil) or a permanent error stops it (recorded as the
// workflow's phase "error" and returned). Transient errors (a connection
// lost, a backend terminated: Transient) are retried with capped
// exponential backoff, the retry recorded in main for status. It holds the workflow's lock in main
// while it runs: a workflow another process runs is refused with 55P03.
func (r *Runner) Run(ctx context.Context) error {
	lock, err := r.store.lock(ctx, r.id)
	if err != nil {
		return err
	}
	defer lock.unlock()
	stopBeat, err := r.store.beatRunner(ctx, r.id)
	if err != nil {
		return err
	}
	defer stopBeat()
	err = r.runRetrying(ctx, lock)
	if errors.Is(err, errStopped) {
		r.logf("workflow %d: stopped", r.id)
		return r.store.SetPhase(context.Background(), r.id, PhaseStopped, "")
	}
	if w, gerr := r.store.Get(context.Background(), r.id); gerr == nil && w.Phase == PhaseCompleted {
		return nil // complete dropped the slots under the stream
	}
	if err != nil && ctx.Err() == nil {
		_ = r.store.setError(context.Background(), r.id, err)
		return err
	}
	return nil
}

func (r *Runner) run(ctx context.Context) error {
	// A switch whose process died is rolled back, or finished if decided.
	if unlock, err := r.store.lockSwitch(ctx, r.id); err == nil {
		err = recoverSwitch(ctx, r.store, r.id)
		unlock()
		if err != nil {
			return err
		}
	}
	w, err := r.store.Get(ctx, r.id)
	if err != nil {
		return err
	}
	switch w.Phase {
	case PhaseCompleted, PhaseCancelled:
		return nil
	case PhaseError:
		// Resuming after an error: the copy checks what is left first.
		if err := r.store.SetPhase(ctx, r.id, PhaseCopying, ""); err != nil {
			return err
		}
	}
	r.traffic, r.plan = w.Traffic, r.fwd.serving(w.Traffic)
	srcs := make([]*source, len(r.plan.Sources))
	defer func() {
		for _, s := range srcs {
			if s != nil {
				s.close()
			}
		}
	}()
	r.info = map[topology.QualifiedName]*tableInfo{}
	for i, s := range r.plan.Sources {
		srcs[i] = &source{Source: s}
		conn, err := pgx.Connect(ctx, s.DSN)
		if err != nil {
			return fmt.Errorf("source %s: %w", s.Cluster, err)
		}
		srcs[i].conn = conn
		for _, t := range s.Tables {
			if r.info[t.Name] == nil {
				if r.info[t.Name], err = readTable(ctx, conn, t.Name, s.Cluster); err != nil {
					return err
				}
			}
		}
	}
	if !r.plan.reverse { // a reverse stream's plan is checked by the switch that creates it
		if err := checkMerge(r.plan, func(q topology.QualifiedName) *tableInfo { return r.info[q] }); err != nil {
			return err
		}
	}
	if r.plan.reverse {
		// The reverse stream copies nothing: its slots were created by the
		// switch, when both sides held the same rows.
		if err := r.store.SetPhase(ctx, r.id, PhaseStreaming, ""); err != nil {
			return err
		}
		r.logf("workflow %d: traffic on the targets, streaming back to the sources", r.id)
		return r.each(ctx, srcs, r.stream)
	}
	if err := r.each(ctx, srcs, r.copySource); err != nil {
		return err
	}
	if err := r.afterCopy(ctx); err != nil {
		return err
	}
	if err := r.store.SetPhase(ctx, r.id, PhaseStreaming, ""); err != nil {
		return err
	}
	r.logf("workflow %d: copy done, streaming", r.id)
	return r.each(ctx, srcs, r.stream)
}

// each runs f for every source in parallel; the first error cancels the
// others and is returned.
func (r *Runner) each(ctx context.Context, srcs []*source, f func(context.Context, *source) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, len(srcs))
	var wg sync.WaitGroup
	for i, s := range srcs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if errs[i] = f(ctx, s); errs[i] != nil {
				cancel()
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
	}
	return ctx.Err()
}

func replicationDSN(dsn string) string {
	if strings.Contains(dsn, "?") {
		return dsn + "&replication=database"
	}
	return dsn + "?replication=database"
}

// connectTargets opens one connection per target cluster.
func (r *Runner) connectTargets(ctx context.Context) ([]*pgx.Conn, func(), error) {
	var conns []*pgx.Conn
	closeAll := func() {
		for _, c := range conns {
			c.Close(context.Background())
		}
	}
	for _, t := range r.plan.Targets {
		c, err := pgx.Connect(ctx, t.DSN)
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("target %s: %w", t.Name, err)
		}
		conns = append(conns, c)
	}
	return conns, closeAll, nil
}

// copySource makes sure the source's publication and slot exist (the slot
// created with an exported snapshot), then copies its tables in cycles:
// the first under the slot's snapshot — or, on a resume, under a fresh
// one — and one more per Spec.SnapshotMax (copyCycles).
func (r *Runner) copySource(ctx context.Context, s *source) error {
	slot, pub := slotName(r.id, s.Cluster), pubName(r.id)
	var havePub, haveSlot bool
	if err := s.conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_publication WHERE pubname = $1),
		EXISTS (SELECT 1 FROM pg_replication_slots WHERE slot_name = $2)`, pub, slot).Scan(&havePub, &haveSlot); err != nil {
		return err
	}
	if !havePub {
		var names []string
		for _, t := range s.Tables {
			names = append(names, qname(t.Name))
		}
		if _, err := s.conn.Exec(ctx, fmt.Sprintf("CREATE PUBLICATION %s FOR TABLE %s", ident(pub), strings.Join(names, ", "))); err != nil {
			return fmt.Errorf("source %s: create publication: %w", s.Cluster, err)
		}
	}
	repl, err := pgconn.Connect(ctx, replicationDSN(s.DSN))
	if err != nil {
		return fmt.Errorf("source %s: replication connection: %w", s.Cluster, err)
	}
	s.repl = repl
	if !haveSlot {
		res, err := pglogrepl.CreateReplicationSlot(ctx, repl, slot, "pgoutput",
			pglogrepl.CreateReplicationSlotOptions{SnapshotAction: "EXPORT_SNAPSHOT", Mode: pglogrepl.LogicalReplication})
		if err != nil {
			return fmt.Errorf("source %s: create slot: %w", s.Cluster, err)
		}
		s.snapshot = res.SnapshotName
		if err := r.store.streamStarted(ctx, r.id, s.Cluster, res.ConsistentPoint); err != nil {
			return err
		}
		if err := r.store.SetPhase(ctx, r.id, PhaseCopying, ""); err != nil {
			return err
		}
		r.logf("workflow %d: slot %s on %s at %s", r.id, slot, s.Cluster, res.ConsistentPoint)
	}
	targets, closeTargets, err := r.connectTargets(ctx)
	if err != nil {
		return err
	}
	defer closeTargets()
	for _, t := range targets {
		if _, err := t.Exec(ctx, targetSchema); err != nil {
			return err
		}
	}
	return r.copyCycles(ctx, s, targets)
}

// afterCopy builds the secondary indexes on the targets.
func (r *Runner) afterCopy(ctx context.Context) error {
	targets, closeTargets, err := r.connectTargets(ctx)
	if err != nil {
		return err
	}
	defer closeTargets()
	for i, c := range targets {
		for _, t := range r.plan.Tables {
			for _, ix := range r.info[t.Name].Indexes {
				if _, err := c.Exec(ctx, ix); err != nil {
					return fmt.Errorf("target %s: %s: %w", r.plan.Targets[i].Name, ix, err)
				}
			}
		}
	}
	return nil
}
