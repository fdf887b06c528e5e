package proxy

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/jackc/pgx/v5/pgproto3"
)

// maxBackendMessage caps one message read from a backend. Postgres itself
// limits a DataRow to 1 GB; we keep the same ceiling so a corrupted stream
// cannot make the proxy allocate without bound.
const maxBackendMessage = 1 << 30

// rawMessage is one protocol message as it arrived from a backend: the type
// byte and the body. Body is only valid until the next read on the same
// reader, exactly like pgproto3's decoded messages.
type rawMessage struct {
	Type byte
	Body []byte
}

// msgReader reads backend messages without decoding them, so rows can be
// relayed to the client byte for byte ("Single-shard statements relay
// protocol messages without re-encoding rows", DESIGN.md).
type msgReader struct {
	r   *bufio.Reader
	hdr [5]byte
	buf []byte
}

func newMsgReader(r io.Reader) *msgReader {
	return &msgReader{r: bufio.NewReaderSize(r, 32*1024)}
}

func (m *msgReader) next() (rawMessage, error) {
	if _, err := io.ReadFull(m.r, m.hdr[:]); err != nil {
		return rawMessage{}, err
	}
	n := int(int32(binary.BigEndian.Uint32(m.hdr[1:]))) - 4
	if n < 0 || n > maxBackendMessage {
		return rawMessage{}, fmt.Errorf("invalid backend message length %d", n+4)
	}
	if cap(m.buf) < n {
		m.buf = make([]byte, n, n+n/4)
	}
	m.buf = m.buf[:n]
	if _, err := io.ReadFull(m.r, m.buf); err != nil {
		return rawMessage{}, err
	}
	return rawMessage{Type: m.hdr[0], Body: m.buf}, nil
}

// writeRaw appends a message with the given type and body, in wire form.
func writeRaw(w *bufio.Writer, typ byte, body []byte) error {
	var hdr [5]byte
	hdr[0] = typ
	binary.BigEndian.PutUint32(hdr[1:], uint32(len(body)+4))
	if _, err := w.Write(hdr[:]); err != nil {
		return err
	}
	_, err := w.Write(body)
	return err
}

// encoder turns pgproto3 messages into bytes on a buffered writer, reusing
// one scratch slice.
type encoder struct {
	w       *bufio.Writer
	scratch []byte
}

type encodable interface {
	Encode(dst []byte) ([]byte, error)
}

func (e *encoder) send(msg encodable) error {
	b, err := msg.Encode(e.scratch[:0])
	if err != nil {
		return err
	}
	if cap(b) <= 64*1024 {
		e.scratch = b
	}
	_, err = e.w.Write(b)
	return err
}

// decodeBackend decodes a raw backend message of the types the proxy
// inspects. Other types return nil.
func decodeBackend(m rawMessage) (pgproto3.BackendMessage, error) {
	var msg pgproto3.BackendMessage
	switch m.Type {
	case 'E':
		msg = &pgproto3.ErrorResponse{}
	case 'N':
		msg = &pgproto3.NoticeResponse{}
	case 'C':
		msg = &pgproto3.CommandComplete{}
	case 'Z':
		msg = &pgproto3.ReadyForQuery{}
	case 'S':
		msg = &pgproto3.ParameterStatus{}
	case 'T':
		msg = &pgproto3.RowDescription{}
	case 't':
		msg = &pgproto3.ParameterDescription{}
	case 'G':
		msg = &pgproto3.CopyInResponse{}
	case 'H':
		msg = &pgproto3.CopyOutResponse{}
	default:
		return nil, nil
	}
	if err := msg.Decode(m.Body); err != nil {
		return nil, err
	}
	return msg, nil
}
