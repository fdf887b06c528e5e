package planner

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/shardgate/shardgate/sqlerr"
)

// TestSimpleMatchesVerbatim plans every golden statement both ways: as an
// extended-protocol statement with its literals inline, and through
// PlanSimple's normalized shapes. Both must send the same text to the same
// clusters, or fail with the same SQLSTATE: normalizing is a cache
// optimisation and must never change routing.
func TestSimpleMatchesVerbatim(t *testing.T) {
	p := testPlanner(t)
	checked := 0
	for _, c := range loadAllGolden(t) {
		if c.simple || c.params != "" || strings.Contains(c.sql, "$") || strings.Contains(c.sql, ";") {
			continue
		}
		want, wantErr := verbatimTargets(p, c.sql)
		got, gotErr := simpleTargets(p, c.sql)
		if sqlerr.Code(wantErr) != sqlerr.Code(gotErr) {
			t.Errorf("%s: verbatim error %v, simple error %v", c.name, wantErr, gotErr)
			continue
		}
		if !reflect.DeepEqual(want, got) {
			t.Errorf("%s:\nverbatim %v\nsimple   %v", c.name, want, got)
		}
		checked++
	}
	if checked < 100 {
		t.Errorf("only %d statements compared", checked)
	}
}

func verbatimTargets(p *Planner, sql string) ([]string, error) {
	pl, err := p.Plan(sql)
	if err != nil {
		return nil, err
	}
	ts, err := pl.Targets(nil)
	if err != nil {
		return nil, err
	}
	return targetStrings(ts, withoutLeadingComments(sql)), nil
}

// withoutLeadingComments drops the white space and comments before a
// statement's first token, as PlanSimple's statement spans do.
func withoutLeadingComments(sql string) string {
	l := lexer{src: sql}
	for {
		t := l.next()
		if t.kind != tokSpace && t.kind != tokComment {
			return strings.TrimSpace(sql[t.start:])
		}
	}
}

func simpleTargets(p *Planner, sql string) ([]string, error) {
	bs, err := p.PlanSimple(sql)
	if err != nil {
		return nil, err
	}
	if len(bs) != 1 {
		return nil, fmt.Errorf("%d statements", len(bs))
	}
	ts, err := bs[0].Targets()
	if err != nil {
		return nil, err
	}
	return targetStrings(ts, ""), nil
}

func targetStrings(ts []Target, sql string) []string {
	var out []string
	for _, t := range ts {
		s := t.SQL
		if s == "" {
			s = sql
		}
		out = append(out, fmt.Sprintf("%s %v %s", t.Cluster, t.Shards, s))
	}
	return out
}

func TestPlanCacheSharesPlans(t *testing.T) {
	p := testPlanner(t)
	a, err := p.Plan("SELECT * FROM orders WHERE customer_id = $1 AND status = 'cache-test'")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := p.Plan("SELECT * FROM orders WHERE customer_id = $1 AND status = 'cache-test'")
	if a != b {
		t.Error("the same text planned twice gave two plans")
	}
	x, _ := p.PlanSimple("SELECT * FROM orders WHERE customer_id = 1 AND status = 'cache'")
	y, _ := p.PlanSimple("SELECT * FROM orders WHERE customer_id = 3 AND status = 'other'")
	if x[0].Plan != y[0].Plan {
		t.Error("two literals of one shape gave two plans")
	}
	if x[0].SQL == y[0].SQL || string(y[0].Params[0].Value) != "3" {
		t.Errorf("bound statement lost its literals: %q %q", y[0].SQL, y[0].Params[0].Value)
	}
}

func TestPlanCacheEviction(t *testing.T) {
	c := newPlanCache(3, 1<<20)
	pl := &Plan{}
	for i := 0; i < 5; i++ {
		c.put(fmt.Sprint(i), pl, nil)
	}
	if c.len() != 3 {
		t.Fatalf("cache holds %d entries, want 3", c.len())
	}
	if _, _, ok := c.get("0"); ok {
		t.Error("oldest entry survived")
	}
	c.get("2") // now most recent
	c.put("5", pl, nil)
	if _, _, ok := c.get("2"); !ok {
		t.Error("recently used entry was evicted")
	}
	if _, _, ok := c.get("3"); ok {
		t.Error("least recently used entry survived")
	}
	big := newPlanCache(100, 4096)
	big.put(strings.Repeat("x", 2000), pl, nil)
	if big.len() != 0 {
		t.Error("an entry larger than a quarter of the byte bound was cached")
	}
}

