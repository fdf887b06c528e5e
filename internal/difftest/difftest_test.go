package difftest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/shardgate/shardgate/internal/proxytest"
	"github.com/shardgate/shardgate/internal/testenv"
	"github.com/shardgate/shardgate/proxy"
)

const (
	database = "shop"
	// queriesFile and allowListFile live next to this file.
	queriesFile   = "queries.sql"
	allowListFile = "allowlist.txt"
	// reportEnv names a file the summary is also written to.
	reportEnv = "DIFFTEST_REPORT"
	// strictEnv=1 also fails on allow-list entries whose query now matches.
	strictEnv = "DIFFTEST_STRICT"
	// updateEnv=1 rewrites the allow-list from this run: entries whose
	// query now runs are dropped; new refusals are added with the
	// proxy's message as their reason (edit it, and review the diff).
	updateEnv = "DIFFTEST_UPDATE_ALLOWLIST"
	// queryTimeout bounds one statement on one side.
	queryTimeout = 30 * time.Second
)

// pg0 and pg1 serve the proxy's topology; pg2 is the oracle.
func TestMain(m *testing.M) {
	testenv.Run(m, testenv.Options{N: 3, Databases: []string{database}}, nil)
}

// modes are the two ways every read runs through the proxy and on the
// oracle: the simple protocol (text results) and the extended protocol
// with a cached prepared statement (binary results where pgx can decode
// them).
var modes = []struct {
	name string
	mode pgx.QueryExecMode
}{
	{"simple", pgx.QueryExecModeSimpleProtocol},
	{"extended", pgx.QueryExecModeCacheStatement},
}

// verdict is what became of one query.
type verdict uint8

const (
	matched         verdict = iota
	refusedAllowed          // refused with 0A000, on the allow-list
	refusedUnlisted         // refused with 0A000, not on the allow-list: fails
	mismatched              // any other difference: fails
)

type outcome struct {
	q       *query
	verdict verdict
	stale   bool   // on the allow-list, yet matched
	refusal string // the proxy's refusal: SQLSTATE, message, detail, mode
	message string // the refusal's message alone
	// empty: the oracle answered a read with no rows (such a query tests
	// little; the report lists them so that a typo does not go unnoticed).
	empty bool
}

func TestDifferential(t *testing.T) {
	env := testenv.Shared(t)
	queries, err := parseQueries(queriesFile)
	if err != nil {
		t.Fatal(err)
	}
	allow, err := parseAllowList(allowListFile)
	if err != nil {
		t.Fatal(err)
	}

	ctx := context.Background()
	proxyDSN := startProxy(t, env)
	oracleDSN := env.Clusters[2].DSN(database)
	s := &session{t: t, proxyDSN: proxyDSN, oracleDSN: oracleDSN}
	s.proxy, s.oracle = s.connect(proxyDSN), s.connect(oracleDSN)
	t.Cleanup(func() { s.proxy.Close(ctx); s.oracle.Close(ctx) })
	s.checkCollation(env)

	t0 := time.Now()
	load := append(slices.Clone(schema), generateData()...)
	rows := 0
	for _, st := range load {
		if st.Side != oracleOnly {
			if _, err := s.proxy.Exec(ctx, st.SQL, pgx.QueryExecModeSimpleProtocol); err != nil {
				t.Fatalf("load through the proxy: %v\n%s", err, firstLines(st.SQL, 3))
			}
		}
		if st.Side != proxyOnly {
			tag, err := s.oracle.Exec(ctx, st.SQL, pgx.QueryExecModeSimpleProtocol)
			if err != nil {
				t.Fatalf("load into the oracle: %v\n%s", err, firstLines(st.SQL, 3))
			}
			rows += int(tag.RowsAffected())
		}
	}
	t.Logf("loaded %d statements (%d rows) through the proxy and into the oracle in %s",
		len(load), rows, time.Since(t0).Round(time.Millisecond))

	t0 = time.Now()
	var outs []outcome
	for _, st := range copySteps() {
		var o outcome
		t.Run(st.id, func(t *testing.T) {
			s.t = t
			o = s.copy(st)
			o.classify(t, allow)
		})
		if o.q != nil {
			outs = append(outs, o)
		}
	}
	writes := 0
	for i := range queries {
		q := &queries[i]
		var o outcome
		t.Run(q.ID, func(t *testing.T) {
			s.t = t
			if q.Write {
				o = s.write(q, writes)
				writes++
			} else {
				o = s.read(q)
			}
			o.q = q
			o.classify(t, allow)
		})
		if o.q != nil { // nil: left out by -run
			outs = append(outs, o)
		}
	}
	t.Run("pg_dump", func(t *testing.T) {
		s.t = t
		s.pgDumpReload(t) // pgdump_test.go
	})
	s.t = t
	if os.Getenv(updateEnv) == "1" {
		updateAllowList(t, allow, outs)
	}
	rep := report(outs, allow, s.recoded, time.Since(t0))
	t.Log("\n" + rep)
	if path := os.Getenv(reportEnv); path != "" {
		if err := os.WriteFile(path, []byte(rep), 0o644); err != nil {
			t.Errorf("%s: %v", reportEnv, err)
		}
	}
}

