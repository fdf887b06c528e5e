package workflows

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
)

// errCycleEnd ends a copy worker at a chunk boundary once its cycle has
// held its snapshot for Spec.SnapshotMax.
var errCycleEnd = errors.New("copy cycle ended")

// copyCycles copies the source's tables that are not copied yet, in
// cycles. Each cycle reads under one snapshot, taken by a transaction on
// the source's connection and exported to the cycle's workers (up to
// Spec.CopyParallel tables at once), and ends when every table is copied
// or, at the workers' next chunk boundaries, once it has held its snapshot
// for Spec.SnapshotMax. Before the next cycle copies, the stream catches
// up under that cycle's snapshot (cycles.go).
func (r *Runner) copyCycles(ctx context.Context, s *source, targets []*pgx.Conn) error {
	for n := 0; ; n++ {
		var pending []*TablePlan
		for _, t := range s.Tables {
			pos, err := r.readPos(ctx, targets, s.Cluster, t.Name.String())
			if err != nil {
				return err
			}
			if !allDone(pos) {
				pending = append(pending, t)
			}
		}
		if len(pending) == 0 {
			return nil
		}
		err := pgx.BeginTxFunc(ctx, s.conn, pgx.TxOptions{IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
			if s.snapshot != "" {
				// The slot's snapshot: everything its stream sends is after it.
				if _, err := tx.Exec(ctx, "SET TRANSACTION SNAPSHOT '"+s.snapshot+"'"); err != nil {
					return err
				}
				s.snapshot = ""
			}
			var exported, current string
			if err := tx.QueryRow(ctx, "SELECT pg_export_snapshot(), pg_current_snapshot()::text").Scan(&exported, &current); err != nil {
				return fmt.Errorf("source %s: export snapshot: %w", s.Cluster, err)
			}
			if n > 0 {
				if err := r.catchUp(ctx, s, tx, current); err != nil {
					return err
				}
			}
			r.logf("workflow %d: copy cycle %d on %s under snapshot %s", r.id, n+1, s.Cluster, current)
			return r.copyCycle(ctx, s, pending, exported, current)
		})
		if err != nil && !errors.Is(err, errCycleEnd) {
			return err
		}
	}
}

// catchUp streams the changes the next cycle's snapshot (current) sees,
// up to a WAL position written after it was taken.
func (r *Runner) catchUp(ctx context.Context, s *source, tx pgx.Tx, current string) error {
	gate, err := parseSnapshot(current)
	if err != nil {
		return err
	}
	var until string
	if err := tx.QueryRow(ctx, "SELECT pg_logical_emit_message(false, 'shardgate', '')::text").Scan(&until); err != nil {
		return fmt.Errorf("source %s: %w", s.Cluster, err)
	}
	lsn, err := pglogrepl.ParseLSN(until)
	if err != nil {
		return err
	}
	if err := r.streamUntil(ctx, s, &catchUp{gate: gate, until: lsn}); err != nil {
		return err
	}
	r.logf("workflow %d: stream of %s caught up to %s between copy cycles", r.id, s.Cluster, until)
	return nil
}

// copyCycle copies the pending tables under the exported snapshot with
// up to Spec.CopyParallel workers, each with its own connections; it
// returns errCycleEnd when the cycle ended before every table was copied.
func (r *Runner) copyCycle(ctx context.Context, s *source, pending []*TablePlan, exported, snap string) error {
	var deadline time.Time
	if r.plan.Spec.SnapshotMax > 0 {
		deadline = time.Now().Add(r.plan.Spec.SnapshotMax)
	}
	workers := min(max(r.plan.Spec.CopyParallel, 1), len(pending))
	queue := make(chan *TablePlan, len(pending))
	for _, t := range pending {
		queue <- t
	}
	close(queue)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if errs[w] = r.copyWorker(ctx, s, queue, exported, snap, deadline); errs[w] != nil && !errors.Is(errs[w], errCycleEnd) {
				cancel()
			}
		}()
	}
	wg.Wait()
	var ended error
	for _, err := range errs {
		switch {
		case errors.Is(err, errCycleEnd):
			ended = err
		case err != nil && !errors.Is(err, context.Canceled):
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return ended
}

// copyWorker copies tables from the queue under the exported snapshot
// until the queue is empty or the cycle ends.
func (r *Runner) copyWorker(ctx context.Context, s *source, queue <-chan *TablePlan, exported, snap string, deadline time.Time) error {
	conn, err := pgx.Connect(ctx, s.DSN)
	if err != nil {
		return fmt.Errorf("source %s: %w", s.Cluster, err)
	}
	defer conn.Close(context.Background())
	targets, closeTargets, err := r.connectTargets(ctx)
	if err != nil {
		return err
	}
	defer closeTargets()
	return pgx.BeginTxFunc(ctx, conn, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET TRANSACTION SNAPSHOT '"+exported+"'"); err != nil {
			return err
		}
		for t := range queue {
			if !deadline.IsZero() && time.Now().After(deadline) {
				return errCycleEnd
			}
			if err := r.copyTable(ctx, s.Source, tx, targets, t, snap, deadline); err != nil {
				return err
			}
			r.logf("workflow %d: %s copied from %s", r.id, t.Name, s.Cluster)
		}
		return nil
	})
}
