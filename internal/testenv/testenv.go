package testenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Options says what clusters Start creates.
type Options struct {
	// N is the number of clusters, named pg0 .. pg{N-1}. Must be >= 1.
	N int
	// Ports optionally fixes the port of each cluster: Ports[i] is used for
	// cluster i; a missing entry or 0 means "a free loopback port".
	Ports []int
	// BaseDir holds one directory per cluster (BaseDir/pg0, ...).
	// "" = a fresh temporary directory, removed by Stop.
	// Non-empty = a directory that is kept by Stop and reused by the next
	// Start when its clusters are already initialised (for `shardgate demo`).
	BaseDir string
	// Databases are created (if absent) in every cluster after start, e.g. "shop".
	Databases []string
	// Settings are extra postgresql.conf settings; they override the defaults
	// (see DefaultSettings). port, listen_addresses and
	// unix_socket_directories are always set by testenv.
	Settings map[string]string
	// TLS lists the clusters (by index) that serve TLS, with a server
	// certificate signed by the Env's own CA (Env.CAFile; tls.go).
	TLS []int
	// Archive makes every cluster archive its WAL (archive_mode on) into
	// its own directory, Cluster.ArchiveDir, for BaseBackup and Restore
	// (pitr.go).
	Archive bool
	// Log receives progress lines; nil = discard.
	Log io.Writer
}

// DefaultSettings are written into every cluster's configuration: logical
// decoding and two-phase commit enabled, durability off (throwaway data),
// and small memory so several clusters fit on one small machine.
func DefaultSettings() map[string]string {
	return map[string]string{
		"wal_level":                 "logical",
		"max_prepared_transactions": "64",
		"max_connections":           "200",
		"max_replication_slots":     "10",
		"max_wal_senders":           "10",
		"fsync":                     "off",
		"synchronous_commit":        "off",
		"full_page_writes":          "off",
		"shared_buffers":            "32MB",
	}
}

// Env is a set of running clusters. Stop it when done.
type Env struct {
	Clusters []*Cluster
	// BaseDir is the directory holding the clusters' directories.
	BaseDir string
	// CAFile is the certificate of the CA that signs the certificates of
	// the clusters serving TLS (Options.TLS); "" without any.
	CAFile string

	bin      string
	owner    *owner
	temp     bool
	log      io.Writer
	settings map[string]string
	archive  bool
	watchdog *watchdog

	mu       sync.Mutex
	standbys []*Cluster // StartStandby

	stopOnce sync.Once
	stopErr  error
}

// Start creates (or, for a kept BaseDir, reuses) opts.N clusters, starts them
// and creates opts.Databases in each. The clusters are initialised and started
// in parallel. On error everything already started is stopped and removed.
//
// Every cluster listens on 127.0.0.1 only; its Unix socket lives in its data
// directory, so nothing needs /var/run/postgresql. When this process runs as
// root, the servers run as the "postgres" account, which owns the directories.
//
// Even if this process dies without calling Stop (panic, test timeout,
// SIGKILL), a watchdog process shuts the servers down and removes a temporary
// BaseDir.
func Start(ctx context.Context, opts Options) (*Env, error) {
	if opts.N < 1 {
		return nil, fmt.Errorf("testenv: Options.N must be at least 1, got %d", opts.N)
	}
	if len(opts.Ports) > opts.N {
		return nil, fmt.Errorf("testenv: %d ports given for %d clusters", len(opts.Ports), opts.N)
	}
	bin, err := FindBinaries()
	if err != nil {
		return nil, err
	}
	own, err := resolveOwner()
	if err != nil {
		return nil, fmt.Errorf("testenv: %w", err)
	}
	e := &Env{bin: bin, owner: own, log: opts.Log, settings: DefaultSettings(), archive: opts.Archive}
	if e.log == nil {
		e.log = io.Discard
	}
	for k, v := range opts.Settings {
		e.settings[k] = v
	}

	// The base directory. Its path is made absolute and symlink-free, so the
	// watchdog can recognise a postmaster by its working directory.
	if opts.BaseDir == "" {
		d, err := os.MkdirTemp("", "shardgate-pg-")
		if err != nil {
			return nil, fmt.Errorf("testenv: %w", err)
		}
		e.BaseDir, e.temp = d, true
	} else {
		d, err := filepath.Abs(opts.BaseDir)
		if err == nil {
			err = os.MkdirAll(d, 0o755)
		}
		if err != nil {
			return nil, fmt.Errorf("testenv: base dir: %w", err)
		}
		e.BaseDir = d
	}
	if d, err := filepath.EvalSymlinks(e.BaseDir); err == nil {
		e.BaseDir = d
	}
	fail := func(err error) (*Env, error) {
		_ = e.Stop()
		return nil, err
	}
	if err := own.chown(e.BaseDir); err != nil {
		return fail(fmt.Errorf("testenv: chown %s to %s: %w", e.BaseDir, own.name, err))
	}
	if err := own.checkAccess(e.BaseDir); err != nil {
		return fail(fmt.Errorf("testenv: %w", err))
	}

	ports, err := choosePorts(opts.N, opts.Ports)
	if err != nil {
		return fail(err)
	}
	var dataDirs []string
	for i := 0; i < opts.N; i++ {
		dir := filepath.Join(e.BaseDir, fmt.Sprintf("pg%d", i))
		c := &Cluster{
			Name:      fmt.Sprintf("pg%d", i),
			Port:      ports[i],
			DataDir:   filepath.Join(dir, "data"),
			LogFile:   filepath.Join(dir, "server.log"),
			dir:       dir,
			fixedPort: i < len(opts.Ports) && opts.Ports[i] != 0,
			env:       e,
		}
		e.Clusters = append(e.Clusters, c)
		dataDirs = append(dataDirs, c.DataDir)
	}
	remove := ""
	if e.temp {
		remove = e.BaseDir
	}
	if e.watchdog, err = startWatchdog(dataDirs, remove); err != nil {
		return fail(fmt.Errorf("testenv: %w", err))
	}

	if err := e.setUpTLS(opts.TLS); err != nil {
		return fail(err)
	}
	t0 := time.Now()
	errs := make([]error, opts.N)
	var wg sync.WaitGroup
	for i, c := range e.Clusters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.setUp(ctx, opts.Databases)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fail(err)
	}
	e.logf("%d cluster(s) ready in %s under %s", opts.N, time.Since(t0).Round(time.Millisecond), e.BaseDir)
	return e, nil
}

