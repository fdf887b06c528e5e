package pgwire

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"sync"

	"github.com/jackc/pgx/v5/pgproto3"
)

// ClientReadSize is the size of a client reader's pooled buffer: a message
// up to this size (with what the client sent after it) is read in one
// call; a larger one gets a buffer of its own, dropped once read.
const ClientReadSize = 8 << 10

// ClientWriteSize is the size of a pooled client writer's buffer.
const ClientWriteSize = 32 << 10

// clientBufs is what a ClientReader holds only while messages are in
// flight: the read buffer and the messages decoded from it (whose fields
// point into the buffer).
type clientBufs struct {
	buf []byte

	bind         pgproto3.Bind
	close        pgproto3.Close
	copyData     pgproto3.CopyData
	copyDone     pgproto3.CopyDone
	copyFail     pgproto3.CopyFail
	describe     pgproto3.Describe
	execute      pgproto3.Execute
	flush        pgproto3.Flush
	functionCall pgproto3.FunctionCall
	parse        pgproto3.Parse
	query        pgproto3.Query
	sync         pgproto3.Sync
	terminate    pgproto3.Terminate
}

var clientBufPool = sync.Pool{New: func() any { return &clientBufs{buf: make([]byte, ClientReadSize)} }}

var clientWriterPool = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, ClientWriteSize) }}

// GetClientWriter returns a pooled writer of ClientWriteSize bytes on w.
func GetClientWriter(w io.Writer) *bufio.Writer {
	bw := clientWriterPool.Get().(*bufio.Writer)
	bw.Reset(w)
	return bw
}

// PutClientWriter gives back a writer of GetClientWriter, flushed (what it
// still buffers is dropped); it must not be used after.
func PutClientWriter(bw *bufio.Writer) {
	bw.Reset(nil)
	clientWriterPool.Put(bw)
}

// ClientReader reads a client's messages: the start-up packet, then typed
// messages, decoded into pgproto3's types like pgproto3.Backend does. Its
// buffer comes from a pool and goes back with Release once every byte read
// is consumed, so a client waiting between statements holds none. A
// message is valid until the next Receive or Release.
type ClientReader struct {
	r      io.Reader
	before func()      // before each read from r, if set
	bufs   *clientBufs // nil when released
	big    []byte      // a message larger than the pooled buffer, while read
	rp     int         // read position in the current buffer
	wp     int         // write position in the current buffer

	maxBodyLen    int
	maxStartupLen int // 0: MAX_STARTUP_PACKET_LENGTH
	authType      uint32
	budget        *Budget // nil: large messages are not counted
	held          int64   // bytes of big reserved from budget
	// The header of a message whose body is not read yet (a read cut short
	// by a deadline resumes there).
	partial bool
	msgType byte
	bodyLen int
}

// NewClientReader reads from r, calling before (if not nil) before each
// read from it: a read that may wait for the client.
func NewClientReader(r io.Reader, before func()) *ClientReader {
	return &ClientReader{r: r, before: before}
}

// SetMaxBodyLen caps a message body (0: no cap): a larger one is an
// *pgproto3.ExceededMaxBodyLenErr.
func (c *ClientReader) SetMaxBodyLen(n int) { c.maxBodyLen = n }

// SetMaxStartupLen caps the start-up packet (0: 10000 bytes, Postgres's
// MAX_STARTUP_PACKET_LENGTH).
func (c *ClientReader) SetMaxStartupLen(n int) { c.maxStartupLen = n }

// SetBudget makes the reader reserve the buffers of messages larger than
// its pooled buffer from b (nil: none). Call Close when done with the
// reader, so what it holds goes back.
func (c *ClientReader) SetBudget(b *Budget) { c.budget = b }

// Close gives back what the reader reserved from its Budget; the reader
// must not be used after.
func (c *ClientReader) Close() {
	c.dropBig()
}

// dropBig lets go of the buffer of a large message and its reservation.
func (c *ClientReader) dropBig() {
	c.big = nil
	if c.held > 0 {
		c.budget.give(c.held)
		c.held = 0
	}
}