// updateAllowList rewrites allowListFile from the outcomes of this run.
func updateAllowList(t *testing.T, allow map[string]string, outs []outcome) {
	b, err := os.ReadFile(allowListFile)
	if err != nil {
		t.Fatal(err)
	}
	header := string(b)
	if i := strings.Index(header, "\nreason:"); i >= 0 {
		header = header[:i+1]
	}
	next := map[string]string{}
	for _, o := range outs {
		if o.verdict != refusedAllowed && o.verdict != refusedUnlisted {
			continue
		}
		if r, ok := allow[o.q.ID]; ok {
			next[o.q.ID] = r
		} else {
			next[o.q.ID] = o.message
		}
	}
	order := make([]query, 0, len(outs))
	for _, o := range outs {
		order = append(order, *o.q)
	}
	if err := os.WriteFile(allowListFile, []byte(formatAllowList(header, next, order)), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s rewritten: %d entries (was %d)", allowListFile, len(next), len(allow))
}

// startProxy runs an in-process proxy over pg0 and pg1 and returns its DSN.
func startProxy(t *testing.T, env *testenv.Env) string {
	topo := proxytest.Parse(t, topologyYAML(env.Clusters[0], env.Clusters[1]))
	cfg := proxy.Config{PoolSize: 4, MaxWait: 10 * time.Second, Logger: proxytest.Logger()}
	srv, err := proxy.NewServer(cfg, topo)
	if err != nil {
		t.Fatal(err)
	}
	return proxytest.DSN(proxytest.Serve(t, srv), "app", database)
}

// session holds one connection to each side and runs queries on both.
type session struct {
	t                   *testing.T
	proxyDSN, oracleDSN string
	proxy, oracle       *pgx.Conn
	recoded             int
}

func (s *session) connect(dsn string) *pgx.Conn {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		s.t.Fatalf("connect %s: %v", dsn, err)
	}
	return c
}

// checkCollation makes sure text sorts alike on both sides: every
// database must have the same collation (testenv's initdb uses C.UTF-8,
// or C where that is missing).
func (s *session) checkCollation(env *testenv.Env) {
	ctx := context.Background()
	var want string
	for i, cl := range env.Clusters {
		c := s.connect(cl.DSN(database))
		var coll, ctype string
		err := c.QueryRow(ctx, "SELECT datcollate, datctype FROM pg_database WHERE datname = current_database()").Scan(&coll, &ctype)
		c.Close(ctx)
		if err != nil {
			s.t.Fatal(err)
		}
		got := coll + "/" + ctype
		if i == 0 {
			want = got
			s.t.Logf("collation %s on every cluster", got)
		} else if got != want {
			s.t.Fatalf("%s has collation %s, pg0 has %s: text order would differ", cl.Name, got, want)
		}
	}
}

