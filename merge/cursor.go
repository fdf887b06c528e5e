package merge

import (
	"strconv"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/pgwire"
	"github.com/shardgate/shardgate/planner"
	"github.com/shardgate/shardgate/sqlerr"
)

// A cursor over a read merged across clusters (planner.MergedCursor):
// DECLARE declares a cursor of the shard statement on every target
// cluster, in the client's transaction, under a name of the proxy's; the
// merge pipeline is built over streams that, instead of a reader
// goroutine, FETCH a batch from their cluster's cursor whenever the merge
// needs a row they have not got. FETCH n runs the pipeline for n rows;
// between two FETCHes nothing runs on the shards' connections, which the
// transaction's other statements may use. The proxy holds at most a
// batch of rows per cluster (plus what the pipeline itself keeps: one
// entry per group for GROUP BY).

// fetchBatch is how many rows a shard cursor's FETCH asks for.
const fetchBatch = 1000

// shardCursors numbers the shards' cursors: _sg_cursor_N.
var shardCursors atomic.Int64

// Cursor is one merged cursor of a session.
type Cursor struct {
	exec  *Exec
	shard string // the shards' cursor name
	conns []*backend.Conn
	tx    any // the client's transaction it belongs to
	over  bool
}

// Cursors are a session's merged cursors, by name.
type Cursors map[string]*Cursor

// get returns the cursor name of transaction tx, forgetting cursors of
// transactions that ended.
func (cs Cursors) get(name string, tx any) *Cursor {
	c := cs[name]
	if c != nil && (tx == nil || c.tx != tx) {
		delete(cs, name)
		return nil
	}
	return c
}

// Has reports whether name is a merged cursor of transaction tx.
func (cs Cursors) Has(name string, tx any) bool { return cs.get(name, tx) != nil }

// batchFetcher is a stream's source when it reads a shard cursor.
type batchFetcher struct {
	cursor string
	buf    [][][]byte
	done   bool // the cursor gave its last row
	client Client
}

// fetch reads the next batch of s's shard cursor (and its RowDescription).
func (f *batchFetcher) fetch(s *Stream) error {
	b := s.b
	if err := SendQuery(b, "FETCH "+strconv.Itoa(fetchBatch)+" FROM "+f.cursor); err != nil {
		return err
	}
	return f.read(s)
}

// read reads the answer to a FETCH of the shard cursor.
func (f *batchFetcher) read(s *Stream) error {
	b := s.b
	return ReadAnswer(b, s.target.Shards, func(m pgwire.RawMessage) error {
		switch m.Type {
		case 'T':
			if s.desc == nil {
				var d pgproto3.RowDescription
				if err := d.Decode(m.Body); err != nil {
					return err
				}
				s.desc = pgwire.CopyRowDescription(&d)
			}
		case 'D':
			row, err := pgwire.ParseDataRow(m.Body)
			if err != nil {
				return err
			}
			f.buf = append(f.buf, row)
		case 'C':
			if _, n, _ := pgwire.SplitTag(m.Body); n < fetchBatch {
				f.done = true
			}
		case 'N':
			f.client.SendRaw(m.Type, m.Body)
		}
		return nil
	})
}

// ReadAnswer reads b's answer up to ReadyForQuery, handing every message
// but errors, parameter changes (observed) and ReadyForQuery to fn; the
// first error the backend reports (on shards, for its where line) is
// returned then. An error of fn marks b broken (a malformed message).
func ReadAnswer(b *backend.Conn, shards []string, fn func(pgwire.RawMessage) error) error {
	var first error
	for {
		m, err := b.Read()
		if err != nil {
			return pgwire.ConnLost(b.Cluster(), err)
		}
		switch m.Type {
		case 'E':
			if first == nil {
				first = pgwire.NewBackendError(m.Body, b.Cluster(), shards)
			}
			continue
		case 'S', 'Z':
			b.Observe(m)
			if m.Type == 'Z' {
				return first
			}
			continue
		}
		if first == nil && fn != nil {
			if err := fn(m); err != nil {
				b.Broken = true
				first = sqlerr.New(sqlerr.ProtocolViolation, "cluster %s sent a malformed message: %v", b.Cluster(), err)
			}
		}
	}
}

// nextFetched is Stream.next for a stream over a shard cursor.
func (s *Stream) nextFetched() ([][]byte, error) {
	f := s.fetcher
	if len(f.buf) == 0 && !f.done {
		f.buf = f.buf[:0:0] // the batch read is the proxy's memory: let it go
		if err := f.fetch(s); err != nil {
			return nil, err
		}
	}
	if len(f.buf) == 0 {
		return nil, nil
	}
	row := f.buf[0]
	f.buf[0] = nil
	f.buf = f.buf[1:]
	return row, nil
}