func TestPlannerConcurrent(t *testing.T) {
	p := testPlanner(t)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				sql := fmt.Sprintf("SELECT * FROM orders WHERE customer_id = %d AND id = %d", i, g)
				bs, err := p.PlanSimple(sql)
				if err != nil {
					t.Error(err)
					return
				}
				if _, err := bs[0].Targets(); err != nil {
					t.Error(err)
					return
				}
			}
		}(g)
	}
	wg.Wait()
}

func TestInsertSplitParams(t *testing.T) {
	p := testPlanner(t)
	pl, err := p.Plan("INSERT INTO items (customer_id, total, note) VALUES ($3, $1, 'a'), ($4, $2, $5) RETURNING $5")
	if err != nil {
		t.Fatal(err)
	}
	params := []Param{{Value: []byte("10")}, {Value: []byte("20")}, {Value: []byte("1")}, {Value: []byte("3")}, {Value: []byte("n")}}
	ts, err := pl.Targets(params)
	if err != nil {
		t.Fatal(err)
	}
	want := []Target{
		{Cluster: "pg0", Shards: []string{"-80"}, SQL: "INSERT INTO items (customer_id, total, note) VALUES ($2, $1, $3) RETURNING $3", Params: []int{1, 3, 4}, Rows: []int{1}},
		{Cluster: "pg1", Shards: []string{"80-"}, SQL: "INSERT INTO items (customer_id, total, note) VALUES ($2, $1, 'a') RETURNING $3", Params: []int{0, 2, 4}, Rows: []int{0}},
	}
	if !reflect.DeepEqual(ts, want) {
		t.Errorf("targets\n got %+v\nwant %+v", ts, want)
	}
}

func TestBinaryParams(t *testing.T) {
	cases := []struct {
		p    Param
		want string
		code string
	}{
		{Param{Binary: true, OID: oidInt2, Value: []byte{0xff, 0xfe}}, "-2", ""},
		{Param{Binary: true, OID: oidInt4, Value: []byte{0, 0, 1, 0}}, "256", ""},
		{Param{Binary: true, OID: oidInt8, Value: []byte{0x80, 0, 0, 0, 0, 0, 0, 0}}, "-9223372036854775808", ""},
		{Param{Binary: true, OID: oidUUID, Value: make([]byte, 16)}, "'00000000-0000-0000-0000-000000000000'", ""},
		{Param{Binary: true, OID: oidText, Value: []byte("it's")}, "'it''s'", ""},
		{Param{Binary: true, OID: oidVarchar, Value: []byte("v")}, "'v'", ""},
		{Param{Value: []byte("42"), OID: oidInt8}, "42", ""},
		{Param{Value: []byte("42")}, "'42'", ""},
		{Param{Value: []byte("7.50"), OID: oidNumeric}, "7.50", ""},
		{Param{Value: []byte(" 1e3 "), OID: oidFloat8}, "1000", ""},
		{Param{Value: []byte("7.0"), OID: oidInt8}, "", sqlerr.InvalidTextRepresentation},
		{Param{Binary: true, OID: oidFloat8, Value: []byte{0x40, 0x1e, 0, 0, 0, 0, 0, 0}}, "7.5", ""},
		{Param{Binary: true, OID: oidFloat4, Value: []byte{0x40, 0xf0, 0, 0}}, "7.5", ""},
		// 7.50: two base-10000 digits 7 and 5000, weight 0, scale 2.
		{Param{Binary: true, OID: oidNumeric, Value: []byte{0, 2, 0, 0, 0, 0, 0, 2, 0, 7, 0x13, 0x88}}, "7.50", ""},
		// -120000: one digit 12, weight 1.
		{Param{Binary: true, OID: oidNumeric, Value: []byte{0, 1, 0, 1, 0x40, 0, 0, 0, 0, 12}}, "-120000", ""},
		{Param{Binary: true, OID: oidNumeric, Value: []byte{0, 0, 0, 0, 0xC0, 0, 0, 0}}, "NaN", ""},
		// 7.5 sent with display scale 0: numeric_recv truncates to 7.
		{Param{Binary: true, OID: oidNumeric, Value: []byte{0, 2, 0, 0, 0, 0, 0, 0, 0, 7, 0x13, 0x88}}, "7", ""},
		// A digit far below the point with scale 0 truncates to 0.
		{Param{Binary: true, OID: oidNumeric, Value: []byte{0, 1, 0x80, 0, 0, 0, 0, 0, 0, 1}}, "0", ""},
		{Param{Binary: true, OID: oidNumeric, Value: []byte{0, 0}}, "", sqlerr.ProtocolViolation},
		{Param{Null: true}, "NULL", ""},
		{Param{Binary: true, OID: oidInt4, Value: []byte{1, 2}}, "", sqlerr.ProtocolViolation},
		{Param{Binary: true, OID: 1186, Value: make([]byte, 16)}, "", sqlerr.FeatureNotSupported},
	}
	for _, c := range cases {
		v, err := paramSQLValue([]Param{c.p}, 1)
		if sqlerr.Code(err) != c.code {
			t.Errorf("%+v: error %v, want %s", c.p, err, c.code)
			continue
		}
		if err == nil && v.String() != c.want {
			t.Errorf("%+v: %s, want %s", c.p, v, c.want)
		}
	}
	if _, err := paramSQLValue(nil, 1); sqlerr.Code(err) != sqlerr.ProtocolViolation {
		t.Errorf("missing parameter: %v", err)
	}
}

