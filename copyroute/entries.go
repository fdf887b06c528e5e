package copyroute

import (
	"slices"

	"github.com/shardgate/shardgate/keyexpr"
	"github.com/shardgate/shardgate/pgcopy"
	"github.com/shardgate/shardgate/planner"
	"github.com/shardgate/shardgate/sqlerr"
	"github.com/shardgate/shardgate/vschema"
)

// COPY FROM into a table with global secondary indexes: the scanner
// decodes the indexed columns' fields after the key's, and each routed
// row's key and values go to the Entries the proxy writes to the lookup
// shards after the COPY.

// indexFields adds the indexed columns (among cols, the COPY's columns;
// types: their type OIDs, binary) to the fields cfg decodes: each index's
// column, or its columns (an index over several columns).
func (run *copyIn) indexFields(cfg *pgcopy.Config, cols []string, types map[string]uint32) error {
	ci := run.ci
	opts := &ci.Options
	for _, si := range ci.Indexes {
		for _, col := range si.ValueColumns() {
			pos := slices.Index(cols, col)
			filled := pos < 0 && ci.Fill != nil && ci.Fill.Column == col
			run.idxFilled = append(run.idxFilled, filled)
			if filled {
				continue // the drawn value (entry)
			}
			if pos < 0 {
				return sqlerr.New(sqlerr.FeatureNotSupported,
					"COPY into %s without column %s is not supported: the proxy would not maintain its global secondary index %s", ci.Table.Name, col, si.Name).
					WithHint("List %s among the COPY's columns, with its values.", col)
			}
			cfg.KeyPos = append(cfg.KeyPos, pos)
			cfg.Names = append(cfg.Names, col)
			cfg.ForceNotNull = append(cfg.ForceNotNull, opts.HasForceNotNull(col))
			cfg.ForceNull = append(cfg.ForceNull, opts.HasForceNull(col))
			if opts.Format == planner.CopyBinary {
				t := types[col]
				if !pgcopy.BinaryKeyType(t) {
					return sqlerr.New(sqlerr.FeatureNotSupported,
						"binary COPY into %s: shardgate cannot read column \"%s\" of type oid %d of global secondary index %s", ci.Table.Name, col, t, si.Name).
						WithHint("Use FORMAT text or csv, or an indexed column of type bigint, integer, smallint, text, varchar or uuid.")
				}
				run.idxTypes = append(run.idxTypes, t)
			}
		}
	}
	return nil
}

// entry passes a routed row's key and indexed values to run.entries: an
// index over several columns has the composite of its columns' values
// (vschema.Composite, the text Postgres's json_build_array makes), NULL
// when one of them is NULL.
func (run *copyIn) entry(row *pgcopy.Row) error {
	fields := row.Fields[len(run.keyNames)-b2i(run.fillKey):]
	vals := make([]*string, len(run.ci.Indexes))
	f := 0 // the next field
	c := 0 // the next indexed column
	for i, si := range run.ci.Indexes {
		cols := si.ValueColumns()
		var keys []vschema.Key
		null := false
		for j, col := range cols {
			c++
			if run.idxFilled[c-1] {
				v := keyexpr.Int(run.drawn)
				if len(si.Columns) == 0 {
					s := v.String()
					vals[i] = &s
					continue
				}
				k, err := si.ColumnKey(j, v)
				if err != nil {
					return &pgcopy.FieldError{Line: row.Line, Column: col, Err: err}
				}
				keys = append(keys, k)
				continue
			}
			fd := fields[f]
			f++
			switch {
			case fd.Default:
				return &pgcopy.FieldError{Line: row.Line, Column: col,
					Err: sqlerr.New(sqlerr.FeatureNotSupported, "column \"%s\" of global secondary index %s cannot take its default in COPY", col, si.Name)}
			case fd.Null:
				null = true
				continue
			}
			v := keyexpr.Value(keyexpr.Text(string(fd.Value)))
			if run.idxTypes != nil {
				kv, err := pgcopy.KeyValue(run.idxTypes[f-1], fd.Value)
				if err != nil {
					return &pgcopy.FieldError{Line: row.Line, Column: col, Value: fd.Value, Err: err}
				}
				v = kv
			}
			if len(si.Columns) == 0 {
				s := string(fd.Value) // text or csv: as the client wrote it
				if run.idxTypes != nil {
					s = valueText(v)
				}
				vals[i] = &s
				continue
			}
			k, err := si.ColumnKey(j, v)
			if err != nil {
				return &pgcopy.FieldError{Line: row.Line, Column: col, Value: fd.Value, Err: err}
			}
			keys = append(keys, k)
		}
		if len(si.Columns) > 0 && !null {
			s := vschema.Composite(keys)
			vals[i] = &s
		}
	}
	run.entries.Add(valueText(run.keyVals[0]), vals)
	return nil
}

// valueText is a decoded value as Postgres's text.
func valueText(v keyexpr.Value) string {
	if n, ok := v.AsInt(); ok {
		return keyexpr.Int(n).String()
	}
	s, _ := v.AsText()
	return s
}
