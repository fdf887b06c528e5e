package planner

import (
	"bytes"
	"strings"
	"unicode/utf8"
)

// The simple protocol carries literals inline, so a cache keyed by the full
// text never hits for pgbench-style traffic. normalize lifts numeric and
// string literals out of a statement and replaces them with $k, so that
// "... WHERE aid = 48213" and "... WHERE aid = 7" share one cached plan; the
// lifted values become the Params that Targets uses to compute the shard.
// A lifted number's Param.OID is its SQL type (int4, int8 or numeric); a
// string's is 0, unknown, like the quoted literal.
//
// The normalized text is only ever a cache key and the input of the planner:
// the backend always receives the statement as the client wrote it.
// Normalizing must therefore never change where a statement routes. Literals
// whose value is not plain text (bit strings, U&'' strings, dollar quotes,
// typed literals such as date '2024-01-01') stay inline; shapes that cannot be
// normalized safely (existing $n, string continuation across lines, utility
// statements) are reported with ok == false and planned verbatim.

// normalizableStart lists the first keywords of statements worth normalizing:
// the DML whose plan depends only on the shape, not on the literal values.
var normalizableStart = [...]string{"select", "insert", "update", "delete", "with", "values", "table"}

// stringValueKeywords are the keywords after which a string literal is a
// value. After any other identifier a string is a typed literal
// (interval '1 day', int8 '5', ... AT TIME ZONE 'UTC') and must stay inline.
var stringValueKeywords = [...]string{
	"select", "where", "and", "or", "not", "then", "else", "when", "case",
	"like", "ilike", "to", "escape", "from", "between", "symmetric",
	"returning", "having", "on", "by", "limit", "offset", "distinct",
}

func isOneOf(word string, list []string) bool {
	for _, k := range list {
		if equalFoldASCII(word, k) {
			return true
		}
	}
	return false
}

// litSpan is one literal normalize lifts.
type litSpan struct {
	start, end int
	kind       tokKind
}

// normalize returns the normalized text and the lifted literals, in $k
// order, or ok == false when the statement must be planned as written.
// It runs in two passes, find then build, so that the common case costs
// three allocations: the text, the Params and one buffer for their values.
func normalize(stmt string) (text string, params []Param, ok bool) {
	var spanBuf [16]litSpan
	spans, ok := findLiterals(stmt, spanBuf[:0])
	if !ok {
		return "", nil, false
	}
	if len(spans) == 0 {
		return stmt, nil, true
	}
	var b strings.Builder
	b.Grow(len(stmt) + 2*len(spans))
	size := 0
	for _, sp := range spans {
		size += sp.end - sp.start
	}
	values := make([]byte, 0, size)
	params = make([]Param, len(spans))
	copied := 0
	for i, sp := range spans {
		b.WriteString(stmt[copied:sp.start])
		b.WriteByte('$')
		writeInt(&b, i+1)
		copied = sp.end
		from := len(values)
		switch sp.kind {
		case tokNumber:
			values = append(values, stmt[sp.start:sp.end]...)
			// A number keeps its SQL type (integer, bigint or numeric),
			// which decides how it meets the key column: 7.0 is not '7.0'.
			params[i].OID = numberOID(stmt[sp.start:sp.end])
		case tokString:
			values = appendUnquoted(values, stmt[sp.start+1:sp.end-1])
		case tokEString:
			values, _ = appendUnescaped(values, stmt[sp.start+2:sp.end-1])
		}
		params[i].Value = values[from:len(values):len(values)]
	}
	b.WriteString(stmt[copied:])
	return b.String(), params, true
}

// valueListKeywords are the keywords whose parenthesis holds values, not
// function arguments: IN (1, 2), VALUES (...), = ANY (...), subqueries.
var valueListKeywords = [...]string{
	"in", "values", "any", "all", "some", "exists", "from", "join", "lateral",
	"as", "select", "where", "and", "or", "not", "on", "when", "then", "else",
	"using", "returning", "set", "by", "with", "between", "like", "ilike",
}

