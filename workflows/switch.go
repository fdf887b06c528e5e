package workflows

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/shardgate/shardgate/routestate"
	"github.com/shardgate/shardgate/sqlerr"
)

// switchMarker prefixes the logical message a switch writes on each
// serving cluster once its writes are blocked: the stream that applies it
// has applied everything before.
const switchMarker = "shardgate_switch"

// SwitchOptions tune a traffic switch; zero values take the defaults.
type SwitchOptions struct {
	Author string
	DryRun bool
	// MaxLag is the stream lag under which the switch starts (default
	// 1 s), waited for up to LagWait (default 30 s).
	MaxLag, LagWait time.Duration
	// AckTimeout: every live proxy acknowledges the buffer request
	// within it, or the switch aborts (default 1 s).
	AckTimeout time.Duration
	// TxWait: transactions open on the moving tables must end within it
	// for the serving side's writes to be blocked, or the switch aborts
	// (default 1 s).
	TxWait time.Duration
	// Hold is the buffer request's deadline: the switch is decided within
	// it or aborted (default 5 s).
	Hold time.Duration
	Logf func(format string, args ...any)

	// hook runs at each step; an error ends the switch there as the death
	// of its process would: nothing rolled back (tests).
	hook func(step string) error
}

func (o *SwitchOptions) defaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.MaxLag, time.Second)
	def(&o.LagWait, 30*time.Second)
	def(&o.AckTimeout, time.Second)
	def(&o.TxWait, time.Second)
	def(&o.Hold, 5*time.Second)
	if o.Author == "" {
		o.Author = "shardgate workflow"
	}
}

func (o *SwitchOptions) logf(format string, args ...any) {
	if o.Logf != nil {
		o.Logf(format, args...)
	}
}

// errCrash ends a switch at a hook without its rollback (tests).
var errCrash = errors.New("switch process died (test)")

func (o *SwitchOptions) step(name string) error {
	o.logf("step %s at %s", name, time.Now().Format("15:04:05.000"))
	if o.hook != nil {
		return o.hook(name)
	}
	return nil
}

// switching is the record of a switch in progress (workflows.switching),
// cleared by its decision or its rollback: a switch found there with no
// process holding it died before its decision and is rolled back.
type switching struct {
	Op       string    `json:"op"` // "switch" or "reverse"
	To       string    `json:"to"` // the traffic it moves to
	Buffer   string    `json:"buffer"`
	Started  time.Time `json:"started"`
	Deadline time.Time `json:"deadline"`
	N        int       `json:"n"`
}

// Switch moves the workflow's traffic to the target layout (the file's
// group takes the target's shards, or the tables move out of main).
func Switch(ctx context.Context, store *Store, id int64, o SwitchOptions) (*SwitchRecord, error) {
	return flip(ctx, store, id, TrafficTarget, o)
}

// Reverse moves the traffic back to the sources, which the reverse stream
// kept up to date; Switch moves it again.
func Reverse(ctx context.Context, store *Store, id int64, o SwitchOptions) (*SwitchRecord, error) {
	return flip(ctx, store, id, TrafficSource, o)
}

// sides are the clusters a switch moves traffic from and to, and the
// tables it moves.
type sides struct {
	from, to *Plan // from: the stream serving -> standby; to: the stream after the switch
	tables   []string
}

func (sd *sides) fromClusters() []*Source { return sd.from.Sources }
func (sd *sides) toClusters() []*Source   { return sd.to.Sources }

func (sd *sides) tableList() string {
	var q []string
	for _, t := range sd.from.Tables {
		q = append(q, qname(t.Name))
	}
	return strings.Join(q, ", ")
}

func newSides(p *Plan, traffic string) *sides {
	other := TrafficTarget
	if traffic == TrafficTarget {
		other = TrafficSource
	}
	sd := &sides{from: p.serving(traffic), to: p.serving(other)}
	for _, t := range p.Tables {
		sd.tables = append(sd.tables, t.Name.String())
	}
	return sd
}

func opName(to string) string {
	if to == TrafficTarget {
		return "switch"
	}
	return "reverse"
}

