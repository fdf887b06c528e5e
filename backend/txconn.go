package backend

import (
	"context"
	"errors"

	"github.com/shardgate/shardgate/pgwire"
)

// ErrBroken is the cause given for a connection that broke earlier.
var ErrBroken = errors.New("connection broken earlier in the transaction")

// The methods below make a Conn usable where a statement runs with a
// context and errors name the cluster (two-phase commit's participants and
// decision connections). The connection reads and writes without a
// context: ctx is not used.

// Failed reports whether the transaction on the connection is in the
// failed state ('E').
func (b *Conn) Failed() bool { return b.TxStatus == 'E' }

// Exec runs sql with the simple protocol; an error names the cluster, and
// a lost connection is 08006.
func (b *Conn) Exec(_ context.Context, sql string) error {
	if b.Broken {
		return pgwire.ConnLost(b.Cluster(), ErrBroken)
	}
	return b.ClusterErr(b.SimpleExec(sql, nil))
}

// QueryRow runs sql with the simple protocol and returns its first row as
// text ("" for NULL); found is false when there is no row.
func (b *Conn) QueryRow(_ context.Context, sql string) (row []string, found bool, err error) {
	if b.Broken {
		return nil, false, pgwire.ConnLost(b.Cluster(), ErrBroken)
	}
	rows, err := b.Query(sql)
	if err != nil || len(rows) == 0 {
		return nil, false, b.ClusterErr(err)
	}
	row = make([]string, len(rows[0]))
	for i, v := range rows[0] {
		row[i] = string(v)
	}
	return row, true, nil
}

// ClusterErr is err, of a statement run on b, as the client sees it: 08006
// when b broke, else a backend error naming b's cluster (nil stays nil).
func (b *Conn) ClusterErr(err error) error {
	switch {
	case err == nil:
		return nil
	case b.Broken:
		return pgwire.ConnLost(b.Cluster(), err)
	}
	return pgwire.Annotate(err, b.Cluster())
}
