package main

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shardgate/shardgate/bench/internal/benchkit"
)

// result is one pgbench run: a target in a query mode.
type result struct {
	target, mode string
	clients      int
	ran          bool    // pgbench was started
	ok           bool    // it finished and printed its figures
	tps          float64 // without initial connection time
	latency      float64 // average, ms
	txns         int64
	na           string  // "not applicable" reason shown instead of figures
	err          string  // why there are no figures (or why they are suspect)
	setupErr     bool    // err is the target's set-up failure, the same for every mode
	rounds       int     // measured rounds combined into tps and latency (medians)
	minTPS       float64 // over the rounds
	maxTPS       float64
	cpu          time.Duration // the proxy process's CPU time (user + system) over the run (cpu.go)
	cpuPerStmt   float64       // cpu over the statements run, µs (median over the rounds); 0: not measured
	pgPerStmt    float64       // the same of the PostgreSQL servers behind the target (postmasters and children)
	// perStmt are perf stat's counts per statement, by event (perf.go;
	// medians over the rounds); nil: not measured.
	perStmt map[string]float64
}

// combine merges the rounds of one target and mode: medians of tps and
// latency; any failed round makes the whole cell an error.
func combine(rs []result) result {
	out := rs[0]
	if len(rs) == 1 {
		if out.ok {
			out.rounds, out.minTPS, out.maxTPS = 1, out.tps, out.tps
		}
		return out
	}
	var tps, lat, cpu, pg []float64
	out.err = ""
	for _, r := range rs {
		if r.ok {
			tps = append(tps, r.tps)
			lat = append(lat, r.latency)
		}
		if r.ok && r.cpuPerStmt > 0 {
			cpu = append(cpu, r.cpuPerStmt)
		}
		if r.ok && r.pgPerStmt > 0 {
			pg = append(pg, r.pgPerStmt)
		}
		if r.err != "" && out.err == "" {
			out.err = r.err
		}
	}
	if len(tps) < len(rs) {
		out.ok = false
		out.err = fmt.Sprintf("%d of %d rounds failed, first: %s", len(rs)-len(tps), len(rs), out.err)
		return out
	}
	out.ok, out.rounds = true, len(rs)
	out.tps, out.latency = benchkit.Median(tps), benchkit.Median(lat)
	out.minTPS, out.maxTPS = slices.Min(tps), slices.Max(tps)
	out.cpuPerStmt, out.pgPerStmt = 0, 0
	if len(cpu) == len(rs) {
		out.cpuPerStmt = benchkit.Median(cpu)
	}
	if len(pg) == len(rs) {
		out.pgPerStmt = benchkit.Median(pg)
	}
	out.perStmt = combinePerf(rs)
	return out
}

// combinePerf is the median, per event, of the rounds' perf counts per
// statement; nil unless every round has them.
func combinePerf(rs []result) map[string]float64 {
	byEvent := map[string][]float64{}
	for _, r := range rs {
		if len(r.perStmt) == 0 {
			return nil
		}
		for ev, n := range r.perStmt {
			byEvent[ev] = append(byEvent[ev], n)
		}
	}
	out := map[string]float64{}
	for ev, ns := range byEvent {
		if len(ns) == len(rs) {
			out[ev] = benchkit.Median(ns)
		}
	}
	return out
}

var (
	tpsRE     = regexp.MustCompile(`(?m)^tps = ([0-9.]+) \((?:without initial connection time|excluding connections establishing)\)`)
	latencyRE = regexp.MustCompile(`(?m)^latency average = ([0-9.]+) ms`)
	txnsRE    = regexp.MustCompile(`(?m)^number of transactions actually processed: (\d+)`)
	failedRE  = regexp.MustCompile(`(?m)^number of failed transactions: (\d+)`)
)

// parsePgbench extracts the figures of a pgbench run from its output.
func parsePgbench(out string) (tps, latency float64, txns int64, err error) {
	m := tpsRE.FindStringSubmatch(out)
	if m == nil {
		return 0, 0, 0, errors.New("no tps line in pgbench's output")
	}
	tps, _ = strconv.ParseFloat(m[1], 64)
	if m := latencyRE.FindStringSubmatch(out); m != nil {
		latency, _ = strconv.ParseFloat(m[1], 64)
	} else {
		return 0, 0, 0, errors.New("no latency line in pgbench's output")
	}
	if m := txnsRE.FindStringSubmatch(out); m != nil {
		txns, _ = strconv.ParseInt(m[1], 10, 64)
	}
	if m := failedRE.FindStringSubmatch(out); m != nil && m[1] != "0" {
		return tps, latency, txns, fmt.Errorf("%s failed transactions", m[1])
	}
	return tps, latency, txns, nil
}

