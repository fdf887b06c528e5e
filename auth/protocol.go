package auth

import (
	"errors"
	"io"
	"net"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/shardgate/shardgate/sqlerr"
)

// protocolConn gives a client message that does not decode (a SASL
// response whose length field overruns it, an unknown message type) the
// SQLSTATE Postgres gives it, 08P01, rather than leaving it a plain error
// (which the proxy would send as XX000). I/O errors and errors that carry
// a SQLSTATE already pass as they are.
type protocolConn struct{ Conn }

func (c protocolConn) Receive(authType uint32) (pgproto3.FrontendMessage, error) {
	msg, err := c.Conn.Receive(authType)
	if err == nil {
		return msg, nil
	}
	var ne net.Error
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) || errors.As(err, &ne) {
		return nil, err
	}
	if _, ok := sqlerr.As(err); ok {
		return nil, err
	}
	what := "password packet"
	if authType == pgproto3.AuthTypeSASL || authType == pgproto3.AuthTypeSASLContinue {
		what = "SASL message"
	}
	return nil, sqlerr.New("08P01", "malformed %s", what).WithDetail("%s.", err)
}
