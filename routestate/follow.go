package routestate

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/shardgate/shardgate/topology"
)

// Timing of a Follower.
const (
	// Beat is how often a proxy beats its heartbeat and polls for a new
	// revision (the fallback when LISTEN is down).
	Beat = time.Second
	// Stale is how old a heartbeat may be for its proxy to count as live.
	Stale = 3 * time.Second
	// relisten is the pause before a lost LISTEN connection is opened again.
	relisten = 3 * time.Second
)

// Install makes an effective routing the one a proxy serves with (the
// proxy's Reload). An error keeps the routing in force; the Follower logs
// it and tries again at the next beat.
type Install func(*topology.Topology) error

// Follower keeps one proxy's routing equal to the file overlaid with the
// latest revision: it registers the proxy in shardgate.proxies, beats its
// heartbeat every Beat, LISTENs on Channel on a connection of its own and
// polls at every beat as a fallback.
type Follower struct {
	ID      string
	dsn     string
	install Install
	log     *slog.Logger
	gate    *Gate

	mu        sync.Mutex // serialises installs and the fields below
	file      *topology.Topology
	rev       Revision // installed
	eff       *Effective
	learned   map[int64]string // rev -> "listen" or "poll" (tests, logs)
	listening bool
	notified  Revision // the newest revision a notification carried
	ackSent   string   // the acked value last reported by a heartbeat

	conn *pgx.Conn // heartbeat and polls; used by the beat goroutine only after start
	wake chan struct{}
	done chan struct{}
}

// Follow loads the latest revision, installs file+revision (before it
// returns), registers the proxy (addr is its listen address) and follows
// new revisions until ctx ends; then the proxy's row is deleted. gate, if
// not nil, is armed and released as revisions ask (buffering for a
// switch).
func Follow(ctx context.Context, dsn, addr string, file *topology.Topology, gate *Gate, install Install, log *slog.Logger) (*Follower, error) {
	if log == nil {
		log = slog.Default()
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("routing state: connect to main: %w", err)
	}
	rev, err := Load(ctx, conn)
	if err != nil {
		conn.Close(ctx)
		return nil, err
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	host, _ := os.Hostname()
	f := &Follower{ID: fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b)), dsn: dsn, install: install, log: log,
		gate: gate, file: file, conn: conn, learned: map[int64]string{}, wake: make(chan struct{}, 1), done: make(chan struct{})}
	if err := f.apply(rev, "load"); err != nil {
		conn.Close(ctx)
		return nil, err
	}
	if _, err := conn.Exec(ctx, `INSERT INTO shardgate.proxies (id, addr, pid, revision) VALUES ($1, $2, $3, $4)`,
		f.ID, addr, os.Getpid(), rev.Rev); err != nil {
		conn.Close(ctx)
		return nil, fmt.Errorf("register the proxy in main: %w", err)
	}
	if gate != nil {
		// The held statements' waits are reported as soon as all are
		// answered, not at the next beat.
		gate.OnSettled(f.poke)
	}
	go f.listen(ctx)
	go f.run(ctx)
	return f, nil
}

// Done is closed once the follower stopped and deregistered.
func (f *Follower) Done() <-chan struct{} { return f.done }

// Effective is the routing installed last.
func (f *Follower) Effective() *Effective {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.eff
}

// Learned says how revision rev reached this proxy: "load", "listen" or
// "poll"; "" if it has not.
func (f *Follower) Learned(rev int64) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.learned[rev]
}

// SetFile installs an edited topology file under the revision in force
// (the file watcher's callback).
func (f *Follower) SetFile(t *topology.Topology) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	eff, err := Apply(t, f.rev)
	if err != nil {
		return err
	}
	if err := f.install(eff.Topology); err != nil {
		return err
	}
	f.file, f.eff = t, eff
	return nil
}

// apply installs file+rev if rev is newer than the one in force.
func (f *Follower) apply(rev Revision, how string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.gate != nil {
		// Armed before the revision is installed, released after: the
		// statements held by a switch plan on the routing it flipped to.
		if rev.State.Buffer != nil {
			f.gate.Request(rev.State.Buffer)
		} else {
			defer f.gate.Request(nil)
		}
	}
	if f.eff != nil && rev.Rev <= f.rev.Rev {
		return nil
	}
	if f.eff != nil && sameRouting(f.rev.State, rev.State) {
		// Only the buffer request changed (a switch arming or
		// withdrawing it): the routing in force stays, and the gate's
		// acknowledgement is not held up by a reload.
		f.rev = rev
		f.learned[rev.Rev] = how
		return nil
	}
	start := time.Now()
	eff, err := Apply(f.file, rev)
	if err == nil && (f.eff != nil || len(eff.Topology.Overrides) > 0) {
		err = f.install(eff.Topology) // (at start the proxy serves the file already)
	}
	if err != nil {
		return fmt.Errorf("routing %s not installed: %w", rev.Origin(), err)
	}
	if f.eff != nil {
		f.log.Info("routing revision installed", "revision", rev.Rev, "origin", rev.Origin(), "learned_by", how,
			"install_ms", float64(time.Since(start).Microseconds())/1000)
	}
	f.rev, f.eff = rev, eff
	f.learned[rev.Rev] = how
	return nil
}

