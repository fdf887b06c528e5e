package merge

import (
	"strings"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/pgvalue"
	"github.com/shardgate/shardgate/planner"
	"github.com/shardgate/shardgate/sqlerr"
)

// The merge executor runs plans of mode planner.ModeMerge: every shard
// statement is sent at once, each shard's answer is read by its own reader
// goroutine into a bounded channel (stream.go; the first error
// cancels the other shards' statements), and the plan's primitives
// (MergeSort, Aggregate, Sort, Distinct, Limit) become a pull-based
// pipeline of rowSources (sources.go, aggregate.go) that streams rows to
// the client. Memory: a
// channel of rows per shard for ORDER BY and LIMIT, one entry per group
// for GROUP BY (and per distinct row for DISTINCT without ORDER BY).
//
// Rows stay in the wire format the shards sent (the client's format: text
// in the simple protocol, Bind's result formats in the extended one) and
// are decoded only where a value must be compared or combined; values the
// proxy computes (count, sum, avg, bool_and/or) are encoded in the format
// the client asked for.

// rowSource is one stage of a merge pipeline. next returns nil at the end.
type rowSource interface {
	next() ([][]byte, error)
}

// colInfo describes a column flowing through the pipeline.
type colInfo struct {
	field pgproto3.FieldDescription
	typ   *pgvalue.Type   // nil: the merge cannot compare this type
	st    *pgvalue.Styles // the session's styles its text is written in
}

func (c colInfo) decode(raw []byte) (pgvalue.Value, error) {
	v, err := c.typ.DecodeStyled(raw, c.field.Format, c.st)
	if err != nil {
		return v, c.badValue(err)
	}
	return v, nil
}

// readable checks, before any row, that the merge can read the column's
// values under the session's styles.
func (c colInfo) readable() error {
	if err := c.st.CanRead(c.typ, c.field.Format); err != nil {
		return c.badValue(err)
	}
	return nil
}

func (c colInfo) badValue(err error) error {
	switch err {
	case pgvalue.ErrFloatDigits:
		return sqlerr.New(sqlerr.FeatureNotSupported, "cross-shard merge of %s text under extra_float_digits below 1 is not supported: the shards' text is rounded", c.typ.Name).
			WithHint("SET extra_float_digits = 1 (the default), or use the extended protocol with binary results.")
	case pgvalue.ErrTimeZone:
		return sqlerr.New(sqlerr.FeatureNotSupported, "cross-shard merge of %s text under this TimeZone is not supported: the proxy cannot turn the zone abbreviation of a shard's value into an offset", c.typ.Name).
			WithHint("SET TimeZone to a zone of the tz database (Europe/Berlin) or a numeric offset, SET DateStyle = ISO, or ask for binary results.")
	case pgvalue.ErrDateStyle, pgvalue.ErrIntervalStyle:
		return sqlerr.New(sqlerr.FeatureNotSupported, "cross-shard merge cannot read a shard's %s value in the session's DateStyle and IntervalStyle", c.typ.Name).
			WithHint("Ask for binary results.")
	}
	return sqlerr.New(sqlerr.ProtocolViolation, "malformed %s value in a shard's answer", c.typ.Name)
}

