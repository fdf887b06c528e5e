package planner

import (
	"path/filepath"
	"testing"
)

func TestPreparedText(t *testing.T) {
	cases := []struct {
		sql, want string
		ok        bool
	}{
		{"PREPARE p AS SELECT 1", "SELECT 1", true},
		{"PREPARE data (int, text) AS SELECT $1 ;  ", "SELECT $1", true},
		{"prepare \"p q\" (numeric(10,2)) as /* c */ SELECT ';' -- x", "SELECT ';'", true},
		{"PREPARE p AS INSERT INTO t (a) VALUES ('é'), ($$)$$); /* end */", "INSERT INTO t (a) VALUES ('é'), ($$)$$)", true},
		{"PREPARE p AS", "", false},
		{"PREPARE p (int AS SELECT 1", "", false},
		{"SELECT 1", "", false},
		{"PREPARE p AS SELECT 'unterminated", "", false},
	}
	for _, c := range cases {
		got, ok := preparedText(c.sql)
		if got != c.want || ok != c.ok {
			t.Errorf("preparedText(%q) = %q, %v; want %q, %v", c.sql, got, ok, c.want, c.ok)
		}
	}
}

func TestExplainedText(t *testing.T) {
	cases := []struct {
		sql, want string
	}{
		{"EXPLAIN SELECT 1", "SELECT 1"},
		{"explain analyze verbose SELECT 1", "SELECT 1"},
		{"EXPLAIN /* é */ (ROUTE, FORMAT 'x)') (SELECT 1)", "(SELECT 1)"},
		{"EXPLAIN (ROUTE) -- c\nCOPY t FROM STDIN", "COPY t FROM STDIN"},
		{"SELECT 1", "SELECT 1"},
		{"EXPLAIN (ROUTE", "EXPLAIN (ROUTE"},
		{"EXPLAIN (ROUTE)", "EXPLAIN (ROUTE)"},
	}
	for _, c := range cases {
		got, at := explainedText(c.sql)
		if got != c.want || c.sql[at:] != got {
			t.Errorf("explainedText(%q) = %q, %d; want %q", c.sql, got, at, c.want)
		}
	}
}

func TestHasRouteOption(t *testing.T) {
	for sql, want := range map[string]bool{
		"EXPLAIN (ROUTE) ":                  true,
		"EXPLAIN (analyze, /* x */ rOuTe) ": true,
		`EXPLAIN ("route") `:                true,
		`EXPLAIN ("ROUTE") `:                false,
		"EXPLAIN (FORMAT 'route') ":         false,
		"EXPLAIN route ":                    false,
	} {
		if got := hasRouteOption(sql); got != want {
			t.Errorf("hasRouteOption(%q) = %v, want %v", sql, got, want)
		}
	}
}

// TestScanCuts checks the token boundaries the rewrites take from the
// scanner, at the byte offsets the parser reports (multibyte text first).
func TestScanCuts(t *testing.T) {
	const sql = "INSERT /* é日本 */ INTO t (a, b[1], /* ) */ \"c)\") VALUES (pg_catalog . nextval ( ')' ), 'ü'), (x + f(1), 2)"
	tree, err := parse(sql)
	if err != nil {
		t.Fatal(err)
	}
	s, err := scanSQL(sql)
	if err != nil {
		t.Fatal(err)
	}
	ins := tree.Stmts[0].Stmt.GetInsertStmt()
	last := int(ins.Cols[2].GetResTarget().Location)
	if got, want := s.columnListEnd(last), len("INSERT /* é日本 */ INTO t (a, b[1], /* ) */ \"c)\""); got != want {
		t.Errorf("columnListEnd = %d, want %d", got, want)
	}
	rows := ins.SelectStmt.GetSelectStmt().ValuesLists
	call := nodeLocation(rows[0].GetList().Items[0])
	if got, want := sql[call:s.callEnd(call)], "pg_catalog . nextval ( ')' )"; got != want {
		t.Errorf("callEnd cut %q, want %q", got, want)
	}
	// x + f(1): the A_Expr's location is its operator, the call's is f.
	plus := nodeLocation(rows[1].GetList().Items[0])
	if end := s.callEnd(plus); end != -1 {
		t.Errorf("callEnd at an operator = %d, want -1", end)
	}
	if end := s.callEnd(plus - 2); end != -1 {
		t.Errorf("callEnd at x of x + f(1) = %d, want -1", end)
	}
	spans, suffix, ok := s.valuesRows(ins.SelectStmt.GetSelectStmt())
	if !ok || len(spans) != 2 || sql[spans[0].start:spans[0].end] != "(pg_catalog . nextval ( ')' ), 'ü')" ||
		sql[spans[1].start:spans[1].end] != "(x + f(1), 2)" || suffix != len(sql) {
		t.Errorf("valuesRows = %v, %d, %v", spans, suffix, ok)
	}
	if _, _, ok := s.valuesRows(nil); ok {
		t.Error("valuesRows without the parsed VALUES list succeeded")
	}
}

// TestRewritesParse checks that every statement the rewrite cases send
// to a cluster is one statement Postgres's parser accepts: a cut in the
// wrong place shows as a syntax error here before it reaches a backend.
func TestRewritesParse(t *testing.T) {
	cases, err := readGolden(filepath.Join("testdata", "rewrite.txt"))
	if err != nil {
		t.Fatal(err)
	}
	p := testPlanner(t)
	for _, c := range cases {
		var ts []Target
		if c.simple {
			bounds, err := p.PlanSimple(c.sql)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			for _, b := range bounds {
				bts, err := b.TargetsWith(fakeSequences{})
				if err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
				ts = append(ts, bts...)
			}
		} else {
			pl, err := p.Plan(c.sql)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			var params []Param
			if c.params != "" {
				params = parseParams(t, c.params)
			}
			if ts, err = pl.TargetsWith(params, fakeSequences{}); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
		}
		for _, tg := range ts {
			for _, sql := range append([]Target{tg}, tg.Each...) {
				if sql.SQL == "" {
					continue
				}
				tree, err := parse(sql.SQL)
				if err != nil || len(tree.Stmts) != 1 {
					t.Errorf("%s: target %q does not parse as one statement: %v", c.name, sql.SQL, err)
				}
			}
		}
	}
}
