package proxy

import (
	"errors"
	"strconv"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/merge"
	"github.com/shardgate/shardgate/pgwire"
	"github.com/shardgate/shardgate/planner"
)

// The session's side of merges (package merge runs them): the simple
// protocol's runMerge sends every shard statement and streams the merged
// answer; in the extended protocol, Bind sends each cluster its shard
// statement (Parse of the rewrite, Bind with result formats for the shard
// columns) and Describes the shard portal, so the merge knows the shard
// columns' types before Execute; Describe of the client's portal answers
// with the merged RowDescription (hidden columns gone, aggregates typed as
// Postgres types them); Execute runs the merge executor over every cluster's rows.

// mergePortal is the merge state of a portal.
type mergePortal struct {
	formats  []int16                    // the client's result format codes
	descs    []*pgproto3.RowDescription // each shard portal's RowDescription
	colls    []*backend.CollationInfo
	over     bool          // its merge ended
	fallback *planner.Plan // replaces a merge the column types rule out (merge.CanBuild)
}

// bindMerge is bind's branch for a merge over several clusters.
func (bt *batch) bindMerge(m *pgproto3.Bind, st *clientStmt, p *portal, targets []planner.Target) error {
	ss := bt.ss
	conns := make([]*backend.Conn, 0, len(targets))
	for _, t := range targets {
		b, err := bt.txConn(t.Cluster)
		if err != nil {
			return err
		}
		conns = append(conns, b)
	}
	if err := merge.CheckFormats(st.plan.Root, m.ResultFormatCodes); err != nil {
		return err
	}
	mp := &mergePortal{
		formats: append([]int16(nil), m.ResultFormatCodes...),
		descs:   make([]*pgproto3.RowDescription, len(targets)),
		colls:   backend.PoolCollations(conns), // connections may be busy
	}
	p.merge, p.formats = mp, mp.formats // formats: for a fallback (runIntermediate)
	formats := merge.ShardFormats(st.plan.Root, m.ResultFormatCodes)
	for i, t := range targets {
		b := conns[i]
		name, ok := bt.ensurePrepared(b, st, t)
		if !ok {
			return nil // 0A000 sent (recheck)
		}
		bind := t.Bind(m, name)
		bind.ResultFormatCodes = formats
		if err := b.SendBind(&bind); err != nil {
			return pgwire.ConnLost(t.Cluster, err)
		}
		if err := b.Send(&pgproto3.Describe{ObjectType: 'P', Name: m.DestinationPortal}); err != nil {
			return pgwire.ConnLost(t.Cluster, err)
		}
		p.conns = append(p.conns, b)
		p.names = append(p.names, m.DestinationPortal)
		p.rowPortal = append(p.rowPortal, false)
		bt.queue = append(bt.queue, &expect{conns: []*backend.Conn{b}, until: "2", relay: i == 0})
		i := i
		bt.queue = append(bt.queue, &expect{exec: func() { bt.captureDesc(b, mp, i) }})
	}
	put(&ss.portals, p.name, p)
	return nil
}

// captureDesc reads the answer to Describe of a shard portal.
func (bt *batch) captureDesc(b *backend.Conn, mp *mergePortal, i int) {
	ss := bt.ss
	if b.Broken || ss.errored[b] {
		return
	}
	desc, failed, err := merge.ReadDescription(b, func(m pgwire.RawMessage) {
		if !bt.dropping {
			_ = pgwire.WriteRaw(ss.out, m.Type, m.Body)
		}
	})
	if failed {
		ss.markErrored(b)
	}
	if err != nil {
		bt.stepFailed(err)
		return
	}
	mp.descs[i] = desc
}

// describeMerge answers Describe of a merge portal with the merged RowDescription, or its fallback's.
func (bt *batch) describeMerge(p *portal) error {
	if fb := bt.fallback(p); fb != nil {
		return bt.describeIntermediate(p.stmt, fb, p)
	}
	bt.queue = append(bt.queue, &expect{exec: func() {
		if bt.dropping {
			return
		}
		e := p.newExec(bt.ss)
		if err := e.BuildDescribed(); err != nil {
			bt.stepFailed(err)
			return
		}
		_ = bt.ss.send(&pgproto3.RowDescription{Fields: e.Fields()})
	}})
	return nil
}

// fallback returns the plan that replaces a merge portal's merge, once
// the shards described their columns (what came before in the batch is delivered first), or nil to merge.
func (bt *batch) fallback(p *portal) *planner.Plan {
	mp := p.merge
	if mp.fallback == nil && !mp.over && bt.ss.suspended[p.name] == nil && p.stmt.plan.Fallback() != nil {
		bt.flushBackends()
		if bt.drain(); !bt.dropping {
			mp.fallback = p.newExec(bt.ss).CanBuild()
		}
	}
	return mp.fallback
}

