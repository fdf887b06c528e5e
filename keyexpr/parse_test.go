package keyexpr

import (
	"errors"
	"slices"
	"testing"
)

func TestParseCanonical(t *testing.T) {
	tests := []struct {
		src     string
		want    string
		columns []string
	}{
		{"sku", "sku", []string{"sku"}},
		{"SKU", "sku", []string{"sku"}},
		{`"Sku"`, `"Sku"`, []string{"Sku"}},
		{`"user"`, `"user"`, []string{"user"}},
		{"lower(sku)", "lower(sku)", []string{"sku"}},
		{"LOWER( sku )", "lower(sku)", []string{"sku"}},
		{"pg_catalog.upper(sku)", "upper(sku)", []string{"sku"}},
		{"left(tenant, -2)", "left(tenant, -2)", []string{"tenant"}},
		{"right(tenant, 0)", "right(tenant, 0)", []string{"tenant"}},
		{"substring(sku from 2 for 3)", "substr(sku, 2, 3)", []string{"sku"}},
		{"substring(sku from 2)", "substr(sku, 2)", []string{"sku"}},
		{"substring(sku, 2, 3)", "substr(sku, 2, 3)", []string{"sku"}},
		{"substr(sku, 2)", "substr(sku, 2)", []string{"sku"}},
		{"trim(sku)", "btrim(sku)", []string{"sku"}},
		{"trim(both 'x' from sku)", "btrim(sku, 'x')", []string{"sku"}},
		{"btrim(sku, 'x')", "btrim(sku, 'x')", []string{"sku"}},
		{"id::text", "id::text", []string{"id"}},
		{"CAST(id AS bigint)", "id::bigint", []string{"id"}},
		{"id::int8", "id::bigint", []string{"id"}},
		{"id::int", "id::integer", []string{"id"}},
		{"id::int4", "id::integer", []string{"id"}},
		{"id::int2", "id::smallint", []string{"id"}},
		{"CAST(id AS smallint)", "id::smallint", []string{"id"}},
		{"id::character varying(4)", "id::varchar(4)", []string{"id"}},
		{"id::varchar", "id::varchar", []string{"id"}},
		{"k::uuid", "k::uuid", []string{"k"}},
		{"(-5)::text", "(-5)::text", nil},
		{"a || '-' || b", "a || '-' || b", []string{"a", "b"}},
		{"a || ('-' || b)", "a || ('-' || b)", []string{"a", "b"}},
		{"(a || b)::text", "(a || b)::text", []string{"a", "b"}},
		{"lower(a) || lower(a)", "lower(a) || lower(a)", []string{"a"}},
		{"'it''s' || a", "'it''s' || a", []string{"a"}},
		{"NULL", "NULL", nil},
		{"0", "0", nil},
		{"9000000000", "9000000000", nil},
		{"left(lower(btrim(region)), 3) || tenant_id::text", "left(lower(btrim(region)), 3) || tenant_id::text", []string{"region", "tenant_id"}},
	}
	for _, tc := range tests {
		e, err := Parse(tc.src)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.src, err)
			continue
		}
		if got := e.String(); got != tc.want {
			t.Errorf("Parse(%q).String() = %q, want %q", tc.src, got, tc.want)
		}
		if got := e.Columns(); !slices.Equal(got, tc.columns) {
			t.Errorf("Parse(%q).Columns() = %q, want %q", tc.src, got, tc.columns)
		}
		// The canonical text parses back to itself.
		again, err := Parse(e.String())
		if err != nil {
			t.Errorf("reparse %q: %v", e.String(), err)
		} else if again.String() != e.String() {
			t.Errorf("reparse %q gives %q", e.String(), again.String())
		}
	}
}

func TestQuoteIdentifierRoundTrips(t *testing.T) {
	for k := range keywords {
		e, err := Parse(QuoteIdentifier(k))
		if err != nil {
			t.Errorf("keyword %q: %v", k, err)
			continue
		}
		if c, ok := e.Column(); !ok || c != k {
			t.Errorf("keyword %q reads back as %q", k, e.String())
		}
	}
}

