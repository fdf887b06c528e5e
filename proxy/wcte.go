package proxy

import (
	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/intermediate"
	"github.com/shardgate/shardgate/planner"
	"github.com/shardgate/shardgate/sessionstate"
	"github.com/shardgate/shardgate/sqlerr"
)

// execWritableCTE runs a statement whose data-modifying WITH queries run
// first (planner.WritableCTE) in the session's transaction (an implicit
// one outside the client's: the outer statement's failure undoes them),
// then the outer statement with their RETURNING rows written in, planned
// and executed as any other; ext: see execute.
func (ss *session) execWritableCTE(r *routing, plan *planner.Plan, w *planner.WritableCTE, ext *portal) error {
	if ext != nil && plan.Returns {
		// Describe answered NoData: the columns are known once it ran.
		return sqlerr.New(sqlerr.FeatureNotSupported, "a statement returning rows with data-modifying WITH queries across groups is supported in the simple query protocol only")
	}
	implicit := ss.tx == nil
	if implicit {
		ss.tx = ss.newTx(true, "")
		ss.extTx = ext != nil // extended: ends at Sync
	}
	err := ss.runWritableCTE(r, w, ext)
	if implicit {
		if err != nil {
			ss.tx.failed = true
		}
		if ext == nil {
			if cerr := ss.endTx(err == nil); err == nil {
				err = cerr
			}
		}
	}
	return err
}

func (ss *session) runWritableCTE(r *routing, w *planner.WritableCTE, ext *portal) error {
	lim := r.topo.Proxy.Intermediate
	rows := make([]planner.CTERows, len(w.Steps))
	for i, step := range w.Steps {
		targets, err := step.Plan.TargetsWith(nil, ss.srv.seqs)
		if err != nil {
			return err
		}
		conns := make([]*backend.Conn, 0, len(targets))
		for _, t := range targets {
			b, err := ss.connFor(r, t.Cluster)
			if err != nil {
				return err
			}
			conns = append(conns, b)
		}
		if err := ss.markWrites(step.Plan, conns); err != nil {
			return err
		}
		digits := sessionstate.Settings(ss.settings).FloatDigitsOn(backend.Collations(conns))
		rows[i], err = intermediate.Returning(step, targets, conns,
			intermediate.Limits{MaxRows: lim.MaxRows, MaxBytes: lim.MaxBytes}, digits, ss.mergeClient())
		if err != nil {
			return err
		}
	}
	sql, err := w.OuterSQL(rows)
	if err != nil {
		return err
	}
	return ss.executeWritten(r, sql, "the rows of its data-modifying WITH queries", ext)
}
