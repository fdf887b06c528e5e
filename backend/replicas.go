package backend

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// Standbys and their health: a cluster's streaming standbys each have a
// pool of their own (a Pool whose Conn.Cluster is still the cluster's
// name, so a session keeps one connection per cluster), and a health
// checker watches every host of the cluster — the primary and each
// standby — in the background: up or down, pg_is_in_recovery(), and a
// standby's lag behind the primary.

// Roles of a host.
const (
	RolePrimary = "primary"
	RoleStandby = "standby"
)

// HealthInterval is how often the checker looks at every host.
const HealthInterval = time.Second

// maxBackoff bounds the wait before a failed host is checked again.
const maxBackoff = 16 * time.Second

// Standby is one standby of a cluster: its pool and what the checker saw.
type Standby struct {
	Pool     *Pool
	Zone     string
	Priority int

	mu    sync.Mutex
	state HostState
	// failures counts the checks (and session connection errors) failed
	// in a row: the ban lasts 1s, 2s, 4s ... up to maxBackoff.
	failures int
	check    checkConn
}

// HostState is what the health checker knows of a host (SHOW SERVERS,
// SHOW CLUSTERS, metrics).
type HostState struct {
	Role string // RolePrimary or RoleStandby, as configured
	// Checked: at least one check answered or failed; Up: the last did
	// answer. InRecovery is its pg_is_in_recovery().
	Checked, Up, InRecovery bool
	// LagBytes is the primary's pg_current_wal_lsn() minus the standby's
	// pg_last_wal_replay_lsn(); Lag how long ago the primary had written
	// the oldest WAL the standby has not replayed (0: none). LagKnown:
	// both were measured (the primary answered).
	LagBytes int64
	Lag      time.Duration
	LagKnown bool
	// Bans counts the times the host was banned (a failed check or a
	// connection error); BannedUntil is when the current ban ends.
	Bans        int
	BannedUntil time.Time
	// OverLag: the last check found it behind max_lag.
	OverLag   bool
	LastError string
	CheckedAt time.Time
}

// State is a snapshot of the standby's health.
func (s *Standby) State() HostState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state
}

// eligible reports whether reads may go to the standby now, and if not why.
func (s *Standby) eligible(now time.Time) (bool, string) {
	s.mu.Lock()
	st := s.state
	s.mu.Unlock()
	switch {
	case now.Before(st.BannedUntil):
		return false, "banned after " + st.LastError
	case st.Checked && !st.Up:
		return false, "down after " + st.LastError
	case st.Checked && !st.InRecovery:
		return false, "not in recovery (promoted?)"
	case st.OverLag:
		return false, fmt.Sprintf("lagging %s / %d bytes behind", st.Lag.Round(time.Millisecond), st.LagBytes)
	case s.Pool.Down():
		return false, "unreachable"
	}
	return true, ""
}

// Fail bans the standby after a connection error a session saw, as a
// failed check does.
func (s *Standby) Fail(err error) {
	s.failed(time.Now(), err)
}

func (s *Standby) failed(now time.Time, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures++
	backoff := HealthInterval << min(s.failures-1, 4)
	if backoff > maxBackoff {
		backoff = maxBackoff
	}
	if !now.Before(s.state.BannedUntil) {
		s.state.Bans++
	}
	s.state.BannedUntil = now.Add(backoff)
	s.state.Checked, s.state.Up = true, false
	s.state.LastError = err.Error()
	s.state.CheckedAt = now
}

// ReplicaSet is a cluster's standbys and their health checker.
type ReplicaSet struct {
	cluster  string
	primary  *Pool
	standbys []*Standby
	maxLag   time.Duration
	maxBytes int64
	log      *slog.Logger

	primaryCheck checkConn

	mu        sync.Mutex
	primarySt HostState
	// samples are the primary's WAL positions as the checker saw them,
	// oldest first: a standby's time lag is the age of the first one it
	// has not replayed.
	samples []lsnSample

	// Failover (failover.go): buffer bounds the hold of statements while
	// no primary is known (0: no failover); record is main's record of
	// the primaries; epoch the record's epoch the pool follows; fenced
	// the hosts the writes left; lastPause the last hold's length.
	buffer    time.Duration
	record    *PrimaryRecord
	epoch     int64
	fenced    []*fencedHost
	lastPause time.Duration
	switching atomic.Bool // a Switchover runs (switchover.go)

	turn atomic.Uint64 // Choose's rotation
	stop chan struct{}
	done chan struct{}
}

type lsnSample struct {
	at  time.Time
	lsn uint64
}

// StandbyConfig describes one standby for NewReplicaSet.
type StandbyConfig struct {
	Pool     *Pool
	Zone     string
	Priority int
}

