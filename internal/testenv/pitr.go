package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Point-in-time recovery. With Options.Archive every cluster archives
// its WAL into its own directory (ArchiveDir), BaseBackup takes a base
// backup, and Restore starts a new cluster from one, replaying the
// archive up to a named restore point.

// archiveSettings make a cluster archive each WAL file into ../archive,
// beside its data directory (the archiver runs in the data directory).
func archiveSettings(s map[string]string) {
	s["archive_mode"] = "on"
	s["archive_command"] = "test ! -f ../archive/%f && cp %p ../archive/%f"
}

// ArchiveDir is where the cluster archives its WAL (Options.Archive).
func (c *Cluster) ArchiveDir() string { return filepath.Join(c.dir, "archive") }

// makeArchiveDir creates the cluster's archive directory, owned by the
// server's account.
func (c *Cluster) makeArchiveDir() error {
	if err := os.MkdirAll(c.ArchiveDir(), 0o755); err != nil {
		return err
	}
	return c.env.owner.chown(c.ArchiveDir())
}

// BaseBackup takes a base backup of the cluster (pg_basebackup, the WAL
// it needs streamed into it) into a new directory beside its data
// directory, and returns the directory.
func (c *Cluster) BaseBackup(ctx context.Context) (string, error) {
	e := c.env
	c.mu.Lock()
	c.backups++
	dir := filepath.Join(c.dir, fmt.Sprintf("base%d", c.backups))
	c.mu.Unlock()
	conninfo := fmt.Sprintf("host=127.0.0.1 port=%d user=postgres", c.Port)
	if _, err := e.owner.run(ctx, e.bin, c.dir, "pg_basebackup", "-d", conninfo, "-D", dir, "-X", "stream", "-c", "fast", "--no-sync"); err != nil {
		return "", fmt.Errorf("testenv: base backup of %s: %w", c.Name, err)
	}
	return dir, nil
}

// WaitArchived waits until the WAL file holding lsn is in the archive.
func (c *Cluster) WaitArchived(ctx context.Context, lsn string) error {
	var file string
	if err := c.queryRow(ctx, "SELECT pg_walfile_name($1::pg_lsn)", []any{lsn}, &file); err != nil {
		return err
	}
	for {
		if _, err := os.Stat(filepath.Join(c.ArchiveDir(), file)); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("testenv: %s: WAL file %s not archived: %w", c.Name, file, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Restore starts a new cluster from a base backup of c (BaseBackup),
// recovering from c's archive up to the restore point named target, then
// promoted: it returns once the cluster accepts writes. It lives in a
// temporary directory of its own, stopped and removed by Env.Stop. A
// target the archive does not reach fails with the server's log.
func (c *Cluster) Restore(ctx context.Context, backup, target string) (*Cluster, error) {
	s, fail, err := c.env.newSideCluster(c.Name + "-restored")
	if err != nil {
		return nil, err
	}
	e := c.env
	if _, err := e.owner.run(ctx, "/bin", s.dir, "cp", "-a", backup, s.DataDir); err != nil {
		return fail(fmt.Errorf("testenv: copy the base backup: %w", err))
	}
	if err := os.WriteFile(filepath.Join(s.DataDir, "recovery.signal"), nil, 0o600); err != nil {
		return fail(err)
	}
	if err := e.owner.chown(filepath.Join(s.DataDir, "recovery.signal")); err != nil {
		return fail(err)
	}
	s.extra = map[string]string{
		"restore_command":        fmt.Sprintf("cp %s/%%f %%p", c.ArchiveDir()),
		"recovery_target_name":   target,
		"recovery_target_action": "promote",
	}
	t0 := time.Now()
	if err := e.writeConfig(s); err != nil {
		return fail(err)
	}
	s.mu.Lock()
	err = s.startServer(ctx)
	s.mu.Unlock()
	if err != nil {
		return fail(err)
	}
	for {
		var recovering bool
		err := s.queryRow(ctx, "SELECT pg_is_in_recovery()", nil, &recovering)
		if err == nil && !recovering {
			break
		}
		if ctx.Err() != nil || (err != nil && !s.anyProcess()) {
			return fail(fmt.Errorf("testenv: %s did not recover to %q: %v\n--- tail of %s ---\n%s", s.Name, target, err, s.LogFile, logTail(s.LogFile, 0, 30)))
		}
		time.Sleep(20 * time.Millisecond)
	}
	e.mu.Lock()
	e.standbys = append(e.standbys, s)
	e.mu.Unlock()
	e.logf("%s: restored from %s to %q on 127.0.0.1:%d (%s)", s.Name, filepath.Base(backup), target, s.Port, time.Since(t0).Round(time.Millisecond))
	return s, nil
}
