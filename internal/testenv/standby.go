package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// StandbyOptions says how StartStandby makes a standby.
type StandbyOptions struct {
	// Sync makes the standby synchronous: the primary names it in
	// synchronous_standby_names and commits with synchronous_commit = on,
	// so a commit returns once the standby has flushed it.
	Sync bool
	// ApplyDelay is the standby's recovery_min_apply_delay: it replays a
	// commit only this long after the primary made it (0: at once).
	ApplyDelay time.Duration
}

// StartStandby starts a streaming standby of c: a base backup taken with
// pg_basebackup -R -X stream as the server's account, started with
// hot_standby on a free loopback port of its own. The standby is a
// Cluster too (Stop, Start, RestartImmediate, DSN, Exec); Primary names
// c. It lives in a temporary directory of its own with its own watchdog,
// and Env.Stop stops and removes it before the primaries.
func (c *Cluster) StartStandby(ctx context.Context, opts StandbyOptions) (*Cluster, error) {
	e := c.env
	e.mu.Lock()
	n := len(e.standbys) + 1
	e.mu.Unlock()
	s, fail, err := e.newSideCluster(fmt.Sprintf("%s-standby%d", c.Name, n))
	if err != nil {
		return nil, err
	}
	s.Primary = c
	s.tlsCert, s.tlsKey = c.tlsCert, c.tlsKey
	s.extra = map[string]string{"hot_standby": "on", "hot_standby_feedback": "on"}
	if opts.ApplyDelay > 0 {
		s.extra["recovery_min_apply_delay"] = strconv.FormatInt(opts.ApplyDelay.Milliseconds(), 10) + "ms"
	}
	name := s.Name
	t0 := time.Now()
	conninfo := fmt.Sprintf("host=127.0.0.1 port=%d user=postgres application_name=%s", c.Port, name)
	if _, err := e.owner.run(ctx, e.bin, s.dir, "pg_basebackup", "-d", conninfo, "-D", s.DataDir,
		"-R", "-X", "stream", "-c", "fast", "--no-sync"); err != nil {
		return fail(fmt.Errorf("testenv: base backup of %s: %w", c.Name, err))
	}
	if err := e.writeConfig(s); err != nil {
		return fail(fmt.Errorf("testenv: %s: %w", name, err))
	}
	s.mu.Lock()
	err = s.startServer(ctx)
	s.mu.Unlock()
	if err != nil {
		return fail(err)
	}
	if opts.Sync {
		if err := c.Exec(ctx, "", fmt.Sprintf(`ALTER SYSTEM SET synchronous_standby_names = '"%s"'`, name)); err != nil {
			return fail(err)
		}
		if err := c.Exec(ctx, "", "ALTER SYSTEM SET synchronous_commit = 'on'"); err != nil {
			return fail(err)
		}
		if err := c.Exec(ctx, "", "SELECT pg_reload_conf()"); err != nil {
			return fail(err)
		}
		if err := s.waitStreaming(ctx, "sync"); err != nil {
			return fail(err)
		}
	} else if err := s.waitStreaming(ctx, ""); err != nil {
		return fail(err)
	}
	e.mu.Lock()
	e.standbys = append(e.standbys, s)
	e.mu.Unlock()
	e.logf("%s: standby of %s listening on 127.0.0.1:%d (%s)", name, c.Name, s.Port, time.Since(t0).Round(time.Millisecond))
	return s, nil
}