// Exec runs one merge plan over its shard streams.
type Exec struct {
	Plan    *planner.Plan            // a plan of mode planner.ModeMerge
	Params  []planner.Param          // its parameters (LIMIT, HAVING)
	Streams []*Stream                // one per shard statement, in target order
	Set     *StreamSet               // the readers of Streams
	Colls   []*backend.CollationInfo // each stream's cluster's collation facts
	// Formats are the client's result format codes (Bind); nil in the
	// simple protocol, where everything is text.
	Formats []int16
	// FloatDigits is the session's extra_float_digits: the text of the
	// floats the merge computes.
	FloatDigits int
	// DateStyle, IntervalStyle and TimeZone are the session's, as the
	// backends reported them: the text of the shards' dates, times and
	// intervals, and of the intervals the merge computes.
	DateStyle, IntervalStyle, TimeZone string
	// ClientEncoding is the session's client_encoding: text arrives in
	// it, and only UTF8 (LATIN1, SQL_ASCII) bytes sort as the server's
	// "C" collation sorts.
	ClientEncoding string
	// Output is the session's settings that shape values' text when the
	// merge was made (any key: equal for equal settings). A merged
	// cursor's rows are fetched from the shards in batches in that text,
	// so a FETCH under other settings is refused (Cursors.Run).
	Output string
	// Client gets the merged rows and the shards' notices.
	Client Client

	// styles are DateStyle, IntervalStyle and TimeZone read, once built.
	styles *pgvalue.Styles
	// src is the pipeline, once built.
	src rowSource
	// visible is the number of the client's columns, once built.
	visible int
	// fields describe the client's columns.
	fields []pgproto3.FieldDescription
}

// Client is the client session a merge answers: merged rows go to it, and
// what the shards said besides rows is passed on through it. Its methods
// flush the client's buffer as it fills.
type Client interface {
	// SendRow buffers one merged row for the client.
	SendRow(*pgproto3.DataRow) error
	// SendRaw buffers a message a shard sent, as it came (a notice, COPY
	// data).
	SendRaw(typ byte, body []byte)
	// ParameterStatus passes on a parameter a shard reported.
	ParameterStatus(*pgproto3.ParameterStatus)
	// ShardFailed is told of a shard connection that reported an error in
	// the extended protocol: it answers nothing more before Sync.
	ShardFailed(*backend.Conn)
	// Flush writes what is buffered for the client.
	Flush() error
}

// clientFormat is the format the client asked for column i.
func (e *Exec) clientFormat(i int) int16 {
	switch {
	case len(e.Formats) == 0:
		return 0
	case len(e.Formats) == 1:
		return e.Formats[0]
	case i < len(e.Formats):
		return e.Formats[i]
	}
	return 0
}

// Build turns the plan into a pipeline. The shard streams must have their
// RowDescriptions.
func (e *Exec) Build() error {
	st, ok := pgvalue.NewStyles(e.DateStyle, e.IntervalStyle, e.TimeZone)
	if !ok {
		return sqlerr.New(sqlerr.FeatureNotSupported, "cross-shard merge under DateStyle %q and IntervalStyle %q is not supported", e.DateStyle, e.IntervalStyle)
	}
	st.SetFloatDigits(e.FloatDigits)
	e.styles = st
	src, cols, hidden, _, err := e.stage(e.Plan.Root)
	if err != nil {
		return err
	}
	e.visible = len(cols) - hidden
	if e.visible < 0 {
		return sqlerr.New(sqlerr.InternalError, "merge has %d columns but %d hidden", len(cols), hidden)
	}
	e.fields = make([]pgproto3.FieldDescription, e.visible)
	for i := range e.fields {
		e.fields[i] = cols[i].field
	}
	e.src = src
	return nil
}

// Fields describe the columns the client gets, once built.
func (e *Exec) Fields() []pgproto3.FieldDescription { return e.fields }

