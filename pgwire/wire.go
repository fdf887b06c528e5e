package pgwire

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/jackc/pgx/v5/pgproto3"
)

// MaxMessageLen caps one message read from a backend. Postgres itself
// limits a DataRow to 1 GB; we keep the same ceiling so a corrupted stream
// cannot make the proxy allocate without bound.
const MaxMessageLen = 1 << 30

// RawMessage is one protocol message as it arrived from a backend: the type
// byte and the body. Body is only valid until the next read on the same
// reader, exactly like pgproto3's decoded messages.
type RawMessage struct {
	Type byte   // the message type, as in protocol-message-formats.html
	Body []byte // the body, without type and length
}

// Reader reads backend messages without decoding them, so rows can be
// relayed to the client byte for byte: a single-shard statement's rows
// reach the client without being decoded and encoded again. A message
// that fits the read buffer is returned in place, without a copy.
type Reader struct {
	r   *bufio.Reader
	buf []byte
	// pending is the size of the last message returned in place: it is
	// still in r's buffer, and skipped by the next Next.
	pending int
}

// NewReader reads messages from r through a buffer of its own.
func NewReader(r io.Reader) *Reader {
	return &Reader{r: bufio.NewReaderSize(r, 32*1024)}
}

// Next reads the next message. Its body is valid until the next call.
func (m *Reader) Next() (RawMessage, error) {
	if m.pending > 0 {
		_, _ = m.r.Discard(m.pending) // buffered: cannot fail
		m.pending = 0
	}
	hdr, err := m.r.Peek(5)
	if err != nil {
		return RawMessage{}, cutShort(err, len(hdr))
	}
	typ := hdr[0]
	n := int(int32(binary.BigEndian.Uint32(hdr[1:]))) - 4
	if n < 0 || n > MaxMessageLen {
		return RawMessage{}, fmt.Errorf("invalid backend message length %d", n+4)
	}
	if 5+n <= m.r.Size() {
		b, err := m.r.Peek(5 + n)
		if err != nil {
			return RawMessage{}, cutShort(err, len(b))
		}
		m.pending = 5 + n
		return RawMessage{Type: typ, Body: b[5:]}, nil
	}
	_, _ = m.r.Discard(5)
	if cap(m.buf) < n {
		m.buf = make([]byte, n, n+n/4)
	}
	m.buf = m.buf[:n]
	if _, err := io.ReadFull(m.r, m.buf); err != nil {
		return RawMessage{}, err
	}
	return RawMessage{Type: typ, Body: m.buf}, nil
}

// cutShort is the error of a read that got got bytes of a message before
// err: io.EOF in the middle of a message is io.ErrUnexpectedEOF, as
// io.ReadFull says.
func cutShort(err error, got int) error {
	if got > 0 && err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// Buffered reports how many bytes are read from the connection but not yet
// returned as messages.
func (m *Reader) Buffered() int { return m.r.Buffered() - m.pending }

// WriteRaw appends a message with the given type and body, in wire form.
func WriteRaw(w *bufio.Writer, typ byte, body []byte) error {
	if w.Available() < 5 {
		if err := w.Flush(); err != nil {
			return err
		}
	}
	// The header is built in the writer's own buffer: no allocation.
	hdr := binary.BigEndian.AppendUint32(append(w.AvailableBuffer(), typ), uint32(len(body)+4))
	if _, err := w.Write(hdr); err != nil {
		return err
	}
	_, err := w.Write(body)
	return err
}

// Encoder turns pgproto3 messages into bytes on a buffered writer, reusing
// one scratch slice.
type Encoder struct {
	w       *bufio.Writer
	scratch []byte
	// TagRows sums the row counts of the CommandComplete messages sent
	// to the client through the encoder or its writer's WireClient
	// (TagRows, RunTagRows): the rows statements returned or changed.
	TagRows int64
}

// Reset makes the encoder write to w.
func (e *Encoder) Reset(w *bufio.Writer) { e.w = w }

// Encodable is a message pgproto3 can encode: any frontend or backend
// message.
type Encodable interface {
	Encode(dst []byte) ([]byte, error)
}

// Send appends msg's wire form to the writer (not flushed).
func (e *Encoder) Send(msg Encodable) error {
	b, err := msg.Encode(e.scratch[:0])
	return e.write(b, err)
}

// SendQuery is Send of a Query message. Messages of the hot path have
// their own methods: a message passed as an interface escapes to the heap,
// one encoded by its concrete type stays on the stack.
func (e *Encoder) SendQuery(sql string) error {
	m := pgproto3.Query{String: sql}
	return e.write(m.Encode(e.scratch[:0]))
}

// SendExecute is Send of an Execute message (see SendQuery).
func (e *Encoder) SendExecute(portal string, maxRows uint32) error {
	m := pgproto3.Execute{Portal: portal, MaxRows: maxRows}
	return e.write(m.Encode(e.scratch[:0]))
}

// SendDescribe is Send of a Describe message (see SendQuery).
func (e *Encoder) SendDescribe(objectType byte, name string) error {
	m := pgproto3.Describe{ObjectType: objectType, Name: name}
	return e.write(m.Encode(e.scratch[:0]))
}

// SendBind is Send of a Bind message (see SendQuery).
func (e *Encoder) SendBind(m *pgproto3.Bind) error {
	return e.write(m.Encode(e.scratch[:0]))
}

// SendReady is Send of a ReadyForQuery message (see SendQuery).
func (e *Encoder) SendReady(txStatus byte) error {
	m := pgproto3.ReadyForQuery{TxStatus: txStatus}
	return e.write(m.Encode(e.scratch[:0]))
}

func (e *Encoder) write(b []byte, err error) error {
	if err != nil {
		return err
	}
	if cap(b) <= 64*1024 {
		e.scratch = b
	}
	if len(b) > 5 && b[0] == 'C' {
		e.TagRows += TagRows(b[5:])
	}
	_, err = e.w.Write(b)
	return err
}
