package vschema

import (
	"fmt"
	"slices"

	"github.com/shardgate/shardgate/topology"
)

// VSchema is the routing view of one topology. It is immutable.
type VSchema struct {
	topo      *topology.Topology
	groups    []*Group
	byName    map[string]*Group
	tables    map[topology.QualifiedName]*Table
	named     []*Table
	main      *Group
	secondary []*SecondaryIndex
}

// Build compiles a topology. The topology should come from
// topology.Parse or Load, which validate it; Build still refuses one that
// it cannot route with (a hand-made topology without a main group, say).
func Build(t *topology.Topology) (*VSchema, error) {
	v := &VSchema{
		topo:   t,
		byName: map[string]*Group{},
		tables: map[topology.QualifiedName]*Table{},
	}
	for _, tg := range t.Groups {
		g, err := buildGroup(tg)
		if err != nil {
			return nil, fmt.Errorf("group %q: %w", tg.Name, err)
		}
		for _, s := range g.Shards {
			if t.Cluster(s.Cluster) == nil {
				return nil, fmt.Errorf("group %q: shard %q names unknown cluster %q", g.Name, s.Name, s.Cluster)
			}
		}
		if _, dup := v.byName[g.Name]; dup {
			return nil, fmt.Errorf("group %q defined twice", g.Name)
		}
		v.groups = append(v.groups, g)
		v.byName[g.Name] = g
		if err := v.addTables(tg, g); err != nil {
			return nil, err
		}
	}
	v.main = v.byName[topology.MainGroup]
	if v.main == nil || !v.main.Unsharded {
		return nil, fmt.Errorf("topology has no unsharded main group")
	}
	return v, nil
}

func buildGroup(tg *topology.Group) (*Group, error) {
	g := &Group{Name: tg.Name, Unsharded: tg.Unsharded}
	if tg.Unsharded {
		g.Shards = []*Shard{{Name: "-", Cluster: tg.Cluster, names: []string{"-"}}}
		g.Clusters = []string{tg.Cluster}
		return g, nil
	}
	if tg.Index == nil || len(tg.Shards) == 0 {
		return nil, fmt.Errorf("a sharded group needs an index and shards")
	}
	ix, err := buildIndex(tg.Index, tg.Shards)
	if err != nil {
		return nil, err
	}
	g.Index = ix
	for i, ts := range tg.Shards {
		g.Shards = append(g.Shards, &Shard{Name: ts.Name, Cluster: ts.Cluster, Index: i, names: []string{ts.Name}})
		if !slices.Contains(g.Clusters, ts.Cluster) {
			g.Clusters = append(g.Clusters, ts.Cluster)
		}
	}
	if err := g.addPlacements(tg); err != nil {
		return nil, err
	}
	return g, nil
}

func buildIndex(ti *topology.Index, shards []*topology.Shard) (*Index, error) {
	typ, ok := ParseKeyType(ti.Type)
	if !ok {
		return nil, fmt.Errorf("index %q: unknown type %q", ti.Name, ti.Type)
	}
	if (ti.Column == "") == (ti.Expression == nil) {
		return nil, fmt.Errorf("index %q needs exactly one of column and expression", ti.Name)
	}
	ix := &Index{Name: ti.Name, Column: ti.Column, Expr: ti.Expression, Type: typ}
	switch ti.Function {
	case topology.FunctionXXHash:
		f := &xxhashFunction{}
		for i, s := range shards {
			if i > 0 && topology.CompareKeys(s.Start, shards[i-1].Start) <= 0 {
				return nil, fmt.Errorf("index %q: key ranges are not sorted", ti.Name)
			}
			f.starts = append(f.starts, s.Start)
		}
		if topology.CompareKeys(f.starts[0], nil) != 0 {
			return nil, fmt.Errorf("index %q: key ranges do not start at the beginning of the keyspace", ti.Name)
		}
		ix.Function = f
	case topology.FunctionRange:
		if !typ.IsInteger() {
			return nil, fmt.Errorf("index %q: range needs an integer type", ti.Name)
		}
		f := &rangeFunction{index: ti.Name}
		for _, s := range shards {
			f.from = append(f.from, s.From)
			f.to = append(f.to, s.To)
		}
		ix.Function = f
	case topology.FunctionModulo:
		if !typ.IsInteger() {
			return nil, fmt.Errorf("index %q: modulo needs an integer type", ti.Name)
		}
		ix.Function = &moduloFunction{n: int64(len(shards))}
	default:
		return nil, fmt.Errorf("index %q: unknown function %q", ti.Name, ti.Function)
	}
	return ix, nil
}

