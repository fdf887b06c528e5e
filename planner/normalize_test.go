package planner

import (
	"reflect"
	"strings"
	"testing"
)

func lexAll(src string) []string {
	l := lexer{src: src}
	var out []string
	for {
		t := l.next()
		if t.kind == tokEOF {
			return out
		}
		if t.kind == tokSpace {
			continue
		}
		out = append(out, kindLetter[t.kind]+":"+src[t.start:t.end])
	}
}

var kindLetter = map[tokKind]string{
	tokIdent: "id", tokQuotedIdent: "qid", tokString: "s", tokEString: "e",
	tokDollarString: "dq", tokOtherString: "os", tokNumber: "n", tokParam: "p",
	tokOp: "op", tokPunct: "pu", tokComment: "c", tokError: "err",
}

func TestLexer(t *testing.T) {
	cases := []struct {
		src  string
		want []string
	}{
		{"SELECT 1", []string{"id:SELECT", "n:1"}},
		{"a=-5", []string{"id:a", "op:=", "op:-", "n:5"}},
		{"a @-5", []string{"id:a", "op:@-", "n:5"}},
		{"a<>b", []string{"id:a", "op:<>", "id:b"}},
		{"a+-- c\n1", []string{"id:a", "op:+", "c:-- c", "n:1"}},
		{"a*/* c */1", []string{"id:a", "op:*", "c:/* c */", "n:1"}},
		{"/* a /* nested */ still */x", []string{"c:/* a /* nested */ still */", "id:x"}},
		{"'it''s'", []string{"s:'it''s'"}},
		{`E'a\'b'`, []string{`e:E'a\'b'`}},
		{"$$a'b$$ $t$x$$y$t$", []string{"dq:$$a'b$$", "dq:$t$x$$y$t$"}},
		{"$1 $23::int8", []string{"p:$1", "p:$23", "pu:::", "id:int8"}},
		{`"Weird ""x"""`, []string{`qid:"Weird ""x"""`}},
		{"U&'d\\0061' B'101' X'ff' N'n'", []string{`os:U&'d\0061'`, "os:B'101'", "os:X'ff'", "os:N'n'"}},
		{"1.5e-3 .5 1. 0x1F 1_000 1..2", []string{"n:1.5e-3", "n:.5", "n:1.", "n:0x1F", "n:1_000", "n:1", "pu:..", "n:2"}},
		{"a.b, c;", []string{"id:a", "pu:.", "id:b", "pu:,", "id:c", "pu:;"}},
		{"foo$bar", []string{"id:foo$bar"}},
		{"'unterminated", []string{"err:'unterminated"}},
		{"/* open", []string{"err:/* open"}},
		{"$x$ open", []string{"err:$x$ open"}},
		{"x := 1", []string{"id:x", "pu::=", "n:1"}},
	}
	for _, c := range cases {
		if got := lexAll(c.src); !reflect.DeepEqual(got, c.want) {
			t.Errorf("lex(%q)\n got %q\nwant %q", c.src, got, c.want)
		}
	}
}

