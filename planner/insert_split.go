package planner

import (
	"sort"
	"strconv"
	"strings"

	"github.com/shardgate/shardgate/vschema"
	"github.com/shardgate/shardgate/vschema/sqlerr"
)

// InsertSplit sends each row of a multi-row INSERT ... VALUES to the shard
// its key maps to: one statement per cluster, holding only that cluster's
// rows. The rewrite is textual: the statement is cut, once, into the text
// before the first row, each row, and the text after the last row, so
// Targets only concatenates strings (and renumbers $n) at execution, and
// every byte the client wrote (casts, comments, RETURNING, ON CONFLICT)
// reaches the backend unchanged.
type InsertSplit struct {
	Group *vschema.Group
	Table string
	Rows  []KeyRef // one key per row, in statement order

	prefix, suffix sqlSegment
	rows           []sqlSegment
	numParams      int
}

// sqlSegment is a piece of statement text and where its $n sit in it.
type sqlSegment struct {
	text   string
	params []paramSpan
}

type paramSpan struct{ start, end, n int }

func newInsertSplit(sql string, g *vschema.Group, rel *relInfo, rows []KeyRef) (*InsertSplit, error) {
	prefixEnd, spans, suffixStart, ok := valuesRows(sql)
	if !ok || len(spans) != len(rows) {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported,
			"cannot split this multi-row INSERT into %s by shard", rel.display).
			WithHint("Insert the rows one statement at a time.")
	}
	s := &InsertSplit{Group: g, Table: rel.display, Rows: rows}
	s.prefix = newSegment(sql[:prefixEnd])
	s.suffix = newSegment(sql[suffixStart:])
	for _, sp := range spans {
		s.rows = append(s.rows, newSegment(sql[sp.start:sp.end]))
	}
	for _, seg := range append([]sqlSegment{s.prefix, s.suffix}, s.rows...) {
		for _, p := range seg.params {
			if p.n > s.numParams {
				s.numParams = p.n
			}
		}
	}
	return s, nil
}

// valuesRows finds the rows of the statement's top-level VALUES list.
func valuesRows(sql string) (prefixEnd int, rows []stmtSpan, suffixStart int, ok bool) {
	l := lexer{src: sql}
	depth := 0
	next := func() token {
		for {
			t := l.next()
			if t.kind != tokSpace && t.kind != tokComment {
				return t
			}
		}
	}
	for {
		t := next()
		switch {
		case t.kind == tokEOF || t.kind == tokError:
			return 0, nil, 0, false
		case t.kind == tokPunct && (sql[t.start] == '(' || sql[t.start] == '['):
			depth++
		case t.kind == tokPunct && (sql[t.start] == ')' || sql[t.start] == ']'):
			depth--
		case t.kind == tokIdent && depth == 0 && equalFoldASCII(sql[t.start:t.end], "values"):
			goto rowsStart
		}
	}
rowsStart:
	for {
		t := next()
		if t.kind != tokPunct || sql[t.start] != '(' {
			return 0, nil, 0, false
		}
		start, d := t.start, 1
		for d > 0 {
			u := l.next()
			switch {
			case u.kind == tokEOF || u.kind == tokError:
				return 0, nil, 0, false
			case u.kind == tokPunct && (sql[u.start] == '(' || sql[u.start] == '['):
				d++
			case u.kind == tokPunct && (sql[u.start] == ')' || sql[u.start] == ']'):
				d--
			}
		}
		rows = append(rows, stmtSpan{start, l.pos})
		save := l.pos
		if u := next(); u.kind != tokPunct || sql[u.start] != ',' {
			return rows[0].start, rows, save, true
		}
	}
}

func newSegment(text string) sqlSegment {
	seg := sqlSegment{text: text}
	l := lexer{src: text}
	for {
		t := l.next()
		if t.kind == tokEOF {
			return seg
		}
		if t.kind == tokParam {
			n, err := strconv.Atoi(text[t.start+1 : t.end])
			if err == nil {
				seg.params = append(seg.params, paramSpan{t.start, t.end, n})
			}
		}
	}
}

// Name implements Primitive.
func (s *InsertSplit) Name() string { return "InsertSplit" }

// Inputs implements Primitive.
func (s *InsertSplit) Inputs() []Primitive { return nil }

func (s *InsertSplit) mode() RouteMode { return ModeScatter }

func (s *InsertSplit) targets(pl *Plan, params []Param) ([]Target, error) {
	shards := make([]*vschema.Shard, len(s.Rows))
	for i, k := range s.Rows {
		sh, err := shardFor(s.Group, k, params)
		if err != nil {
			return nil, err
		}
		shards[i] = sh
	}
	ts := targetsByCluster(s.Group, shards)
	if len(ts) == 1 {
		return ts, nil // every row on one cluster: the statement as written
	}
	for i := range ts {
		var rows []int
		for r, sh := range shards {
			if sh.Cluster == ts[i].Cluster {
				rows = append(rows, r)
			}
		}
		ts[i].SQL, ts[i].Params = s.rewrite(rows)
	}
	return ts, nil
}

// rewrite builds the statement holding only the given rows, with the
// parameters it still uses renumbered from $1 in ascending order of their
// original numbers.
func (s *InsertSplit) rewrite(rows []int) (string, []int) {
	segs := make([]*sqlSegment, 0, len(rows)+2)
	segs = append(segs, &s.prefix)
	for _, r := range rows {
		segs = append(segs, &s.rows[r])
	}
	segs = append(segs, &s.suffix)

	var used []int
	if s.numParams > 0 {
		seen := make([]bool, s.numParams+1)
		for _, seg := range segs {
			for _, p := range seg.params {
				seen[p.n] = true
			}
		}
		for n := 1; n <= s.numParams; n++ {
			if seen[n] {
				used = append(used, n)
			}
		}
	}
	renumber := func(n int) int { return sort.SearchInts(used, n) + 1 }

	var b strings.Builder
	for i, seg := range segs {
		if i > 1 && i < len(segs)-1 {
			b.WriteString(", ")
		}
		from := 0
		for _, p := range seg.params {
			b.WriteString(seg.text[from:p.start])
			b.WriteString("$" + strconv.Itoa(renumber(p.n)))
			from = p.end
		}
		b.WriteString(seg.text[from:])
	}
	if used == nil {
		return b.String(), nil
	}
	idx := make([]int, len(used))
	for i, n := range used {
		idx[i] = n - 1
	}
	return b.String(), idx
}

func (s *InsertSplit) explain(w *explainWriter, pl *Plan, depth int) {
	g := s.Group
	plain := g.Index.Expr == nil
	w.line(depth, "InsertSplit group=%s index=%s table=%s rows=%d", g.Name, g.Index.Name, s.Table, len(s.Rows))
	for i, k := range s.Rows {
		row := "row " + strconv.Itoa(i+1) + ": key=" + k.render(w.params, plain)
		if w.resolvable([]KeyRef{k}) {
			if sh, err := shardFor(g, k, w.params); err != nil {
				row += " -> error: " + errorMessage(err)
			} else {
				row += " -> " + sh.Name + " (" + sh.Cluster + ")"
			}
		}
		w.line(depth+1, "%s", row)
	}
	w.line(depth+1, "sql: %s", oneLine(pl.SQL))
}
