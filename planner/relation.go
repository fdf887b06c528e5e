package planner

import (
	"strings"

	"github.com/shardgate/shardgate/keyexpr"
	"github.com/shardgate/shardgate/topology"
	"github.com/shardgate/shardgate/vschema"
)

// relKind is how a table is placed.
type relKind uint8

const (
	relUnsharded relKind = iota // a table of an unsharded group: main, catalogs, unnamed tables
	relReference                // a full copy on every cluster of its group
	relSharded                  // a member table: rows spread over shards by key
)

// relInfo is what routing needs to know about one table.
type relInfo struct {
	table        *vschema.Table
	group        *vschema.Group
	kind         relKind
	schema, name string
	display      string            // for messages: name, schema-qualified outside public
	keyCols      map[string]string // member tables: table column -> index column
	indexColumns []string          // the index's columns, in the index's names
	expression   bool              // the index is an expression
	keyDisplay   string            // the key for hints: customer_id, lower(sku)
}

// lookup resolves a table name as the parser produced it. pg_catalog and
// information_schema relations, and every name the topology does not list,
// are tables of the main group.
func (p *Planner) lookup(schema, name string) *relInfo {
	t := p.vs.Table(schema, name)
	r := &relInfo{table: t, group: t.Group, schema: t.Schema, name: t.Name, display: t.Name}
	if t.Schema != topology.DefaultSchema {
		r.display = t.Schema + "." + t.Name
	}
	switch {
	case t.Group.Unsharded:
		r.kind = relUnsharded
	case t.Reference:
		r.kind = relReference
	default:
		r.kind = relSharded
		ix := t.Group.Index
		r.indexColumns = ix.Columns()
		r.keyCols = map[string]string{}
		if ix.Expr == nil {
			r.keyCols[t.KeyColumn] = ix.Column
			r.keyDisplay = t.KeyColumn
		} else {
			r.expression = true
			for _, c := range r.indexColumns {
				r.keyCols[c] = c
			}
			r.keyDisplay = ix.Expr.String()
		}
	}
	return r
}

// tableColumn returns the table's column for an index column.
func (r *relInfo) tableColumn(ixCol string) string {
	for t, ix := range r.keyCols {
		if ix == ixCol {
			return t
		}
	}
	return ixCol
}

func (r *relInfo) indexColumnCount() int { return len(r.indexColumns) }

// sequenceFor names the sequence that fills col, or "".
func (r *relInfo) sequenceFor(col string) string {
	if s := r.table.Sequence; s != nil && s.Column == col {
		if s.Sequence.Schema == topology.DefaultSchema {
			return s.Sequence.Name
		}
		return s.Sequence.String()
	}
	return ""
}

// shardFor evaluates a key reference and finds its shard. Conversion
// errors carry the backend's SQLSTATE (22P02, 22003, 22004). A nil shard
// (and no error) means that no key can equal the value (7.5 against an
// integer key): a comparison with it holds for no row.
func shardFor(g *vschema.Group, k KeyRef, params []Param) (*vschema.Shard, error) {
	return shardForKey(g, k, params, nil)
}

// shardForKey is shardFor with a cache of IN lists' common types, for a
// loop over the keys of one plan and one set of parameters.
func shardForKey(g *vschema.Group, k KeyRef, params []Param, lists listTypes) (*vschema.Shard, error) {
	key, ok, err := keyFor(g.Index, k, params, lists)
	if err != nil || !ok {
		return nil, err
	}
	return g.ShardFor(key)
}

func keyFor(ix *vschema.Index, k KeyRef, params []Param, lists listTypes) (vschema.Key, bool, error) {
	if k.Whole != nil {
		in, ok, err := k.Whole.keyInput(params, ix.Type, k.assign, false, ix.Name, lists)
		if err != nil || !ok {
			return vschema.Key{}, false, err
		}
		key, err := ix.KeyFromValue(in)
		return key, err == nil, err
	}
	if c := k.Columns; ix.Expr == nil && len(c) == 1 && c[0].Column == ix.Column {
		// The index's own column (what KeyFromColumns would look up).
		in, ok, err := c[0].Value.keyInput(params, ix.Type, k.assign, false, c[0].Column, lists)
		if err != nil || !ok {
			return vschema.Key{}, false, err
		}
		key, err := ix.KeyFromValue(in)
		return key, err == nil, err
	}
	vals := make([]keyexpr.Value, len(k.Columns))
	for i, c := range k.Columns {
		in, ok, err := c.Value.keyInput(params, ix.Type, k.assign, ix.Expr != nil, c.Column, lists)
		if err != nil || !ok {
			return vschema.Key{}, false, err
		}
		vals[i] = in
	}
	key, err := ix.KeyFromColumns(func(col string) (keyexpr.Value, bool) {
		for i, c := range k.Columns {
			if c.Column == col {
				return vals[i], true
			}
		}
		return keyexpr.Value{}, false
	})
	return key, err == nil, err
}

// qualifiedName joins a name list (DROP TABLE s.t) into schema and name.
func qualifiedName(parts []string) (schema, name string) {
	switch len(parts) {
	case 0:
		return "", ""
	case 1:
		return "", parts[0]
	}
	return parts[len(parts)-2], parts[len(parts)-1]
}

// isCatalogSchema reports the system schemas.
func isCatalogSchema(s string) bool {
	return s == "pg_catalog" || s == "information_schema" || strings.HasPrefix(s, "pg_toast") || strings.HasPrefix(s, "pg_temp")
}