// exec runs sql on one side with a timeout, reconnecting if the
// connection did not survive.
func (s *session) exec(onProxy bool, mode pgx.QueryExecMode, sql string, args ...any) result {
	c, dsn := &s.oracle, s.oracleDSN
	if onProxy {
		c, dsn = &s.proxy, s.proxyDSN
	}
	ctx, cancel := context.WithTimeout(context.Background(), queryTimeout)
	defer cancel()
	r := run(ctx, *c, mode, sql, args...)
	if (*c).IsClosed() {
		s.t.Logf("connection to %s lost after this statement (%v); reconnecting", dsn, r.Err)
		*c = s.connect(dsn)
	}
	return r
}

// read runs a read in every mode on both sides.
func (s *session) read(q *query) outcome {
	var o outcome
	for _, m := range modes {
		p := s.exec(true, m.mode, q.SQL, q.Args...)
		or := s.exec(false, m.mode, q.SQL, q.Args...)
		o.empty = or.Err == nil && len(or.Rows) == 0 && len(or.Fields) > 0
		s.settle(q, &o, m.name, p, or)
	}
	return o
}

// write runs a write: first rehearsed in a transaction that is rolled
// back, in one mode, then for real in the other mode (alternating by the
// write's position, so both modes write for real). A write the proxy
// refuses is run on the oracle only inside a rolled-back transaction, so
// both sides keep the same data.
func (s *session) write(q *query, n int) outcome {
	var o outcome
	rehearse, real := modes[n%2], modes[(n+1)%2]
	if !q.NoRehearse {
		p := s.rolledBack(true, rehearse.mode, q)
		or := s.rolledBack(false, rehearse.mode, q)
		if s.settle(q, &o, rehearse.name+" (in a rolled-back transaction)", p, or) {
			return o
		}
	}
	p := s.exec(true, real.mode, q.SQL, q.Args...)
	var or result
	if refused(p.Err) {
		or = s.rolledBack(false, real.mode, q)
	} else {
		or = s.exec(false, real.mode, q.SQL, q.Args...)
	}
	s.settle(q, &o, real.name, p, or)
	return o
}

// rolledBack runs q on one side inside a transaction that it then rolls
// back.
func (s *session) rolledBack(onProxy bool, mode pgx.QueryExecMode, q *query) result {
	if r := s.exec(onProxy, pgx.QueryExecModeSimpleProtocol, "BEGIN"); r.Err != nil {
		s.t.Fatalf("BEGIN: %v", r.Err)
	}
	res := s.exec(onProxy, mode, q.SQL, q.Args...)
	if r := s.exec(onProxy, pgx.QueryExecModeSimpleProtocol, "ROLLBACK"); r.Err != nil {
		s.t.Fatalf("ROLLBACK: %v", r.Err)
	}
	return res
}

// settle records one run: a refusal (the proxy says 0A000 where the
// oracle does not), or else the comparison. It reports whether the proxy
// refused.
func (s *session) settle(q *query, o *outcome, mode string, p, or result) bool {
	if refused(p.Err) && !refused(or.Err) {
		o.refuse(mode, p.Err)
		return true
	}
	s.check(q, o, mode, p, or)
	return false
}

func (o *outcome) refuse(mode string, err error) {
	if o.refusal == "" {
		o.refusal = describeErr(err) + " [" + mode + "]"
		var pe *pgconn.PgError
		if errors.As(err, &pe) {
			o.message = pe.Message
		}
	}
	if o.verdict == matched {
		o.verdict = refusedUnlisted // classify settles it with the allow-list
	}
}

// check compares one run and logs the difference as a failure.
func (s *session) check(q *query, o *outcome, mode string, p, or result) {
	if (or.Err != nil) != q.Error {
		o.verdict = mismatched
		if q.Error {
			s.t.Errorf("%s: %s is marked error, but the oracle answers it (%s protocol): %s", q.where(), q.ID, mode, summarize(or))
		} else {
			s.t.Errorf("%s: %s: the oracle fails it (%s protocol): %s\n%s\nfix the statement, or mark it error",
				q.where(), q.ID, mode, describeErr(or.Err), q.SQL)
		}
		return
	}
	c := &comparer{m: s.proxy.TypeMap(), q: q}
	diffs := c.compare(p, or)
	s.recoded += c.recoded
	if len(diffs) == 0 {
		return
	}
	o.verdict = mismatched
	msg := fmt.Sprintf("%s: %s: proxy and oracle differ (%s protocol)\n%s\n--- difference\n%s\n",
		q.where(), q.ID, mode, q.SQL, strings.Join(diffs, "\n"))
	if len(p.Rows) <= diffRows && len(or.Rows) <= diffRows {
		msg += "--- proxy\n" + c.rowsReport(p, diffRows) + "--- oracle\n" + c.rowsReport(or, diffRows)
	} else if p.Err == nil && or.Err == nil {
		msg += "columns: " + fieldsString(or.Fields) + "\n"
	}
	s.t.Error(msg)
}

