package pgxsuite

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/testenv"
	"github.com/shardgate/shardgate/proxy"
	"github.com/shardgate/shardgate/topology"
)

const (
	// pgxModule is the module whose suite is run, at the version in go.mod.
	pgxModule = "github.com/jackc/pgx/v5"
	// database is the database pgx's tests expect (its CI's name).
	database = "pgx_test"
	// setupSQL is what testsetup/postgresql_setup.sql does that applies to a
	// plain TCP target with trust authentication (see doc.go).
	setupSQL = `create extension hstore;
create extension ltree;
create domain uint64 as numeric(20,0);`
	// suiteTimeout is go test's -timeout for each of pgx's test binaries.
	suiteTimeout = 15 * time.Minute
	// minRatio: the proxy run must pass at least this share of the tests
	// the direct run passes.
	minRatio = 0.95
	// maxExpected is the most entries expected_failures.txt may hold.
	maxExpected = 3
	// outputLines is how many lines of a failing test's output are shown.
	outputLines = 12
	// maxLine caps the length of one line of test output in the summary.
	maxLine = 300
)

// suitePackages are the packages of pgx's module that are run, as go test
// arguments relative to its directory.
var suitePackages = []string{".", "./pgconn"}

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		// The only test skips: do not start PostgreSQL for nothing.
		os.Exit(m.Run())
	}
	testenv.Run(m, testenv.Options{N: 1, Databases: []string{database}}, func(e *testenv.Env) error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		return e.Clusters[0].Exec(ctx, database, setupSQL)
	})
}

func TestPgxSuiteThroughProxy(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping pgx's own test suite (it builds and runs pgx's root and pgconn packages twice, " +
			"directly and through the proxy, which takes minutes)")
	}
	e := testenv.Shared(t)
	cluster := e.Clusters[0]

	ctx := context.Background()
	if dl, ok := t.Deadline(); ok {
		// Stop the suite in time to report what it did before go test's
		// own -timeout kills this test.
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, dl.Add(-30*time.Second))
		defer cancel()
	}

	src := pgxModuleDir(t)
	dir := filepath.Join(t.TempDir(), "pgx")
	if err := copyTree(src, dir); err != nil {
		t.Fatalf("copy %s: %v", src, err)
	}
	goflags := childGOFLAGS(t)
	t.Logf("pgx module %s copied to %s; GOFLAGS=%q", src, dir, goflags)

	report := os.Getenv("PGXSUITE_REPORT")
	rawPath := func(suffix string) string {
		if report == "" {
			return filepath.Join(t.TempDir(), "pgx"+suffix)
		}
		return report + suffix
	}

	// Build (and download) first, so that the two runs' durations compare.
	buildTime := buildSuite(ctx, t, dir, goflags)

	direct := runSuite(ctx, t, "direct", dir, cluster.DSN(database), goflags, rawPath(".direct.json"))

	p := startProxy(t, cluster.DSN(database), rawPath(".proxy.log"))
	proxied := runSuite(ctx, t, "proxy", dir, p.dsn, goflags, rawPath(".proxy.json"))
	p.stop()

	summary := summarize(buildTime, direct, proxied)
	t.Log("\n" + summary)
	if report != "" {
		if err := os.WriteFile(report, []byte(summary), 0o644); err != nil {
			t.Errorf("write PGXSUITE_REPORT: %v", err)
		}
	}

	dc, pc := direct.counts(), proxied.counts()
	if !direct.usable() {
		t.Fatalf("the direct run is not a usable baseline (%s); see the summary above", direct.problem())
	}
	if float64(pc.pass) < minRatio*float64(dc.pass) {
		t.Errorf("through the proxy %d leaf tests pass, directly %d: fewer than %.0f %% (%d needed)",
			pc.pass, dc.pass, minRatio*100, int(math.Ceil(minRatio*float64(dc.pass))))
	}
	exp, err := loadExpected(expectedFile)
	if err != nil {
		t.Fatalf("expected failures: %v", err)
	}
	if len(exp) > maxExpected {
		t.Errorf("%s has %d entries; the goal is at most %d", expectedFile, len(exp), maxExpected)
	}
	unexpected, stale := setDiff(direct, proxied, exp)
	for _, k := range unexpected {
		t.Errorf("%s passes directly and fails through the proxy, and %s does not list it", k, expectedFile)
	}
	for _, e := range stale {
		t.Logf("%s:%d: %s did not fail through the proxy this time; remove the line if it keeps passing", expectedFile, e.line, e.key)
	}
}

