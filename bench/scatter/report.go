package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/shardgate/shardgate/bench/internal/benchkit"
)

const heading = "## Across shards (issue 4)"

// report is what a run prints and, with -write-doc, writes to the docs.
type report struct {
	cfg       config
	date      string
	machine   string
	pgVersion string
	shardgate string
	command   string
	topology  string  // the proxy's topology; each proxy gets its own listen port
	shardRows []int64 // orders rows per shard
	loadTime  time.Duration
	check     string // the routing check's verdict

	loadStart, loadQueries, loadCopy, loadStream, loadEnd string

	queries []*queryResult
	copies  []*copyResult
	streams []*streamResult
	notes   []string
}

func newReport(cfg config) *report {
	r := &report{
		cfg:       cfg,
		date:      time.Now().UTC().Format("2006-01-02 15:04 MST"),
		machine:   benchkit.Machine(),
		shardgate: benchkit.GitDescribe(cfg.repo),
		loadStart: benchkit.LoadAvg(),
	}
	if dirs := dirtyDirs(cfg.repo); len(dirs) > 0 {
		r.shardgate += " (built from the working tree, with changes not yet committed in " + strings.Join(dirs, ", ") + ")"
	}
	r.command = os.Getenv("BENCH_INVOKED_AS")
	if r.command == "" {
		r.command = "go run ./bench/scatter " + strings.Join(os.Args[1:], " ")
	}
	r.command = strings.TrimSpace(r.command)
	return r
}

// dirtyDirs lists the top-level directories of repo with uncommitted
// changes to Go files (modified or untracked), bench and docs excepted:
// what the proxy binary was built from beyond the commit.
func dirtyDirs(repo string) []string {
	out, err := exec.Command("git", "-C", repo, "status", "--porcelain").Output()
	if err != nil {
		return nil
	}
	var dirs []string
	for _, l := range strings.Split(string(out), "\n") {
		if len(l) < 4 {
			continue
		}
		path := strings.TrimSpace(l[3:])
		if _, to, ok := strings.Cut(path, " -> "); ok {
			path = to
		}
		dir, _, _ := strings.Cut(path, "/")
		if !strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "/") || dir == "bench" || dir == "docs" || dir == path {
			continue
		}
		if !slices.Contains(dirs, dir+"/") {
			dirs = append(dirs, dir+"/")
		}
	}
	slices.Sort(dirs)
	return dirs
}

// footnotes numbers long texts under a table.
type footnotes []string

func (f *footnotes) ref(text string) string {
	for i, t := range *f {
		if t == text {
			return fmt.Sprintf("[%d]", i+1)
		}
	}
	*f = append(*f, text)
	return fmt.Sprintf("[%d]", len(*f))
}

func (f footnotes) write(b *strings.Builder) {
	if len(f) == 0 {
		return
	}
	b.WriteString("\n")
	for i, t := range f {
		fmt.Fprintf(b, "%d. %s\n", i+1, benchkit.Cell(t))
	}
}

// failure is the cell of something that has no figures.
func failure(f *footnotes, what, code, text string) string {
	if code == "0A000" {
		return "refused (0A000) " + f.ref(what+": "+text)
	}
	return "error " + f.ref(what+": "+text)
}

func spread(xs []float64, format string) string {
	if len(xs) == 0 {
		return ""
	}
	return fmt.Sprintf(format+" ("+format+"–"+format+")", benchkit.Median(xs), slices.Min(xs), slices.Max(xs))
}