// newSideCluster makes a cluster of the Env outside its base directory
// (a standby, a restored cluster): a temporary directory of its own, a free
// loopback port, its own watchdog. fail stops and removes it.
func (e *Env) newSideCluster(name string) (s *Cluster, fail func(error) (*Cluster, error), err error) {
	base, err := os.MkdirTemp("", "shardgate-"+name+"-")
	if err != nil {
		return nil, nil, fmt.Errorf("testenv: %w", err)
	}
	if d, err := filepath.EvalSymlinks(base); err == nil {
		base = d
	}
	port, err := freePort()
	if err != nil {
		os.RemoveAll(base)
		return nil, nil, err
	}
	s = &Cluster{
		Name:    name,
		Port:    port,
		DataDir: filepath.Join(base, "data"),
		LogFile: filepath.Join(base, "server.log"),
		dir:     base,
		env:     e,
	}
	fail = func(err error) (*Cluster, error) {
		_ = s.shutdown("immediate")
		s.watchdog.dismiss()
		os.RemoveAll(base)
		return nil, err
	}
	if err := e.owner.chown(base); err != nil {
		_, err = fail(fmt.Errorf("testenv: chown %s: %w", base, err))
		return nil, nil, err
	}
	if err := e.owner.checkAccess(base); err != nil {
		_, err = fail(fmt.Errorf("testenv: %w", err))
		return nil, nil, err
	}
	if s.watchdog, err = startWatchdog([]string{s.DataDir}, base); err != nil {
		_, err = fail(fmt.Errorf("testenv: %w", err))
		return nil, nil, err
	}
	return s, fail, nil
}

// waitStreaming waits until the primary's pg_stat_replication shows the
// standby streaming (and, with state "sync", as its synchronous standby).
func (s *Cluster) waitStreaming(ctx context.Context, syncState string) error {
	conn, err := s.Primary.Conn(ctx, "")
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	q := "SELECT count(*) FROM pg_stat_replication WHERE application_name = $1 AND state = 'streaming'"
	args := []any{s.Name}
	if syncState != "" {
		q += " AND sync_state = $2"
		args = append(args, syncState)
	}
	for {
		var n int
		if err := conn.QueryRow(ctx, q, args...).Scan(&n); err != nil {
			return fmt.Errorf("testenv: %s: %w", s.Name, err)
		}
		if n > 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("testenv: %s is not streaming from %s: %w", s.Name, s.Primary.Name, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// WaitReplay returns once the standby has replayed everything its primary
// had written when it was called (the primary's current insert LSN).
func (s *Cluster) WaitReplay(ctx context.Context) error {
	if s.Primary == nil {
		return fmt.Errorf("testenv: %s is not a standby", s.Name)
	}
	var lsn string
	if err := s.Primary.queryRow(ctx, "SELECT pg_current_wal_insert_lsn()::text", nil, &lsn); err != nil {
		return err
	}
	conn, err := s.Conn(ctx, "")
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	for {
		var done bool
		err := conn.QueryRow(ctx, "SELECT coalesce(pg_last_wal_replay_lsn() >= $1::pg_lsn, false)", lsn).Scan(&done)
		if err != nil {
			return fmt.Errorf("testenv: %s: %w", s.Name, err)
		}
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("testenv: %s did not replay up to %s: %w", s.Name, lsn, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// queryRow runs a one-row query on its own short-lived connection.
func (c *Cluster) queryRow(ctx context.Context, sql string, args []any, dest ...any) error {
	conn, err := c.Conn(ctx, "")
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if err := conn.QueryRow(ctx, sql, args...).Scan(dest...); err != nil {
		return fmt.Errorf("testenv: %s: %w", c.Name, err)
	}
	return nil
}

// Promote promotes a standby (pg_ctl promote -w): it becomes a primary.
func (s *Cluster) Promote(ctx context.Context) error {
	if s.Primary == nil {
		return fmt.Errorf("testenv: %s is not a standby", s.Name)
	}
	if _, err := s.env.owner.run(ctx, s.env.bin, s.dir, "pg_ctl", "promote", "-D", s.DataDir, "-w", "-t", "60"); err != nil {
		return fmt.Errorf("testenv: promote %s: %w", s.Name, err)
	}
	return nil
}

// stopStandbys stops and removes every standby (Env.Stop).
func (e *Env) stopStandbys(mode string) error {
	e.mu.Lock()
	sbs := e.standbys
	e.standbys = nil
	e.mu.Unlock()
	var errs []error
	for _, s := range sbs {
		if err := s.shutdown(mode); err != nil {
			errs = append(errs, err)
		}
		s.watchdog.dismiss()
		if err := os.RemoveAll(s.dir); err != nil {
			errs = append(errs, fmt.Errorf("testenv: remove %s: %w", s.dir, err))
		}
	}
	return errors.Join(errs...)
}
