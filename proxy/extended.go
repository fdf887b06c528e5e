package proxy

import (
	"maps"
	"slices"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/gsi"
	"github.com/shardgate/shardgate/pgwire"
	"github.com/shardgate/shardgate/planner"
	"github.com/shardgate/shardgate/sessionstate"
	"github.com/shardgate/shardgate/sqlerr"
)

// clientStmt is a prepared statement of the client (extended protocol).
type clientStmt struct {
	name      string
	sql       string
	paramOIDs []uint32 // from Parse, completed from the backend's ParameterDescription
	plan      *planner.Plan
	key       string           // identity on backend connections: SQL and parameter types
	gen       int              // see stmtKey
	planner   *planner.Planner // planned by: see replan
	columns   uint64           // the column orders' generation it was planned in (columns.go)
	bound     [2]string        // the SQL of a GSI read's owner statement and its key (ensurePrepared)
	shape     resultShape      // the result the client was described with (resultshape.go)
	// keys and pools: where the statement was prepared under which keys
	// (key changes once the parameter types are known), for forget.
	keys  []string
	pools []*backend.Pool
}

// portal is a bound statement.
type portal struct {
	name    string
	stmt    *clientStmt
	params  []planner.Param
	targets []planner.Target
	conns   []*backend.Conn
	// names are the portals' names on conns[i]: the client's name, or one
	// of the proxy's for the per-row statements of planner.Target.Each
	// (rowPortal[i]), which execute closes after running them.
	names     []string
	rowPortal []bool
	local     bool          // run by the proxy itself (transaction control, EXPLAIN (ROUTE))
	merge     *mergePortal  // a read merged across clusters (merges.go)
	formats   []int16       // result formats of a signal call the proxy answers (terminate.go)
	maxRows   uint32        // the row limit of a local portal's Execute (intermediate.go)
	fetch     *scatterFetch // a scatter read executed with row limits (scatterfetch.go)
	// spanPlan replaces stmt.plan in a local portal: the plan over
	// intermediate results of an IN list whose bound keys span clusters
	// under what no merge can do (planner.Plan.SpanFallback).
	spanPlan *planner.Plan
	// missingCursor: a FETCH, MOVE or CLOSE whose cursor did not exist at
	// Bind. Postgres binds it and looks the cursor up when it runs, so
	// Execute fails (missingCursorError).
	missingCursor bool
	// inline is the storage of a portal on one backend (the usual case).
	inline struct {
		conns  [1]*backend.Conn
		names  [1]string
		rows   [1]bool
		params [2]planner.Param
	}
}

func (bt *batch) parse(m *pgproto3.Parse) error {
	ss := bt.ss
	if m.Name != "" {
		if _, ok := ss.stmts[m.Name]; ok {
			return sqlerr.New("42P05", "prepared statement \"%s\" already exists", m.Name)
		}
	}
	plan, err := planReadingColumns(ss, bt.r, bt.idle, func(p *planner.Planner) (*planner.Plan, error) { return p.Plan(m.Query) })
	if err != nil {
		return err
	}
	st := &clientStmt{name: m.Name, sql: m.Query, paramOIDs: m.ParameterOIDs, plan: plan, planner: ss.planning(bt.r), columns: ss.columnsGen(bt.r)}
	st.gen = int(stmtSeq.Add(1))
	if m.Name != "" { // an unnamed statement is never looked up by key
		st.key = backend.StatementKey(m.Query, m.ParameterOIDs, st.gen)
	}
	put(&ss.stmts, m.Name, st)
	if c, ok := plan.OneCluster(); ok && !planner.RunsInSteps(plan) && (ss.tx == nil || !ss.tx.failed) {
		return bt.parseOn(st, c)
	}
	bt.synth(&pgproto3.ParseComplete{})
	return nil
}

