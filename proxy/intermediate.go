package proxy

import (
	"slices"

	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/gsi"
	"github.com/shardgate/shardgate/intermediate"
	"github.com/shardgate/shardgate/planner"
	"github.com/shardgate/shardgate/sqlerr"
	"github.com/shardgate/shardgate/xwrite"
)

// intermediate prepares a read over intermediate results (package
// intermediate runs it) on the session's connections (in its transaction,
// if any), its coordinator on a connection of its own if scratch (a write's
// source); done gives back the ones leased for it.
func (ss *session) intermediate(r *routing, plan *planner.Plan, params []planner.Param, scratch bool) (st *intermediate.Statement, done func()) {
	var conns []*backend.Conn
	lim := r.topo.Proxy.Intermediate
	keep := func(b *backend.Conn, err error) (*backend.Conn, error) {
		if err == nil {
			conns = append(conns, b)
		}
		return b, err
	}
	st = &intermediate.Statement{
		Plan: plan, Params: params, Client: ss.mergeClient(),
		Limits: intermediate.Limits{MaxRows: lim.MaxRows, MaxBytes: lim.MaxBytes},
		Conn:   func(c string) (*backend.Conn, error) { return keep(ss.connFor(r, c)) },
	}
	if scratch {
		st.Scratch = func(c string) (*backend.Conn, error) {
			return keep(r.pools[c].LeaseAs(ss.pid, ss.settingsSQL(), ss.login))
		}
	} else if ss.tx != nil && ss.srv.live.Load().commit == CommitTwoPhase {
		st.Wrote, st.PulledOn = ss.tx.wrote, &ss.tx.pulledOn // intermediate.CheckReadInTx
	}
	// A row-limited read's coordinator stays busy while it is suspended.
	return st, func() {
		ss.finishStatement(slices.DeleteFunc(conns, func(b *backend.Conn) bool { return ss.suspended.Busy(b) != nil }))
	}
}

// runIntermediate executes a plan run in steps: a read over intermediate
// results, or a write whose rows it reads (package xwrite); ext: see execute.
func (ss *session) runIntermediate(r *routing, plan *planner.Plan, params []planner.Param, ext *portal) error {
	ss.pinFor(plan) // a cursor WITH HOLD keeps the coordinator's connection
	read, write := planner.ReadOf(plan)
	st, done := ss.intermediate(r, read, params, write)
	defer done()
	st.Describe, st.Formats = ext == nil, formatsOf(ext)
	run := st.Run
	if write && plan.Returns && ext != nil && ext.maxRows > 0 {
		return sqlerr.New(sqlerr.FeatureNotSupported, "an Execute with a row limit over INSERT ... SELECT across shards with RETURNING is not supported")
	} else if write {
		run = (&xwrite.Statement{Plan: plan, Source: st, Seqs: ss.seqSource(), Session: gsiSession{ss, r}}).Run
	} else if ext != nil && plan.Kind == planner.Select && (ext.maxRows > 0 || ss.suspended[ext.name] != nil) {
		release := func(b *backend.Conn) { ss.finishStatement([]*backend.Conn{b}) }
		run = func() (string, error) { return intermediate.Execute(st, ss.suspended, ext.name, ext.maxRows, release) }
	}
	tag, err := run()
	if err == nil && plan.Kind == planner.DeclareCursor {
		ss.trackState(plan, st.Coordinator().Cluster(), st.Coordinator()) // a cursor on the coordinator
	}
	if err != nil || tag == "" { // "": a row-limited read suspended
		return err
	}
	return ss.complete(tag)
}

// describeIntermediate answers Describe of a statement (p nil) or portal
// over intermediate results (plan: cs's, or a merge's fallback), in order with the rest of the batch.
func (bt *batch) describeIntermediate(cs *clientStmt, plan *planner.Plan, p *portal) error {
	bt.flushBackends()
	if bt.drain(); bt.dropping {
		return nil
	} else if bt.ss.tx != nil && bt.ss.tx.failed {
		return errTxAborted
	} else if cs.plan.GSI != nil && p != nil {
		return gsi.Describe(gsiSession{bt.ss, bt.r}, cs.plan, cs.paramOIDs, p.formats)
	}
	read, write := planner.ReadOf(plan)
	st, done := bt.ss.intermediate(bt.r, read, planner.BindParams(make([][]byte, plan.NumParams), nil, cs.paramOIDs), write)
	defer done()
	if p != nil {
		st.Formats = p.formats
	}
	pd, rd, err := xwrite.Described(st, cs.plan)
	if err == nil && p == nil { // the types narrow pulls by key (planner.Pull.Sources)
		cs.paramOIDs, err = pd.ParameterOIDs, bt.ss.send(pd)
	}
	if err == nil {
		err = bt.ss.send(rd)
	}
	return err
}
