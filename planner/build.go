package planner

import (
	"cmp"
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"

	pg "github.com/pganalyze/pg_query_go/v6"
	pgparser "github.com/pganalyze/pg_query_go/v6/parser"
	"google.golang.org/protobuf/proto"

	"github.com/shardgate/shardgate/sqlerr"
	"github.com/shardgate/shardgate/vschema"
)

// build parses and plans one statement. It never caches; Plan does.
func (p *Planner) build(sql string) (*Plan, error) {
	tree, err := parse(sql)
	if err != nil {
		if pl, perr, ok := p.explainRouteCopy(sql); ok {
			return pl, perr // EXPLAIN (ROUTE) COPY ...: see copy.go
		}
		return nil, syntaxError(err, 0, sql)
	}
	switch len(tree.Stmts) {
	case 0:
		return &Plan{SQL: sql, Kind: Empty, Root: &ProxyLocal{What: "empty query"}}, nil
	case 1:
	default:
		return nil, sqlerr.New(sqlerr.SyntaxError, "cannot insert multiple commands into a prepared statement")
	}
	stmt := tree.Stmts[0].Stmt
	pl := &Plan{SQL: sql, NumParams: maxParam(stmt)}
	if err := p.buildStmt(pl, stmt); err != nil {
		// Data-modifying WITH queries run first (wcte.go).
		if ok, werr := p.orWritableCTE(pl, stmt, err); ok {
			return pl, werr
		}
		return nil, err
	}
	p.planLookup(pl, stmt)
	if err := p.sequencePass(pl, stmt); err != nil {
		return nil, err
	}
	if err := p.copiesPass(pl, stmt); err != nil {
		return nil, err
	}
	if err := classifySession(pl, stmt); err != nil {
		return nil, err
	}
	pl.Signal = signalCall(stmt)
	pl.UnseenCode, pl.Relations = p.unseen(stmt)
	return pl, nil
}

// syntaxError converts a pg_query error into 42601 with its position.
// Errors that already carry a SQLSTATE pass unchanged.
// offset shifts the position when the statement is part of a longer
// simple-protocol Query; positions count characters, 1-based, as the
// backend's do.
func syntaxError(err error, offset int, sql string) error {
	if _, ok := sqlerr.As(err); ok {
		return err // already classified (54001 from parse)
	}
	var pe *pgparser.Error
	if errors.As(err, &pe) {
		msg := pe.Message
		if pe.Cursorpos > 0 {
			msg += " at character " + strconv.Itoa(pe.Cursorpos+offset)
		}
		return sqlerr.New(sqlerr.SyntaxError, "%s", msg)
	}
	return sqlerr.New(sqlerr.SyntaxError, "%s", err.Error())
}

// charOffset counts the characters before byte offset off of s.
func charOffset(s string, off int) int {
	if off > len(s) {
		off = len(s)
	}
	return utf8.RuneCountInString(s[:off])
}