func TestNormalize(t *testing.T) {
	cases := []struct {
		src    string
		want   string // "" = not normalizable
		params []string
	}{
		{"SELECT abalance FROM pgbench_accounts WHERE aid = 48213;",
			"SELECT abalance FROM pgbench_accounts WHERE aid = $1;", []string{"48213"}},
		{"UPDATE pgbench_accounts SET abalance = abalance + -4126 WHERE aid = 79;",
			"UPDATE pgbench_accounts SET abalance = abalance + -$1 WHERE aid = $2;", []string{"4126", "79"}},
		{"select * from t where a = 'it''s' and b = E'x\\ty'",
			"select * from t where a = $1 and b = $2", []string{"it's", "x\ty"}},
		{"SELECT 'x'::int8, 1.5e3", "SELECT $1::int8, $2", []string{"x", "1.5e3"}},
		{"SELECT interval '1 day', date '2020-01-01'", "SELECT interval '1 day', date '2020-01-01'", nil},
		{"SELECT now() AT TIME ZONE 'UTC' WHERE x LIKE 'a%'", "SELECT now() AT TIME ZONE 'UTC' WHERE x LIKE $1", []string{"a%"}},
		{"SELECT $$body$$, B'101', 0x1F, 1_000", "SELECT $$body$$, B'101', 0x1F, 1_000", nil},
		{"select 1 -- comment 2\n", "select $1 -- comment 2\n", []string{"1"}},
		{"select /* 5 */ 6", "select /* 5 */ $1", []string{"6"}},
		{"SELECT * FROM t WHERE id = $1 AND x = 5", "", nil}, // already parameterized
		{"SET statement_timeout = 5", "", nil},               // utility: planned as written
		{"SELECT 'a'\n'b'", "", nil},                         // string continuation
		{"SELECT 'open", "", nil},                            // let the parser report it
		{"SELECT 123abc", "", nil},                           // trailing junk
		{"(SELECT 1) UNION ALL (SELECT 2)", "(SELECT $1) UNION ALL (SELECT $2)", []string{"1", "2"}},
		{"INSERT INTO t VALUES (1, 'a'), (2, 'b')", "INSERT INTO t VALUES ($1, $2), ($3, $4)", []string{"1", "a", "2", "b"}},
		{"SELECT E'\\u0041'", "SELECT E'\\u0041'", nil}, // unicode escapes stay inline
		{"SELECT \"col\" 'x'", "SELECT \"col\" 'x'", nil},
		// Function arguments, type modifiers and || operands are shape.
		{"SELECT * FROM t WHERE left(a, 4) = 'ab' AND b IN (1, 2)", "SELECT * FROM t WHERE left(a, 4) = $1 AND b IN ($2, $3)", []string{"ab", "1", "2"}},
		{"SELECT x::numeric(10, 2) FROM t WHERE k = 7", "SELECT x::numeric(10, 2) FROM t WHERE k = $1", []string{"7"}},
		{"SELECT * FROM t WHERE a || '/' || b = 'x/y'", "SELECT * FROM t WHERE a || '/' || b = $1", []string{"x/y"}},
		{"SELECT * FROM t WHERE k = ANY ('{1,2}') AND EXISTS (SELECT 1 FROM u WHERE v = 3)", "SELECT * FROM t WHERE k = ANY ($1) AND EXISTS (SELECT $2 FROM u WHERE v = $3)", []string{"{1,2}", "1", "3"}},
		{"SELECT count(*) FILTER (WHERE s = 'p') FROM t", "SELECT count(*) FILTER (WHERE s = 'p') FROM t", nil},
	}
	for _, c := range cases {
		got, params, ok := normalize(c.src)
		if c.want == "" {
			if ok {
				t.Errorf("normalize(%q) = %q, want not normalizable", c.src, got)
			}
			continue
		}
		if !ok || got != c.want {
			t.Errorf("normalize(%q)\n got %q ok=%v\nwant %q", c.src, got, ok, c.want)
			continue
		}
		var vals []string
		for _, p := range params {
			vals = append(vals, string(p.Value))
		}
		if !reflect.DeepEqual(vals, c.params) {
			t.Errorf("normalize(%q) params %q, want %q", c.src, vals, c.params)
		}
	}
}

func TestSplitStatements(t *testing.T) {
	cases := []struct {
		src        string
		want       []string
		needParser bool
	}{
		{"SELECT 1", []string{"SELECT 1"}, false},
		{"SELECT 1; SELECT 2;", []string{"SELECT 1", "SELECT 2"}, false},
		{"  ;; -- nothing\n ; ", nil, false},
		{"SELECT ';'; /* ; */ SELECT $$;$$", []string{"SELECT ';'", "SELECT $$;$$"}, false},
		{"BEGIN; UPDATE t SET a = 1; COMMIT", []string{"BEGIN", "UPDATE t SET a = 1", "COMMIT"}, false},
		{"CREATE RULE r AS ON INSERT TO t DO ALSO (SELECT 1; SELECT 2)", nil, true},
		{"CREATE FUNCTION f() RETURNS int BEGIN ATOMIC SELECT 1; END", nil, true},
		{"-- lead\nSELECT 1 -- trail", []string{"SELECT 1"}, false},
	}
	for _, c := range cases {
		spans, np := splitStatements(c.src, nil)
		var got []string
		for _, s := range spans {
			got = append(got, strings.TrimSpace(c.src[s.start:s.end]))
		}
		if np != c.needParser || !np && !reflect.DeepEqual(got, c.want) {
			t.Errorf("split(%q) = %q needParser=%v, want %q %v", c.src, got, np, c.want, c.needParser)
		}
	}
}
