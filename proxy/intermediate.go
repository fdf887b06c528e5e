package proxy

import (
	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/gsi"
	"github.com/shardgate/shardgate/intermediate"
	"github.com/shardgate/shardgate/planner"
)

// intermediate prepares a read over intermediate results (package
// intermediate runs it) on the session's connections (in its transaction,
// if any); done gives back the ones leased for it.
func (ss *session) intermediate(r *routing, plan *planner.Plan, params []planner.Param) (st *intermediate.Statement, done func()) {
	var conns []*backend.Conn
	lim := r.topo.Proxy.Intermediate
	st = &intermediate.Statement{
		Plan: plan, Params: params, Client: ss.mergeClient(),
		Limits: intermediate.Limits{MaxRows: lim.MaxRows, MaxBytes: lim.MaxBytes},
		Conn: func(c string) (*backend.Conn, error) {
			b, err := ss.connFor(r, c)
			if err == nil {
				conns = append(conns, b)
			}
			return b, err
		},
	}
	if ss.tx != nil && ss.srv.live.Load().commit == CommitTwoPhase {
		st.Wrote, st.PulledOn = ss.tx.wrote, &ss.tx.pulledOn // intermediate.CheckReadInTx
	}
	return st, func() { ss.finishStatement(conns) }
}

// runIntermediate executes an Intermediate plan; ext: see execute.
func (ss *session) runIntermediate(r *routing, plan *planner.Plan, params []planner.Param, ext *portal) error {
	st, done := ss.intermediate(r, plan, params)
	defer done()
	if st.Describe = ext == nil; ext != nil {
		st.Formats = ext.formats
	}
	tag, err := st.Run()
	if err != nil {
		return err
	}
	return ss.complete(tag)
}

// describeIntermediate answers Describe of a statement (p nil) or portal
// over intermediate results (plan: cs's, or a merge's fallback), in order
// with the rest of the batch.
func (bt *batch) describeIntermediate(cs *clientStmt, plan *planner.Plan, p *portal) error {
	bt.flushBackends()
	if bt.drain(); bt.dropping {
		return nil
	} else if bt.ss.tx != nil && bt.ss.tx.failed {
		return errTxAborted
	} else if cs.plan.GSI != nil && p != nil {
		rd, err := gsi.Described(gsiSession{bt.ss, bt.r}, cs.plan, cs.paramOIDs, p.formats)
		if err == nil {
			err = bt.ss.send(rd)
		}
		return err
	}
	st, done := bt.ss.intermediate(bt.r, plan, planner.BindParams(make([][]byte, plan.NumParams), nil, cs.paramOIDs))
	defer done()
	if p != nil {
		st.Formats = p.formats
	}
	pd, rd, err := st.Described()
	if err == nil && p == nil { // the types narrow pulls by key (planner.Pull.Sources)
		cs.paramOIDs, err = pd.ParameterOIDs, bt.ss.send(pd)
	}
	if err == nil {
		err = bt.ss.send(rd)
	}
	return err
}
