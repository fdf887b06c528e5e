package difftest

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// The tests in this file need no PostgreSQL: they check the query file,
// the allow-list, the data generator and the comparison itself.

func TestQueryFile(t *testing.T) {
	queries, err := parseQueries(queriesFile)
	if err != nil {
		t.Fatal(err)
	}
	if len(queries) < 300 {
		t.Errorf("%s has %d queries, want at least 300", queriesFile, len(queries))
	}
	// Every category of issue 4, item 6 is present.
	perCategory := map[string]int{}
	writes := 0
	for _, q := range queries {
		cat, _, _ := strings.Cut(q.ID, ".")
		perCategory[cat]++
		if q.Write {
			writes++
		}
		if q.Order == orderNone && strings.Contains(strings.ToUpper(q.SQL), "LIMIT") && !q.CountOnly && !q.Write &&
			!strings.Contains(q.SQL, "ORDER BY") {
			t.Errorf("%s: LIMIT without ORDER BY picks any rows: mark it countonly", q.ID)
		}
	}
	for _, cat := range []string{"point", "in", "scatter", "order", "limit", "agg", "group", "distinct", "join",
		"sub", "cte", "write", "after", "seq", "ref", "main"} {
		if perCategory[cat] == 0 {
			t.Errorf("no query of category %q", cat)
		}
	}
	if writes < 30 {
		t.Errorf("only %d writes", writes)
	}
	allow, err := parseAllowList(allowListFile)
	if err != nil {
		t.Fatal(err)
	}
	for id := range allow {
		if !slices.ContainsFunc(queries, func(q query) bool { return q.ID == id }) &&
			!slices.ContainsFunc(copySteps(), func(st copyStep) bool { return st.id == id }) {
			t.Errorf("%s names %s, which is neither in %s nor a COPY step", allowListFile, id, queriesFile)
		}
	}
}