// maxParenDepth bounds the parenthesis stack; deeper text is not lifted.
const maxParenDepth = 64

// findLiterals lists the literals normalize may lift. It leaves inline the
// literals that belong to an expression's shape rather than to a value:
// function arguments and type modifiers (left(account, 4), varchar(10),
// date_trunc('day', ...)) and operands of || (a || '/' || b), so that an
// index expression written in a WHERE clause keeps matching its topology
// form; and it gives up (ok == false) on anything unusual.
func findLiterals(stmt string, spans []litSpan) ([]litSpan, bool) {
	l := lexer{src: stmt}
	first := true
	var prev token // previous significant token
	newlineSincePrev := false
	// inCall[d] is set when parenthesis level d holds function arguments.
	var inCall [maxParenDepth + 1]bool
	depth := 0
	for {
		t := l.next()
		switch t.kind {
		case tokEOF:
			return spans, true
		case tokSpace:
			if t.newline {
				newlineSincePrev = true
			}
			continue
		case tokComment:
			if stmt[t.start] == '-' {
				newlineSincePrev = true // a -- comment always ends at a line break
			}
			continue
		case tokError, tokParam:
			return nil, false
		}
		if first {
			first = false
			if !(t.kind == tokIdent && isOneOf(stmt[t.start:t.end], normalizableStart[:]) ||
				t.kind == tokPunct && stmt[t.start] == '(') {
				return nil, false
			}
		}
		if isStringKind(t.kind) && newlineSincePrev && isStringKind(prev.kind) {
			// 'a'<newline>'b' is the single string 'ab'.
			return nil, false
		}
		switch {
		case t.kind == tokPunct && (stmt[t.start] == '(' || stmt[t.start] == '['):
			if depth == maxParenDepth {
				return nil, false
			}
			depth++
			inCall[depth] = inCall[depth-1] ||
				stmt[t.start] == '(' && (prev.kind == tokQuotedIdent ||
					prev.kind == tokIdent && !isOneOf(stmt[prev.start:prev.end], valueListKeywords[:]))
		case t.kind == tokPunct && (stmt[t.start] == ')' || stmt[t.start] == ']'):
			if depth > 0 {
				depth--
			}
		case t.kind == tokOp && stmt[t.start:t.end] == "||":
			if n := len(spans); n > 0 && spans[n-1].end == prev.end && spans[n-1].start == prev.start {
				spans = spans[:n-1] // 'x' || ...
			}
		}
		if inCall[depth] || prev.kind == tokOp && stmt[prev.start:prev.end] == "||" {
			prev = t
			newlineSincePrev = false
			continue
		}
		switch t.kind {
		case tokNumber:
			if plainDecimal(stmt[t.start:t.end]) {
				if t.end < len(stmt) && isIdentCont(stmt[t.end]) {
					return nil, false // "123abc": let the parser say what it thinks
				}
				spans = append(spans, litSpan{t.start, t.end, t.kind})
			}
		case tokString, tokEString:
			if prev.kind == tokIdent && !isOneOf(stmt[prev.start:prev.end], stringValueKeywords[:]) ||
				prev.kind == tokQuotedIdent {
				break // typed literal: type 'value'
			}
			if t.kind == tokEString {
				if _, ok := appendUnescaped(nil, stmt[t.start+2:t.end-1]); !ok {
					break // stays inline; the backend judges it
				}
			}
			spans = append(spans, litSpan{t.start, t.end, t.kind})
		}
		prev = t
		newlineSincePrev = false
	}
}

func isStringKind(k tokKind) bool {
	return k == tokString || k == tokEString || k == tokOtherString || k == tokDollarString
}

