package workflows

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/shardgate/shardgate/routestate"
	"github.com/shardgate/shardgate/sqlerr"
)

// switchLockClass is the first key of the advisory lock a switch (or
// complete) holds in main while it runs.
const switchLockClass = lockClass + 1

// SwitchRecord is one switch or reverse of a workflow's traffic, as
// workflow status prints it.
type SwitchRecord struct {
	N         int        `json:"n"`
	Op        string     `json:"op"` // switch or reverse
	StartedAt time.Time  `json:"started_at"`
	DecidedAt *time.Time `json:"decided_at,omitempty"`
	Outcome   string     `json:"outcome"` // done, aborted, dry run
	Error     string     `json:"error,omitempty"`
	Revision  int64      `json:"revision,omitempty"` // the routing revision of the decision
	// Held is the number of statements the proxies held; PauseMS the
	// longest write pause of a proxy (its first held statement to its
	// release), MaxHeldMS the longest one statement waited.
	Held      int64   `json:"held"`
	PauseMS   float64 `json:"pause_ms"`
	MaxHeldMS float64 `json:"max_held_ms"`
	// ClientPauseMS is the headline: the longest of the proxies' client
	// pauses (a proxy's hold to its first held statement answered on the
	// new routing); WaitP50MS and WaitP99MS are the worst proxy's
	// percentiles of the held statements' waits (hold to answer), WaitMaxMS
	// the longest of them all.
	ClientPauseMS float64                 `json:"client_pause_ms"`
	WaitP50MS     float64                 `json:"wait_p50_ms"`
	WaitP99MS     float64                 `json:"wait_p99_ms"`
	WaitMaxMS     float64                 `json:"wait_max_ms"`
	Proxies       map[string]ProxyFigures `json:"proxies"`
	// Steps are the durations of the switch's steps, in order (see
	// switchSteps); the pause the clients see is about the sum of those
	// from "arm" on.
	Steps []SwitchStep `json:"steps,omitempty"`
	Plan  []string     `json:"plan,omitempty"` // dry run
}

// SwitchStep is how long one step of a switch took.
type SwitchStep struct {
	Name string  `json:"name"`
	MS   float64 `json:"ms"`
}

// ProxyFigures are one proxy's figures of a switch.
type ProxyFigures struct {
	Addr    string  `json:"addr"`
	AckMS   float64 `json:"ack_ms"` // from the buffer's revision to the proxy holding
	Held    int64   `json:"held"`
	PauseMS float64 `json:"pause_ms"`
	// ReleaseMS: from the decision's commit to the proxy releasing its
	// held statements on the new routing (clocks of two hosts).
	ReleaseMS float64 `json:"release_ms,omitempty"`
	// ClientPauseMS: from the proxy's hold (its gate armed) to its first
	// held statement answered; the waits of its held statements, hold to
	// answer.
	ClientPauseMS float64 `json:"client_pause_ms"`
	WaitP50MS     float64 `json:"wait_p50_ms"`
	WaitP99MS     float64 `json:"wait_p99_ms"`
	WaitMaxMS     float64 `json:"wait_max_ms"`
}

