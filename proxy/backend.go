package proxy

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strconv"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/shardgate/shardgate/pgwire"
)

// backendConn is one connection to a backend cluster, taken over from pgconn
// after connect and authentication (pgconn.Hijack), so the proxy speaks the
// protocol on it directly.
//
// Ownership: a backendConn belongs to its pool while idle and to exactly one
// session while leased (pool.acquire → pool.release). Only the owner may read
// or write it.
type backendConn struct {
	pool    *pool
	netConn net.Conn
	in      *pgwire.Reader
	out     *bufio.Writer
	enc     pgwire.Encoder

	pid    uint32
	secret []byte
	params map[string]string

	txStatus byte // from the last ReadyForQuery
	broken   bool // an I/O error or protocol confusion: never reuse

	// settingsKey identifies the session settings applied on this connection
	// (see session.settingsKey); equal keys mean nothing needs replaying.
	settingsKey string
	// prepared maps a statement identity (SQL + parameter OIDs) to the name
	// it is prepared under on this connection.
	prepared map[string]string
	nextStmt int

	idleSince time.Time
	created   time.Time
}

func dialBackend(ctx context.Context, p *pool) (*backendConn, error) {
	cfg, err := pgconn.ParseConfig(p.dsn)
	if err != nil {
		return nil, err
	}
	if p.connectTimeout > 0 {
		cfg.ConnectTimeout = p.connectTimeout
	}
	pc, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	h, err := pc.Hijack()
	if err != nil {
		pc.Close(ctx)
		return nil, err
	}
	b := &backendConn{
		pool:     p,
		netConn:  h.Conn,
		in:       pgwire.NewReader(h.Conn),
		out:      bufio.NewWriterSize(h.Conn, 16*1024),
		pid:      h.PID,
		secret:   h.SecretKey,
		params:   h.ParameterStatuses,
		txStatus: 'I',
		prepared: map[string]string{},
		created:  time.Now(),
	}
	b.enc.Reset(b.out)
	return b, nil
}

func (b *backendConn) send(msg pgwire.Encodable) error {
	if err := b.enc.Send(msg); err != nil {
		b.broken = true
		return err
	}
	return nil
}

func (b *backendConn) flush() error {
	if err := b.out.Flush(); err != nil {
		b.broken = true
		return err
	}
	return nil
}

func (b *backendConn) read() (pgwire.RawMessage, error) {
	m, err := b.in.Next()
	if err != nil {
		b.broken = true
	}
	return m, err
}

func (b *backendConn) close() {
	if b.netConn != nil {
		// Terminate politely; ignore errors, the socket is going away.
		_ = b.netConn.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
		_, _ = b.netConn.Write([]byte{'X', 0, 0, 0, 4})
		_ = b.netConn.Close()
	}
}

// alive reports whether the server side of an idle connection is still
// there: a restarted or stopped backend leaves a closed socket (or a FATAL
// message) behind, which a non-blocking peek sees without a round trip.
func (b *backendConn) alive() bool {
	sc, ok := b.netConn.(syscall.Conn)
	if !ok {
		return true
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	alive := true
	var buf [1]byte
	err = raw.Read(func(fd uintptr) bool {
		n, _, rerr := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		// EAGAIN: nothing to read, the peer is there. Anything else is EOF,
		// an error, or unsolicited bytes (a FATAL sent before closing).
		alive = (rerr == syscall.EAGAIN || rerr == syscall.EWOULDBLOCK) && n <= 0
		return true
	})
	return err == nil && alive
}

// simpleExec runs a query with the simple protocol and discards its results,
// returning the first error the backend reported. Used for the proxy's own
// statements (BEGIN, SET replay, COMMIT); ParameterStatus messages are
// collected into into when non-nil.
func (b *backendConn) simpleExec(sql string, into map[string]string) error {
	if err := b.send(&pgproto3.Query{String: sql}); err != nil {
		return err
	}
	if err := b.flush(); err != nil {
		return err
	}
	return b.drainUntilReady(into)
}

// drainUntilReady reads and discards up to and including ReadyForQuery,
// returning the first ErrorResponse as a *pgconn.PgError.
func (b *backendConn) drainUntilReady(into map[string]string) error {
	var first error
	for {
		m, err := b.read()
		if err != nil {
			return err
		}
		switch m.Type {
		case 'E':
			if first == nil {
				var e pgproto3.ErrorResponse
				if derr := e.Decode(m.Body); derr != nil {
					b.broken = true
					return derr
				}
				first = pgwire.PgErrorFrom(&e)
			}
		case 'S':
			var ps pgproto3.ParameterStatus
			if ps.Decode(m.Body) == nil {
				b.params[ps.Name] = ps.Value
				if into != nil {
					into[ps.Name] = ps.Value
				}
			}
		case 'Z':
			if len(m.Body) > 0 {
				b.txStatus = m.Body[0]
			}
			return first
		case 'G': // COPY IN started by a proxy statement: refuse it.
			_ = b.send(&pgproto3.CopyFail{Message: "shardgate: COPY not expected here"})
			_ = b.flush()
		}
	}
}

// sendCancel asks the backend at addr to cancel whatever pid is running.
func sendCancel(ctx context.Context, addr string, pid uint32, secret []byte) error {
	d := net.Dialer{Timeout: 2 * time.Second}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	buf := make([]byte, 12+len(secret))
	binary.BigEndian.PutUint32(buf[0:4], uint32(len(buf)))
	binary.BigEndian.PutUint32(buf[4:8], 80877102)
	binary.BigEndian.PutUint32(buf[8:12], pid)
	copy(buf[12:], secret)
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write(buf); err != nil {
		return err
	}
	// The server closes the connection when done; wait for that.
	var one [1]byte
	_, _ = c.Read(one[:])
	return nil
}

func backendAddr(dsn string) (string, error) {
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return "", err
	}
	if cfg.Host == "" {
		return "", errors.New("no host in DSN")
	}
	if cfg.Host[0] == '/' {
		return "", fmt.Errorf("unix socket backends cannot be cancelled over TCP")
	}
	return net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))), nil
}