// buildStmt fills pl for one parsed statement.
func (p *Planner) buildStmt(pl *Plan, stmt *pg.Node) error {
	switch x := stmt.Node.(type) {
	case *pg.Node_SelectStmt:
		var orig *pg.SelectStmt
		if x.SelectStmt.WhereClause != nil || len(x.SelectStmt.FromClause) == 0 && len(x.SelectStmt.TargetList) > 0 {
			orig = proto.Clone(x.SelectStmt).(*pg.SelectStmt) // the merge builder rewrites it
		}
		err := p.buildSelect(pl, x.SelectStmt)
		if err == nil && orig != nil && pl.Mode() == ModeIntermediate {
			p.pullout(pl, orig) // an uncorrelated subquery first: pullout.go
		}
		return err
	case *pg.Node_InsertStmt:
		err := p.buildInsert(pl, x.InsertStmt)
		if err != nil {
			// Rows that cannot be produced where they go are read first
			// and routed by the proxy (insert_select.go).
			pl.GSI, pl.Root = nil, nil
			return p.buildInsertSelect(pl, x.InsertStmt, err)
		}
		return nil
	case *pg.Node_UpdateStmt:
		pl.Kind, pl.Returns = Update, len(x.UpdateStmt.ReturningList) > 0
		a := newAnalysis(p)
		a.gsiAllow(x.UpdateStmt)
		if err := a.finishDML(pl, a.updateLevel(nil, x.UpdateStmt, true)); err != nil {
			// Rows matched across groups are read first (row_write.go),
			// or the subquery runs first (write_pullout.go).
			return p.rowWriteOrPullout(pl, stmt, err)
		}
		rel := x.UpdateStmt.Relation
		if a.keyMove { // the rows move (key_move.go)
			w, err := keyMoveWork(p.vs.Table(rel.Schemaname, rel.Relname), x.UpdateStmt)
			pl.GSI = w
			return err
		}
		w, err := gsiUpdateWork(p.vs.Table(rel.Schemaname, rel.Relname), x.UpdateStmt)
		if w != nil {
			pl.GSI = w
		}
		if err == nil {
			a.pruneWrite(pl, stmt)
		}
		return err
	case *pg.Node_DeleteStmt:
		pl.Kind, pl.Returns = Delete, len(x.DeleteStmt.ReturningList) > 0
		a := newAnalysis(p)
		a.gsiAllow(x.DeleteStmt)
		if t := p.vs.Table(x.DeleteStmt.Relation.Schemaname, x.DeleteStmt.Relation.Relname); len(t.SecondaryIndexes) > 0 {
			pl.GSI = &GSIWork{Op: GSIDelete, Tables: []*vschema.Table{t}, Alias: aliasOf(x.DeleteStmt.Relation)}
		}
		if err := a.finishDML(pl, a.deleteLevel(nil, x.DeleteStmt, true)); err != nil {
			return p.rowWriteOrPullout(pl, stmt, err)
		}
		a.pruneWrite(pl, stmt)
		return nil
	case *pg.Node_MergeStmt:
		return p.buildMerge(pl, x.MergeStmt)
	case *pg.Node_TransactionStmt:
		return buildTransaction(pl, x.TransactionStmt)
	case *pg.Node_VariableSetStmt:
		return p.buildSet(pl, x.VariableSetStmt, stmt)
	case *pg.Node_VariableShowStmt:
		pl.Kind, pl.Returns = Show, true
		pl.Show = strings.ToLower(x.VariableShowStmt.Name)
		pl.Root = p.mainRoute()
		if pl.Show == ProxySetting {
			pl.Root = &ProxyLocal{What: "SHOW " + ProxySetting}
		}
	case *pg.Node_DiscardStmt:
		pl.Kind = Discard
		pl.DiscardAll = x.DiscardStmt.Target == pg.DiscardMode_DISCARD_ALL
		pl.Root = &SessionSet{Group: p.vs.Main()}
	case *pg.Node_DeallocateStmt:
		pl.Kind = Deallocate
		if !x.DeallocateStmt.Isall {
			pl.Deallocate = x.DeallocateStmt.Name
		}
		pl.Root = &ProxyLocal{What: "DEALLOCATE"}
	case *pg.Node_PrepareStmt:
		return p.buildPrepare(pl, x.PrepareStmt)
	case *pg.Node_ExecuteStmt:
		return buildExecute(pl, x.ExecuteStmt)
	case *pg.Node_ExplainStmt:
		return p.buildExplain(pl, x.ExplainStmt)
	case *pg.Node_CopyStmt:
		return p.buildCopy(pl, x.CopyStmt)
	case *pg.Node_ListenStmt:
		pl.Kind, pl.Root = Listen, p.mainRoute()
	case *pg.Node_UnlistenStmt:
		pl.Kind, pl.Root = Unlisten, p.mainRoute()
	case *pg.Node_NotifyStmt:
		pl.Kind, pl.Root = Notify, p.mainRoute()
	case *pg.Node_DoStmt, *pg.Node_CallStmt:
		pl.Kind, pl.Root = Call, p.mainRoute()
	case *pg.Node_DeclareCursorStmt:
		return p.buildDeclareCursor(pl, x.DeclareCursorStmt)
	case *pg.Node_FetchStmt:
		buildFetch(pl, x.FetchStmt)
	case *pg.Node_ClosePortalStmt:
		buildClose(pl, x.ClosePortalStmt)
	case *pg.Node_CreateTableAsStmt:
		return p.buildCreateTableAs(pl, x.CreateTableAsStmt)
	default:
		return p.buildUtility(pl, stmt)
	}
	return nil
}

func (p *Planner) mainRoute() *Route { return &Route{Opcode: Unsharded, Group: p.vs.Main()} }

