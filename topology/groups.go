package topology

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/shardgate/shardgate/keyexpr"
)

var groupKeys = []string{"unsharded", "cluster", "tables", "sequences", "index", "shards", "reference", "secondary_indexes",
	"placement", "list", "lookup_clusters"}

// claim records which group first named a table, so that a second mention
// anywhere can say where the first one is.
type claim struct {
	group     string
	reference bool
	line      int
}

// groupDecoder holds what validating one group needs from the others.
type groupDecoder struct {
	*decoder
	t      *Topology
	claims map[QualifiedName]claim
}

func (d *decoder) groups(f field, t *Topology) {
	ps, ok := d.pairs(f.val, "groups")
	if !ok {
		return
	}
	gd := &groupDecoder{decoder: d, t: t, claims: map[QualifiedName]claim{}}
	for _, p := range ps {
		t.Groups = append(t.Groups, gd.group(p))
	}
	main := t.Main()
	if main == nil {
		d.errorf(f.key, "missing main group (every topology needs an unsharded group named main, holding sequences and every table not named elsewhere)")
	}
	gd.checkSequenceBindings(main)
	gd.checkUniqueNames()
	gd.checkUnusedClusters()
}

func (gd *groupDecoder) group(p field) *Group {
	g := &Group{Name: p.key.Value, Pos: pos(p.key)}
	what := fmt.Sprintf("group %q", g.Name)
	fs, ok := gd.fields(p.val, what, groupKeys...)
	if !ok {
		return g
	}
	if f, ok := fs["unsharded"]; ok {
		v, ok := gd.boolean(f.val, "unsharded")
		if !ok {
			return g // which rules apply is unknown; say no more
		}
		g.Unsharded = v
	}
	if g.Name == MainGroup && !g.Unsharded {
		gd.errorf(p.key, "group main must be unsharded (add unsharded: true)")
	}
	if g.Unsharded {
		gd.unsharded(g, p, fs)
	} else {
		gd.sharded(g, p, fs)
	}
	return g
}

func (gd *groupDecoder) unsharded(g *Group, p field, fs map[string]field) {
	for _, k := range []string{"index", "shards", "reference", "secondary_indexes", "placement", "list", "lookup_clusters"} {
		if f, ok := fs[k]; ok {
			gd.errorf(f.key, "%s: is not allowed in an unsharded group", k)
		}
	}
	if f, ok := gd.required(fs, p.key, "cluster", fmt.Sprintf("unsharded group %q", g.Name)); ok {
		g.Cluster, _ = gd.clusterRef(f.val, gd.t)
	}
	if f, ok := fs["tables"]; ok {
		items, _ := gd.list(f.val, "tables of an unsharded group")
		for _, it := range items {
			if name, ok := gd.relation(it, "table"); ok && gd.claim(name, g, false, it) {
				g.Tables = append(g.Tables, &Table{QualifiedName: name, Pos: pos(it)})
			}
		}
	}
	if f, ok := fs["sequences"]; ok {
		if g.Name != MainGroup {
			gd.errorf(f.key, "sequences: belong to the main group, not to group %q", g.Name)
			return
		}
		items, _ := gd.list(f.val, "sequences")
		first := map[QualifiedName]int{}
		for _, it := range items {
			name, ok := gd.relation(it, "sequence")
			if !ok {
				continue
			}
			if line, dup := first[name]; dup {
				gd.errorf(it, "sequence %s is listed twice (first at line %d)", name, line)
				continue
			}
			first[name] = it.Line
			g.Sequences = append(g.Sequences, name)
		}
	}
}