// joinTx makes b, leased earlier in this batch, part of the session's
// transaction: BEGIN goes down the pipeline (an extended-protocol BEGIN
// turns the backend's implicit transaction, with what ran in it already,
// into a transaction block) under names of the proxy's, so no unnamed
// statement or portal of the client is replaced.
func (bt *batch) joinTx(b *backend.Conn) error {
	ss := bt.ss
	cluster := b.Cluster()
	key := "\x00" + ss.tx.begin
	name, ok := b.Prepared[key]
	if !ok {
		name = b.SendParseAs(key, ss.tx.begin, nil)
		bt.queue = append(bt.queue, &expect{conns: []*backend.Conn{b}, until: "1", onErr: func() { delete(b.Prepared, key) }})
	}
	_ = b.Send(&pgproto3.Bind{PreparedStatement: name, DestinationPortal: name})
	_ = b.Send(&pgproto3.Execute{Portal: name})
	if err := b.Send(&pgproto3.Close{ObjectType: 'P', Name: name}); err != nil {
		return pgwire.ConnLost(cluster, err)
	}
	bt.queue = append(bt.queue,
		&expect{conns: []*backend.Conn{b}, until: "2"},
		&expect{conns: []*backend.Conn{b}, until: "C"},
		&expect{conns: []*backend.Conn{b}, until: "3"})
	ss.tx.conns[cluster] = b
	ss.tx.order = append(ss.tx.order, cluster)
	return nil
}

// ensurePrepared makes the statement exist on b and returns its name there.
// A target's rewritten statement is parsed unnamed each time, but for one
// narrowed by a GSI (Extra), the same text at each execution: prepared once.
// ok is false when the client's statement, parsed anew on b, no longer has
// the result it was described with (recheck): the batch failed with 0A000.
func (bt *batch) ensurePrepared(b *backend.Conn, st *clientStmt, t planner.Target) (name string, ok bool) {
	sql, oids, key := st.sql, st.paramOIDs, st.key
	if t.Extra != nil && st.name != "" {
		if st.bound[0] != t.SQL { // its key, once per client statement
			st.bound = [2]string{t.SQL, backend.StatementKey(t.SQL, t.ParamOIDs(st.paramOIDs), st.gen)}
		}
		sql, oids, key = t.SQL, nil, st.bound[1]
	} else if t.SQL != "" || st.name == "" {
		if t.SQL == "" && b.Unnamed == st {
			return "", true // parsed at the client's Parse (parseOn)
		}
		if t.SQL != "" {
			sql, oids = t.SQL, t.ParamOIDs(st.paramOIDs)
		}
		_ = b.Send(&pgproto3.Parse{Name: "", Query: sql, ParameterOIDs: oids})
		e := bt.step(b, expect{until: "1"})
		if t.SQL == "" {
			b.Unnamed = st
			e.onErr = func() {
				if b.Unnamed == st {
					b.Unnamed = nil
				}
			}
			ok = bt.recheck(b, st, "", func() {
				if b.Unnamed == st {
					b.Unnamed = nil
				}
			})
			return "", ok
		}
		return "", true
	}
	if name, ok := b.Prepared[key]; ok {
		return name, true
	}
	if len(b.Prepared) >= maxBackendStmts {
		bt.evictOldest(b)
	}
	if t.Extra != nil {
		oids = t.ParamOIDs(st.paramOIDs)
	}
	name = b.SendParseAs(key, sql, oids)
	st.preparedOn(b.Pool(), key)
	bt.queue = append(bt.queue, &expect{conns: []*backend.Conn{b}, until: "1", onErr: func() { delete(b.Prepared, key) }})
	if t.Extra == nil {
		ok = bt.recheck(b, st, name, func() { delete(b.Prepared, key) })
		return name, ok
	}
	return name, true
}