func TestParseQueries(t *testing.T) {
	dir := t.TempDir()
	write := func(s string) string {
		p := filepath.Join(dir, "q.sql")
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	qs, err := parseQueries(write(`-- a file comment

-- q: a.one ordered
SELECT 1;
-- q: a.two keys=2,1 ignore=id,x
-- a comment inside
SELECT 2,
       3
-- q: a.three write norehearse countonly args=7,abc,NULL,-1
INSERT INTO t VALUES ($1, $2, $3, $4)
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) != 3 {
		t.Fatalf("got %d queries", len(qs))
	}
	if q := qs[0]; q.ID != "a.one" || q.SQL != "SELECT 1" || q.Order != orderFixed || q.Line != 3 {
		t.Errorf("first: %+v", q)
	}
	if q := qs[1]; q.SQL != "SELECT 2,\n       3" || q.Order != orderKeys || !slices.Equal(q.KeyCols, []int{1, 0}) ||
		!slices.Equal(q.Ignore, []string{"id", "x"}) {
		t.Errorf("second: %+v", q)
	}
	if q := qs[2]; !q.Write || !q.NoRehearse || !q.CountOnly || q.Order != orderNone ||
		!slices.Equal(q.Args, []any{int64(7), "abc", nil, int64(-1)}) {
		t.Errorf("third: %+v", q)
	}
	for _, bad := range []string{
		"SELECT 1\n", // before any header
		"-- q: a.x\nSELECT 1\n-- q: a.x\nSELECT 2\n", // duplicate id
		"-- q: a.x sorted\nSELECT 1\n",               // unknown option
		"-- q: a.x keys=0\nSELECT 1\n",               // columns count from 1
		"-- q: A-x\nSELECT 1\n",                      // bad id
		"-- q: a.x\n-- q: a.y\nSELECT 1\n",           // empty statement
	} {
		if _, err := parseQueries(write(bad)); err == nil {
			t.Errorf("no error for %q", bad)
		}
	}
}

func TestAllowListFormat(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "allow.txt")
	header := "# header\n"
	allow := map[string]string{"a.one": "reason one", "a.two": "reason two", "a.three": "reason one"}
	order := []query{{ID: "a.three"}, {ID: "a.two"}, {ID: "a.one"}}
	text := formatAllowList(header, allow, order)
	want := "# header\n\nreason: reason one\na.three\na.one\n\nreason: reason two\na.two\n"
	if text != want {
		t.Errorf("formatted:\n%s\nwant:\n%s", text, want)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := parseAllowList(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got["a.three"] != "reason one" || got["a.two"] != "reason two" {
		t.Errorf("parsed %v", got)
	}
	for _, bad := range []string{"a.one\n", "reason:\na.one\n", "reason: r\na.one\na.one\n", "reason: r\nnot an id\n"} {
		if err := os.WriteFile(p, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := parseAllowList(p); err == nil {
			t.Errorf("no error for %q", bad)
		}
	}
}

func TestDataIsDeterministic(t *testing.T) {
	a, b := generateData(), generateData()
	if !slices.Equal(a, b) {
		t.Fatal("generateData differs between two calls")
	}
	rows := 0
	for _, s := range a {
		rows += strings.Count(s.SQL, "\n(") + 1
		if !strings.HasPrefix(s.SQL, "INSERT INTO ") {
			t.Fatalf("not an INSERT: %.60s", s.SQL)
		}
	}
	if rows < 3000 {
		t.Errorf("only %d rows", rows)
	}
}

// Comparison.

var (
	int8Field  = field{Name: "id", OID: pgtype.Int8OID, Typmod: -1, Size: 8}
	textField  = field{Name: "name", OID: pgtype.TextOID, Typmod: -1, Size: -1}
	floatField = field{Name: "f", OID: pgtype.Float8OID, Typmod: -1, Size: 8, Format: pgtype.BinaryFormatCode}
)

func textResult(fields []field, rows ...[]string) result {
	r := result{Fields: fields, Tag: "SELECT " + strconv.Itoa(len(rows))}
	for _, row := range rows {
		var cells [][]byte
		for _, v := range row {
			if v == "NULL" {
				cells = append(cells, nil)
			} else {
				cells = append(cells, []byte(v))
			}
		}
		r.Rows = append(r.Rows, cells)
	}
	return r
}

func diffOf(q query, p, o result) []string {
	c := &comparer{m: pgtype.NewMap(), q: &q}
	return c.compare(p, o)
}

func TestCompare(t *testing.T) {
	fs := []field{int8Field, textField}
	a := textResult(fs, []string{"1", "x"}, []string{"2", "y"}, []string{"3", "NULL"})
	b := textResult(fs, []string{"2", "y"}, []string{"3", "NULL"}, []string{"1", "x"})
	if d := diffOf(query{}, a, b); d != nil {
		t.Errorf("multisets in another order differ: %v", d)
	}
	if d := diffOf(query{Order: orderFixed}, a, b); d == nil {
		t.Error("ordered comparison accepted another order")
	}
	// NULL is not the text "NULL", nor the empty string.
	c := textResult(fs, []string{"1", "x"}, []string{"2", "y"}, []string{"3", ""})
	if d := diffOf(query{}, a, c); d == nil {
		t.Error("NULL equals the empty string")
	}
	// keys=2: the key column's sequence must match; ties may swap.
	k1 := textResult(fs, []string{"1", "a"}, []string{"2", "a"}, []string{"3", "b"})
	k2 := textResult(fs, []string{"2", "a"}, []string{"1", "a"}, []string{"3", "b"})
	k3 := textResult(fs, []string{"3", "b"}, []string{"2", "a"}, []string{"1", "a"})
	keys := query{Order: orderKeys, KeyCols: []int{1}}
	if d := diffOf(keys, k1, k2); d != nil {
		t.Errorf("tied rows may come in any order: %v", d)
	}
	if d := diffOf(keys, k1, k3); d == nil {
		t.Error("keys out of order accepted")
	}
	// Ignored columns compare NULL-ness only.
	i1 := textResult(fs, []string{"1000001", "a"})
	i2 := textResult(fs, []string{"1000107", "a"})
	if d := diffOf(query{Ignore: []string{"id"}}, i1, i2); d != nil {
		t.Errorf("ignored column compared: %v", d)
	}
	if d := diffOf(query{Ignore: []string{"id"}}, i1, textResult(fs, []string{"NULL", "a"})); d == nil {
		t.Error("ignored column: NULL on one side accepted")
	}
	// countonly compares the number of rows.
	if d := diffOf(query{CountOnly: true}, a, c); d != nil {
		t.Errorf("countonly compared values: %v", d)
	}
	if d := diffOf(query{CountOnly: true}, a, textResult(fs, []string{"1", "x"})); d == nil {
		t.Error("countonly accepted another row count")
	}
	// Column names and types.
	other := []field{int8Field, {Name: "name", OID: pgtype.VarcharOID, Typmod: -1, Size: -1}}
	if d := diffOf(query{}, a, textResult(other, []string{"1", "x"}, []string{"2", "y"}, []string{"3", "NULL"})); d == nil {
		t.Error("another type OID accepted")
	}
	// A row with more values than columns.
	wide := textResult(fs, []string{"1", "x"})
	wide.Rows[0] = append(wide.Rows[0], []byte("hidden"))
	if d := diffOf(query{}, wide, textResult(fs, []string{"1", "x"})); d == nil {
		t.Error("row wider than its columns accepted")
	}
	// Command tags.
	tagged := a
	tagged.Tag = "INSERT 0 3"
	if d := diffOf(query{}, a, tagged); d == nil {
		t.Error("another command tag accepted")
	}
	// Errors: equal SQLSTATEs match, others do not, and an error never
	// matches an answer.
	e1 := result{Err: &pgconn.PgError{Code: "23505", Message: "duplicate"}}
	e2 := result{Err: &pgconn.PgError{Code: "23505", Message: "duplicate key (shard -40)"}}
	e3 := result{Err: &pgconn.PgError{Code: "22012", Message: "division by zero"}}
	if d := diffOf(query{}, e1, e2); d != nil {
		t.Errorf("same SQLSTATE: %v", d)
	}
	if d := diffOf(query{}, e1, e3); d == nil {
		t.Error("different SQLSTATEs accepted")
	}
	if d := diffOf(query{}, e1, a); d == nil {
		t.Error("error accepted for an answer")
	}
}

func TestCompareBinaryFloats(t *testing.T) {
	bits := func(u uint64) []byte { return binary.BigEndian.AppendUint64(nil, u) }
	f := func(v float64) []byte { return bits(math.Float64bits(v)) }
	one := func(v []byte) result {
		return result{Fields: []field{floatField}, Rows: [][][]byte{{v}}, Tag: "SELECT 1"}
	}
	c := &comparer{m: pgtype.NewMap(), q: &query{}}
	if d := c.compare(one(f(0)), one(f(math.Copysign(0, -1)))); d == nil {
		t.Error("0 and -0 accepted as equal")
	}
	if d := c.compare(one(f(math.Nextafter(0.3, 1))), one(f(0.3))); d == nil {
		t.Error("floats one ulp apart accepted as equal")
	}
	// Two NaNs with different payloads are the same value to a client.
	if d := c.compare(one(bits(0x7ff8000000000001)), one(bits(0x7ff8000000000000))); d != nil {
		t.Errorf("NaN payloads: %v", d)
	}
	if c.recoded != 1 {
		t.Errorf("recoded = %d, want 1", c.recoded)
	}
}

func TestReport(t *testing.T) {
	qs := []query{{ID: "a.one"}, {ID: "a.two"}, {ID: "a.three"}, {ID: "a.four"}}
	outs := []outcome{
		{q: &qs[0], verdict: matched},
		{q: &qs[1], verdict: refusedAllowed},
		{q: &qs[2], verdict: mismatched},
		{q: &qs[3], verdict: matched, stale: true},
	}
	rep := report(outs, map[string]string{"a.two": "not yet", "a.four": "not yet"}, 0, 0)
	for _, want := range []string{"4 queries", "2 matched", "1 refused (allow-listed)", "1 mismatched",
		"a.three (differs)", "remove from allowlist.txt", "a.four", "not yet"} {
		if !strings.Contains(rep, want) {
			t.Errorf("report lacks %q:\n%s", want, rep)
		}
	}
}