// flip runs one switch of the workflow's traffic to the side to. See
// docs/workflows.md, "Switching traffic", for the steps.
func flip(ctx context.Context, store *Store, id int64, to string, o SwitchOptions) (*SwitchRecord, error) {
	o.defaults()
	op := opName(to)
	mainConn, unlock, w, err := store.lockForSwitch(ctx, id)
	if err != nil {
		return nil, err
	}
	defer unlock()
	switch {
	case w.Traffic == to:
		return nil, refused("workflow %d: traffic is on the %ss already", id, to)
	case w.Phase != PhaseStreaming:
		return nil, refused("workflow %d is %s: a switch needs its stream running", id, w.Phase).
			WithHint("Run it (shardgate workflow run %d, or serve --workflows) until status shows it streaming.", id)
	}
	p, err := NewPlan(w.Spec)
	if err != nil {
		return nil, err
	}
	sd := newSides(p, w.Traffic)
	// The stream that runs once the switch is decided must be exact: a
	// reverse of a split is a merge.
	if err := checkExact(ctx, sd.to); err != nil {
		if e, ok := sqlerr.As(err); ok {
			c := *e
			c.Message = fmt.Sprintf("workflow %d: %s refused, nothing held: the stream back after it would not be exact: %s", id, op, e.Message)
			return nil, &c
		}
		return nil, err
	}
	if o.DryRun {
		return &SwitchRecord{Op: op, Outcome: "dry run", Plan: planText(id, op, sd, o)}, nil
	}
	// The proxies live now are the ones to hold the writes: one that
	// stops beating meanwhile (frozen) makes the switch abort.
	live, err := liveProxies(ctx, mainConn)
	if err != nil {
		return nil, err
	}
	if unl, err := store.Lock(ctx, id); err == nil {
		unl()
		return nil, refused("workflow %d: no runner streams it", id).
			WithHint("A switch waits for the stream to apply the last writes: run it (shardgate workflow run %d, or serve --workflows).", id)
	}
	if err := waitLag(ctx, store, id, sd, o); err != nil {
		return nil, err
	}
	n, err := store.nextSwitch(ctx, id)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	sw := switching{Op: op, To: to, Buffer: fmt.Sprintf("wf%d-%d-%d", id, n, now.UnixMilli()), Started: now, Deadline: now.Add(o.Hold), N: n}
	rec := &SwitchRecord{N: n, Op: op, StartedAt: now, Outcome: "aborted", Proxies: map[string]ProxyFigures{}}
	if err := store.setSwitching(ctx, id, &sw); err != nil {
		return nil, err
	}
	s := &switcher{store: store, id: id, main: mainConn, sd: sd, sw: sw, o: o, rec: rec, spec: w.Spec, live: live}
	if err := s.prepare(ctx); err != nil {
		if errors.Is(err, errCrash) {
			return nil, err
		}
		o.logf("workflow %d: %s aborted: %v", id, op, err)
		if rerr := s.rollback(context.WithoutCancel(ctx), err); rerr != nil {
			return rec, fmt.Errorf("%w (and its rollback: %v)", err, rerr)
		}
		return rec, err
	}
	if err := s.decide(ctx); err != nil {
		return rec, err
	}
	return rec, s.after(ctx)
}

// switcher is one switch in progress.
type switcher struct {
	store *Store
	id    int64
	main  *pgx.Conn
	sd    *sides
	sw    switching
	o     SwitchOptions
	rec   *SwitchRecord
	spec  Spec
	armed routestate.Revision
	live  []routestate.Proxy // the proxies to acknowledge
	// locks are connections to the serving side (one per cluster): its
	// markers, write block and sequences.
	locks []*pgx.Conn
	// seqs are the sequences the tables own; standby connects to the side
	// about to serve when there are any.
	seqs    []string
	standby []*pgx.Conn
	// lap is when the step being timed began; decidedAt when the
	// decision committed (the proxies' releases are timed from it).
	lap, decidedAt time.Time
}

// setStep records (or replaces) a step's duration in the record.
func (s *switcher) setStep(name string, d float64) {
	for i := range s.rec.Steps {
		if s.rec.Steps[i].Name == name {
			s.rec.Steps[i].MS = d
			return
		}
	}
	s.rec.Steps = append(s.rec.Steps, SwitchStep{Name: name, MS: d})
}

// timed records the time since the previous step as step name's.
func (s *switcher) timed(name string) {
	now := time.Now()
	if !s.lap.IsZero() {
		s.setStep(name, ms(now.Sub(s.lap)))
	}
	s.lap = now
}