// pgxModuleDir returns the module cache directory of pgx at the version in
// shardgate's go.mod, downloading it if needed.
func pgxModuleDir(t *testing.T) string {
	t.Helper()
	var m struct{ Dir, Version, Error string }
	out, err := exec.Command("go", "list", "-m", "-json", pgxModule).Output()
	if err == nil {
		err = json.Unmarshal(out, &m)
	}
	if err == nil && m.Dir == "" {
		// Not in the module cache yet.
		out, err = exec.Command("go", "mod", "download", "-json", pgxModule).Output()
		if err == nil {
			err = json.Unmarshal(out, &m)
		}
		if err == nil && m.Error != "" {
			err = errors.New(m.Error)
		}
	}
	if err != nil {
		t.Fatalf("locate %s: %v%s", pgxModule, err, exitStderr(err))
	}
	if m.Dir == "" {
		t.Fatalf("locate %s: no directory (version %q)", pgxModule, m.Version)
	}
	return m.Dir
}

func exitStderr(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) && len(ee.Stderr) > 0 {
		return ": " + strings.TrimSpace(string(ee.Stderr))
	}
	return ""
}

// copyTree copies the regular files and directories under src to dst,
// writable by their owner (the module cache is read-only).
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		return copyFile(path, target, 0o644|info.Mode().Perm()&0o111)
	})
}

func copyFile(src, dst string, mode fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// childGOFLAGS is the effective GOFLAGS (environment or go env -w) with
// -mod=mod, so that pgx's test dependencies are resolved from its own go.mod.
func childGOFLAGS(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOFLAGS").Output()
	if err != nil {
		t.Fatalf("go env GOFLAGS: %v%s", err, exitStderr(err))
	}
	var flags []string
	for _, f := range strings.Fields(string(out)) {
		if !strings.HasPrefix(f, "-mod=") && !strings.HasPrefix(f, "--mod=") {
			flags = append(flags, f)
		}
	}
	return strings.Join(append(flags, "-mod=mod"), " ")
}

// childEnv is this process's environment without any PG* or PGX_* variable
// (libpq defaults and pgx's optional test targets), plus the suite's.
func childEnv(dsn, goflags string) []string {
	var out []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(name, "PG"), name == "GOFLAGS", name == "GOTOOLCHAIN", name == "GOWORK":
			continue
		}
		out = append(out, kv)
	}
	return append(out,
		"PGX_TEST_DATABASE="+dsn,
		"GOFLAGS="+goflags,
		"GOTOOLCHAIN=local",
		"GOWORK=off",
	)
}

// goCommand is a go command in dir with environment env, in its own process
// group, so that a cancelled run also ends the test binaries go test started.
func goCommand(ctx context.Context, dir string, env []string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	return cmd
}

// buildSuite builds pgx's test binaries (running none of their tests), so
// that they are in the build cache for the runs, and says how long it took.
func buildSuite(ctx context.Context, t *testing.T, dir, goflags string) time.Duration {
	t.Helper()
	start := time.Now()
	args := append([]string{"test", "-count=1", "-run", "^$"}, suitePackages...)
	out, err := goCommand(ctx, dir, childEnv("", goflags), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("build pgx's tests: go %s: %v\n%s", strings.Join(args, " "), err,
			strings.Join(lastLines(strings.Split(strings.TrimSpace(string(out)), "\n"), 40), "\n"))
	}
	d := time.Since(start)
	t.Logf("built pgx's test binaries in %s", d.Round(time.Second))
	return d
}