// markdown renders the report as the section of docs/benchmarks.md.
func (r *report) markdown() string {
	cfg := r.cfg
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\n", heading)
	fmt.Fprintf(&b, "Measured %s on %s; PostgreSQL %s, %s, shardgate %s.\n\n", r.date, r.machine, r.pgVersion, runtime.Version(), r.shardgate)
	fmt.Fprintf(&b, "Command: `%s`\n\n", r.command)
	fmt.Fprintf(&b, "Load average (1 min): %s at the start, %s before the queries, %s before COPY, %s before streaming, %s at the end. "+
		"The machine is shared (other builds and tests ran at the same time): single runs are noisy, hence medians, and both sides of every ratio are measured interleaved.\n\n",
		orDash(r.loadStart), orDash(r.loadQueries), orDash(r.loadCopy), orDash(r.loadStream), orDash(r.loadEnd))

	layout := fmt.Sprintf("%d shard clusters, one shard each", cfg.shardClusters)
	if cfg.shardClusters < shardsPerGroup {
		layout = fmt.Sprintf("%d shard clusters, %d shards each (a scatter visits each cluster once)", cfg.shardClusters, shardsPerGroup/cfg.shardClusters)
	}
	fmt.Fprintf(&b, "- **single**: one PostgreSQL server holding every row.\n")
	fmt.Fprintf(&b, "- **shardgate**: `shardgate serve` (a separate process, transaction pool of %d per cluster) over the group `by_customer`: "+
		"`xxhash(customer_id)` cut into %d shards %s on %s; the main group on the first.\n",
		cfg.poolSize, shardsPerGroup, strings.Join(shardRanges(shardsPerGroup), ", "), layout)
	fmt.Fprintf(&b, "- Every cluster: internal/testenv (fsync, synchronous_commit, full_page_writes off), shared_buffers 256MB, "+
		"PostgreSQL's default parallel-query settings. Clients, proxy and servers share the machine's CPUs; all traffic is over 127.0.0.1.\n")
	perShard := ""
	if len(r.shardRows) == shardsPerGroup {
		var parts []string
		for i, n := range r.shardRows {
			parts = append(parts, fmt.Sprintf("%s %d", shardRanges(shardsPerGroup)[i], n))
		}
		perShard = " (per shard: " + strings.Join(parts, ", ") + ")"
	}
	fmt.Fprintf(&b, "- Data: `orders (id, customer_id, amount numeric(12,2), status, created_at)`, %d rows over %d customers%s; "+
		"`big`, the same columns and a ~40-byte `note`, %d rows. The same rows on both sides, generated by the harness and sent by COPY: "+
		"all of them to single, each to its shard's cluster as vschema routes it (Table.KeyFromColumns, Group.ShardFor)", cfg.rows, customers, perShard, cfg.streamRows)
	if r.loadTime > 0 {
		fmt.Fprintf(&b, "; loading, primary keys and VACUUM ANALYZE took %s", r.loadTime.Round(time.Second))
	}
	b.WriteString(".\n")
	if r.check != "" {
		fmt.Fprintf(&b, "- Routing check: %s.\n", r.check)
	}

	// Queries.
	var f footnotes
	fmt.Fprintf(&b, "\n### Queries across the shards\n\n")
	fmt.Fprintf(&b, "Milliseconds from sending the query to its last row: median of %d runs (min–max), on one open connection per side; "+
		"the first run of each (not counted) is compared with the single server's byte for byte. "+
		"simple = one Query message; extended = pgx's default (prepared once, then Bind/Execute, binary results). "+
		"**shardgate ÷ single** is the latency ratio: above 1, the proxy is slower.\n\n", cfg.runs)
	b.WriteString("| query | protocol | single (ms) | shardgate (ms) | shardgate ÷ single | rows | load avg |\n")
	b.WriteString("| --- | --- | ---: | ---: | ---: | --- | --- |\n")
	for _, q := range r.queries {
		single, proxy, ratio, same := spread(q.single, "%.1f"), spread(q.proxy, "%.1f"), "", "same"
		switch {
		case q.singleErr != "":
			single, proxy, same = "error "+f.ref(q.query+" ("+q.protocol+") on single: "+q.singleErr), "", ""
		case q.proxyErr != "":
			proxy, same = failure(&f, q.query+" ("+q.protocol+") through shardgate", q.proxyCode, q.proxyErr), ""
		case len(q.single) > 0 && len(q.proxy) > 0:
			ratio = fmt.Sprintf("%.2f×", benchkit.Median(q.proxy)/benchkit.Median(q.single))
		}
		if q.mismatch != "" {
			same = "**differ** " + f.ref(q.query+" ("+q.protocol+"): "+q.mismatch)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", q.query, q.protocol, single, proxy, ratio, same, loadRange(q.load))
	}
	f.write(&b)
	b.WriteString("\nThe statements:\n\n")
	for _, q := range queryCases {
		fmt.Fprintf(&b, "- %s: `%s`\n", q.name, q.sql)
	}

	// COPY.
	f = nil
	fmt.Fprintf(&b, "\n### COPY FROM STDIN, %d rows\n\n", cfg.copyRows)
	fmt.Fprintf(&b, "`COPY orders_copy FROM STDIN`, text format, the same %d rows (one buffer made beforehand) into an empty table with a primary key; "+
		"median of %d runs per target, interleaved; the table is truncated and every cluster checkpointed before each run. "+
		"Through shardgate the rows are split over the 4 shards; **vs single** is the throughput ratio (below 1: slower).\n\n", cfg.copyRows, cfg.copyRounds)
	b.WriteString("| target | rows/s | seconds (min–max) | vs single | checked after each run | load avg |\n")
	b.WriteString("| --- | ---: | ---: | ---: | --- | --- |\n")
	var singleRate float64
	for _, c := range r.copies {
		if c.target == "single" && len(c.secs) > 0 && c.err == "" {
			singleRate = float64(cfg.copyRows) / benchkit.Median(c.secs)
		}
	}
	for _, c := range r.copies {
		name := c.target
		if name == "shardgate" {
			name = "shardgate → 4 shards"
		}
		if c.err != "" {
			fmt.Fprintf(&b, "| %s | %s |  |  | %s | %s |\n", name, failure(&f, "COPY into "+c.target, c.code, c.err), c.checked, loadRange(c.load))
			continue
		}
		if len(c.secs) == 0 {
			fmt.Fprintf(&b, "| %s | not run |  |  |  |  |\n", name)
			continue
		}
		rate := float64(cfg.copyRows) / benchkit.Median(c.secs)
		vs := ""
		if singleRate > 0 {
			vs = fmt.Sprintf("%.2f×", rate/singleRate)
		}
		fmt.Fprintf(&b, "| %s | %.0f | %s | %s | %s | %s |\n", name, rate, spread(c.secs, "%.2f"), vs, c.checked, loadRange(c.load))
	}
	f.write(&b)

	// Streaming.
	f = nil
	fmt.Fprintf(&b, "\n### Streaming %d rows through the proxy\n\n", cfg.streamRows)
	fmt.Fprintf(&b, "A pgx client (extended protocol, binary results) reads every row of `big` and discards it; the harness checks that ids 1..%d "+
		"each arrive once (and in order, for ORDER BY). Each query gets a fresh `shardgate serve` process, so its VmHWM is this stream's peak; "+
		"its VmRSS is read from /proc/PID/status every 100 ms. **start** is VmRSS with the client connected and the backend connections open (a scatter that finds no row ran first), just before the query. "+
		"**flat** means: peak − start ≤ %s and no upward trend (median of the last quarter of the samples ≤ that of the second quarter + %s). "+
		"MiB/s counts column data. %d runs per target, interleaved: rows/s is their median; the RSS columns are the extremes over the runs "+
		"(lowest start, highest peak and end, largest growth and trend).\n\n", cfg.streamRows, benchkit.MiB(benchkit.MaxGrowthKB), benchkit.MiB(benchkit.MaxTrendKB), cfg.streamRounds)
	b.WriteString("| query | target | rows/s (min–max) | MiB/s | vs single | proxy RSS: start | peak (VmHWM) | end | growth | flat | load avg |\n")
	b.WriteString("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |\n")
	baseRate := map[string]float64{}
	for _, s := range r.streams {
		if s.target == "single" && len(s.rates) > 0 && s.err == "" {
			baseRate[s.query] = benchkit.Median(s.rates)
		}
	}
	for _, s := range r.streams {
		cells := make([]string, 11)
		cells[0], cells[1], cells[10] = "`"+s.query+"`", s.target, loadRange(s.load)
		switch {
		case len(s.rates) == 0 && s.err != "":
			cells[2] = failure(&f, s.query+" from "+s.target, s.code, s.err)
		case len(s.rates) == 0:
			cells[2] = "not run"
		default:
			cells[2] = spread(s.rates, "%.0f")
			cells[3] = fmt.Sprintf("%.1f", benchkit.Median(s.mibps))
			if s.err != "" {
				cells[2] += " " + failure(&f, s.query+" from "+s.target+" (a later round)", s.code, s.err)
			}
		}
		if s.target == "shardgate" && len(s.rss) > 0 {
			if base := baseRate[s.query]; base > 0 {
				cells[4] = fmt.Sprintf("%.2f×", benchkit.Median(s.rates)/base)
			}
			// Over the rounds: the lowest start, the highest peak and end,
			// the largest growth; flat only if every round was.
			lo, hi, end, growth, trend, samples := s.rss[0].start, s.rss[0].hwm, s.rss[0].end, s.rss[0].growth, s.rss[0].trend, 0
			flat := true
			var whys []string
			for _, rr := range s.rss {
				lo, hi, end = min(lo, rr.start), max(hi, rr.hwm), max(end, rr.end)
				growth, trend = max(growth, rr.growth), max(trend, rr.trend)
				samples += rr.samples
				flat = flat && rr.flat
				if rr.why != "" {
					whys = append(whys, rr.why)
				}
			}
			cells[5], cells[6], cells[7], cells[8] = benchkit.MiB(lo), benchkit.MiB(hi), benchkit.MiB(end), benchkit.MiB(growth)
			verdict := "**no**"
			if flat {
				verdict = "yes"
			}
			if len(whys) > 0 {
				verdict += " " + f.ref(s.query+": "+strings.Join(whys, "; "))
			}
			cells[9] = fmt.Sprintf("%s (%d samples in %d runs, trend %s)", verdict, samples, len(s.rss), signedMiB(trend))
		}
		fmt.Fprintf(&b, "| %s |\n", strings.Join(cells, " | "))
	}
	f.write(&b)

	if len(r.notes) > 0 {
		b.WriteString("\n")
		for _, n := range r.notes {
			fmt.Fprintf(&b, "%s\n", n)
		}
	}
	if r.topology != "" {
		fmt.Fprintf(&b, "\n<details><summary>The proxy's topology (each proxy process gets a free port in place of 0)</summary>\n\n```yaml\n%s```\n\n</details>\n", r.topology)
	}
	return b.String()
}

// loadRange shows a load average before and after some runs.
func loadRange(l [2]string) string {
	if l[0] == "" {
		return ""
	}
	return l[0] + " → " + l[1]
}

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

func signedMiB(kb int64) string {
	if kb >= 0 {
		return "+" + benchkit.MiB(kb)
	}
	return "−" + benchkit.MiB(-kb)
}
