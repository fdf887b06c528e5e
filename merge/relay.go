package merge

import (
	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/pgwire"
	"github.com/shardgate/shardgate/sqlerr"
)

// Relay passes the answers of one statement, run as it is on one or more
// backends, on to the client as one answer: rows stream through as they
// arrive (or, with Order, in the statement's row order), the first
// RowDescription stands for all, command tags are summed, and the first
// error is kept for the caller. For a write to every copy of a replicated
// table, one copy (the primary) answers and the others report only errors.
type Relay struct {
	c         Client
	multi     bool          // concatenate rows, sum tags
	primary   *backend.Conn // replicate: the one copy whose answer is relayed
	descSent  bool
	first     error
	tags      pgwire.TagSum
	emptySent bool
	// Order, when set, holds back the DataRows of a split INSERT ...
	// RETURNING to emit them in statement row order (see Reorder).
	Order *Reorder
	// runs is c when it takes runs of messages in wire form (bulk relay).
	runs RunWriter
}

// RunWriter is a Client that also takes several backend messages at once,
// in wire form, as they came: the relay passes runs of rows to it in one
// copy (Bulk).
type RunWriter interface {
	SendRun(msgs []byte)
}

// NewRelay relays to c the answers of conns; replicate says they run a
// write to every copy (the first connection's answer is the client's).
// It is a value, so that a statement's relay lives on the caller's stack.
func NewRelay(c Client, replicate bool, conns []*backend.Conn) Relay {
	rl := Relay{c: c}
	rl.runs, _ = c.(RunWriter)
	if len(conns) > 1 {
		if replicate {
			rl.primary = conns[0]
		} else {
			rl.multi = true
		}
	}
	return rl
}

// SetErr keeps err if it is the statement's first error.
func (rl *Relay) SetErr(err error) {
	if rl.first == nil {
		rl.first = err
	}
}

// Err is the first error kept.
func (rl *Relay) Err() error { return rl.first }

// Answers says whether b's messages other than rows and tags are the
// client's (false for the copies of a replicated write but the primary).
func (rl *Relay) Answers(b *backend.Conn) bool { return rl.primary == nil || b == rl.primary }

// passed are the message types Handle passes on as they are, whatever
// came before, for an answer of b: those the relay may pass on in runs,
// looking only at their headers. Everything else (descriptions, errors,
// parameter changes, ReadyForQuery, the copies of a replicated write but
// the primary, rows held for ordering, tags summed) goes through Handle.
func (rl *Relay) passed(b *backend.Conn) pgwire.TypeSet {
	if rl.runs == nil || rl.primary != nil && b != rl.primary {
		return 0
	}
	pass := pgwire.Types("dc") // COPY TO data and its end
	if rl.Order == nil {
		pass = pass.With('D')
	}
	if !rl.multi {
		pass = pass.With('N')
		if rl.Order == nil {
			pass = pass.With('C')
		}
	}
	return pass
}

// Bulk passes on, in one copy, the run of messages of b already read
// whose types Handle would pass on as they are, but for those in stop (a
// step's end the caller must see); it reports whether there was one.
// Messages not yet read, and the others, are the caller's to Read and
// Handle.
func (rl *Relay) Bulk(b *backend.Conn, stop pgwire.TypeSet) bool {
	pass := rl.passed(b) &^ stop
	if pass == 0 {
		return false
	}
	run := b.ReadRun(pass)
	if len(run) == 0 {
		return false
	}
	rl.runs.SendRun(run)
	return true
}

// ReadQuery reads b's answer to a Query up to ReadyForQuery (see Handle);
// copyIn relays a COPY FROM STDIN the backend asks for.
func (rl *Relay) ReadQuery(b *backend.Conn, shards []string, copyIn func() error) {
	pass := rl.passed(b)
	for {
		if pass != 0 {
			if run := b.ReadRun(pass); len(run) > 0 {
				rl.runs.SendRun(run)
				continue
			}
		}
		m, err := b.Read()
		if err != nil {
			rl.SetErr(pgwire.ConnLost(b.Cluster(), err))
			return
		}
		if done := rl.Handle(b, shards, m); done {
			return
		}
		if m.Type == 'G' {
			if err := copyIn(); err != nil {
				rl.SetErr(err)
				if b.Broken {
					return
				}
			}
		}
	}
}

