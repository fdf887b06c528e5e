package difftest

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// field is the part of a column description that must be the same on
// both sides. (The table OID and attribute number are not: they name
// objects of different clusters.)
type field struct {
	Name   string
	OID    uint32
	Typmod int32
	Size   int16
	Format int16
}

func (f field) String() string {
	return fmt.Sprintf("%s oid=%d typmod=%d size=%d format=%d", f.Name, f.OID, f.Typmod, f.Size, f.Format)
}

// result is everything a statement answered: columns, rows as raw wire
// values (nil for NULL), the command tag, or an error.
type result struct {
	Fields []field
	Rows   [][][]byte
	Tag    string
	Err    error
}

// run executes sql with args on c in mode and collects the whole answer.
func run(ctx context.Context, c *pgx.Conn, mode pgx.QueryExecMode, sql string, args ...any) result {
	var res result
	rows, err := c.Query(ctx, sql, append([]any{mode}, args...)...)
	if err != nil {
		res.Err = err
		return res
	}
	for rows.Next() {
		raw := rows.RawValues()
		row := make([][]byte, len(raw))
		for i, v := range raw {
			if v != nil {
				row[i] = append([]byte{}, v...)
			}
		}
		res.Rows = append(res.Rows, row)
	}
	rows.Close()
	for _, fd := range rows.FieldDescriptions() {
		res.Fields = append(res.Fields, field{Name: fd.Name, OID: fd.DataTypeOID, Typmod: fd.TypeModifier,
			Size: fd.DataTypeSize, Format: fd.Format})
	}
	res.Tag = rows.CommandTag().String()
	res.Err = rows.Err()
	return res
}

func sqlState(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// refused reports whether the proxy declined the statement as not
// supported (SQLSTATE 0A000).
func refused(err error) bool { return sqlState(err) == "0A000" }

// describeErr is an error as one line: SQLSTATE, message, detail.
func describeErr(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		s := pe.Code + ": " + pe.Message
		if pe.Detail != "" {
			s += " (" + pe.Detail + ")"
		}
		return s
	}
	return err.Error()
}

// comparer compares a proxy result with the oracle's for one query.
type comparer struct {
	m *pgtype.Map
	q *query
	// recoded counts binary values whose bytes differ while their
	// decoded values are equal (an encoding a client cannot tell apart).
	recoded int
}