// addTables indexes a group's member and reference tables and its
// secondary indexes.
func (v *VSchema) addTables(tg *topology.Group, g *Group) error {
	add := func(t *Table) error {
		q := topology.QualifiedName{Schema: t.Schema, Name: t.Name}
		if _, dup := v.tables[q]; dup {
			return fmt.Errorf("table %s is in two groups", q)
		}
		v.tables[q] = t
		v.named = append(v.named, t)
		return nil
	}
	for _, tt := range tg.Tables {
		t := &Table{Schema: tt.Schema, Name: tt.Name, Group: g, Named: true}
		if g.Index != nil && g.Index.Expr == nil {
			t.KeyColumn = g.Index.Column
			if tt.Column != "" {
				t.KeyColumn = tt.Column
			}
		}
		if tt.Sequence != nil {
			t.Sequence = &SequenceBinding{Column: tt.Sequence.Column, Sequence: tt.Sequence.Name}
		}
		t.MoveRows = tt.ShardKeyUpdate == topology.ShardKeyMoveRow
		if err := add(t); err != nil {
			return err
		}
		g.Tables = append(g.Tables, t)
	}
	for _, name := range tg.Reference {
		t := &Table{Schema: name.Schema, Name: name.Name, Group: g, Named: true, Reference: true}
		if err := add(t); err != nil {
			return err
		}
		g.Reference = append(g.Reference, t)
	}
	for _, ts := range tg.SecondaryIndexes {
		t := v.tables[ts.Table]
		if t == nil || t.Group != g || t.Reference {
			return fmt.Errorf("secondary index %q: table %s is not a member of group %q", ts.Name, ts.Table, g.Name)
		}
		typ, ok := ParseKeyType(ts.Type)
		if !ok && len(ts.Columns) == 0 {
			return fmt.Errorf("secondary index %q: unknown type %q", ts.Name, ts.Type)
		}
		column := ts.Column
		if ts.Expression != nil || len(ts.Columns) > 0 {
			column = ExpressionColumn
		}
		var colTypes []KeyType
		for i, c := range ts.Columns {
			ct, ok := ParseKeyType(ts.ColumnTypes[i])
			if !ok {
				return fmt.Errorf("secondary index %q: unknown type %q of column %s", ts.Name, ts.ColumnTypes[i], c)
			}
			if c == t.KeyColumn || c == ExpressionColumn || c == CountColumn {
				return fmt.Errorf("secondary index %q: column %s cannot be indexed with others: its lookup table has a column %s of its own (the shard key, the composite value or the count)", ts.Name, c, c)
			}
			colTypes = append(colTypes, ct)
		}
		if len(colTypes) > 0 {
			typ = Text
		}
		si, err := newSecondaryIndex(ts.Name, t, column, ts.Expression, typ)
		if err != nil {
			return err
		}
		si.Columns, si.ColumnTypes = ts.Columns, colTypes
		si.Active, si.Unique, si.IgnoreNulls = ts.State == topology.StateActive, ts.Unique, ts.IgnoreNulls
		lq := topology.QualifiedName{Schema: t.Schema, Name: ts.Name}
		if _, dup := v.tables[lq]; dup {
			return fmt.Errorf("secondary index %q: its lookup table %s is already a table of the topology", ts.Name, lq)
		}
		v.tables[lq] = si.Lookup // routable, but not among Tables(): the topology does not name it
		t.SecondaryIndexes = append(t.SecondaryIndexes, si)
		g.SecondaryIndexes = append(g.SecondaryIndexes, si)
		v.secondary = append(v.secondary, si)
	}
	return nil
}

// Table resolves a table name as the SQL parser produced it (unquoted
// identifiers already lower-cased, quoted ones as written); an empty
// schema means public. A table the topology does not name lives in the
// main group, so a valid name never resolves to nil.
func (v *VSchema) Table(schema, name string) *Table {
	if schema == "" {
		schema = topology.DefaultSchema
	}
	if t, ok := v.tables[topology.QualifiedName{Schema: schema, Name: name}]; ok {
		return t
	}
	return &Table{Schema: schema, Name: name, Group: v.main}
}

// Tables returns the tables the topology names, group by group.
func (v *VSchema) Tables() []*Table { return v.named }

// Main returns the main group.
func (v *VSchema) Main() *Group { return v.main }

// Groups returns every group, in topology order.
func (v *VSchema) Groups() []*Group { return v.groups }

// Group returns the group with the given name, or nil.
func (v *VSchema) Group(name string) *Group { return v.byName[name] }

// Clusters returns the topology's clusters.
func (v *VSchema) Clusters() []*topology.Cluster { return v.topo.Clusters }

// Topology returns the topology the VSchema was built from.
func (v *VSchema) Topology() *topology.Topology { return v.topo }

// SecondaryIndexes returns every global secondary index, active or not.
func (v *VSchema) SecondaryIndexes() []*SecondaryIndex { return v.secondary }

// ClustersOf returns the distinct clusters a group's shards sit on, in
// order of first use, or nil for an unknown group. A scatter over the
// group visits each of them once.
func (v *VSchema) ClustersOf(group string) []string {
	if g := v.byName[group]; g != nil {
		return g.Clusters
	}
	return nil
}
