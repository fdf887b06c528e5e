package proxy

import (
	"container/heap"
	"sort"
	"strconv"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/pgvalue"
	"github.com/shardgate/shardgate/pgwire"
	"github.com/shardgate/shardgate/planner"
	"github.com/shardgate/shardgate/sqlerr"
)

// The merge executor runs plans of mode planner.ModeMerge: every shard
// statement is sent at once, each shard's answer is read by its own reader
// goroutine into a bounded channel (shard_stream.go; the first error
// cancels the other shards' statements), and the plan's primitives
// (MergeSort, Aggregate, Sort, Distinct, Limit) become a pull-based
// pipeline of rowSources that streams rows to the client. Memory: a
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
	typ   *pgvalue.Type // nil: the merge cannot compare this type
}

func (c colInfo) decode(raw []byte) (pgvalue.Value, error) {
	v, err := c.typ.Decode(raw, c.field.Format)
	if err != nil {
		return v, c.badValue(err)
	}
	return v, nil
}

func (c colInfo) badValue(err error) error {
	switch err {
	case pgvalue.ErrDateStyle:
		return sqlerr.New(sqlerr.FeatureNotSupported, "cross-shard merge of %s values needs DateStyle ISO", c.typ.Name).
			WithHint("SET DateStyle = ISO, or ask for binary results.")
	case pgvalue.ErrIntervalStyle:
		return sqlerr.New(sqlerr.FeatureNotSupported, "cross-shard merge of interval values needs IntervalStyle postgres").
			WithHint("SET IntervalStyle = postgres, or ask for binary results.")
	}
	return sqlerr.New(sqlerr.ProtocolViolation, "malformed %s value in a shard's answer", c.typ.Name)
}

// mergeExec runs one merge plan over its shard streams.
type mergeExec struct {
	ss      *session
	plan    *planner.Plan
	params  []planner.Param
	streams []*shardStream
	set     *streamSet
	colls   []*backend.CollationInfo
	// formats are the client's result format codes (Bind); nil in the
	// simple protocol, where everything is text.
	formats []int16
	// visible is the number of the client's columns, once built.
	visible int
	// fields describe the client's columns.
	fields []pgproto3.FieldDescription
}

// clientFormat is the format the client asked for column i.
func (e *mergeExec) clientFormat(i int) int16 {
	switch {
	case len(e.formats) == 0:
		return 0
	case len(e.formats) == 1:
		return e.formats[0]
	case i < len(e.formats):
		return e.formats[i]
	}
	return 0
}

// build turns the plan into a pipeline. The shard streams must have their
// RowDescriptions.
func (e *mergeExec) build() (rowSource, error) {
	src, cols, hidden, _, err := e.stage(e.plan.Root)
	if err != nil {
		return nil, err
	}
	e.visible = len(cols) - hidden
	if e.visible < 0 {
		return nil, sqlerr.New(sqlerr.InternalError, "merge has %d columns but %d hidden", len(cols), hidden)
	}
	e.fields = make([]pgproto3.FieldDescription, e.visible)
	for i := range e.fields {
		e.fields[i] = cols[i].field
	}
	return src, nil
}