// plainDecimal accepts the numbers whose text is also their value for every
// key type: digits with an optional fraction and exponent. 0x1F and 1_000
// are valid SQL but only the parser knows their value, so they stay inline.
func plainDecimal(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(isDigit(c) || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') {
			return false
		}
		if i == 1 && s[0] == '0' && (c == 'x' || c == 'X' || c == 'o' || c == 'O' || c == 'b' || c == 'B') {
			return false
		}
	}
	return true
}

func writeInt(b *strings.Builder, n int) {
	var buf [20]byte
	i := len(buf)
	for {
		i--
		buf[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			break
		}
	}
	b.Write(buf[i:])
}

// appendUnquoted appends a standard string body with ” undone.
func appendUnquoted(dst []byte, body string) []byte {
	for i := 0; i < len(body); i++ {
		dst = append(dst, body[i])
		if body[i] == '\'' && i+1 < len(body) && body[i+1] == '\'' {
			i++
		}
	}
	return dst
}

// appendUnescaped decodes an E” string body (PostgreSQL docs, 4.1.2.2
// "String Constants With C-Style Escapes"). Unicode escapes and results that
// are not valid UTF-8 (or hold NUL) are reported as not liftable; the
// literal then stays inline and the backend judges it.
func appendUnescaped(dst []byte, body string) ([]byte, bool) {
	from := len(dst)
	for i := 0; i < len(body); i++ {
		c := body[i]
		if c == '\'' && i+1 < len(body) && body[i+1] == '\'' {
			dst = append(dst, '\'')
			i++
			continue
		}
		if c != '\\' || i+1 >= len(body) {
			dst = append(dst, c)
			continue
		}
		i++
		c = body[i]
		switch c {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u', 'U':
			return dst[:from], false
		case 'x':
			v, n := 0, 0
			for n < 2 && i+1 < len(body) && isHexDigit(body[i+1]) {
				i++
				v = v*16 + hexVal(body[i])
				n++
			}
			if n == 0 {
				dst = append(dst, 'x')
			} else {
				dst = append(dst, byte(v))
			}
		case '0', '1', '2', '3', '4', '5', '6', '7':
			v := int(c - '0')
			for n := 1; n < 3 && i+1 < len(body) && body[i+1] >= '0' && body[i+1] <= '7'; n++ {
				i++
				v = v*8 + int(body[i]-'0')
			}
			dst = append(dst, byte(v))
		default:
			dst = append(dst, c)
		}
	}
	out := dst[from:]
	if !utf8.Valid(out) || bytes.IndexByte(out, 0) >= 0 {
		return dst[:from], false
	}
	return dst, true
}

func hexVal(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	default:
		return int(c-'A') + 10
	}
}

// stmtSpan is one statement of a simple-protocol Query, without its ';'.
type stmtSpan struct{ start, end int }

// splitStatements cuts a Query message at top-level semicolons. needParser
// is set when the lexer cannot be sure: a ';' inside parentheses (CREATE
// RULE ... DO (a; b)) or BEGIN ATOMIC bodies; the caller then asks pg_query.
// Spans holding only white space and comments are dropped, as the backend
// does.
func splitStatements(src string, spans []stmtSpan) (_ []stmtSpan, needParser bool) {
	l := lexer{src: src}
	depth := 0
	significant := false
	sigStart, sigEnd := 0, 0
	for {
		t := l.next()
		switch t.kind {
		case tokEOF:
			if significant {
				spans = append(spans, stmtSpan{sigStart, sigEnd})
			}
			return spans, false
		case tokSpace, tokComment:
			continue
		case tokIdent:
			if equalFoldASCII(src[t.start:t.end], "atomic") {
				return nil, true
			}
		case tokPunct:
			switch src[t.start] {
			case '(', '[':
				depth++
			case ')', ']':
				depth--
			case ';':
				if depth != 0 {
					return nil, true
				}
				if significant {
					spans = append(spans, stmtSpan{sigStart, sigEnd})
				}
				significant = false
				continue
			}
		}
		if !significant {
			significant = true
			sigStart = t.start
		}
		sigEnd = t.end
	}
}
