package vschema

import (
	"fmt"
	"slices"
	"strings"

	"github.com/shardgate/shardgate/keyexpr"
	"github.com/shardgate/shardgate/sqlerr"
	"github.com/shardgate/shardgate/topology"
)

// Group is a compiled shard group.
type Group struct {
	Name      string
	Unsharded bool
	Index     *Index   // nil for an unsharded group
	Shards    []*Shard // in keyspace order; an unsharded group has one, named "-"
	Clusters  []string // distinct clusters of the shards, in order of first use
	Tables    []*Table // member tables named in the topology
	Reference []*Table // reference tables
	// SecondaryIndexes are the group's global secondary indexes.
	SecondaryIndexes []*SecondaryIndex
	// placed maps the keys of the group's list and directory to where
	// they go (placement.go); nil when it has neither.
	placed map[Key]placement
}

// Shard is one shard of a group.
type Shard struct {
	Name    string // "-80", "0-100", "2", or "-" for an unsharded group
	Cluster string
	Index   int // position in Group.Shards
	names   []string
}

// Names is []string{s.Name}, made once: a statement's target names its
// shard without allocating. The slice is shared; its capacity is 1, so an
// append copies it.
func (s *Shard) Names() []string {
	if s.names == nil {
		return []string{s.Name}
	}
	return s.names[:1:1]
}

// ShardFor returns the shard that owns key: the one its list or
// directory entry names (placement.go), else the function's. An
// unsharded group's single shard owns every key. A key whose directory
// entry is pending is refused (55P03).
func (g *Group) ShardFor(key Key) (*Shard, error) {
	if g.placed != nil {
		if p, ok := g.placed[key]; ok {
			return g.placedShard(key, p)
		}
	}
	return g.FunctionShard(key)
}

// ShardsOnCluster returns the group's shards placed on a cluster, in
// keyspace order.
func (g *Group) ShardsOnCluster(cluster string) []*Shard {
	var out []*Shard
	for _, s := range g.Shards {
		if s.Cluster == cluster {
			out = append(out, s)
		}
	}
	return out
}

// Table is a table as routing sees it.
type Table struct {
	Schema, Name string
	Group        *Group
	// Named says whether the topology names the table. Tables it does not
	// name live in the main group.
	Named     bool
	Reference bool
	// KeyColumn is, for a member table of a group with a column index, the
	// table's column holding the key: its own column if it names one,
	// else the index column. Empty otherwise.
	KeyColumn string
	Sequence  *SequenceBinding // nil if no column is filled from a sequence
	// MoveRows: an UPDATE of the shard key moves the row even though the
	// group has other member tables (topology shard_key_update: move_row).
	MoveRows bool
	// SecondaryIndexes are the global secondary indexes on this table.
	SecondaryIndexes []*SecondaryIndex
	// LookupOf is set on a lookup table: the index it serves.
	LookupOf *SecondaryIndex
}

// String returns the schema-qualified name.
func (t *Table) String() string {
	return topology.QualifiedName{Schema: t.Schema, Name: t.Name}.String()
}

// Sharded reports whether rows of the table are spread over shards by key
// (a member table of a sharded group).
func (t *Table) Sharded() bool { return !t.Group.Unsharded && !t.Reference }

// KeyColumns returns the table's columns that its shard key is computed
// from, or nil if the table is not sharded.
func (t *Table) KeyColumns() []string {
	switch {
	case !t.Sharded():
		return nil
	case t.KeyColumn != "":
		return []string{t.KeyColumn}
	}
	return t.Group.Index.Columns()
}

// KeyFromColumns computes the shard key of a row of this member table,
// reading the table's own key column for a column index. See
// Index.KeyFromColumns.
func (t *Table) KeyFromColumns(env func(col string) (keyexpr.Value, bool)) (Key, error) {
	if !t.Sharded() {
		return Key{}, fmt.Errorf("table %s is not sharded", t)
	}
	return t.Group.Index.keyFrom(t.KeyColumn, env)
}

// ClusterOfRow names the cluster a row of t goes to: its shard key's,
// computed from the columns keyOf gives, every copy ("") of a reference
// table, the group's one cluster otherwise. A NULL key is a not-null
// violation (23502).
func (t *Table) ClusterOfRow(keyOf func(col string) (keyexpr.Value, bool)) (string, error) {
	switch {
	case t.Reference:
		return "", nil
	case !t.Sharded():
		return t.Group.Clusters[0], nil
	}
	key, err := t.KeyFromColumns(keyOf)
	if err != nil {
		if sqlerr.Code(err) == sqlerr.NullValueNotAllowed {
			err = sqlerr.New(sqlerr.NotNullViolation, "null value in shard key column of table %q", t.Name).
				WithDetail("A row without a shard key has no shard to live on.")
		}
		return "", err
	}
	sh, err := t.Group.ShardFor(key)
	if err != nil {
		return "", err
	}
	return sh.Cluster, nil
}

// SequenceBinding fills a column from a sequence in the main group.
type SequenceBinding struct {
	Column   string
	Sequence topology.QualifiedName
}

