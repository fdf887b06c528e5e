package proxy

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// result is one answer, raw.
type result struct {
	fields []pgconn.FieldDescription
	rows   [][][]byte
	tag    string
	err    error
}

type queryMode int

const (
	modeSimple queryMode = iota
	modeExtended
	modeExecParamsText
	modeExecParamsBinary
)

var modeNames = []string{"simple", "extended", "exec-params-text", "exec-params-binary"}

func runQuery(c *pgx.Conn, mode queryMode, sql string, args []any) result {
	ctx := context.Background()
	var r result
	switch mode {
	case modeSimple, modeExtended:
		qm := pgx.QueryExecModeSimpleProtocol
		if mode == modeExtended {
			qm = pgx.QueryExecModeCacheStatement
		}
		rows, err := c.Query(ctx, sql, append([]any{qm}, args...)...)
		if err != nil {
			r.err = err
			return r
		}
		r.fields = append(r.fields, rows.FieldDescriptions()...)
		for rows.Next() {
			var row [][]byte
			for _, v := range rows.RawValues() {
				if v == nil {
					row = append(row, nil)
				} else {
					row = append(row, append([]byte{}, v...))
				}
			}
			r.rows = append(r.rows, row)
		}
		rows.Close()
		r.err = rows.Err()
		r.tag = rows.CommandTag().String()
		return r
	}
	params := make([][]byte, len(args))
	for i, a := range args {
		params[i] = []byte(fmt.Sprint(a))
	}
	formats := []int16{0}
	if mode == modeExecParamsBinary {
		formats = []int16{1}
	}
	rr := c.PgConn().ExecParams(ctx, sql, params, nil, nil, formats)
	r.fields = append(r.fields, rr.FieldDescriptions()...)
	for rr.NextRow() {
		var row [][]byte
		for _, v := range rr.Values() {
			if v == nil {
				row = append(row, nil)
			} else {
				row = append(row, append([]byte{}, v...))
			}
		}
		r.rows = append(r.rows, row)
	}
	tag, err := rr.Close()
	r.tag, r.err = tag.String(), err
	return r
}

// mergeCase is one query of the comparison.
type mergeCase struct {
	sql  string
	args []any
	// ordered: the ORDER BY fixes the order of every row. keys > 0: it
	// fixes only the order of the first keys columns (ties in between).
	// Otherwise rows are compared as a multiset.
	ordered bool
	keys    int
	// count: only the number of rows is determined (LIMIT without ORDER BY).
	count bool
	// refused is the SQLSTATE the proxy must answer with.
	refused string
	// anyZero: -0 and 0 are one value here (DISTINCT, UNION), and which
	// of them stands for it is up to the order rows come in.
	anyZero bool
}

// signlessZero rewrites float8 -0 (text or binary) as 0.
func signlessZero(rows [][][]byte) {
	negZero := string([]byte{0x80, 0, 0, 0, 0, 0, 0, 0})
	for _, r := range rows {
		for i, v := range r {
			if string(v) == "-0" {
				r[i] = []byte("0")
			} else if string(v) == negZero {
				r[i] = make([]byte, 8)
			}
		}
	}
}

func rowText(row [][]byte) string {
	var b strings.Builder
	for i, v := range row {
		if i > 0 {
			b.WriteString(" | ")
		}
		if v == nil {
			b.WriteString("NULL")
		} else {
			fmt.Fprintf(&b, "%q", v)
		}
	}
	return b.String()
}

func rowTexts(rows [][][]byte, cols int) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		if cols > 0 && cols < len(r) {
			r = r[:cols]
		}
		out[i] = rowText(r)
	}
	return out
}

func compareResults(t *testing.T, name string, c mergeCase, got, want result) {
	t.Helper()
	if c.refused != "" {
		if sqlstate(got.err) != c.refused {
			t.Errorf("%s: want SQLSTATE %s from the proxy, got %v (%d rows)", name, c.refused, got.err, len(got.rows))
		} else {
			t.Logf("%s: refused as expected: %v", name, got.err)
		}
		return
	}
	if want.err != nil {
		if sqlstate(got.err) != sqlstate(want.err) {
			t.Errorf("%s: oracle failed with %v, proxy with %v", name, want.err, got.err)
		}
		return
	}
	if got.err != nil {
		t.Errorf("%s: %v", name, got.err)
		return
	}
	if got.tag != want.tag {
		t.Errorf("%s: command tag %q, want %q", name, got.tag, want.tag)
	}
	if len(got.fields) != len(want.fields) {
		t.Errorf("%s: %d columns, want %d", name, len(got.fields), len(want.fields))
		return
	}
	for i := range got.fields {
		g, w := got.fields[i], want.fields[i]
		if g.Name != w.Name || g.DataTypeOID != w.DataTypeOID || g.DataTypeSize != w.DataTypeSize ||
			g.TypeModifier != w.TypeModifier || g.Format != w.Format || g.TableAttributeNumber != w.TableAttributeNumber ||
			(g.TableOID == 0) != (w.TableOID == 0) {
			t.Errorf("%s: column %d is %+v, want %+v", name, i+1, g, w)
		}
	}
	if c.count {
		if len(got.rows) != len(want.rows) {
			t.Errorf("%s: %d rows, want %d", name, len(got.rows), len(want.rows))
		}
		return
	}
	if c.anyZero {
		signlessZero(got.rows)
		signlessZero(want.rows)
	}
	g, w := rowTexts(got.rows, 0), rowTexts(want.rows, 0)
	if !c.ordered {
		if c.keys > 0 {
			gk, wk := rowTexts(got.rows, c.keys), rowTexts(want.rows, c.keys)
			if strings.Join(gk, "\n") != strings.Join(wk, "\n") {
				t.Errorf("%s: sort keys in a different order:\n%s", name, diffLines(gk, wk))
			}
		}
		sort.Strings(g)
		sort.Strings(w)
	}
	if strings.Join(g, "\n") != strings.Join(w, "\n") {
		t.Errorf("%s: rows differ:\n%s", name, diffLines(g, w))
	}
}

func diffLines(got, want []string) string {
	var b strings.Builder
	n := max(len(got), len(want))
	shown := 0
	for i := 0; i < n && shown < 12; i++ {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			fmt.Fprintf(&b, "  row %d:\n    got  %s\n    want %s\n", i+1, g, w)
			shown++
		}
	}
	fmt.Fprintf(&b, "  (%d rows, want %d)", len(got), len(want))
	return b.String()
}