// run beats and polls until ctx ends, then deregisters.
func (f *Follower) run(ctx context.Context) {
	defer close(f.done)
	t := time.NewTicker(Beat)
	defer t.Stop()
	for {
		how := "poll"
		select {
		case <-ctx.Done():
			c, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_, _ = f.conn.Exec(c, `DELETE FROM shardgate.proxies WHERE id = $1`, f.ID)
			f.conn.Close(c)
			cancel()
			return
		case <-t.C:
		case <-f.wake:
			how = "listen"
		}
		if err := f.beat(ctx, how); err != nil && ctx.Err() == nil {
			f.log.Warn("routing state: cannot reach main", "err", err)
			if f.conn.IsClosed() {
				if c, err := pgx.Connect(ctx, f.dsn); err == nil {
					f.conn = c
				}
			}
		}
	}
}

// beat installs the latest revision if new — the one a notification
// carried, else loaded from main — and records the heartbeat with the
// revision in force and the buffer request held. A heartbeat that
// reports a new acknowledgement also notifies AckChannel (with the
// proxy's id), so a switch waiting for it need not poll.
func (f *Follower) beat(ctx context.Context, how string) error {
	c, cancel := context.WithTimeout(ctx, Beat)
	defer cancel()
	rev, ok := f.takeNotified()
	if !ok {
		var err error
		if rev, err = latest(c, f.conn); err != nil {
			return err
		}
	}
	if err := f.apply(rev, how); err != nil {
		f.log.Error(err.Error())
	}
	f.mu.Lock()
	cur := f.rev.Rev
	f.mu.Unlock()
	acked, held := "{}", "{}"
	if f.gate != nil {
		acked = f.gate.acked()
		data, _ := json.Marshal(f.gate.Stats())
		held = string(data)
	}
	_, err := f.conn.Exec(c, `WITH beat AS (INSERT INTO shardgate.proxies AS p (id, pid, revision, acked, held) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (id) DO UPDATE SET heartbeat_at = now(), revision = $3, acked = $4, held = $5 RETURNING id)
		SELECT pg_notify($6, id) FROM beat WHERE $7`, f.ID, os.Getpid(), cur, acked, held, AckChannel, acked != f.ackSent && acked != "{}")
	if err == nil {
		f.ackSent = acked
	}
	return err
}

// AckChannel is the channel a proxy's heartbeat notifies, with the
// proxy's id, when it reports a buffer request it newly holds
// (proxies.acked).
const AckChannel = "shardgate_routing_acks"

// takeNotified returns the revision a notification carried when it is
// newer than the one installed.
func (f *Follower) takeNotified() (Revision, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	rev := f.notified
	f.notified = Revision{}
	return rev, rev.Rev > f.rev.Rev
}

// notify keeps the revision a notification's payload carries (notifySQL;
// a number, or anything else, carries none).
func (f *Follower) notify(payload string) {
	if !strings.HasPrefix(payload, "{") {
		return
	}
	var rev Revision
	if err := json.Unmarshal([]byte(payload), &rev); err != nil || rev.Rev <= 0 {
		return
	}
	f.mu.Lock()
	if rev.Rev > f.notified.Rev {
		f.notified = rev
	}
	f.mu.Unlock()
}

// listen holds a LISTEN connection and wakes run on each notification;
// a lost connection is opened again after relisten.
func (f *Follower) listen(ctx context.Context) {
	for ctx.Err() == nil {
		conn, err := pgx.Connect(ctx, f.dsn)
		if err == nil {
			if _, err = conn.Exec(ctx, "LISTEN "+Channel); err == nil {
				f.setListening(true)
				f.poke() // whatever was committed while not listening
				for err == nil {
					var n *pgconn.Notification
					n, err = conn.WaitForNotification(ctx)
					if err == nil {
						f.notify(n.Payload)
						f.poke()
					}
				}
				f.setListening(false)
			}
			conn.Close(context.Background())
		}
		if ctx.Err() == nil {
			f.log.Warn("routing state: LISTEN connection lost; polling until it is back", "err", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(relisten):
		}
	}
}

func (f *Follower) poke() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

func (f *Follower) setListening(on bool) {
	f.mu.Lock()
	f.listening = on
	f.mu.Unlock()
}

// Listening says whether the LISTEN connection is up.
func (f *Follower) Listening() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.listening
}

// Proxy is one registered proxy.
type Proxy struct {
	ID, Addr    string
	PID         int
	StartedAt   time.Time
	HeartbeatAt time.Time
	Revision    int64
	Acked       map[string]time.Time // buffer request id -> when it was armed
	Held        GateStats            // the figures of its last buffer
	Live        bool                 // heartbeat younger than Stale
}

// Proxies lists the registered proxies, live or not.
func Proxies(ctx context.Context, conn *pgx.Conn) ([]Proxy, error) {
	if err := EnsureSchema(ctx, conn); err != nil {
		return nil, err
	}
	rows, err := conn.Query(ctx, `SELECT id, addr, pid, started_at, heartbeat_at, revision, acked, held, heartbeat_at > now() - $1::interval
		FROM shardgate.proxies ORDER BY started_at, id`, Stale.String())
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Proxy, error) {
		var p Proxy
		err := r.Scan(&p.ID, &p.Addr, &p.PID, &p.StartedAt, &p.HeartbeatAt, &p.Revision, &p.Acked, &p.Held, &p.Live)
		return p, err
	})
}

// sameRouting says whether two states route alike: they differ at most in
// their buffer request.
func sameRouting(a, b State) bool {
	a.Buffer, b.Buffer = nil, nil
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}