// stage builds the source for one primitive; it returns the columns of
// its rows, how many trailing ones are hidden, and the sort order its rows
// come in (for Distinct).
func (e *Exec) stage(p planner.Primitive) (rowSource, []colInfo, int, []sortCol, error) {
	switch x := p.(type) {
	case *planner.Route:
		cols, err := e.shardColumns()
		if err != nil {
			return nil, nil, 0, nil, err
		}
		return &concatSource{streams: e.Streams}, cols, x.Hidden, nil, nil
	case *planner.MergeSort:
		cols, err := e.shardColumns()
		if err != nil {
			return nil, nil, 0, nil, err
		}
		keys, err := e.sortColumns(x.Keys, cols, len(cols)-x.Input.Hidden)
		if err != nil {
			return nil, nil, 0, nil, err
		}
		return &mergeSource{streams: e.Streams, keys: keys, pending: -1}, cols, x.Input.Hidden, keys, nil
	case *planner.Aggregate:
		cols, err := e.shardColumns()
		if err != nil {
			return nil, nil, 0, nil, err
		}
		a, err := e.newAggregate(x, &concatSource{streams: e.Streams}, cols)
		if err != nil {
			return nil, nil, 0, nil, err
		}
		return a, a.outCols, x.Hidden, nil, nil
	case *planner.Sort:
		in, cols, hidden, _, err := e.stage(x.Input)
		if err != nil {
			return nil, nil, 0, nil, err
		}
		keys, err := e.sortColumns(x.Keys, cols, len(cols)-hidden)
		if err != nil {
			return nil, nil, 0, nil, err
		}
		return &sortSource{in: in, keys: keys}, cols, hidden, keys, nil
	case *planner.Distinct:
		in, cols, hidden, order, err := e.stage(x.Input)
		if err != nil {
			return nil, nil, 0, nil, err
		}
		d := &distinctSource{in: in}
		base := len(cols) - hidden
		if x.On != nil {
			for _, c := range x.On {
				col, err := e.equalityColumn(c, cols, base, "DISTINCT ON")
				if err != nil {
					return nil, nil, 0, nil, err
				}
				d.key = append(d.key, col)
			}
			d.adjacent = x.Sorted
		} else {
			for c := 0; c < base; c++ {
				col, err := e.equalityColumn(c, cols, base, "DISTINCT")
				if err != nil {
					return nil, nil, 0, nil, err
				}
				d.key = append(d.key, col)
			}
			if x.Sorted {
				d.run = order
			}
		}
		if !d.adjacent {
			d.seen = map[string]struct{}{}
		}
		return d, cols, hidden, order, nil
	case *planner.Limit:
		in, cols, hidden, order, err := e.stage(x.Input)
		if err != nil {
			return nil, nil, 0, nil, err
		}
		offset, count, err := x.Values(e.Params)
		if err != nil {
			return nil, nil, 0, nil, err
		}
		l := &limitSource{in: in, offset: offset, count: count}
		if x.WithTies {
			if order == nil {
				return nil, nil, 0, nil, sqlerr.New(sqlerr.InternalError, "WITH TIES without a sort order")
			}
			l.ties = order
		}
		return l, cols, hidden, order, nil
	}
	return nil, nil, 0, nil, sqlerr.New(sqlerr.InternalError, "merge of %s is not implemented", p.Name())
}

// shardColumns describes the shard statement's columns, checking that
// every shard answered with the same types.
func (e *Exec) shardColumns() ([]colInfo, error) {
	d := e.Streams[0].desc
	for _, s := range e.Streams[1:] {
		if err := SameColumns(d, e.Streams[0].b.Cluster(), s.desc, s.b.Cluster()); err != nil {
			return nil, err
		}
	}
	cols := make([]colInfo, len(d.Fields))
	for i, f := range d.Fields {
		cols[i] = colInfo{field: f, typ: pgvalue.TypeOf(f.DataTypeOID), st: e.styles}
	}
	return cols, nil
}

// SameColumns checks that two clusters describe one statement's rows
// alike: as many columns, each of the same type (0A000 naming the column,
// both types and both clusters where they differ, as after an ALTER run
// directly on one cluster).
func SameColumns(a *pgproto3.RowDescription, clusterA string, b *pgproto3.RowDescription, clusterB string) error {
	if len(b.Fields) != len(a.Fields) {
		return sqlerr.New(sqlerr.InternalError, "clusters %s and %s return different columns for the same statement", clusterA, clusterB)
	}
	for i, f := range b.Fields {
		if f.DataTypeOID != a.Fields[i].DataTypeOID {
			return sqlerr.New(sqlerr.FeatureNotSupported, "column %s is of type %s on cluster %s but %s on cluster %s",
				string(f.Name), pgvalue.TypeName(a.Fields[i].DataTypeOID), clusterA, pgvalue.TypeName(f.DataTypeOID), clusterB).
				WithHint("Every cluster of a group must have the same schema.")
		}
	}
	return nil
}

