package backend

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/shardgate/shardgate/internal/schemalock"
	"github.com/shardgate/shardgate/sqlerr"
)

// Unplanned failover of a cluster with standbys: when its primary stops
// answering, the pool holds the cluster's statements (up to the failover
// buffer) while the health checker looks for the listed standby that
// says pg_is_in_recovery() = false; the pool then dials that host, and
// the host the pool left is fenced: never dialed again for writes. The
// decision — the cluster's primary host and an epoch — is recorded in
// main's shardgate.primaries, and every proxy's checker follows a newer
// epoch it finds there.

// failoverHold holds a pool's Acquires until done is closed (a primary
// is known again) or until passes.
type failoverHold struct {
	done  chan struct{}
	until time.Time
	since time.Time
	// buffer is the failover buffer it was started with.
	buffer time.Duration
}

// SetFailoverBuffer makes a dial failure hold statements up to d instead
// of failing them (0: fail at once, the default of a cluster without
// standbys).
func (p *Pool) SetFailoverBuffer(d time.Duration) {
	p.mu.Lock()
	p.failoverBuffer = d
	p.mu.Unlock()
}

// startHold begins holding Acquires (p.mu held).
func (p *Pool) startHold() {
	now := time.Now()
	p.hold = &failoverHold{done: make(chan struct{}), until: now.Add(p.failoverBuffer), since: now, buffer: p.failoverBuffer}
}

// Hold begins holding Acquires, if the pool has a failover buffer and
// does not already hold: its primary is lost.
func (p *Pool) Hold() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.failoverBuffer > 0 && p.hold == nil && !p.closed {
		p.startHold()
	}
}

// Unhold lets held Acquires go on (to the host the pool dials now). It
// reports how long the hold lasted (0: none).
func (p *Pool) Unhold() time.Duration {
	p.mu.Lock()
	h := p.hold
	p.hold = nil
	p.downUntil = time.Time{}
	p.mu.Unlock()
	if h == nil {
		return 0
	}
	close(h.done)
	return time.Since(h.since)
}

// Held reports whether the pool holds statements for want of a primary.
func (p *Pool) Held() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.hold != nil
}

// waitHold waits for the hold h to end. After the buffer it fails with
// 08006 (the cluster has no primary), on stop with 57014.
func (p *Pool) waitHold(h *failoverHold, stop <-chan struct{}) error {
	t := time.NewTimer(time.Until(h.until))
	defer t.Stop()
	select {
	case <-h.done:
		return nil
	case <-t.C:
		err := sqlerr.New("08006", "cluster %s has no primary: none answered within the failover buffer (%s)", p.cluster, h.buffer)
		err.Hint = "shardgate moves the cluster's writes to the listed standby that is promoted; promote one, or bring the primary back."
		return err
	case <-stop:
		return sqlerr.New("57014", "canceling statement while waiting for a primary of cluster %s", p.cluster)
	}
}

// Retarget makes the pool dial dsn from now on (a failover): its idle
// connections are closed, and those lent out are closed when they come
// back.
func (p *Pool) Retarget(dsn string) {
	addr, _ := backendAddr(dsn)
	p.mu.Lock()
	p.dsn, p.addr = dsn, addr
	p.gen++
	idle := p.takeAllIdle()
	p.downUntil = time.Time{}
	p.mu.Unlock()
	for _, b := range idle {
		b.close()
	}
}

// ConfiguredDSN is the DSN the pool was made with (DSN is where it dials
// now).
func (p *Pool) ConfiguredDSN() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cfgDSN
}

// PrimarySchema creates main's record of each cluster's current primary.
const PrimarySchema = schemalock.Prefix + `CREATE SCHEMA IF NOT EXISTS shardgate;
CREATE TABLE IF NOT EXISTS shardgate.primaries (
	cluster text PRIMARY KEY,
	host text NOT NULL,
	epoch bigint NOT NULL,
	decided_at timestamptz NOT NULL DEFAULT now()
)`

// PrimaryRecord is main's record of the clusters' primaries.
type PrimaryRecord struct {
	DSN  string // main's primary
	conn checkConn
}