// pgbenchError picks the most telling line of a failed pgbench run.
func pgbenchError(out string) string {
	var first string
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.Contains(l, "Run was aborted") {
			continue
		}
		if strings.Contains(l, "error") || strings.Contains(l, "ERROR") || strings.Contains(l, "FATAL") {
			return l
		}
		if first == "" && strings.HasPrefix(l, "pgbench:") {
			first = l
		}
	}
	if first != "" {
		return first
	}
	return benchkit.LastLines(strings.TrimSpace(out), 1)
}

// report is what a run prints and, with -write-doc, writes to the docs.
type report struct {
	heading  string
	date     string
	machine  string
	versions string
	command  string
	workload string
	setup    []string // how each target is built, and other facts
	goals    []goal
	results  []result
	rounds   int
	targets  []string
	modes    []string
	clients  []int
	notes    []string
	// clientsSection is the idle-clients and connection-storm section
	// (idle.go), if measured.
	clientsSection string
	perf           bool // -perf: the table of system calls per statement follows
}

// goal is one stated (not asserted) target of the issue.
type goal struct {
	text    string
	modes   []string
	against string // tDirect or tPgbouncer
	ratio   float64
}

func (r *report) find(target, mode string, clients int) *result {
	for i := range r.results {
		if x := &r.results[i]; x.target == target && x.mode == mode && x.clients == clients {
			return &r.results[i]
		}
	}
	return nil
}

// ratio returns target's tps over base's in mode, if both were measured.
func (r *report) ratio(target, base, mode string, clients int) (float64, bool) {
	a, b := r.find(target, mode, clients), r.find(base, mode, clients)
	if a == nil || b == nil || !a.ok || !b.ok || a.na != "" || b.na != "" || b.tps == 0 {
		return 0, false
	}
	return a.tps / b.tps, true
}

// cpuRatio returns target's proxy CPU per statement over base's in mode,
// if both were measured.
func (r *report) cpuRatio(target, base, mode string, clients int) (float64, bool) {
	a, b := r.find(target, mode, clients), r.find(base, mode, clients)
	if a == nil || b == nil || !a.ok || !b.ok || a.na != "" || b.na != "" || a.cpuPerStmt == 0 || b.cpuPerStmt == 0 {
		return 0, false
	}
	return a.cpuPerStmt / b.cpuPerStmt, true
}

