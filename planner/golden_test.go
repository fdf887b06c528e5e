package planner

import (
	"bufio"
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/shardgate/shardgate/keyexpr"
	"github.com/shardgate/shardgate/sqlerr"
	"github.com/shardgate/shardgate/topology"
	"github.com/shardgate/shardgate/vschema"
)

// Golden plan tests. Each testdata/*.txt file holds cases:
//
//	== name                 (add " [simple]" to plan with PlanSimple)
//	SELECT ...              (the SQL, any number of lines)
//	-- params: 5 | abc      (optional; NULL, int2:/int4:/int8:/uuid:/text: for binary,
//	                        @oid: for text with a declared type: @1700:7.5)
//	----
//	expected output         (what describe prints)
//
// go test ./planner -update rewrites the expected sections.

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

var (
	testPlannerOnce sync.Once
	testPlannerVal  *Planner
)

func testPlanner(t testing.TB) *Planner {
	t.Helper()
	testPlannerOnce.Do(func() {
		topo, err := topology.Load(filepath.Join("testdata", "topology.yaml"))
		if err != nil {
			panic(err)
		}
		vs, err := vschema.Build(topo)
		if err != nil {
			panic(err)
		}
		testPlannerVal = New(vs).WithColumns(goldenColumns{})
	})
	return testPlannerVal
}

// goldenColumns is the column order of a few test tables, as the proxy
// would read it from a catalog (columns.go); other tables are unknown.
type goldenColumns struct{}

func (goldenColumns) Columns(t *vschema.Table) ([]string, bool) {
	cols, ok := map[string][]string{
		"orders":    {"id", "customer_id", "total", "currency"},
		"customers": {"id", "name", "email"},
		"products":  {"id", "sku", "name", "price"},
	}[t.Name]
	return cols, ok
}

type goldenCase struct {
	name     string
	sql      string
	params   string // raw params line, "" if none
	simple   bool
	expected string
}

func TestGolden(t *testing.T) {
	total := 0
	for _, file := range goldenFiles(t) {
		cases, err := readGolden(file)
		if err != nil {
			t.Fatal(err)
		}
		total += len(cases)
		changed := false
		for i := range cases {
			c := &cases[i]
			got := runCase(t, c)
			if got != c.expected {
				if *update {
					c.expected = got
					changed = true
					continue
				}
				t.Errorf("%s: %s\n%s\n--- got\n%s\n--- want\n%s", filepath.Base(file), c.name, c.sql, got, c.expected)
			}
		}
		if changed {
			if err := writeGolden(file, cases); err != nil {
				t.Fatal(err)
			}
		}
	}
	if total < 150 {
		t.Errorf("only %d golden cases; keep at least 150", total)
	}
}

func goldenFiles(tb testing.TB) []string {
	files, err := filepath.Glob(filepath.Join("testdata", "*.txt"))
	if err != nil || len(files) == 0 {
		tb.Fatalf("no golden files: %v", err)
	}
	return files
}

// fakeSequences draws 1001, 1002, ... from every sequence, afresh for each
// golden case.
type fakeSequences map[string]int64

func (f fakeSequences) Next(seq string, n int) ([]int64, error) {
	out := make([]int64, n)
	for i := range out {
		if f[seq] == 0 {
			f[seq] = 1000
		}
		f[seq]++
		out[i] = f[seq]
	}
	return out, nil
}

func runCase(t *testing.T, c *goldenCase) string {
	p := testPlanner(t)
	seqs := fakeSequences{}
	var b strings.Builder
	if c.simple {
		bounds, err := p.PlanSimple(c.sql)
		for i, bd := range bounds {
			sql := bd.SQL
			if sql == "" {
				sql = "(empty)"
			}
			fmt.Fprintf(&b, "statement %d: %s\n", i+1, sql)
			if bd.Plan.SQL != bd.SQL {
				fmt.Fprintf(&b, "  shape: %s\n", bd.Plan.SQL)
			}
			if bd.Params != nil {
				var vals []string
				for _, p := range bd.Params {
					vals = append(vals, string(p.Value))
				}
				fmt.Fprintf(&b, "  lifted: %s\n", strings.Join(vals, " | "))
			}
			describePlan(&b, bd.Plan, "  ")
			for _, row := range bd.Explain() {
				fmt.Fprintf(&b, "  %s\n", row)
			}
			ts, err := bd.TargetsWith(seqs)
			describeTargets(&b, ts, err, "  ")
		}
		if err != nil {
			describeError(&b, err, "")
		}
		return strings.TrimRight(b.String(), "\n")
	}
	pl, err := p.Plan(c.sql)
	if err != nil {
		describeError(&b, err, "")
		return strings.TrimRight(b.String(), "\n")
	}
	describePlan(&b, pl, "")
	var params []Param
	if c.params != "" {
		params = parseParams(t, c.params)
	}
	for _, row := range pl.ExplainParams(params) {
		b.WriteString(row + "\n")
	}
	if params != nil || pl.NumParams == 0 {
		ts, err := pl.TargetsWith(params, seqs)
		describeTargets(&b, ts, err, "")
	}
	return strings.TrimRight(b.String(), "\n")
}