// classify applies the allow-list to a query's outcome.
func (o *outcome) classify(t *testing.T, allow map[string]string) {
	reason, listed := allow[o.q.ID]
	switch o.verdict {
	case refusedUnlisted:
		if listed {
			o.verdict = refusedAllowed
			return
		}
		t.Errorf("%s: %s: the proxy refuses it, and it is not on %s\n%s\nrefusal: %s",
			o.q.where(), o.q.ID, allowListFile, o.q.SQL, o.refusal)
	case matched:
		if listed {
			o.stale = true
			msg := fmt.Sprintf("%s: now matches the oracle; it can be removed from %s (reason given: %s)", o.q.ID, allowListFile, reason)
			if os.Getenv(strictEnv) == "1" {
				t.Error(msg)
			} else {
				t.Log(msg)
			}
		}
	case mismatched:
		if listed {
			t.Errorf("%s is on %s (%s), but the proxy answered it, wrongly", o.q.ID, allowListFile, reason)
		}
	}
}

// report is the summary: counts, the refusals grouped by reason, and
// every failing or stale entry.
func report(outs []outcome, allow map[string]string, recoded int, took time.Duration) string {
	var n [4]int
	var stale, failed, empty []string
	byReason := map[string][]string{}
	for _, o := range outs {
		n[o.verdict]++
		switch {
		case o.verdict == refusedAllowed:
			byReason[allow[o.q.ID]] = append(byReason[allow[o.q.ID]], o.q.ID)
		case o.verdict == refusedUnlisted:
			failed = append(failed, o.q.ID+" (refused, not allow-listed: "+o.refusal+")")
		case o.verdict == mismatched:
			failed = append(failed, o.q.ID+" (differs)")
		case o.stale:
			stale = append(stale, o.q.ID)
		}
		if o.empty {
			empty = append(empty, o.q.ID)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "difftest: %d queries in %s: %d matched, %d refused (allow-listed), %d refused (NOT allow-listed), %d mismatched\n",
		len(outs), took.Round(time.Millisecond), n[matched], n[refusedAllowed], n[refusedUnlisted], n[mismatched])
	if recoded > 0 {
		fmt.Fprintf(&b, "note: %d binary values differed in bytes but decoded equal\n", recoded)
	}
	if len(failed) > 0 {
		fmt.Fprintf(&b, "\nfailing:\n")
		for _, f := range failed {
			fmt.Fprintf(&b, "  %s\n", f)
		}
	}
	if len(stale) > 0 {
		fmt.Fprintf(&b, "\nallow-listed but now matching (remove from %s):\n  %s\n", allowListFile, strings.Join(stale, "\n  "))
	}
	if len(empty) > 0 {
		fmt.Fprintf(&b, "\nreads the oracle answers with no rows (%d):\n  %s\n", len(empty), strings.Join(empty, " "))
	}
	if len(byReason) > 0 {
		reasons := make([]string, 0, len(byReason))
		for r := range byReason {
			reasons = append(reasons, r)
		}
		sort.Slice(reasons, func(i, j int) bool {
			if a, b := len(byReason[reasons[i]]), len(byReason[reasons[j]]); a != b {
				return a > b
			}
			return reasons[i] < reasons[j]
		})
		fmt.Fprintf(&b, "\nrefused, by allow-list reason:\n")
		for _, r := range reasons {
			fmt.Fprintf(&b, "  %3d  %s\n       %s\n", len(byReason[r]), r, strings.Join(byReason[r], " "))
		}
	}
	return b.String()
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = append(lines[:n], "...")
	}
	return strings.Join(lines, "\n")
}
