package planner

import (
	"strings"
	"unicode/utf8"
)

// The simple protocol carries literals inline, so a cache keyed by the full
// text never hits for pgbench-style traffic. normalize lifts numeric and
// string literals out of a statement and replaces them with $k, so that
// "... WHERE aid = 48213" and "... WHERE aid = 7" share one cached plan; the
// lifted values become the Params that Targets uses to compute the shard.
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

// normalize returns the normalized text and the lifted literals, in $k
// order, or ok == false when the statement must be planned as written.
func normalize(stmt string) (text string, params []Param, ok bool) {
	l := lexer{src: stmt}
	var b strings.Builder
	copied := 0 // stmt[:copied] is already in b
	first := true
	var prev token // previous significant token
	newlineSincePrev := false
	for {
		t := l.next()
		switch t.kind {
		case tokEOF:
			if len(params) == 0 {
				return stmt, nil, true
			}
			b.WriteString(stmt[copied:])
			return b.String(), params, true
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
			return "", nil, false
		}
		if first {
			first = false
			if !(t.kind == tokIdent && isOneOf(stmt[t.start:t.end], normalizableStart[:]) ||
				t.kind == tokPunct && stmt[t.start] == '(') {
				return "", nil, false
			}
		}
		isString := t.kind == tokString || t.kind == tokEString || t.kind == tokOtherString || t.kind == tokDollarString
		if isString && newlineSincePrev && isStringKind(prev.kind) {
			// 'a'<newline>'b' is the single string 'ab'.
			return "", nil, false
		}
		var value []byte
		lift := false
		switch t.kind {
		case tokNumber:
			lift = plainDecimal(stmt[t.start:t.end])
			if lift {
				if t.end < len(stmt) && isIdentCont(stmt[t.end]) {
					return "", nil, false // "123abc": let the parser say what it thinks
				}
				value = []byte(stmt[t.start:t.end])
			}
		case tokString, tokEString:
			if prev.kind == tokIdent && !isOneOf(stmt[prev.start:prev.end], stringValueKeywords[:]) ||
				prev.kind == tokQuotedIdent {
				break // typed literal: type 'value'
			}
			if t.kind == tokString {
				value = unquoteStandard(stmt[t.start+1 : t.end-1])
				lift = true
			} else {
				value, lift = unquoteEscape(stmt[t.start+2 : t.end-1])
			}
		}
		if lift {
			if b.Len() == 0 {
				b.Grow(len(stmt) + 8)
			}
			b.WriteString(stmt[copied:t.start])
			b.WriteByte('$')
			writeInt(&b, len(params)+1)
			copied = t.end
			params = append(params, Param{Value: value})
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

// unquoteStandard undoes the ” escape of a standard string body.
func unquoteStandard(body string) []byte {
	if !strings.Contains(body, "''") {
		return []byte(body)
	}
	out := make([]byte, 0, len(body))
	for i := 0; i < len(body); i++ {
		out = append(out, body[i])
		if body[i] == '\'' && i+1 < len(body) && body[i+1] == '\'' {
			i++
		}
	}
	return out
}

// unquoteEscape decodes an E” string body (PostgreSQL docs, 4.1.2.2
// "String Constants With C-Style Escapes"). Unicode escapes and results that
// are not valid UTF-8 are reported as not liftable; the literal then stays
// inline and the backend judges it.
func unquoteEscape(body string) ([]byte, bool) {
	out := make([]byte, 0, len(body))
	for i := 0; i < len(body); i++ {
		c := body[i]
		if c == '\'' && i+1 < len(body) && body[i+1] == '\'' {
			out = append(out, '\'')
			i++
			continue
		}
		if c != '\\' || i+1 >= len(body) {
			out = append(out, c)
			continue
		}
		i++
		c = body[i]
		switch c {
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u', 'U':
			return nil, false
		case 'x':
			v, n := 0, 0
			for n < 2 && i+1 < len(body) && isHexDigit(body[i+1]) {
				i++
				v = v*16 + hexVal(body[i])
				n++
			}
			if n == 0 {
				out = append(out, 'x')
			} else {
				out = append(out, byte(v))
			}
		case '0', '1', '2', '3', '4', '5', '6', '7':
			v := int(c - '0')
			for n := 1; n < 3 && i+1 < len(body) && body[i+1] >= '0' && body[i+1] <= '7'; n++ {
				i++
				v = v*8 + int(body[i]-'0')
			}
			out = append(out, byte(v))
		default:
			out = append(out, c)
		}
	}
	if !utf8.Valid(out) {
		return nil, false
	}
	for _, c := range out {
		if c == 0 {
			return nil, false // the backend rejects NUL in text
		}
	}
	return out, true
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
func splitStatements(src string) (spans []stmtSpan, needParser bool) {
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
