package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/shardgate/shardgate/bench/internal/benchkit"
)

// --- cross-shard queries ----------------------------------------------------------

// queryCase is one measured query. The ORDER BY of each makes its answer
// deterministic, so the proxy's rows can be compared with the single
// server's byte for byte.
type queryCase struct {
	name string // short label in the table
	sql  string
}

var queryCases = []queryCase{
	{"count(*)", "SELECT count(*) FROM orders"},
	{"ORDER BY amount DESC LIMIT 10", "SELECT id, customer_id, amount, status, created_at FROM orders ORDER BY amount DESC, id LIMIT 10"},
	{"GROUP BY status: count, sum, avg", "SELECT status, count(*), sum(amount), avg(amount) FROM orders GROUP BY status ORDER BY status"},
}

// queryResult is one query in one protocol, over every run.
type queryResult struct {
	query, protocol string
	single, proxy   []float64 // latencies, ms
	singleErr       string    // the baseline failed: no figures
	proxyErr        string    // the proxy failed or refused
	proxyCode       string    // its SQLSTATE, if any
	mismatch        string    // the proxy's rows differ from the single server's
	load            [2]string // load average before and after the protocol's runs
}

// connect opens a pgx connection in the protocol's query mode: simple
// (one Query message) or extended (pgx's default: prepared once, then
// Bind/Execute with binary results where pgx knows the type).
func connect(ctx context.Context, dsn, protocol string) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	cfg.ConnectTimeout = 10 * time.Second
	if protocol == "simple" {
		cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	}
	return pgx.ConnectConfig(ctx, cfg)
}

// timeQuery runs sql once and reads every row; with keep it returns the
// raw values (nil stays nil).
func timeQuery(ctx context.Context, conn *pgx.Conn, sql string, keep bool) (time.Duration, [][][]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	t0 := time.Now()
	rows, err := conn.Query(ctx, sql)
	if err != nil {
		return 0, nil, err
	}
	var out [][][]byte
	for rows.Next() {
		if keep {
			var r [][]byte
			for _, v := range rows.RawValues() {
				if v != nil {
					v = bytes.Clone(v)
				}
				r = append(r, v)
			}
			out = append(out, r)
		}
	}
	rows.Close()
	d := time.Since(t0)
	return d, out, rows.Err()
}

func sameRows(a, b [][][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if len(a[i]) != len(b[i]) {
			return false
		}
		for j := range a[i] {
			if (a[i][j] == nil) != (b[i][j] == nil) || !bytes.Equal(a[i][j], b[i][j]) {
				return false
			}
		}
	}
	return true
}

// describeDiff fetches sql from both sides in text format (simple
// protocol) and names the first difference.
func describeDiff(ctx context.Context, single, proxy *pgx.Conn, sql string) string {
	fetch := func(c *pgx.Conn) ([][][]byte, error) {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		rs, err := c.PgConn().Exec(ctx, sql).ReadAll()
		if err != nil {
			return nil, err
		}
		if len(rs) != 1 {
			return nil, fmt.Errorf("%d results", len(rs))
		}
		return rs[0].Rows, nil
	}
	a, err1 := fetch(single)
	b, err2 := fetch(proxy)
	if err := errors.Join(err1, err2); err != nil {
		return "the text-format re-read failed: " + err.Error()
	}
	if len(a) != len(b) {
		return fmt.Sprintf("%d rows from shardgate, %d from the single server", len(b), len(a))
	}
	for i := range a {
		if !sameRows(a[i:i+1], b[i:i+1]) {
			return fmt.Sprintf("row %d: shardgate (%s), single (%s)", i+1, textRow(b[i]), textRow(a[i]))
		}
	}
	return "the rows differ in the binary format only, the text format is the same"
}

func textRow(r [][]byte) string {
	var b []byte
	for i, v := range r {
		if i > 0 {
			b = append(b, ", "...)
		}
		if v == nil {
			b = append(b, "NULL"...)
		} else {
			b = append(b, v...)
		}
	}
	return string(b)
}

