package topoinit

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Name is a schema-qualified relation name as the catalog spells it.
type Name struct{ Schema, Name string }

// Column is one column of a table.
type Column struct {
	Name string
	Type string // format_type without a type modifier: "bigint", "character varying"
}

// Table is one ordinary or partitioned table (partitions are left out:
// statements name their parent).
type Table struct {
	Name
	Columns    []Column
	PrimaryKey []string // in key order; nil without one
}

// ForeignKey is one FOREIGN KEY constraint.
type ForeignKey struct {
	From        Name
	FromColumns []string
	To          Name
	ToColumns   []string
}

// Sequence is one sequence, with the column that owns it (serial,
// identity, OWNED BY) when there is one.
type Sequence struct {
	Name
	OwnedBy *Name // the owning table
	Column  string
}

// Schema is what Inspect read from a database.
type Schema struct {
	Database    string
	Tables      []Table
	ForeignKeys []ForeignKey
	Sequences   []Sequence
}

// Table returns the table named n, or nil.
func (s *Schema) Table(n Name) *Table {
	for i := range s.Tables {
		if s.Tables[i].Name == n {
			return &s.Tables[i]
		}
	}
	return nil
}

// userRelations restricts pg_class c (namespace n) to the application's
// relations: not the system's, not shardgate's own schema, not temporary,
// not created by an extension.
const userRelations = `n.nspname NOT IN ('pg_catalog', 'information_schema', 'shardgate')
  AND n.nspname NOT LIKE 'pg\_toast%' AND n.nspname NOT LIKE 'pg\_temp\_%'
  AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype = 'e')`

const tablesSQL = `SELECT n.nspname, c.relname,
  coalesce((SELECT array_agg(a.attname::text ORDER BY a.attnum) FROM pg_attribute a
    WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped), '{}'),
  coalesce((SELECT array_agg(format_type(a.atttypid, NULL) ORDER BY a.attnum) FROM pg_attribute a
    WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped), '{}'),
  coalesce((SELECT array_agg(a.attname::text ORDER BY k.i) FROM pg_constraint p
    CROSS JOIN unnest(p.conkey) WITH ORDINALITY k(attnum, i)
    JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = k.attnum
    WHERE p.conrelid = c.oid AND p.contype = 'p'), '{}')
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition AND ` + userRelations + `
ORDER BY 1, 2`

const foreignKeysSQL = `SELECT fn.nspname, fc.relname,
  (SELECT array_agg(a.attname::text ORDER BY k.i) FROM unnest(co.conkey) WITH ORDINALITY k(attnum, i)
    JOIN pg_attribute a ON a.attrelid = co.conrelid AND a.attnum = k.attnum),
  tn.nspname, tc.relname,
  (SELECT array_agg(a.attname::text ORDER BY k.i) FROM unnest(co.confkey) WITH ORDINALITY k(attnum, i)
    JOIN pg_attribute a ON a.attrelid = co.confrelid AND a.attnum = k.attnum)
FROM pg_constraint co
JOIN pg_class fc ON fc.oid = co.conrelid JOIN pg_namespace fn ON fn.oid = fc.relnamespace
JOIN pg_class tc ON tc.oid = co.confrelid JOIN pg_namespace tn ON tn.oid = tc.relnamespace
WHERE co.contype = 'f' AND co.conparentid = 0
ORDER BY 1, 2, co.conname`

const sequencesSQL = `SELECT n.nspname, c.relname, tn.nspname, t.relname, a.attname::text
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_depend d ON d.classid = 'pg_class'::regclass AND d.objid = c.oid
  AND d.refclassid = 'pg_class'::regclass AND d.deptype IN ('a', 'i') AND d.refobjsubid > 0
LEFT JOIN pg_class t ON t.oid = d.refobjid
LEFT JOIN pg_namespace tn ON tn.oid = t.relnamespace
LEFT JOIN pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid
WHERE c.relkind = 'S' AND ` + userRelations + `
ORDER BY 1, 2`

// Inspect reads the tables, foreign keys and sequences of the database
// conn is connected to.
func Inspect(ctx context.Context, conn *pgx.Conn) (*Schema, error) {
	s := &Schema{Database: conn.Config().Database}
	rows, err := conn.Query(ctx, tablesSQL)
	if err != nil {
		return nil, fmt.Errorf("reading tables: %w", err)
	}
	var t Table
	var names, types []string
	_, err = pgx.ForEachRow(rows, []any{&t.Schema, &t.Name.Name, &names, &types, &t.PrimaryKey}, func() error {
		tab := Table{Name: t.Name, PrimaryKey: append([]string(nil), t.PrimaryKey...)}
		if len(tab.PrimaryKey) == 0 {
			tab.PrimaryKey = nil
		}
		for i, n := range names {
			tab.Columns = append(tab.Columns, Column{Name: n, Type: types[i]})
		}
		s.Tables = append(s.Tables, tab)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading tables: %w", err)
	}
	rows, err = conn.Query(ctx, foreignKeysSQL)
	if err != nil {
		return nil, fmt.Errorf("reading foreign keys: %w", err)
	}
	var fk ForeignKey
	_, err = pgx.ForEachRow(rows, []any{&fk.From.Schema, &fk.From.Name, &fk.FromColumns, &fk.To.Schema, &fk.To.Name, &fk.ToColumns}, func() error {
		s.ForeignKeys = append(s.ForeignKeys, ForeignKey{
			From: fk.From, FromColumns: append([]string(nil), fk.FromColumns...),
			To: fk.To, ToColumns: append([]string(nil), fk.ToColumns...),
		})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading foreign keys: %w", err)
	}
	rows, err = conn.Query(ctx, sequencesSQL)
	if err != nil {
		return nil, fmt.Errorf("reading sequences: %w", err)
	}
	var seq Name
	var ownerSchema, ownerName, column *string
	_, err = pgx.ForEachRow(rows, []any{&seq.Schema, &seq.Name, &ownerSchema, &ownerName, &column}, func() error {
		sq := Sequence{Name: seq}
		if ownerName != nil {
			sq.OwnedBy = &Name{Schema: *ownerSchema, Name: *ownerName}
			sq.Column = *column
		}
		s.Sequences = append(s.Sequences, sq)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading sequences: %w", err)
	}
	return s, nil
}