// NewReplicaSet watches the primary's pool and the standbys' (each
// Pool made with NewPool for the cluster's name and the standby's DSN).
// maxLag and maxBytes bound the lag of a standby that serves reads (0:
// no bound). Start runs the checker.
func NewReplicaSet(cluster string, primary *Pool, standbys []StandbyConfig, maxLag time.Duration, maxBytes int64, log *slog.Logger) *ReplicaSet {
	rs := &ReplicaSet{cluster: cluster, primary: primary, maxLag: maxLag, maxBytes: maxBytes, log: log,
		primarySt: HostState{Role: RolePrimary}, stop: make(chan struct{}), done: make(chan struct{})}
	for _, c := range standbys {
		c.Pool.standby.Store(true)
		rs.standbys = append(rs.standbys, &Standby{Pool: c.Pool, Zone: c.Zone, Priority: c.Priority, state: HostState{Role: RoleStandby}})
	}
	return rs
}

// Cluster names the cluster.
func (rs *ReplicaSet) Cluster() string { return rs.cluster }

// Standbys are the cluster's standbys, in topology order.
func (rs *ReplicaSet) Standbys() []*Standby { return rs.standbys }

// Primary is the primary's pool.
func (rs *ReplicaSet) Primary() *Pool { return rs.primary }

// PrimaryState is what the checker last saw of the primary.
func (rs *ReplicaSet) PrimaryState() HostState {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.primarySt
}

// MaxLag is the configured bound (0s and 0 bytes: none).
func (rs *ReplicaSet) MaxLag() (time.Duration, int64) { return rs.maxLag, rs.maxBytes }

// Start runs the health checker until Stop: every HealthInterval, and
// at once.
func (rs *ReplicaSet) Start() {
	go func() {
		defer close(rs.done)
		t := time.NewTicker(HealthInterval)
		defer t.Stop()
		for {
			rs.Check(context.Background())
			select {
			case <-rs.stop:
				rs.closeConns()
				return
			case <-t.C:
			}
		}
	}()
}

// Stop ends the checker (a reload dropped the cluster or changed it).
func (rs *ReplicaSet) Stop() {
	select {
	case <-rs.stop:
		return
	default:
	}
	close(rs.stop)
	<-rs.done
}

func (rs *ReplicaSet) closeConns() {
	rs.primaryCheck.close()
	for _, s := range rs.standbys {
		s.check.close()
	}
	rs.mu.Lock()
	for _, f := range rs.fenced {
		f.check.close()
	}
	rs.mu.Unlock()
}

// Choose returns the standby reads should use: among the eligible
// standbys of the lowest priority value, the least busy; never one of
// skip. nil, with why none is, when none is eligible.
func (rs *ReplicaSet) Choose(skip ...*Standby) (*Standby, string) {
	now := time.Now()
	var best *Standby
	bestBusy := 0
	var why []string
	n := len(rs.standbys)
	first := int(rs.turn.Add(1) % uint64(max(n, 1))) // ties go round
	for i := range rs.standbys {
		s := rs.standbys[(first+i)%n]
		if slices.Contains(skip, s) {
			why = append(why, s.Pool.Host()+": failed this statement")
			continue
		}
		if ok, reason := s.eligible(now); !ok {
			why = append(why, s.Pool.Host()+": "+reason)
			continue
		}
		busy := s.Pool.Busy()
		if best == nil || s.Priority < best.Priority || s.Priority == best.Priority && busy < bestBusy {
			best, bestBusy = s, busy
		}
	}
	if best != nil {
		return best, ""
	}
	if len(why) == 0 {
		return nil, "it has no replicas"
	}
	return nil, strings.Join(why, "; ")
}

// Standby returns the standby whose pool is p, or nil.
func (rs *ReplicaSet) Standby(p *Pool) *Standby {
	for _, s := range rs.standbys {
		if s.Pool == p {
			return s
		}
	}
	return nil
}

// checkTimeout bounds one host's check.
const checkTimeout = 2 * time.Second

// Check looks at every host once: the primary's WAL position first, then
// each standby not banned (a banned one when its ban ends).
func (rs *ReplicaSet) Check(ctx context.Context) {
	now := time.Now()
	primaryLSN, perr := rs.checkPrimary(ctx)
	var wg sync.WaitGroup
	for _, s := range rs.standbys {
		s.mu.Lock()
		due := !now.Before(s.state.BannedUntil)
		s.mu.Unlock()
		if !due {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			rs.checkStandby(ctx, s, primaryLSN, perr == nil)
		}()
	}
	wg.Wait()
	rs.trimSamples()
	rs.failover(ctx, perr)
}

// checkPrimary records the primary's state and, when it answers as a
// primary, its WAL position as a sample.
func (rs *ReplicaSet) checkPrimary(ctx context.Context) (uint64, error) {
	inRec, lsn, err := rs.primaryCheck.run(ctx, rs.primary.DSN(),
		"SELECT pg_is_in_recovery()::text, CASE WHEN pg_is_in_recovery() THEN '0/0' ELSE pg_current_wal_lsn()::text END")
	now := time.Now()
	rs.mu.Lock()
	defer rs.mu.Unlock()
	st := &rs.primarySt
	st.Checked, st.CheckedAt = true, now
	if err != nil {
		if st.Up || st.LastError == "" {
			st.Bans++
		}
		st.Up, st.LastError = false, err.Error()
		return 0, err
	}
	st.Up, st.InRecovery, st.LastError = true, inRec, ""
	if inRec {
		return 0, errNotPrimary
	}
	if n := len(rs.samples); n == 0 || rs.samples[n-1].lsn != lsn {
		rs.samples = append(rs.samples, lsnSample{now, lsn})
	}
	return lsn, nil
}

