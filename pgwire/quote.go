package pgwire

import "strings"

// QuoteLiteral quotes v as an SQL string literal (standard_conforming_strings
// on: only quotes are doubled).
func QuoteLiteral(v string) string {
	return "'" + strings.ReplaceAll(v, "'", "''") + "'"
}

// QuoteIdent quotes s as an SQL identifier unless it is a plain lower-case
// name (dots allowed, as in the names of settings).
func QuoteIdent(s string) string {
	simple := s != ""
	for i, r := range s {
		if !(r == '_' || r == '.' || (r >= 'a' && r <= 'z') || (i > 0 && r >= '0' && r <= '9')) {
			simple = false
		}
	}
	if simple {
		return s
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}