// errText returns an error's text and SQLSTATE.
func errText(err error) (string, string) {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return fmt.Sprintf("%s: %s", pe.Code, pe.Message), pe.Code
	}
	return err.Error(), ""
}

// runQueries measures every query case in one protocol: a warm-up run on
// each side (whose rows are compared), then runs rounds, interleaved and
// alternating which side goes first. A side that fails a query is not run
// again for it; the other side still is. A proxy connection that a failure
// (or a timeout) closed is replaced, so one failing query does not take
// the others with it.
func (h *harness) runQueries(ctx context.Context, protocol string, proxyDSN string) ([]*queryResult, error) {
	single, err := connect(ctx, h.single.DSN("bench"), protocol)
	if err != nil {
		return nil, err
	}
	defer single.Close(context.Background())
	proxy, err := connect(ctx, proxyDSN, protocol)
	if err != nil {
		return nil, fmt.Errorf("connect to shardgate: %w", err)
	}
	defer func() { proxy.Close(context.Background()) }()
	// onProxy runs a query through the proxy, reconnecting afterwards if
	// the failure closed the connection.
	onProxy := func(sql string, keep bool) (time.Duration, [][][]byte, error) {
		d, rows, err := timeQuery(ctx, proxy, sql, keep)
		if err != nil && proxy.IsClosed() && ctx.Err() == nil {
			if c, cerr := connect(ctx, proxyDSN, protocol); cerr == nil {
				proxy = c
			} else {
				h.logf("  reconnect to shardgate: %v", cerr)
			}
		}
		return d, rows, err
	}

	var out []*queryResult
	load0 := benchkit.LoadAvg()
	for _, q := range queryCases {
		r := &queryResult{query: q.name, protocol: protocol}
		out = append(out, r)
		_, want, err := timeQuery(ctx, single, q.sql, true)
		if err != nil {
			r.singleErr, _ = errText(err)
			h.logf("  %s (%s) on the single server: %s", q.name, protocol, r.singleErr)
		}
		_, got, err := onProxy(q.sql, true)
		if err != nil {
			r.proxyErr, r.proxyCode = errText(err)
			h.logf("  %s (%s) through shardgate: %s", q.name, protocol, r.proxyErr)
		}
		if r.singleErr == "" && r.proxyErr == "" && !sameRows(want, got) {
			r.mismatch = describeDiff(ctx, single, proxy, q.sql)
			h.logf("  %s (%s): shardgate's rows differ: %s", q.name, protocol, r.mismatch)
		}
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
	}
	for round := range h.cfg.runs {
		for i, q := range queryCases {
			r := out[i]
			sides := []bool{false, true} // through the proxy?
			if round%2 == 1 {
				sides = []bool{true, false}
			}
			for _, viaProxy := range sides {
				switch {
				case !viaProxy && r.singleErr == "":
					d, _, err := timeQuery(ctx, single, q.sql, false)
					if err != nil {
						r.singleErr, _ = errText(err)
					} else {
						r.single = append(r.single, float64(d.Microseconds())/1000)
					}
				case viaProxy && r.proxyErr == "":
					d, _, err := onProxy(q.sql, false)
					if err != nil {
						r.proxyErr, r.proxyCode = errText(err)
						h.logf("  %s (%s) through shardgate, run %d: %s", q.name, protocol, round+1, r.proxyErr)
					} else {
						r.proxy = append(r.proxy, float64(d.Microseconds())/1000)
					}
				}
				if ctx.Err() != nil {
					return out, ctx.Err()
				}
			}
		}
	}
	load1 := benchkit.LoadAvg()
	for _, r := range out {
		r.load = [2]string{load0, load1}
		if len(r.single) > 0 && len(r.proxy) > 0 {
			h.logf("  %s (%s): single %.1f ms, shardgate %.1f ms (medians of %d)", r.query, protocol,
				benchkit.Median(r.single), benchkit.Median(r.proxy), len(r.proxy))
		}
	}
	return out, nil
}

// --- COPY -----------------------------------------------------------------------

