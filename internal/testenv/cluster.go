package testenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// Cluster is one PostgreSQL server of an Env.
type Cluster struct {
	// Name is pg0, pg1, ... (the names the example topology uses).
	Name string
	// Port is the TCP port on 127.0.0.1. It stays the same across Stop/Start.
	Port int
	// DataDir is the server's data directory (also holds its Unix socket).
	DataDir string
	// LogFile is the server's log.
	LogFile string
	// Primary is the cluster a standby streams from (StartStandby); nil
	// for a primary.
	Primary *Cluster

	dir       string // DataDir's parent: BaseDir/pgN
	fixedPort bool
	// tlsCert and tlsKey are the server's certificate and key files when
	// it serves TLS (tls.go).
	tlsCert, tlsKey string
	env             *Env
	// extra are settings of this cluster alone (a standby's), over the
	// Env's; watchdog is a standby's own (the Env's knows the primaries).
	extra    map[string]string
	watchdog *watchdog
	backups  int // BaseBackup's count, naming their directories

	mu      sync.Mutex // serialises Start/Stop
	running bool
}

// DSN returns a URL for database db ("" = postgres) on this cluster, as
// superuser postgres over TCP without TLS:
// postgres://postgres@127.0.0.1:PORT/DB?sslmode=disable
func (c *Cluster) DSN(db string) string {
	if db == "" {
		db = "postgres"
	}
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.Port, url.PathEscape(db))
}

// Conn opens a pgx connection to database db ("" = postgres). Close it.
func (c *Cluster) Conn(ctx context.Context, db string) (*pgx.Conn, error) {
	conn, err := pgx.Connect(ctx, c.DSN(db))
	if err != nil {
		return nil, fmt.Errorf("testenv: connect to %s: %w", c.Name, err)
	}
	return conn, nil
}

// Exec runs sql in database db on its own short-lived connection. Without
// args it uses the simple protocol, so sql may hold several statements
// (a whole schema file).
func (c *Cluster) Exec(ctx context.Context, db, sql string, args ...any) error {
	conn, err := c.Conn(ctx, db)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, sql, args...); err != nil {
		return fmt.Errorf("testenv: %s: %w", c.Name, err)
	}
	return nil
}

// Stop shuts this cluster down cleanly ("fast" mode: open sessions are
// terminated). Its data and port are kept, so Start brings it back as it was.
// Stopping a stopped cluster does nothing.
func (c *Cluster) Stop(ctx context.Context) error {
	return c.shutdownCtx(ctx, "fast")
}

// Start starts a stopped cluster again on the same port. Starting a running
// cluster does nothing.
func (c *Cluster) Start(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running {
		return nil
	}
	if err := c.env.writeConfig(c); err != nil {
		return err
	}
	return c.startServer(ctx)
}

// RestartImmediate stops the server in immediate mode — as a crash does:
// every backend process is killed at once, open connections are cut —
// and starts it again on the same port, as pg_ctl restart -m immediate.
func (c *Cluster) RestartImmediate(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.shutdownLocked("immediate"); err != nil {
		return err
	}
	return c.startServer(ctx)
}