func (gd *groupDecoder) sharded(g *Group, p field, fs map[string]field) {
	if f, ok := fs["cluster"]; ok {
		gd.errorf(f.key, "cluster: is only for unsharded groups; a sharded group places its shards with shards:")
	}
	if f, ok := fs["sequences"]; ok {
		gd.errorf(f.key, "sequences: belong to the main group, not to group %q", g.Name)
	}
	what := fmt.Sprintf("sharded group %q (or set unsharded: true)", g.Name)
	if f, ok := gd.required(fs, p.key, "index", what); ok {
		g.Index = gd.index(f, g)
	}
	if f, ok := gd.required(fs, p.key, "shards", fmt.Sprintf("sharded group %q", g.Name)); ok && g.Index != nil {
		gd.shards(f, g)
	}
	if f, ok := fs["tables"]; ok {
		gd.memberTables(f, g)
	}
	if f, ok := fs["reference"]; ok {
		items, _ := gd.list(f.val, "reference")
		for _, it := range items {
			if name, ok := gd.relation(it, "reference table"); ok && gd.claim(name, g, true, it) {
				g.Reference = append(g.Reference, name)
			}
		}
	}
	if f, ok := fs["secondary_indexes"]; ok {
		gd.secondaryIndexes(f, g)
	}
	gd.placement(g, fs)
}

// relation reads a table or sequence name.
func (d *decoder) relation(n *yaml.Node, what string) (QualifiedName, bool) {
	s, ok := d.str(n, what+" name")
	if !ok {
		return QualifiedName{}, false
	}
	name, err := ParseQualifiedName(s)
	if err != nil {
		d.errorf(n, "%v", err)
		return QualifiedName{}, false
	}
	return name, true
}

// claim records that g names a table, refusing a table named twice.
func (gd *groupDecoder) claim(name QualifiedName, g *Group, reference bool, n *yaml.Node) bool {
	c, dup := gd.claims[name]
	if !dup {
		gd.claims[name] = claim{group: g.Name, reference: reference, line: n.Line}
		return true
	}
	switch {
	case c.group == g.Name && c.reference != reference:
		gd.errorf(n, "table %s is both a member and a reference table of group %q (line %d)", name, g.Name, c.line)
	case c.group == g.Name:
		gd.errorf(n, "table %s is listed twice in group %q (first at line %d)", name, g.Name, c.line)
	case c.reference && reference:
		gd.errorf(n, "reference table %s is already a reference table of group %q (line %d); a reference table belongs to one group", name, c.group, c.line)
	default:
		gd.errorf(n, "table %s is already in group %q (line %d); a table belongs to one group", name, c.group, c.line)
	}
	return false
}

// keyTypes maps accepted type spellings to canonical names.
var keyTypes = map[string]string{
	"bigint": TypeBigint, "int8": TypeBigint,
	"integer": TypeInteger, "int": TypeInteger, "int4": TypeInteger,
	"smallint": TypeSmallint, "int2": TypeSmallint,
	"text": TypeText, "varchar": TypeVarchar, "character varying": TypeVarchar,
	"uuid": TypeUUID,
}

var keyTypeNames = []string{TypeBigint, TypeInteger, TypeSmallint, TypeText, TypeVarchar, TypeUUID}

// IsIntegerType reports whether a canonical key type is an integer type.
func IsIntegerType(t string) bool {
	return t == TypeBigint || t == TypeInteger || t == TypeSmallint
}

func (d *decoder) keyType(n *yaml.Node) (string, bool) {
	s, ok := d.str(n, "type")
	if !ok {
		return "", false
	}
	if t, ok := keyTypes[strings.ToLower(s)]; ok {
		return t, true
	}
	msg := fmt.Sprintf("unknown type %q (expected %s)", s, orList(keyTypeNames))
	if sug, ok := suggest(strings.ToLower(s), keyTypeNames); ok {
		msg = fmt.Sprintf("unknown type %q (did you mean %q?)", s, sug)
	}
	d.errorf(n, "%s", msg)
	return "", false
}