// prepare runs the steps before the decision: the stream back and the
// connections (before the hold), the buffer and its acknowledgements, the
// write block, the catch-up and the sequences.
func (s *switcher) prepare(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	defer func() {
		for _, c := range append(s.locks, s.standby...) {
			c.Close(context.Background())
		}
	}()
	s.timed("")
	// The new stream, from the side about to serve, starts before the
	// writes are held: what the stream applies there until the decision
	// comes back to the serving side as the rows it has already (creating
	// a slot waits for the transactions in progress). Its tables stop
	// refusing writes.
	if err := s.store.ensureStreams(ctx, s.id, s.sd.toClusters()); err != nil {
		return err
	}
	for _, src := range s.sd.toClusters() {
		if err := createStream(ctx, src, s.id); err != nil {
			return err
		}
		if err := execOn(ctx, src.DSN, triggersSQL(s.id, s.sd.to.Tables, false)); err != nil {
			return fmt.Errorf("%s: %w", src.Cluster, err)
		}
	}
	for _, src := range s.sd.fromClusters() {
		// Committed first: catalog rows created in the lock's transaction
		// would hold up whoever creates them meanwhile.
		if err := execOn(ctx, src.DSN, refuseFunction+targetSchema); err != nil {
			return fmt.Errorf("%s: %w", src.Cluster, err)
		}
		// synchronous_commit on: the markers' commits flush the WAL at
		// once, and the WAL sender sends only flushed WAL.
		c, err := pgx.Connect(ctx, src.DSN)
		if err == nil {
			_, err = c.Exec(ctx, "SET synchronous_commit = on")
			s.locks = append(s.locks, c)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", src.Cluster, err)
		}
	}
	// The statements of the arming and of the decision are prepared on
	// main; the proxies' acknowledgements and the streams' markers are
	// listened for there.
	if err := routestate.Prepare(ctx, s.main, decideTrafficSQL, insertSwitchSQL, decidedAtSQL); err != nil {
		return err
	}
	if _, err := s.main.Exec(ctx, "LISTEN "+routestate.AckChannel+"; LISTEN "+markerChannel); err != nil {
		return err
	}
	if err := s.ownedSequences(ctx); err != nil {
		return err
	}
	if err := s.presync(ctx); err != nil {
		return err
	}
	cur, err := routestate.Load(ctx, s.main)
	if err != nil {
		return err
	}
	// While nothing is held, every live proxy is asked to beat (ping): a
	// frozen one aborts the switch here, before a write is held anywhere.
	if err := s.ping(ctx); err != nil {
		return err
	}
	s.timed("before the hold")
	req := &routestate.BufferRequest{ID: s.sw.Buffer, Tables: s.sd.tables, Deadline: s.sw.Deadline}
	for _, c := range s.sd.toClusters() {
		req.Clusters = append(req.Clusters, c.Cluster)
	}
	// From the buffer on, the steps end before its deadline.
	s.sw.Deadline = time.Now().Add(s.o.Hold)
	req.Deadline = s.sw.Deadline
	ctx, cancelHold := context.WithDeadline(ctx, s.sw.Deadline.Add(-200*time.Millisecond))
	defer cancelHold()
	if err := s.store.setSwitching(context.WithoutCancel(ctx), s.id, &s.sw); err != nil {
		return err
	}
	if s.armed, err = routestate.CommitOn(ctx, s.main, cur, s.o.Author, fmt.Sprintf("workflow %d %s: hold writes", s.id, s.sw.Op),
		func(st *routestate.State) error { st.Buffer = req; return nil }, nil); err != nil {
		return err
	}
	s.timed("arm")
	if err := s.o.step("armed"); err != nil {
		return err
	}
	if err := s.waitAcks(ctx, s.live); err != nil {
		return err
	}
	s.timed("acks")
	if err := s.block(ctx); err != nil {
		return err
	}
	s.timed("block")
	if err := s.o.step("blocked"); err != nil {
		return err
	}
	// The stream catches up while the sequences are set.
	var seqErr error
	seqDone := make(chan struct{})
	go func() {
		defer close(seqDone)
		seqErr = s.sequences(ctx)
	}()
	err = s.waitMarker(ctx, s.sw.Buffer, time.Hour)
	<-seqDone
	if err = errors.Join(err, seqErr); err != nil {
		return err
	}
	s.timed("catch-up and sequences")
	return s.o.step("prepared")
}