// Handle relays or absorbs one message of b, which ran the statement on
// shards (named in errors); it reports true at ReadyForQuery.
func (rl *Relay) Handle(b *backend.Conn, shards []string, m pgwire.RawMessage) bool {
	if rl.primary != nil && b != rl.primary {
		// Another copy of a replicated write: only errors and its own
		// state matter.
		switch m.Type {
		case 'E':
			rl.SetErr(pgwire.NewBackendError(m.Body, b.Cluster(), shards))
		case 'S':
			b.Observe(m)
		case 'Z':
			b.Observe(m)
			return true
		}
		return false
	}
	switch m.Type {
	case 'D':
		if rl.Order != nil {
			rl.Order.Add(m.Body)
		} else {
			rl.c.SendRaw(m.Type, m.Body)
		}
	case 'd', 'c', 'A', 'G', 'H':
		rl.c.SendRaw(m.Type, m.Body)
		if m.Type == 'G' {
			_ = rl.c.Flush()
		}
	case 'T':
		if !rl.descSent {
			rl.descSent = true
			rl.c.SendRaw(m.Type, m.Body)
		}
	case 'N':
		if !rl.multi || !rl.tags.Any {
			rl.c.SendRaw(m.Type, m.Body)
		}
	case 'I':
		if !rl.emptySent {
			rl.emptySent = true
			rl.c.SendRaw(m.Type, m.Body)
		}
	case 'C':
		if rl.Order != nil {
			rl.Order.Next()
		}
		if !rl.multi {
			rl.c.SendRaw(m.Type, m.Body)
		} else {
			rl.tags.Add(m.Body)
		}
	case 'E':
		rl.SetErr(pgwire.NewBackendError(m.Body, b.Cluster(), shards))
	case 'S':
		if ps := b.Observe(m); ps != nil {
			rl.c.ParameterStatus(ps)
		}
	case 'W':
		rl.SetErr(sqlerr.New("0A000", "COPY BOTH is not supported through shardgate"))
		b.Broken = true
		return true
	case 'Z':
		b.Observe(m)
		return true
	case '1', '2', '3', 's', 'n', 't':
		// Extended-protocol acknowledgements are the batch runner's; in a
		// simple Query they cannot occur.
	}
	return false
}

// HandleStep relays or absorbs one message of b's answer to a step of an
// extended-protocol batch: rows, tags, notices and descriptions through
// Handle, acknowledgements as they are (quiet: an SQL EXECUTE run inside
// a simple Query shows no BindComplete or NoData), never ReadyForQuery.
func (rl *Relay) HandleStep(b *backend.Conn, m pgwire.RawMessage, quiet bool) {
	switch m.Type {
	case 'S', 'N', 'A', 'C', 'D', 'T', 'I', 'H', 'd', 'c':
		rl.Handle(b, nil, m)
	case 'Z':
	case '2', 'n':
		if !quiet && rl.Answers(b) {
			rl.c.SendRaw(m.Type, m.Body)
		}
	default:
		if rl.Answers(b) {
			rl.c.SendRaw(m.Type, m.Body)
		}
	}
}

// Finish writes the rows held for ordering and the summed command tag of
// a statement on several backends, and returns the first error any
// backend reported.
func (rl *Relay) Finish() error {
	if rl.first != nil {
		return rl.first
	}
	if rl.Order != nil {
		rl.Order.Emit(func(d []byte) { rl.c.SendRaw('D', d) })
	}
	if rl.multi && rl.tags.Any {
		rl.c.SendRaw('C', append([]byte(rl.tags.Tag()), 0))
	}
	return nil
}
