package planner

import (
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/shardgate/shardgate/sqlerr"
	"github.com/shardgate/shardgate/vschema"
)

// Global secondary indexes: which statements on a table with indexes need
// lookup-table work (Plan.GSI, done by package gsi through the proxy), and
// the refusal of the writes that work does not cover yet.

// GSIOp is the lookup-table work a statement needs.
type GSIOp uint8

const (
	// GSICreate: CREATE TABLE of an owner table; create its lookup tables
	// on the same clusters, in the same transaction.
	GSICreate GSIOp = iota + 1
	// GSIDrop: DROP TABLE of owner tables; drop their lookup tables.
	GSIDrop
	// GSIInsert: INSERT ... VALUES into an owner table; the statement runs
	// with its RETURNING extended by the indexed values and the key, and
	// each returned row gets its entries.
	GSIInsert
	// GSIDelete: DELETE from an owner table; as GSIInsert, removing the
	// entries of the deleted rows.
	GSIDelete
	// GSITruncate: TRUNCATE of owner tables; truncate their lookup tables
	// on the same clusters, in the same transaction.
	GSITruncate
	// GSIUpdate: UPDATE setting the column of an index: the rows locked
	// and their old entries read first (LockSQL), then the UPDATE run on
	// them (UpdateSQL), entries replaced (gsi_update.go).
	GSIUpdate
)

// GSIWork is what Plan.GSI asks of the executor.
type GSIWork struct {
	Op GSIOp
	// Tables are the owner tables (one, but for DROP TABLE a, b).
	Tables []*vschema.Table
	// Alias is how the statement names its target (INSERT INTO t AS a,
	// DELETE FROM t a), to qualify the columns added to RETURNING.
	Alias string
	// Upsert is INSERT ... ON CONFLICT DO UPDATE (of other columns than
	// the indexed ones): only the rows it inserts get entries, told apart
	// from the updated ones by xmax = 0.
	Upsert bool
	// IfExists is DROP TABLE IF EXISTS; IfNotExists CREATE TABLE IF NOT
	// EXISTS.
	IfExists, IfNotExists bool
	// Indexes are the indexes an UPDATE changes (GSIUpdate; a GSIMove of
	// a table with secondary indexes: all of them, whose old entries its
	// LockSQL reads after ctid: the key, then each index's value).
	Indexes []*vschema.SecondaryIndex
	// LockSQL and UpdateSQL are the steps of a GSIUpdate; LockParams the
	// client's parameters (0-based) of LockSQL's $1, $2, ...
	LockSQL, UpdateSQL string
	LockParams         []int
	// Sets are the columns a GSIMove sets, in the order of their new
	// values in LockSQL; Returning is its RETURNING clause ("RETURNING
	// ..."), for the INSERT of the moved rows.
	Sets      []string
	Returning string
}

// gsiAllow marks the one write statement whose target may be a table with
// secondary indexes: the top-level INSERT, UPDATE or DELETE the builder
// maintains. Any other write to such a table (in a WITH clause, under COPY
// or EXPLAIN ANALYZE, MERGE) is refused by gsiTarget.
func (a *analysis) gsiAllow(stmt any) { a.gsiStmt = stmt }

// gsiTarget checks a write's target: a table with secondary indexes may
// only be written by the statement gsiAllow named.
func (a *analysis) gsiTarget(inst *instance, stmt any, what string) {
	t := inst.rel.table
	if t == nil || len(t.SecondaryIndexes) == 0 {
		return
	}
	if stmt != a.gsiStmt || stmt == nil {
		a.fail(gsiRefusal(t, what+" nested in another statement (a WITH clause, EXPLAIN ANALYZE, COPY)"))
	}
}

// gsiRefusal is the 0A000 for a write the indexes of t cannot follow yet.
func gsiRefusal(t *vschema.Table, what string) error {
	return sqlerr.New(sqlerr.FeatureNotSupported,
		"%s on %s is not supported yet: the proxy would not maintain its global secondary index %s", what, t, t.SecondaryIndexes[0].Name).
		WithHint("Write the table with INSERT ... VALUES, UPDATE of other columns and DELETE.")
}

