package pgxsuite

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"
)

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
