package copyroute

import (
	"github.com/shardgate/shardgate/keyexpr"
	"github.com/shardgate/shardgate/pgcopy"
	"github.com/shardgate/shardgate/planner"
	"github.com/shardgate/shardgate/sqlerr"
)

// COPY FROM into a table with global secondary indexes: the scanner
// decodes the indexed columns' fields after the key's, and each routed
// row's key and values go to the Entries the proxy writes to the lookup
// shards after the COPY.

// indexFields adds the indexed columns (among cols, the COPY's columns;
// types: their type OIDs, binary) to the fields cfg decodes.
func (run *copyIn) indexFields(cfg *pgcopy.Config, cols []string, types map[string]uint32) error {
	ci := run.ci
	opts := &ci.Options
	for _, si := range ci.Indexes {
		pos := -1
		for i, c := range cols {
			if c == si.Column {
				pos = i
				break
			}
		}
		if pos < 0 {
			return sqlerr.New(sqlerr.FeatureNotSupported,
				"COPY into %s without column %s is not supported: the proxy would not maintain its global secondary index %s", ci.Table.Name, si.Column, si.Name).
				WithHint("List %s among the COPY's columns, with its values.", si.Column)
		}
		cfg.KeyPos = append(cfg.KeyPos, pos)
		cfg.Names = append(cfg.Names, si.Column)
		cfg.ForceNotNull = append(cfg.ForceNotNull, opts.HasForceNotNull(si.Column))
		cfg.ForceNull = append(cfg.ForceNull, opts.HasForceNull(si.Column))
		if opts.Format == planner.CopyBinary {
			t := types[si.Column]
			if !pgcopy.BinaryKeyType(t) {
				return sqlerr.New(sqlerr.FeatureNotSupported,
					"binary COPY into %s: shardgate cannot read column \"%s\" of type oid %d of global secondary index %s", ci.Table.Name, si.Column, t, si.Name).
					WithHint("Use FORMAT text or csv, or an indexed column of type bigint, integer, smallint, text, varchar or uuid.")
			}
			run.idxTypes = append(run.idxTypes, t)
		}
	}
	return nil
}

// entry passes a routed row's key and indexed values to run.entries.
func (run *copyIn) entry(row *pgcopy.Row) error {
	fields := row.Fields[len(run.keyNames)-b2i(run.fillKey):]
	vals := make([]*string, len(fields))
	for i, f := range fields {
		si := run.ci.Indexes[i]
		switch {
		case f.Default:
			return &pgcopy.FieldError{Line: row.Line, Column: si.Column,
				Err: sqlerr.New(sqlerr.FeatureNotSupported, "column \"%s\" of global secondary index %s cannot take its default in COPY", si.Column, si.Name)}
		case f.Null:
			continue
		}
		v := string(f.Value)
		if run.idxTypes != nil {
			kv, err := pgcopy.KeyValue(run.idxTypes[i], f.Value)
			if err != nil {
				return &pgcopy.FieldError{Line: row.Line, Column: si.Column, Value: f.Value, Err: err}
			}
			v = valueText(kv)
		}
		vals[i] = &v
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