// newExec prepares a merge of the portal's shard answers.
func (p *portal) newExec(ss *session) *merge.Exec {
	e := ss.newMerge(p.stmt.plan, p.params, p.merge.colls, p.merge.formats)
	for i, b := range p.conns {
		e.Streams = append(e.Streams, merge.NewStream(b, p.targets[i], false, p.merge.descs[i]))
	}
	return e
}

// newMerge prepares a merge for the session, whose clusters' collation
// facts are colls and whose client asked for formats (nil: text).
func (ss *session) newMerge(plan *planner.Plan, params []planner.Param, colls []*backend.CollationInfo, formats []int16) *merge.Exec {
	return &merge.Exec{
		Plan: plan, Params: params, Colls: colls, Formats: formats,
		FloatDigits:    ss.localSettings().FloatDigitsOn(colls),
		Output:         ss.outputSettings(),
		ClientEncoding: ss.params["client_encoding"],
		DateStyle:      ss.params["DateStyle"],
		IntervalStyle:  ss.params["IntervalStyle"],
		TimeZone:       ss.params["TimeZone"],
		Client:         ss.mergeClient(),
	}
}

// mergeClient is the session as a merge's client.
func (ss *session) mergeClient() *merge.WireClient {
	if ss.wc == nil || ss.wc.Out != ss.out { // made once (again after TLS)
		ss.wc = &merge.WireClient{Enc: &ss.enc, Out: ss.out, Param: ss.reportParameter, Failed: ss.markErrored}
	}
	return ss.wc
}

// executeMerge is execute's branch for a merge portal: the shard portals
// run without a row limit, max (0: none) limits the merged rows (StreamN).
func (bt *batch) executeMerge(p *portal, max uint32, done func(error)) error {
	if err := merge.CheckLimit(p.stmt.plan.Root, p.params); err != nil {
		return err
	}
	if fb := bt.fallback(p); fb != nil && !p.merge.over {
		p.merge.over = true // a later Execute finds the portal at its end
		err := bt.ss.runIntermediate(bt.r, fb, p.params, p)
		done(err)
		return err
	}
	if max > 0 {
		bt.limited = append(bt.limited, p.conns...)
	}
	for i, b := range p.conns {
		if ss := bt.ss; ss.suspended[p.name] != nil || p.merge.over {
			break
		}
		if err := b.Send(&pgproto3.Execute{Portal: p.names[i]}); err != nil {
			return pgwire.ConnLost(b.Cluster(), err)
		}
	}
	bt.queue = append(bt.queue, &expect{exec: func() {
		if err := bt.runMergeStep(p, int64(max)); err != errSkipped {
			done(err)
		}
	}})
	return nil
}

// errSkipped: the step did not run (an earlier error skips to Sync).
var errSkipped = errors.New("skipped")

// runMergeStep streams at most max merged rows (0: all); it returns the error it reported, if any.
func (bt *batch) runMergeStep(p *portal, max int64) error {
	ss := bt.ss
	e, _ := ss.suspended[p.name].(*merge.Exec)
	switch {
	case bt.dropping && (e != nil || p.merge.over):
		return errSkipped // the merge stays suspended
	case p.merge.over:
		return ss.complete("SELECT 0") // as Postgres answers a portal at its end
	case e == nil:
		e = p.newExec(ss)
		// A connection that failed earlier in the batch answers nothing before Sync.
		skip := func(s *merge.Stream) bool { return s.Conn().Broken || ss.errored[s.Conn()] }
		if bt.dropping {
			e.Drop(skip)
			return errSkipped
		}
		if err := e.StartExecute(skip); err != nil {
			bt.stepFailed(err)
			return err
		}
	}
	delete(ss.suspended, p.name)
	ss.setRunning(p.conns)
	defer ss.setRunning(nil)
	n, over, err := e.StreamN(max)
	p.merge.over = over
	if err != nil {
		bt.stepFailed(err)
		return err
	}
	if !over {
		ss.suspended[p.name] = e
		return ss.send(&pgproto3.PortalSuspended{})
	}
	return ss.complete("SELECT " + strconv.FormatInt(n, 10))
}

// runMerge executes a merge plan with the simple protocol: it is
// runTargets's branch for planner.ModeMerge over several clusters.
func (ss *session) runMerge(plan *planner.Plan, sql string, params []planner.Param, targets []planner.Target, conns []*backend.Conn) error {
	e := ss.newMerge(plan, params, backend.Collations(conns), nil)
	n, err := e.RunQueries(sql, targets, conns, func(fs []pgproto3.FieldDescription) error {
		return ss.send(&pgproto3.RowDescription{Fields: fs})
	})
	if err != nil || n < 0 {
		return err
	}
	return ss.complete("SELECT " + strconv.FormatInt(n, 10))
}