// claimSQL records $2 as cluster $1's primary at epoch $3 + 1, if main
// still records epoch $3 (0: no row); it returns the row in force.
const claimSQL = `WITH up AS (
	INSERT INTO shardgate.primaries AS p (cluster, host, epoch) VALUES ($1, $2, $3::bigint + 1)
	ON CONFLICT (cluster) DO UPDATE SET host = excluded.host, epoch = excluded.epoch, decided_at = now()
	WHERE p.epoch = $3::bigint
	RETURNING host, epoch)
SELECT host, epoch::text FROM up UNION ALL SELECT host, epoch::text FROM shardgate.primaries WHERE cluster = $1 AND NOT EXISTS (SELECT FROM up)`

// Load is the host main records as cluster's primary and its epoch
// ("", 0: none).
func (pr *PrimaryRecord) Load(ctx context.Context, cluster string) (string, int64, error) {
	return pr.run(ctx, "SELECT host, epoch::text FROM shardgate.primaries WHERE cluster = $1", cluster)
}

// Claim records host as cluster's primary if main's epoch is still
// epoch; it returns the host and epoch in force after it (another
// proxy's decision when it made one first).
func (pr *PrimaryRecord) Claim(ctx context.Context, cluster, host string, epoch int64) (string, int64, error) {
	return pr.run(ctx, claimSQL, cluster, host, fmt.Sprint(epoch))
}

func (pr *PrimaryRecord) run(ctx context.Context, sql string, args ...string) (string, int64, error) {
	pr.conn.mu.Lock()
	defer pr.conn.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	if pr.conn.c == nil || pr.conn.c.IsClosed() {
		c, err := pgconn.Connect(ctx, pr.DSN)
		if err != nil {
			return "", 0, err
		}
		if _, err := c.Exec(ctx, PrimarySchema).ReadAll(); err != nil {
			c.Close(context.Background())
			return "", 0, err
		}
		pr.conn.c = c
	}
	params := make([][]byte, len(args))
	for i, a := range args {
		params[i] = []byte(a)
	}
	res := pr.conn.c.ExecParams(ctx, sql, params, nil, nil, nil).Read()
	if res.Err != nil {
		pr.conn.c.Close(context.Background())
		pr.conn.c = nil
		return "", 0, res.Err
	}
	if len(res.Rows) == 0 {
		return "", 0, nil
	}
	var epoch int64
	if _, err := fmt.Sscan(string(res.Rows[0][1]), &epoch); err != nil {
		return "", 0, err
	}
	return string(res.Rows[0][0]), epoch, nil
}

// Close closes the record's connection to main.
func (pr *PrimaryRecord) Close() { pr.conn.close() }

// Failover is what a ReplicaSet knows of its cluster's failovers (SHOW
// CLUSTERS, metrics).
type Failover struct {
	// Epoch is main's epoch of the primary the pool dials (0: the
	// configured one, never failed over).
	Epoch int64
	// Fenced are the hosts the cluster's writes left that still claimed
	// to be a primary when last checked (or did not answer).
	Fenced []string
	// Held: statements are held for want of a primary.
	Held bool
	// LastPause is how long the last hold lasted.
	LastPause time.Duration
}

// FailoverState is a snapshot of the cluster's failover state.
func (rs *ReplicaSet) FailoverState() Failover {
	rs.mu.Lock()
	f := Failover{Epoch: rs.epoch, LastPause: rs.lastPause}
	for _, h := range rs.fenced {
		f.Fenced = append(f.Fenced, h.host)
	}
	rs.mu.Unlock()
	f.Held = rs.primary.Held()
	return f
}

// fencedHost is a host the cluster's writes left.
type fencedHost struct {
	host, dsn string
	check     checkConn
}

// SetFailover makes the set fail over: statements are held up to buffer
// while no primary is known, and record (nil: none) is main's record the
// proxies agree through.
func (rs *ReplicaSet) SetFailover(buffer time.Duration, record *PrimaryRecord) {
	rs.buffer, rs.record = buffer, record
	rs.primary.SetFailoverBuffer(buffer)
}

// Buffer is the failover buffer (0: the set does not fail over).
func (rs *ReplicaSet) Buffer() time.Duration { return rs.buffer }

// Follow moves the cluster's writes to the primary main records, if it
// records one (before Start: a proxy that starts or reloads after a
// failover never writes to the host it left).
func (rs *ReplicaSet) Follow(ctx context.Context) error {
	if rs.record == nil {
		return nil
	}
	host, epoch, err := rs.record.Load(ctx, rs.cluster)
	if err != nil || epoch == 0 {
		return err
	}
	rs.follow(host, epoch)
	return nil
}