// decide commits the routing revision that flips the traffic and
// withdraws the buffer request, with the workflow's new traffic in the
// same transaction: the durable decision, in one round trip to main
// (routestate.CommitOn over the revision that armed the buffer; its
// statements were prepared before the hold).
func (s *switcher) decide(ctx context.Context) error {
	key := fmt.Sprint(s.id)
	s.rec.Revision, s.rec.Outcome = s.armed.Rev+1, "done" // as recorded with the decision
	args, err := switchArgs(s.id, s.rec)
	if err != nil {
		return s.undecided(ctx, err)
	}
	rev, err := routestate.CommitOn(ctx, s.main, s.armed, s.o.Author, fmt.Sprintf("workflow %d %s", s.id, s.sw.Op),
		func(st *routestate.State) error {
			st.Buffer = nil
			if s.sw.To == TrafficSource {
				delete(st.Switched, key)
				return nil
			}
			if st.Switched == nil {
				st.Switched = map[string]*routestate.Switch{}
			}
			st.Switched[key] = &routestate.Switch{Workflow: s.id, Kind: string(s.spec.Kind), Group: s.spec.Group, Tables: s.sd.tables,
				Reads: true, Writes: true, To: s.spec.To}
			return nil
		}, func(b *pgx.Batch, _ routestate.Revision) {
			b.Queue(decideTrafficSQL, s.id, s.sw.To)
			b.Queue(insertSwitchSQL, args...)
			b.Queue(decidedAtSQL, s.id, s.rec.N)
		})
	if err != nil {
		return s.undecided(ctx, err)
	}
	d := rev.CreatedAt
	s.rec.DecidedAt = &d
	s.timed("decide")
	s.decidedAt = s.lap
	s.o.logf("workflow %d: %s decided (routing revision %d)", s.id, s.sw.Op, rev.Rev)
	return s.o.step("decided")
}

// undecided rolls back a switch whose decision was not committed (a
// revision written meanwhile, main unreachable): back to the old routing.
func (s *switcher) undecided(ctx context.Context, err error) error {
	s.rec.Outcome, s.rec.Revision, s.rec.DecidedAt = "aborted", 0, nil
	if rerr := s.rollback(context.WithoutCancel(ctx), err); rerr != nil {
		return fmt.Errorf("%w (and its rollback: %v)", err, rerr)
	}
	return err
}

// The statements of the decision besides the revision (decide).
const (
	decideTrafficSQL = `UPDATE shardgate.workflows SET traffic = $2, switching = NULL, updated_at = now() WHERE id = $1`
	// decidedAtSQL: the revision's created_at, now() of the same
	// transaction.
	decidedAtSQL = `UPDATE shardgate.workflow_switches SET decided_at = now() WHERE workflow_id = $1 AND n = $2`
)

// after finishes a decided switch: the old stream's slots are dropped and
// the proxies' figures recorded.
func (s *switcher) after(ctx context.Context) error {
	if err := finishSwitch(ctx, s.store, s.id); err != nil {
		return fmt.Errorf("workflow %d: %s decided; dropping the old stream: %w", s.id, s.sw.Op, err)
	}
	s.collectFigures(ctx, 2*routestate.Beat)
	if err := s.store.updateSwitch(ctx, s.id, s.rec); err != nil {
		return fmt.Errorf("workflow %d: %s decided; recording its figures: %w", s.id, s.sw.Op, err)
	}
	return nil
}

// rollback puts everything back as before the switch: the serving side's
// locks released and triggers dropped, the standby side refusing writes,
// the new stream's slots dropped, then the buffer withdrawn, so the held
// statements run on the old routing.
func (s *switcher) rollback(ctx context.Context, cause error) error {
	for _, c := range s.locks {
		c.Close(ctx)
	}
	s.locks = nil
	s.rec.Error = cause.Error()
	err := undoSwitch(ctx, s.store, s.id, s.sw, s.sd)
	s.collectFigures(ctx, 2*routestate.Beat)
	if uerr := s.store.updateSwitch(ctx, s.id, s.rec); err == nil {
		err = uerr
	}
	return err
}

