package pgxsuite

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"
)

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