// Discard skips the body of the message Receive refused with a
// *BudgetExceededErr, reading it through the pooled buffer: the
// connection can then tell the client why.
func (c *ClientReader) Discard() error {
	if !c.partial {
		return nil
	}
	for left := c.bodyLen; left > 0; {
		n := min(left, ClientReadSize)
		if _, err := c.next(n); err != nil {
			return eofInMessage(err)
		}
		left -= n
	}
	c.partial = false
	return nil
}

// SetAuthType says which authentication exchange a 'p' message answers, as
// pgproto3.Backend.SetAuthType.
func (c *ClientReader) SetAuthType(t uint32) error {
	switch t {
	case pgproto3.AuthTypeOk, pgproto3.AuthTypeCleartextPassword, pgproto3.AuthTypeMD5Password,
		pgproto3.AuthTypeSCMCreds, pgproto3.AuthTypeGSS, pgproto3.AuthTypeGSSCont, pgproto3.AuthTypeSSPI,
		pgproto3.AuthTypeSASL, pgproto3.AuthTypeSASLContinue, pgproto3.AuthTypeSASLFinal:
		c.authType = t
		return nil
	}
	return fmt.Errorf("authType not recognized: %d", t)
}

// Buffered is how many bytes are read from the client and not yet
// returned in messages.
func (c *ClientReader) Buffered() int { return c.wp - c.rp }

// Release gives the buffer back to the pool when no byte of it is left to
// consume; messages returned before are invalid from then on.
func (c *ClientReader) Release() {
	if c.rp != c.wp {
		return
	}
	c.dropBig()
	c.rp, c.wp = 0, 0
	if c.bufs != nil {
		clientBufPool.Put(c.bufs)
		c.bufs = nil
	}
}

// Read reads what the reader has buffered first, then from the client:
// the reader as a plain io.Reader (another decoder takes over).
func (c *ClientReader) Read(p []byte) (int, error) {
	if c.rp < c.wp {
		n := copy(p, c.cur()[c.rp:c.wp])
		c.rp += n
		return n, nil
	}
	if c.before != nil {
		c.before()
	}
	return c.r.Read(p)
}

func (c *ClientReader) cur() []byte {
	if c.big != nil {
		return c.big
	}
	return c.bufs.buf
}

// next returns the next n bytes, reading at least what is missing (and as
// much more as fits) from the client.
func (c *ClientReader) next(n int) ([]byte, error) {
	if c.rp == c.wp {
		c.rp, c.wp = 0, 0
		if n <= ClientReadSize {
			c.dropBig() // shrink after a large message
		}
	}
	if c.bufs == nil {
		c.bufs = clientBufPool.Get().(*clientBufs)
	}
	if c.wp-c.rp >= n {
		b := c.cur()[c.rp : c.rp+n : c.rp+n]
		c.rp += n
		return b, nil
	}
	if buf := c.cur(); len(buf) < n {
		size := ClientReadSize
		for size < n {
			size *= 2
		}
		if c.budget != nil {
			size = n // counted: exactly what the message needs
			if !c.budget.take(int64(size)) {
				return nil, &BudgetExceededErr{Size: int64(n), InUse: c.budget.InUse(), Limit: c.budget.Limit()}
			}
		}
		big := make([]byte, size)
		c.wp = copy(big, buf[c.rp:c.wp])
		c.dropBig() // the one copied from, if any
		c.rp, c.big = 0, big
		if c.budget != nil {
			c.held = int64(size)
		}
	} else if len(buf)-c.rp < n {
		c.wp = copy(buf, buf[c.rp:c.wp])
		c.rp = 0
	}
	buf := c.cur()
	if c.before != nil {
		c.before()
	}
	got, err := io.ReadAtLeast(c.r, buf[c.wp:], n-(c.wp-c.rp))
	c.wp += got
	if err != nil {
		return nil, err
	}
	b := buf[c.rp : c.rp+n : c.rp+n]
	c.rp += n
	return b, nil
}

// Start-up packet codes (protocol.html, StartupMessage, SSLRequest, ...).
const (
	sslRequestCode    = 80877103
	cancelRequestCode = 80877102
	gssEncRequestCode = 80877104
)