func describePlan(b *strings.Builder, pl *Plan, indent string) {
	fmt.Fprintf(b, "%skind=%s mode=%s returns=%v params=%d\n", indent, pl.Kind, pl.Mode(), pl.Returns, pl.NumParams)
	if pl.Tx != nil {
		fmt.Fprintf(b, "%stx: options=%q name=%q chain=%v\n", indent, pl.Tx.Options, pl.Tx.Name, pl.Tx.Chain)
	}
	if pl.Set != nil {
		fmt.Fprintf(b, "%sset: name=%q value=%q local=%v reset_all=%v\n", indent, pl.Set.Name, pl.Set.Value, pl.Set.Local, pl.Set.ResetAll)
	}
	if pl.Kind == Deallocate {
		fmt.Fprintf(b, "%sdeallocate: %q\n", indent, pl.Deallocate)
	}
	if c := pl.Copy; c != nil {
		fmt.Fprintf(b, "%scopy: from=%v stdio=%v writes=%v columns=%q %s\n", indent, c.From, c.Stdio, c.Writes, c.Columns, c.Options.describe())
	}
	if c := pl.Cursor; c != nil {
		fmt.Fprintf(b, "%scursor: name=%q all=%v with_hold=%v scroll=%v binary=%v\n", indent, c.Name, c.All, c.WithHold, c.Scroll, c.Binary)
	}
	if si := pl.Signal; si != nil {
		fmt.Fprintf(b, "%ssignal: func=%s column=%q", indent, si.Func, si.Column)
		if !si.OwnPID() {
			fmt.Fprintf(b, " pid=%s", si.PID)
		}
		if si.Timeout != nil {
			fmt.Fprintf(b, " timeout=%s", *si.Timeout)
		}
		b.WriteString("\n")
	}
	if pr := pl.Prepared; pr != nil {
		fmt.Fprintf(b, "%sprepared: name=%q\n", indent, pr.Name)
		if pr.ParamTypes != nil {
			fmt.Fprintf(b, "%s  types: %q oids: %v\n", indent, pr.ParamTypes, pr.ParamOIDs)
		}
		if pr.Statement != "" {
			fmt.Fprintf(b, "%s  statement: %s\n", indent, pr.Statement)
		}
		for i, a := range pr.Args {
			v := strconv.Quote(string(a.Value))
			if a.Null {
				v = "NULL"
			}
			fmt.Fprintf(b, "%s  arg %d: %s (oid %d)\n", indent, i+1, v, a.OID)
		}
		if pl.Inner != nil {
			describePlan(b, pl.Inner, indent+"  inner ")
			for _, row := range pl.Inner.Explain() {
				fmt.Fprintf(b, "%s  inner %s\n", indent, row)
			}
		}
	}
}

func describeTargets(b *strings.Builder, ts []Target, err error, indent string) {
	if err != nil {
		describeError(b, err, indent+"targets ")
		return
	}
	if len(ts) == 0 {
		fmt.Fprintf(b, "%stargets: none\n", indent)
		return
	}
	fmt.Fprintf(b, "%stargets:\n", indent)
	for _, t := range ts {
		fmt.Fprintf(b, "%s  %s %v\n", indent, t.Cluster, t.Shards)
		if t.SQL != "" {
			fmt.Fprintf(b, "%s    sql: %s\n", indent, t.SQL)
		}
		if t.Params != nil {
			fmt.Fprintf(b, "%s    params: %v\n", indent, t.Params)
		}
		if t.Rows != nil {
			fmt.Fprintf(b, "%s    rows: %v\n", indent, t.Rows)
		}
		for _, e := range t.Each {
			fmt.Fprintf(b, "%s    each row %v: %s\n", indent, e.Rows, e.SQL)
			if e.Params != nil {
				fmt.Fprintf(b, "%s      params: %v\n", indent, e.Params)
			}
		}
	}
}

func describeError(b *strings.Builder, err error, prefix string) {
	e, ok := sqlerr.As(err)
	if !ok {
		fmt.Fprintf(b, "%serror (no SQLSTATE): %v\n", prefix, err)
		return
	}
	fmt.Fprintf(b, "%serror %s: %s\n", prefix, e.Code, e.Message)
	if e.Detail != "" {
		fmt.Fprintf(b, "%s  detail: %s\n", prefix, e.Detail)
	}
	if e.Hint != "" {
		fmt.Fprintf(b, "%s  hint: %s\n", prefix, e.Hint)
	}
}