// SendQuery sends q to b as a simple Query and flushes it.
func SendQuery(b *backend.Conn, q string) error {
	if err := b.SendQuery(q); err != nil { // not boxed into an interface
		return pgwire.ConnLost(b.Cluster(), err)
	}
	if err := b.Flush(); err != nil {
		return pgwire.ConnLost(b.Cluster(), err)
	}
	return nil
}

// Declare declares the merged cursor of plan (DECLARE of a
// planner.MergedCursor, with its parameters) in transaction tx: on the
// transaction's connection to every target cluster (conn), it declares
// the shard cursors and reads their first batches, and builds the merge
// (mk makes it, given the clusters' collation facts). It returns the
// command tag.
func (cs Cursors) Declare(plan *planner.Plan, params []planner.Param, tx any, seqs planner.SequenceSource,
	conn func(cluster string) (*backend.Conn, error), mk func([]*backend.CollationInfo) *Exec) (string, error) {
	name, read := plan.Cursor.Name, plan.Root.(*planner.MergedCursor).Read
	if tx == nil {
		return "", sqlerr.New("25P01", "DECLARE CURSOR can only be used in transaction blocks")
	}
	if cs.Has(name, tx) {
		return "", sqlerr.New("42P03", "cursor \"%s\" already exists", name)
	}
	if err := CheckLimit(read.Root, params); err != nil {
		return "", err
	}
	targets, err := read.TargetsWith(params, seqs)
	if err != nil {
		return "", err
	}
	conns := make([]*backend.Conn, len(targets))
	for i, t := range targets {
		if conns[i], err = conn(t.Cluster); err != nil {
			return "", err
		}
	}
	e := mk(backend.Collations(conns))
	c := &Cursor{exec: e, shard: "_sg_cursor_" + strconv.FormatInt(shardCursors.Add(1), 10), conns: conns, tx: tx}
	sc := planner.CursorInfo{Name: c.shard, NoScroll: true, Binary: plan.Cursor.Binary}
	if plan.Cursor.Binary {
		e.Formats = []int16{1}
	}
	for i, b := range conns {
		t := targets[i]
		q := t.SQL
		if q == "" {
			q = read.SQL
		}
		for _, m := range []pgwire.Encodable{
			&pgproto3.Parse{Query: sc.Declare(q), ParameterOIDs: planner.OIDsOf(e.Params, t.Params)},
			planner.BindArg(e.Params, t.Params, nil, t.Arg), &pgproto3.Execute{}, &pgproto3.Sync{},
			&pgproto3.Query{String: "FETCH " + strconv.Itoa(fetchBatch) + " FROM " + c.shard},
		} {
			if err := b.Send(m); err != nil {
				return "", pgwire.ConnLost(b.Cluster(), err)
			}
		}
		if err := b.Flush(); err != nil {
			return "", pgwire.ConnLost(b.Cluster(), err)
		}
		s := NewStream(b, t, true, nil)
		s.fetcher = &batchFetcher{cursor: c.shard, client: e.Client}
		e.Streams = append(e.Streams, s)
	}
	var first error
	for _, s := range e.Streams {
		// The DECLARE's answer, then the first FETCH's.
		for _, step := range []func() error{func() error { return ReadAnswer(s.b, s.target.Shards, nil) }, func() error { return s.fetcher.read(s) }} {
			if err := step(); err != nil && first == nil {
				first = err
			}
		}
	}
	if first != nil {
		return "", first
	}
	e.Set = NewStreamSet(e.Streams, false)
	e.Set.Skip = func(*Stream) bool { return true } // no readers: FETCH reads
	if err := e.Build(); err != nil {
		return "", err
	}
	cs[name] = c
	return "DECLARE CURSOR", nil
}

