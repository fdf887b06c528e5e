package proxy

import (
	"github.com/jackc/pgx/v5/pgproto3"
	"slices"

	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/gsi"
	"github.com/shardgate/shardgate/intermediate"
	"github.com/shardgate/shardgate/merge"
	"github.com/shardgate/shardgate/planner"
	"github.com/shardgate/shardgate/sqlerr"
	"github.com/shardgate/shardgate/xwrite"
)

// intermediate prepares a read over intermediate results (package
// intermediate runs it) on the session's connections (in its transaction,
// if any), its coordinator on a connection of its own if it is the source
// of write (non-nil; run, it then becomes the transaction's connection),
// unless that would be a second connection to a cluster (sourceOnTx,
// scratch.go); done gives back the ones leased for it.
func (ss *session) intermediate(r *routing, plan *planner.Plan, params []planner.Param, write *planner.Plan, run bool) (st *intermediate.Statement, done func(), err error) {
	var conns []*backend.Conn
	release := func() { // idempotent
		ss.finishStatement(slices.DeleteFunc(conns, func(b *backend.Conn) bool { return ss.suspended.Busy(b) != nil }))
		conns = nil
	}
	lim := r.topo.Proxy.Intermediate
	keep := func(b *backend.Conn, err error) (*backend.Conn, error) {
		if err == nil {
			conns = append(conns, b)
			b.SettingsUnseen = b.SettingsUnseen || ss.unseen
		}
		return b, err
	}
	st = &intermediate.Statement{
		Plan: plan, Params: params, Client: ss.mergeClient(),
		Limits: intermediate.Limits{MaxRows: lim.MaxRows, MaxBytes: lim.MaxBytes},
		Conn:   func(c string) (*backend.Conn, error) { return keep(ss.connFor(r, c)) },
		Merge: func(p *planner.Plan, colls []*backend.CollationInfo) *merge.Exec {
			return ss.newMerge(p, nil, colls, nil)
		},
	}
	onTx := ss.sourceOnTx(r, write, plan)
	if onTx {
		// The transaction's connections throughout: the coordinator's own
		// cluster read on it (Joined never), kept by the transaction.
		st.Scratch = st.Conn
		st.Joined = func(string) bool { return false }
	} else if write != nil {
		// When the source's coordinator and the transaction both need a
		// connection to its cluster, both are taken first, together
		// (leasePair); the scratch one waits in reserved.
		var reserved *backend.Conn
		base, coord := release, ""
		if im, ok := plan.Root.(*planner.Intermediate); ok && ss.pairOn(write, im.Coordinator) {
			if reserved, err = ss.leasePair(r.pools[im.Coordinator], im.Coordinator); err != nil {
				return nil, release, err
			}
			coord = im.Coordinator
		}
		st.Scratch = func(c string) (*backend.Conn, error) {
			if !run {
				// Describe asks for the target after the source: what
				// the source's description leased goes back first, so it
				// never holds one cluster's connection waiting for
				// another's (scratch.go).
				base()
			}
			if b := reserved; b != nil && c == coord {
				reserved = nil
				return keep(b, nil)
			}
			return keep(ss.leaseScratch(r, write, c))
		}
		release = func() {
			base()
			if reserved != nil { // taken with the transaction's, never used
				ss.releaseConn(reserved)
				reserved = nil
			}
		}
		st.Joined, st.Release = ss.joined, func(b *backend.Conn) {
			conns = slices.DeleteFunc(conns, func(c *backend.Conn) bool { return c == b })
			ss.keepScratch(b, run)
		}
	}
	if (write == nil || onTx) && ss.tx != nil && ss.srv.live.Load().commit == CommitTwoPhase {
		st.Wrote, st.PulledOn = ss.tx.wrote, &ss.tx.pulledOn // intermediate.CheckReadInTx
	}
	// A row-limited read's coordinator stays busy while it is suspended.
	return st, release, nil
}

// runIntermediate executes a plan run in steps: a read over intermediate
// results, or a write whose rows it reads (package xwrite); ext: see execute.
func (ss *session) runIntermediate(r *routing, plan *planner.Plan, params []planner.Param, ext *portal) error {
	ss.pinFor(plan) // a cursor WITH HOLD keeps the coordinator's connection
	read, write := planner.ReadOf(plan)
	var wp *planner.Plan
	if write {
		wp = plan
	}
	st, done, err := ss.intermediate(r, read, params, wp, true)
	defer done()
	if err != nil {
		return err
	}
	if _, ok := plan.Root.(*planner.RowWrite); ok && st.Release != nil {
		// UPDATE ... FROM's pulls of its target lock rows: they stay
		// in the session's transaction.
		st.Joined = nil
	}
	st.Describe, st.Formats = ext == nil, formatsOf(ext)
	run := st.Run
	if write && plan.Returns && ext != nil && ext.maxRows > 0 {
		return sqlerr.New(sqlerr.FeatureNotSupported, "an Execute with a row limit over INSERT ... SELECT across shards with RETURNING is not supported")
	} else if write {
		run = (&xwrite.Statement{Plan: plan, Source: st, Seqs: ss.seqSource(plan.SQL), Session: gsiSession{ss, r}}).Run
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
	var wp *planner.Plan
	if write {
		wp = plan
	}
	st, done, err := bt.ss.intermediate(bt.r, read, planner.BindParams(make([][]byte, plan.NumParams), nil, cs.paramOIDs), wp, false)
	defer done()
	if err != nil {
		return err
	}
	if p != nil {
		st.Formats = p.formats
	}
	pd, rd, err := xwrite.Described(st, cs.plan)
	if plan.Kind == planner.DeclareCursor {
		rd = &pgproto3.NoData{} // DECLARE returns no rows; FETCH does
	}
	if err == nil && p == nil { // the types narrow pulls by key (planner.Pull.Sources)
		cs.paramOIDs, err = pd.ParameterOIDs, bt.ss.send(pd)
	}
	if err == nil {
		err = bt.ss.send(rd)
	}
	return err
}