func TestPrimitivesListInputs(t *testing.T) {
	p := testPlanner(t)
	for _, sql := range []string{"SELECT 1", "BEGIN", "SET a = 1", "INSERT INTO orders (customer_id) VALUES (1), (3)", "DEALLOCATE ALL"} {
		pl, err := p.Plan(sql)
		if err != nil {
			t.Fatal(err)
		}
		if pl.Root.Name() == "" || pl.Root.Inputs() != nil {
			t.Errorf("%s: %s has inputs %v", sql, pl.Root.Name(), pl.Root.Inputs())
		}
	}
}

func TestDescribeTarget(t *testing.T) {
	p := testPlanner(t)
	cases := map[string]string{
		"SELECT * FROM orders WHERE customer_id = $1":      "pg0",
		"SELECT * FROM events WHERE tenant_id = $1":        "pg1",
		"INSERT INTO stores (region_id) VALUES ($1), ($2)": "pg2",
		"SELECT 1":                 "pg0",
		"SET search_path = public": "pg0",
		"BEGIN":                    "",
		"EXPLAIN (ROUTE) SELECT * FROM orders WHERE customer_id = 1": "",
	}
	for sql, want := range cases {
		pl, err := p.Plan(sql)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := pl.DescribeTarget()
		if got.Cluster != want || ok != (want != "") {
			t.Errorf("%s: %q %v, want %q", sql, got.Cluster, ok, want)
		}
	}
}

func TestParseArrayText(t *testing.T) {
	cases := []struct {
		in   string
		want string // elements joined by |, NULL as NULL
		bad  bool
	}{
		{"{1,2,3}", "'1'|'2'|'3'", false},
		{" { 1 , 2 } ", "'1'|'2'", false},
		{"{}", "", false},
		{`{"a b","c\"d",NULL,"NULL"}`, `'a b'|'c"d'|NULL|'NULL'`, false},
		{"{{1,2},{3,4}}", "'1'|'2'|'3'|'4'", false},
		{"[1:2]={7,8}", "'7'|'8'", false},
		{"1,2", "", true},
		{"{1,2", "", true},
		{`{"open}`, "", true},
		{"{1}x", "", true},
	}
	for _, c := range cases {
		vals, err := arrayElements(c.in)
		if (err != nil) != c.bad {
			t.Errorf("%q: error %v", c.in, err)
			continue
		}
		var parts []string
		for _, v := range vals {
			parts = append(parts, v.String())
		}
		if got := strings.Join(parts, "|"); !c.bad && got != c.want {
			t.Errorf("%q: %s, want %s", c.in, got, c.want)
		}
	}
}

// TestExplainRouteAnalyzeRefused: EXPLAIN (ROUTE, ANALYZE) is refused with
// 0A000 rather than answered with the plan alone, not run (it was: the
// ANALYZE was ignored). ANALYZE false is plain EXPLAIN (ROUTE).
func TestExplainRouteAnalyzeRefused(t *testing.T) {
	p := testPlanner(t)
	for _, sql := range []string{
		"EXPLAIN (ROUTE, ANALYZE) SELECT * FROM orders WHERE customer_id = 1",
		"EXPLAIN (ANALYZE on, ROUTE) SELECT count(*) FROM orders",
		"explain (route, analyze true) INSERT INTO orders (customer_id) VALUES (1)",
	} {
		if _, err := p.Plan(sql); sqlerr.Code(err) != sqlerr.FeatureNotSupported {
			t.Errorf("%s: %v, want 0A000", sql, err)
		}
	}
	pl, err := p.Plan("EXPLAIN (ROUTE, ANALYZE false) SELECT * FROM orders WHERE customer_id = 1")
	if err != nil || pl.Kind != ExplainRoute {
		t.Errorf("ANALYZE false: %v, %v", pl, err)
	}
}
