package proxy

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

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
	if w.NumParams > 0 && ext == nil {
		return sqlerr.New("42P02", "there is no parameter $1")
	}
	if ext != nil && plan.Returns && ext.maxRows > 0 {
		return sqlerr.New(sqlerr.FeatureNotSupported, "an Execute with a row limit of a statement with data-modifying WITH queries across groups is not supported")
	}
	implicit := ss.tx == nil
	if implicit {
		ss.tx = ss.newTx(true, "")
		ss.extTx = ext != nil // extended: ends at Sync
	}
	var err error
	if w.NumParams > 0 {
		err = ss.runWCTEParams(r, plan, w, ext)
	} else {
		err = ss.runWritableCTE(r, w, plan.Returns, ext)
	}
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
	for i := range w.Steps {
		sp, err := r.planner.StepPlan(w, i, rows)
		if err != nil {
			return err
		}
		step := *w.Steps[i]
		step.Plan = sp
		targets, err := sp.TargetsWith(nil, ss.seqSource(sp.SQL))
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
		rows[i], err = intermediate.Returning(&step, targets, conns,
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

// runWCTEParams runs a WritableCTE with parameters: their values,
// written in as typed literals of the types the client declared or
// Postgres infers where each is read, make a statement planned and run
// as one without (the values' text from the session's connection to
// main, so that it reads back alike).
func (ss *session) runWCTEParams(r *routing, plan *planner.Plan, w *planner.WritableCTE, ext *portal) error {
	if len(ext.params) < w.NumParams {
		return sqlerr.New(sqlerr.ProtocolViolation, "bind message supplies %d parameters, but prepared statement requires %d", len(ext.params), w.NumParams)
	}
	oids := make([]uint32, w.NumParams)
	for i, p := range ext.params {
		if i < len(oids) {
			oids[i] = p.OID
		}
	}
	if slices.Contains(oids, 0) {
		var err error
		if _, oids, err = ss.describeParts(r, w, oids); err != nil {
			return err
		}
	}
	b, err := ss.connFor(r, r.vs.Main().Clusters[0])
	if err != nil {
		return err
	}
	digits := sessionstate.Settings(ss.settings).FloatDigitsOn(backend.Collations([]*backend.Conn{b}))
	q := make([]string, 0, 2*len(oids))
	for i, oid := range oids {
		if (oid == 700 || oid == 701) && digits < 1 {
			return sqlerr.New(sqlerr.FeatureNotSupported, "a real or double precision parameter of a statement with data-modifying WITH queries across groups with extra_float_digits below 1 is not supported")
		}
		q = append(q, "$"+strconv.Itoa(i+1)+"::pg_catalog.text", "pg_catalog.format_type("+strconv.FormatUint(uint64(oid), 10)+", NULL)")
	}
	bind := planner.BindOf(ext.params[:len(oids)], nil, nil)
	intermediate.Send(b, &pgproto3.Parse{Query: "SELECT " + strings.Join(q, ", "), ParameterOIDs: oids}, bind, &pgproto3.Execute{}, &pgproto3.Sync{})
	var row [][]byte
	err = intermediate.Read(b, func(m pgwire.RawMessage) error {
		if m.Type == 'D' {
			var d pgproto3.DataRow
			if err := d.Decode(m.Body); err != nil {
				return err
			}
			for _, v := range d.Values {
				row = append(row, append([]byte(nil), v...))
			}
		}
		return nil
	})
	if err != nil {
		return pgwire.Annotate(err, b.Cluster())
	}
	if len(row) != 2*len(oids) {
		return sqlerr.New(sqlerr.InternalError, "%s answered %d values for %d parameters", b.Cluster(), len(row), len(oids))
	}
	lits := make([]string, len(oids))
	for i := range lits {
		typ := string(row[2*i+1])
		if row[2*i+1] == nil {
			return sqlerr.New(sqlerr.FeatureNotSupported, "the type of parameter $%d (oid %d) is not known on %s", i+1, oids[i], b.Cluster())
		}
		if i < len(ext.params) && ext.params[i].Null {
			lits[i] = "NULL::" + typ
		} else {
			lits[i] = pgwire.QuoteLiteral(string(row[2*i])) + "::" + typ
		}
	}
	sql, err := planner.InlineParams(plan.SQL, lits)
	if err != nil {
		return err
	}
	inl, err := r.planner.Plan(sql)
	if err != nil {
		return err
	}
	if w2, ok := inl.Root.(*planner.WritableCTE); ok && w2.NumParams == 0 {
		return ss.runWritableCTE(r, w2, inl.Returns, ext)
	}
	if inl.Returns {
		return sqlerr.New(sqlerr.FeatureNotSupported, "a statement with data-modifying WITH queries and parameters that returns rows must run in steps: %s", sql)
	}
	return ss.executeWritten(r, sql, "its parameters", ext)
}

// describeParts describes w's parts where they run, none run: each
// data-modifying WITH query, then the outer statement over zero-row
// relations of their columns (desc, nil when it returns no rows), each
// parsed with the parameter types oids (0: Postgres infers it; a part
// that does not read one is told text) and oids completed with the
// types inferred where each parameter is first read.
func (ss *session) describeParts(r *routing, w *planner.WritableCTE, oids []uint32) (desc *pgproto3.RowDescription, out []uint32, err error) {
	out = slices.Clone(oids)
	var conns []*backend.Conn
	defer func() { ss.finishStatement(conns) }()
	describe := func(pl *planner.Plan, params []int, fn func(*backend.Conn, string, []uint32) ([]uint32, error)) error {
		dt, ok := pl.DescribeTarget()
		if !ok {
			dt.Cluster = r.vs.Main().Clusters[0]
		}
		var b *backend.Conn
		for _, c := range conns { // one connection per cluster
			if c.Cluster() == dt.Cluster {
				b = c
			}
		}
		if b == nil {
			if b, err = ss.connFor(r, dt.Cluster); err != nil {
				return err
			}
			conns = append(conns, b)
		}
		var part []uint32
		if len(params) > 0 {
			part = make([]uint32, params[len(params)-1])
			for i := range part {
				if part[i] = out[i]; part[i] == 0 && !slices.Contains(params, i+1) {
					part[i] = 25 // text: not read here
				}
			}
		}
		got, err := fn(b, cmp.Or(dt.SQL, pl.SQL), part)
		for _, n := range params {
			if n-1 < len(got) && out[n-1] == 0 {
				out[n-1] = got[n-1]
			}
		}
		return err
	}
	rows := make([]planner.CTERows, len(w.Steps))
	for i, s := range w.Steps {
		sp, err := r.planner.StepPlan(w, i, rows)
		if err != nil {
			return nil, nil, err
		}
		err = describe(sp, s.Params, func(b *backend.Conn, sql string, part []uint32) (got []uint32, err error) {
			rows[i], got, err = intermediate.DescribeReturning(s, b, sql, part)
			return got, err
		})
		if err != nil {
			return nil, nil, err
		}
	}
	sql, err := w.OuterSQL(rows)
	if err != nil {
		return nil, nil, err
	}
	plan, err := r.planner.Plan(sql)
	if err != nil {
		return nil, nil, err
	}
	err = describe(plan, w.Params, func(b *backend.Conn, sql string, part []uint32) (got []uint32, err error) {
		got, desc, err = intermediate.DescribeStatement(b, sql, part)
		return got, err
	})
	if err != nil {
		return nil, nil, err
	}
	for i, oid := range out {
		if oid == 0 {
			return nil, nil, sqlerr.New("42P18", "could not determine data type of parameter $%d", i+1)
		}
	}
	return desc, out, nil
}

// describeWCTE answers Describe of a statement (st: its parameter types
// too) or portal (formats: its result formats) of a WritableCTE
// (describeParts).
func (bt *batch) describeWCTE(w *planner.WritableCTE, st *clientStmt, formats []int16) error {
	bt.flushBackends()
	if bt.drain(); bt.dropping {
		return nil
	} else if bt.ss.tx != nil && bt.ss.tx.failed {
		return errTxAborted
	}
	oids := make([]uint32, w.NumParams)
	if st != nil {
		copy(oids, st.paramOIDs)
	}
	desc, oids, err := bt.ss.describeParts(bt.r, w, oids)
	if err != nil {
		return err
	}
	if st != nil {
		st.paramOIDs = oids
		bt.synth(&pgproto3.ParameterDescription{ParameterOIDs: oids})
	}
	if desc == nil {
		bt.synth(&pgproto3.NoData{})
		return nil
	}
	intermediate.ApplyFormats(desc, formats)
	bt.synth(desc)
	return nil
}