// Stop shuts every cluster down and removes a temporary BaseDir (its servers
// are stopped in immediate mode: the data is thrown away anyway). A kept
// BaseDir is shut down cleanly ("fast" mode) and stays for the next Start.
// It is safe to call more than once and from several goroutines; later
// calls return the first call's result.
func (e *Env) Stop() error {
	e.stopOnce.Do(func() {
		// Immediate mode skips the shutdown checkpoint, and with
		// synchronous_commit=off it may drop the last commits: right for
		// throwaway data, wrong for a kept directory.
		mode := "immediate"
		if !e.temp {
			mode = "fast"
		}
		sbErr := e.stopStandbys("immediate")
		running := 0
		for _, c := range e.Clusters {
			c.mu.Lock()
			if c.running {
				running++
			}
			c.mu.Unlock()
		}
		var wg sync.WaitGroup
		errs := make([]error, len(e.Clusters))
		for i, c := range e.Clusters {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = c.shutdown(mode)
			}()
		}
		wg.Wait()
		if e.temp && e.BaseDir != "" {
			if err := os.RemoveAll(e.BaseDir); err != nil {
				errs = append(errs, fmt.Errorf("testenv: remove %s: %w", e.BaseDir, err))
			}
		}
		e.watchdog.dismiss()
		e.stopErr = errors.Join(append(errs, sbErr)...)
		if e.stopErr == nil && running > 0 {
			e.logf("stopped %d cluster(s)", running)
		}
	})
	return e.stopErr
}

// StopOnSignal is for programs that do not handle signals themselves: on
// SIGINT or SIGTERM it calls Stop and exits the process (status 130 or 143).
// The returned function uninstalls the handler. (Without it the watchdog
// still stops the servers once the process is gone.)
func (e *Env) StopOnSignal() (release func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-ch:
			e.logf("got %v: stopping clusters", sig)
			_ = e.Stop()
			code := 130
			if sig == syscall.SIGTERM {
				code = 143
			}
			os.Exit(code)
		case <-done:
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			signal.Stop(ch)
			close(done)
		})
	}
}

func (e *Env) logf(format string, args ...any) {
	if w, ok := e.log.(tbWriter); ok {
		w.tb.Helper()
		w.tb.Logf("testenv: "+format, args...)
		return
	}
	fmt.Fprintf(e.log, "testenv: "+format+"\n", args...)
}

// configFile is the file, inside each data directory, that holds shardgate's
// settings; postgresql.conf includes it. It is rewritten on every Start.
const configFile = "shardgate.conf"

// writeConfig writes configFile for c.
func (e *Env) writeConfig(c *Cluster) error {
	s := map[string]string{}
	for k, v := range e.settings {
		s[k] = v
	}
	c.tlsSettings(s)
	if e.archive {
		archiveSettings(s)
		if err := c.makeArchiveDir(); err != nil {
			return err
		}
	}
	for k, v := range c.extra {
		s[k] = v
	}
	s["listen_addresses"] = "127.0.0.1"
	s["port"] = strconv.Itoa(c.Port)
	// A Unix socket path is limited to 107 bytes; with a deep BaseDir, go
	// TCP-only rather than fail.
	if len(c.DataDir)+len("/.s.PGSQL.65535") <= 107 {
		s["unix_socket_directories"] = c.DataDir
	} else {
		s["unix_socket_directories"] = ""
	}
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("# Written by shardgate internal/testenv on every start; edits are lost.\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "%s = '%s'\n", k, strings.ReplaceAll(s[k], "'", "''"))
	}
	path := filepath.Join(c.DataDir, configFile)
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return err
	}
	return e.owner.chown(path)
}

// choosePorts returns n ports: fixed[i] where given, else a free loopback
// port. Free ports are found by binding 127.0.0.1:0, holding all listeners
// until every port is chosen so no two clusters get the same one.
func choosePorts(n int, fixed []int) ([]int, error) {
	ports := make([]int, n)
	used := map[int]bool{}
	for i, p := range fixed {
		if p < 0 || p > 65535 {
			return nil, fmt.Errorf("testenv: bad port %d", p)
		}
		if p != 0 {
			if used[p] {
				return nil, fmt.Errorf("testenv: port %d given twice", p)
			}
			used[p] = true
			ports[i] = p
		}
	}
	var held []net.Listener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	for i := range ports {
		if ports[i] != 0 {
			continue
		}
		for {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				return nil, fmt.Errorf("testenv: find a free port: %w", err)
			}
			held = append(held, l)
			p := l.Addr().(*net.TCPAddr).Port
			if !used[p] {
				used[p] = true
				ports[i] = p
				break
			}
		}
	}
	return ports, nil
}

// freePort returns one free loopback port.
func freePort() (int, error) {
	p, err := choosePorts(1, nil)
	if err != nil {
		return 0, err
	}
	return p[0], nil
}