// copyResult is COPY FROM STDIN into one target, over every round.
type copyResult struct {
	target  string
	secs    []float64 // per round
	err     string
	code    string
	checked string    // what was verified after each round
	load    [2]string // load average before the first run and after the last
}

// runCopy times COPY orders_copy FROM STDIN (text format) of the same
// payload into the single server and through the proxy into the shards,
// rounds times, alternating which goes first. The table is emptied on
// every cluster before each run; after each run the rows are counted where
// they landed: per shard cluster, count and sum(customer_id) must equal
// what the routing says.
func (h *harness) runCopy(ctx context.Context, proxyDSN string) ([]*copyResult, error) {
	n := int64(h.cfg.copyRows)
	t0 := time.Now()
	pay := payload(seedCopy, n, false)
	wantRows, wantSums := h.clusterTally(seedCopy, n)
	h.logf("COPY payload: %d rows, %.1f MiB of text (made in %s)", n, float64(len(pay))/(1<<20), time.Since(t0).Round(time.Millisecond))

	single, err := connect(ctx, h.single.DSN("bench"), "simple")
	if err != nil {
		return nil, err
	}
	defer single.Close(context.Background())
	proxy, err := connect(ctx, proxyDSN, "simple")
	if err != nil {
		return nil, fmt.Errorf("connect to shardgate: %w", err)
	}
	defer proxy.Close(context.Background())

	rs := []*copyResult{{target: "single"}, {target: "shardgate"}}
	rs[0].checked = fmt.Sprintf("count(*) = %d", n)
	rs[1].checked = fmt.Sprintf("count(*) and sum(customer_id) on each of the %d shard clusters as routed", len(h.shards))
	load0 := benchkit.LoadAvg()
	defer func() {
		for _, r := range rs {
			r.load = [2]string{load0, benchkit.LoadAvg()}
		}
	}()
	for round := range h.cfg.copyRounds {
		order := []int{0, 1}
		if round%2 == 1 {
			order = []int{1, 0}
		}
		for _, i := range order {
			r := rs[i]
			if r.err != "" {
				continue
			}
			if err := h.resetCopyTable(ctx); err != nil {
				return rs, err
			}
			conn := single
			if i == 1 {
				conn = proxy
			}
			cctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
			t := time.Now()
			tag, err := conn.PgConn().CopyFrom(cctx, bytes.NewReader(pay), "COPY orders_copy FROM STDIN")
			d := time.Since(t)
			cancel()
			if ctx.Err() != nil {
				return rs, ctx.Err()
			}
			if err != nil {
				r.err, r.code = errText(err)
				h.logf("  COPY into %s: %s", r.target, r.err)
				continue
			}
			if tag.RowsAffected() != n {
				r.err = fmt.Sprintf("COPY reported %d rows, want %d", tag.RowsAffected(), n)
				continue
			}
			if i == 0 {
				err = checkCount(ctx, h.single.DSN("bench"), "orders_copy", n, -1)
			} else {
				for k, c := range h.shards {
					if err = checkCount(ctx, c.DSN("bench"), "orders_copy", wantRows[k], wantSums[k]); err != nil {
						err = fmt.Errorf("shard cluster %s: %w", c.Name, err)
						break
					}
				}
			}
			if err != nil {
				r.err = "rows not where they belong after COPY: " + err.Error()
				h.logf("  %s", r.err)
				continue
			}
			r.secs = append(r.secs, d.Seconds())
			h.logf("  COPY %d rows into %s: %.2f s, %.0f rows/s", n, r.target, d.Seconds(), float64(n)/d.Seconds())
		}
	}
	return rs, nil
}

// clusterTally is placement.tally summed per shard cluster (h.shards order).
func (h *harness) clusterTally(seed uint64, n int64) (rows, sums []int64) {
	sr, ss := h.place.tally(seed, n)
	rows, sums = make([]int64, len(h.shards)), make([]int64, len(h.shards))
	for s := range sr {
		k := h.shardIndex[h.place.clusters[s]]
		rows[k] += sr[s]
		sums[k] += ss[s]
	}
	return rows, sums
}