// buildSelect plans a SELECT (or VALUES, or set operation).
func (p *Planner) buildSelect(pl *Plan, s *pg.SelectStmt) error {
	pl.Kind, pl.Returns = Select, true
	if s.IntoClause != nil {
		pl.Kind, pl.Returns = DDL, false
		return p.createFromQuery(pl, s.IntoClause.Rel, s, "SELECT INTO")
	}
	a := newAnalysis(p)
	a.allowMerge = true
	top := a.selectLevel(nil, s, true)
	r, err := a.decide(top)
	if err != nil {
		// What no stream can merge runs over intermediate results on the
		// coordinator (intermediate.go), if it can.
		return p.buildIntermediate(pl, s, err)
	}
	pl.Root = r
	if r.Opcode == IN && r.MergeReason != "" && len(r.Group.Clusters) > 1 {
		// Keys known when it runs (parameters, or literals the simple
		// protocol's normalization lifted) may span clusters, where the
		// route refuses what no merge can do: then the statement runs
		// over intermediate results instead (Plan.SpanFallback).
		if p.setFallback(pl, proto.Clone(s).(*pg.SelectStmt)); pl.fallback != nil {
			pl.fallback.why = "the route, when its keys span clusters (" + r.MergeReason + ")"
		}
	}
	if (r.Opcode != Scatter && r.Opcode != IN) || len(r.Group.Clusters) < 2 || r.MergeReason != "" {
		return nil
	}
	var in *inListSource
	if r.Opcode == IN {
		in = a.inListOf(r.Keys)
	}
	if a.topMerge == "" {
		if in != nil {
			p.pruneIN(&pg.Node{Node: &pg.Node_SelectStmt{SelectStmt: s}}, r, in)
		}
		return nil
	}
	orig := proto.Clone(s).(*pg.SelectStmt) // the merge builder rewrites s
	root, err := p.buildMergeSelect(s, r, top, in)
	if err != nil {
		return p.buildIntermediate(pl, orig, err)
	}
	pl.Root = root
	p.setFallback(pl, orig)
	return nil
}

// finishDML routes an UPDATE or DELETE.
func (a *analysis) finishDML(pl *Plan, top *level) error {
	r, err := a.decide(top)
	if err != nil {
		return err
	}
	pl.Root = r
	return nil
}

// buildInsert plans an INSERT: one shard for a single row, a split for rows
// of several shards, every copy for a reference table.
func (p *Planner) buildInsert(pl *Plan, ins *pg.InsertStmt) error {
	pl.Kind, pl.Returns = Insert, len(ins.ReturningList) > 0
	a := newAnalysis(p)
	a.gsiAllow(ins)
	top := a.insertLevel(nil, ins, true)
	if a.err != nil {
		return a.err
	}
	target := top.target
	if t := target.rel.table; t != nil {
		w, err := gsiInsert(t, ins)
		if err != nil {
			return err
		}
		pl.GSI = w
	}
	if target.rel.kind != relSharded {
		return a.finishDML(pl, top)
	}
	g := target.rel.group
	if _, err := a.singleGroup(); err != nil {
		return err
	}
	info := a.inserts[top]
	var sharded []*instance
	for _, inst := range a.insts {
		if inst.rel.kind == relSharded {
			sharded = append(sharded, inst)
		}
	}
	tables := tableList(sharded, g)

	if info.values != nil && len(info.rows) > 1 || len(info.draws) > 0 {
		if len(sharded) > 1 && len(info.rows) > 1 {
			return sqlerr.New(sqlerr.FeatureNotSupported,
				"a multi-row INSERT into %s that also reads sharded tables is not supported", target.rel.display).
				WithHint("Insert the rows one statement at a time.")
		}
		if err := a.colocated(sharded); err != nil {
			return err
		}
		oc := ins.OnConflictClause
		maySkip := oc != nil && (oc.Action == pg.OnConflictAction_ONCONFLICT_NOTHING || oc.WhereClause != nil)
		split, err := newInsertSplit(pl.SQL, g, target.rel, info, len(ins.ReturningList) > 0, maySkip)
		if err != nil {
			return err
		}
		pl.Root = split
		return nil
	}
	if err := a.colocated(sharded); err != nil {
		return err
	}
	var key *KeyRef
	switch {
	case len(info.rows) == 1:
		key = &info.rows[0]
	case info.sourceKey:
		if keys := a.routeKeys(info.source); len(keys) == 1 && keys[0].Array == nil {
			key = &keys[0]
		}
	}
	if key == nil {
		return sqlerr.New(sqlerr.FeatureNotSupported,
			"INSERT ... SELECT into %s is supported only when the SELECT reads a single shard", target.rel.display).
			WithDetail("The statement touches %s.", tables).
			WithHint("Add a condition on the shard key (%s) to the SELECT.", g.Index.String())
	}
	pl.Root = &Route{Opcode: EqualUnique, Group: g, Keys: []KeyRef{*key}, Tables: tables}
	return nil
}