// Text renders a switch record in a few lines.
func (r *SwitchRecord) Text() string {
	if r.Outcome == "dry run" {
		return fmtLines(r.Plan)
	}
	s := fmt.Sprintf("%s #%d %s at %s", r.Op, r.N, r.Outcome, r.StartedAt.Format(time.RFC3339))
	if r.Revision > 0 {
		s += fmt.Sprintf(" (routing revision %d)", r.Revision)
	}
	s += fmt.Sprintf(": client pause %.1f ms, held writes waited p50 %.1f / p99 %.1f / max %.1f ms (hold to answer); gate pause %.1f ms, %d statements held, longest hold %.1f ms",
		r.ClientPauseMS, r.WaitP50MS, r.WaitP99MS, r.WaitMaxMS, r.PauseMS, r.Held, r.MaxHeldMS)
	if r.Error != "" {
		s += "; " + r.Error
	}
	s += "\n"
	ids := make([]string, 0, len(r.Proxies))
	for id := range r.Proxies {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		p := r.Proxies[id]
		s += fmt.Sprintf("    proxy %s (%s): acknowledged in %.1f ms, held %d, client pause %.1f ms, waits p50 %.1f / p99 %.1f / max %.1f ms, gate pause %.1f ms",
			id, p.Addr, p.AckMS, p.Held, p.ClientPauseMS, p.WaitP50MS, p.WaitP99MS, p.WaitMaxMS, p.PauseMS)
		if p.ReleaseMS != 0 {
			s += fmt.Sprintf(", released %.1f ms after the decision", p.ReleaseMS)
		}
		s += "\n"
	}
	if len(r.Steps) > 0 {
		var parts []string
		for _, st := range r.Steps {
			parts = append(parts, fmt.Sprintf("%s %.1f", st.Name, st.MS))
		}
		s += "    steps (ms): " + strings.Join(parts, ", ") + "\n"
	}
	return s
}

func fmtLines(lines []string) string {
	s := ""
	for _, l := range lines {
		s += l + "\n"
	}
	return s
}

// commandLockWait is how long an operator's switch, reverse, complete or
// cancel waits for the switch lock: a runner takes it for a moment when it
// sees the traffic change direction (to finish or roll back a switch whose
// process died), and a complete right after a switch met that moment
// (55P03, TestSwitchKill9MoveTables in CI). A switch that really runs
// holds it far longer.
const commandLockWait = 5 * time.Second

// lockSwitchConn takes the workflow's switch lock on a connection of its
// own to main, returned for the switch's revisions, trying for up to wait
// (0: once).
func (s *Store) lockSwitchConn(ctx context.Context, id int64, wait time.Duration) (*pgx.Conn, func(), error) {
	if id <= 0 || id > math.MaxInt32 {
		return nil, nil, sqlerr.New(sqlerr.InvalidParameterValue, "workflow id %d out of range", id)
	}
	c, err := pgx.Connect(ctx, s.dsn)
	if err != nil {
		return nil, nil, err
	}
	deadline := time.Now().Add(wait)
	for {
		var ok bool
		err := c.QueryRow(ctx, "SELECT pg_try_advisory_lock($1, $2)", int32(switchLockClass), int32(id)).Scan(&ok)
		if err == nil && ok {
			break
		}
		if err == nil && time.Now().Before(deadline) {
			select {
			case <-ctx.Done():
				err = ctx.Err()
			case <-time.After(50 * time.Millisecond):
				continue
			}
		}
		c.Close(context.Background())
		if err == nil {
			err = sqlerr.New(sqlerr.LockNotAvailable, "workflow %d: another switch, reverse or complete of it is running", id)
		}
		return nil, nil, err
	}
	// Unlock before closing: a closed connection's session (and its lock)
	// ends a moment after Close returns, and a switch right after a dry run
	// found the lock still held (55P03: TestSwitchRefusesAnInexactStreamBack
	// in CI).
	return c, func() {
		uctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, _ = c.Exec(uctx, "SELECT pg_advisory_unlock($1, $2)", int32(switchLockClass), int32(id))
		cancel()
		c.Close(context.Background())
	}, nil
}

// lockForSwitch takes the switch lock, finishes or rolls back a switch
// whose process died, and loads the workflow, refused when it is over.
func (s *Store) lockForSwitch(ctx context.Context, id int64) (*pgx.Conn, func(), *Workflow, error) {
	conn, unlock, err := s.lockSwitchConn(ctx, id, commandLockWait)
	if err != nil {
		return nil, nil, nil, err
	}
	w, err := s.Get(ctx, id)
	if err == nil {
		err = recoverSwitch(ctx, s, id)
	}
	if err == nil {
		w, err = s.Get(ctx, id)
	}
	if err == nil && (w.Phase == PhaseCompleted || w.Phase == PhaseCancelled) {
		err = refused("workflow %d is %s", id, w.Phase)
	}
	if err != nil {
		unlock()
		return nil, nil, nil, err
	}
	return conn, unlock, w, nil
}

