package planner

// A small, allocation-free SQL lexer that follows the token rules of
// PostgreSQL's scan.l closely enough to find literals, parameters, comments
// and statement boundaries. It never decides whether SQL is valid: that is
// the parser's job. It exists so that the simple-protocol fast path
// (normalize, split, cache lookup) costs well under a microsecond instead of
// the tens of microseconds a pg_query parse costs. Rewrites of a statement's
// text cut it at parse-tree locations and Postgres's own tokens instead
// (scan.go), which lists the few other places the lexer still serves.

type tokKind uint8

const (
	tokEOF         tokKind = iota
	tokIdent               // unquoted identifier or keyword
	tokQuotedIdent         // "..." or U&"..."
	tokString              // '...' (standard_conforming_strings = on)
	tokEString             // E'...'
	tokDollarString
	tokOtherString // B'...', X'...', U&'...' and N'...': left inline, never lifted
	tokNumber
	tokParam // $n
	tokOp
	tokPunct   // ( ) [ ] , ; : :: . and friends
	tokComment // -- ... and /* ... */ (nested)
	tokSpace
	tokError // unterminated string, quoted identifier or comment
)

type token struct {
	kind       tokKind
	start, end int
	// newline is set on tokSpace tokens that contain a line break:
	// 'a'<newline>'b' is one string in SQL.
	newline bool
}

// lexer walks src token by token; whitespace and comments are returned as
// tokens too so callers can copy the text around literals verbatim.
type lexer struct {
	src string
	pos int
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

func isIdentStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c >= 0x80
}

