package pgxsuite

import (
	"strings"
	"testing"
)

// TestCounting checks how a go test -json stream is counted, on a made-up
// stream: leaves only, parents failing on their own, tests that never
// finished, and t.TempDir paths in subtest names.
func TestCounting(t *testing.T) {
	const pgconn = `"Package":"github.com/jackc/pgx/v5/pgconn"`
	const root = `"Package":"github.com/jackc/pgx/v5"`
	stream := func(lines ...string) *suiteRun {
		r := &suiteRun{tests: map[string]*testResult{}, pkgs: map[string]*pkgResult{}}
		for _, l := range lines {
			r.add([]byte(l))
		}
		return r
	}
	r := stream(
		`{"Action":"start",`+root+`}`,
		`{"Action":"run",`+root+`,"Test":"TestA"}`,
		`{"Action":"pass",`+root+`,"Test":"TestA"}`,
		`{"Action":"run",`+root+`,"Test":"TestB"}`,
		`{"Action":"output",`+root+`,"Test":"TestB","Output":"    b_test.go:1: Skipping due to missing environment variable X\n"}`,
		`{"Action":"skip",`+root+`,"Test":"TestB"}`,
		// Parent with a failing subtest: only the subtest counts.
		`{"Action":"run",`+root+`,"Test":"TestC"}`,
		`{"Action":"run",`+root+`,"Test":"TestC/one"}`,
		`{"Action":"pass",`+root+`,"Test":"TestC/one"}`,
		`{"Action":"run",`+root+`,"Test":"TestC/two"}`,
		`{"Action":"output",`+root+`,"Test":"TestC/two","Output":"=== RUN   TestC/two\n"}`,
		`{"Action":"output",`+root+`,"Test":"TestC/two","Output":"    c_test.go:9: boom\n"}`,
		`{"Action":"fail",`+root+`,"Test":"TestC/two"}`,
		`{"Action":"fail",`+root+`,"Test":"TestC"}`,
		// Parent failing on its own after passing subtests: one failure.
		`{"Action":"run",`+root+`,"Test":"TestD"}`,
		`{"Action":"run",`+root+`,"Test":"TestD/x"}`,
		`{"Action":"pass",`+root+`,"Test":"TestD/x"}`,
		`{"Action":"fail",`+root+`,"Test":"TestD"}`,
		`{"Action":"fail",`+root+`}`,
		// A subtest name holding a t.TempDir path.
		`{"Action":"run",`+pgconn+`,"Test":"TestE"}`,
		`{"Action":"run",`+pgconn+`,"Test":"TestE/file='/tmp/TestE123456789/001/x.conf'"}`,
		`{"Action":"pass",`+pgconn+`,"Test":"TestE/file='/tmp/TestE123456789/001/x.conf'"}`,
		`{"Action":"pass",`+pgconn+`,"Test":"TestE"}`,
		// Started, never finished (the binary died).
		`{"Action":"run",`+pgconn+`,"Test":"TestF"}`,
		`not json`,
	)
	c := r.counts()
	want := counts{pass: 4, fail: 3, skip: 1, unfinished: 1, topPass: 2, topFail: 2, topSkip: 1, topUnfinished: 1}
	if c != want {
		t.Errorf("counts = %+v, want %+v", c, want)
	}
	var failed []string
	for _, tr := range r.failures() {
		failed = append(failed, tr.key())
	}
	if got, want := strings.Join(failed, ","), ". TestC/two,. TestD,pgconn TestF"; got != want {
		t.Errorf("failures = %s, want %s", got, want)
	}
	if r.tests["pgconn TestE/file='/tmp/TEMPDIR/x.conf'"] == nil {
		t.Errorf("temp dir not normalised: %v", sortedKeys(r.tests))
	}
	if got := excerpt(r.tests[". TestC/two"].output, 5); len(got) != 1 || !strings.Contains(got[0], "boom") {
		t.Errorf("excerpt = %q", got)
	}
	if got := skipReason(r.tests[". TestB"].output); got != "Skipping due to missing environment variable X" {
		t.Errorf("skipReason = %q", got)
	}
	if r.pkgs["."].action != "fail" || len(r.other) != 1 {
		t.Errorf("package result %+v, other %q", r.pkgs["."], r.other)
	}
}

// TestSetDiff checks the comparison with the expected-failure list: a
// failure only through the proxy that no line covers is unexpected, a line
// whose test passed is stale, "/*" covers subtests, and tests failing
// directly too are not the proxy's.
func TestSetDiff(t *testing.T) {
	run := func(results map[string]string) *suiteRun {
		r := &suiteRun{tests: map[string]*testResult{}, pkgs: map[string]*pkgResult{}}
		for k, a := range results {
			pkg, name, _ := strings.Cut(k, " ")
			r.tests[k] = &testResult{pkg: pkg, name: name, action: a}
		}
		return r
	}
	direct := run(map[string]string{
		". TestA": "pass", ". TestB/x": "pass", ". TestB/y": "pass",
		". TestC": "pass", ". TestD": "fail", "pgconn TestE": "pass",
	})
	proxied := run(map[string]string{
		". TestA": "fail", ". TestB/x": "fail", ". TestB/y": "fail",
		". TestC": "pass", ". TestD": "fail", "pgconn TestE": "fail",
	})
	exp := []expectation{
		{key: ". TestB/*", reason: "r"},
		{key: "pgconn TestE", reason: "r"},
		{key: ". TestC", reason: "r"},
	}
	unexpected, stale := setDiff(direct, proxied, exp)
	if got := strings.Join(unexpected, ","); got != ". TestA" {
		t.Errorf("unexpected = %q, want . TestA", got)
	}
	if len(stale) != 1 || stale[0].key != ". TestC" {
		t.Errorf("stale = %v, want . TestC", stale)
	}
}