func (bt *batch) bind(m *pgproto3.Bind) error {
	ss := bt.ss
	st, ok := ss.stmts[m.PreparedStatement]
	if !ok {
		return sqlerr.New("26000", "prepared statement \"%s\" does not exist", m.PreparedStatement)
	}
	if err := bt.replan(st); err != nil {
		return err
	}
	if len(m.Parameters) != st.plan.NumParams && st.plan.NumParams > 0 {
		return sqlerr.New("08P01", "bind message supplies %d parameters, but prepared statement \"%s\" requires %d", len(m.Parameters), m.PreparedStatement, st.plan.NumParams)
	}
	if old, ok := ss.portals[m.DestinationPortal]; ok && m.DestinationPortal != "" {
		return sqlerr.New("42P03", "portal \"%s\" already exists", old.name)
	}
	bt.adopt(ss.suspended.End("", false)...) // the unnamed portal bound again is closed
	p := &portal{name: m.DestinationPortal, stmt: st}
	p.conns, p.names, p.rowPortal = p.inline.conns[:0], p.inline.names[:0], p.inline.rows[:0]
	p.params = planner.AppendBindParams(p.inline.params[:0], m.Parameters, m.ParameterFormatCodes, st.paramOIDs)
	if planner.RunsInSteps(st.plan) || st.plan.GSI != nil || ss.signalTarget(st.plan, p.params) != nil || ss.mergedCursorStmt(st.plan) || workflowCandidate(st.plan) {
		if ss.mergedCursorStmt(st.plan) && st.plan.Kind == planner.Fetch {
			if err := ss.mcursors.CheckFormats(st.plan.Cursor.Name, ss.txKey(), m.ResultFormatCodes); err != nil {
				return err
			}
		}
		p.local, p.formats = true, slices.Clone(m.ResultFormatCodes) // m's storage is reused
		put(&ss.portals, p.name, p)
		bt.synth(&pgproto3.BindComplete{})
		return nil
	}
	if ss.tx != nil && ss.tx.failed {
		return errTxAborted
	}
	if err := ss.checkTarget(st.plan); err != nil {
		return err
	}
	targets, err := st.plan.TargetsWith(p.params, ss.seqSource(st.plan.SQL))
	if err == nil && st.plan.Mode() == planner.ModeCursor {
		targets, err = ss.cursorTargets(bt.r, st.plan)
	}
	if e, ok := st.plan.Root.(*planner.EveryCluster); ok && err == nil && len(e.Indexes) > 0 {
		bt.flushBackends() // the check reads the clusters: first what the batch sent before is answered
		if bt.drain(); bt.dropping {
			return nil
		}
		targets, err = ss.indexTargets(bt.r, st.plan, targets) // DROP INDEX (indexddl.go)
	}
	if err == nil && st.plan.Lookup != nil {
		bt.flushBackends() // through a GSI: first what the batch sent before is answered
		if bt.drain(); bt.dropping {
			return nil
		}
		targets, err = gsi.NarrowBound(gsiSession{ss, bt.r}, st.plan, p.params, targets)
	}
	if fb := st.plan.SpanFallback(err); fb != nil {
		p.local, p.formats, p.spanPlan = true, slices.Clone(m.ResultFormatCodes), fb
		put(&ss.portals, p.name, p)
		bt.synth(&pgproto3.BindComplete{})
		return nil
	}
	if st.plan.Mode() == planner.ModeCursor && sqlerr.Code(err) == "34000" {
		p.local, p.missingCursor = true, true // described as NoData, fails at Execute
		put(&ss.portals, p.name, p)
		bt.synth(&pgproto3.BindComplete{})
		return nil
	}
	if err != nil {
		return err
	}
	if st.plan.CopyRun() {
		return sqlerr.New("0A000", "COPY across the clusters of a sharded group through the extended query protocol is not supported by shardgate").
			WithHint("Send the COPY as a simple Query, as psql, libpq's PQexec and pgx's CopyFrom do.")
	}
	p.targets = targets
	// A merge counts too: the errors it raises while the batch's answers
	// are read, after Sync went to the backends, must roll back the
	// batch's writes.
	if err := bt.implicitTx(st.plan, targets); err != nil { // batchtx.go
		return err
	}
	if st.plan.Mode() == planner.ModeMerge && len(targets) > 1 {
		return bt.bindMerge(m, st, p, targets) // merged read, merges.go
	}
	ss.pinFor(st.plan)
	first := true
	for _, t := range targets {
		b, err := bt.txConn(t.Cluster)
		if err != nil {
			return err
		}
		subs := []planner.Target{t}
		if len(t.Each) > 0 {
			subs = t.Each
		}
		for _, sub := range subs {
			name, ok := bt.ensurePrepared(b, st, sub)
			if !ok {
				return nil // 0A000 sent (recheck)
			}
			bind := sub.Bind(m, name)
			if len(t.Each) > 0 {
				// One backend portal per row statement, executed in turn and closed by execute.
				bind.DestinationPortal = b.NextName("sgrow")
			}
			if err := b.SendBind(&bind); err != nil {
				return pgwire.ConnLost(t.Cluster, err)
			}
			p.conns = append(p.conns, b)
			p.names = append(p.names, bind.DestinationPortal)
			p.rowPortal = append(p.rowPortal, len(t.Each) > 0)
			bt.step(b, expect{until: "2", relay: first})
			first = false
		}
	}
	if err := ss.markWrites(st.plan, p.conns); err != nil {
		return err
	}
	ss.pin(st.plan, p.conns)
	put(&ss.portals, p.name, p)
	return nil
}