// setUp initialises (unless reusing a kept, initialised directory), starts
// the cluster and creates the databases.
func (c *Cluster) setUp(ctx context.Context, dbs []string) error {
	e := c.env
	t0 := time.Now()
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return fmt.Errorf("testenv: %w", err)
	}
	if err := e.owner.chown(c.dir); err != nil {
		return fmt.Errorf("testenv: chown %s to %s: %w", c.dir, e.owner.name, err)
	}
	marker := filepath.Join(c.dir, ".initialised")
	if _, err := os.Stat(marker); err == nil {
		// A kept directory from an earlier run. Its postmaster may still be
		// running if that run was killed: stop it so we start on our terms.
		if _, err := e.owner.run(ctx, e.bin, c.dir, "pg_ctl", "status", "-D", c.DataDir); err == nil {
			e.logf("%s: stopping a server left running by an earlier run", c.Name)
			c.running = true
			if err := c.shutdown("fast"); err != nil {
				return err
			}
		}
		e.logf("%s: reusing %s", c.Name, c.DataDir)
	} else {
		if err := os.RemoveAll(c.DataDir); err != nil { // leftovers of an interrupted initdb
			return fmt.Errorf("testenv: %w", err)
		}
		if err := c.initdb(ctx); err != nil {
			return err
		}
		f, err := os.OpenFile(filepath.Join(c.DataDir, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
		if err == nil {
			_, err = fmt.Fprintf(f, "\n# shardgate internal/testenv settings\ninclude = '%s'\n", configFile)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err == nil {
			err = os.WriteFile(marker, []byte("initialised by shardgate internal/testenv\n"), 0o644)
		}
		if err != nil {
			return fmt.Errorf("testenv: %s: %w", c.Name, err)
		}
		e.logf("%s: initdb done in %s", c.Name, time.Since(t0).Round(time.Millisecond))
	}
	if err := e.writeConfig(c); err != nil {
		return fmt.Errorf("testenv: %s: %w", c.Name, err)
	}
	c.mu.Lock()
	err := c.startServer(ctx)
	c.mu.Unlock()
	if err != nil {
		return err
	}
	if err := c.createDatabases(ctx, dbs); err != nil {
		return err
	}
	e.logf("%s: listening on 127.0.0.1:%d (%s)", c.Name, c.Port, time.Since(t0).Round(time.Millisecond))
	return nil
}

func (c *Cluster) initdb(ctx context.Context) error {
	e := c.env
	args := []string{"-D", c.DataDir, "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8"}
	out, err := e.owner.run(ctx, e.bin, c.dir, "initdb", append(args, "--locale=C.UTF-8")...)
	if err == nil {
		return nil
	}
	if !strings.Contains(strings.ToLower(out), "locale") {
		return fmt.Errorf("testenv: %s: %w", c.Name, err)
	}
	// C.UTF-8 is not available everywhere (older glibc, macOS); C is.
	e.logf("%s: locale C.UTF-8 unavailable, using C", c.Name)
	if rerr := os.RemoveAll(c.DataDir); rerr != nil {
		return fmt.Errorf("testenv: %w", rerr)
	}
	if _, err2 := e.owner.run(ctx, e.bin, c.dir, "initdb", append(args, "--locale=C")...); err2 != nil {
		return fmt.Errorf("testenv: %s: %w (and with --locale=C.UTF-8: %v)", c.Name, err2, err)
	}
	return nil
}

// startServer runs pg_ctl start. When the server cannot bind a port that
// was chosen for it (someone took it meanwhile) it retries on another free
// port. The caller holds c.mu.
func (c *Cluster) startServer(ctx context.Context) error {
	e := c.env
	for attempt := 1; ; attempt++ {
		offset := fileSize(c.LogFile)
		_, err := e.owner.run(ctx, e.bin, c.dir, "pg_ctl", "start", "-D", c.DataDir, "-l", c.LogFile, "-w", "-t", "60")
		if err == nil {
			c.running = true
			return nil
		}
		// pg_ctl may have given up while the postmaster lives on.
		c.running = true
		_ = c.shutdownLocked("immediate")
		tail := logTail(c.LogFile, offset, 30)
		if !c.fixedPort && attempt < 5 && portTaken(tail) {
			p, perr := freePort()
			if perr == nil {
				e.logf("%s: port %d was taken, retrying on %d", c.Name, c.Port, p)
				c.Port = p
				if werr := e.writeConfig(c); werr == nil {
					continue
				}
			}
		}
		return fmt.Errorf("testenv: start %s on 127.0.0.1:%d: %w\n--- tail of %s ---\n%s", c.Name, c.Port, err, c.LogFile, tail)
	}
}

func portTaken(log string) bool {
	return strings.Contains(log, "could not bind") || strings.Contains(log, "Address already in use") ||
		strings.Contains(log, "could not create any TCP/IP sockets")
}

func (c *Cluster) createDatabases(ctx context.Context, dbs []string) error {
	if len(dbs) == 0 {
		return nil
	}
	conn, err := c.Conn(ctx, "postgres")
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	for _, db := range dbs {
		var exists bool
		if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", db).Scan(&exists); err != nil {
			return fmt.Errorf("testenv: %s: %w", c.Name, err)
		}
		if exists {
			continue
		}
		if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{db}.Sanitize()); err != nil {
			return fmt.Errorf("testenv: %s: create database %s: %w", c.Name, db, err)
		}
	}
	return nil
}

