package planner

import (
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"github.com/shardgate/shardgate/keyexpr"
	"github.com/shardgate/shardgate/sqlerr"
)

// Index statements name an index, not its table, and the planner has no
// catalog to find the table: DROP INDEX, ALTER INDEX and REINDEX INDEX
// cannot be routed to the index's group. An index of a member or
// reference table exists on every cluster of its group (CREATE INDEX ...
// ON runs there), so these statements run on every cluster (EveryCluster):
// main's as written, so that its answer and its errors are the client's,
// and the others in a form that does nothing where the index does not
// exist (IF EXISTS, or a check of pg_class for REINDEX, which has no IF
// EXISTS). The clusters commit together as for any write on several.

// EveryCluster runs a statement on every cluster of the topology: main's
// cluster first with the statement as written, then each other cluster
// with Others.
type EveryCluster struct {
	Main     string
	Clusters []string // the other clusters, in topology order
	// Others is the statement the other clusters run.
	Others string
	// Indexes are the indexes a DROP INDEX without IF EXISTS names, as
	// qualified SQL names ("s.i" quoted where needed): the proxy runs it as
	// written on a cluster that holds them all when main's cluster lacks
	// one (the index of a group that does not live on main's cluster).
	Indexes []string
}

// Name implements Primitive.
func (e *EveryCluster) Name() string { return "EveryCluster" }

// Inputs implements Primitive: a leaf.
func (e *EveryCluster) Inputs() []Primitive { return nil }

func (e *EveryCluster) mode() RouteMode { return ModeReplicate }

func (e *EveryCluster) targets(pl *Plan, params []Param) ([]Target, error) {
	ts := []Target{{Cluster: e.Main}}
	for _, c := range e.Clusters {
		ts = append(ts, Target{Cluster: c, SQL: e.Others})
	}
	return ts, nil
}

func (e *EveryCluster) explain(w *explainWriter, pl *Plan, depth int) {
	w.line(depth, "EveryCluster main=%s", e.Main)
	w.line(depth+1, "sql: %s", oneLine(pl.SQL))
	if len(e.Clusters) > 0 {
		w.line(depth+1, "then %s: %s", strings.Join(e.Clusters, ", "), oneLine(e.Others))
	}
}

// indexStatement plans the statements that name an index only. ok is
// false for every other statement.
func (p *Planner) indexStatement(pl *Plan, stmt *pg.Node) (ok bool, err error) {
	others := ""
	var indexes []string
	switch x := stmt.Node.(type) {
	case *pg.Node_DropStmt:
		if x.DropStmt.RemoveType != pg.ObjectType_OBJECT_INDEX {
			return false, nil
		}
		if x.DropStmt.Concurrent && p.severalClusters() {
			return true, concurrentlyRefused("DROP INDEX")
		}
		c := proto.Clone(x.DropStmt).(*pg.DropStmt)
		c.MissingOk = true
		others, err = deparse(&pg.Node{Node: &pg.Node_DropStmt{DropStmt: c}})
		if !x.DropStmt.MissingOk {
			indexes = droppedIndexes(x.DropStmt)
		}
	case *pg.Node_AlterTableStmt:
		if x.AlterTableStmt.Objtype != pg.ObjectType_OBJECT_INDEX {
			return false, nil
		}
		c := proto.Clone(x.AlterTableStmt).(*pg.AlterTableStmt)
		c.MissingOk = true
		others, err = deparse(&pg.Node{Node: &pg.Node_AlterTableStmt{AlterTableStmt: c}})
	case *pg.Node_RenameStmt:
		if x.RenameStmt.RenameType != pg.ObjectType_OBJECT_INDEX {
			return false, nil
		}
		c := proto.Clone(x.RenameStmt).(*pg.RenameStmt)
		c.MissingOk = true
		others, err = deparse(&pg.Node{Node: &pg.Node_RenameStmt{RenameStmt: c}})
	case *pg.Node_ReindexStmt:
		r := x.ReindexStmt
		if r.Kind != pg.ReindexObjectType_REINDEX_OBJECT_INDEX || r.Relation == nil {
			return false, nil
		}
		if reindexConcurrently(r) && p.severalClusters() {
			return true, concurrentlyRefused("REINDEX INDEX")
		}
		var text string
		if text, err = deparse(stmt); err == nil {
			others = reindexIfExists(r.Relation, text)
		}
	default:
		return false, nil
	}
	if err != nil {
		return true, sqlerr.New(sqlerr.InternalError, "cannot write the IF EXISTS form of the index statement: %v", err)
	}
	main := p.vs.Main().Clusters[0]
	e := &EveryCluster{Main: main, Others: others, Indexes: indexes}
	for _, c := range p.vs.Clusters() {
		if c.Name != main {
			e.Clusters = append(e.Clusters, c.Name)
		}
	}
	pl.Root = e
	return true, nil
}

// droppedIndexes are the names a DROP INDEX drops, qualified as written.
func droppedIndexes(d *pg.DropStmt) []string {
	var out []string
	for _, o := range d.Objects {
		l, ok := o.Node.(*pg.Node_List)
		if !ok {
			continue
		}
		var parts []string
		for _, it := range l.List.Items {
			parts = append(parts, keyexpr.QuoteIdentifier(stringValue(it)))
		}
		out = append(out, strings.Join(parts, "."))
	}
	return out
}

func (p *Planner) severalClusters() bool { return len(p.vs.Clusters()) > 1 }

// concurrentlyRefused refuses the CONCURRENTLY form of an index
// statement: it cannot run inside a transaction, and the proxy runs the
// statement on several clusters in one transaction each.
func concurrentlyRefused(what string) error {
	return sqlerr.New(sqlerr.FeatureNotSupported,
		"%s CONCURRENTLY through shardgate is not supported", what).
		WithDetail("The index may exist on every cluster of its table's group; the proxy runs the statement on each inside a transaction, where CONCURRENTLY cannot run.").
		WithHint("Leave out CONCURRENTLY, or run the statement on each cluster directly.")
}

func reindexConcurrently(r *pg.ReindexStmt) bool {
	for _, o := range r.Params {
		if d, ok := o.Node.(*pg.Node_DefElem); ok && d.DefElem.Defname == "concurrently" {
			return constText(d.DefElem.Arg) != "false" && constText(d.DefElem.Arg) != "0"
		}
	}
	return false
}

// reindexIfExists wraps REINDEX INDEX in a DO block that runs it only
// where the index exists.
func reindexIfExists(rel *pg.RangeVar, sql string) string {
	// sql is deparsed: no comment can swallow the rest of the block.
	name := keyexpr.QuoteIdentifier(rel.Relname)
	if rel.Schemaname != "" {
		name = keyexpr.QuoteIdentifier(rel.Schemaname) + "." + name
	}
	body := sql
	tag := "$shardgate$"
	for strings.Contains(body, tag) {
		tag = "$shardgate" + tag[1:]
	}
	return "DO " + tag + "BEGIN IF EXISTS (SELECT 1 FROM pg_catalog.pg_class WHERE oid = pg_catalog.to_regclass(" +
		keyexpr.Text(name).String() + ") AND relkind IN ('i', 'I')) THEN " + body + "; END IF; END" + tag
}