// ReceiveStartupMessage reads the start-up packet: a StartupMessage,
// SSLRequest, GSSEncRequest or CancelRequest (freshly allocated).
func (c *ClientReader) ReceiveStartupMessage() (pgproto3.FrontendMessage, error) {
	hdr, err := c.next(4)
	if err != nil {
		return nil, err
	}
	size := int(int32(binary.BigEndian.Uint32(hdr))) - 4
	maxLen := c.maxStartupLen
	if maxLen == 0 {
		maxLen = 10_000 // MAX_STARTUP_PACKET_LENGTH
	}
	if size < 4 || size > maxLen {
		return nil, fmt.Errorf("invalid length of startup packet: %d", size)
	}
	body, err := c.next(size)
	if err != nil {
		return nil, eofInMessage(err)
	}
	var msg pgproto3.FrontendMessage
	switch code := binary.BigEndian.Uint32(body); code {
	case pgproto3.ProtocolVersion30, pgproto3.ProtocolVersion32:
		msg = &pgproto3.StartupMessage{}
	case sslRequestCode:
		msg = &pgproto3.SSLRequest{}
	case cancelRequestCode:
		msg = &pgproto3.CancelRequest{}
	case gssEncRequestCode:
		msg = &pgproto3.GSSEncRequest{}
	default:
		return nil, fmt.Errorf("unknown startup message code: %d", code)
	}
	if err := msg.Decode(body); err != nil {
		return nil, err
	}
	return msg, nil
}

// Receive reads the client's next message. A read cut short (a deadline)
// is resumed by the next call.
func (c *ClientReader) Receive() (pgproto3.FrontendMessage, error) {
	if !c.partial {
		hdr, err := c.next(5)
		if err != nil {
			return nil, eofInMessage(err)
		}
		c.msgType = hdr[0]
		size := int(int32(binary.BigEndian.Uint32(hdr[1:])))
		if size < 4 {
			return nil, fmt.Errorf("invalid message length: %d", size)
		}
		c.bodyLen = size - 4
		if c.maxBodyLen > 0 && c.bodyLen > c.maxBodyLen {
			return nil, &pgproto3.ExceededMaxBodyLenErr{MaxExpectedBodyLen: c.maxBodyLen, ActualBodyLen: c.bodyLen}
		}
		c.partial = true
	}
	msg, err := c.message(c.msgType)
	if err != nil {
		return nil, err
	}
	body, err := c.next(c.bodyLen)
	if err != nil {
		return nil, eofInMessage(err)
	}
	c.partial = false
	if err := msg.Decode(body); err != nil {
		return nil, err
	}
	return msg, nil
}

// message is the value a message of type t is decoded into.
func (c *ClientReader) message(t byte) (pgproto3.FrontendMessage, error) {
	if c.bufs == nil {
		c.bufs = clientBufPool.Get().(*clientBufs)
	}
	b := c.bufs
	switch t {
	case 'B':
		return &b.bind, nil
	case 'C':
		return &b.close, nil
	case 'D':
		return &b.describe, nil
	case 'E':
		return &b.execute, nil
	case 'F':
		return &b.functionCall, nil
	case 'f':
		return &b.copyFail, nil
	case 'd':
		return &b.copyData, nil
	case 'c':
		return &b.copyDone, nil
	case 'H':
		return &b.flush, nil
	case 'P':
		return &b.parse, nil
	case 'Q':
		return &b.query, nil
	case 'S':
		return &b.sync, nil
	case 'X':
		return &b.terminate, nil
	case 'p':
		switch c.authType {
		case pgproto3.AuthTypeSASL:
			return &pgproto3.SASLInitialResponse{}, nil
		case pgproto3.AuthTypeSASLContinue, pgproto3.AuthTypeSASLFinal:
			return &pgproto3.SASLResponse{}, nil
		case pgproto3.AuthTypeGSS, pgproto3.AuthTypeGSSCont:
			return &pgproto3.GSSResponse{}, nil
		default:
			return &pgproto3.PasswordMessage{}, nil
		}
	}
	return nil, fmt.Errorf("unknown message type: %c", t)
}

// eofInMessage: the client went away after the first byte of a message.
func eofInMessage(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