// compare returns the differences between proxy (p) and oracle (o)
// results, as lines for a report; none when they agree.
func (c *comparer) compare(p, o result) []string {
	if p.Err != nil || o.Err != nil {
		switch {
		case p.Err != nil && o.Err != nil:
			if ps, os := sqlState(p.Err), sqlState(o.Err); ps != os || ps == "" {
				return []string{"proxy error:  " + describeErr(p.Err), "oracle error: " + describeErr(o.Err)}
			}
			return nil
		case p.Err != nil:
			return []string{"proxy error: " + describeErr(p.Err), "oracle answered " + summarize(o)}
		default:
			return []string{"oracle error: " + describeErr(o.Err), "proxy answered " + summarize(p)}
		}
	}
	var diffs []string
	if !slices.Equal(p.Fields, o.Fields) {
		diffs = append(diffs, "columns differ:", "  proxy:  "+fieldsString(p.Fields), "  oracle: "+fieldsString(o.Fields))
		return diffs
	}
	for _, side := range []struct {
		name string
		r    result
	}{{"proxy", p}, {"oracle", o}} {
		for i, row := range side.r.Rows {
			if len(row) != len(side.r.Fields) {
				return append(diffs, fmt.Sprintf("%s row %d has %d values for %d columns", side.name, i+1, len(row), len(side.r.Fields)))
			}
		}
	}
	if p.Tag != o.Tag {
		diffs = append(diffs, fmt.Sprintf("command tag: proxy %q, oracle %q", p.Tag, o.Tag))
	}
	ignore := make([]bool, len(o.Fields))
	for i, f := range o.Fields {
		ignore[i] = slices.Contains(c.q.Ignore, f.Name)
	}
	if len(p.Rows) != len(o.Rows) {
		diffs = append(diffs, fmt.Sprintf("row count: proxy %d, oracle %d", len(p.Rows), len(o.Rows)))
		if !c.q.CountOnly {
			diffs = append(diffs, c.multisetDiff(o.Fields, p.Rows, o.Rows, ignore)...)
		}
		return diffs
	}
	if c.q.CountOnly {
		return diffs
	}
	pr, or := p.Rows, o.Rows
	switch c.q.Order {
	case orderKeys:
		for i := range pr {
			for _, k := range c.q.KeyCols {
				if k >= len(o.Fields) {
					return append(diffs, fmt.Sprintf("keys=%d names a column the result does not have", k+1))
				}
				if !c.cellEqual(o.Fields[k], pr[i][k], or[i][k]) {
					return append(diffs, fmt.Sprintf("ORDER BY key column %d (%s) differs at row %d: proxy %s, oracle %s",
						k+1, o.Fields[k].Name, i+1, c.show(o.Fields[k], pr[i][k]), c.show(o.Fields[k], or[i][k])))
				}
			}
		}
		fallthrough
	case orderNone:
		pr, or = c.sorted(o.Fields, pr, ignore), c.sorted(o.Fields, or, ignore)
	}
	for i := range pr {
		for j, f := range o.Fields {
			if ignore[j] {
				if (pr[i][j] == nil) != (or[i][j] == nil) {
					return append(diffs, fmt.Sprintf("row %d, ignored column %s: NULL on one side only", i+1, f.Name))
				}
				continue
			}
			if !c.cellEqual(f, pr[i][j], or[i][j]) {
				what := "row"
				if c.q.Order != orderFixed {
					what = "sorted row"
				}
				diffs = append(diffs, fmt.Sprintf("%s %d, column %d (%s): proxy %s, oracle %s", what, i+1, j+1, f.Name,
					c.show(f, pr[i][j]), c.show(f, or[i][j])))
				if c.q.Order == orderFixed {
					return append(diffs, "  proxy row:  "+c.showRow(o.Fields, pr[i]), "  oracle row: "+c.showRow(o.Fields, or[i]))
				}
				return append(diffs, c.multisetDiff(o.Fields, pr, or, ignore)...)
			}
		}
	}
	return diffs
}

// cellEqual compares two wire values of one column: bytes first; binary
// values that differ in bytes are equal if they decode to the same text
// (e.g. a NaN with another payload).
func (c *comparer) cellEqual(f field, a, b []byte) bool {
	if (a == nil) != (b == nil) {
		return false
	}
	if bytes.Equal(a, b) {
		return true
	}
	if f.Format == pgtype.BinaryFormatCode && c.text(f, a) == c.text(f, b) {
		c.recoded++
		return true
	}
	return false
}

// text is a value in text form: as sent for text format; for binary
// format, floats in Go's shortest exact form (any NaN as NaN), other types
// decoded and re-encoded by pgx, hex if pgx cannot decode them.
func (c *comparer) text(f field, raw []byte) string {
	if raw == nil {
		return "NULL"
	}
	if f.Format == pgtype.TextFormatCode {
		return string(raw)
	}
	// Floats exactly (pgx's text encoding rounds), every NaN alike.
	switch {
	case f.OID == pgtype.Float8OID && len(raw) == 8:
		return strconv.FormatFloat(math.Float64frombits(binary.BigEndian.Uint64(raw)), 'g', -1, 64)
	case f.OID == pgtype.Float4OID && len(raw) == 4:
		return strconv.FormatFloat(float64(math.Float32frombits(binary.BigEndian.Uint32(raw))), 'g', -1, 32)
	}
	if t, ok := c.m.TypeForOID(f.OID); ok {
		if v, err := t.Codec.DecodeValue(c.m, f.OID, f.Format, raw); err == nil {
			if b, err := c.m.Encode(f.OID, pgtype.TextFormatCode, v, nil); err == nil && b != nil {
				return string(b)
			}
			return fmt.Sprint(v)
		}
	}
	return fmt.Sprintf(`\x%x`, raw)
}

