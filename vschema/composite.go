package vschema

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/shardgate/shardgate/keyexpr"
)

// An index over several columns (topology columns: [a, b]) keeps one value
// per row: the composite of its columns' values, the text of a JSON array
// as Postgres's json_build_array prints it (`[5, "x"]`: integers bare,
// text and uuids as JSON strings), each column cast to its declared type
// first, NULL when any of them is NULL. Postgres computes it in the
// owner's statements (Source); the proxy computes the same text from the
// values of a WHERE (Composite) to find its lookup shard; the lookup table
// stores it as its value column, with each column beside it, generated
// from it.

// compositeSource is the SQL of the composite value, the columns
// qualified by q ("" or "alias.").
func (si *SecondaryIndex) compositeSource(q string) string {
	cols := make([]string, len(si.Columns))
	casts := make([]string, len(si.Columns))
	for i, c := range si.Columns {
		cols[i] = q + keyexpr.QuoteIdentifier(c)
		casts[i] = cols[i] + "::" + si.ColumnTypes[i].String()
	}
	return "(CASE WHEN pg_catalog.num_nulls(" + strings.Join(cols, ", ") + ") = 0 THEN pg_catalog.json_build_array(" +
		strings.Join(casts, ", ") + ")::text END)"
}

// ValueColumns are the owner table's columns an index's value is made
// of: its column, or its columns (none for an expression index).
func (si *SecondaryIndex) ValueColumns() []string {
	switch {
	case si.Expr != nil:
		return nil
	case len(si.Columns) > 0:
		return si.Columns
	}
	return []string{si.Column}
}

// ColumnKey converts the value of the i-th indexed column of an index
// over several columns to a key of its type.
func (si *SecondaryIndex) ColumnKey(i int, v keyexpr.Value) (Key, error) {
	ix := Index{Name: si.Name, Column: si.Columns[i], Type: si.ColumnTypes[i]}
	return ix.KeyFromValue(v)
}

// Composite is the composite value of keys, one per indexed column, as
// Postgres computes it (compositeSource).
func Composite(keys []Key) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		switch k.kind {
		case intKey:
			b.WriteString(strconv.FormatInt(k.i, 10))
		case textKey:
			jsonString(&b, k.s)
		case uuidKey:
			jsonString(&b, keyexpr.FormatUUID(k.u))
		}
	}
	b.WriteByte(']')
	return b.String()
}

// jsonString writes s as Postgres's escape_json does.
func jsonString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		default:
			if c < ' ' {
				fmt.Fprintf(b, `\u%04x`, c)
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
}

// Display is a value of the index as Postgres shows an index's key in its
// messages: the value itself, or the columns' values of a composite
// joined by ", " (Key (a, b)=(5, x)).
func (si *SecondaryIndex) Display(value string) string {
	if len(si.Columns) == 0 {
		return value
	}
	var parts []json.RawMessage
	if err := json.Unmarshal([]byte(value), &parts); err != nil {
		return value
	}
	out := make([]string, len(parts))
	for i, p := range parts {
		var s string
		if json.Unmarshal(p, &s) != nil {
			s = string(p)
		}
		out[i] = s
	}
	return strings.Join(out, ", ")
}