func (rs *ReplicaSet) checkStandby(ctx context.Context, s *Standby, primaryLSN uint64, primaryKnown bool) {
	inRec, replay, err := s.check.run(ctx, s.Pool.DSN(),
		"SELECT pg_is_in_recovery()::text, coalesce(pg_last_wal_replay_lsn(), '0/0')::text")
	now := time.Now()
	if err != nil {
		if rs.log != nil && s.State().Up {
			rs.log.Warn("standby check failed: banned", "cluster", rs.cluster, "host", s.Pool.Host(), "err", err)
		}
		s.failed(now, err)
		return
	}
	var lagBytes int64
	var lag time.Duration
	if primaryKnown && inRec {
		if primaryLSN > replay {
			lagBytes = int64(primaryLSN - replay)
		}
		lag = rs.ageOfFirstAfter(replay, now)
	}
	over := inRec && primaryKnown && (rs.maxLag > 0 && lag > rs.maxLag || rs.maxBytes > 0 && lagBytes > rs.maxBytes)
	s.mu.Lock()
	defer s.mu.Unlock()
	if rs.log != nil && over != s.state.OverLag {
		rs.log.Info("standby lag", "cluster", rs.cluster, "host", s.Pool.Host(), "over_max_lag", over, "lag", lag, "lag_bytes", lagBytes)
	}
	s.failures = 0
	s.state.Checked, s.state.Up, s.state.InRecovery = true, true, inRec
	s.state.LagKnown = primaryKnown && inRec
	if s.state.LagKnown {
		s.state.LagBytes, s.state.Lag = lagBytes, lag
	}
	s.state.OverLag = over
	s.state.LastError = ""
	s.state.CheckedAt = now
}

// ageOfFirstAfter is how long ago the checker first saw the primary past
// lsn (0 when it never did).
func (rs *ReplicaSet) ageOfFirstAfter(lsn uint64, now time.Time) time.Duration {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for _, smp := range rs.samples {
		if smp.lsn > lsn {
			return now.Sub(smp.at)
		}
	}
	return 0
}

// trimSamples keeps the samples of the last ten minutes (and the last
// one): a standby further behind shows a lag of ten minutes.
func (rs *ReplicaSet) trimSamples() {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	cut := 0
	for cut < len(rs.samples)-1 && time.Since(rs.samples[cut].at) > 10*time.Minute {
		cut++
	}
	rs.samples = rs.samples[cut:]
}

// checkConn is the checker's own connection to one host.
type checkConn struct {
	mu sync.Mutex // held for a check
	c  *pgconn.PgConn
}

func (cc *checkConn) run(ctx context.Context, dsn, sql string) (bool, uint64, error) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	inRec, lsn, c, err := queryHost(ctx, cc.c, dsn, sql)
	cc.c = c
	return inRec, lsn, err
}

func (cc *checkConn) close() {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.c != nil {
		cc.c.Close(context.Background())
		cc.c = nil
	}
}

// queryHost runs a two-column query on conn (dialing dsn when conn is nil)
// and parses a boolean and an LSN. On error the connection is closed and
// nil is returned.
func queryHost(ctx context.Context, conn *pgconn.PgConn, dsn, sql string) (bool, uint64, *pgconn.PgConn, error) {
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	if conn == nil || conn.IsClosed() {
		var err error
		if conn, err = dialHost(ctx, dsn); err != nil {
			return false, 0, nil, err
		}
	}
	res, err := conn.Exec(ctx, sql).ReadAll()
	if err == nil && (len(res) != 1 || len(res[0].Rows) != 1 || len(res[0].Rows[0]) != 2) {
		err = errors.New("unexpected answer to the health check")
	}
	var lsn uint64
	if err == nil {
		lsn, err = ParseLSN(string(res[0].Rows[0][1]))
	}
	if err != nil {
		conn.Close(context.Background())
		return false, 0, nil, err
	}
	return string(res[0].Rows[0][0]) == "true", lsn, conn, nil
}

// ParseLSN reads a pg_lsn in its text form X/Y (two hexadecimal halves).
func ParseLSN(s string) (uint64, error) {
	hi, lo, ok := strings.Cut(s, "/")
	h, err1 := strconv.ParseUint(hi, 16, 32)
	l, err2 := strconv.ParseUint(lo, 16, 32)
	if !ok || err1 != nil || err2 != nil {
		return 0, fmt.Errorf("invalid LSN %q", s)
	}
	return h<<32 | l, nil
}

// dialHost connects to one host for the proxy's own checks.
func dialHost(ctx context.Context, dsn string) (*pgconn.PgConn, error) {
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	if cfg.RuntimeParams == nil {
		cfg.RuntimeParams = map[string]string{}
	}
	cfg.RuntimeParams["application_name"] = "shardgate health check"
	return pgconn.ConnectConfig(ctx, cfg)
}
