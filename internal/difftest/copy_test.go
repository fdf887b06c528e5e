package difftest

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// COPY runs through its own sub-protocol, so its steps are not lines of
// queries.sql: they run after the load and before the queries, fill the
// events table (which queries.sql then reads), and count in the report
// like queries, with ids copy.*.

const eventsColumns = "customer_id, seq, kind, payload, at, amount"

// copyStep is one COPY statement, run once on each side.
type copyStep struct {
	id  string
	sql string
	// in is the data for COPY FROM STDIN in text or csv format; rows for
	// binary format (pgx.CopyFrom); neither for COPY TO STDOUT.
	in   string
	rows [][]any
	// ordered: COPY TO output compared line by line in sequence; else as
	// multisets of lines, with the first line fixed when header is set.
	ordered, header bool
	// wantErr: the COPY fails on the oracle (see query.Error).
	wantErr bool
}

// copySteps are the COPY statements, in the order they run.
func copySteps() []copyStep {
	r := rand.New(rand.NewPCG(dataSeed, 0xc0b1))
	kinds := []string{"login", "Login", "view", "buy", `tab	in`, `back\slash`, "comma,quote\"", "new\nline", ""}
	ts := func() time.Time {
		return time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(r.Int64N(365*86400e6)) * time.Microsecond)
	}
	textField := func(s string) string { // COPY text format escapes
		return strings.NewReplacer(`\`, `\\`, "\t", `\t`, "\n", `\n`, "\r", `\r`).Replace(s)
	}
	csvField := func(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
	var text, csv strings.Builder
	var binRows [][]any
	for id := int64(1); id <= 120; id++ {
		for seq := 1; seq <= 1+r.IntN(3); seq++ {
			kind := kinds[r.IntN(len(kinds))]
			at := ts().Format("2006-01-02 15:04:05.999999-07")
			amount := fmt.Sprintf("%d.%02d", r.IntN(1000)-100, r.IntN(100))
			payload := `\N`
			if r.IntN(3) > 0 {
				payload = fmt.Sprintf(`{"k": %d, "s": %q}`, r.IntN(10), kind)
			}
			textPayload := `\N`
			if payload != `\N` {
				textPayload = textField(payload)
			}
			fmt.Fprintf(&text, "%d\t%d\t%s\t%s\t%s\t%s\n", id, seq, textField(kind), textPayload, at, amount)
			csvPayload := ""
			if payload != `\N` {
				csvPayload = csvField(payload)
			}
			fmt.Fprintf(&csv, "%d,%d,%s,%s,%s,%s\n", -id, seq, csvField(kind), csvPayload, at, amount)
			var n pgtype.Numeric
			if err := n.Scan(amount); err != nil {
				panic(err)
			}
			var p any
			if payload != `\N` {
				p = payload
			}
			binRows = append(binRows, []any{id + 1000, int32(seq), kind, p, ts(), n})
		}
	}
	return []copyStep{
		{id: "copy.from_text", sql: "COPY events (" + eventsColumns + ") FROM STDIN", in: text.String()},
		{id: "copy.from_csv", sql: "COPY events (" + eventsColumns + ") FROM STDIN (FORMAT csv)", in: csv.String()},
		{id: "copy.from_binary", rows: binRows},
		// A bad value in a late row: nothing of the COPY stays, on any shard.
		{id: "copy.from_text_bad_value", sql: "COPY events (" + eventsColumns + ") FROM STDIN",
			in: "500\t1\tok\t\\N\t2024-01-01 00:00:00+00\t1.00\n501\t1\tok\t\\N\t2024-01-01 00:00:00+00\t1.00\n" +
				"502\t1\tok\t\\N\t2024-01-01 00:00:00+00\tnot a number\n", wantErr: true},
		// A row without its shard key (NULL): 23502 on both sides.
		{id: "copy.from_text_null_key", sql: "COPY events (" + eventsColumns + ") FROM STDIN",
			in: "510\t1\tok\t\\N\t2024-01-01 00:00:00+00\t1.00\n\\N\t1\tno key\t\\N\t2024-01-01 00:00:00+00\t1.00\n", wantErr: true},
		{id: "copy.to_stdout", sql: "COPY events TO STDOUT"},
		{id: "copy.to_csv_header", sql: "COPY events (customer_id, seq, kind, amount) TO STDOUT (FORMAT csv, HEADER)", header: true},
		{id: "copy.to_binary", sql: "COPY events TO STDOUT (FORMAT binary)"},
		{id: "copy.query_pinned", sql: "COPY (SELECT seq, kind, amount FROM events WHERE customer_id = 7 ORDER BY seq) TO STDOUT", ordered: true},
		{id: "copy.query_scatter", sql: "COPY (SELECT customer_id, kind FROM events WHERE amount < 0) TO STDOUT"},
		{id: "copy.query_ordered", sql: "COPY (SELECT customer_id, seq FROM events ORDER BY customer_id, seq) TO STDOUT", ordered: true},
		{id: "copy.reference_to_stdout", sql: "COPY countries TO STDOUT"},
	}
}

// copyResult is what a COPY answered: its command tag and, for COPY TO,
// the output.
type copyResult struct {
	tag string
	out []byte
	err error
}

func (s *session) runCopy(onProxy bool, st copyStep) copyResult {
	c := s.oracle
	if onProxy {
		c = s.proxy
	}
	ctx, cancel := context.WithTimeout(context.Background(), queryTimeout)
	defer cancel()
	var res copyResult
	switch {
	case st.rows != nil:
		n, err := c.CopyFrom(ctx, pgx.Identifier{"events"}, strings.Split(eventsColumns, ", "), pgx.CopyFromRows(st.rows))
		res.tag, res.err = fmt.Sprintf("COPY %d", n), err
	case st.in != "":
		tag, err := c.PgConn().CopyFrom(ctx, strings.NewReader(st.in), st.sql)
		res.tag, res.err = tag.String(), err
	default:
		var buf bytes.Buffer
		tag, err := c.PgConn().CopyTo(ctx, &buf, st.sql)
		res.tag, res.out, res.err = tag.String(), buf.Bytes(), err
	}
	if c.IsClosed() {
		s.t.Logf("%s: connection lost (%v); reconnecting", st.id, res.err)
		if onProxy {
			s.proxy = s.connect(s.proxyDSN)
		} else {
			s.oracle = s.connect(s.oracleDSN)
		}
	}
	return res
}

// copy runs one COPY step on both sides. A COPY FROM the proxy refuses
// runs on the oracle only inside a rolled-back transaction.
func (s *session) copy(st copyStep) outcome {
	q := &query{ID: st.id, SQL: st.sql, Write: st.in != "" || st.rows != nil}
	if q.SQL == "" {
		q.SQL = "COPY events (" + eventsColumns + ") FROM STDIN (FORMAT binary)"
	}
	o := outcome{q: q}
	p := s.runCopy(true, st)
	var or copyResult
	if refused(p.err) {
		s.exec(false, pgx.QueryExecModeSimpleProtocol, "BEGIN")
		or = s.runCopy(false, st)
		s.exec(false, pgx.QueryExecModeSimpleProtocol, "ROLLBACK")
		if !refused(or.err) {
			o.refuse("copy", p.err)
			return o
		}
	} else {
		or = s.runCopy(false, st)
	}
	if (or.err != nil) != st.wantErr {
		o.verdict = mismatched
		s.t.Errorf("%s: the oracle answers %s (wantErr %v)", st.id, copyOutcome(or), st.wantErr)
		return o
	}
	if d := compareCopy(st, p, or); d != "" {
		o.verdict = mismatched
		s.t.Errorf("%s: proxy and oracle differ\n%s\n--- difference\n%s", st.id, q.SQL, d)
	}
	return o
}

// compareCopy returns the difference between two COPY answers, "" if none.
func compareCopy(st copyStep, p, o copyResult) string {
	switch {
	case p.err != nil || o.err != nil:
		if p.err != nil && o.err != nil && sqlState(p.err) == sqlState(o.err) && sqlState(p.err) != "" {
			return ""
		}
		return fmt.Sprintf("proxy: %s\noracle: %s", copyOutcome(p), copyOutcome(o))
	case p.tag != o.tag:
		return fmt.Sprintf("command tag: proxy %q, oracle %q", p.tag, o.tag)
	case strings.Contains(st.sql, "FORMAT binary") && st.rows == nil:
		return compareBinaryCopy(p.out, o.out)
	}
	pl, ol := lines(p.out), lines(o.out)
	if st.header && len(pl) > 0 && len(ol) > 0 {
		if pl[0] != ol[0] {
			return fmt.Sprintf("header: proxy %q, oracle %q", pl[0], ol[0])
		}
		pl, ol = pl[1:], ol[1:]
	}
	if !st.ordered {
		slices.Sort(pl)
		slices.Sort(ol)
	}
	for i := range min(len(pl), len(ol)) {
		if pl[i] != ol[i] {
			return fmt.Sprintf("line %d (sorted unless ordered): proxy %q, oracle %q", i+1, pl[i], ol[i])
		}
	}
	if len(pl) != len(ol) {
		return fmt.Sprintf("lines: proxy %d, oracle %d", len(pl), len(ol))
	}
	return ""
}

// compareBinaryCopy compares COPY binary outputs: the same header and
// trailer, and the same tuples as a multiset.
func compareBinaryCopy(p, o []byte) string {
	const headerLen = 19 // signature (11), flags (4), extension length (4)
	pt, perr := binaryTuples(p, headerLen)
	ot, oerr := binaryTuples(o, headerLen)
	switch {
	case perr != nil || oerr != nil:
		return fmt.Sprintf("binary COPY output: proxy %v, oracle %v", perr, oerr)
	case !bytes.Equal(p[:headerLen], o[:headerLen]):
		return fmt.Sprintf("binary COPY header: proxy %x, oracle %x", p[:headerLen], o[:headerLen])
	}
	slices.Sort(pt)
	slices.Sort(ot)
	if !slices.Equal(pt, ot) {
		return fmt.Sprintf("binary COPY tuples differ: proxy %d, oracle %d tuples", len(pt), len(ot))
	}
	return ""
}

// binaryTuples splits a COPY binary stream (without extension data) into
// its tuples, each as a string of its bytes, checking the -1 trailer.
func binaryTuples(b []byte, headerLen int) ([]string, error) {
	if len(b) < headerLen+2 {
		return nil, fmt.Errorf("%d bytes: too short", len(b))
	}
	var out []string
	pos := headerLen
	for {
		if pos+2 > len(b) {
			return nil, fmt.Errorf("truncated at byte %d", pos)
		}
		n := int(int16(uint16(b[pos])<<8 | uint16(b[pos+1])))
		if n == -1 {
			if pos+2 != len(b) {
				return nil, fmt.Errorf("%d bytes after the trailer", len(b)-pos-2)
			}
			return out, nil
		}
		start := pos
		pos += 2
		for range n {
			if pos+4 > len(b) {
				return nil, fmt.Errorf("truncated at byte %d", pos)
			}
			l := int(int32(uint32(b[pos])<<24 | uint32(b[pos+1])<<16 | uint32(b[pos+2])<<8 | uint32(b[pos+3])))
			pos += 4
			if l > 0 {
				pos += l
			}
		}
		if pos > len(b) {
			return nil, fmt.Errorf("truncated tuple at byte %d", start)
		}
		out = append(out, string(b[start:pos]))
	}
}

func lines(b []byte) []string {
	s := strings.TrimSuffix(string(b), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func copyOutcome(r copyResult) string {
	if r.err != nil {
		return "error " + describeErr(r.err)
	}
	return fmt.Sprintf("%s, %d bytes", r.tag, len(r.out))
}
