package topoinit

import (
	"slices"
	"strings"

	"github.com/shardgate/shardgate/topology"
)

// Suggestion is a shard group the schema suggests: a key column that
// several tables carry.
type Suggestion struct {
	Group  string // also the index's name: by_customer_id
	Column string // the index's column
	Type   string // the index's type, a topology type name (bigint, text, ...)
	Reason string // one line: the foreign keys or the shared column
	// Members are the tables, the first one the table the others refer to
	// when the suggestion comes from foreign keys.
	Members []Member
}

// Member is a table of a suggested group and its key column.
type Member struct {
	Table  Name
	Column string
}

// maxSuggestions bounds each kind of suggestion.
const maxSuggestions = 5

// keyType maps a column type to a topology index type, "" when a
// sharding index cannot have it.
func keyType(t string) string {
	switch t {
	case "bigint":
		return topology.TypeBigint
	case "integer":
		return topology.TypeInteger
	case "smallint":
		return topology.TypeSmallint
	case "text":
		return topology.TypeText
	case "character varying":
		return topology.TypeVarchar
	case "uuid":
		return topology.TypeUUID
	}
	return ""
}

// columnType returns a column's type, "" when t has no such column.
func (t *Table) columnType(col string) string {
	for _, c := range t.Columns {
		if c.Name == col {
			return c.Type
		}
	}
	return ""
}

// Suggest proposes shard groups, foreign-key ones first:
//
//   - a table with a one-column primary key that other tables reference by
//     one-column foreign keys: it and those tables, each keyed by its side
//     of the key, so each row lives with the row it refers to;
//   - a column named like a key (ending in _id) that two tables or more
//     carry with the same type, with the table it names when there is one
//     (customer_id: customers, or customer, keyed by its id).
//
// Columns of types a sharding index cannot have are left out. At most
// five of each kind, the groups with the most tables first.
func Suggest(s *Schema) []Suggestion {
	return append(fromForeignKeys(s), fromSharedColumns(s)...)
}

func fromForeignKeys(s *Schema) []Suggestion {
	var out []Suggestion
	for i := range s.Tables {
		root := &s.Tables[i]
		if len(root.PrimaryKey) != 1 {
			continue
		}
		col := root.PrimaryKey[0]
		typ := keyType(root.columnType(col))
		if typ == "" {
			continue
		}
		sg := Suggestion{Group: groupName("by_" + root.Name.Name), Column: col, Type: typ, Members: []Member{{root.Name, col}}}
		var refs []string
		for _, fk := range s.ForeignKeys {
			if fk.To != root.Name || len(fk.ToColumns) != 1 || fk.ToColumns[0] != col || len(fk.FromColumns) != 1 || fk.From == root.Name {
				continue
			}
			if slices.ContainsFunc(sg.Members, func(m Member) bool { return m.Table == fk.From }) {
				continue // two foreign keys from one table: the first decides
			}
			sg.Members = append(sg.Members, Member{fk.From, fk.FromColumns[0]})
			refs = append(refs, display(fk.From)+"."+fk.FromColumns[0])
		}
		if len(refs) == 0 {
			continue
		}
		sg.Reason = "foreign keys: " + display(root.Name) + "." + col + " is referenced by " + strings.Join(refs, ", ")
		out = append(out, sg)
	}
	return best(out)
}

func fromSharedColumns(s *Schema) []Suggestion {
	type use struct {
		typ    string
		tables []Name
	}
	uses := map[string]*use{}
	var order []string
	for _, t := range s.Tables {
		for _, c := range t.Columns {
			typ := keyType(c.Type)
			if !strings.HasSuffix(c.Name, "_id") || len(c.Name) == 3 || typ == "" {
				continue
			}
			u := uses[c.Name]
			if u == nil {
				u = &use{typ: typ}
				uses[c.Name] = u
				order = append(order, c.Name)
			}
			if u.typ == typ {
				u.tables = append(u.tables, t.Name)
			}
		}
	}
	var out []Suggestion
	for _, col := range order {
		u := uses[col]
		if len(u.tables) < 2 {
			continue
		}
		sg := Suggestion{Group: groupName("by_" + col), Column: col, Type: u.typ}
		if owner := namedTable(s, strings.TrimSuffix(col, "_id"), u.typ); owner != nil {
			sg.Members = append(sg.Members, Member{owner.Name, owner.PrimaryKey[0]})
		}
		names := make([]string, len(u.tables))
		for i, t := range u.tables {
			sg.Members = append(sg.Members, Member{t, col})
			names[i] = display(t)
		}
		sg.Reason = "column " + col + " (" + u.typ + ") in " + strings.Join(names, ", ")
		if len(sg.Members) > len(u.tables) {
			sg.Reason += "; " + display(sg.Members[0].Table) + "." + sg.Members[0].Column + " is its key"
		}
		out = append(out, sg)
	}
	return best(out)
}

// namedTable finds the table a key column names (customer: customers or
// customer) with a one-column primary key of the column's type.
func namedTable(s *Schema, base, typ string) *Table {
	for _, n := range []string{base + "s", base + "es", base} {
		for i := range s.Tables {
			t := &s.Tables[i]
			if t.Name.Name == n && len(t.PrimaryKey) == 1 && keyType(t.columnType(t.PrimaryKey[0])) == typ {
				return t
			}
		}
	}
	return nil
}

// best keeps the suggestions with the most tables, at most
// maxSuggestions, in a stable order.
func best(in []Suggestion) []Suggestion {
	slices.SortStableFunc(in, func(a, b Suggestion) int { return len(b.Members) - len(a.Members) })
	if len(in) > maxSuggestions {
		in = in[:maxSuggestions]
	}
	return in
}

// groupName makes a group name out of identifiers: lower case letters,
// digits and underscores.
func groupName(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}