func (s *Store) lockSwitch(ctx context.Context, id int64) (func(), error) {
	_, unlock, err := s.lockSwitchConn(ctx, id, 0)
	return unlock, err
}

// lockSwitchWaiting is lockSwitch for an operator's command: it waits up
// to commandLockWait for a runner's moment with the lock.
func (s *Store) lockSwitchWaiting(ctx context.Context, id int64) (func(), error) {
	_, unlock, err := s.lockSwitchConn(ctx, id, commandLockWait)
	return unlock, err
}

func (s *Store) setSwitching(ctx context.Context, id int64, sw *switching) error {
	var data []byte
	if sw != nil {
		var err error
		if data, err = json.Marshal(sw); err != nil {
			return err
		}
	}
	return s.exec(ctx, `UPDATE shardgate.workflows SET switching = $2, updated_at = now() WHERE id = $1`, id, data)
}

func (s *Store) getSwitching(ctx context.Context, id int64) (*switching, error) {
	s.mu.Lock()
	s.live(ctx)
	defer s.mu.Unlock()
	var data []byte
	if err := s.conn.QueryRow(ctx, `SELECT switching FROM shardgate.workflows WHERE id = $1`, id).Scan(&data); err != nil {
		return nil, err
	}
	if data == nil {
		return nil, nil
	}
	sw := &switching{}
	return sw, json.Unmarshal(data, sw)
}

func (s *Store) nextSwitch(ctx context.Context, id int64) (int, error) {
	s.mu.Lock()
	s.live(ctx)
	defer s.mu.Unlock()
	var n int
	err := s.conn.QueryRow(ctx, `SELECT coalesce(max(n), 0) + 1 FROM shardgate.workflow_switches WHERE workflow_id = $1`, id).Scan(&n)
	return n, err
}

// switchCount is the number of decided switches and reverses.
func (s *Store) switchCount(ctx context.Context, id int64) (int, error) {
	s.mu.Lock()
	s.live(ctx)
	defer s.mu.Unlock()
	var n int
	err := s.conn.QueryRow(ctx, `SELECT count(*) FROM shardgate.workflow_switches WHERE workflow_id = $1 AND outcome = 'done'`, id).Scan(&n)
	return n, err
}

func insertSwitch(ctx context.Context, tx pgx.Tx, id int64, r *SwitchRecord) error {
	args, err := switchArgs(id, r)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, insertSwitchSQL, args...)
	return err
}

// switchArgs are insertSwitchSQL's arguments for record r.
func switchArgs(id int64, r *SwitchRecord) ([]any, error) {
	proxies, err := json.Marshal(r.Proxies)
	if err != nil {
		return nil, err
	}
	steps, err := json.Marshal(r.Steps)
	if err != nil {
		return nil, err
	}
	if r.Steps == nil {
		steps = []byte("[]")
	}
	return []any{id, r.N, r.Op, r.StartedAt, r.DecidedAt, r.Outcome, r.Error, r.Revision, r.Held, r.PauseMS, r.MaxHeldMS, proxies, steps,
		r.ClientPauseMS, r.WaitP50MS, r.WaitP99MS, r.WaitMaxMS}, nil
}

// insertSwitchSQL records (or updates) a switch (switchArgs).
const insertSwitchSQL = `INSERT INTO shardgate.workflow_switches (workflow_id, n, op, started_at, decided_at, outcome, error, revision, held, pause_ms, max_held_ms, proxies, steps,
			client_pause_ms, wait_p50_ms, wait_p99_ms, wait_max_ms)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)
		ON CONFLICT (workflow_id, n) DO UPDATE SET decided_at = $5, outcome = $6, error = $7, revision = $8, held = $9, pause_ms = $10, max_held_ms = $11, proxies = $12, steps = $13,
			client_pause_ms = $14, wait_p50_ms = $15, wait_p99_ms = $16, wait_max_ms = $17`

