package proxy

import (
	"cmp"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/intermediate"
	"github.com/shardgate/shardgate/pgwire"
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
	if ext != nil && plan.Returns && ext.maxRows > 0 {
		return sqlerr.New(sqlerr.FeatureNotSupported, "an Execute with a row limit of a statement with data-modifying WITH queries across groups is not supported")
	}
	implicit := ss.tx == nil
	if implicit {
		ss.tx = ss.newTx(true, "")
		ss.extTx = ext != nil // extended: ends at Sync
	}
	err := ss.runWritableCTE(r, w, plan.Returns, ext)
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

func (ss *session) runWritableCTE(r *routing, w *planner.WritableCTE, returns bool, ext *portal) error {
	lim := r.topo.Proxy.Intermediate
	rows := make([]planner.CTERows, len(w.Steps))
	for i, step := range w.Steps {
		targets, err := step.Plan.TargetsWith(nil, ss.seqSource(step.Plan.SQL))
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
	if ext == nil || !returns {
		return ss.executeWritten(r, sql, "the rows of its data-modifying WITH queries", ext)
	}
	// The extended protocol: the rows in the formats the client bound,
	// as describeWCTE described them, from the one cluster it runs on.
	plan, err := r.planner.Plan(sql)
	if err != nil {
		return err
	}
	targets, err := plan.TargetsWith(nil, ss.seqSource(plan.SQL))
	if err != nil {
		return err
	}
	if len(targets) != 1 || plan.Lookup != nil || plan.GSI != nil || planner.RunsInSteps(plan) || plan.Mode() == planner.ModeMerge {
		return sqlerr.New(sqlerr.FeatureNotSupported, "in the extended protocol, a statement with data-modifying WITH queries across groups that returns rows must run on one cluster once they ran: %s", sql)
	}
	b, err := ss.connFor(r, targets[0].Cluster)
	if err != nil {
		return err
	}
	if err := ss.markWrites(plan, []*backend.Conn{b}); err != nil {
		return err
	}
	tag, err := intermediate.RelayRows(b, cmp.Or(targets[0].SQL, sql), ext.formats, ss.mergeClient())
	if err != nil {
		return err
	}
	return ss.complete(tag)
}

// describeWCTE answers Describe of a statement or portal (its result
// formats) of a WritableCTE that returns rows: each data-modifying WITH
// query described where it runs (not run), the outer statement with
// zero-row relations of their columns described where it would run.
func (bt *batch) describeWCTE(w *planner.WritableCTE, formats []int16) error {
	bt.flushBackends()
	if bt.drain(); bt.dropping {
		return nil
	} else if bt.ss.tx != nil && bt.ss.tx.failed {
		return errTxAborted
	}
	ss := bt.ss
	var conns []*backend.Conn
	defer func() { ss.finishStatement(conns) }()
	conn := func(pl *planner.Plan) (*backend.Conn, string, error) {
		dt, ok := pl.DescribeTarget()
		if !ok {
			dt.Cluster = bt.r.vs.Main().Clusters[0]
		}
		q := cmp.Or(dt.SQL, pl.SQL)
		for _, b := range conns { // one connection per cluster
			if b.Cluster() == dt.Cluster {
				return b, q, nil
			}
		}
		b, err := ss.connFor(bt.r, dt.Cluster)
		if err == nil {
			conns = append(conns, b)
		}
		return b, q, err
	}
	rows := make([]planner.CTERows, len(w.Steps))
	for i, s := range w.Steps {
		b, _, err := conn(s.Plan)
		if err != nil {
			return err
		}
		if rows[i], err = intermediate.DescribeReturning(s, b); err != nil {
			return err
		}
	}
	sql, err := w.OuterSQL(rows)
	if err != nil {
		return err
	}
	plan, err := bt.r.planner.Plan(sql)
	if err != nil {
		return err
	}
	b, q, err := conn(plan)
	if err != nil {
		return err
	}
	desc, err := intermediate.DescribeRows(b, &pgproto3.Parse{Query: q})
	if err != nil {
		return pgwire.Annotate(err, b.Cluster())
	}
	intermediate.ApplyFormats(desc, formats)
	bt.synth(desc)
	return nil
}
