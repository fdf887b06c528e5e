package proxy

import (
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/copyroute"
	"github.com/shardgate/shardgate/gsi"
	"github.com/shardgate/shardgate/intermediate"
	"github.com/shardgate/shardgate/merge"
	"github.com/shardgate/shardgate/planner"
	"github.com/shardgate/shardgate/sessionstate"
	"github.com/shardgate/shardgate/sqlerr"
)

// simpleQuery runs one Query message: one or more statements, each planned
// and executed in turn; several statements outside a transaction block run
// in one implicit transaction, as in Postgres ("Multiple Statements in a
// Simple Query", protocol-flow.html).
func (ss *session) simpleQuery(sql string) {
	g := ss.srv.cfg.Gate
	var heldAt time.Time
	defer func() { g.Answered(heldAt) }() // after ReadyForQuery
	defer ss.ready()
	defer g.Leave(g.Enter())
	if g.Armed() {
		heldAt = g.Hold(ss.tx != nil && ss.tx.gateSeq != g.Seq() && len(ss.tx.conns) > 0, func() []string { return []string{sql} }) // planned after a switch of its tables
	}
	r := ss.srv.cur.Load()
	bounds, planErr := planReadingColumns(ss, r, nil, func(p *planner.Planner) ([]*planner.Bound, error) { return p.PlanSimple(sql) })
	if planErr != nil && len(bounds) == 0 {
		ss.fail(ss.refused(sql, planErr))
		return
	}
	if len(bounds) == 0 {
		_ = ss.send(&pgproto3.EmptyQueryResponse{})
		return
	}
	if ss.tx == nil && (len(bounds) > 1 || planErr != nil) {
		// Statements before one the planner refused are in its implicit
		// transaction too: the refusal rolls them back, as an error does
		// in Postgres.
		ss.tx = ss.newTx(true, "")
	}
	failed := false
	for _, b := range bounds {
		if err := ss.execute(r, b.Plan, b.SQL, b.Params, nil); err != nil {
			ss.fail(err)
			failed = true
			break
		}
	}
	// The planner returns the statements before one it refused: they run
	// first, as Postgres would run them before reaching the bad one.
	if planErr != nil && !failed {
		ss.fail(ss.refused(sql, planErr))
	}
	if ss.tx != nil && ss.tx.implicit {
		if err := ss.endTx(!ss.tx.failed); err != nil {
			_ = ss.sendError(err)
		}
	}
}

// fail reports a statement's error and moves the transaction, if any, into
// the aborted state.
func (ss *session) fail(err error) {
	if err != errReported {
		_ = ss.sendError(err)
	}
	if ss.tx != nil {
		ss.tx.failed = true
	}
}

func (ss *session) ready() {
	ss.info.Ready(len(ss.stmts), ss.tx != nil && !ss.tx.implicit)
	ss.deliverNotifications()
	ss.settle()
	_ = ss.enc.SendReady(ss.txStatus())
}

func (ss *session) complete(tag string) error {
	return ss.send(&pgproto3.CommandComplete{CommandTag: []byte(tag)})
}

func (ss *session) notice(code, msg string) error {
	return ss.send(&pgproto3.NoticeResponse{Severity: "WARNING", SeverityUnlocalized: "WARNING", Code: code, Message: msg})
}

var errTxAborted = sqlerr.New("25P02", "current transaction is aborted, commands ignored until end of transaction block")