func (s *Store) updateSwitch(ctx context.Context, id int64, r *SwitchRecord) error {
	s.mu.Lock()
	s.live(ctx)
	defer s.mu.Unlock()
	return pgx.BeginFunc(ctx, s.conn, func(tx pgx.Tx) error { return insertSwitch(ctx, tx, id, r) })
}

// Switches lists a workflow's switches, oldest first.
func (s *Store) Switches(ctx context.Context, id int64) ([]*SwitchRecord, error) {
	s.mu.Lock()
	s.live(ctx)
	defer s.mu.Unlock()
	rows, err := s.conn.Query(ctx, `SELECT n, op, started_at, decided_at, outcome, error, revision, held, pause_ms, max_held_ms, proxies, steps,
			client_pause_ms, wait_p50_ms, wait_p99_ms, wait_max_ms
		FROM shardgate.workflow_switches WHERE workflow_id = $1 ORDER BY n`, id)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (*SwitchRecord, error) {
		r := &SwitchRecord{}
		err := row.Scan(&r.N, &r.Op, &r.StartedAt, &r.DecidedAt, &r.Outcome, &r.Error, &r.Revision, &r.Held, &r.PauseMS, &r.MaxHeldMS, &r.Proxies, &r.Steps,
			&r.ClientPauseMS, &r.WaitP50MS, &r.WaitP99MS, &r.WaitMaxMS)
		return r, err
	})
}

// ensureStreams records the streams of sources (their slot and
// publication), their markers cleared.
func (s *Store) ensureStreams(ctx context.Context, id int64, sources []*Source) error {
	for _, src := range sources {
		if err := s.exec(ctx, `INSERT INTO shardgate.workflow_streams (workflow_id, source, slot, publication) VALUES ($1, $2, $3, $4)
			ON CONFLICT (workflow_id, source) DO UPDATE SET marker = '', updated_at = now()`, id, src.Cluster, slotName(id, src.Cluster), pubName(id)); err != nil {
			return err
		}
	}
	return nil
}

// markerApplied records that the stream from source applied marker and
// notifies markerChannel, which a switch waiting for it LISTENs on.
func (s *Store) markerApplied(ctx context.Context, id int64, source, marker string) error {
	return s.exec(ctx, `WITH m AS (UPDATE shardgate.workflow_streams SET marker = $3, applied_at = now(), updated_at = now() WHERE workflow_id = $1 AND source = $2 RETURNING 1)
		SELECT pg_notify($4, $3) FROM m`, id, source, marker, markerChannel)
}

// markerChannel is the channel markerApplied notifies with the marker.
const markerChannel = "shardgate_workflow_markers"