func (bt *batch) describe(m *pgproto3.Describe) error {
	ss := bt.ss
	if m.ObjectType == 'P' {
		p, ok := ss.portals[m.Name]
		if !ok && bt.describeCursor(m.Name) {
			return nil // a DECLAREd cursor's portal (cursorportal.go)
		}
		if !ok {
			return sqlerr.New("34000", "portal \"%s\" does not exist", m.Name)
		}
		if p.local {
			if ss.mergedCursorStmt(p.stmt.plan) {
				bt.describeCursorStmt(p.stmt.plan, false)
			} else if p.spanPlan != nil {
				return bt.describeIntermediate(p.stmt, p.spanPlan, p)
			} else if p.stmt.plan.Kind == planner.ExplainRoute {
				bt.synth(pgwire.ExplainRowDescription)
			} else if p.stmt.plan.Show == targetSetting {
				bt.synth(targetRowDescription)
			} else if p.stmt.plan.Mode() == planner.ModeIntermediate || p.stmt.plan.GSI != nil {
				return bt.describeIntermediate(p.stmt, p.stmt.plan, p) // or GSI's
			} else if w, ok := p.stmt.plan.Root.(*planner.WritableCTE); ok && p.stmt.plan.Returns {
				return bt.describeWCTE(w, nil, p.formats) // wcte.go
			} else if p.stmt.plan.Signal != nil {
				desc, _ := p.stmt.plan.Signal.Result(ss.pid, p.formats, false)
				bt.synth(desc)
			} else {
				bt.synth(&pgproto3.NoData{})
			}
			return nil
		}
		if p.merge != nil {
			return bt.describeMerge(p) // merged read, merges.go
		}
		bt.adopt(p.conns...)
		b := p.conns[0]
		if err := b.SendDescribe('P', p.names[0]); err != nil {
			return pgwire.ConnLost(b.Cluster(), err)
		}
		bt.step(b, expect{until: "Tn", relay: true})
		return nil
	}
	st, ok := ss.stmts[m.Name]
	if !ok {
		return sqlerr.New("26000", "prepared statement \"%s\" does not exist", m.Name)
	}
	if err := bt.replan(st); err != nil {
		return err
	}
	if st.plan.Mode() == planner.ModeIntermediate {
		return bt.describeIntermediate(st, st.plan, nil)
	}
	if ss.mergedCursorStmt(st.plan) {
		bt.describeCursorStmt(st.plan, true)
		return nil
	}
	if w, ok := st.plan.Root.(*planner.WritableCTE); ok && (st.plan.Returns || w.NumParams > 0) {
		return bt.describeWCTE(w, st, nil) // wcte.go
	}
	if planner.RunsInSteps(st.plan) {
		oids := make([]uint32, st.plan.NumParams)
		copy(oids, st.paramOIDs)
		bt.synth(&pgproto3.ParameterDescription{ParameterOIDs: oids})
		if st.plan.Kind == planner.ExplainRoute {
			bt.synth(pgwire.ExplainRowDescription)
		} else if st.plan.Show == targetSetting {
			bt.synth(targetRowDescription)
		} else {
			bt.synth(&pgproto3.NoData{})
		}
		return nil
	}
	if ss.tx != nil && ss.tx.failed {
		return errTxAborted
	}
	dt, ok := st.plan.DescribeTarget()
	if !ok {
		dt.Cluster = bt.r.vs.Main().Clusters[0]
	}
	if st.plan.Mode() == planner.ModeCursor {
		if ts, err := ss.cursorTargets(bt.r, st.plan); err == nil {
			dt = ts[0] // FETCH is described where its cursor is
		}
	}
	b, err := bt.conn(dt.Cluster)
	if err != nil {
		return err
	}
	name, ok := bt.ensurePrepared(b, st, dt)
	if !ok {
		return nil // 0A000 sent (recheck)
	}
	if err := b.SendDescribe('S', name); err != nil {
		return pgwire.ConnLost(b.Cluster(), err)
	}
	bt.step(b, expect{until: "Tn", relay: true, stmt: st})
	return nil
}

