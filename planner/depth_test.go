package planner

import (
	"strings"
	"testing"

	"github.com/shardgate/shardgate/sqlerr"
)

// Statements nested deeper than pg_query can take get Postgres's 54001
// ("stack depth limit exceeded") instead of a parser-internal 42601 or,
// above about 20,000 levels, a crash of the whole process inside
// pg_query's C code. Before the guard, the 100,000-term cases killed the
// test binary with SIGSEGV and the 6,000-term ones reported 42601
// "proto: exceeded maximum recursion depth".
func TestTooDeepIsStackDepthError(t *testing.T) {
	p := testPlanner(t)
	for _, n := range []int{6000, 100000} {
		for name, sql := range map[string]string{
			"plus":      "SELECT 1" + strings.Repeat("+1", n),
			"cast":      "SELECT 1" + strings.Repeat("::int", n),
			"is null":   "SELECT 1" + strings.Repeat(" IS NULL", n),
			"join":      "SELECT 1 FROM t" + strings.Repeat(" JOIN t ON a AND b", n),
			"union":     "SELECT 1, 2 WHERE a AND b" + strings.Repeat(" UNION SELECT 1, 2 WHERE a AND b", 3*n),
			"case plus": "SELECT 1" + strings.Repeat(" + CASE WHEN a THEN 1 ELSE 2 END", n),
			"where":     "SELECT * FROM orders WHERE customer_id = 1" + strings.Repeat(" + 1", n),
		} {
			_, err := p.Plan(sql)
			if got := sqlerr.Code(err); got != statementTooComplex {
				t.Errorf("%s x %d: got %v, want SQLSTATE 54001", name, n, err)
			}
		}
	}
	// The simple protocol runs the statements before the deep one.
	bounds, err := p.PlanSimple("SELECT 1; SELECT 1" + strings.Repeat("+1", 100000) + "; SELECT 2")
	if len(bounds) != 1 || sqlerr.Code(err) != statementTooComplex {
		t.Errorf("simple: %d statements, %v; want 1 and 54001", len(bounds), err)
	}
	if e, _ := sqlerr.As(err); e == nil || e.Message != "stack depth limit exceeded" {
		t.Errorf("message: %v", err)
	}
}

// Right-nested constructs overflow the parser's own stack first, which
// Postgres reports as a syntax error too.
func TestDeepParenthesesAreSyntaxErrors(t *testing.T) {
	p := testPlanner(t)
	_, err := p.Plan("SELECT " + strings.Repeat("(", 10000) + "1" + strings.Repeat(")", 10000))
	if e, ok := sqlerr.As(err); !ok || e.Code != sqlerr.SyntaxError || !strings.HasPrefix(e.Message, "memory exhausted") {
		t.Errorf("got %v, want 42601 memory exhausted", err)
	}
}

// Wide statements are not deep: long AND/OR lists, IN lists, VALUES
// lists and CASE branches plan normally.
func TestWideStatementsAreNotTooDeep(t *testing.T) {
	p := testPlanner(t)
	var in, values, when []string
	for i := 0; i < 30000; i++ {
		in = append(in, itoa(i))
		values = append(values, "(5, -"+itoa(i)+" + 1)")
		when = append(when, "WHEN id = "+itoa(i)+" THEN -"+itoa(i))
	}
	for name, sql := range map[string]string{
		"and":    "SELECT * FROM orders WHERE customer_id = 5" + strings.Repeat(" AND id <> -1 + 2", 30000),
		"or":     "SELECT * FROM orders WHERE customer_id = 5 AND (id = 1" + strings.Repeat(" OR id = -1 * 2", 30000) + ")",
		"in":     "SELECT * FROM orders WHERE customer_id = 5 AND id IN (" + strings.Join(in, ", ") + ")",
		"values": "INSERT INTO orders (customer_id, id) VALUES " + strings.Join(values, ", "),
		"case":   "SELECT CASE " + strings.Join(when, " ") + " END FROM orders WHERE customer_id = 5",
	} {
		if _, err := p.Plan(sql); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestNestingBound(t *testing.T) {
	for _, c := range []struct {
		sql string
		min int // the tree is at least this deep; the bound must not be lower
		max int // and the bound stays this tight
	}{
		{"SELECT 1", 0, 0},
		{"SELECT 1+1+1+1", 3, 3},
		{"SELECT (1+(1+(1+1)))", 3, 6},
		{"SELECT a, b+c, d FROM t WHERE x AND y+1+1", 2, 2},
		{"SELECT 1 UNION SELECT 2, 3 UNION SELECT 4", 2, 2},
		{"SELECT CASE WHEN a THEN 1 END + CASE WHEN b THEN 2 END", 2, 3},
		{"SELECT 1+1; SELECT 2", 1, 1},
		{"SELECT x::int::int", 2, 2},
		{"SELECT 'unterminated", 0, 0},
		{"SELECT ((((1", 0, 4},
	} {
		got := nestingBound(c.sql)
		if got < c.min || got > c.max {
			t.Errorf("nestingBound(%q) = %d, want %d..%d", c.sql, got, c.min, c.max)
		}
	}
}
