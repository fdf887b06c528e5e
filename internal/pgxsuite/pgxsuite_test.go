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
	"regexp"
	"sort"
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
	maxExpected = 5
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

// event is one line of go test -json (cmd/test2json).
type event struct {
	Action      string
	Package     string
	Test        string
	Output      string
	Elapsed     float64
	ImportPath  string // build-output, build-fail
	FailedBuild string
}

// testResult is one test or subtest of one run.
type testResult struct {
	pkg, name string
	action    string // pass, fail, skip; "" if it never finished
	output    []string
	hasSub    bool
	elapsed   float64 // seconds
}

func (r *testResult) key() string { return r.pkg + " " + r.name }

// pkgResult is one package of one run.
type pkgResult struct {
	action      string // pass, fail, skip; "" if it never finished
	failedBuild string
	output      []string // package-level output (no test): panics, timeouts, FAIL lines
}

// suiteRun is one run of pgx's suite.
type suiteRun struct {
	label    string
	dsn      string
	duration time.Duration
	timeout  time.Duration // go test -timeout
	err      error         // of the go command, other than its tests failing
	stderr   string
	tests    map[string]*testResult
	pkgs     map[string]*pkgResult
	build    []string // build output
	other    []string // stdout lines that are not JSON
	panics   []string // "panic: ..." lines of test binaries, with the tests then running
	inPanic  int      // lines of the current panic report still to capture
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

// add records one line of go test -json output.
func (r *suiteRun) add(line []byte) {
	var ev event
	if len(bytes.TrimSpace(line)) == 0 {
		return
	}
	if line[0] != '{' || json.Unmarshal(line, &ev) != nil {
		r.other = append(r.other, string(line))
		return
	}
	switch ev.Action {
	case "build-output":
		r.build = append(r.build, strings.TrimRight(ev.Output, "\n"))
		return
	case "build-fail":
		return
	}
	pkg := shortPkg(ev.Package)
	if ev.Action == "output" {
		r.watchPanic(pkg, strings.TrimRight(ev.Output, "\n"))
	}
	if ev.Test == "" {
		p := r.pkg(pkg)
		switch ev.Action {
		case "output":
			p.output = append(p.output, strings.TrimRight(ev.Output, "\n"))
		case "pass", "fail", "skip":
			p.action = ev.Action
			p.failedBuild = ev.FailedBuild
		}
		return
	}
	tr := r.test(pkg, ev.Test)
	switch ev.Action {
	case "output":
		tr.output = append(tr.output, strings.TrimRight(ev.Output, "\n"))
	case "pass", "fail", "skip":
		tr.action = ev.Action
		tr.elapsed = ev.Elapsed
	}
}

// watchPanic keeps a test binary's panic line (a panic in a test or the
// -timeout alarm) and the lines after it up to the first goroutine trace;
// test2json attributes them to whichever test printed last.
func (r *suiteRun) watchPanic(pkg, line string) {
	switch {
	case strings.HasPrefix(line, "panic: "):
		r.panics = append(r.panics, pkg+": "+line)
		r.inPanic = 10
	case r.inPanic > 0 && (strings.HasPrefix(line, "goroutine ") || strings.HasPrefix(line, "[recovered")):
		r.inPanic = 0
	case r.inPanic > 0:
		if strings.TrimSpace(line) != "" {
			r.panics = append(r.panics, pkg+":     "+strings.TrimSpace(line))
		}
		r.inPanic--
	}
}

func (r *suiteRun) pkg(name string) *pkgResult {
	p := r.pkgs[name]
	if p == nil {
		p = &pkgResult{}
		r.pkgs[name] = p
	}
	return p
}

// tempDirName matches a t.TempDir() path in a subtest name
// (TestParseConfigSSLCertMode puts one there); it differs from run to run.
var tempDirName = regexp.MustCompile(`/[^/'"]*?[0-9]{5,}/[0-9]{3}\b`)

func (r *suiteRun) test(pkg, name string) *testResult {
	name = tempDirName.ReplaceAllString(name, "/TEMPDIR")
	k := pkg + " " + name
	tr := r.tests[k]
	if tr == nil {
		tr = &testResult{pkg: pkg, name: name}
		r.tests[k] = tr
		// Mark every ancestor that is a test as having subtests.
		for i := strings.LastIndexByte(name, '/'); i > 0; i = strings.LastIndexByte(name[:i], '/') {
			if parent := r.tests[pkg+" "+name[:i]]; parent != nil {
				parent.hasSub = true
			}
		}
	}
	return tr
}

// shortPkg names pgx's packages as go test's arguments do.
func shortPkg(importPath string) string {
	if importPath == pgxModule {
		return "."
	}
	return strings.TrimPrefix(importPath, pgxModule+"/")
}

// failed says whether a test counts as a failure: a leaf that failed or
// never finished, or a parent that failed while none of its subtests did.
func (r *suiteRun) failed(tr *testResult) bool {
	if !tr.hasSub {
		return tr.action == "fail" || tr.action == ""
	}
	if tr.action != "fail" {
		return false
	}
	prefix := tr.name + "/"
	for _, o := range r.tests {
		if o.pkg == tr.pkg && strings.HasPrefix(o.name, prefix) && (o.action == "fail" || o.action == "") {
			return false
		}
	}
	return true
}

type counts struct {
	pass, fail, skip                         int // leaf tests (+ parents failing on their own, in fail)
	topPass, topFail, topSkip, topUnfinished int
	unfinished                               int // leaf tests that never finished (in fail)
}

func (r *suiteRun) counts() counts {
	var c counts
	for _, tr := range r.tests {
		if !strings.Contains(tr.name, "/") {
			switch tr.action {
			case "pass":
				c.topPass++
			case "fail":
				c.topFail++
			case "skip":
				c.topSkip++
			default:
				c.topUnfinished++
			}
		}
		switch {
		case r.failed(tr):
			c.fail++
			if tr.action == "" {
				c.unfinished++
			}
		case tr.hasSub:
		case tr.action == "pass":
			c.pass++
		case tr.action == "skip":
			c.skip++
		}
	}
	return c
}

// usable says whether a run can serve as the baseline.
func (r *suiteRun) usable() bool { return r.problem() == "" }

func (r *suiteRun) problem() string {
	var probs []string
	if r.err != nil {
		probs = append(probs, "go test: "+r.err.Error())
	}
	for _, name := range sortedKeys(r.pkgs) {
		if p := r.pkgs[name]; p.failedBuild != "" || p.action == "" {
			probs = append(probs, fmt.Sprintf("package %s did not build or did not finish", name))
		}
	}
	for _, name := range suitePackages {
		if r.pkgs[strings.TrimPrefix(name, "./")] == nil {
			probs = append(probs, "no result for package "+name)
		}
	}
	if len(r.panics) > 0 {
		probs = append(probs, "a test binary panicked or timed out")
	}
	if r.counts().pass == 0 {
		probs = append(probs, "no test passed")
	}
	return strings.Join(probs, "; ")
}

// failures returns the failing tests of a run, sorted.
func (r *suiteRun) failures() []*testResult {
	var out []*testResult
	for _, tr := range r.tests {
		if r.failed(tr) {
			out = append(out, tr)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key() < out[j].key() })
	return out
}

// excerpt is the first lines of a test's own output, without go test's
// === RUN/PAUSE/CONT markers.
func excerpt(lines []string, n int) []string {
	var out []string
	for _, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "=== ") {
			continue
		}
		if len(out) == n {
			out = append(out, "…")
			break
		}
		if len(l) > maxLine {
			l = strings.ToValidUTF8(l[:maxLine], "") + "…"
		}
		out = append(out, l)
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// summarize compares the two runs for a human.
func summarize(buildTime time.Duration, direct, proxied *suiteRun) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	dc, pc := direct.counts(), proxied.counts()
	w("pgx suite (%s, packages %s), go test -count=1 -json -timeout %s (direct) / %s (proxy)\n",
		pgxModule, strings.Join(suitePackages, " "), direct.timeout, proxied.timeout)
	w("building the test binaries (and downloading pgx's test dependencies) took %s\n", buildTime.Round(time.Second))
	w("counted: leaf tests (tests and subtests without subtests of their own),\n")
	w("plus parents that failed while none of their subtests did (as failures)\n\n")
	w("%-7s %8s %7s %7s %8s %10s   %s\n", "run", "duration", "passed", "failed", "skipped", "unfinished", "top-level tests pass/fail/skip/unfinished")
	for _, x := range []struct {
		r *suiteRun
		c counts
	}{{direct, dc}, {proxied, pc}} {
		w("%-7s %8s %7d %7d %8d %10d   %d/%d/%d/%d\n", x.r.label, x.r.duration.Round(time.Second),
			x.c.pass, x.c.fail, x.c.skip, x.c.unfinished, x.c.topPass, x.c.topFail, x.c.topSkip, x.c.topUnfinished)
	}
	ratio := 0.0
	if dc.pass > 0 {
		ratio = float64(pc.pass) / float64(dc.pass)
	}
	verdict := "OK"
	if ratio < minRatio {
		verdict = "BELOW THE REQUIRED"
	}
	w("proxy/direct passed: %.1f %% (%s %.0f %%)\n", ratio*100, verdict, minRatio*100)

	for _, r := range []*suiteRun{direct, proxied} {
		if p := r.problem(); p != "" {
			w("\n%s run problems: %s\n", r.label, p)
		}
		if len(r.panics) > 0 {
			w("%s run panics:\n%s\n", r.label, indent(limit(r.panics, 40)))
		}
		if r.stderr != "" {
			w("%s run stderr:\n%s\n", r.label, indent(lastLines(strings.Split(r.stderr, "\n"), 20)))
		}
		if len(r.build) > 0 {
			w("%s run build output:\n%s\n", r.label, indent(lastLines(r.build, 20)))
		}
		if len(r.other) > 0 {
			w("%s run non-JSON output:\n%s\n", r.label, indent(lastLines(r.other, 20)))
		}
		for _, name := range sortedKeys(r.pkgs) {
			p := r.pkgs[name]
			if p.action == "fail" || p.action == "" {
				// Package-level output carries panics and timeouts.
				var interesting []string
				for _, l := range p.output {
					if l != "FAIL" && !strings.HasPrefix(l, "FAIL\t") && !strings.HasPrefix(l, "ok  \t") {
						interesting = append(interesting, l)
					}
				}
				if len(interesting) > 0 {
					w("%s run, package %s output:\n%s\n", r.label, name, indent(lastLines(interesting, 30)))
				}
			}
		}
	}

	directFailed := map[string]bool{}
	for _, tr := range direct.failures() {
		directFailed[tr.key()] = true
	}
	proxyFailed := map[string]bool{}
	var proxyOnly, both []*testResult
	for _, tr := range proxied.failures() {
		proxyFailed[tr.key()] = true
		if directFailed[tr.key()] {
			both = append(both, tr)
		} else {
			proxyOnly = append(proxyOnly, tr)
		}
	}
	w("\nfailing only through the proxy, by first error: %d\n", len(proxyOnly))
	groups := map[string][]string{}
	for _, tr := range proxyOnly {
		sig := failureSignature(tr.output)
		if tr.action == "" {
			sig = "never finished (its test binary timed out or died: see the panics above)"
		}
		groups[sig] = append(groups[sig], tr.key())
	}
	sigs := sortedKeys(groups)
	sort.SliceStable(sigs, func(i, j int) bool { return len(groups[sigs[i]]) > len(groups[sigs[j]]) })
	for _, sig := range sigs {
		w("%5d  %s\n", len(groups[sig]), sig)
		for _, k := range limit(groups[sig], 4) {
			w("         %s\n", k)
		}
	}

	w("\nfailing only through the proxy: %d\n", len(proxyOnly))
	for _, tr := range proxyOnly {
		state := ""
		if tr.action == "" {
			state = " (never finished)"
		} else if tr.hasSub {
			state = " (parent failed on its own)"
		}
		if d := direct.tests[tr.key()]; d == nil {
			state += " (not run directly)"
		} else if d.action == "skip" {
			state += " (skipped directly)"
		}
		w("--- %s%s\n%s\n", tr.key(), state, indent(excerpt(tr.output, outputLines)))
	}
	var directOnly []string
	for _, tr := range direct.failures() {
		if !proxyFailed[tr.key()] {
			directOnly = append(directOnly, tr.key())
		}
	}
	w("\nfailing in both runs: %d\n", len(both))
	for _, tr := range both {
		w("--- %s\n%s\n", tr.key(), indent(excerpt(tr.output, 4)))
	}
	w("\nfailing only directly: %d\n", len(directOnly))
	for _, k := range directOnly {
		w("--- %s\n", k)
	}

	// Leaf tests that passed directly but neither passed nor failed through
	// the proxy: skipped there, or missing because their package died.
	var skippedThere, missingThere []string
	for _, k := range sortedKeys(direct.tests) {
		d := direct.tests[k]
		if d.hasSub || d.action != "pass" {
			continue
		}
		switch p := proxied.tests[k]; {
		case p == nil:
			missingThere = append(missingThere, k)
		case p.action == "skip":
			reason := excerpt(p.output, 2)
			skippedThere = append(skippedThere, k+": "+strings.TrimSpace(strings.Join(reason, " ")))
		}
	}
	w("\npassing directly, skipped through the proxy: %d\n", len(skippedThere))
	for _, s := range skippedThere {
		w("--- %s\n", s)
	}
	w("\npassing directly, not run through the proxy: %d\n", len(missingThere))
	for _, s := range limit(missingThere, 50) {
		w("--- %s\n", s)
	}

	// Where the proxy run spends its extra time (top-level tests).
	type slow struct {
		key        string
		d, p, diff float64
	}
	var slower []slow
	for k, p := range proxied.tests {
		d := direct.tests[k]
		if d == nil || strings.Contains(p.name, "/") || p.action == "" {
			continue
		}
		if diff := p.elapsed - d.elapsed; diff >= 5 {
			slower = append(slower, slow{k, d.elapsed, p.elapsed, diff})
		}
	}
	sort.Slice(slower, func(i, j int) bool { return slower[i].diff > slower[j].diff })
	w("\ntop-level tests at least 5s slower through the proxy: %d\n", len(slower))
	for _, x := range slower {
		w("--- %s: %.1fs directly, %.1fs through the proxy\n", x.key, x.d, x.p)
	}

	// Why tests skip in the direct run: mostly PGX_TEST_* variables not set.
	reasons := map[string]int{}
	for _, tr := range direct.tests {
		if tr.action == "skip" && !tr.hasSub {
			reasons[skipReason(tr.output)]++
		}
	}
	w("\nskip reasons of the direct run (leaf tests):\n")
	for _, k := range sortedKeys(reasons) {
		w("%5d  %s\n", reasons[k], k)
	}
	return b.String()
}