// collectFigures reads each proxy's figures of the switch's buffer, as
// the proxies report them at their next heartbeat (waiting up to wait).
func (s *switcher) collectFigures(ctx context.Context, wait time.Duration) {
	deadline := time.Now().Add(wait)
	for {
		ps, err := routestate.Proxies(ctx, s.main)
		if err != nil {
			return
		}
		done := true
		var last time.Time // the last proxy's release
		s.rec.Held, s.rec.PauseMS, s.rec.MaxHeldMS = 0, 0, 0
		s.rec.ClientPauseMS, s.rec.WaitP50MS, s.rec.WaitP99MS, s.rec.WaitMaxMS = 0, 0, 0, 0
		for _, p := range ps {
			f, ok := s.rec.Proxies[p.ID]
			if !ok {
				continue
			}
			h := p.Held
			if h.Request != s.sw.Buffer || h.Released.IsZero() {
				done = false
				continue
			}
			if h.Answered < h.Buffered {
				done = false // a held statement not answered yet
			}
			f.Held = h.Buffered
			f.PauseMS, f.ReleaseMS = 0, 0
			if !s.decidedAt.IsZero() {
				f.ReleaseMS = ms(h.Released.Sub(s.decidedAt))
				if h.Released.After(last) {
					last = h.Released
				}
			}
			if h.Buffered > 0 {
				f.PauseMS = ms(h.Released.Sub(h.FirstHeld))
			}
			f.ClientPauseMS = 0
			if !h.FirstAnswered.IsZero() {
				f.ClientPauseMS = ms(h.FirstAnswered.Sub(h.ArmedAt))
			}
			f.WaitP50MS, f.WaitP99MS, f.WaitMaxMS = ms(h.WaitP50), ms(h.WaitP99), ms(h.WaitMax)
			s.rec.ClientPauseMS = max(s.rec.ClientPauseMS, f.ClientPauseMS)
			s.rec.WaitP50MS = max(s.rec.WaitP50MS, f.WaitP50MS)
			s.rec.WaitP99MS = max(s.rec.WaitP99MS, f.WaitP99MS)
			s.rec.WaitMaxMS = max(s.rec.WaitMaxMS, f.WaitMaxMS)
			s.rec.Proxies[p.ID] = f
			s.rec.Held += f.Held
			s.rec.PauseMS = max(s.rec.PauseMS, f.PauseMS)
			s.rec.MaxHeldMS = max(s.rec.MaxHeldMS, ms(h.MaxHeld))
		}
		if done || time.Now().After(deadline) {
			if !last.IsZero() {
				s.setStep("release", ms(last.Sub(s.decidedAt)))
			}
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// CompleteOptions tune Complete.
type CompleteOptions struct {
	// KeepData keeps the sources' copies of the tables (without their
	// write-refusing triggers); by default they are dropped.
	KeepData bool
	// File is the topology file to write the routing into (WriteBack);
	// "" writes nothing.
	File string
}

// Complete ends a switched workflow for good: the reverse stream's slots
// and publications are dropped, the sources' copies of the tables are
// dropped (or kept with KeepData, writable again), and the routing in
// force is written into the topology file. It returns the edit to make by
// hand when the file cannot be written (with the error).
func Complete(ctx context.Context, store *Store, id int64, o CompleteOptions) ([]byte, error) {
	conn, unlock, w, err := store.lockForSwitch(ctx, id)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if w.Traffic != TrafficTarget {
		return nil, refused("workflow %d: traffic is on the sources", id).
			WithHint("Switch it first (shardgate workflow switch %d), or cancel it.", id)
	}
	p, err := NewPlan(w.Spec)
	if err != nil {
		return nil, err
	}
	// The runner ends its stream at its next check; the slots go.
	if err := store.SetPhase(ctx, id, PhaseCompleted, ""); err != nil {
		return nil, err
	}
	rev := p.reversed()
	for _, src := range rev.Sources {
		if err := dropSlot(ctx, src, slotName(id, src.Cluster), pubName(id)); err != nil {
			return nil, err
		}
		if err := execOn(ctx, src.DSN, `DELETE FROM shardgate.workflow_target WHERE workflow_id = `+fmt.Sprint(id)); err != nil {
			return nil, fmt.Errorf("%s: %w", src.Cluster, err)
		}
	}
	for _, src := range p.Sources {
		// Every table: a reference table is on every source cluster.
		sql := triggersSQL(id, p.Tables, false) + fmt.Sprintf(`DELETE FROM shardgate.workflow_target WHERE workflow_id = %d;`, id)
		if !o.KeepData {
			for _, t := range p.Tables {
				sql += "DROP TABLE IF EXISTS " + qname(t.Name) + ";"
			}
		}
		if err := execOn(ctx, src.DSN, "SET lock_timeout = 5000; "+sql); err != nil {
			return nil, fmt.Errorf("%s: %w", src.Cluster, err)
		}
	}
	if o.File == "" {
		return nil, nil
	}
	cur, err := routestate.Load(ctx, conn)
	if err != nil {
		return nil, err
	}
	edit, err := routestate.WriteBack(o.File, cur.State)
	if err != nil {
		return edit, fmt.Errorf("workflow %d completed; the topology file was not written: %w", id, err)
	}
	return nil, nil
}

// errSwitched refuses a cancel once traffic is on the targets.
func errSwitched(id int64) error {
	return refused("workflow %d: traffic is on the targets", id).
		WithHint("Move it back first (shardgate workflow reverse %d), or complete the workflow.", id)
}
