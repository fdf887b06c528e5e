package pgwire

import (
	"errors"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgproto3"
)

// IsAck says whether a message is an extended-protocol acknowledgement the
// simple protocol does not have.
func IsAck(m Encodable) bool {
	switch m.(type) {
	case *pgproto3.BindComplete, *pgproto3.NoData, *pgproto3.ParseComplete, *pgproto3.CloseComplete:
		return true
	}
	return false
}

// IsClosedConn says whether err is a read or write on a connection the
// other side closed or reset.
func IsClosedConn(err error) bool {
	return errors.Is(err, net.ErrClosed) || strings.Contains(err.Error(), "connection reset")
}
