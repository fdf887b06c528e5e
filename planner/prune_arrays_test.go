package planner

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgproto3"
)

// explainCounts reads EXPLAIN's "pg0: N of M values" lines for lists of n.
func explainCounts(rows []string, n int) map[string]int {
	per := map[string]int{}
	for _, r := range rows {
		var cl string
		var got, of int
		if _, err := fmt.Sscanf(strings.TrimSpace(r), "%s %d of %d values", &cl, &got, &of); err == nil && of == n {
			per[strings.TrimSuffix(cl, ":")] = got
		}
	}
	return per
}

// binaryInt8Array is array_send of an int8[] of vals.
func binaryInt8Array(vals []int64) []byte {
	b := make([]byte, 20)
	binary.BigEndian.PutUint32(b, 1)
	binary.BigEndian.PutUint32(b[8:], oidInt8)
	binary.BigEndian.PutUint32(b[12:], uint32(len(vals)))
	binary.BigEndian.PutUint32(b[16:], 1)
	for _, v := range vals {
		b = binary.BigEndian.AppendUint32(b, 8)
		b = binary.BigEndian.AppendUint64(b, uint64(v))
	}
	return b
}

// A 10,000-element key = ANY(array) — a literal, a cast literal, a text
// or a binary parameter — sends each cluster an array of only its own
// elements (SELECT, UPDATE, DELETE; a merged SELECT too), as many as
// EXPLAIN (ROUTE) says, every element exactly once in all.
func TestAnyArrayCutPerCluster(t *testing.T) {
	p := testPlanner(t)
	const n = 10000
	vals := make([]int64, n)
	texts := make([]string, n)
	for i := range vals {
		vals[i] = int64(i + 1)
		texts[i] = strconv.Itoa(i + 1)
	}
	lit := "'{" + strings.Join(texts, ",") + "}'"
	textParam := []Param{{Value: []byte("{" + strings.Join(texts, ",") + "}"), OID: 1016}}
	binParam := []Param{{Value: binaryInt8Array(vals), Binary: true, OID: 1016}}
	for _, c := range []struct {
		name, sql string
		params    []Param
	}{
		{"literal", "SELECT name FROM customers WHERE id = ANY(" + lit + ")", nil},
		{"cast literal", "SELECT name FROM customers WHERE id = ANY(" + lit + "::bigint[])", nil},
		{"ordered", "SELECT name FROM customers WHERE id = ANY(" + lit + "::bigint[]) ORDER BY name", nil},
		{"UPDATE literal", "UPDATE customers SET name = 'x' WHERE id = ANY(" + lit + ")", nil},
		{"DELETE literal", "DELETE FROM customers WHERE id = ANY(" + lit + "::int8[])", nil},
		{"text $1", "SELECT name FROM customers WHERE id = ANY($1)", textParam},
		{"binary $1", "SELECT name FROM customers WHERE id = ANY($1)", binParam},
		{"ordered $1", "SELECT name FROM customers WHERE id = ANY($1) ORDER BY name", binParam},
		{"UPDATE $1", "UPDATE customers SET name = 'x' WHERE id = ANY($1)", binParam},
		{"DELETE $1", "DELETE FROM customers WHERE id = ANY($1::bigint[])", textParam},
	} {
		pl, err := p.Plan(c.sql)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		per := explainCounts(pl.ExplainParams(c.params), n)
		ts, err := pl.Targets(c.params)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if len(ts) != 2 {
			t.Fatalf("%s: %d targets, want both clusters", c.name, len(ts))
		}
		seen := map[int64]bool{}
		for _, tg := range ts {
			var got []int64
			switch {
			case c.params == nil:
				arr := tg.SQL[strings.Index(tg.SQL, "ANY('")+5:]
				arr = arr[:strings.IndexByte(arr, '\'')]
				got = textInts(t, arr)
			case tg.Arg == nil || tg.SQL != "":
				t.Fatalf("%s: %s gets %q and parameter %v", c.name, tg.Cluster, tg.SQL, tg.Arg)
			case c.params[0].Binary:
				sv, err := parseArrayBinary(tg.Arg.Value, 1)
				if err != nil {
					t.Fatal(err)
				}
				for _, v := range sv {
					got = append(got, v.i)
				}
			default:
				got = textInts(t, string(tg.Arg.Value))
			}
			if len(got) == 0 || len(got) == n || len(got) != per[tg.Cluster] {
				t.Errorf("%s: %s gets %d of the %d elements, EXPLAIN says %d", c.name, tg.Cluster, len(got), n, per[tg.Cluster])
			}
			for _, v := range got {
				s, err := shardFor(firstRoute(pl.Root).Group, KeyRef{Columns: []ColumnValue{{Column: "customer_id", Value: ValueRef{Literal: strconv.FormatInt(v, 10)}}}}, nil)
				if err != nil || s.Cluster != tg.Cluster || seen[v] {
					t.Fatalf("%s: %d sent to %s (seen %v, %v)", c.name, v, tg.Cluster, seen[v], err)
				}
				seen[v] = true
			}
		}
		if len(seen) != n {
			t.Errorf("%s: %d elements sent in all, want %d", c.name, len(seen), n)
		}
	}
}

