package planner

import (
	"sort"
	"strconv"

	pg "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Statement rewrites (the split of a multi-row INSERT, sequence fills, the
// statement under EXPLAIN or PREPARE) cut the client's text at places the
// parse tree points to: node Location fields are byte offsets into the
// text that was parsed. Where a rewrite needs a token boundary the tree
// does not record (the ')' that ends a VALUES row, a column list or a
// function call; the keyword after EXPLAIN's options), it asks Postgres's
// own scanner (pg_query's Scan, the scan.l the parser uses) for the
// tokens, so the rewrite and the parser can never disagree about where a
// string, a comment or a quoted identifier ends. Scan offsets are byte
// offsets too.
//
// The hand lexer (lexer.go) stays only where its speed pays: the plan-cache
// key and the statement splitter (normalize.go), putting lifted literals
// back at execution (inlineLiterals), the depth guard that must run before
// pg_query sees the text (depth.go), and the deparsed text of shard
// statements (shard_sql.go).

// scanned is a statement and its tokens, comments included.
type scanned struct {
	src  string
	toks []*pg.ScanToken
}

// scanSQL runs the Postgres scanner over src.
func scanSQL(src string) (scanned, error) {
	r, err := pg.Scan(src)
	if err != nil {
		return scanned{}, err
	}
	return scanned{src: src, toks: r.Tokens}, nil
}

func isCommentToken(t *pg.ScanToken) bool {
	return t.Token == pg.Token_SQL_COMMENT || t.Token == pg.Token_C_COMMENT
}

// startsAt returns the index of the token that starts at byte offset off,
// or -1 when no token starts there.
func (s scanned) startsAt(off int) int {
	i := sort.Search(len(s.toks), func(i int) bool { return int(s.toks[i].Start) >= off })
	if i < len(s.toks) && int(s.toks[i].Start) == off {
		return i
	}
	return -1
}

// next returns the index of the first token at or after i that is not a
// comment, or len(s.toks).
func (s scanned) next(i int) int {
	for i < len(s.toks) && isCommentToken(s.toks[i]) {
		i++
	}
	return i
}

// is reports whether token i exists and is of kind k.
func (s scanned) is(i int, k pg.Token) bool {
	return i >= 0 && i < len(s.toks) && s.toks[i].Token == k
}

func (s scanned) start(i int) int { return int(s.toks[i].Start) }
func (s scanned) end(i int) int   { return int(s.toks[i].End) }

// bracketDelta is +1 for an opening parenthesis or bracket, -1 for a
// closing one, 0 for any other token.
func bracketDelta(t *pg.ScanToken) int {
	switch t.Token {
	case pg.Token_ASCII_40, pg.Token_ASCII_91:
		return 1
	case pg.Token_ASCII_41, pg.Token_ASCII_93:
		return -1
	}
	return 0
}

// closing returns the index of the token that closes the bracket opened by
// token i, or -1.
func (s scanned) closing(i int) int {
	depth := 0
	for j := i; j < len(s.toks); j++ {
		depth += bracketDelta(s.toks[j])
		if depth == 0 {
			return j
		}
		if depth < 0 {
			return -1
		}
	}
	return -1
}

// params lists the $n parameters of s.src[from:to], with offsets relative
// to from.
func (s scanned) params(from, to int) []paramSpan {
	var out []paramSpan
	i := sort.Search(len(s.toks), func(i int) bool { return int(s.toks[i].Start) >= from })
	for ; i < len(s.toks) && s.end(i) <= to; i++ {
		if s.toks[i].Token != pg.Token_PARAM {
			continue
		}
		a, b := s.start(i), s.end(i)
		if n, err := strconv.Atoi(s.src[a+1 : b]); err == nil {
			out = append(out, paramSpan{a - from, b - from, n})
		}
	}
	return out
}

// segment is the piece s.src[from:to] with its parameters.
func (s scanned) segment(from, to int) sqlSegment {
	return sqlSegment{text: s.src[from:to], params: s.params(from, to)}
}

// insertText inserts text (which holds no parameters) at offset at of the
// segment, moving the parameters after it.
func (seg *sqlSegment) insertText(at int, text string) {
	seg.text = seg.text[:at] + text + seg.text[at:]
	for i := range seg.params {
		if seg.params[i].start >= at {
			seg.params[i].start += len(text)
			seg.params[i].end += len(text)
		}
	}
}

// callEnd returns the offset just past the function call whose name starts
// at byte offset start (a FuncCall's Location): its possibly qualified
// name, then its parenthesized arguments. -1 if the tokens there are not
// of that form.
func (s scanned) callEnd(start int) int {
	i := s.startsAt(start)
	if i < 0 {
		return -1
	}
	for ; i < len(s.toks); i = s.next(i + 1) {
		if s.is(i, pg.Token_ASCII_40) {
			if j := s.closing(i); j >= 0 {
				return s.end(j)
			}
			return -1
		}
		t := s.toks[i]
		if t.Token != pg.Token_IDENT && t.KeywordKind == pg.KeywordKind_NO_KEYWORD && t.Token != pg.Token_ASCII_46 {
			return -1 // not a name part (an identifier or keyword) nor the '.' between parts
		}
	}
	return -1
}

// explainedText returns the statement under EXPLAIN: the text after the
// EXPLAIN keyword, its parenthesized options and ANALYZE / VERBOSE, and
// the start of that text in sql. It is used both on statements that parse
// (the tree records no location for the statement under EXPLAIN) and on
// EXPLAIN (ROUTE) COPY, which does not. sql itself when sql does not
// scan or holds nothing after the options.
func explainedText(sql string) (string, int) {
	s, err := scanSQL(sql)
	if err != nil {
		return sql, 0
	}
	i := s.next(0)
	if !s.is(i, pg.Token_EXPLAIN) {
		return sql, 0
	}
	i = s.next(i + 1)
	if s.is(i, pg.Token_ASCII_40) {
		j := s.closing(i)
		if j < 0 {
			return sql, 0
		}
		i = s.next(j + 1)
	}
	for s.is(i, pg.Token_ANALYZE) || s.is(i, pg.Token_ANALYSE) || s.is(i, pg.Token_VERBOSE) {
		i = s.next(i + 1)
	}
	if i >= len(s.toks) {
		return sql, 0
	}
	return sql[s.start(i):], s.start(i)
}

// nodeLocation returns the Location of the node n wraps, or -1 when it has
// none (or the parser recorded none).
func nodeLocation(n *pg.Node) int {
	if n == nil || n.Node == nil {
		return -1
	}
	m := n.ProtoReflect()
	which := m.WhichOneof(m.Descriptor().Oneofs().Get(0))
	if which == nil || which.Kind() != protoreflect.MessageKind {
		return -1
	}
	inner := m.Get(which).Message()
	f := inner.Descriptor().Fields().ByName("location")
	if f == nil || f.Kind() != protoreflect.Int32Kind {
		return -1
	}
	return int(inner.Get(f).Int())
}