func (bt *batch) execute(m *pgproto3.Execute) error {
	ss := bt.ss
	p, ok := ss.portals[m.Portal]
	if !ok {
		if handled, err := bt.executeCursor(m); handled {
			return err // a DECLAREd cursor's portal (cursorportal.go)
		}
		return sqlerr.New("34000", "portal \"%s\" does not exist", m.Portal)
	}
	plan := p.stmt.plan
	if p.spanPlan != nil {
		plan = p.spanPlan
	}
	if p.missingCursor {
		return ss.missingCursorError(bt.r, plan)
	}
	if p.local {
		// Transaction control touches backends with simple queries: deliver
		// everything pending first so responses stay in order.
		bt.flushBackends()
		bt.drain()
		if bt.dropping {
			return nil
		}
		tx := ss.tx
		var owned map[string]*backend.Conn
		if tx != nil {
			owned = maps.Clone(tx.conns)
		}
		p.maxRows = m.MaxRows
		err := ss.execute(bt.r, plan, plan.SQL, p.params, p)
		if tx != nil && ss.tx != tx {
			bt.dropReleased(owned)
		}
		return err
	}
	if ss.tx != nil && ss.tx.failed {
		return errTxAborted
	}
	bt.adopt(p.conns...)
	start, r := time.Now(), bt.r
	done := func(err error) {
		ss.observe(r, plan, len(p.conns), func(i int) string { return p.conns[i].Cluster() }, start, err)
	}
	if p.merge != nil {
		return bt.executeMerge(p, m.MaxRows, done) // merged read, merges.go
	}
	if limitedScatter(p, m.MaxRows) {
		return bt.executeScatter(p, m.MaxRows, done) // scatterfetch.go
	}
	if m.MaxRows > 0 && len(p.conns) > 1 && !plan.NoRows() {
		return sqlerr.New("0A000", "fetching a limited number of rows from a statement that writes on several shards is not supported")
	}
	if plan.Mode() == planner.ModeReplicate && len(p.conns) > 1 && plan.WritesData() {
		return bt.executeFirstCopyFirst(p, m, done)
	}
	for i, b := range p.conns {
		if err := b.SendExecute(p.names[i], m.MaxRows); err != nil {
			return pgwire.ConnLost(b.Cluster(), err)
		}
	}
	sessionstate.MarkSettingsChange(plan, p.conns)
	ss.markUnseen(plan, p.conns)
	e := bt.step(nil, expect{conns: p.conns, until: "CIs", relay: true, multi: len(p.conns) > 1, mode: plan.Mode(), targets: p.targets, done: done})
	defer func() {
		// Close the per-row portals once they ran (after every Execute,
		// so that each backend answers the Executes first, in order).
		for i, b := range p.conns {
			if p.rowPortal[i] {
				_ = b.Send(&pgproto3.Close{ObjectType: 'P', Name: p.names[i]})
				bt.queue = append(bt.queue, &expect{conns: []*backend.Conn{b}, until: "3"})
			}
		}
	}()
	if plan.Kind == planner.DeclareCursor && len(p.conns) > 0 {
		// Known before its result: a FETCH later in the batch is bound
		// before this step's answer is read. Undone if it fails.
		name, before := plan.Cursor.Name, ss.cursors[plan.Cursor.Name]
		ss.trackState(plan, p.conns[0].Cluster(), p.conns[0])
		e.onErr = func() {
			if before != nil {
				put(&ss.cursors, name, before)
			} else {
				delete(ss.cursors, name)
			}
		}
	}
	e.onOK = func() {
		if plan.ChangesState() {
			ss.spreadAtSync += ss.noteState(plan)
		}
		if len(p.conns) > 0 {
			ss.trackState(plan, p.conns[0].Cluster(), p.conns[0])
		}
	}
	return nil
}

