package merge

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/pgwire"
	"github.com/shardgate/shardgate/planner"
	"github.com/shardgate/shardgate/sqlerr"
)

// A Stream reads one backend's answer to a shard statement. Each
// stream has a reader goroutine that parses DataRows into a small bounded
// channel, so every shard's rows are read while the merge works (and its
// backend keeps producing them), and memory stays bounded by the channel
// sizes times the number of shards.
//
// Ownership: between StreamSet.Start and the end of Exec.Finish, the reader goroutine owns
// the backend connection (reads it, updates its parameters and
// transaction status); the session goroutine only consumes the channel.
// After Finish the connection is the session's again, at a message boundary:
// ReadyForQuery for a simple Query, the end of the Execute otherwise.

// streamRows is the capacity of a stream's row channel.
const streamRows = 64

// Stream is one shard's answer to its statement (see above).
type Stream struct {
	b      *backend.Conn
	target planner.Target
	simple bool // the answer ends with ReadyForQuery (simple Query)
	desc   *pgproto3.RowDescription
	// fetcher: the stream reads a shard cursor by batches (cursor.go)
	// instead of a reader goroutine's channel.
	fetcher *batchFetcher

	rows     chan streamItem
	finished chan struct{}
	// cancelling counts the background repeats of cancel (see cancel).
	cancelling sync.WaitGroup
	// described is closed once desc is known (a simple Query's
	// RowDescription read), or the answer failed before it.
	described chan struct{}
	started   bool
	// resultDone: the statement's result is over (reader only).
	resultDone bool
	// ended: the consumer has seen the end of the rows.
	ended bool

	mu         sync.Mutex // guards what the reader reports below
	side       []pgwire.RawMessage
	err        error
	backendErr bool
}

// NewStream is the answer of b to a shard statement for target t: a simple
// Query's (simple: it ends with ReadyForQuery, and the RowDescription is
// read from it) or an Execute's, whose RowDescription desc a Describe
// gave before.
func NewStream(b *backend.Conn, t planner.Target, simple bool, desc *pgproto3.RowDescription) *Stream {
	return &Stream{b: b, target: t, simple: simple, desc: desc}
}

// Conn is the stream's backend connection.
func (s *Stream) Conn() *backend.Conn { return s.b }

// Described reports whether the stream knows its RowDescription.
func (s *Stream) Described() bool { return s.desc != nil }

// streamItem is a row, an error, or (both nil) the end of the rows.
type streamItem struct {
	row [][]byte
	err error
}

// StreamSet is the streams of one merge.
type StreamSet struct {
	streams []*Stream
	stop    chan struct{} // closed when the merge needs no more rows
	halted  bool
	// cancelOnError: the first error cancels the statements still
	// running elsewhere (simple protocol only: in a pipeline, a late
	// CancelRequest could hit the next statement).
	cancelOnError bool

	// Skip marks streams whose connection answers nothing (see Start).
	Skip func(*Stream) bool

	mu    sync.Mutex
	first error // the first error any stream reported, in time
}

// NewStreamSet gathers the streams of one merge. With cancelOnError, the
// first error cancels the statements still running on the others (simple
// protocol only: in a pipeline a late CancelRequest could hit the next
// statement).
func NewStreamSet(streams []*Stream, cancelOnError bool) *StreamSet {
	return &StreamSet{streams: streams, stop: make(chan struct{}), cancelOnError: cancelOnError}
}

// failed records an error (of stream s, or of the merge itself when s is
// nil); the first one cancels the other streams' statements.
func (x *StreamSet) failed(s *Stream, err error) {
	x.mu.Lock()
	first := x.first == nil
	if first {
		x.first = err
	}
	x.mu.Unlock()
	if !first || !x.cancelOnError {
		return
	}
	for _, o := range x.streams {
		if o != s {
			o.cancel()
		}
	}
}

// Fail records an error of the merge itself: the first error cancels the
// statements still running.
func (x *StreamSet) Fail(err error) { x.failed(nil, err) }

func (x *StreamSet) firstErr() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.first
}

// halt tells the readers that no more rows are wanted: they read the rest
// of their answers and drop it.
func (x *StreamSet) halt() {
	if !x.halted {
		x.halted = true
		close(x.stop)
	}
}

// wait returns when every reader is done with its connection.
func (x *StreamSet) wait() {
	for _, s := range x.streams {
		if s.started {
			<-s.finished
		}
		s.cancelling.Wait()
	}
}

func (s *Stream) setErr(err error, backend bool) {
	s.mu.Lock()
	if s.err == nil {
		s.err, s.backendErr = err, backend
	}
	s.mu.Unlock()
}

// sideMessage keeps a notice or parameter status for the session, which
// passes it on when the merge is over.
func (s *Stream) sideMessage(m pgwire.RawMessage) {
	if m.Type == 'S' {
		var ps pgproto3.ParameterStatus
		if ps.Decode(m.Body) == nil {
			s.b.Params[ps.Name] = ps.Value
		}
	}
	s.mu.Lock()
	s.side = append(s.side, pgwire.RawMessage{Type: m.Type, Body: append([]byte(nil), m.Body...)})
	s.mu.Unlock()
}

func unexpectedMessage(b *backend.Conn, typ byte) error {
	b.Broken = true
	return sqlerr.New(sqlerr.ProtocolViolation, "cluster %s sent an unexpected message %q during a merged read", b.Cluster(), typ)
}

