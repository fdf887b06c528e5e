package backup

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unicode"

	"github.com/jackc/pgx/v5"

	"github.com/shardgate/shardgate/routestate"
	"github.com/shardgate/shardgate/sqlerr"
	"github.com/shardgate/shardgate/topology"
)

// Options tune CreateRestorePoint; zero values take the defaults.
type Options struct {
	// AckTimeout: every live proxy acknowledges the hold within it, or
	// the restore point is refused (default 1 s).
	AckTimeout time.Duration
	// TxWait: the transactions open when the writes are held, and the
	// prepared transactions, end within it, or the restore point is
	// refused (default 2 s).
	TxWait time.Duration
	// Hold is the deadline of the proxies' hold: the points are written
	// within it or the restore point is refused (default 5 s; at least
	// AckTimeout + TxWait + 1 s).
	Hold time.Duration
	// KeepWAL leaves each server on its WAL file: the point is archived
	// only when the file fills (or archive_timeout passes). By default
	// each server switches to a new file once the writes are released.
	KeepWAL bool
	Author  string
	Logf    func(format string, args ...any)
}

func (o *Options) defaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.AckTimeout, time.Second)
	def(&o.TxWait, 2*time.Second)
	def(&o.Hold, 5*time.Second)
	o.Hold = max(o.Hold, o.AckTimeout+o.TxWait+time.Second)
	if o.Author == "" {
		o.Author = "shardgate backup"
	}
}

func (o *Options) logf(format string, args ...any) {
	if o.Logf != nil {
		o.Logf(format, args...)
	}
}

// Point is what a restore point wrote on one Postgres server.
type Point struct {
	// Clusters are the topology's clusters this server holds (one
	// restore point serves them all: it is a position in the server's WAL).
	Clusters []string `json:"clusters"`
	SystemID string   `json:"system_id"`
	LSN      string   `json:"lsn"`
	// WALFile is the WAL file holding the point: a restore needs it in
	// the archive.
	WALFile string `json:"wal_file"`
	// Main says this is the server of the main group.
	Main bool `json:"main,omitempty"`
}

// Step is one timed step of the hold.
type Step struct {
	Name string  `json:"name"`
	MS   float64 `json:"ms"`
}

// Result describes a restore point made.
type Result struct {
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
	// Pause is the time the proxies held writes: from the routing
	// revision that armed their gates to the one that released them.
	Pause   time.Duration `json:"pause"`
	Steps   []Step        `json:"steps"`
	Proxies int           `json:"proxies"` // the live proxies that held writes
	Points  []Point       `json:"points"`
	// InDoubt counts the undecided prepared transactions seen just after
	// the points (prepared by a writer the gate did not hold): a fleet
	// restored to the point rolls them back (no decision was recorded).
	InDoubt int `json:"in_doubt"`
}

// Refusals. Each is a *sqlerr.Error; the command maps them to exit codes.
var (
	// ErrNotReady: a server is not set up for point-in-time recovery
	// (wal_level, archiving) or is a standby.
	ErrNotReady = sqlerr.New(sqlerr.ObjectNotInPrerequisiteState, "restore point refused, nothing held")
	// ErrHold: the writes could not be held and settled in time (a proxy
	// that did not acknowledge, transactions that did not end).
	ErrHold = sqlerr.New(sqlerr.LockNotAvailable, "restore point refused, writes released")
)

// ValidName checks a restore point's name: 1 to 63 bytes (Postgres's
// limit), no control characters.
func ValidName(name string) error {
	if name == "" || len(name) > 63 {
		return sqlerr.New(sqlerr.InvalidParameterValue, "restore point name must be 1 to 63 bytes long, not %d", len(name))
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return sqlerr.New(sqlerr.InvalidParameterValue, "restore point name %q has a control character", name)
		}
	}
	return nil
}

