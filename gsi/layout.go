package gsi

import (
	"fmt"
	"strings"

	"github.com/shardgate/shardgate/keyexpr"
	"github.com/shardgate/shardgate/pgwire"
	"github.com/shardgate/shardgate/vschema"
)

// tableName is the lookup table's schema-qualified name for SQL.
func tableName(si *vschema.SecondaryIndex) string {
	lt := si.Lookup
	return pgwire.QuoteIdent(lt.Schema) + "." + pgwire.QuoteIdent(lt.Name)
}

// CreateSQL is the CREATE TABLE of an index's lookup table.
func CreateSQL(si *vschema.SecondaryIndex, ifNotExists bool) string {
	var b strings.Builder
	b.WriteString("CREATE TABLE ")
	if ifNotExists {
		b.WriteString("IF NOT EXISTS ")
	}
	v, k := pgwire.QuoteIdent(si.Column), pgwire.QuoteIdent(si.KeyColumn())
	fmt.Fprintf(&b, "%s (%s %s NOT NULL, %s %s NOT NULL", tableName(si), v, si.Type, k, si.KeyType())
	for i, c := range si.Columns { // an index over several columns: each one beside the composite
		t := si.ColumnTypes[i].String()
		fmt.Fprintf(&b, ", %s %s GENERATED ALWAYS AS ((%s::pg_catalog.json ->> %d)::%s) STORED", pgwire.QuoteIdent(c), t, v, i, t)
	}
	if si.Unique {
		fmt.Fprintf(&b, ", PRIMARY KEY (%s))", v)
	} else {
		fmt.Fprintf(&b, ", %s bigint NOT NULL, PRIMARY KEY (%s, %s))", vschema.CountColumn, v, k)
	}
	return b.String()
}

// DropSQL drops an index's lookup table (if it exists: one created by hand
// may be missing).
func DropSQL(si *vschema.SecondaryIndex) string {
	return "DROP TABLE IF EXISTS " + tableName(si)
}

// TruncateSQL empties an index's lookup table.
func TruncateSQL(si *vschema.SecondaryIndex) string {
	return "TRUNCATE " + tableName(si)
}

// entry is one (value, key) pair of an index, with the number of owner
// rows that carry it in a statement.
type entry struct {
	value, key string
	count      int
}

// entries collects a statement's pairs for one lookup cluster, in first
// appearance order.
type entries struct {
	list  []*entry
	index map[[2]string]*entry
}

func (es *entries) add(value, key string) {
	if es.index == nil {
		es.index = map[[2]string]*entry{}
	}
	k := [2]string{value, key}
	if e, ok := es.index[k]; ok {
		e.count++
		return
	}
	e := &entry{value: value, key: key, count: 1}
	es.index[k] = e
	es.list = append(es.list, e)
}

// maxEntries bounds the entries one statement writes (a COPY's are
// written in statements of this many).
const maxEntries = 1000

// chunks splits the entries into lists of at most n.
func (es *entries) chunks(n int) []*entries {
	if len(es.list) <= n {
		return []*entries{es}
	}
	var out []*entries
	for i := 0; i < len(es.list); i += n {
		out = append(out, &entries{list: es.list[i:min(i+n, len(es.list))]})
	}
	return out
}

// repeated returns an entry more than one row carries (nil: none).
func (es *entries) repeated() *entry {
	for _, e := range es.list {
		if e.count > 1 {
			return e
		}
	}
	return nil
}

// clusterOf returns the cluster of the lookup shard holding value.
func clusterOf(si *vschema.SecondaryIndex, value string) (string, error) {
	key, err := si.KeyFromValue(keyexpr.Text(value))
	if err != nil {
		return "", err
	}
	s, err := si.Lookup.Group.ShardFor(key)
	if err != nil {
		return "", err
	}
	return s.Cluster, nil
}

func literal(v string, t vschema.KeyType) string { return pgwire.QuoteLiteral(v) + "::" + t.String() }

func (es *entries) rows(si *vschema.SecondaryIndex, withCount bool) string {
	parts := make([]string, len(es.list))
	for i, e := range es.list {
		parts[i] = "(" + literal(e.value, si.Type) + ", " + literal(e.key, si.KeyType())
		if withCount {
			parts[i] += fmt.Sprintf(", %d", e.count)
		}
		parts[i] += ")"
	}
	return strings.Join(parts, ", ")
}

// insertSQL writes the entries: a unique index's rows, or a non-unique
// index's counts added.
func insertSQL(si *vschema.SecondaryIndex, es *entries) string {
	v, k := pgwire.QuoteIdent(si.Column), pgwire.QuoteIdent(si.KeyColumn())
	if si.Unique {
		return fmt.Sprintf("INSERT INTO %s (%s, %s) VALUES %s", tableName(si), v, k, es.rows(si, false))
	}
	// Grouped: two texts of one value (a COPY's 01 and 1) are one row,
	// which ON CONFLICT may not update twice.
	n := vschema.CountColumn
	return fmt.Sprintf("INSERT INTO %s AS l (%s, %s, %s) SELECT v, k, sum(c) FROM (VALUES %s) AS d(v, k, c) GROUP BY v, k ON CONFLICT (%s, %s) DO UPDATE SET %s = l.%s + EXCLUDED.%s",
		tableName(si), v, k, n, es.rows(si, true), v, k, n, n, n)
}

// deleteSQL removes the entries (a unique index's rows, or a non-unique
// index's counts taken away) and answers how many it found; zeroSQL then
// removes a non-unique index's rows at zero.
func deleteSQL(si *vschema.SecondaryIndex, es *entries) string {
	v, k := pgwire.QuoteIdent(si.Column), pgwire.QuoteIdent(si.KeyColumn())
	if si.Unique {
		return fmt.Sprintf("WITH d AS (DELETE FROM %s WHERE (%s, %s) IN (%s) RETURNING 1) SELECT count(*) FROM d",
			tableName(si), v, k, es.rows(si, false))
	}
	n := vschema.CountColumn
	return fmt.Sprintf("WITH u AS (UPDATE %s AS l SET %s = l.%s - d.c FROM (VALUES %s) AS d(v, k, c) WHERE l.%s = d.v AND l.%s = d.k RETURNING 1) SELECT count(*) FROM u",
		tableName(si), n, n, es.rows(si, true), v, k)
}

func zeroSQL(si *vschema.SecondaryIndex, es *entries) string {
	v, k := pgwire.QuoteIdent(si.Column), pgwire.QuoteIdent(si.KeyColumn())
	return fmt.Sprintf("DELETE FROM %s WHERE %s <= 0 AND (%s, %s) IN (%s)",
		tableName(si), vschema.CountColumn, v, k, es.rows(si, false))
}

// placeholderSQL inserts the entries that are not there: a unique index's
// rows, a non-unique index's with count 0.
func placeholderSQL(si *vschema.SecondaryIndex, es *entries) string {
	v, k := pgwire.QuoteIdent(si.Column), pgwire.QuoteIdent(si.KeyColumn())
	if si.Unique {
		return fmt.Sprintf("INSERT INTO %s (%s, %s) VALUES %s ON CONFLICT DO NOTHING", tableName(si), v, k, es.rows(si, false))
	}
	return fmt.Sprintf("INSERT INTO %s (%s, %s, %s) VALUES %s ON CONFLICT DO NOTHING", tableName(si), v, k, vschema.CountColumn, zeroRows(si, es))
}