func (c *Cluster) shutdownCtx(ctx context.Context, mode string) error {
	done := make(chan error, 1)
	go func() { done <- c.shutdown(mode) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// shutdown stops the server with pg_ctl in the given mode and, should that
// fail, signals the postmaster directly.
func (c *Cluster) shutdown(mode string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.shutdownLocked(mode)
}

func (c *Cluster) shutdownLocked(mode string) error {
	if !c.running {
		return nil
	}
	pidFile := filepath.Join(c.DataDir, "postmaster.pid")
	if _, err := os.Stat(pidFile); err != nil {
		c.running = false
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	_, err := c.env.owner.run(ctx, c.env.bin, c.dir, "pg_ctl", "stop", "-D", c.DataDir, "-m", mode, "-w", "-t", "60")
	if err != nil {
		if kerr := c.killPostmaster(); kerr != nil {
			return fmt.Errorf("testenv: stop %s: %w; kill: %v", c.Name, err, kerr)
		}
	}
	c.running = false
	return nil
}

// killPostmaster sends SIGQUIT (immediate shutdown), then SIGKILL, to the
// process named in postmaster.pid, if it is really this cluster's postmaster.
func (c *Cluster) killPostmaster() error {
	pidFile := filepath.Join(c.DataDir, "postmaster.pid")
	pid, err := c.postmasterPID()
	if pid == 0 {
		return err // nothing running, or a bad pid file
	}
	gone := func() bool {
		_, statErr := os.Stat(pidFile)
		return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) || statErr != nil
	}
	for _, sig := range []syscall.Signal{syscall.SIGQUIT, syscall.SIGKILL} {
		if err := syscall.Kill(pid, sig); err != nil {
			if errors.Is(err, syscall.ESRCH) {
				return nil
			}
			return err
		}
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if gone() {
				return nil
			}
		}
	}
	return fmt.Errorf("postmaster %d of %s did not exit", pid, c.Name)
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// logTail returns the last n lines written to path after offset.
func logTail(path string, offset int64, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return "(no server log: " + err.Error() + ")"
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return ""
	}
	b, _ := io.ReadAll(io.LimitReader(f, 1<<20))
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// postmasterPID is the pid postmaster.pid names, if it is really this
// cluster's postmaster (0, nil: none runs).
func (c *Cluster) postmasterPID() (int, error) {
	pidFile := filepath.Join(c.DataDir, "postmaster.pid")
	b, err := os.ReadFile(pidFile)
	if err != nil {
		return 0, nil // nothing running
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("bad %s", pidFile)
	}
	if cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid)); err == nil && cwd != c.DataDir {
		return 0, nil // a recycled pid: the postmaster is gone
	}
	return pid, nil
}

// Freeze stops the cluster's postmaster with SIGSTOP: the kernel still
// accepts connections to its port, nothing answers them (a server that
// hangs). thaw (SIGCONT) lets it run again; call it before the test ends.
func (c *Cluster) Freeze() (thaw func(), err error) {
	pid, err := c.postmasterPID()
	if err == nil && pid == 0 {
		err = fmt.Errorf("testenv: %s is not running", c.Name)
	}
	if err != nil {
		return nil, err
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		return nil, fmt.Errorf("testenv: freeze %s: %w", c.Name, err)
	}
	var once sync.Once
	return func() { once.Do(func() { _ = syscall.Kill(pid, syscall.SIGCONT) }) }, nil
}