func isIdentCont(c byte) bool {
	return isIdentStart(c) || isDigit(c) || c == '$'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// isOpChar reports the characters scan.l allows in operators.
func isOpChar(c byte) bool {
	switch c {
	case '+', '-', '*', '/', '<', '>', '=', '~', '!', '@', '#', '%', '^', '&', '|', '`', '?':
		return true
	}
	return false
}

func (l *lexer) next() token {
	src := l.src
	i := l.pos
	if i >= len(src) {
		return token{kind: tokEOF, start: i, end: i}
	}
	start := i
	c := src[i]
	tok := func(k tokKind, end int) token {
		l.pos = end
		return token{kind: k, start: start, end: end}
	}
	switch {
	case isSpace(c):
		nl := false
		for i < len(src) && isSpace(src[i]) {
			if src[i] == '\n' || src[i] == '\r' {
				nl = true
			}
			i++
		}
		l.pos = i
		return token{kind: tokSpace, start: start, end: i, newline: nl}
	case c == '-' && i+1 < len(src) && src[i+1] == '-':
		for i < len(src) && src[i] != '\n' && src[i] != '\r' {
			i++
		}
		return tok(tokComment, i)
	case c == '/' && i+1 < len(src) && src[i+1] == '*':
		return tok(l.blockComment(i))
	case c == '\'':
		return tok(scanQuoted(src, i+1, '\'', false, tokString))
	case c == '"':
		return tok(scanQuoted(src, i+1, '"', false, tokQuotedIdent))
	case (c == 'e' || c == 'E') && i+1 < len(src) && src[i+1] == '\'':
		return tok(scanQuoted(src, i+2, '\'', true, tokEString))
	case (c == 'b' || c == 'B' || c == 'x' || c == 'X' || c == 'n' || c == 'N') && i+1 < len(src) && src[i+1] == '\'':
		// Bit strings, hex bit strings and N'...' national literals: their
		// value is not plain text, so they are never lifted.
		return tok(scanQuoted(src, i+2, '\'', false, tokOtherString))
	case (c == 'u' || c == 'U') && i+2 < len(src) && src[i+1] == '&' && (src[i+2] == '\'' || src[i+2] == '"'):
		if src[i+2] == '"' {
			return tok(scanQuoted(src, i+3, '"', false, tokQuotedIdent))
		}
		return tok(scanQuoted(src, i+3, '\'', false, tokOtherString))
	case isIdentStart(c):
		i++
		for i < len(src) && isIdentCont(src[i]) {
			i++
		}
		return tok(tokIdent, i)
	case c == '.' && i+1 < len(src) && src[i+1] == '.':
		return tok(tokPunct, i+2) // array slice a[1..2]
	case isDigit(c) || c == '.' && i+1 < len(src) && isDigit(src[i+1]):
		return tok(tokNumber, scanNumber(src, i))
	case c == '$':
		if i+1 < len(src) && isDigit(src[i+1]) {
			i++
			for i < len(src) && isDigit(src[i]) {
				i++
			}
			return tok(tokParam, i)
		}
		if end, ok := scanDollarQuote(src, i); ok {
			if end < 0 {
				return tok(tokError, len(src))
			}
			return tok(tokDollarString, end)
		}
		return tok(tokPunct, i+1)
	case c == ':':
		if i+1 < len(src) && (src[i+1] == ':' || src[i+1] == '=') {
			return tok(tokPunct, i+2)
		}
		return tok(tokPunct, i+1)
	case isOpChar(c):
		return tok(tokOp, scanOperator(src, i))
	default:
		// ( ) [ ] , ; . and anything the backend will reject anyway.
		return tok(tokPunct, i+1)
	}
}

func (l *lexer) blockComment(i int) (tokKind, int) {
	src := l.src
	depth := 0
	for i < len(src) {
		if src[i] == '/' && i+1 < len(src) && src[i+1] == '*' {
			depth++
			i += 2
			continue
		}
		if src[i] == '*' && i+1 < len(src) && src[i+1] == '/' {
			depth--
			i += 2
			if depth == 0 {
				return tokComment, i
			}
			continue
		}
		i++
	}
	return tokError, len(src)
}

// scanQuoted scans to the closing quote q starting at i (just after the
// opening quote). A doubled quote is an escaped quote; with backslash set
// (E” strings) a backslash escapes the next byte.
func scanQuoted(src string, i int, q byte, backslash bool, k tokKind) (tokKind, int) {
	for i < len(src) {
		c := src[i]
		switch {
		case backslash && c == '\\':
			i += 2
			continue
		case c == q:
			if i+1 < len(src) && src[i+1] == q {
				i += 2
				continue
			}
			return k, i + 1
		}
		i++
	}
	return tokError, len(src)
}

// scanNumber follows scan.l: decimal integers with optional '_' separators,
// 0x/0o/0b integers, decimals and reals with exponents. Trailing identifier
// characters are left for the next token; the parser rejects them.
func scanNumber(src string, i int) int {
	if src[i] == '0' && i+2 < len(src) {
		switch src[i+1] {
		case 'x', 'X', 'o', 'O', 'b', 'B':
			j := i + 2
			for j < len(src) && (isHexDigit(src[j]) || src[j] == '_') {
				j++
			}
			if j > i+2 {
				return j
			}
		}
	}
	digits := func(j int) int {
		for j < len(src) && (isDigit(src[j]) || src[j] == '_' && j+1 < len(src) && isDigit(src[j+1])) {
			j++
		}
		return j
	}
	i = digits(i)
	// "1..2" is 1 followed by '..' (array slices); only one dot is ours.
	if i < len(src) && src[i] == '.' && !(i+1 < len(src) && src[i+1] == '.') {
		i = digits(i + 1)
	}
	if i < len(src) && (src[i] == 'e' || src[i] == 'E') {
		j := i + 1
		if j < len(src) && (src[j] == '+' || src[j] == '-') {
			j++
		}
		if j < len(src) && isDigit(src[j]) {
			i = digits(j)
		}
	}
	return i
}

func isHexDigit(c byte) bool {
	return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// scanDollarQuote recognises $tag$...$tag$ at i. ok is false when the '$'
// does not start a dollar quote; end is -1 when the body is unterminated.
func scanDollarQuote(src string, i int) (end int, ok bool) {
	j := i + 1
	if j < len(src) && isIdentStart(src[j]) {
		j++
		for j < len(src) && (isIdentStart(src[j]) || isDigit(src[j])) {
			j++
		}
	}
	if j >= len(src) || src[j] != '$' {
		return 0, false
	}
	tag := src[i : j+1]
	body := j + 1
	for k := body; k+len(tag) <= len(src); k++ {
		if src[k] == '$' && src[k:k+len(tag)] == tag {
			return k + len(tag), true
		}
	}
	return -1, true
}

// scanOperator implements scan.l's operator rule: the longest run of operator
// characters, cut before an embedded comment start, and with trailing '+' or
// '-' removed unless the operator contains one of ~ ! @ # % ^ & | ` ?
// (so "=-5" is '=' then '-' then 5).
func scanOperator(src string, i int) int {
	start := i
	for i < len(src) && isOpChar(src[i]) {
		if i > start && (src[i] == '-' && src[i-1] == '-' || src[i] == '*' && src[i-1] == '/') {
			i--
			break
		}
		i++
	}
	end := i
	if end-start > 1 {
		special := false
		for k := start; k < end; k++ {
			switch src[k] {
			case '~', '!', '@', '#', '%', '^', '&', '|', '`', '?':
				special = true
			}
		}
		if !special {
			for end-start > 1 && (src[end-1] == '+' || src[end-1] == '-') {
				end--
			}
		}
	}
	return end
}

// equalFoldASCII compares an identifier token with a lower-case keyword.
func equalFoldASCII(s, lower string) bool {
	if len(s) != len(lower) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}