// parseParams reads "5 | abc | NULL | int8:-3 | uuid:...".
func parseParams(t *testing.T, line string) []Param {
	var out []Param
	for _, f := range strings.Split(line, "|") {
		f = strings.TrimSpace(f)
		kind, val, typed := strings.Cut(f, ":")
		switch {
		case f == "NULL":
			out = append(out, Param{Null: true})
		case typed && (kind == "int2" || kind == "int4" || kind == "int8"):
			n, err := strconv.ParseInt(val, 10, 64)
			if err != nil {
				t.Fatalf("bad param %q", f)
			}
			p := Param{Binary: true}
			switch kind {
			case "int2":
				p.OID, p.Value = oidInt2, binary.BigEndian.AppendUint16(nil, uint16(n))
			case "int4":
				p.OID, p.Value = oidInt4, binary.BigEndian.AppendUint32(nil, uint32(n))
			default:
				p.OID, p.Value = oidInt8, binary.BigEndian.AppendUint64(nil, uint64(n))
			}
			out = append(out, p)
		case typed && kind == "uuid":
			u, err := keyexpr.ParseUUID(val)
			if err != nil {
				t.Fatalf("bad param %q", f)
			}
			out = append(out, Param{Binary: true, OID: oidUUID, Value: u[:]})
		case typed && kind == "text":
			out = append(out, Param{Binary: true, OID: oidText, Value: []byte(val)})
		case typed && kind == "int8[]":
			// one-dimensional binary int8 array: ndim, flags, elem OID, dim, lbound, elements
			var b []byte
			elems := strings.Split(val, ",")
			b = binary.BigEndian.AppendUint32(b, 1)
			b = binary.BigEndian.AppendUint32(b, 0)
			b = binary.BigEndian.AppendUint32(b, oidInt8)
			b = binary.BigEndian.AppendUint32(b, uint32(len(elems)))
			b = binary.BigEndian.AppendUint32(b, 1)
			for _, e := range elems {
				n, err := strconv.ParseInt(e, 10, 64)
				if err != nil {
					t.Fatalf("bad param %q", f)
				}
				b = binary.BigEndian.AppendUint32(b, 8)
				b = binary.BigEndian.AppendUint64(b, uint64(n))
			}
			out = append(out, Param{Binary: true, OID: 1016, Value: b})
		case typed && kind == "float8":
			out = append(out, Param{Binary: true, OID: 701, Value: make([]byte, 8)})
		case typed && strings.HasPrefix(kind, "@"):
			// text format with a declared type: @1700:7.5
			oid, err := strconv.ParseUint(kind[1:], 10, 32)
			if err != nil {
				t.Fatalf("bad param %q", f)
			}
			out = append(out, Param{Value: []byte(val), OID: uint32(oid)})
		default:
			out = append(out, Param{Value: []byte(f)})
		}
	}
	return out
}

func readGolden(file string) ([]goldenCase, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var cases []goldenCase
	var cur *goldenCase
	inExpected := false
	var sql, expected []string
	flush := func() {
		if cur == nil {
			return
		}
		cur.sql = strings.TrimSpace(strings.Join(sql, "\n"))
		cur.expected = strings.TrimRight(strings.Join(expected, "\n"), "\n ")
		cases = append(cases, *cur)
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "== "):
			flush()
			name := strings.TrimPrefix(line, "== ")
			cur = &goldenCase{}
			if n, ok := strings.CutSuffix(name, " [simple]"); ok {
				name, cur.simple = n, true
			}
			cur.name = name
			sql, expected, inExpected = nil, nil, false
		case cur == nil:
			// file header comments
		case line == "----" && !inExpected:
			inExpected = true
		case inExpected:
			expected = append(expected, line)
		case strings.HasPrefix(line, "-- params: "):
			cur.params = strings.TrimPrefix(line, "-- params: ")
		default:
			sql = append(sql, line)
		}
	}
	flush()
	return cases, sc.Err()
}

// writeGolden rewrites a golden file, keeping its header comment. The new
// text is written next to the system's temporary files and then copied,
// so an interrupted run never leaves stray files in the repository.
func writeGolden(file string, cases []goldenCase) error {
	old, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var b strings.Builder
	for _, line := range strings.Split(string(old), "\n") {
		if strings.HasPrefix(line, "== ") {
			break
		}
		b.WriteString(line + "\n")
	}
	for _, c := range cases {
		name := c.name
		if c.simple {
			name += " [simple]"
		}
		fmt.Fprintf(&b, "== %s\n%s\n", name, c.sql)
		if c.params != "" {
			fmt.Fprintf(&b, "-- params: %s\n", c.params)
		}
		fmt.Fprintf(&b, "----\n%s\n\n", c.expected)
	}
	tmp, err := os.CreateTemp("", "planner-golden-*.txt")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(strings.TrimRight(b.String(), "\n") + "\n"); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	data, err := os.ReadFile(tmp.Name())
	if err != nil {
		return err
	}
	return os.WriteFile(file, data, 0o644)
}