// CreateRestorePoint makes restore point name on every server of file's
// topology (with main's routing revision over it); see the package
// documentation for the steps.
func CreateRestorePoint(ctx context.Context, file *topology.Topology, name string, o Options) (*Result, error) {
	o.defaults()
	if err := ValidName(name); err != nil {
		return nil, err
	}
	mainDSN := file.Cluster(file.Main().Cluster).DSN
	mainConn, err := pgx.Connect(ctx, mainDSN)
	if err != nil {
		return nil, fmt.Errorf("main: %w", err)
	}
	defer mainConn.Close(context.Background())
	if err := ensureSchema(ctx, mainConn); err != nil {
		return nil, err
	}
	if err := checkUnused(ctx, mainConn, name); err != nil {
		return nil, err
	}
	cur, err := routestate.Load(ctx, mainConn)
	if err != nil {
		return nil, err
	}
	if cur.State.Buffer != nil && time.Now().Before(cur.State.Buffer.Deadline) {
		return nil, sqlerr.New(sqlerr.ObjectNotInPrerequisiteState, "restore point refused, nothing held: writes are held for %s now", cur.State.Buffer.ID).
			WithHint("A traffic switch or another restore point is running: try again once it ends.")
	}
	eff, err := routestate.Apply(file, cur)
	if err != nil {
		return nil, err
	}
	f, err := openFleet(ctx, eff.Topology, mainConn)
	if err != nil {
		return nil, err
	}
	defer f.close()
	if err := f.preflight(ctx); err != nil {
		return nil, err
	}
	tables, err := f.tables(ctx)
	if err != nil {
		return nil, err
	}
	if err := f.resolve(ctx); err != nil {
		return nil, fmt.Errorf("restore point refused, nothing held: finishing decided two-phase commits: %w", err)
	}
	live, err := liveProxies(ctx, mainConn)
	if err != nil {
		return nil, err
	}
	h := &hold{f: f, o: o, name: name, live: live, res: &Result{Name: name, Proxies: len(live)}}
	if err := h.run(ctx, cur, tables); err != nil {
		return nil, err
	}
	if !o.KeepWAL {
		if err := f.switchWAL(ctx); err != nil {
			return h.res, fmt.Errorf("restore point %s made; switching WAL files: %w", name, err)
		}
	}
	if err := record(ctx, mainConn, o.Author, h.res); err != nil {
		return h.res, fmt.Errorf("restore point %s made; recording it in main: %w", name, err)
	}
	return h.res, nil
}

// hold is one restore point's hold of the writes, from the arming to the
// release.
type hold struct {
	f     *fleet
	o     Options
	name  string
	live  []routestate.Proxy
	res   *Result
	id    string // the buffer request's
	armed routestate.Revision
	lap   time.Time
}

// timed adds the time since the last step to step name's.
func (h *hold) timed(name string) {
	now := time.Now()
	d := ms(now.Sub(h.lap))
	h.lap = now
	for i := range h.res.Steps {
		if h.res.Steps[i].Name == name {
			h.res.Steps[i].MS += d
			return
		}
	}
	h.res.Steps = append(h.res.Steps, Step{Name: name, MS: d})
}

// run arms the proxies' gates, settles, cuts and releases; a failure
// after the arming releases too.
func (h *hold) run(ctx context.Context, cur routestate.Revision, tables []string) error {
	start := time.Now()
	h.id = fmt.Sprintf("rp-%s-%d", h.name, start.UnixMilli())
	deadline := start.Add(h.o.Hold)
	req := &routestate.BufferRequest{ID: h.id, Tables: tables, Deadline: deadline}
	var err error
	h.armed, err = routestate.Commit(ctx, h.f.main, cur.Rev, h.o.Author, fmt.Sprintf("restore point %s: hold writes", h.name),
		func(st *routestate.State) error { st.Buffer = req; return nil })
	if errors.Is(err, routestate.ErrConflict) {
		return ErrNotReady.WithDetail("The routing revision changed meanwhile (%v).", err).WithHint("Try again.")
	}
	if err != nil {
		return err
	}
	h.lap = time.Now()
	h.o.logf("restore point %s: writes held (routing revision %d), %d proxies to acknowledge", h.name, h.armed.Rev, len(h.live))
	// The steps under the hold end before its deadline, leaving the
	// release time to reach the proxies before they let go on their own.
	hctx, cancel := context.WithDeadline(ctx, deadline.Add(-300*time.Millisecond))
	defer cancel()
	err = h.waitAcks(hctx)
	if err == nil {
		h.timed("acks")
		err = h.settleAndCut(hctx)
	}
	released, rerr := h.release(context.WithoutCancel(ctx))
	if err == nil && rerr != nil {
		err = fmt.Errorf("restore point %s made; releasing the writes (they go on at the hold's deadline): %w", h.name, rerr)
	}
	if err == nil && released.After(deadline) {
		err = fmt.Errorf("restore point %s: the writes were released after the hold's deadline", h.name)
	}
	h.timed("release")
	h.res.Pause = released.Sub(h.armed.CreatedAt)
	if rerr != nil {
		h.res.Pause = time.Since(start)
	}
	return err
}

// release withdraws the buffer request; it returns when the revision that
// does committed.
func (h *hold) release(ctx context.Context) (time.Time, error) {
	expect := h.armed
	for attempt := 0; ; attempt++ {
		rev, err := routestate.Commit(ctx, h.f.main, expect.Rev, h.o.Author, fmt.Sprintf("restore point %s: release writes", h.name),
			func(st *routestate.State) error { st.Buffer = nil; return nil })
		if err == nil {
			return rev.CreatedAt, nil
		}
		if !errors.Is(err, routestate.ErrConflict) || attempt == 4 {
			return time.Time{}, err
		}
		// A revision written meanwhile (a backfill's): withdraw from it,
		// if it still carries this request.
		if expect, err = routestate.Load(ctx, h.f.main); err != nil {
			return time.Time{}, err
		}
		if expect.State.Buffer == nil || expect.State.Buffer.ID != h.id {
			return time.Now(), nil
		}
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
