package proxy

import (
	"strconv"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/copyroute"
	"github.com/shardgate/shardgate/gsi"
	"github.com/shardgate/shardgate/merge"
	"github.com/shardgate/shardgate/planner"
	"github.com/shardgate/shardgate/sqlerr"
)

// COPY across the clusters of a sharded group (planner.CopyIn,
// planner.CopyOut). COPY that one cluster answers is relayed by
// relay.simple and copyroute.Relay like any statement. COPY FROM STDIN
// split by shard key is package copyroute; COPY TO merged across clusters
// is merge.CopyOut. This file is the session's side of both.

// runCopy executes a CopyIn or CopyOut plan on conns (one per target, as runTargets leased them).
func (ss *session) runCopy(r *routing, plan *planner.Plan, sql string, targets []planner.Target, conns []*backend.Conn) error {
	var n int64
	var err error
	switch p := plan.Root.(type) {
	case *planner.CopyIn:
		es := gsi.NewCopyEntries(p.Table) // entries of global secondary indexes, if any
		if n, err = copyroute.In(p, sql, ss.params["client_encoding"], targets, conns, copyInClient{ss.mergeClient(), ss}, es, ss.seqSource(plan.SQL)); err == nil {
			err = es.Write(gsiSession{ss, r})
		}
	case *planner.CopyOut:
		n, err = merge.CopyOut(p, sql, targets, conns, ss.mergeClient())
	default:
		return sqlerr.New(sqlerr.InternalError, "not a COPY plan")
	}
	if err != nil {
		return err
	}
	return ss.complete("COPY " + strconv.FormatInt(n, 10))
}

// copyInClient is the session as the client of a COPY FROM STDIN across
// clusters: merges' way to send messages, plus the client's data.
type copyInClient struct {
	*merge.WireClient
	ss *session
}

// Receive reads the client's next message; an error drops the client connection.
func (c copyInClient) Receive() (pgproto3.FrontendMessage, error) {
	msg, err := c.ss.rd.Receive()
	if err != nil {
		c.ss.conn = nil
	}
	return msg, err
}