// markdown renders the report as a Markdown section.
func (r *report) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\n", r.heading)
	fmt.Fprintf(&b, "Measured %s on %s; %s.\n\n", r.date, r.machine, r.versions)
	fmt.Fprintf(&b, "Command: `%s`  \nEach cell: `%s`", r.command, r.workload)
	if r.rounds > 1 {
		fmt.Fprintf(&b, "; the median of %d rounds (the whole table is run %d times, interleaved)", r.rounds, r.rounds)
	}
	b.WriteString(".\n\n")
	for _, s := range r.setup {
		fmt.Fprintf(&b, "- %s\n", s)
	}
	if len(r.setup) > 0 {
		b.WriteString("\n")
	}
	if len(r.goals) > 0 {
		b.WriteString("Goals (stated, not asserted):\n\n")
		for _, g := range r.goals {
			fmt.Fprintf(&b, "- %s: %s\n", g.text, r.goalStatus(g))
		}
		b.WriteString("\n")
	}
	multi := r.rounds > 1
	if multi {
		b.WriteString("| clients | target | mode | tps | tps min–max | avg latency (ms) | vs direct | vs pgbouncer | proxy CPU µs/stmt | CPU vs pgbouncer | PostgreSQL CPU µs/stmt |\n")
		b.WriteString("| ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	} else {
		b.WriteString("| clients | target | mode | tps | avg latency (ms) | vs direct | vs pgbouncer | proxy CPU µs/stmt | CPU vs pgbouncer | PostgreSQL CPU µs/stmt |\n")
		b.WriteString("| ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	}
	var foot []string
	ref := func(text string) string { // a footnote, shared by equal texts
		for i, f := range foot {
			if f == text {
				return fmt.Sprintf("[%d]", i+1)
			}
		}
		foot = append(foot, text)
		return fmt.Sprintf("[%d]", len(foot))
	}
	for _, res := range r.results {
		t, mode, clients := res.target, res.mode, res.clients
		{
			tps, rng, lat, vd, vb, cpu, cb, pg := "", "", "", "", "", "", "", ""
			switch {
			case res.na != "":
				tps = "n/a (" + res.na + ")"
				if res.err != "" {
					tps += " " + ref(fmt.Sprintf("%s, %s (run anyway): %s", t, mode, res.err))
				} else if res.ok {
					tps += " " + ref(fmt.Sprintf("%s, %s (run anyway): finished with %.0f tps, which does not count", t, mode, res.tps))
				}
			case !res.ok && res.setupErr:
				tps = "error " + ref(fmt.Sprintf("%s: %s", t, res.err))
			case !res.ok:
				tps = "error " + ref(fmt.Sprintf("%s, %s: %s", t, mode, res.err))
			default:
				tps = fmt.Sprintf("%.0f", res.tps)
				lat = fmt.Sprintf("%.3f", res.latency)
				if res.rounds > 1 {
					rng = fmt.Sprintf("%.0f–%.0f", res.minTPS, res.maxTPS)
				}
				if res.err != "" {
					tps += " " + ref(fmt.Sprintf("%s, %s: %s", t, mode, res.err))
				}
				if x, ok := r.ratio(t, tDirect, mode, clients); ok {
					vd = fmt.Sprintf("%.2f×", x)
				}
				if x, ok := r.ratio(t, tPgbouncer, mode, clients); ok {
					vb = fmt.Sprintf("%.2f×", x)
				}
				if res.cpuPerStmt > 0 {
					cpu = fmt.Sprintf("%.1f", res.cpuPerStmt)
				}
				if x, ok := r.cpuRatio(t, tPgbouncer, mode, clients); ok {
					cb = fmt.Sprintf("%.2f×", x)
				}
				if res.pgPerStmt > 0 {
					pg = fmt.Sprintf("%.1f", res.pgPerStmt)
				}
			}
			if multi {
				fmt.Fprintf(&b, "| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", clients, t, mode, benchkit.Cell(tps), rng, lat, vd, vb, cpu, cb, pg)
			} else {
				fmt.Fprintf(&b, "| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", clients, t, mode, benchkit.Cell(tps), lat, vd, vb, cpu, cb, pg)
			}
		}
	}
	if r.perf {
		r.perfTable(&b)
	}
	if len(foot) > 0 {
		b.WriteString("\n")
		for i, f := range foot {
			fmt.Fprintf(&b, "%d. %s\n", i+1, benchkit.Cell(f))
		}
	}
	if len(r.notes) > 0 {
		b.WriteString("\n")
		for _, n := range r.notes {
			fmt.Fprintf(&b, "%s\n", n)
		}
	}
	if r.clientsSection != "" {
		b.WriteString("\n" + r.clientsSection)
	}
	return b.String()
}

// goalStatus says, per shardgate target, whether a goal was met.
func (r *report) goalStatus(g goal) string {
	var parts []string
	for _, t := range r.targets {
		if !strings.HasPrefix(t, "shardgate") {
			continue
		}
		var ms []string
		measured := false
		for _, c := range r.clients {
			for _, mode := range g.modes {
				if x, ok := r.ratio(t, g.against, mode, c); ok {
					verdict := "met"
					if x < g.ratio {
						verdict = "not met"
					}
					ms = append(ms, fmt.Sprintf("%s at %d clients %.2f× (%s)", mode, c, x, verdict))
					measured = true
				} else if r.find(t, mode, c) != nil {
					ms = append(ms, fmt.Sprintf("%s at %d clients not measured", mode, c))
				}
			}
		}
		switch {
		case measured:
			parts = append(parts, t+" "+strings.Join(ms, ", "))
		case len(ms) > 0:
			parts = append(parts, t+" not measured")
		}
	}
	if len(parts) == 0 {
		return "not measured"
	}
	return strings.Join(parts, "; ")
}

// perfTable renders the proxies' system calls and context switches per
// statement (-perf), one row per proxy target and mode.
func (r *report) perfTable(b *strings.Builder) {
	b.WriteString("\nPer statement, from `perf stat` on the proxy process (-perf; medians of the rounds):\n\n| clients | target | mode |")
	for _, ev := range perfEvents {
		b.WriteString(" " + perfShort(ev) + " |")
	}
	b.WriteString("\n| ---: | --- | --- |" + strings.Repeat(" ---: |", len(perfEvents)) + "\n")
	for _, res := range r.results {
		if len(res.perStmt) == 0 || !res.ok || res.na != "" {
			continue
		}
		fmt.Fprintf(b, "| %d | %s | %s |", res.clients, res.target, res.mode)
		for _, ev := range perfEvents {
			if n, ok := res.perStmt[ev]; ok {
				fmt.Fprintf(b, " %.2f |", n)
			} else {
				b.WriteString(" |")
			}
		}
		b.WriteString("\n")
	}
}