// SecondaryIndex is a global secondary index: a lookup from Column of
// Table to the table's shard key, kept in the derived table Lookup.
type SecondaryIndex struct {
	Name  string
	Group *Group
	Table *Table
	// Column is the indexed column of Table, and the lookup table's
	// value column; for an expression index, ExpressionColumn.
	Column string
	// Expr, when set, is the indexed expression of Table's columns
	// (lower(email)): Postgres computes its value in the owner's
	// statement (Source).
	Expr *keyexpr.Expr
	// Columns, when set, are the indexed columns of an index over several
	// columns, of the types ColumnTypes (composite.go): the value is their
	// composite (Composite), a text in ExpressionColumn.
	Columns     []string
	ColumnTypes []KeyType
	Type        KeyType
	// Active says the index is complete and may serve reads; a
	// backfilling index is only maintained on writes.
	Active bool
	// Unique: a value appears once in the whole group.
	Unique bool
	// IgnoreNulls: rows whose value is NULL have no entry; otherwise
	// they are refused.
	IgnoreNulls bool
	// Lookup is the lookup table: named after the index, in the owner
	// table's schema, with the columns Column (the value) and KeyColumn
	// (the owner's shard key; CountColumn too for a non-unique index),
	// sharded by the xxhash of the value on the shards of the owner's
	// group. Its Group is the index's own: the owner group's shards and
	// clusters, with an index on Column.
	Lookup *Table
}

// ExpressionColumn is the value column of an expression index's lookup
// table.
const ExpressionColumn = "value"

// Source is the SQL of the indexed value in a statement on the owner
// table: the column, or the expression, qualified by qualifier (an SQL
// name, "" for none).
func (si *SecondaryIndex) Source(qualifier string) string {
	q := ""
	if qualifier != "" {
		q = qualifier + "."
	}
	if si.Expr != nil {
		if qualifier == "" {
			return si.Expr.String()
		}
		return si.Expr.Qualified(qualifier)
	}
	if len(si.Columns) > 0 {
		return si.compositeSource(q)
	}
	return q + keyexpr.QuoteIdentifier(si.Column)
}

// Label names the indexed value as Postgres names an index's key in its
// messages: the column, or the expression (Key (lower(email))=(...)).
func (si *SecondaryIndex) Label() string {
	if si.Expr != nil {
		return si.Expr.String()
	}
	if len(si.Columns) > 0 {
		return strings.Join(si.Columns, ", ")
	}
	return si.Column
}

// Reads reports whether the indexed value depends on column col.
func (si *SecondaryIndex) Reads(col string) bool {
	if si.Expr != nil {
		return slices.Contains(si.Expr.Columns(), col)
	}
	if len(si.Columns) > 0 {
		return slices.Contains(si.Columns, col)
	}
	return si.Column == col
}

// CountColumn is the column of a non-unique index's lookup table that
// counts the owner rows with the same (value, key).
const CountColumn = "n"

// KeyColumn is the lookup table's column holding the owner's shard key:
// the owner table's own key column.
func (si *SecondaryIndex) KeyColumn() string { return si.Table.KeyColumn }

// KeyType is the type of the owner's shard key.
func (si *SecondaryIndex) KeyType() KeyType { return si.Group.Index.Type }

// newSecondaryIndex derives the lookup table and its group.
func newSecondaryIndex(name string, t *Table, column string, expr *keyexpr.Expr, typ KeyType) (*SecondaryIndex, error) {
	g := t.Group
	f, ok := g.Index.Function.(*xxhashFunction)
	if !ok || t.KeyColumn == "" {
		return nil, fmt.Errorf("secondary index %q: group %q must be sharded by xxhash of a column", name, g.Name)
	}
	if column == t.KeyColumn && expr == nil {
		return nil, fmt.Errorf("secondary index %q: column %s is already the shard key", name, column)
	}
	if expr != nil && column == t.KeyColumn {
		return nil, fmt.Errorf("secondary index %q: the shard key column of %s is named %s, the name of an expression index's value column", name, t, column)
	}
	lg := &Group{
		Name:     name,
		Index:    &Index{Name: name, Column: column, Type: typ, Function: &xxhashFunction{starts: f.starts}},
		Shards:   g.Shards,
		Clusters: g.Clusters,
	}
	lt := &Table{Schema: t.Schema, Name: name, Group: lg, Named: true, KeyColumn: column}
	lg.Tables = []*Table{lt}
	si := &SecondaryIndex{Name: name, Group: g, Table: t, Column: column, Expr: expr, Type: typ, Lookup: lt}
	lt.LookupOf = si
	return si, nil
}

// KeyFromValue converts a value of the indexed column to a key of the
// secondary index's type, with the same rules as Index.KeyFromValue.
func (si *SecondaryIndex) KeyFromValue(v keyexpr.Value) (Key, error) {
	ix := Index{Name: si.Name, Column: si.Column, Type: si.Type}
	return ix.KeyFromValue(v)
}
