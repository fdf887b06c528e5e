package planner

import (
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"github.com/shardgate/shardgate/sqlerr"
)

// WritePullout runs an UPDATE or DELETE whose WHERE has an uncorrelated
// `expr = (SELECT ...)` or `expr IN (SELECT ...)` that neither the router
// nor a RowWrite can take (UPDATE devices SET serial = 'X' WHERE serial =
// (SELECT min(serial) FROM devices WHERE ...), which sets the shard key):
// the subquery runs first (Sub, as a Pullout's does, with the same check
// that it is not correlated), its value is written into the statement as
// a typed literal in the place of SubqueryPlaceholder in Template (for
// IN, an array literal under = ANY), and the statement so written is
// planned and run as any other: on the one shard its key names, or
// scattered, moving the rows whose shard key it changes. The proxy
// executes it (intermediate.WriteLiteral, then its own execution).
// Only statements without parameters or RETURNING are planned so.
type WritePullout struct {
	Pullout
	// Template is the statement with SubqueryPlaceholder where the
	// subquery's value goes.
	Template string
}

// SubqueryPlaceholder stands for the subquery's value in
// WritePullout.Template.
const SubqueryPlaceholder = "__sg_subquery__"

// Name implements Primitive.
func (wp *WritePullout) Name() string { return "WritePullout" }

// Inputs implements Primitive: the steps are plans of their own.
func (wp *WritePullout) Inputs() []Primitive { return nil }

func (wp *WritePullout) mode() RouteMode { return ModeProxy }

func (wp *WritePullout) targets(*Plan, []Param) ([]Target, error) { return nil, nil }

func (wp *WritePullout) explain(w *explainWriter, pl *Plan, depth int) {
	kind := "scalar"
	if wp.In {
		kind = "IN"
	}
	w.line(depth, "WritePullout %s subquery, its value written into the statement", kind)
	w.line(depth+1, "Subquery sql: %s", wp.Sub.SQL)
	wp.Sub.Root.explain(w, wp.Sub, depth+2)
	w.line(depth+1, "then: %s", wp.Template)
	w.line(depth+1, "routed as, with the value as $%d:", wp.Param)
	wp.Outer.Root.explain(w, wp.Outer, depth+2)
}

// WriteSQL is the statement with literal (a typed SQL literal of the
// subquery's value) in the subquery's place.
func (wp *WritePullout) WriteSQL(literal string) string {
	return strings.Replace(wp.Template, SubqueryPlaceholder, literal, 1)
}

// rowWriteOrPullout plans an UPDATE or DELETE the router refused (cause)
// as a RowWrite, or else as a WritePullout, or returns the refusal.
func (p *Planner) rowWriteOrPullout(pl *Plan, stmt *pg.Node, cause error) error {
	err := p.buildRowWrite(pl, stmt, cause)
	if err == nil || sqlerr.Code(err) != sqlerr.FeatureNotSupported || pl.NumParams > 0 {
		return err
	}
	stmt = proto.Clone(stmt).(*pg.Node)
	var where *pg.Node
	switch x := stmt.Node.(type) {
	case *pg.Node_UpdateStmt:
		if x.UpdateStmt.WithClause != nil || len(x.UpdateStmt.ReturningList) > 0 || len(x.UpdateStmt.FromClause) > 0 {
			return err
		}
		where = x.UpdateStmt.WhereClause
	case *pg.Node_DeleteStmt:
		if x.DeleteStmt.WithClause != nil || len(x.DeleteStmt.ReturningList) > 0 || len(x.DeleteStmt.UsingClause) > 0 {
			return err
		}
		where = x.DeleteStmt.WhereClause
	}
	po, link := p.pulloutSub(where, 1)
	if po == nil {
		return err
	}
	placeholder := &pg.Node{Node: &pg.Node_ColumnRef{ColumnRef: &pg.ColumnRef{Fields: []*pg.Node{pg.MakeStrNode(SubqueryPlaceholder)}}}}
	link.Node = po.standFor(placeholder).Node
	wp := &WritePullout{Pullout: *po}
	wp.link = nil
	var derr error
	if wp.Template, derr = deparse(stmt); derr != nil || strings.Count(wp.Template, SubqueryPlaceholder) != 1 {
		return err
	}
	// The route with the value as a parameter, for EXPLAIN, and to check
	// that the statement so written plans at all.
	*link = *po.stand()
	outerSQL, derr := deparse(stmt)
	if derr != nil {
		return err
	}
	if wp.Outer, derr = p.Plan(outerSQL); derr != nil {
		return err
	}
	pl.Root, pl.GSI = wp, nil
	return nil
}