// failover runs after each check: it follows main's record, holds the
// pool when the primary did not answer as a primary (perr), moves it to
// a promoted standby, and unfences the fenced hosts that became standbys.
func (rs *ReplicaSet) failover(ctx context.Context, perr error) {
	rs.checkFenced(ctx)
	if rs.buffer <= 0 || rs.switching.Load() {
		return
	}
	if rs.record != nil {
		host, epoch, err := rs.record.Load(ctx, rs.cluster)
		rs.mu.Lock()
		newer := err == nil && epoch > rs.epoch
		rs.mu.Unlock()
		if newer {
			rs.follow(host, epoch)
			return
		}
	}
	if perr == nil {
		rs.unhold()
		return
	}
	rs.primary.Hold()
	for _, s := range rs.standbys {
		st := s.State()
		host := s.Pool.Host()
		if !st.Up || st.InRecovery || host == rs.primary.Host() || rs.isFenced(host) {
			continue
		}
		epoch := rs.epochNow() + 1
		if rs.record != nil {
			got, e, err := rs.record.Claim(ctx, rs.cluster, host, rs.epochNow())
			if err != nil {
				if rs.log != nil {
					rs.log.Warn("failover: main did not record the new primary: statements stay held", "cluster", rs.cluster, "host", host, "err", err)
				}
				return
			}
			host, epoch = got, e
		}
		rs.follow(host, epoch)
		return
	}
}

func (rs *ReplicaSet) epochNow() int64 {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.epoch
}

// follow moves the cluster's writes to host (one of its listed hosts) at
// epoch, fencing the host they leave.
func (rs *ReplicaSet) follow(host string, epoch int64) {
	dsn := rs.dsnOf(host)
	if dsn == "" {
		if rs.log != nil {
			rs.log.Error("failover: main records a primary that is not one of the cluster's hosts", "cluster", rs.cluster, "host", host, "epoch", epoch)
		}
		return
	}
	old := rs.primary.Host()
	rs.mu.Lock()
	rs.epoch = epoch
	if old != host && !slices.ContainsFunc(rs.fenced, func(f *fencedHost) bool { return f.host == old }) {
		rs.fenced = append(rs.fenced, &fencedHost{host: old, dsn: rs.primary.DSN()})
	}
	rs.fenced = slices.DeleteFunc(rs.fenced, func(f *fencedHost) bool { return f.host == host })
	rs.mu.Unlock()
	if old != host {
		rs.primary.Retarget(dsn)
		rs.primaryCheck.close()
	}
	rs.unhold()
	if rs.log != nil {
		rs.log.Warn("failover: the cluster's writes go to a new primary", "cluster", rs.cluster, "from", old, "to", host, "epoch", epoch)
	}
}

func (rs *ReplicaSet) unhold() {
	if d := rs.primary.Unhold(); d > 0 {
		rs.mu.Lock()
		rs.lastPause = d
		rs.mu.Unlock()
	}
}

// dsnOf is the DSN of the cluster's listed host host ("" if none is).
func (rs *ReplicaSet) dsnOf(host string) string {
	if cfg := rs.primary.ConfiguredDSN(); hostOf(cfg) == host {
		return cfg
	}
	for _, s := range rs.standbys {
		if s.Pool.Host() == host {
			return s.Pool.DSN()
		}
	}
	return ""
}

func hostOf(dsn string) string {
	addr, _ := backendAddr(dsn)
	return addr
}

func (rs *ReplicaSet) isFenced(host string) bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return slices.ContainsFunc(rs.fenced, func(f *fencedHost) bool { return f.host == host })
}

// checkFenced unfences the fenced hosts that now say they are in
// recovery (they rejoined as standbys): a later failover may choose them.
func (rs *ReplicaSet) checkFenced(ctx context.Context) {
	rs.mu.Lock()
	fenced := slices.Clone(rs.fenced)
	rs.mu.Unlock()
	for _, f := range fenced {
		inRec, _, err := f.check.run(ctx, f.dsn, "SELECT pg_is_in_recovery()::text, '0/0'")
		if err != nil || !inRec {
			continue
		}
		f.check.close()
		rs.mu.Lock()
		rs.fenced = slices.DeleteFunc(rs.fenced, func(x *fencedHost) bool { return x == f })
		rs.mu.Unlock()
		if rs.log != nil {
			rs.log.Info("failover: a fenced host is a standby now: unfenced", "cluster", rs.cluster, "host", f.host)
		}
	}
}

// errNotPrimary is a primary check's answer from a host in recovery.
var errNotPrimary = errors.New("the primary is in recovery")
