package gsi

import (
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/merge"
	"github.com/shardgate/shardgate/pgwire"
	"github.com/shardgate/shardgate/planner"
)

// The extended protocol: a statement with lookup-table work bound by the
// client runs on its clusters with the Bind's parameters (Parse, Bind,
// Execute there too, so values never enter the SQL text), its RETURNING
// extended as for the simple protocol. The added columns come back as
// text; the client's own in the formats its Bind asked for.

// Bound is the client's Bind of an extended-protocol statement.
type Bound struct {
	Params  []planner.Param
	Formats []int16 // result formats (none: text; one: for all)
}

// Lender lends a connection to a cluster for one step (in the session's
// transaction if it has one); Done gives it back.
type Lender interface {
	Lend(cluster string) (*backend.Conn, error)
	Done(b *backend.Conn)
}

// send writes the statements of target t (each with suffix appended) with
// the Bind's parameters, then Sync. formats are the result formats of the
// extended statement.
func (x *Bound) send(b *backend.Conn, t planner.Target, sql, suffix string, formats []int16) error {
	subs := []planner.Target{t}
	if len(t.Each) > 0 {
		subs = t.Each
	}
	for _, sub := range subs {
		q := sub.SQL
		if q == "" {
			q = sql
		}
		_ = b.Send(&pgproto3.Parse{Query: q + suffix, ParameterOIDs: planner.OIDsOf(x.Params, sub.Params)})
		_ = b.Send(planner.BindOf(x.Params, sub.Params, formats))
		_ = b.Send(&pgproto3.Execute{})
	}
	if err := b.Send(&pgproto3.Sync{}); err != nil {
		return pgwire.ConnLost(b.Cluster(), err)
	}
	if err := b.Flush(); err != nil {
		return pgwire.ConnLost(b.Cluster(), err)
	}
	return nil
}

// resultFormats are the formats of the extended statement's columns: the
// client's for its own, text for the extra added ones. One binary format
// for all needs the number of the statement's columns: b describes it.
func (x *Bound) resultFormats(b *backend.Conn, t planner.Target, sql, suffix string, returns bool, extra int) ([]int16, error) {
	return addedFormats(x.Formats, returns, extra, func() (int, error) {
		if len(t.Each) > 0 {
			t = t.Each[0]
		}
		q := t.SQL
		if q == "" {
			q = sql
		}
		rd, err := describe(b, q+suffix, planner.OIDsOf(x.Params, t.Params))
		if err != nil || rd == nil {
			return 0, err
		}
		return len(rd.Fields) - extra, nil
	})
}

// addedFormats are the result formats of a statement whose RETURNING
// (returns: the client's own list; without, the client sees no row) was
// extended by extra columns: the client's formats for its own columns,
// text for the added ones. own counts the statement's own columns, for one
// format for all that is binary.
func addedFormats(formats []int16, returns bool, extra int, own func() (int, error)) ([]int16, error) {
	switch {
	case !returns || len(formats) == 0 || len(formats) == 1 && formats[0] == 0:
		return nil, nil
	case len(formats) > 1:
		return append(append([]int16(nil), formats...), make([]int16, extra)...), nil
	}
	n, err := own()
	if err != nil || n <= 0 {
		return nil, err
	}
	out := make([]int16, n+extra)
	for i := 0; i < n; i++ {
		out[i] = formats[0]
	}
	return out, nil
}

// describe returns the RowDescription of sql on b (nil: no rows).
func describe(b *backend.Conn, sql string, oids []uint32) (*pgproto3.RowDescription, error) {
	_ = b.Send(&pgproto3.Parse{Query: sql, ParameterOIDs: oids})
	_ = b.Send(&pgproto3.Describe{ObjectType: 'S'})
	_ = b.Send(&pgproto3.Sync{})
	if err := b.Flush(); err != nil {
		return nil, pgwire.ConnLost(b.Cluster(), err)
	}
	var rd *pgproto3.RowDescription
	err := merge.ReadAnswer(b, nil, func(m pgwire.RawMessage) error {
		if m.Type != 'T' {
			return nil
		}
		var d pgproto3.RowDescription
		if err := d.Decode(m.Body); err != nil {
			return err
		}
		rd = pgwire.CopyRowDescription(&d)
		return nil
	})
	return rd, err
}

// Describe answers Describe of a portal of plan's statement (oids: its
// parameter types; formats: the portal's result formats): sends the
// client the RowDescription of its RETURNING, or NoData.
func Describe(s interface {
	Lender
	Send(msg pgwire.Encodable) error
}, plan *planner.Plan, oids []uint32, formats []int16) error {
	m, err := described(s, plan, oids, formats)
	if err != nil {
		return err
	}
	return s.Send(m)
}

func described(l Lender, plan *planner.Plan, oids []uint32, formats []int16) (pgwire.Encodable, error) {
	dt, ok := plan.DescribeTarget()
	if !ok {
		return &pgproto3.NoData{}, nil
	}
	b, err := l.Lend(dt.Cluster)
	if err != nil {
		return nil, err
	}
	defer l.Done(b)
	q := dt.SQL
	if q == "" {
		q = plan.SQL
	}
	rd, err := describe(b, q, dt.ParamOIDs(oids))
	if err != nil {
		return nil, err
	}
	if rd == nil {
		return &pgproto3.NoData{}, nil
	}
	for i := range rd.Fields {
		rd.Fields[i].Format = planner.FormatCode(formats, i)
	}
	return rd, nil
}
