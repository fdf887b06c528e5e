package proxy

import (
	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/sqlerr"
)

// A read through a global secondary index that runs as the service
// identity (gsisvc.go: the role may not read the lookup table, or the
// transaction wrote entries there) is on a connection outside the
// client's transaction, or in the transaction's service connection, whose
// snapshot is not the client's. Inside a REPEATABLE READ or SERIALIZABLE
// transaction it would see what was committed after the transaction's
// snapshot, or miss what was removed since, and send the owner's
// statement to the wrong shards: an answer no single Postgres gives.
// Sharing the snapshot is not possible: Postgres cannot PREPARE a
// transaction that exported one (pg_export_snapshot), and the client's
// transaction may have to be prepared. Such a read is refused with 0A000
// (docs/sessions.md); a role granted SELECT on the lookup table reads it
// in its own transaction, in its snapshot, until that transaction writes
// entries of its own there.

// inSnapshot refuses a read of lookup table through an index as the
// service identity when the session's transaction, own being its
// connection to the lookup's cluster, is REPEATABLE READ or SERIALIZABLE.
func (ss *session) inSnapshot(own *backend.Conn, table string) error {
	tx := ss.tx
	if tx == nil {
		return nil
	}
	if tx.isolation == "" {
		rows, err := own.Query("SELECT pg_catalog.current_setting('transaction_isolation')")
		if err != nil {
			return own.ClusterErr(err)
		}
		if len(rows) != 1 {
			return sqlerr.New(sqlerr.InternalError, "transaction_isolation: %d rows", len(rows))
		}
		tx.isolation = string(rows[0][0])
	}
	if tx.isolation != "repeatable read" && tx.isolation != "serializable" {
		return nil
	}
	return sqlerr.New(sqlerr.FeatureNotSupported,
		"a read through global secondary index table %s inside a %s transaction is not supported: it would run as the proxy's service identity, outside the transaction's snapshot",
		table, tx.isolation).
		WithHint("GRANT SELECT on the lookup table to the role (and write no entries of the index in the transaction before the read), or read in a READ COMMITTED transaction.")
}