// execute runs one planned statement. ext is nil for the simple protocol;
// for the extended protocol it carries the portal to execute.
func (ss *session) execute(r *routing, plan *planner.Plan, sql string, params []planner.Param, ext *portal) (err error) {
	var targets []planner.Target
	defer func(start time.Time) {
		if plan.Kind == planner.Execute && (err == nil || err == errReported) {
			return // the prepared statement ran and counted itself (SHOW QUERIES)
		}
		ss.observe(r, plan, len(targets), planner.ClusterOf(targets), start, err)
	}(time.Now())
	defer ss.endUnseen(ss.runsUnseen(plan))
	if ss.tx != nil && ss.tx.failed {
		switch plan.Kind {
		case planner.Commit, planner.Rollback, planner.RollbackTo:
		default:
			return errTxAborted
		}
	}
	if err := ss.checkTarget(plan); err != nil {
		return err
	}
	if k := plan.Kind; (k == planner.Savepoint || k == planner.Release || k == planner.RollbackTo || plan.ChangesState()) && ss.suspended.Busy(nil) != nil {
		return ss.suspended.Busy(nil) // it would reach every connection of the transaction
	}
	if plan.Kind == planner.Set {
		// Before it runs: the SET's own run on main's cluster joins the
		// transaction there on the host it asks for.
		ss.noteLocalTarget(plan)
	} else {
		defer func() {
			if err == nil {
				ss.noteLocalTarget(plan)
			}
		}()
	}
	if plan.Kind == planner.DDL {
		defer ss.afterDDL(r) // it may change tables' columns (columns.go)
	}
	switch plan.Kind {
	case planner.Begin:
		return ss.execBegin(plan)
	case planner.Commit, planner.Rollback:
		return ss.execEnd(plan)
	case planner.Savepoint, planner.Release, planner.RollbackTo:
		return ss.execSavepoint(plan)
	case planner.ExplainRoute:
		return ss.execExplainRoute(plan, params, ext == nil)
	case planner.Deallocate:
		if plan.Deallocate == "" {
			for name := range ss.stmts {
				if name != "" {
					ss.dropStmt(name)
				}
			}
			return ss.complete("DEALLOCATE ALL")
		}
		if _, ok := ss.stmts[plan.Deallocate]; !ok {
			return sqlerr.New("26000", "prepared statement \"%s\" does not exist", plan.Deallocate)
		}
		ss.dropStmt(plan.Deallocate)
		return ss.complete("DEALLOCATE")
	case planner.Empty:
		return ss.send(&pgproto3.EmptyQueryResponse{})
	case planner.Show:
		if plan.Show == targetSetting {
			return ss.showTarget(ext == nil)
		}
	case planner.Prepare:
		return ss.execPrepare(r, plan)
	case planner.Execute:
		return ss.execSQLExecute(r, plan, ext)
	case planner.DeclareCursor, planner.Fetch, planner.Move, planner.ClosePortal:
		if done, err := ss.mergedCursor(r, plan, params, ext); done {
			return err
		}
	}
	if plan.Signal != nil && (ext == nil || ext.local) {
		if done, err := ss.execSignal(plan, params, ext); done {
			return err
		}
	}
	if wp, ok := plan.Root.(*planner.WritePullout); ok {
		return ss.execWritePullout(r, wp, ext) // write_pullout.go
	}
	if w, ok := plan.Root.(*planner.WritableCTE); ok {
		return ss.execWritableCTE(r, plan, w, ext) // wcte.go
	}
	if plan.Mode() == planner.ModeProxy {
		return sqlerr.New("XX000", "shardgate cannot execute %s statements here", plan.Kind)
	}
	if plan.Mode() == planner.ModeIntermediate {
		targets, _ = plan.Targets(params) // run in steps: intermediate.go
	} else if ext == nil {
		// The simple protocol: literal SQL for every target, with the
		// literals PlanSimple lifted put back into rewritten statements.
		b := planner.Bound{Plan: plan, Params: params, SQL: sql}
		targets, err = b.TargetsWith(ss.seqSource(plan.SQL))
	} else {
		targets, err = plan.TargetsWith(params, ss.seqSource(plan.SQL))
	}
	if err == nil && plan.Mode() == planner.ModeCursor {
		targets, err = ss.cursorTargets(r, plan)
	}
	if err == nil {
		targets, err = ss.indexTargets(r, plan, targets) // DROP INDEX (indexddl.go)
	}
	if err == nil && plan.Lookup != nil { // through a GSI
		targets, err = gsi.Narrow(gsiSession{ss, r}, plan, params, targets, sql, ext.bound())
	}
	if fb := plan.SpanFallback(err); fb != nil {
		// An IN list found to span clusters under what no merge can do
		// runs over intermediate results.
		plan = fb
		targets, err = plan.Targets(params)
	}
	if err != nil {
		return err
	}
	if len(targets) == 0 {
		return sqlerr.New("XX000", "shardgate planned no target for this statement")
	}
	wfDDL, err := ss.checkWorkflowDDL(r, plan, sql) // DDL on a table in a workflow (workflowddl.go)
	if err != nil {
		return err
	}
	wrapped := false
	if ss.tx == nil && ((len(targets) > 1 || plan.Mode() == planner.ModeIntermediate) && plan.Kind.IsWrite() && plan.WritesData() || plan.WritesGSI() || wfDDL != nil) {
		// One statement on several clusters commits everywhere or nowhere
		// as far as errors before COMMIT go.
		ss.tx = ss.newTx(true, "")
		wrapped, ss.extTx = ext == nil, ext != nil // extended: ends at Sync
	}
	if wfDDL != nil {
		err = ss.emitWorkflowDDL(r, wfDDL, targets)
	}
	switch {
	case err != nil:
	case plan.GSI != nil:
		err = gsi.Run(gsiSession{ss, r}, plan, sql, targets, ext.bound()) // lookup tables: gsi.go
	case plan.Mode() == planner.ModeIntermediate:
		err = ss.runIntermediate(r, plan, params, ext)
	default:
		err = ss.runTargets(r, plan, sql, params, targets, ext)
		if fb := merge.FallbackOf(err); fb != nil {
			err = ss.runIntermediate(r, fb, params, ext) // the merge found it cannot
		}
	}
	if err == nil && wfDDL != nil {
		err = ss.keptKeys(r, wfDDL, targets)
	}
	if err == nil && plan.ChangesState() {
		err = ss.stateChanged(plan)
	}
	if err == nil {
		ss.trackState(plan, targets[0].Cluster, nil)
	}
	if wrapped {
		if err != nil {
			ss.tx.failed = true
		}
		if cerr := ss.endTx(err == nil); err == nil {
			err = cerr
		}
	}
	return err
}