func (gd *groupDecoder) index(f field, g *Group) *Index {
	fs, ok := gd.fields(f.val, "index", "name", "column", "expression", "type", "function")
	if !ok {
		return nil
	}
	ix := &Index{Name: g.Name, Pos: pos(f.val)}
	if nf, ok := fs["name"]; ok {
		ix.Name, _ = gd.str(nf.val, "index name")
	}
	col, hasCol := fs["column"]
	expr, hasExpr := fs["expression"]
	switch {
	case hasCol && hasExpr:
		later := expr.key
		if col.key.Line > later.Line || (col.key.Line == later.Line && col.key.Column > later.Column) {
			later = col.key
		}
		gd.errorf(later, "index has both column: and expression:; set exactly one")
	case !hasCol && !hasExpr:
		gd.errorf(f.val, "index needs column: or expression:")
	}
	if hasCol {
		if s, ok := gd.str(col.val, "column"); ok {
			c, err := ParseIdentifier(s)
			if err != nil {
				gd.errorf(col.val, "%v", err)
			}
			ix.Column = c
		}
	}
	if hasExpr {
		ix.Expression = gd.expression(expr, "key")
	}
	if tf, ok := gd.required(fs, f.val, "type", "index"); ok {
		ix.Type, _ = gd.keyType(tf.val)
	}
	if ff, ok := gd.required(fs, f.val, "function", "index"); ok {
		ix.Function, _ = gd.oneOf(ff.val, "function", FunctionXXHash, FunctionRange, FunctionModulo)
		if (ix.Function == FunctionRange || ix.Function == FunctionModulo) && ix.Type != "" && !IsIntegerType(ix.Type) {
			gd.errorf(ff.val, "function %s needs an integer key type (bigint, integer or smallint), not %s", ix.Function, ix.Type)
		}
		if ix.Function == FunctionModulo {
			gd.warnf(ff.val, "function modulo: changing the number of shards moves nearly every row")
		}
	}
	return ix
}

// expression parses an index expression (nil if it is not a string); an
// expression that reads no column is refused: every row would have the
// same what.
func (gd *groupDecoder) expression(f field, what string) *keyexpr.Expr {
	s, ok := gd.str(f.val, "expression")
	if !ok {
		return nil
	}
	e, err := keyexpr.Parse(s)
	switch {
	case err != nil:
		gd.report(gd.innerPosition(f.val, expressionOffset(err)), false, "%v", err)
	case len(e.Columns()) == 0:
		gd.errorf(f.val, "index expression %s reads no column, so every row would have the same %s", e, what)
	}
	return e
}

// expressionOffset returns the byte offset a keyexpr error points at.
func expressionOffset(err error) int {
	var ue *keyexpr.UnsupportedError
	var se *keyexpr.SyntaxError
	switch {
	case errors.As(err, &ue):
		return ue.Offset
	case errors.As(err, &se):
		return se.Offset
	}
	return 0
}

func (gd *groupDecoder) memberTables(f field, g *Group) {
	ps, ok := gd.pairs(f.val, "tables of a sharded group")
	if !ok {
		return
	}
	for _, p := range ps {
		name, ok := gd.relation(p.key, "table")
		if !ok {
			continue
		}
		fs, _ := gd.fields(p.val, "table", "column", "sequence", "shard_key_update")
		t := &Table{QualifiedName: name, Pos: pos(p.key)}
		if cf, ok := fs["column"]; ok {
			if g.Index != nil && g.Index.Expression != nil {
				gd.errorf(cf.key, "column: applies only to a column index; index %q is an expression", g.Index.Name)
			} else if s, ok := gd.str(cf.val, "column"); ok {
				c, err := ParseIdentifier(s)
				if err != nil {
					gd.errorf(cf.val, "%v", err)
				}
				t.Column = c
			}
		}
		if sf, ok := fs["sequence"]; ok {
			t.Sequence = gd.sequenceBinding(sf)
		}
		if uf, ok := fs["shard_key_update"]; ok {
			t.ShardKeyUpdate, _ = gd.oneOf(uf.val, "shard_key_update", ShardKeyRefuse, ShardKeyMoveRow)
		}
		if gd.claim(name, g, false, p.key) {
			g.Tables = append(g.Tables, t)
		}
	}
}