var (
	sqlstateError = regexp.MustCompile(`(ERROR|FATAL): .*\(SQLSTATE [0-9A-Z]{5}\)`)
	quoted        = regexp.MustCompile(`"[^"]*"`)
	fileLine      = regexp.MustCompile(`^[\w./-]+\.go:\d+: ?`)
)

// failureSignature is a short description of why a test failed, for
// grouping: its first server error (names removed), else the first
// assertion message, else its first line of output.
func failureSignature(lines []string) string {
	lines = excerpt(lines, 40)
	sig := ""
	for _, l := range lines {
		if m := sqlstateError.FindString(l); m != "" {
			sig = quoted.ReplaceAllString(m, `"…"`)
			break
		}
	}
	for i := 0; sig == "" && i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if msg, ok := strings.CutPrefix(l, "Error:"); ok {
			sig = strings.TrimSpace(msg)
			if strings.HasSuffix(sig, ":") && i+1 < len(lines) {
				sig += " " + strings.TrimSpace(lines[i+1])
			}
		}
	}
	for i := 0; sig == "" && i < len(lines); i++ {
		l := fileLine.ReplaceAllString(strings.TrimSpace(lines[i]), "")
		if l != "" && !strings.HasPrefix(l, "--- ") {
			sig = l
		}
	}
	if sig == "" {
		sig = "(no output)"
	}
	if len(sig) > 160 {
		sig = strings.ToValidUTF8(sig[:160], "") + "…"
	}
	return sig
}

// skipReason is the message of a skipped test, without the file:line prefix.
func skipReason(lines []string) string {
	for _, l := range excerpt(lines, 3) {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "--- SKIP") {
			continue
		}
		if _, msg, ok := strings.Cut(l, ": "); ok && strings.Contains(l[:len(l)-len(msg)], ".go:") {
			l = msg
		}
		return l
	}
	return "(no message)"
}

func indent(lines []string) string {
	var b strings.Builder
	for i, l := range lines {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString("    ")
		b.WriteString(strings.TrimLeft(l, " "))
	}
	return b.String()
}

func lastLines(lines []string, n int) []string {
	if len(lines) <= n {
		return lines
	}
	return append([]string{"…"}, lines[len(lines)-n:]...)
}

func limit(lines []string, n int) []string {
	if len(lines) <= n {
		return lines
	}
	return append(lines[:n:n], fmt.Sprintf("… and %d more", len(lines)-n))
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