// show is a value for a report: NULL, or its text quoted.
func (c *comparer) show(f field, raw []byte) string {
	if raw == nil {
		return "NULL"
	}
	return strconv.Quote(c.text(f, raw))
}

func (c *comparer) showRow(fields []field, row [][]byte) string {
	parts := make([]string, len(row))
	for i, v := range row {
		if i < len(fields) {
			parts[i] = c.show(fields[i], v)
		} else if v == nil {
			parts[i] = "NULL (no column)"
		} else {
			parts[i] = fmt.Sprintf("%q (no column)", v)
		}
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// sorted returns rows in a canonical order (by the text of the columns
// that are compared), so that two multisets compare row by row.
func (c *comparer) sorted(fields []field, rows [][][]byte, ignore []bool) [][][]byte {
	type keyed struct {
		key string
		row [][]byte
	}
	ks := make([]keyed, len(rows))
	for i, r := range rows {
		ks[i] = keyed{c.rowKey(fields, r, ignore), r}
	}
	slices.SortStableFunc(ks, func(a, b keyed) int { return strings.Compare(a.key, b.key) })
	out := make([][][]byte, len(rows))
	for i, k := range ks {
		out[i] = k.row
	}
	return out
}

// multisetDiff lists the rows only one side returned (up to diffRows of
// each), comparing the columns that are not ignored.
func (c *comparer) multisetDiff(fields []field, p, o [][][]byte, ignore []bool) []string {
	count := map[string]int{}
	for _, r := range o {
		count[c.rowKey(fields, r, ignore)]++
	}
	var onlyP, onlyO []string
	for _, r := range p {
		k := c.rowKey(fields, r, ignore)
		if count[k] > 0 {
			count[k]--
			continue
		}
		onlyP = append(onlyP, c.showRow(fields, r))
	}
	for _, r := range o {
		k := c.rowKey(fields, r, ignore)
		if count[k] > 0 {
			count[k]--
			onlyO = append(onlyO, c.showRow(fields, r))
		}
	}
	var out []string
	for _, side := range []struct {
		name string
		rows []string
	}{{"proxy", onlyP}, {"oracle", onlyO}} {
		if len(side.rows) == 0 {
			continue
		}
		out = append(out, fmt.Sprintf("rows only the %s returned (%d):", side.name, len(side.rows)))
		for i, r := range side.rows {
			if i == diffRows {
				out = append(out, fmt.Sprintf("  ... %d more", len(side.rows)-diffRows))
				break
			}
			out = append(out, "  "+r)
		}
	}
	return out
}

// diffRows is how many rows of each side a report shows.
const diffRows = 10

// rowKey is a row's identity for multiset comparison: the text of every
// compared column, NULL distinct from any text.
func (c *comparer) rowKey(fields []field, r [][]byte, ignore []bool) string {
	var b strings.Builder
	for j, v := range r {
		if ignore[j] {
			continue
		}
		if v == nil {
			b.WriteString("\x01")
		} else {
			b.WriteString("\x02" + c.text(fields[j], v))
		}
		b.WriteByte(0)
	}
	return b.String()
}

// rowsReport shows up to max rows of a result, for a failure message.
func (c *comparer) rowsReport(r result, max int) string {
	if r.Err != nil {
		return "  error: " + describeErr(r.Err) + "\n"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "  columns: %s\n  tag: %s\n", fieldsString(r.Fields), r.Tag)
	for i, row := range r.Rows {
		if i == max {
			fmt.Fprintf(&b, "  ... %d more rows\n", len(r.Rows)-max)
			break
		}
		fmt.Fprintf(&b, "  %s\n", c.showRow(r.Fields, row))
	}
	return b.String()
}

func fieldsString(fs []field) string {
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = f.String()
	}
	return "[" + strings.Join(parts, "; ") + "]"
}

func summarize(r result) string {
	return fmt.Sprintf("%d rows (%s)", len(r.Rows), r.Tag)
}