func (gd *groupDecoder) sequenceBinding(f field) *SequenceBinding {
	fs, ok := gd.fields(f.val, "sequence", "column", "name")
	if !ok {
		return nil
	}
	b := &SequenceBinding{Pos: pos(f.val)}
	if cf, ok := gd.required(fs, f.val, "column", "sequence"); ok {
		if s, ok := gd.str(cf.val, "column"); ok {
			c, err := ParseIdentifier(s)
			if err != nil {
				gd.errorf(cf.val, "%v", err)
			}
			b.Column = c
		}
	}
	if nf, ok := gd.required(fs, f.val, "name", "sequence"); ok {
		b.Name, _ = gd.relation(nf.val, "sequence")
		b.Pos = pos(nf.val)
	}
	return b
}

func (gd *groupDecoder) secondaryIndexes(f field, g *Group) {
	ps, ok := gd.pairs(f.val, "secondary_indexes")
	if !ok {
		return
	}
	if g.Index != nil && g.Index.Function != "" && g.Index.Function != FunctionXXHash {
		gd.errorf(f.key, "secondary_indexes: need a group sharded by xxhash (their lookup tables share its shards); group %q uses %s", g.Name, g.Index.Function)
	}
	for _, p := range ps {
		si := &SecondaryIndex{Name: p.key.Value, State: StateBackfilling, IgnoreNulls: true, Pos: pos(p.key)}
		fs, ok := gd.fields(p.val, "secondary index", "table", "column", "columns", "expression", "type", "unique", "ignore_nulls", "state")
		if !ok {
			continue
		}
		what := fmt.Sprintf("secondary index %q", si.Name)
		if _, err := ParseIdentifier(si.Name); err != nil {
			gd.errorf(p.key, "secondary index name: %v (it names the lookup table)", err)
		}
		if tf, ok := gd.required(fs, p.key, "table", what); ok {
			if name, ok := gd.relation(tf.val, "table"); ok {
				si.Table = name
				if g.Table(name) == nil {
					gd.errorf(tf.val, "secondary index %q names table %s, which is not a member table of group %q", si.Name, name, g.Name)
				}
			}
		}
		ccf, hasCols := fs["columns"]
		xf, hasExpr := fs["expression"]
		cf, hasCol := fs["column"]
		if hasCols && (hasExpr || hasCol) {
			gd.errorf(ccf.key, "%s has columns: and column: or expression:; give one", what)
		} else if hasCols {
			si.Columns = gd.indexColumns(ccf, what)
		}
		if hasExpr && hasCol {
			gd.errorf(xf.key, "%s has both column: and expression:; give one", what)
		} else if hasExpr {
			si.Expression = gd.expression(xf, "value")
		}
		if hasCol {
			if s, ok := gd.str(cf.val, "column"); ok {
				c, err := ParseIdentifier(s)
				if err != nil {
					gd.errorf(cf.val, "%v", err)
				}
				si.Column = c
			}
		} else if !hasCols && !hasExpr {
			gd.errorf(p.key, "%s needs column: (or expression:)", what)
		}
		if tf, ok := gd.required(fs, p.key, "type", what); ok {
			if n := deref(tf.val); n.Kind == yaml.SequenceNode || len(si.Columns) > 0 {
				si.ColumnTypes = gd.columnTypes(tf, si, what)
			} else {
				si.Type, _ = gd.keyType(tf.val)
			}
		}
		if uf, ok := fs["unique"]; ok {
			si.Unique, _ = gd.boolean(uf.val, "unique")
		}
		if nf, ok := fs["ignore_nulls"]; ok {
			si.IgnoreNulls, _ = gd.boolean(nf.val, "ignore_nulls")
		}
		if sf, ok := fs["state"]; ok {
			si.State, _ = gd.oneOf(sf.val, "state", StateBackfilling, StateActive)
		}
		g.SecondaryIndexes = append(g.SecondaryIndexes, si)
	}
}

