package keyexpr

import (
	"strconv"
	"strings"
)

// printer writes an expression's text; qualifier, when set, is written
// before each column reference (with its dot).
type printer struct {
	strings.Builder
	qualifier string
}

func (c *columnRef) print(b *printer, _ bool) {
	b.WriteString(b.qualifier)
	b.WriteString(QuoteIdentifier(c.name))
}

func (c *constant) print(b *printer, operand bool) {
	// A negative literal needs parentheses under a cast: -5::text would
	// parse as -(5::text).
	neg := c.v.kind == KindInt && c.v.i < 0
	if neg && operand {
		b.WriteByte('(')
	}
	b.WriteString(c.v.String())
	if neg && operand {
		b.WriteByte(')')
	}
}

func (f *funcCall) print(b *printer, _ bool) {
	b.WriteString(fnNames[f.fn])
	b.WriteByte('(')
	for i, a := range f.args {
		if i > 0 {
			b.WriteString(", ")
		}
		a.print(b, false)
	}
	b.WriteByte(')')
}

func (c *typeCast) print(b *printer, _ bool) {
	c.arg.print(b, true)
	b.WriteString("::")
	b.WriteString(c.to.String())
	if c.typmod > 0 {
		b.WriteString("(" + strconv.Itoa(c.typmod) + ")")
	}
}

func (c *concat) print(b *printer, operand bool) {
	if operand {
		b.WriteByte('(')
	}
	c.l.print(b, false)
	b.WriteString(" || ")
	// || is left-associative: a right operand that is itself a || keeps
	// its parentheses so the text parses back to the same tree.
	_, nested := c.r.(*concat)
	c.r.print(b, nested)
	if operand {
		b.WriteByte(')')
	}
}

// QuoteIdentifier returns name as Postgres's quote_identifier would: bare
// if it is a lower-case identifier that is not a keyword, else in double
// quotes with embedded quotes doubled.
func QuoteIdentifier(name string) string {
	if isPlainIdentifier(name) && !keywords[name] {
		return name
	}
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

func isPlainIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c == '_':
		case (c >= '0' && c <= '9') || c == '$':
			if i == 0 {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// keywords are Postgres 17's reserved, type/function-name and column-name
// keywords (kwlist.h): an identifier spelled like one of them must be
// quoted to be read as a column. Unreserved keywords need no quotes.
var keywords = map[string]bool{}

func init() {
	for _, k := range strings.Fields(`
		all analyse analyze and any array as asc asymmetric authorization binary both
		case cast check collate collation column concurrently constraint create cross
		current_catalog current_date current_role current_schema current_time
		current_timestamp current_user default deferrable desc distinct do else end
		except false fetch for foreign freeze from full grant group having ilike in
		initially inner intersect into is isnull join lateral leading left like limit
		localtime localtimestamp natural not notnull null offset on only or order outer
		overlaps placing primary references returning right select session_user similar
		some symmetric system_user table tablesample then to trailing true union unique
		user using variadic verbose when where window with
		between bigint bit boolean char character coalesce dec decimal exists extract
		float greatest grouping inout int integer interval json json_array json_arrayagg
		json_exists json_object json_objectagg json_query json_scalar json_serialize
		json_table json_value least merge_action national nchar none normalize nullif
		numeric out overlay position precision real row setof smallint substring time
		timestamp treat trim values varchar xmlattributes xmlconcat xmlelement xmlexists
		xmlforest xmlnamespaces xmlparse xmlpi xmlroot xmlserialize xmltable`) {
		keywords[k] = true
	}
}