// resetCopyTable empties orders_copy on every cluster and checkpoints, so
// each COPY starts from the same state.
func (h *harness) resetCopyTable(ctx context.Context) error {
	for _, c := range h.env.Clusters {
		if err := c.Exec(ctx, "bench", "TRUNCATE orders_copy; CHECKPOINT"); err != nil {
			return err
		}
	}
	return nil
}

// checkCount checks count(*) of table on one server and, unless wantSum is
// negative, sum(customer_id).
func checkCount(ctx context.Context, dsn, table string, wantRows, wantSum int64) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	var rows, sum int64
	if err := conn.QueryRow(ctx, "SELECT count(*), coalesce(sum(customer_id), 0)::bigint FROM "+table).Scan(&rows, &sum); err != nil {
		return err
	}
	if rows != wantRows {
		return fmt.Errorf("%s has %d rows, want %d", table, rows, wantRows)
	}
	if wantSum >= 0 && sum != wantSum {
		return fmt.Errorf("%s: sum(customer_id) = %d, want %d", table, sum, wantSum)
	}
	return nil
}

// --- streaming --------------------------------------------------------------------

// streamCase is one streamed query over the big table.
type streamCase struct {
	name    string
	sql     string
	ordered bool // rows must arrive in id order
}

var streamCases = []streamCase{
	{"SELECT * FROM big", "SELECT * FROM big", false},
	{"SELECT * FROM big ORDER BY id", "SELECT * FROM big ORDER BY id", true},
}

// streamResult is one streamed query on one target, over every round.
type streamResult struct {
	query, target string
	rows          int64     // per round
	rates         []float64 // rows/s, per round
	mibps         []float64 // MiB/s of column data, per round
	err, code     string
	rss           []rssRound // shardgate only
	load          [2]string  // load average before the first round and after the last
}

// rssRound is the proxy's memory during one stream, in kB.
type rssRound struct {
	start, hwm, end int64
	growth, trend   int64
	samples         int
	flat            bool
	why             string
}

// stream runs sc's query on conn and reads every row, checking that ids
// 1..rows each arrive once (and in order, if sc.ordered).
func stream(ctx context.Context, conn *pgx.Conn, sc streamCase, want int64) (rows, size int64, d time.Duration, err error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	t0 := time.Now()
	rs, err := conn.Query(ctx, sc.sql)
	if err != nil {
		return 0, 0, 0, err
	}
	defer rs.Close()
	binaryID := rs.FieldDescriptions()[0].Format == pgx.BinaryFormatCode
	var sum, prev int64
	for rs.Next() {
		vals := rs.RawValues()
		for _, v := range vals {
			size += int64(len(v))
		}
		var id int64
		if binaryID && len(vals[0]) == 8 {
			id = int64(binary.BigEndian.Uint64(vals[0]))
		} else if id, err = strconv.ParseInt(string(vals[0]), 10, 64); err != nil {
			return rows, size, 0, fmt.Errorf("id %q: %w", vals[0], err)
		}
		if sc.ordered && id != prev+1 {
			return rows, size, 0, fmt.Errorf("row %d has id %d after id %d: not in id order", rows+1, id, prev)
		}
		prev = id
		sum += id
		rows++
	}
	rs.Close()
	d = time.Since(t0)
	if err := rs.Err(); err != nil {
		return rows, size, d, err
	}
	if rows != want || sum != want*(want+1)/2 {
		return rows, size, d, fmt.Errorf("%d rows with sum(id) %d, want %d rows with sum %d", rows, sum, want, want*(want+1)/2)
	}
	return rows, size, d, nil
}

