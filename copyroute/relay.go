package copyroute

import (
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/pgwire"
	"github.com/shardgate/shardgate/sqlerr"
)

// Relay streams the client's COPY data to the one cluster b that answers a
// COPY FROM STDIN (the rest of its answer the caller reads), until
// CopyDone or CopyFail (protocol-flow.html, "COPY Operations"). A cluster
// that ends the COPY early (a bad row) is heard at the client's next
// CopyData: its error is returned then, not after all the data.
func Relay(b *backend.Conn, client Client) error {
	for {
		msg, err := client.Receive()
		if err != nil {
			_ = b.Send(&pgproto3.CopyFail{Message: "client connection lost during COPY"})
			_ = b.Flush()
			return sqlerr.New("08006", "client connection lost during COPY")
		}
		switch m := msg.(type) {
		case *pgproto3.CopyData:
			if err := b.Send(m); err != nil {
				return pgwire.ConnLost(b.Cluster(), err)
			}
			if err := failedEarly(b, client); err != nil {
				return err
			}
		case *pgproto3.CopyDone, *pgproto3.CopyFail:
			if err := b.Send(m.(pgwire.Encodable)); err != nil {
				return pgwire.ConnLost(b.Cluster(), err)
			}
			if err := b.Flush(); err != nil {
				return pgwire.ConnLost(b.Cluster(), err)
			}
			return nil
		case *pgproto3.Flush, *pgproto3.Sync:
			// Ignored during COPY IN, as the server does.
		default:
			_ = b.Send(&pgproto3.CopyFail{Message: "unexpected message during COPY"})
			_ = b.Flush()
			return sqlerr.New("08P01", "unexpected message type %T during COPY from stdin", msg)
		}
	}
}

// failedEarly sends the COPY data buffered for b and returns the error b
// reported if it ended the COPY already: the client learns it at its next
// CopyData, rather than after sending all its data (nobody watches the
// backend while the client is silent). Its later CopyData is ignored by
// the session, as Postgres does.
func failedEarly(b *backend.Conn, client Client) error {
	if err := b.Flush(); err != nil {
		return pgwire.ConnLost(b.Cluster(), err)
	}
	for b.Pending() {
		m, err := b.Read()
		if err != nil {
			return pgwire.ConnLost(b.Cluster(), err)
		}
		switch m.Type {
		case 'N':
			client.SendRaw(m.Type, m.Body)
		case 'E':
			return pgwire.NewBackendError(m.Body, b.Cluster(), nil)
		default:
			b.Broken = true
			return sqlerr.New(sqlerr.ProtocolViolation, "cluster %s sent message type %q during COPY FROM STDIN", b.Cluster(), m.Type)
		}
	}
	return nil
}