func TestParseUnsupported(t *testing.T) {
	tests := []struct {
		src    string
		kind   string
		name   string
		offset int
	}{
		{"md5(sku)", "function", "md5", 0},
		{"lower(md5(sku))", "function", "md5", 6},
		{"a || md5(b)", "function", "md5", 5},
		{"myschema.lower(sku)", "function", "myschema.lower", 0},
		{"a + 1", "operator", "+", 2},
		{"-a", "operator", "-", 0},
		{"a = 1", "operator", "=", 2},
		{"a AND b", "operator", "AND", 2},
		{"(SELECT 1)", "expression", "subquery", 0},
		{"CASE WHEN a THEN 1 END", "expression", "CASE", 0},
		{"coalesce(a, b)", "function", "coalesce", 0},
		{"id::numeric", "cast to type", "numeric", 4},
		{"id::text[]", "cast to type", "text", 4},
		{"1.5", "literal", "1.5", 0},
		{"true", "literal", "true", 0},
		{"$1", "expression", "$1", 0},
		{"t.a", "expression", "qualified column reference", 0},
		{"substring(sku from 'a.')", "function", "substring (regular-expression form)", 0},
		{"lower(sku) COLLATE \"C\"", "expression", "COLLATE", 11},
		{"count(*)", "function", "count", 0},
		{"lower(DISTINCT a)", "expression", "lower with aggregate or window syntax", 0},
		{"trim(leading 'x' from a)", "function", "pg_catalog.ltrim", 0},
		{"'Ü' || md5(a)", "function", "md5", 8},
	}
	for _, tc := range tests {
		_, err := Parse(tc.src)
		var ue *UnsupportedError
		if !errors.As(err, &ue) {
			t.Errorf("Parse(%q) = %v, want *UnsupportedError", tc.src, err)
			continue
		}
		if ue.Kind != tc.kind || ue.Func != tc.name || ue.Offset != tc.offset {
			t.Errorf("Parse(%q) = {%q %q %d}, want {%q %q %d}", tc.src, ue.Kind, ue.Func, ue.Offset, tc.kind, tc.name, tc.offset)
		}
	}
	_, err := Parse("md5(sku)")
	want := `unsupported function "md5" in index expression (supported: lower, upper, left, right, substr, substring, btrim, trim, casts, ||)`
	if err == nil || err.Error() != want {
		t.Errorf("message = %v, want %s", err, want)
	}
}

func TestParseSyntaxErrors(t *testing.T) {
	tests := []struct {
		src    string
		msg    string
		offset int
	}{
		{"lower(", "invalid index expression: syntax error at end of input", 6},
		{"lower(a,)", `invalid index expression: syntax error at or near ")"`, 8},
		{"", "empty index expression", 0},
		{"a, b", "an index expression must be a single expression, not a query", 0},
		{"a FROM t", "an index expression must be a single expression, not a query", 0},
		{"a; SELECT 1", "an index expression must be a single expression", 0},
		{"a AS b", "an index expression cannot have an alias", 0},
		{"lower(a, b)", "function lower takes 1 argument, not 2", 0},
		{"substr(a)", "function substr takes 2 or 3 arguments, not 1", 0},
		{"a::varchar(0)", "length for type varchar must be between 1 and 10485760", 3},
		{"a::int8(3)", "invalid type modifier for type bigint", 3},
		{"left(a)", "function left takes 2 arguments, not 1", 0},
	}
	for _, tc := range tests {
		_, err := Parse(tc.src)
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("Parse(%q) = %v, want *SyntaxError", tc.src, err)
			continue
		}
		if se.Message != tc.msg || se.Offset != tc.offset {
			t.Errorf("Parse(%q) = {%q %d}, want {%q %d}", tc.src, se.Message, se.Offset, tc.msg, tc.offset)
		}
	}
}

func TestQualified(t *testing.T) {
	for src, want := range map[string]string{
		"lower(email)":                  `lower(c.email)`,
		"left(\"Code\", 4) || '-' || x": `left(c."Code", 4) || '-' || c.x`,
		"(id)::text":                    `c.id::text`,
	} {
		if got := MustParse(src).Qualified("c"); got != want {
			t.Errorf("%s: %s, want %s", src, got, want)
		}
	}
}
