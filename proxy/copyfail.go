package proxy

import (
	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/pgwire"
	"github.com/shardgate/shardgate/sqlerr"
)

// copyFailedEarly sends the COPY data buffered for b and returns the
// error b reported if it ended the COPY already (a bad row): the client
// learns it at its next CopyData, rather than after sending all its data
// (the proxy does not watch the backend while the client is silent). Its
// later CopyData is ignored by the session, as Postgres does.
func copyFailedEarly(ss *session, b *backend.Conn) error {
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
			_ = pgwire.WriteRaw(ss.out, m.Type, m.Body)
		case 'E':
			return pgwire.NewBackendError(m.Body, b.Cluster(), nil)
		default:
			b.Broken = true
			return sqlerr.New(sqlerr.ProtocolViolation, "cluster %s sent message type %q during COPY FROM STDIN", b.Cluster(), m.Type)
		}
	}
	return nil
}