// runStream streams sc from the single server (the rows/s baseline) and
// through the proxy, rounds times, alternating which goes first. Every
// proxy run gets a `shardgate serve` process of its own, so that its VmHWM
// is this stream's peak; its VmRSS is sampled every 100 ms.
func (h *harness) runStream(ctx context.Context, sc streamCase) ([]*streamResult, error) {
	base := &streamResult{query: sc.name, target: "single"}
	r := &streamResult{query: sc.name, target: "shardgate"}
	load0 := benchkit.LoadAvg()
	for round := range h.cfg.streamRounds {
		order := []*streamResult{base, r}
		if round%2 == 1 {
			order = []*streamResult{r, base}
		}
		for _, res := range order {
			if res.err != "" {
				continue
			}
			var err error
			if res == base {
				err = h.streamSingle(ctx, sc, res)
			} else {
				err = h.streamProxy(ctx, sc, res)
			}
			if err != nil { // the run's, not the target's
				return []*streamResult{base, r}, err
			}
		}
	}
	base.load = [2]string{load0, benchkit.LoadAvg()}
	r.load = base.load
	return []*streamResult{base, r}, nil
}

// streamSingle streams sc once from the single server.
func (h *harness) streamSingle(ctx context.Context, sc streamCase, res *streamResult) error {
	want := int64(h.cfg.streamRows)
	conn, err := connect(ctx, h.single.DSN("bench"), "extended")
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	n, size, d, err := stream(ctx, conn, sc, want)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		res.err, res.code = errText(err)
		return nil
	}
	res.rows = n
	res.rates = append(res.rates, float64(n)/d.Seconds())
	res.mibps = append(res.mibps, float64(size)/(1<<20)/d.Seconds())
	h.logf("  %s from the single server: %d rows in %.2f s", sc.name, n, d.Seconds())
	return nil
}

// streamProxy streams sc once through a fresh proxy process, sampling its
// memory. Failures are the target's (res.err).
func (h *harness) streamProxy(ctx context.Context, sc streamCase, res *streamResult) error {
	want := int64(h.cfg.streamRows)
	p, port, err := h.startProxy(ctx, "stream")
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		res.err = err.Error()
		return nil
	}
	defer p.Stop(10 * time.Second)
	conn, err := connect(ctx, proxyDSN(port), "extended")
	if err != nil {
		res.err = "connect: " + err.Error()
		return nil
	}
	defer conn.Close(context.Background())
	// Open the proxy's backend connections (a scatter that finds no row),
	// so that neither the start RSS nor the rate depend on connecting.
	if _, _, err := timeQuery(ctx, conn, "SELECT * FROM big WHERE id < 0", false); err != nil {
		res.err, res.code = errText(err)
		res.err = "warm-up scatter: " + res.err
		return nil
	}
	m0, err := benchkit.ReadStatus(p.Pid())
	if err != nil {
		res.err = "read the proxy's /proc status: " + err.Error()
		return nil
	}
	smp := benchkit.StartSampler(ctx, p.Pid(), 100*time.Millisecond)
	n, size, d, serr := stream(ctx, conn, sc, want)
	samples, sampleErr := smp.Stop()
	m1, err := benchkit.ReadStatus(p.Pid())
	if ctx.Err() != nil {
		return ctx.Err()
	}
	switch {
	case serr != nil:
		res.err, res.code = errText(serr)
		if p.Exited() {
			res.err += "; " + p.ExitError().Error()
		}
	case err != nil:
		res.err = "read the proxy's /proc status after the stream: " + err.Error()
	case sampleErr != nil:
		res.err = "sample the proxy's RSS: " + sampleErr.Error()
	}
	if res.err != "" {
		h.logf("  %s through shardgate: %s", sc.name, res.err)
		return nil
	}
	rr := rssRound{start: m0.RSS, hwm: m1.HWM, end: m1.RSS, samples: len(samples)}
	rr.flat, rr.growth, rr.trend, rr.why = benchkit.Flatness(rr.start, rr.hwm, samples)
	res.rows = n
	res.rates = append(res.rates, float64(n)/d.Seconds())
	res.mibps = append(res.mibps, float64(size)/(1<<20)/d.Seconds())
	res.rss = append(res.rss, rr)
	h.logf("  %s through shardgate: %d rows in %.2f s; RSS %s at the start, peak %s, %s at the end (%d samples)",
		sc.name, n, d.Seconds(), benchkit.MiB(rr.start), benchkit.MiB(rr.hwm), benchkit.MiB(rr.end), len(samples))
	return nil
}
