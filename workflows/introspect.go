package workflows

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/shardgate/shardgate/pgcopy"
	"github.com/shardgate/shardgate/sqlerr"
	"github.com/shardgate/shardgate/topology"
)

// column is one column of a source table.
type column struct {
	Name      string
	Type      string // format_type: "bigint", "character varying(20)"
	OID       uint32
	NotNull   bool
	Generated string // the expression of a stored generated column, else ""
	// Default is the column's DEFAULT expression, else "". A default that
	// draws from a sequence is left out: the sequence is the source's (the
	// proxy fills the sequence columns the topology names).
	Default string
}

// tableInfo is what the workflow reads of a table in the source cluster.
type tableInfo struct {
	Name    topology.QualifiedName
	Columns []column
	PK      []string // primary key columns, in key order
	Checks  []string // CHECK constraints: "CONSTRAINT name CHECK (...)"
	Indexes []string // CREATE INDEX statements of the other indexes
	Rows    int64    // estimate (reltuples), or -1 if never analyzed
}

// queryer is a pgx.Conn or pgx.Tx.
type queryer interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// readTable reads a table's columns, primary key and indexes. A missing
// table is 42P01 naming it; a table without a primary key is 55000.
func readTable(ctx context.Context, q queryer, name topology.QualifiedName, cluster string) (*tableInfo, error) {
	var oid uint32
	var reltuples float64
	err := q.QueryRow(ctx, `SELECT c.oid, c.reltuples FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1 AND c.relname = $2 AND c.relkind IN ('r', 'p')`, name.Schema, name.Name).Scan(&oid, &reltuples)
	if err == pgx.ErrNoRows {
		return nil, sqlerr.New(sqlerr.UndefinedTable, "table %s does not exist in cluster %s", name, cluster)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: read %s: %w", cluster, name, err)
	}
	ti := &tableInfo{Name: name, Rows: int64(reltuples)}
	rows, err := q.Query(ctx, `SELECT a.attname, format_type(a.atttypid, a.atttypmod), a.atttypid, a.attnotnull,
			CASE WHEN a.attgenerated = 's' THEN pg_get_expr(d.adbin, d.adrelid) ELSE '' END,
			CASE WHEN a.attgenerated = '' AND d.oid IS NOT NULL AND NOT EXISTS (SELECT 1 FROM pg_depend dep
				JOIN pg_class s ON s.oid = dep.refobjid AND dep.refclassid = 'pg_class'::regclass AND s.relkind = 'S'
				WHERE dep.classid = 'pg_attrdef'::regclass AND dep.objid = d.oid)
			THEN pg_get_expr(d.adbin, d.adrelid) ELSE '' END
		FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
		WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`, oid)
	if err != nil {
		return nil, err
	}
	var c column
	if _, err := pgx.ForEachRow(rows, []any{&c.Name, &c.Type, &c.OID, &c.NotNull, &c.Generated, &c.Default}, func() error {
		ti.Columns = append(ti.Columns, c)
		return nil
	}); err != nil {
		return nil, err
	}
	rows, err = q.Query(ctx, `SELECT a.attname FROM pg_index i, unnest(i.indkey) WITH ORDINALITY k(attnum, ord), pg_attribute a
		WHERE i.indrelid = $1 AND i.indisprimary AND a.attrelid = i.indrelid AND a.attnum = k.attnum ORDER BY k.ord`, oid)
	if err != nil {
		return nil, err
	}
	if ti.PK, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		return nil, err
	}
	if len(ti.PK) == 0 {
		return nil, refused("table %s has no primary key in cluster %s", name, cluster).
			WithHint("A workflow copies in primary-key order and applies changes by primary key; add one first.")
	}
	rows, err = q.Query(ctx, `SELECT format('CONSTRAINT %I %s', conname, pg_get_constraintdef(oid)) FROM pg_constraint
		WHERE conrelid = $1 AND contype = 'c' ORDER BY conname`, oid)
	if err != nil {
		return nil, err
	}
	if ti.Checks, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		return nil, err
	}
	rows, err = q.Query(ctx, `SELECT pg_get_indexdef(indexrelid) FROM pg_index WHERE indrelid = $1 AND NOT indisprimary ORDER BY indexrelid`, oid)
	if err != nil {
		return nil, err
	}
	if ti.Indexes, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		return nil, err
	}
	for i, d := range ti.Indexes {
		ti.Indexes[i] = createIndexRE.ReplaceAllString(d, "${1}IF NOT EXISTS ")
	}
	return ti, nil
}

var createIndexRE = regexp.MustCompile(`^(CREATE (?:UNIQUE )?INDEX )`)

// copyColumns returns the columns a copy reads and writes: all but the
// generated ones.
func (ti *tableInfo) copyColumns() []column {
	var out []column
	for _, c := range ti.Columns {
		if c.Generated == "" {
			out = append(out, c)
		}
	}
	return out
}

func (ti *tableInfo) column(name string) (column, bool) {
	for _, c := range ti.Columns {
		if c.Name == name {
			return c, true
		}
	}
	return column{}, false
}

// checkKey refuses a table whose shard key columns are missing or of a
// type the copy cannot read.
func (ti *tableInfo) checkKey(tp *TablePlan) error {
	if !tp.Route.Sharded() {
		return nil
	}
	for _, k := range tp.Route.KeyColumns() {
		c, ok := ti.column(k)
		if !ok {
			return sqlerr.New(sqlerr.UndefinedColumn, "table %s has no shard key column %q", ti.Name, k)
		}
		if !pgcopy.BinaryKeyType(c.OID) {
			return sqlerr.New(sqlerr.FeatureNotSupported, "shard key column %q of table %s has type %s, which a workflow cannot route", k, ti.Name, c.Type)
		}
	}
	return nil
}

// createSQL is the CREATE TABLE for a missing target table: columns, NOT
// NULL, defaults, generated expressions, CHECK constraints and the
// primary key.
func (ti *tableInfo) createSQL() string {
	var b strings.Builder
	fmt.Fprintf(&b, "CREATE TABLE IF NOT EXISTS %s (", qname(ti.Name))
	for _, c := range ti.Columns {
		fmt.Fprintf(&b, "%s %s", ident(c.Name), c.Type)
		if c.Generated != "" {
			fmt.Fprintf(&b, " GENERATED ALWAYS AS (%s) STORED", c.Generated)
		}
		if c.Default != "" {
			fmt.Fprintf(&b, " DEFAULT %s", c.Default)
		}
		if c.NotNull {
			b.WriteString(" NOT NULL")
		}
		b.WriteString(", ")
	}
	for _, ck := range ti.Checks {
		b.WriteString(ck + ", ")
	}
	fmt.Fprintf(&b, "PRIMARY KEY (%s))", identList(ti.PK))
	return b.String()
}

func ident(s string) string { return pgx.Identifier{s}.Sanitize() }

func qname(q topology.QualifiedName) string { return pgx.Identifier{q.Schema, q.Name}.Sanitize() }

func identList(names []string) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = ident(n)
	}
	return strings.Join(out, ", ")
}

func columnNames(cs []column) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Name
	}
	return out
}