// stage builds the source for one primitive; it returns the columns of
// its rows, how many trailing ones are hidden, and the sort order its rows
// come in (for Distinct).
func (e *mergeExec) stage(p planner.Primitive) (rowSource, []colInfo, int, []sortCol, error) {
	switch x := p.(type) {
	case *planner.Route:
		cols, err := e.shardColumns()
		if err != nil {
			return nil, nil, 0, nil, err
		}
		return &concatSource{streams: e.streams}, cols, x.Hidden, nil, nil
	case *planner.MergeSort:
		cols, err := e.shardColumns()
		if err != nil {
			return nil, nil, 0, nil, err
		}
		keys, err := e.sortColumns(x.Keys, cols, len(cols)-x.Input.Hidden)
		if err != nil {
			return nil, nil, 0, nil, err
		}
		return &mergeSource{streams: e.streams, keys: keys, pending: -1}, cols, x.Input.Hidden, keys, nil
	case *planner.Aggregate:
		cols, err := e.shardColumns()
		if err != nil {
			return nil, nil, 0, nil, err
		}
		a, err := e.newAggregate(x, &concatSource{streams: e.streams}, cols)
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
		offset, count, err := x.Values(e.params)
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
func (e *mergeExec) shardColumns() ([]colInfo, error) {
	d := e.streams[0].desc
	for _, s := range e.streams[1:] {
		if len(s.desc.Fields) != len(d.Fields) {
			return nil, sqlerr.New(sqlerr.InternalError, "clusters %s and %s return different columns for the same statement",
				e.streams[0].b.Cluster(), s.b.Cluster())
		}
		for i, f := range s.desc.Fields {
			if f.DataTypeOID != d.Fields[i].DataTypeOID {
				return nil, sqlerr.New(sqlerr.FeatureNotSupported, "column %s is of type %s on cluster %s but %s on cluster %s",
					string(f.Name), pgvalue.TypeName(d.Fields[i].DataTypeOID), e.streams[0].b.Cluster(), pgvalue.TypeName(f.DataTypeOID), s.b.Cluster()).
					WithHint("Every cluster of a group must have the same schema.")
			}
		}
	}
	cols := make([]colInfo, len(d.Fields))
	for i, f := range d.Fields {
		cols[i] = colInfo{field: f, typ: pgvalue.TypeOf(f.DataTypeOID)}
	}
	return cols, nil
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

func (e *mergeExec) sortColumns(keys []planner.SortKey, cols []colInfo, base int) ([]sortCol, error) {
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
		out[i] = sortCol{col: c, info: info, desc: k.Desc, nullsFirst: k.NullsFirst}
	}
	return out, nil
}

// checkOrdering refuses to order text by bytes where the collation that
// applies might order it differently.
func (e *mergeExec) checkOrdering(t *pgvalue.Type, collation, what string) error {
	if !t.Collatable {
		return nil
	}
	refuse := func(why string) error {
		return sqlerr.New(sqlerr.FeatureNotSupported, "cross-shard %s is not supported: %s", what, why).
			WithHint("Add COLLATE \"C\" to the key (ORDER BY name COLLATE \"C\", max(name COLLATE \"C\")): the proxy merges text in code point order.")
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
	for i, c := range e.colls {
		cluster := e.streams[i].b.Cluster()
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
func (e *mergeExec) equalityColumn(c int, cols []colInfo, base int, what string) (sortCol, error) {
	i, err := column(c, base, len(cols))
	if err != nil {
		return sortCol{}, err
	}
	info := cols[i]
	if info.typ == nil {
		return sortCol{}, sqlerr.New(sqlerr.FeatureNotSupported, "cross-shard %s on a value of type %s is not supported",
			what, pgvalue.TypeName(info.field.DataTypeOID))
	}
	if info.typ.Collatable {
		for j, cl := range e.colls {
			if cl.Nondeterministic {
				return sortCol{}, sqlerr.New(sqlerr.FeatureNotSupported,
					"cross-shard %s on text is not supported: cluster %s uses a nondeterministic collation", what, e.streams[j].b.Cluster())
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

// concatSource reads the shards one after the other.
type concatSource struct {
	streams []*shardStream
	i       int
}

func (c *concatSource) next() ([][]byte, error) {
	for c.i < len(c.streams) {
		row, err := c.streams[c.i].next()
		if err != nil || row != nil {
			return row, err
		}
		c.i++
	}
	return nil, nil
}

// mergeSource is the k-way merge of MergeSort: a heap of one row per
// shard, each shard sorted by the same keys.
type mergeSource struct {
	streams []*shardStream
	keys    []sortCol
	heads   mergeHeap
	started bool
	pending int // the shard whose row was returned last: read its next one
}

type mergeHead struct {
	row   [][]byte
	vals  []pgvalue.Value
	shard int
}

type mergeHeap struct {
	items []*mergeHead
	keys  []sortCol
}

func (h *mergeHeap) Len() int { return len(h.items) }
func (h *mergeHeap) Less(i, j int) bool {
	c := compareRows(h.keys, h.items[i].vals, h.items[j].vals)
	if c != 0 {
		return c < 0
	}
	return h.items[i].shard < h.items[j].shard
}
func (h *mergeHeap) Swap(i, j int) { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *mergeHeap) Push(x any)    { h.items = append(h.items, x.(*mergeHead)) }
func (h *mergeHeap) Pop() any {
	x := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return x
}

func (m *mergeSource) pull(i int) error {
	row, err := m.streams[i].next()
	if err != nil || row == nil {
		return err
	}
	vals, err := decodeKeys(row, m.keys)
	if err != nil {
		return err
	}
	heap.Push(&m.heads, &mergeHead{row: row, vals: vals, shard: i})
	return nil
}

func (m *mergeSource) next() ([][]byte, error) {
	if !m.started {
		m.started = true
		m.heads.keys = m.keys
		for i := range m.streams {
			if err := m.pull(i); err != nil {
				return nil, err
			}
		}
	}
	if m.pending >= 0 {
		if err := m.pull(m.pending); err != nil {
			return nil, err
		}
		m.pending = -1
	}
	if m.heads.Len() == 0 {
		return nil, nil
	}
	h := heap.Pop(&m.heads).(*mergeHead)
	m.pending = h.shard
	return h.row, nil
}

// sortSource sorts its input in memory (an Aggregate's groups).
type sortSource struct {
	in   rowSource
	keys []sortCol
	rows [][][]byte
	pos  int
	done bool
}

func (s *sortSource) next() ([][]byte, error) {
	if !s.done {
		s.done = true
		type item struct {
			row  [][]byte
			vals []pgvalue.Value
		}
		var items []item
		for {
			row, err := s.in.next()
			if err != nil {
				return nil, err
			}
			if row == nil {
				break
			}
			vals, err := decodeKeys(row, s.keys)
			if err != nil {
				return nil, err
			}
			items = append(items, item{row, vals})
		}
		sort.SliceStable(items, func(i, j int) bool { return compareRows(s.keys, items[i].vals, items[j].vals) < 0 })
		s.rows = make([][][]byte, len(items))
		for i, it := range items {
			s.rows[i] = it.row
		}
	}
	if s.pos >= len(s.rows) {
		return nil, nil
	}
	s.pos++
	return s.rows[s.pos-1], nil
}

// distinctSource drops repeated rows. adjacent: equal keys come one after
// the other (DISTINCT ON over a MergeSort): keep the first of each. run:
// the input is sorted by these keys, so duplicates sit in one run of equal
// sort keys and only that run is remembered. Otherwise every key seen is.
type distinctSource struct {
	in       rowSource
	key      []sortCol
	adjacent bool
	run      []sortCol
	seen     map[string]struct{}
	prev     []byte
	prevRun  []byte
	buf      []byte
}

func (d *distinctSource) next() ([][]byte, error) {
	for {
		row, err := d.in.next()
		if err != nil || row == nil {
			return row, err
		}
		d.buf, err = rowKey(d.buf[:0], row, d.key)
		if err != nil {
			return nil, err
		}
		if d.adjacent {
			if d.prev != nil && string(d.prev) == string(d.buf) {
				continue
			}
			d.prev = append(d.prev[:0], d.buf...)
			return row, nil
		}
		if d.run != nil {
			runKey, err := rowKey(nil, row, d.run)
			if err != nil {
				return nil, err
			}
			if d.prevRun == nil || string(runKey) != string(d.prevRun) {
				d.prevRun = runKey
				clear(d.seen)
			}
		}
		if _, dup := d.seen[string(d.buf)]; dup {
			continue
		}
		d.seen[string(d.buf)] = struct{}{}
		return row, nil
	}
}

// limitSource skips offset rows, passes count (all if negative), then
// stops reading; with ties (FETCH FIRST ... WITH TIES) it also passes the
// rows that sort equal to the last one.
type limitSource struct {
	in            rowSource
	offset, count int64
	seen          int64
	ties          []sortCol
	last          []pgvalue.Value // WITH TIES: the sort keys of the last row passed
	done          bool
}

func (l *limitSource) next() ([][]byte, error) {
	for !l.done {
		full := l.count >= 0 && l.seen >= l.offset && l.seen-l.offset >= l.count
		if full && (l.ties == nil || l.last == nil) {
			l.done = true
			break
		}
		row, err := l.in.next()
		if err != nil || row == nil {
			return row, err
		}
		l.seen++
		if l.seen <= l.offset {
			continue
		}
		if l.ties != nil {
			vals, err := decodeKeys(row, l.ties)
			if err != nil {
				return nil, err
			}
			if full && compareRows(l.ties, vals, l.last) != 0 {
				l.done = true
				break
			}
			l.last = vals
		}
		return row, nil
	}
	return nil, nil
}

// stream writes the pipeline's rows to the client (visible columns only)
// and returns how many it wrote.
func (e *mergeExec) stream(src rowSource) (int64, error) {
	var n int64
	dr := &pgproto3.DataRow{}
	for {
		row, err := src.next()
		if err != nil {
			return n, err
		}
		if row == nil {
			return n, nil
		}
		dr.Values = row[:e.visible]
		if err := e.ss.send(dr); err != nil {
			return n, err
		}
		n++
		if e.ss.out.Buffered() > 64*1024 {
			_ = e.ss.out.Flush()
		}
	}
}

// finish ends every shard's answer: the readers drop the rows the merge
// did not want and read to the end, so the connections come back clean
// (after an error, the first one has cancelled what still ran: simple
// protocol only). Notices and parameter changes the shards sent are
// passed on. It returns the first error any shard reported.
func (e *mergeExec) finish(quiet bool) error {
	x := e.set
	x.halt()
	x.start() // streams that never started still have answers to read
	x.wait()
	ss := e.ss
	for _, s := range e.streams {
		for _, m := range s.side {
			switch m.Type {
			case 'N':
				if !quiet {
					_ = pgwire.WriteRaw(ss.out, m.Type, m.Body)
				}
			case 'S':
				var ps pgproto3.ParameterStatus
				if ps.Decode(m.Body) == nil && ss.params[ps.Name] != ps.Value {
					ss.params[ps.Name] = ps.Value
					_ = ss.send(&ps)
				}
			}
		}
		s.side = nil
		if s.backendErr && !s.simple {
			ss.markErrored(s.b)
		}
	}
	return x.firstErr()
}

// runMerge executes a merge plan with the simple protocol: it is
// runTargets's branch for planner.ModeMerge over several clusters.
func (ss *session) runMerge(plan *planner.Plan, sql string, params []planner.Param, targets []planner.Target, conns []*backend.Conn) error {
	if l := findLimit(plan.Root); l != nil {
		// LIMIT and OFFSET errors come before any work, as in Postgres.
		if _, _, err := l.Values(params); err != nil {
			return err
		}
	}
	e := &mergeExec{ss: ss, plan: plan, params: params}
	e.colls = backend.Collations(conns)
	for i, b := range conns {
		q := targets[i].SQL
		if q == "" {
			q = sql
		}
		if err := b.Send(&pgproto3.Query{String: q}); err != nil {
			return pgwire.ConnLost(b.Cluster(), err)
		}
		if err := b.Flush(); err != nil {
			return pgwire.ConnLost(b.Cluster(), err)
		}
		e.streams = append(e.streams, &shardStream{ss: ss, b: b, target: targets[i], simple: true})
	}
	e.set = newStreamSet(e.streams, true)
	e.set.start()
	for _, s := range e.streams {
		if err := s.awaitDesc(); err != nil {
			// The reader reported it: the first error has cancelled the
			// other shards already.
			return e.finish(false)
		}
	}
	src, err := e.build()
	if err == nil {
		err = ss.send(&pgproto3.RowDescription{Fields: e.fields})
	}
	var n int64
	if err == nil {
		n, err = e.stream(src)
	}
	if err != nil {
		e.set.failed(nil, err) // stop the shards still running
	}
	if ferr := e.finish(false); ferr != nil {
		err = ferr
	}
	if err != nil {
		return err
	}
	return ss.complete("SELECT " + strconv.FormatInt(n, 10))
}

func findLimit(p planner.Primitive) *planner.Limit {
	for p != nil {
		if l, ok := p.(*planner.Limit); ok {
			return l
		}
		in := p.Inputs()
		if len(in) != 1 {
			return nil
		}
		p = in[0]
	}
	return nil
}
