package verify

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/shardgate/shardgate/pgwire"
	"github.com/shardgate/shardgate/sqlerr"
)

// column is a table's column as one cluster's catalog has it.
type column struct {
	name, typ string
	generated bool
}

// tableInfo is what the checks need of a table on one cluster: its
// columns in order, its primary key (none: nil) and its size.
type tableInfo struct {
	name    string // quoted, schema-qualified
	columns []column
	pk      []column
	blocks  int64 // heap pages at the time it was read
	density float64
}

// readTable reads a table's columns, primary key and size on c.
func readTable(ctx context.Context, c *pgx.Conn, schema, name string) (*tableInfo, error) {
	qn := pgwire.QuoteIdent(name)
	if schema != "" {
		qn = pgwire.QuoteIdent(schema) + "." + qn
	}
	ti := &tableInfo{name: qn}
	var exists bool
	if err := c.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", qn).Scan(&exists); err != nil {
		return nil, err
	}
	if !exists {
		return nil, sqlerr.New(sqlerr.UndefinedTable, "relation %s does not exist", qn)
	}
	rows, err := c.Query(ctx, `SELECT a.attname, format_type(a.atttypid, a.atttypmod), a.attgenerated <> '',
		coalesce(array_position(i.indkey::int2[], a.attnum) - array_lower(i.indkey::int2[], 1) + 1, 0)
		FROM pg_attribute a LEFT JOIN pg_index i ON i.indrelid = a.attrelid AND i.indisprimary
		WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`, qn)
	if err != nil {
		return nil, err
	}
	pkPos := map[int]column{}
	var col column
	var pos int
	if _, err := pgx.ForEachRow(rows, []any{&col.name, &col.typ, &col.generated, &pos}, func() error {
		ti.columns = append(ti.columns, col)
		if pos > 0 {
			pkPos[pos] = col
		}
		return nil
	}); err != nil {
		return nil, err
	}
	for i := 1; i <= len(pkPos); i++ {
		ti.pk = append(ti.pk, pkPos[i])
	}
	var tuples float64
	var pages int64
	if err := c.QueryRow(ctx, `SELECT pg_relation_size($1::regclass) / current_setting('block_size')::bigint, reltuples, relpages
		FROM pg_class WHERE oid = $1::regclass`, qn).Scan(&ti.blocks, &tuples, &pages); err != nil {
		return nil, err
	}
	if tuples < 0 || pages == 0 {
		// Never analyzed: count the rows of the first blocks.
		pages = min(ti.blocks, 16)
		if err := c.QueryRow(ctx, fmt.Sprintf("SELECT count(*) FROM %s WHERE ctid < '(%d,0)'::tid", qn, pages)).Scan(&tuples); err != nil {
			return nil, err
		}
	}
	if pages > 0 {
		ti.density = tuples / float64(pages)
	}
	return ti, nil
}

// pkText is a row's primary key as one text, '{1,2}'; the row's ctid when
// the table has no primary key.
func (ti *tableInfo) pkText(alias string) string {
	if len(ti.pk) == 0 {
		return alias + "ctid::text"
	}
	var parts []string
	for _, c := range ti.pk {
		parts = append(parts, alias+pgwire.QuoteIdent(c.name)+"::text")
	}
	return "ARRAY[" + strings.Join(parts, ", ") + "]::text"
}

// pkMatch is a condition selecting the row whose pkText is the parameter
// $n.
func (ti *tableInfo) pkMatch(n int) string {
	if len(ti.pk) == 0 {
		return fmt.Sprintf("ctid = $%d::text::tid", n)
	}
	var cols, vals []string
	for i, c := range ti.pk {
		cols = append(cols, pgwire.QuoteIdent(c.name))
		vals = append(vals, fmt.Sprintf("($%d::text::text[])[%d]::%s", n, i+1, c.typ))
	}
	return "(" + strings.Join(cols, ", ") + ") = (" + strings.Join(vals, ", ") + ")"
}

// pkRange is a condition selecting the rows whose primary key is after
// lo (nil: from the first) and up to hi (nil: to the last), with its
// parameters. A bound that is not there is left out of the SQL, not
// tested for NULL, so that Postgres scans the primary key's range.
func (ti *tableInfo) pkRange(lo, hi []string) (string, []any) {
	var cols []string
	for _, c := range ti.pk {
		cols = append(cols, pgwire.QuoteIdent(c.name))
	}
	row := "(" + strings.Join(cols, ", ") + ")"
	conds := []string{"true"}
	var args []any
	for _, b := range []struct {
		key []string
		op  string
	}{{lo, ">"}, {hi, "<="}} {
		if b.key == nil {
			continue
		}
		args = append(args, b.key)
		var vals []string
		for i, c := range ti.pk {
			vals = append(vals, fmt.Sprintf("($%d::text[])[%d]::%s", len(args), i+1, c.typ))
		}
		conds = append(conds, row+" "+b.op+" ("+strings.Join(vals, ", ")+")")
	}
	return strings.Join(conds, " AND "), args
}

// pkOrder is the primary key's columns, for ORDER BY.
func (ti *tableInfo) pkOrder() string {
	var cols []string
	for _, c := range ti.pk {
		cols = append(cols, pgwire.QuoteIdent(c.name))
	}
	return strings.Join(cols, ", ")
}

// rowText is a row's text form over the columns in order, the same on
// every cluster whose table has those columns, whatever their order there.
func (ti *tableInfo) rowText() string {
	var cols []string
	for _, c := range ti.columns {
		cols = append(cols, pgwire.QuoteIdent(c.name))
	}
	return "ROW(" + strings.Join(cols, ", ") + ")::text"
}

// writable lists the columns an INSERT may give (not generated ones).
func (ti *tableInfo) writable() string {
	var cols []string
	for _, c := range ti.columns {
		if !c.generated {
			cols = append(cols, pgwire.QuoteIdent(c.name))
		}
	}
	return strings.Join(cols, ", ")
}

// insertJSON inserts the row $1 (row_to_json's text) unless a row with its
// primary key is there: RETURNING tells whether it was inserted.
func (ti *tableInfo) insertJSON() string {
	cols := ti.writable()
	return fmt.Sprintf("INSERT INTO %s (%s) SELECT %s FROM json_populate_record(NULL::%s, $1::json) ON CONFLICT DO NOTHING RETURNING true",
		ti.name, cols, cols, ti.name)
}

// pkTexts is the primary key's columns as texts, for ARRAY[...].
func (ti *tableInfo) pkTexts() string {
	var parts []string
	for _, c := range ti.pk {
		parts = append(parts, pgwire.QuoteIdent(c.name)+"::text")
	}
	return strings.Join(parts, ", ")
}
