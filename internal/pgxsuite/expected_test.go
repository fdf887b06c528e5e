package pgxsuite

import (
	"bufio"
	"fmt"
	"os"
	"sort"
	"strings"
)

// expectedFile lists the pgx tests that pass directly and are known to fail
// through the proxy, one per line with the reason:
//
//	pgconn TestConnectTimeout/tcp — why it fails through the proxy
//
// A key ending in "/*" stands for every subtest of that test. Blank lines
// and lines starting with # are ignored.
const expectedFile = "expected_failures.txt"

// expectation is one line of the expected-failure file.
type expectation struct {
	key, reason string
	line        int
}

// matches says whether the test key k is covered by the expectation.
func (e expectation) matches(k string) bool {
	if p, ok := strings.CutSuffix(e.key, "/*"); ok {
		return k == p || strings.HasPrefix(k, p+"/")
	}
	return k == e.key
}

// loadExpected reads the expected-failure file. Every entry must give a
// reason: a list of names without reasons teaches nobody anything.
func loadExpected(path string) ([]expectation, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []expectation
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		l := strings.TrimSpace(sc.Text())
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		key, reason, ok := strings.Cut(l, " — ")
		if !ok || strings.TrimSpace(reason) == "" {
			return nil, fmt.Errorf("%s:%d: want \"pkg TestName — reason\", got %q", path, n, l)
		}
		out = append(out, expectation{key: strings.TrimSpace(key), reason: strings.TrimSpace(reason), line: n})
	}
	return out, sc.Err()
}

// setDiff compares the tests that fail through the proxy but pass directly
// with the expected failures: unexpected are failures no line covers (they
// fail the test), stale are lines that covered no such failure (the proxy
// now passes them: the line should go).
func setDiff(direct, proxied *suiteRun, exp []expectation) (unexpected []string, stale []expectation) {
	used := make([]bool, len(exp))
	for _, tr := range proxied.failures() {
		d := direct.tests[tr.key()]
		if d == nil || direct.failed(d) || d.action != "pass" && !d.hasSub {
			continue // not a regression of the proxy: fails or is absent directly
		}
		covered := false
		for i, e := range exp {
			if e.matches(tr.key()) {
				used[i], covered = true, true
			}
		}
		if !covered {
			unexpected = append(unexpected, tr.key())
		}
	}
	for i, e := range exp {
		if !used[i] {
			stale = append(stale, e)
		}
	}
	sort.Strings(unexpected)
	return unexpected, stale
}