// undoSwitch rolls back an undecided switch (its process may be gone).
// The held statements are released as soon as the serving side takes
// writes again (its triggers dropped, on all its clusters at once), before
// the side about to serve is put back: they run on the old routing, which
// does not send them there.
func undoSwitch(ctx context.Context, store *Store, id int64, sw switching, sd *sides) error {
	errs := []error{concurrently(sd.fromClusters(), func(_ int, src *Source) error {
		return execOn(ctx, src.DSN, "SET lock_timeout = 5000; "+triggersSQL(id, sd.from.Tables, false))
	})}
	errs = append(errs, withdrawBuffer(ctx, store, id, sw))
	for _, src := range sd.toClusters() {
		errs = append(errs, dropSlot(ctx, src, slotName(id, src.Cluster), pubName(id)))
		errs = append(errs, execOn(ctx, src.DSN, triggersSQL(id, sd.to.Tables, true)))
	}
	errs = append(errs, store.setSwitching(ctx, id, nil))
	return errors.Join(errs...)
}

// withdrawBuffer commits a revision without the switch's buffer request
// if the latest still has it.
func withdrawBuffer(ctx context.Context, store *Store, id int64, sw switching) error {
	var errs []error
	conn, err := pgx.Connect(ctx, store.dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	for attempt := 0; attempt < 5; attempt++ {
		cur, err := routestate.Load(ctx, conn)
		if err != nil || cur.State.Buffer == nil || cur.State.Buffer.ID != sw.Buffer {
			errs = append(errs, err)
			break
		}
		_, err = routestate.CommitOn(ctx, conn, cur, "shardgate workflow", fmt.Sprintf("workflow %d %s aborted", id, sw.Op),
			func(st *routestate.State) error { st.Buffer = nil; return nil }, nil)
		if sqlerr.Code(err) != sqlerr.SerializationFailure {
			errs = append(errs, err)
			break
		}
	}
	return errors.Join(errs...)
}

// recoverSwitch, called with the switch lock held, rolls back a switch
// whose process died before its decision and finishes one that died
// after it.
func recoverSwitch(ctx context.Context, store *Store, id int64) error {
	w, err := store.Get(ctx, id)
	if err != nil {
		return err
	}
	sw, err := store.getSwitching(ctx, id)
	if err != nil {
		return err
	}
	if sw == nil {
		return finishSwitch(ctx, store, id)
	}
	p, err := NewPlan(w.Spec)
	if err != nil {
		return err
	}
	err = undoSwitch(ctx, store, id, *sw, newSides(p, w.Traffic))
	rec := &SwitchRecord{N: sw.N, Op: sw.Op, StartedAt: sw.Started, Outcome: "aborted", Error: "its process ended before the decision; rolled back"}
	return errors.Join(err, store.updateSwitch(ctx, id, rec))
}

// finishSwitch drops the slots and publication of the stream in the
// direction that does not serve (idempotent): after a decided switch,
// the old stream's.
func finishSwitch(ctx context.Context, store *Store, id int64) error {
	w, err := store.Get(ctx, id)
	if err != nil || w.Phase == PhaseCancelled || w.Phase == PhaseCompleted {
		return err
	}
	n, err := store.switchCount(ctx, id)
	if err != nil || n == 0 {
		return err // never switched: the reverse stream was never made
	}
	p, err := NewPlan(w.Spec)
	if err != nil {
		return err
	}
	old := p
	if w.Traffic == TrafficSource {
		old = p.reversed()
	}
	for _, src := range old.Sources {
		if err := dropSlot(ctx, src, slotName(id, src.Cluster), pubName(id)); err != nil {
			return err
		}
	}
	return nil
}

// awaitSwitch is the stream's wait after applying a switch's marker: the
// source's writes are blocked until the switch is decided (the traffic
// moved: errDirection) or rolled back (the stream goes on). A switch
// whose process died is rolled back here.
func (r *Runner) awaitSwitch(ctx context.Context) error {
	lastTry := time.Now()
	for {
		// Not cut short by ctx: the store's connection is shared, and a
		// query cancelled midway closes it.
		c, err := r.store.control(context.WithoutCancel(ctx), r.id)
		if err != nil {
			return err
		}
		if c.traffic != r.traffic || c.phase == PhaseCompleted || c.phase == PhaseCancelled {
			return errDirection
		}
		if !c.switching {
			return nil
		}
		if time.Since(lastTry) > 500*time.Millisecond {
			lastTry = time.Now()
			if unlock, err := r.store.lockSwitch(ctx, r.id); err == nil {
				err = recoverSwitch(ctx, r.store, r.id)
				unlock()
				if err != nil {
					return err
				}
				continue
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}