// Run runs FETCH, MOVE or CLOSE of plan if it names a merged cursor of
// transaction tx (CLOSE ALL closes them, and done is false: the
// backends' cursors are closed by the caller), sending the answer
// (RowDescription for FETCH, the rows through the merge's Client, the
// command tag) with send. output is the session's output settings now
// (Exec.Output): a FETCH under settings other than DECLARE's is refused,
// its rows being read already in the text those settings gave.
func (cs Cursors) Run(plan *planner.Plan, tx any, output string, send func(pgwire.Encodable) error) (done bool, err error) {
	if plan.Kind == planner.ClosePortal && plan.Cursor.All {
		for name := range cs {
			if _, err := cs.Close(name, tx); err != nil {
				return true, err
			}
		}
		return false, nil
	}
	if plan.Kind == planner.ClosePortal {
		found, err := cs.Close(plan.Cursor.Name, tx)
		if !found || err != nil {
			return found, err
		}
		return true, send(&pgproto3.CommandComplete{CommandTag: []byte("CLOSE CURSOR")})
	}
	c := cs.get(plan.Cursor.Name, tx)
	if c == nil {
		return false, nil
	}
	switch plan.Kind {
	case planner.Fetch, planner.Move:
	default:
		return false, nil
	}
	fw := plan.Cursor.Forward
	if fw == nil {
		return true, sqlerr.New(sqlerr.FeatureNotSupported, "cursor \"%s\" reads a merge across shards and can only move forward", plan.Cursor.Name).
			WithHint("Use FETCH [FORWARD] n, NEXT or ALL; DECLARE it SCROLL to keep it on the coordinator, where it can move back.")
	}
	if plan.Kind == planner.Fetch && output != c.exec.Output {
		return true, sqlerr.New(sqlerr.FeatureNotSupported, "cursor \"%s\" reads a merge across shards declared under other output settings (DateStyle, IntervalStyle, TimeZone, extra_float_digits, bytea_output, lc_monetary, client_encoding): FETCH from it is not supported", plan.Cursor.Name).
			WithHint("Set them back as they were at DECLARE, or DECLARE the cursor again.")
	}
	if plan.Kind == planner.Fetch {
		if err := send(&pgproto3.RowDescription{Fields: c.exec.Fields()}); err != nil {
			return true, err
		}
	}
	var n int64
	if !c.over {
		n, c.over, err = c.exec.forward(fw.N, plan.Kind == planner.Move)
		if err != nil {
			delete(cs, plan.Cursor.Name)
			return true, err
		}
	}
	tag := "FETCH "
	if plan.Kind == planner.Move {
		tag = "MOVE "
	}
	return true, send(&pgproto3.CommandComplete{CommandTag: []byte(tag + strconv.FormatInt(n, 10))})
}

// forward writes (or, for MOVE, skips) at most max merged rows (0: all of
// them) and reports whether the pipeline ended.
func (e *Exec) forward(max int64, skip bool) (int64, bool, error) {
	if !skip {
		return e.streamN(max)
	}
	var n int64
	for max == 0 || n < max {
		row, err := e.src.next()
		if err != nil || row == nil {
			return n, row == nil && err == nil, err
		}
		n++
	}
	return n, false, nil
}

// Close closes merged cursor name of transaction tx and its shards'
// cursors (CLOSE, or the protocol's Close of the cursor's portal); found
// is false when there is no such cursor.
func (cs Cursors) Close(name string, tx any) (found bool, err error) {
	c := cs.get(name, tx)
	if c == nil {
		return false, nil
	}
	delete(cs, name)
	return true, c.close()
}

// close closes the shards' cursors.
func (c *Cursor) close() error {
	var first error
	for _, b := range c.conns {
		if b.Broken {
			continue
		}
		err := SendQuery(b, "CLOSE "+c.shard)
		if err == nil {
			err = ReadAnswer(b, nil, nil)
		}
		if err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Fields describes the rows of merged cursor name of transaction tx
// (ok false: no such cursor), as Describe of the cursor's portal, or of a
// FETCH from it, answers in the extended protocol.
func (cs Cursors) Fields(name string, tx any) (fields []pgproto3.FieldDescription, ok bool) {
	c := cs.get(name, tx)
	if c == nil {
		return nil, false
	}
	return c.exec.Fields(), true
}

// CheckFormats refuses result formats of a Bind (of FETCH, or an Execute
// of the cursor's portal) other than the merged cursor's own: its merge
// encodes its values as DECLARE asked (text, or binary for BINARY).
func (cs Cursors) CheckFormats(name string, tx any, formats []int16) error {
	c := cs.get(name, tx)
	if c == nil {
		return nil
	}
	for i := range max(len(formats), len(c.exec.fields)) {
		if (&Exec{Formats: formats}).clientFormat(i) != c.exec.clientFormat(i) {
			return sqlerr.New(sqlerr.FeatureNotSupported, "cursor \"%s\" reads a merge across shards: its rows come in the format DECLARE gave them", name).
				WithHint("Fetch it in text, or declare it BINARY for binary rows.")
		}
	}
	return nil
}

// Execute runs an Execute of merged cursor name's portal (in Postgres a
// DECLAREd cursor is a portal): at most max rows (0: all of them) through
// its Client; more says the row limit stopped it (the portal is
// suspended). The Describe gave the RowDescription.
func (cs Cursors) Execute(name string, tx any, max int64) (n int64, more bool, err error) {
	c := cs.get(name, tx)
	if c == nil {
		return 0, false, sqlerr.New("34000", "portal \"%s\" does not exist", name)
	}
	if c.over {
		return 0, false, nil
	}
	n, c.over, err = c.exec.forward(max, false)
	if err != nil {
		delete(cs, name)
	}
	return n, !c.over && err == nil, err
}
