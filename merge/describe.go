package merge

import (
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/pgwire"
	"github.com/shardgate/shardgate/sqlerr"
)

// ReadDescription reads a shard's answer to Describe of the portal of a
// merged read: its RowDescription (copied). Notices before it go to
// notice; failed says the backend reported an error (it then answers
// nothing more before Sync) rather than the connection failing or the
// answer being unusable.
func ReadDescription(b *backend.Conn, notice func(pgwire.RawMessage)) (desc *pgproto3.RowDescription, failed bool, err error) {
	for {
		m, err := b.Read()
		if err != nil {
			return nil, false, pgwire.ConnLost(b.Cluster(), err)
		}
		switch m.Type {
		case 'T':
			var d pgproto3.RowDescription
			if err := d.Decode(m.Body); err != nil {
				b.Broken = true
				return nil, false, sqlerr.New(sqlerr.ProtocolViolation, "cluster %s sent a malformed RowDescription", b.Cluster())
			}
			return pgwire.CopyRowDescription(&d), false, nil
		case 'n':
			return nil, false, sqlerr.New(sqlerr.InternalError, "cluster %s describes a merged read as returning no rows", b.Cluster())
		case 'E':
			return nil, true, pgwire.NewBackendError(m.Body, b.Cluster(), nil)
		case 'N':
			notice(m)
		}
	}
}