func (ss *session) execExplainRoute(plan *planner.Plan, params []planner.Param, describe bool) error {
	return ss.enc.SendExplain(plan.ExplainParams(params), describe)
}

// runTargets sends the statement to every target cluster at once, then
// relays the results in target order: rows stream through as they arrive,
// the first RowDescription stands for all, command tags are summed.
func (ss *session) runTargets(r *routing, plan *planner.Plan, sql string, params []planner.Param, targets []planner.Target, ext *portal) error {
	conns := make([]*backend.Conn, 0, len(targets))
	defer func() { ss.finishStatement(conns) }()
	ss.pinFor(plan)
	for _, t := range targets {
		b, err := ss.connFor(r, t.Cluster)
		if err != nil {
			return err
		}
		conns = append(conns, b)
	}
	// Settings reach the other connections the session keeps once the
	// statement succeeded (stateChanged).
	ss.pin(plan, conns)
	if ss.pinnedNow() && ss.held != nil {
		for _, b := range conns {
			ss.held[b.Cluster()] = b
		}
	}
	ss.setRunning(conns)
	if err := ss.markWrites(plan, conns); err != nil {
		return err
	}
	sessionstate.MarkSettingsChange(plan, conns)
	if plan.Mode() == planner.ModeMerge && len(conns) > 1 {
		// Reads merged across clusters (ORDER BY, LIMIT, aggregates,
		// DISTINCT): the merge executor, package merge (merges.go).
		return ss.runMerge(plan, sql, params, targets, conns)
	}
	if plan.CopyRun() {
		// COPY split or merged across clusters: copy.go.
		return ss.runCopy(r, plan, sql, targets, conns)
	}
	send := func(i int) error { return merge.SendQuery(conns[i], targets[i].Query(sql)) }
	// A write to every copy (reference tables, DDL) runs on the first copy
	// before the others. Two transactions writing the same row at once
	// would otherwise each lock it on a different cluster first and wait
	// for each other forever, a deadlock no single cluster can see; this
	// way the first copy's lock decides, for every copy.
	lead := len(conns)
	if plan.Mode() == planner.ModeReplicate && len(conns) > 1 && plan.WritesData() {
		lead = 1
	}
	for i := 0; i < lead; i++ {
		if err := send(i); err != nil {
			return err
		}
	}
	rel := merge.NewRelay(ss.mergeClient(), plan.Mode() == planner.ModeReplicate, conns)
	rel.Order = merge.NewReorder(targets)
	for i := 0; i < lead; i++ {
		ss.relayQuery(&rel, conns[i], targets[i])
	}
	if lead < len(conns) && rel.Err() == nil {
		for i := lead; i < len(conns); i++ {
			if err := send(i); err != nil {
				return err
			}
		}
		for i := lead; i < len(conns); i++ {
			ss.relayQuery(&rel, conns[i], targets[i])
		}
	}
	return rel.Finish()
}

// relayQuery reads one backend's answer to a Query up to ReadyForQuery.
func (ss *session) relayQuery(rl *merge.Relay, b *backend.Conn, t planner.Target) {
	rl.ReadQuery(b, t.Shards, func() error { return copyroute.Relay(b, copyInClient{ss.mergeClient(), ss}) })
}

// markWrites records the clusters a write of the transaction goes to, or
// refuses it (intermediate.MarkWrites).
func (ss *session) markWrites(plan *planner.Plan, conns []*backend.Conn) error {
	if ss.tx == nil || !plan.WritesData() {
		return nil
	}
	return intermediate.MarkConnWrites(ss.tx.pulledOn, ss.tx.wrote, ss.tx.conns, conns)
}
