package backup

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/shardgate/shardgate/routestate"
)

func liveProxies(ctx context.Context, conn *pgx.Conn) ([]routestate.Proxy, error) {
	ps, err := routestate.Proxies(ctx, conn)
	return slices.DeleteFunc(ps, func(p routestate.Proxy) bool { return !p.Live }), err
}

// waitAcks waits until every proxy live before the hold has armed its
// gate for it (one that deregistered meanwhile stopped: it holds
// nothing), up to AckTimeout.
func (h *hold) waitAcks(ctx context.Context) error {
	deadline := time.Now().Add(h.o.AckTimeout)
	for {
		ps, err := routestate.Proxies(ctx, h.f.main)
		if err != nil {
			return err
		}
		var missing []string
		for _, want := range h.live {
			i := slices.IndexFunc(ps, func(p routestate.Proxy) bool { return p.ID == want.ID })
			if i < 0 {
				continue
			}
			if _, ok := ps[i].Acked[h.id]; !ok {
				missing = append(missing, fmt.Sprintf("%s (%s)", want.ID, want.Addr))
			}
		}
		if len(missing) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return ErrHold.WithDetail("Proxies did not hold the writes within %s: %s.", h.o.AckTimeout, strings.Join(missing, ", ")).
				WithHint("A proxy that is frozen or cannot reach main stops the restore point; SHOW PROXIES lists them.")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// openWork is what still writes on a server: client sessions with a
// transaction id, and shardgate's prepared transactions.
type openWork struct {
	sessions []string // "pid 123 (application, state)"
	prepared []string // gids
}

func (w openWork) empty() bool { return len(w.sessions) == 0 && len(w.prepared) == 0 }

// open lists what still writes on s, leaving out the sessions of ours.
func (h *hold) open(ctx context.Context, s *server, ours []uint32) (openWork, error) {
	var w openWork
	rows, err := s.conn.Query(ctx, `SELECT format('pid %s (%s, %s)', pid, nullif(application_name, ''), state) FROM pg_stat_activity
		WHERE backend_xid IS NOT NULL AND backend_type = 'client backend' AND pid <> ALL($1)`, ours)
	if err != nil {
		return w, err
	}
	if w.sessions, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		return w, err
	}
	w.prepared, err = preparedGIDs(ctx, s.conn)
	return w, err
}

func preparedGIDs(ctx context.Context, conn *pgx.Conn) ([]string, error) {
	rows, err := conn.Query(ctx, `SELECT gid FROM pg_prepared_xacts WHERE gid LIKE 'shardgate\_%' ORDER BY prepared`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// ourPIDs are the backend pids of the fleet's connections.
func (f *fleet) ourPIDs() []uint32 {
	pids := []uint32{f.main.PgConn().PID()}
	for _, c := range f.conns {
		pids = append(pids, c.PgConn().PID())
	}
	return pids
}

// settleAndCut waits until nothing writes on any server (up to TxWait),
// then writes the points under the decision log's lock; prepared
// transactions found under the lock send it back to waiting.
func (h *hold) settleAndCut(ctx context.Context) error {
	start := time.Now()
	deadline := start.Add(h.o.TxWait)
	resolved := false
	ours := h.f.ourPIDs()
	for {
		var mu sync.Mutex
		var left []string
		err := h.f.each(false, func(s *server) error {
			w, err := h.open(ctx, s, ours)
			if err != nil || w.empty() {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			left = append(left, fmt.Sprintf("%s: %d writing transactions [%s], %d prepared [%s]", s.name(),
				len(w.sessions), strings.Join(w.sessions, ", "), len(w.prepared), strings.Join(w.prepared, ", ")))
			return nil
		})
		if err != nil {
			return err
		}
		if len(left) == 0 {
			h.timed("settle")
			cut, err := h.cut(ctx)
			if err != nil || cut {
				return err
			}
			left = []string{"prepared transactions appeared under the decision log's lock"}
		}
		now := time.Now()
		if !resolved && now.Sub(start) > h.o.TxWait/2 {
			// A decided commit whose COMMIT PREPARED is late (its proxy
			// retries with backoff): the resolver finishes it.
			resolved = true
			if err := h.f.resolve(ctx); err != nil {
				h.o.logf("restore point %s: two-phase commit resolver: %v", h.name, err)
			}
		}
		if now.After(deadline) {
			slices.Sort(left)
			return ErrHold.WithDetail("Writes did not end within %s: %s.", h.o.TxWait, strings.Join(left, "; ")).
				WithHint("A transaction open before the hold (the proxies do not hold it) or a client writing past the proxies keeps a restore point from being consistent; end it, or give --tx-wait more time.")
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("restore point %s: waiting for writes to end: %w", h.name, ctx.Err())
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// cut writes the points: in one transaction on main, the decision log is
// locked so that no two-phase commit is decided meanwhile; with no
// prepared transaction on any server, each server but main's writes its
// point at once, then main's. It reports false (nothing written) when a
// server holds prepared transactions under the lock.
func (h *hold) cut(ctx context.Context) (bool, error) {
	tx, err := h.f.main.Begin(ctx)
	if err != nil {
		return false, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	lockWait := time.Until(deadlineOf(ctx))
	if _, err := tx.Exec(ctx, fmt.Sprintf("SET LOCAL lock_timeout = %d", max(lockWait.Milliseconds(), 1))); err != nil {
		return false, err
	}
	if _, err := tx.Exec(ctx, `LOCK TABLE shardgate.commit_decisions IN EXCLUSIVE MODE`); err != nil {
		return false, fmt.Errorf("lock the decision log on main: %w", err)
	}
	var mu sync.Mutex
	prepared := 0
	if err := h.f.each(false, func(s *server) error {
		gids, err := preparedGIDs(ctx, s.conn)
		mu.Lock()
		prepared += len(gids)
		mu.Unlock()
		return err
	}); err != nil || prepared > 0 {
		return false, err
	}
	write := func(s *server) error {
		s.point = Point{Clusters: s.clusters, SystemID: s.id, Main: s.main}
		return s.conn.QueryRow(ctx, `SELECT lsn::text, pg_walfile_name(lsn) FROM pg_create_restore_point($1) AS lsn`, h.name).
			Scan(&s.point.LSN, &s.point.WALFile)
	}
	if err := h.f.each(true, write); err != nil {
		return false, err
	}
	mainServer := h.f.servers[len(h.f.servers)-1]
	if err := write(mainServer); err != nil {
		return false, fmt.Errorf("%s: %w", mainServer.name(), err)
	}
	// Prepared since the check, undecided (the lock): a restore rolls
	// them back.
	if err := h.f.each(false, func(s *server) error {
		gids, err := preparedGIDs(ctx, s.conn)
		mu.Lock()
		h.res.InDoubt += len(gids)
		mu.Unlock()
		return err
	}); err != nil {
		return false, err
	}
	if err := tx.Commit(ctx); err != nil {
		return false, err
	}
	h.res.CreatedAt = time.Now()
	for _, s := range h.f.servers {
		h.res.Points = append(h.res.Points, s.point)
	}
	h.timed("cut")
	return true, nil
}

func deadlineOf(ctx context.Context) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return d
	}
	return time.Now().Add(time.Minute)
}