// Start launches the readers of every stream not started yet. Channels
// are made before any reader runs, so readers may look at each other
// (cancel) without racing.
func (x *StreamSet) Start() {
	var todo []*Stream
	for _, s := range x.streams {
		if s.started || x.Skip != nil && x.Skip(s) {
			continue
		}
		s.rows = make(chan streamItem, streamRows)
		s.finished = make(chan struct{})
		s.described = make(chan struct{})
		s.started = true
		todo = append(todo, s)
	}
	for _, s := range todo {
		go s.run(x)
	}
}

// run is the reader goroutine: rows into the channel until the result
// ends, then the rest of the answer (up to ReadyForQuery for a simple
// Query), and rows nobody wants any more are read and dropped.
func (s *Stream) run(x *StreamSet) {
	defer close(s.finished)
	defer close(s.rows)
	describedOpen := true
	described := func() {
		if describedOpen {
			describedOpen = false
			close(s.described)
		}
	}
	defer described()
	if s.desc != nil {
		described()
	}
	discard := false
	send := func(it streamItem) {
		if discard {
			return
		}
		select {
		case <-x.stop:
			discard = true
			return
		default:
		}
		select {
		case s.rows <- it:
		case <-x.stop:
			discard = true
		}
	}
	fail := func(err error, backend bool) {
		s.setErr(err, backend)
		x.failed(s, err)
		described()
		if !s.resultDone {
			s.resultDone = true
			send(streamItem{err: err})
		}
	}
	b := s.b
	for {
		m, err := b.Read()
		if err != nil {
			fail(pgwire.ConnLost(b.Cluster(), err), false)
			return
		}
		switch m.Type {
		case 'D':
			if s.resultDone || discard {
				continue
			}
			row, err := pgwire.ParseDataRow(m.Body)
			if err != nil {
				b.Broken = true
				fail(sqlerr.New(sqlerr.ProtocolViolation, "cluster %s sent a malformed DataRow", b.Cluster()), false)
				return
			}
			send(streamItem{row: row})
		case 'C', 'I', 's':
			if s.simple && describedOpen {
				fail(sqlerr.New(sqlerr.InternalError, "cluster %s answered a merged read without rows", b.Cluster()), false)
				continue
			}
			if !s.resultDone {
				s.resultDone = true
				send(streamItem{})
			}
			if !s.simple {
				return
			}
		case 'E':
			fail(pgwire.NewBackendError(m.Body, b.Cluster(), s.target.Shards), true)
			if !s.simple {
				return // nothing more comes before Sync
			}
		case 'N', 'S':
			s.sideMessage(m)
		case 'T':
			if s.simple && describedOpen {
				var d pgproto3.RowDescription
				if err := d.Decode(m.Body); err != nil {
					b.Broken = true
					fail(sqlerr.New(sqlerr.ProtocolViolation, "cluster %s sent a malformed RowDescription", b.Cluster()), false)
					return
				}
				s.mu.Lock()
				s.desc = pgwire.CopyRowDescription(&d)
				s.mu.Unlock()
				described()
			}
		case 'Z':
			if len(m.Body) > 0 {
				b.TxStatus = m.Body[0]
			}
			if !s.resultDone {
				s.resultDone = true
				send(streamItem{})
			}
			return
		default:
			fail(unexpectedMessage(b, m.Type), false)
			return
		}
	}
}

// AwaitDesc waits for the stream's RowDescription (simple protocol); it
// returns the stream's error if the answer failed first.
func (s *Stream) AwaitDesc() error {
	if !s.started {
		return nil
	}
	<-s.described
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.desc == nil {
		if s.err != nil {
			return s.err
		}
		return sqlerr.New(sqlerr.InternalError, "cluster %s ended a merged read without a result", s.b.Cluster())
	}
	return nil
}

// next returns the shard's next row, nil at the end.
func (s *Stream) next() ([][]byte, error) {
	if s.fetcher != nil {
		return s.nextFetched()
	}
	if s.ended || !s.started {
		return nil, nil
	}
	it, ok := <-s.rows
	if !ok || it.row == nil {
		s.ended = true
		if !ok {
			s.mu.Lock()
			err := s.err
			s.mu.Unlock()
			return nil, err
		}
		return nil, it.err
	}
	return it.row, nil
}

// cancel asks the backend to stop a statement still running (the merge
// failed, so its rows are not needed). It returns once the postmaster has
// signalled the backend; as a signal that reaches a backend between
// commands is ignored, a started stream's cancel is then repeated in the
// background until its answer is over.
func (s *Stream) cancel() {
	if s.started {
		select {
		case <-s.finished:
			return // its answer is over
		default:
		}
	}
	s.cancelOnce()
	if !s.started {
		return
	}
	// A cancel that reaches the backend before it has read the statement
	// is lost (Postgres forgets a cancel between commands), which a loaded
	// machine makes likely: repeat it while the answer is not over. wait
	// waits for these repeats too, so that none can reach the connection
	// once it serves another statement.
	s.cancelling.Add(1)
	go func() {
		defer s.cancelling.Done()
		for range cancelRepeats {
			select {
			case <-s.finished:
				return
			case <-time.After(cancelEvery):
			}
			select {
			case <-s.finished:
				return
			default:
			}
			s.cancelOnce()
		}
	}()
}

// A stream's cancel is sent again every cancelEvery while its statement
// runs, at most cancelRepeats times.
const (
	cancelEvery   = 200 * time.Millisecond
	cancelRepeats = 50
)

func (s *Stream) cancelOnce() {
	ctx, stop := context.WithTimeout(context.Background(), 3*time.Second)
	defer stop()
	_ = s.b.Cancel(ctx)
}