// buildMerge plans MERGE: fine within one unsharded group or on copies of
// reference tables, refused on sharded tables for now.
func (p *Planner) buildMerge(pl *Plan, m *pg.MergeStmt) error {
	pl.Kind, pl.Returns = Merge, len(m.ReturningList) > 0
	a := newAnalysis(p)
	l := a.newLevel(nil)
	l.restricting, l.write = true, true
	a.with(l, m.WithClause)
	l.target = a.addInstance(l, m.Relation, false)
	a.fromItem(l, m.SourceRelation, false, false)
	a.condition(l, m.JoinCondition, condFilter) // pins and joins, as a WHERE (mergeinto.go)
	for _, w := range m.MergeWhenClauses {
		a.expression(l, w)
	}
	r, err := a.decide(l)
	if err != nil {
		// A source read first and routed per row (merge_source.go).
		return p.buildMergeSource(pl, m, a, l, err)
	}
	if r.Opcode != Unsharded && r.Opcode != AllClusters {
		if l.target.rel.kind != relSharded {
			return sqlerr.New(sqlerr.FeatureNotSupported, "MERGE into %s is not supported", l.target.rel.display)
		}
		vs, byRow := a.mergeValuesKey(l, m)
		byRow = byRow && r.Opcode == Scatter && len(a.shardedInstances()) == 1
		if !byRow {
			vs = mergeValuesSource{}
		}
		if err := a.mergeIntoSharded(l, m, r, vs.routed()); err != nil {
			return p.buildMergeSource(pl, m, a, l, err)
		}
		if byRow {
			split, err := a.newMergeSplit(pl.SQL, l, vs)
			if err != nil {
				return err
			}
			pl.Root = split
			return nil
		}
	}
	pl.Root = r
	return nil
}

// buildExplain plans EXPLAIN: EXPLAIN (ROUTE) is answered by the proxy
// from the inner plan; any other EXPLAIN runs where the statement would.
func (p *Planner) buildExplain(pl *Plan, e *pg.ExplainStmt) error {
	route, analyze := false, false
	for _, o := range e.Options {
		if d, ok := o.Node.(*pg.Node_DefElem); ok && d.DefElem.Defname == "route" {
			route = true
		} else if ok && d.DefElem.Defname == "analyze" {
			analyze = defBool(d.DefElem.Arg)
		}
	}
	if route && analyze {
		// Not built: the statement run with per-shard and per-step
		// figures. Refused rather than answered with the plan alone.
		return sqlerr.New(sqlerr.FeatureNotSupported, "EXPLAIN (ROUTE, ANALYZE) is not supported").
			WithHint("EXPLAIN (ROUTE) shows the plan without running it; the admin console's SHOW QUERIES has each statement's time, rows and shards per call.")
	}
	inner := &Plan{SQL: pl.SQL, NumParams: pl.NumParams}
	if err := p.buildStmt(inner, e.Query); err != nil {
		if ok, werr := p.orWritableCTE(inner, e.Query, err); !route || !ok || werr != nil {
			return cmp.Or(werr, err)
		}
		pl.Kind, pl.Returns, pl.Inner, pl.Root = ExplainRoute, true, inner, &ProxyLocal{What: "EXPLAIN (ROUTE)"}
		inner.SQL, _ = explainedText(pl.SQL)
		return nil
	}
	if route {
		p.planLookup(inner, e.Query)
	}
	if err := p.sequencePass(inner, e.Query); err != nil {
		return err
	}
	if err := p.copiesPass(inner, e.Query); err != nil {
		return err
	}
	if route {
		if err := classifySession(inner, e.Query); err != nil {
			return err
		}
		pl.Kind, pl.Returns = ExplainRoute, true
		inner.SQL, _ = explainedText(pl.SQL)
		pl.Inner = inner
		pl.Root = &ProxyLocal{What: "EXPLAIN (ROUTE)"}
		return nil
	}
	pl.Kind, pl.Returns = Explain, true
	if inner.Kind == Execute {
		return sqlerr.New(sqlerr.FeatureNotSupported, "EXPLAIN EXECUTE is not supported").
			WithHint("EXPLAIN the prepared statement's text, or use EXPLAIN (ROUTE) EXECUTE to see how the proxy runs it.")
	}
	if im, ok := inner.Root.(*Intermediate); ok {
		return sqlerr.New(sqlerr.FeatureNotSupported, "EXPLAIN of a read over intermediate results is not supported (%s)", im.Cause).
			WithHint("Use EXPLAIN (ROUTE) to see the statements the shards and the coordinator run.")
	}
	if _, write := ReadOf(inner); write || isWriteInSteps(inner.Root) {
		// No one backend statement to explain: run, it would write.
		return sqlerr.New(sqlerr.FeatureNotSupported, "EXPLAIN of a write the proxy runs in steps (%s) is not supported", inner.Root.Name()).
			WithHint("Use EXPLAIN (ROUTE) to see the statements the shards and the coordinator run.")
	}
	if inner.Mode() == ModeMerge {
		// The shards would explain their rewritten statements, not the
		// client's; EXPLAIN (ROUTE) shows what the proxy does.
		return mergeRefusal("EXPLAIN of a merged read", LeafRoute(inner.Root)).
			WithHint("Use EXPLAIN (ROUTE) to see the shard statements and how the proxy merges them.")
	}
	if r, ok := inner.Root.(*Route); ok && r.Shard != nil {
		// EXPLAIN of an IN list cut per cluster: explain it whole.
		c := *r
		c.Shard = nil
		inner.Root = &c
	}
	pl.Root = inner.Root
	pl.Inner = inner
	return nil
}