// sortCol is a resolved sort key.
type sortCol struct {
	col        int
	info       colInfo
	desc       bool
	nullsFirst bool
}

// column resolves a planner column number (negative: hidden, counted from
// base).
func column(c, base, ncols int) (int, error) {
	if c < 0 {
		c = base + (-c - 1)
	}
	if c < 0 || c >= ncols {
		return 0, sqlerr.New(sqlerr.InternalError, "merge column %d out of range (%d columns)", c+1, ncols)
	}
	return c, nil
}

func (e *Exec) sortColumns(keys []planner.SortKey, cols []colInfo, base int) ([]sortCol, error) {
	out := make([]sortCol, len(keys))
	for i, k := range keys {
		c, err := column(k.Column, base, len(cols))
		if err != nil {
			return nil, err
		}
		info := cols[c]
		if info.typ == nil {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, "cross-shard ORDER BY on a value of type %s is not supported",
				pgvalue.TypeName(info.field.DataTypeOID)).
				WithHint("Sort keys across shards can be integers, numeric, floats, text types (under COLLATE \"C\"), bytea, bool, uuid, date, time and timestamps.")
		}
		if err := e.checkOrdering(info.typ, k.Collation, "ORDER BY "+k.Expr); err != nil {
			return nil, err
		}
		if err := info.readable(); err != nil {
			return nil, err
		}
		out[i] = sortCol{col: c, info: info, desc: k.Desc, nullsFirst: k.NullsFirst}
	}
	return out, nil
}

// checkOrdering refuses to order text by bytes where the collation that
// applies might order it differently.
func (e *Exec) checkOrdering(t *pgvalue.Type, collation, what string) error {
	if !t.Collatable {
		return nil
	}
	refuse := func(why string) error {
		return sqlerr.New(sqlerr.FeatureNotSupported, "cross-shard %s is not supported: %s", what, why).
			WithHint("Add COLLATE \"C\" to the key (ORDER BY name COLLATE \"C\", max(name COLLATE \"C\")): the proxy merges text in code point order.")
	}
	switch strings.ToUpper(e.ClientEncoding) {
	case "", "UTF8", "SQL_ASCII", "LATIN1":
		// Bytes in code point order, as "C" orders the server's UTF-8.
	default:
		return sqlerr.New(sqlerr.FeatureNotSupported, "cross-shard %s is not supported under client_encoding %s: its bytes do not sort as the server's text does", what, e.ClientEncoding).
			WithHint("SET client_encoding = UTF8 for the statement.")
	}
	switch collation {
	case "C", "POSIX":
		return nil
	case "":
	case "?":
		return refuse("the key's collation is set inside its expression")
	default:
		return refuse("text under collation \"" + collation + "\" cannot be compared by the proxy")
	}
	for i, c := range e.Colls {
		cluster := e.Streams[i].b.Cluster()
		if !c.Bytewise {
			return refuse("the default collation \"" + c.Collation + "\" of cluster " + cluster + " does not order text like \"C\"")
		}
		if c.OtherCollations {
			return refuse("columns on cluster " + cluster + " declare their own collations")
		}
	}
	return nil
}