func textInts(t *testing.T, arr string) []int64 {
	t.Helper()
	els, err := arrayTexts(arr)
	if err != nil {
		t.Fatalf("%q: %v", arr, err)
	}
	out := make([]int64, len(els))
	for i, e := range els {
		if out[i], err = strconv.ParseInt(e, 10, 64); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// firstRoute is the first Route under pr.
func firstRoute(pr Primitive) *Route {
	if r, ok := pr.(*Route); ok {
		return r
	}
	for _, in := range pr.Inputs() {
		if r := firstRoute(in); r != nil {
			return r
		}
	}
	return nil
}

// Only key = ANY(array) is cut: <> ALL, != ANY, NOT, and an ANY in an OR
// go whole (an ANY in an OR failed planning on main: "no value for
// column"). NULL elements go nowhere; text elements keep their text.
func TestAnyArrayCutOnlyWhenExact(t *testing.T) {
	p := testPlanner(t)
	for sql, want := range map[string]string{
		"SELECT * FROM customers WHERE id = ANY('{1,2,3,4}')":                     `{"3"}|{"1","2","4"}`,
		"SELECT * FROM customers WHERE id = ANY('{1,2,NULL,3,4}') AND id > 0":     `{"3"}|{"1","2","4"}`,
		"SELECT * FROM customers WHERE id = ANY('{{1,2},{3,4}}')":                 "{{1,2},{3,4}}|{{1,2},{3,4}}",
		"SELECT * FROM customers WHERE id <> ALL('{1,2,3,4}')":                    "",
		"SELECT * FROM customers WHERE id != ANY('{1,2,3,4}')":                    "",
		"SELECT * FROM customers WHERE NOT (id = ANY('{1,2,3,4}'))":               "",
		"SELECT * FROM customers WHERE id = ANY('{1,2,3,4}') OR id = 7":           "",
		`SELECT * FROM products WHERE lower(sku) = ANY('{"a,b","c''d", x y ,q}')`: `{"x y","q"}|{"a,b","c'd"}`,
	} {
		pl, err := p.Plan(sql)
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		ts, err := pl.Targets(nil)
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		var got []string
		for _, tg := range ts {
			if tg.SQL == "" {
				continue
			}
			arr := tg.SQL[strings.Index(tg.SQL, "ANY('")+5:]
			got = append(got, strings.ReplaceAll(arr[:strings.Index(arr, "')")], "''", "'"))
		}
		if g := strings.Join(got, "|"); g != want {
			t.Errorf("%s: cut to %s, want %s", sql, g, want)
		}
	}
}

// A parameter is cut only when the statement reads it nowhere else.
func TestAnyParamCutOnlyWhenUsedOnce(t *testing.T) {
	p := testPlanner(t)
	ps := []Param{{Value: []byte("{1,2,3,4}"), OID: 1016}}
	for sql, cut := range map[string]bool{
		"SELECT id FROM customers WHERE id = ANY($1)":                               true,
		"SELECT cardinality($1::bigint[]) FROM customers WHERE id = ANY($1)":        false,
		"SELECT id FROM customers WHERE id = ANY($1) AND 3 = ANY($1)":               false,
		"SELECT id FROM customers WHERE id = ANY($1) ORDER BY array_length($1, 1)":  false,
		"UPDATE customers SET name = array_to_string($1, ',') WHERE id = ANY($1)":   false,
		"SELECT id FROM customers WHERE id = ANY($1) AND id = ANY('{1,2,3,4}')":     true,
		"SELECT id FROM customers WHERE id = ANY($1) ORDER BY name":                 true,
		"SELECT count(*) FROM customers WHERE id = ANY($1)":                         true,
		"DELETE FROM customers WHERE id = ANY($1) RETURNING cardinality($1::int[])": false,
	} {
		pl, err := p.Plan(sql)
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		ts, err := pl.Targets(ps)
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		got := len(ts) > 1
		for _, tg := range ts {
			got = got && tg.Arg != nil
		}
		if got != cut {
			t.Errorf("%s: cut %v, want %v", sql, got, cut)
		}
	}
}

// Target.Bind replaces the parameter the cut array stands for.
func TestTargetBindArg(t *testing.T) {
	m := &pgproto3.Bind{Parameters: [][]byte{[]byte("a"), []byte("{1,2}"), []byte("c")}, ParameterFormatCodes: []int16{0}}
	tg := Target{Arg: &TargetArg{Index: 1, Value: []byte("{2}")}}
	b := tg.Bind(m, "s")
	if string(b.Parameters[1]) != "{2}" || string(b.Parameters[0]) != "a" || string(m.Parameters[1]) != "{1,2}" {
		t.Errorf("bound %q (client's %q)", b.Parameters, m.Parameters)
	}
	tg.Params = []int{1, 2}
	b = tg.Bind(m, "s")
	if len(b.Parameters) != 2 || string(b.Parameters[0]) != "{2}" || string(b.Parameters[1]) != "c" {
		t.Errorf("bound %q", b.Parameters)
	}
}

// The text form's elements read as array_in reads them: an unquoted
// backslash escapes the next character (a\\b is a\b, not ab), escaped
// white space stays, a quoted or escaped NULL is text.
func TestArrayTextElements(t *testing.T) {
	els, err := arrayElements(`{a\\b, x\ y , "q\"r",NULL,"NULL",\NULL, \ z\ }`)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`a\b`, `x y`, `q"r`, "<null>", "NULL", "NULL", ` z `}
	var got []string
	for _, e := range els {
		s, ok := e.AsText()
		if e.IsNull() || !ok {
			s = "<null>"
		}
		got = append(got, s)
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("elements %q, want %q", got, want)
	}
}

// What Postgres checks and a cut would hide goes whole: nested arrays
// (their extents must match), a dimension decoration, a binary array of
// two dimensions or with bytes after its elements.
func TestAnyArrayWholeWhenInDoubt(t *testing.T) {
	p := testPlanner(t)
	pl, err := p.Plan("SELECT id FROM customers WHERE id = ANY($1)")
	if err != nil {
		t.Fatal(err)
	}
	twoDim := binaryInt8Array([]int64{1, 2, 3, 4})
	binary.BigEndian.PutUint32(twoDim, 2)
	twoDim = append(twoDim[:20], append([]byte{0, 0, 0, 2, 0, 0, 0, 1}, twoDim[20:]...)...)
	binary.BigEndian.PutUint32(twoDim[12:], 2)
	for name, c := range map[string]struct {
		p   Param
		cut bool
	}{
		"flat text":   {Param{Value: []byte(`{1,2,3,4}`)}, true},
		"quoted":      {Param{Value: []byte(` {1,2,"3", 4}`)}, true},
		"nested":      {Param{Value: []byte(`{{1,2},{3,4}}`)}, false},
		"decorated":   {Param{Value: []byte(`[1:4]={1,2,3,4}`)}, false},
		"flat binary": {Param{Value: binaryInt8Array([]int64{1, 2, 3, 4}), Binary: true}, true},
		"two dims":    {Param{Value: twoDim, Binary: true}, false},
		"trailing":    {Param{Value: append(binaryInt8Array([]int64{1, 2, 3, 4}), 0), Binary: true}, false},
	} {
		ts, err := pl.Targets([]Param{c.p})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(ts) != 2 {
			t.Fatalf("%s: %d targets", name, len(ts))
		}
		for _, tg := range ts {
			if (tg.Arg != nil) != c.cut || tg.SQL != "" {
				t.Errorf("%s: %s gets %q, parameter %v; want cut %v", name, tg.Cluster, tg.SQL, tg.Arg, c.cut)
			}
		}
	}
}