// gsiInsert checks an INSERT into a table with secondary indexes and
// returns its work: VALUES rows or a SELECT run where the rows go (one
// read elsewhere is an InsertSelect, whose batches get their entries the
// same way), ON CONFLICT DO UPDATE of other columns than the indexed ones.
func gsiInsert(t *vschema.Table, ins *pg.InsertStmt) (*GSIWork, error) {
	if len(t.SecondaryIndexes) == 0 {
		return nil, nil
	}
	w := &GSIWork{Op: GSIInsert, Tables: []*vschema.Table{t}, Alias: aliasOf(ins.Relation)}
	if oc := ins.OnConflictClause; oc != nil && oc.Action == pg.OnConflictAction_ONCONFLICT_UPDATE {
		// The rows it updates keep their entries, unless it sets an
		// indexed column: their old values are not returned.
		for _, n := range oc.TargetList {
			rt, ok := n.Node.(*pg.Node_ResTarget)
			if !ok {
				continue
			}
			for _, si := range t.SecondaryIndexes {
				if si.Reads(rt.ResTarget.Name) {
					return nil, sqlerr.New(sqlerr.FeatureNotSupported,
						"INSERT ... ON CONFLICT DO UPDATE SET %s on %s is not supported: the proxy would not know the old entries of its global secondary index %s", rt.ResTarget.Name, t, si.Name).
						WithHint("Update the column with UPDATE, which replaces the entries, or leave it out of DO UPDATE SET.")
				}
			}
		}
		w.Upsert = true
	}
	return w, nil
}

func aliasOf(rv *pg.RangeVar) string {
	if rv.Alias != nil && rv.Alias.Aliasname != "" {
		return rv.Alias.Aliasname
	}
	return rv.Relname
}

// gsiUtility gives CREATE TABLE, DROP TABLE and TRUNCATE of owner tables
// their lookup-table work.
func (p *Planner) gsiUtility(pl *Plan, stmt *pg.Node) error {
	owner := func(schema, name string) *vschema.Table {
		if t := p.vs.Table(schema, name); len(t.SecondaryIndexes) > 0 {
			return t
		}
		return nil
	}
	switch x := stmt.Node.(type) {
	case *pg.Node_CreateStmt:
		rv := x.CreateStmt.Relation
		if t := owner(rv.Schemaname, rv.Relname); t != nil {
			pl.GSI = &GSIWork{Op: GSICreate, Tables: []*vschema.Table{t}, IfNotExists: x.CreateStmt.IfNotExists}
		}
	case *pg.Node_DropStmt:
		if x.DropStmt.RemoveType != pg.ObjectType_OBJECT_TABLE {
			return nil
		}
		w := &GSIWork{Op: GSIDrop, IfExists: x.DropStmt.MissingOk}
		for _, o := range x.DropStmt.Objects {
			r := nameListRel(o, false)
			if t := owner(r.schema, r.name); t != nil {
				w.Tables = append(w.Tables, t)
			}
		}
		if len(w.Tables) > 0 {
			pl.GSI = w
		}
	case *pg.Node_TruncateStmt:
		w := &GSIWork{Op: GSITruncate}
		for _, n := range x.TruncateStmt.Relations {
			if rv, ok := n.Node.(*pg.Node_RangeVar); ok {
				if t := owner(rv.RangeVar.Schemaname, rv.RangeVar.Relname); t != nil {
					w.Tables = append(w.Tables, t)
				}
			}
		}
		if len(w.Tables) > 0 {
			pl.GSI = w
		}
	}
	return nil
}

// describe says what the work is, for EXPLAIN (ROUTE).
func (w *GSIWork) describe() string {
	var names []string
	for _, t := range w.Tables {
		for _, si := range t.SecondaryIndexes {
			names = append(names, si.Name)
		}
	}
	if w.Op == GSIMove {
		what := "moves the rows whose new shard key lives on another cluster (deleted there, inserted on the new cluster)"
		if len(names) > 0 {
			what += "; replaces the entries of the updated rows in " + strings.Join(names, ", ")
		}
		return what
	}
	if w.Op == GSIUpdate {
		names = names[:0]
		for _, si := range w.Indexes {
			names = append(names, si.Name)
		}
	}
	what := map[GSIOp]string{GSICreate: "creates the lookup tables of", GSIDrop: "drops the lookup tables of",
		GSIInsert: "writes the entries of the inserted rows in", GSIDelete: "removes the entries of the deleted rows from", GSITruncate: "truncates the lookup tables of",
		GSIUpdate: "replaces the entries of the updated rows in"}[w.Op]
	if w.Upsert {
		return what + " " + strings.Join(names, ", ") + " (the rows it updates keep theirs)"
	}
	return what + " " + strings.Join(names, ", ")
}