// closePortal answers the client's Close of portal name. Its portals on
// backend connections are closed there, in the batch (so before its Sync),
// freeing what they hold (a snapshot, memory, the name) as Postgres frees
// the client's portal; the first backend's CloseComplete is the client's.
// A merge an Execute earlier in the batch suspends is ended, when the
// batch's answers are read, before the CloseCompletes are (its readers
// hold the connections until then). A connection still busy with another
// portal's suspended merge keeps its portal until the transaction ends.
func (bt *batch) closePortal(name string) error {
	ss := bt.ss
	bt.adopt(ss.suspended.End(name, false)...) // suspended in an earlier batch
	p, ok := ss.portals[name]
	if !ok {
		return bt.closeCursor(name) // cursorportal.go
	}
	delete(ss.portals, name)
	var sent []*backend.Conn
	if !p.local {
		for i, b := range p.conns {
			if b.Broken || ss.suspended.Busy(b) != nil {
				continue
			}
			bt.adopt(b)
			if err := b.Send(&pgproto3.Close{ObjectType: 'P', Name: p.names[i]}); err != nil {
				return pgwire.ConnLost(b.Cluster(), err)
			}
			sent = append(sent, b)
		}
	}
	switch {
	case len(sent) == 0:
		bt.synth(&pgproto3.CloseComplete{})
	case p.merge != nil:
		bt.queue = append(bt.queue, &expect{exec: func() {
			bt.adopt(ss.suspended.End(name, false)...) // suspended by this batch
			for i, b := range sent {
				bt.readStep(&expect{conns: []*backend.Conn{b}, until: "3", relay: i == 0 && !bt.quiet})
			}
		}})
	default:
		for i, b := range sent {
			bt.step(b, expect{until: "3", relay: i == 0 && !bt.quiet})
		}
	}
	return nil
}

// executeFirstCopyFirst runs a write to every copy (reference tables,
// DDL) on the first copy, waits for its answer, then runs it on the
// others: the first copy's row locks decide for every copy, so two
// transactions cannot each win a row on a different cluster and wait for
// each other forever (see runTargets). The first copy's answer is the
// client's; the others only report errors.
func (bt *batch) executeFirstCopyFirst(p *portal, m *pgproto3.Execute, done func(error)) error {
	first := p.conns[0]
	if err := first.Send(&pgproto3.Execute{Portal: p.names[0], MaxRows: m.MaxRows}); err != nil {
		return pgwire.ConnLost(first.Cluster(), err)
	}
	plan := p.stmt.plan
	bt.queue = append(bt.queue, &expect{conns: p.conns[:1], until: "CIs", relay: true, mode: plan.Mode(), targets: p.targets[:1], done: done})
	bt.flushBackends()
	bt.drain()
	if bt.dropping {
		return nil // the first copy failed: the batch is aborted
	}
	for i := 1; i < len(p.conns); i++ {
		b := p.conns[i]
		if err := b.Send(&pgproto3.Execute{Portal: p.names[i], MaxRows: m.MaxRows}); err != nil {
			return pgwire.ConnLost(b.Cluster(), err)
		}
	}
	bt.queue = append(bt.queue, &expect{conns: p.conns[1:], until: "CIs", mode: plan.Mode()})
	return nil
}