// buildCreateTableAs plans CREATE TABLE AS / CREATE MATERIALIZED VIEW.
func (p *Planner) buildCreateTableAs(pl *Plan, c *pg.CreateTableAsStmt) error {
	pl.Kind = DDL
	var rel *pg.RangeVar
	if c.Into != nil {
		rel = c.Into.Rel
	}
	if _, ok := c.Query.GetNode().(*pg.Node_ExecuteStmt); ok {
		return sqlerr.New(sqlerr.FeatureNotSupported, "CREATE TABLE AS EXECUTE is not supported").
			WithHint("Write the prepared statement's query in CREATE TABLE AS.")
	}
	sel, _ := c.Query.GetNode().(*pg.Node_SelectStmt)
	if sel == nil {
		return p.buildUtility(pl, &pg.Node{Node: &pg.Node_CreateTableAsStmt{CreateTableAsStmt: c}})
	}
	return p.createFromQuery(pl, rel, sel.SelectStmt, "CREATE TABLE AS")
}

// createFromQuery plans statements that create a table from a query
// (SELECT INTO, CREATE TABLE AS). The new table lands where the topology
// puts its name; the query must read only what every cluster of that
// placement holds: the same unsharded group, or reference tables of the
// group the new (reference) table belongs to.
func (p *Planner) createFromQuery(pl *Plan, rel *pg.RangeVar, s *pg.SelectStmt, what string) error {
	a := newAnalysis(p)
	top := a.selectLevel(nil, s, true)
	r, err := a.decide(top)
	if err != nil {
		return err
	}
	target := p.lookup(rel.Schemaname, rel.Relname)
	g := target.group
	tableless := len(a.insts) == 0
	switch {
	case target.kind == relUnsharded && (tableless || r.Opcode == Unsharded && r.Group == g):
		pl.Root = &Route{Opcode: Unsharded, Group: g}
		return nil
	case target.kind == relReference && (tableless || r.Opcode == AnyShard && r.Group == g):
		pl.Root = &Route{Opcode: AllClusters, Group: g}
		return nil
	}
	from := "a query"
	if !tableless {
		from = a.insts[0].rel.display + " (group " + a.insts[0].rel.group.Name + ")"
	}
	return sqlerr.New(sqlerr.FeatureNotSupported, "%s: creating %s (group %s) from %s is not supported",
		what, target.display, g.Name, from).
		WithHint("The new table must be filled from tables that every cluster of its group holds.")
}

// isWriteInSteps reports a write the proxy runs statement by statement
// itself (write_pullout.go, wcte.go).
func isWriteInSteps(p Primitive) bool {
	switch p.(type) {
	case *WritePullout, *WritableCTE:
		return true
	}
	return false
}
