package topology

import (
	"fmt"
	"strings"

	"github.com/shardgate/shardgate/keyexpr"
)

// DefaultSchema is the schema of a table name written without one.
const DefaultSchema = "public"

// QualifiedName is a schema-qualified relation name, case-folded the way
// Postgres folds identifiers: unquoted parts are lower-cased (ASCII only,
// as Postgres does in UTF-8 databases), double-quoted parts are kept as
// written.
type QualifiedName struct {
	Schema, Name string
}

// String returns the name as SQL would spell it, always schema-qualified:
// public.orders, public."Orders".
func (q QualifiedName) String() string {
	return keyexpr.QuoteIdentifier(q.Schema) + "." + keyexpr.QuoteIdentifier(q.Name)
}

// ParseQualifiedName parses "name", "schema.name" or their quoted forms
// ("Orders", "public"."Orders"); the schema defaults to public.
func ParseQualifiedName(s string) (QualifiedName, error) {
	parts, err := splitIdentifiers(s)
	if err != nil {
		return QualifiedName{}, err
	}
	switch len(parts) {
	case 1:
		return QualifiedName{Schema: DefaultSchema, Name: parts[0]}, nil
	case 2:
		return QualifiedName{Schema: parts[0], Name: parts[1]}, nil
	}
	return QualifiedName{}, fmt.Errorf("invalid name %q: expected name or schema.name", s)
}

// ParseIdentifier case-folds a single identifier such as a column name.
func ParseIdentifier(s string) (string, error) {
	parts, err := splitIdentifiers(s)
	if err != nil {
		return "", err
	}
	if len(parts) != 1 {
		return "", fmt.Errorf("invalid identifier %q: expected a single name", s)
	}
	return parts[0], nil
}

// splitIdentifiers splits a dotted name into case-folded identifiers.
func splitIdentifiers(s string) ([]string, error) {
	var parts []string
	rest := s
	for {
		var part string
		if strings.HasPrefix(rest, `"`) {
			// A quoted identifier ends at a quote not followed by another.
			var b strings.Builder
			i := 1
			for {
				j := strings.IndexByte(rest[i:], '"')
				if j < 0 {
					return nil, fmt.Errorf("invalid name %q: unterminated quoted identifier", s)
				}
				b.WriteString(rest[i : i+j])
				i += j + 1
				if i < len(rest) && rest[i] == '"' {
					b.WriteByte('"')
					i++
					continue
				}
				break
			}
			part, rest = b.String(), rest[i:]
			if part == "" {
				return nil, fmt.Errorf("invalid name %q: zero-length quoted identifier", s)
			}
		} else {
			end := strings.IndexByte(rest, '.')
			if end < 0 {
				end = len(rest)
			}
			part, rest = rest[:end], rest[end:]
			if !isUnquotedIdentifier(part) {
				return nil, fmt.Errorf("invalid name %q: %q is not an identifier (quote it with double quotes)", s, part)
			}
			part = foldASCII(part)
		}
		parts = append(parts, part)
		if rest == "" {
			return parts, nil
		}
		if rest[0] != '.' {
			return nil, fmt.Errorf("invalid name %q: expected a dot after a quoted identifier", s)
		}
		rest = rest[1:]
	}
}

// isUnquotedIdentifier reports whether s lexes as one unquoted SQL
// identifier: a letter, underscore or non-ASCII character first, then also
// digits and dollar signs.
func isUnquotedIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_', c >= 0x80:
		case c >= '0' && c <= '9', c == '$':
			if i == 0 {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// foldASCII is Postgres's downcase_identifier for a UTF-8 database.
func foldASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