// equalityColumn resolves a DISTINCT or GROUP BY column and checks its
// values can be told equal by the proxy.
func (e *Exec) equalityColumn(c int, cols []colInfo, base int, what string) (sortCol, error) {
	i, err := column(c, base, len(cols))
	if err != nil {
		return sortCol{}, err
	}
	info := cols[i]
	if info.typ == nil {
		return sortCol{}, sqlerr.New(sqlerr.FeatureNotSupported, "cross-shard %s on a value of type %s is not supported",
			what, pgvalue.TypeName(info.field.DataTypeOID))
	}
	if err := info.readable(); err != nil {
		return sortCol{}, err
	}
	if info.typ.Collatable {
		for j, cl := range e.Colls {
			if cl.Nondeterministic {
				return sortCol{}, sqlerr.New(sqlerr.FeatureNotSupported,
					"cross-shard %s on text is not supported: cluster %s uses a nondeterministic collation", what, e.Streams[j].b.Cluster())
			}
		}
	}
	return sortCol{col: i, info: info}, nil
}

// rowKey appends the hash key of a row's columns.
func rowKey(dst []byte, row [][]byte, cols []sortCol) ([]byte, error) {
	for _, c := range cols {
		v, err := c.info.decode(row[c.col])
		if err != nil {
			return nil, err
		}
		dst = pgvalue.AppendKey(dst, c.info.typ.Kind, v)
	}
	return dst, nil
}

// compareRows orders two rows by sort keys, with their decoded key values.
func compareRows(keys []sortCol, a, b []pgvalue.Value) int {
	for i, k := range keys {
		x, y := a[i], b[i]
		var c int
		switch {
		case x.Null && y.Null:
			continue
		case x.Null:
			c = 1
			if k.nullsFirst {
				c = -1
			}
			return c
		case y.Null:
			c = -1
			if k.nullsFirst {
				c = 1
			}
			return c
		}
		c = pgvalue.Compare(k.info.typ.Kind, x, y)
		if k.desc {
			c = -c
		}
		if c != 0 {
			return c
		}
	}
	return 0
}

func decodeKeys(row [][]byte, keys []sortCol) ([]pgvalue.Value, error) {
	vals := make([]pgvalue.Value, len(keys))
	for i, k := range keys {
		v, err := k.info.decode(row[k.col])
		if err != nil {
			return nil, err
		}
		vals[i] = v
	}
	return vals, nil
}

// Stream writes the built pipeline's rows to the client (visible columns
// only) and returns how many it wrote.
func (e *Exec) Stream() (int64, error) {
	n, _, err := e.streamN(0)
	return n, err
}

// streamN writes at most max rows (0: all) and reports whether the
// pipeline ended. Like Postgres, it stops after max rows without looking
// for more: a merge whose last row came exactly then is not over yet.
func (e *Exec) streamN(max int64) (int64, bool, error) {
	var n int64
	dr := &pgproto3.DataRow{}
	for max == 0 || n < max {
		row, err := e.src.next()
		if err != nil {
			return n, false, err
		}
		if row == nil {
			return n, true, nil
		}
		dr.Values = row[:e.visible]
		if err := e.Client.SendRow(dr); err != nil {
			return n, false, err
		}
		n++
	}
	return n, false, nil
}

// Finish ends every shard's answer: the readers drop the rows the merge
// did not want and read to the end, so the connections come back clean
// (after an error, the first one has cancelled what still ran: simple
// protocol only). Notices and parameter changes the shards sent are
// passed on. It returns the first error any shard reported.
func (e *Exec) Finish(quiet bool) error {
	x := e.Set
	x.halt()
	x.Start() // streams that never started still have answers to read
	x.wait()
	for _, s := range e.Streams {
		for _, m := range s.side {
			switch m.Type {
			case 'N':
				if !quiet {
					e.Client.SendRaw(m.Type, m.Body)
				}
			case 'S':
				var ps pgproto3.ParameterStatus
				if ps.Decode(m.Body) == nil {
					e.Client.ParameterStatus(&ps)
				}
			}
		}
		s.side = nil
		if s.backendErr && !s.simple {
			e.Client.ShardFailed(s.b)
		}
	}
	return x.firstErr()
}
