package workflows

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// The steps of a switch that run while the proxies hold writes, cut to a
// few round trips: one per serving cluster to block its writes, the
// catch-up and the sequences concurrently.

// syncPrefix starts the content of a switch marker written before the
// hold: the stream records it applied and goes on (it awaits the switch
// only for the marker written once the writes are blocked).
const syncPrefix = "sync-"

// concurrently runs f on every element of xs at once and joins the errors.
func concurrently[T any](xs []T, f func(i int, x T) error) error {
	errs := make([]error, len(xs))
	var wg sync.WaitGroup
	for i, x := range xs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f(i, x)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// presync brings the stream close to the serving side's WAL before the
// hold: a marker is committed on every serving cluster (synchronously: the
// connections have synchronous_commit on, which flushes the writes before
// it) and awaited applied, up to
// three times while a round takes longer than 100 ms. What the stream has
// to apply once the writes are blocked is then only what was written
// during the last round, the arming and the acknowledgements.
func (s *switcher) presync(ctx context.Context) error {
	for round := 1; round <= 3; round++ {
		start := time.Now()
		marker := fmt.Sprintf("%s%s-%d", syncPrefix, s.sw.Buffer, round)
		if err := concurrently(s.locks, func(i int, c *pgx.Conn) error {
			_, err := c.Exec(ctx, `SELECT pg_logical_emit_message(true, '`+switchMarker+`', '`+marker+`')`)
			return err
		}); err != nil {
			return err
		}
		if err := s.waitMarker(ctx, marker, 10*time.Second); err != nil {
			return err
		}
		if time.Since(start) < 100*time.Millisecond {
			return nil
		}
	}
	return nil
}

// block blocks the writes on every serving cluster at once, in one round
// trip each: in one transaction, LOCK TABLE ... IN EXCLUSIVE MODE waits
// for the transactions open on the tables (TxWait), the trigger that
// refuses writes with 40001 is created, and the switch's marker is
// written; the commit (synchronous on these connections: the WAL sender
// sends only flushed WAL) releases the lock with the trigger in force, so a write that
// reaches the serving side from then on is refused, and the stream that
// applies the marker has applied every write before it.
func (s *switcher) block(ctx context.Context) error {
	trig := strings.TrimPrefix(triggersSQL(s.id, s.sd.from.Tables, true), refuseFunction)
	return concurrently(s.locks, func(i int, c *pgx.Conn) error {
		_, err := c.Exec(ctx, fmt.Sprintf("BEGIN; SET LOCAL lock_timeout = %d; LOCK TABLE %s IN EXCLUSIVE MODE; %s SELECT pg_logical_emit_message(true, '%s', '%s'); COMMIT",
			s.o.TxWait.Milliseconds(), s.sd.tableList(), trig, switchMarker, s.sw.Buffer))
		if err != nil {
			return fmt.Errorf("%s: block writes (transactions open on the tables must end within %s): %w", s.sd.fromClusters()[i].Cluster, s.o.TxWait, err)
		}
		return nil
	})
}

// waitMarker waits until the stream from every serving cluster applied
// marker: it looks on the switch's own connection to main (LISTENing on
// markerChannel since before the hold) at each notification and every
// 20 ms.
func (s *switcher) waitMarker(ctx context.Context, marker string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		var n int
		if err := s.main.QueryRow(context.WithoutCancel(ctx), `SELECT count(*) FROM shardgate.workflow_streams WHERE workflow_id = $1 AND marker = $2`,
			s.id, marker).Scan(&n); err != nil {
			return err
		}
		if n >= len(s.sd.fromClusters()) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the stream did not apply the marker %s within %s", marker, limit)
		}
		if err := s.awaitNotification(ctx, deadline); err != nil {
			return fmt.Errorf("the stream did not apply the last writes in time: %w", err)
		}
	}
}

// awaitNotification waits for a notification on the switch's connection
// to main, up to 20 ms (and at most until deadline); it fails only when
// ctx ends.
func (s *switcher) awaitNotification(ctx context.Context, deadline time.Time) error {
	wctx, cancel := context.WithTimeout(ctx, min(20*time.Millisecond, time.Until(deadline)+time.Millisecond))
	_, err := s.main.WaitForNotification(wctx)
	cancel()
	if err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return nil
}

// ownedSequences lists the sequences owned by the moving tables on the
// serving side (before the hold), and connects to the side about to serve
// when there are any.
func (s *switcher) ownedSequences(ctx context.Context) error {
	var names []string
	for _, t := range s.sd.from.Tables {
		names = append(names, qname(t.Name))
	}
	seen := map[string]bool{}
	for i, c := range s.locks {
		rows, err := c.Query(ctx, `SELECT format('%I.%I', n.nspname, c.relname)
			FROM pg_depend d JOIN pg_class c ON c.oid = d.objid AND c.relkind = 'S' JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE d.classid = 'pg_class'::regclass AND d.refobjid = ANY($1::regclass[]) AND d.deptype IN ('a', 'i')`, names)
		if err != nil {
			return fmt.Errorf("%s: sequences: %w", s.sd.fromClusters()[i].Cluster, err)
		}
		seqs, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		for _, q := range seqs {
			if !seen[q] {
				seen[q] = true
				s.seqs = append(s.seqs, q)
			}
		}
	}
	if len(s.seqs) == 0 {
		return nil
	}
	for _, t := range s.sd.to.Sources {
		c, err := pgx.Connect(ctx, t.DSN)
		if err != nil {
			return fmt.Errorf("%s: %w", t.Cluster, err)
		}
		s.standby = append(s.standby, c)
	}
	return nil
}

// sequences sets the sequences of the moving tables on the side about to
// serve past the values used on the serving side, whose writes are
// blocked.
func (s *switcher) sequences(ctx context.Context) error {
	if len(s.seqs) == 0 {
		return nil
	}
	var mu sync.Mutex
	last := map[string]int64{}
	if err := concurrently(s.locks, func(i int, c *pgx.Conn) error {
		rows, err := c.Query(ctx, `SELECT format('%I.%I', schemaname, sequencename), coalesce(last_value, 0) FROM pg_sequences
			WHERE format('%I.%I', schemaname, sequencename) = ANY($1)`, s.seqs)
		if err != nil {
			return fmt.Errorf("%s: sequences: %w", s.sd.fromClusters()[i].Cluster, err)
		}
		var name string
		var v int64
		_, err = pgx.ForEachRow(rows, []any{&name, &v}, func() error { mu.Lock(); last[name] = max(last[name], v); mu.Unlock(); return nil })
		return err
	}); err != nil {
		return err
	}
	var names []string
	var values []int64
	for name, v := range last {
		if v > 0 {
			names, values = append(names, name), append(values, v)
		}
	}
	if len(names) == 0 {
		return nil
	}
	return concurrently(s.standby, func(i int, c *pgx.Conn) error {
		if _, err := c.Exec(ctx, `SELECT setval(format('%I.%I', ps.schemaname, ps.sequencename), v.last) FROM pg_sequences ps
			JOIN unnest($1::text[], $2::bigint[]) AS v(name, last) ON format('%I.%I', ps.schemaname, ps.sequencename) = v.name
			WHERE coalesce(ps.last_value, 0) < v.last`, names, values); err != nil {
			return fmt.Errorf("%s: sequences: %w", s.sd.to.Sources[i].Cluster, err)
		}
		return nil
	})
}