// runSuite runs go test on pgx's packages in dir against dsn and parses its
// -json output, which it also copies to rawPath.
func runSuite(ctx context.Context, t *testing.T, label, dir, dsn, goflags, rawPath string) *suiteRun {
	t.Helper()
	// pgx's binaries get -timeout 15m, or less when this test's own deadline
	// is nearer: go test's timeout panic names the tests still running,
	// which killing the process at the deadline would not.
	r := &suiteRun{label: label, dsn: dsn, timeout: suiteTimeout, tests: map[string]*testResult{}, pkgs: map[string]*pkgResult{}}
	if dl, ok := ctx.Deadline(); ok {
		if left := time.Until(dl) - 20*time.Second; left < r.timeout {
			r.timeout = max(left, 10*time.Second).Truncate(time.Second)
		}
	}
	args := []string{"test", "-count=1", "-json", "-timeout", r.timeout.String()}
	if re := os.Getenv("PGXSUITE_RUN"); re != "" {
		args = append(args, "-run", re)
	}
	args = append(args, suitePackages...)
	t.Logf("%s: PGX_TEST_DATABASE=%s go %s", label, dsn, strings.Join(args, " "))

	cmd := goCommand(ctx, dir, childEnv(dsn, goflags), args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.Create(rawPath)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()

	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: go test: %v", label, err)
	}
	sc := bufio.NewScanner(io.TeeReader(stdout, raw))
	sc.Buffer(make([]byte, 0, 1<<16), 64<<20)
	for sc.Scan() {
		r.add(sc.Bytes())
	}
	if err := sc.Err(); err != nil {
		r.other = append(r.other, "reading go test output: "+err.Error())
		_, _ = io.Copy(io.Discard, stdout)
	}
	werr := cmd.Wait()
	r.duration = time.Since(start)
	r.stderr = strings.TrimSpace(stderr.String())
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		r.err = fmt.Errorf("stopped before this test's deadline: %w", ctx.Err())
	case errors.As(werr, &ee) && ee.ExitCode() == 1:
		// go test's status when tests (or builds) fail; the events say which.
	case werr != nil:
		r.err = werr
	}
	c := r.counts()
	t.Logf("%s: %s: %d passed, %d failed, %d skipped leaf tests", label, r.duration.Round(time.Second), c.pass, c.fail, c.skip)
	return r
}

// runningProxy is the in-process proxy of the second run.
type runningProxy struct {
	dsn  string
	stop func()
}

// startProxy starts the proxy on a free loopback port over an all-main
// topology on the cluster, logging to logPath.
func startProxy(t *testing.T, clusterDSN, logPath string) *runningProxy {
	t.Helper()
	yaml := fmt.Sprintf(`version: 1
clusters:
  pg0: { dsn: %q }
groups:
  main: { unsharded: true, cluster: pg0 }
`, clusterDSN)
	topo, err := topology.Parse("pgxsuite.yaml", []byte(yaml))
	if err != nil {
		t.Fatalf("topology: %v", err)
	}
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(logFile, nil))
	cfg := proxy.Config{PoolSize: 20, MaxWait: 10 * time.Second, Logger: logger}
	// PGXSUITE_POOL_MODE=session runs the suite over session pooling; the
	// default is the proxy's default (transaction pooling).
	cfg.PoolMode = proxy.PoolMode(os.Getenv("PGXSUITE_POOL_MODE"))
	srv, err := proxy.NewServer(cfg, topo)
	if err != nil {
		logFile.Close()
		t.Fatalf("proxy: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		srv.Close()
		logFile.Close()
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	p := &runningProxy{dsn: fmt.Sprintf("postgres://postgres@%s/%s?sslmode=disable", ln.Addr(), database)}
	var once sync.Once
	p.stop = func() {
		once.Do(func() {
			srv.Close()
			ln.Close()
			select {
			case err := <-served:
				if err != nil {
					t.Errorf("proxy: Serve: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Errorf("proxy: Serve did not return within 10s of Close")
			}
			logFile.Close()
		})
	}
	t.Cleanup(p.stop)
	t.Logf("proxy listening on %s (pool mode %q, size %d), log in %s", ln.Addr(), cfg.PoolMode, cfg.PoolSize, logPath)
	return p
}