// indexColumns reads the columns: list of a secondary index over several
// columns: two or more distinct column names.
func (gd *groupDecoder) indexColumns(f field, what string) []string {
	items, ok := gd.list(f.val, "columns")
	if !ok {
		return nil
	}
	if len(items) < 2 {
		gd.errorf(f.val, "%s: columns: needs two or more columns (one column: use column:)", what)
		return nil
	}
	var cols []string
	for _, it := range items {
		s, ok := gd.str(it, "column")
		if !ok {
			continue
		}
		c, err := ParseIdentifier(s)
		if err != nil {
			gd.errorf(it, "%v", err)
			continue
		}
		if slices.Contains(cols, c) {
			gd.errorf(it, "%s: column %s is listed twice", what, c)
			continue
		}
		cols = append(cols, c)
	}
	return cols
}

// columnTypes reads the type: of an index over several columns: one type
// for every column, or a list of one per column.
func (gd *groupDecoder) columnTypes(f field, si *SecondaryIndex, what string) []string {
	if deref(f.val).Kind != yaml.SequenceNode {
		t, ok := gd.keyType(f.val)
		if !ok {
			return nil
		}
		out := make([]string, len(si.Columns))
		for i := range out {
			out[i] = t
		}
		return out
	}
	items, ok := gd.list(f.val, "type")
	if !ok {
		return nil
	}
	if len(si.Columns) == 0 {
		gd.errorf(f.val, "%s: a list of types needs columns: (one per column)", what)
		return nil
	}
	if len(items) != len(si.Columns) {
		gd.errorf(f.val, "%s: %d types for %d columns; give one type per column, or one for all", what, len(items), len(si.Columns))
		return nil
	}
	var out []string
	for _, it := range items {
		t, ok := gd.keyType(it)
		if !ok {
			return nil
		}
		out = append(out, t)
	}
	return out
}

// checkSequenceBindings checks that every sequence a table uses is one the
// main group lists.
func (gd *groupDecoder) checkSequenceBindings(main *Group) {
	if main == nil {
		return
	}
	for _, g := range gd.t.Groups {
		for _, t := range g.Tables {
			b := t.Sequence
			if b == nil || b.Name == (QualifiedName{}) {
				continue
			}
			if !slices.Contains(main.Sequences, b.Name) {
				gd.report(b.Pos, false, "sequence %s is not listed in the main group's sequences:", b.Name)
			}
		}
	}
}

// checkUniqueNames refuses two sharding indexes or two secondary indexes
// with one name: plans, EXPLAIN output and workflow state refer to them by
// name.
func (gd *groupDecoder) checkUniqueNames() {
	indexes := map[string]*Group{}
	secondary := map[string]*Group{}
	for _, g := range gd.t.Groups {
		if g.Index != nil && g.Index.Name != "" {
			if other, dup := indexes[g.Index.Name]; dup {
				gd.report(g.Index.Pos, false, "index name %q is already used by group %q", g.Index.Name, other.Name)
			} else {
				indexes[g.Index.Name] = g
			}
		}
		for _, si := range g.SecondaryIndexes {
			lookup := QualifiedName{Schema: si.Table.Schema, Name: si.Name}
			if other, dup := secondary[si.Name]; dup {
				gd.report(si.Pos, false, "secondary index name %q is already used in group %q", si.Name, other.Name)
			} else if c, taken := gd.claims[lookup]; taken && si.Table.Schema != "" {
				gd.report(si.Pos, false, "secondary index %q would create its lookup table %s, which group %q already names (line %d)", si.Name, lookup, c.group, c.line)
			} else {
				secondary[si.Name] = g
			}
		}
	}
}

func (gd *groupDecoder) checkUnusedClusters() {
	used := map[string]bool{}
	for _, g := range gd.t.Groups {
		used[g.Cluster] = true
		for _, s := range g.Shards {
			used[s.Cluster] = true
		}
		for _, c := range g.PlacedClusters() {
			used[c] = true
		}
	}
	for _, c := range gd.t.Clusters {
		if !used[c.Name] {
			gd.report(c.Pos, true, "cluster %q is not used by any group", c.Name)
		}
	}
}
