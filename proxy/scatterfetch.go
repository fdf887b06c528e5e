package proxy

import (
	"strconv"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/pgwire"
)

// A row-limited Execute of a read that runs as it is on several shards
// (a scatter without ORDER BY, LIMIT or aggregates: Postgres promises no
// order, so the shards' rows may come one shard after the other). The
// shards' portals are executed in turn, each with the rows still wanted
// as its own row limit: a shard that suspends leaves the client's portal
// suspended, a shard that completes hands the rest of the limit to the
// next. Each shard's portal stays suspended in its backend, as the
// client's would in Postgres, so its connection is free for other
// statements between Executes (unlike a merge's, whose readers hold it).
//
// As Postgres does, an Execute that sent exactly its limit answers
// PortalSuspended, even when no row is left; the next one answers
// SELECT 0. The last Execute's tag counts its own rows.

// scatterFetch is where a row-limited scatter portal is: the shard whose
// portal runs next (len(conns): every shard is done).
type scatterFetch struct{ at int }

// limitedScatter reports whether an Execute of p with row limit max runs
// shard after shard (see above): a read on several clusters, or a portal
// an earlier row-limited Execute started that way.
func limitedScatter(p *portal, max uint32) bool {
	if p.fetch != nil {
		return true
	}
	return max > 0 && len(p.conns) > 1 && !p.stmt.plan.WritesData() && !p.rowPortal[0]
}

// executeScatter runs an Execute of p shard after shard (see above); max
// 0 is no limit. What the batch sent before is answered first, so that
// the Executes it sends now keep the client's order.
func (bt *batch) executeScatter(p *portal, max uint32, done func(error)) error {
	bt.flushBackends()
	if bt.drain(); bt.dropping {
		return nil
	}
	ss := bt.ss
	if p.fetch == nil {
		p.fetch = &scatterFetch{}
	}
	f := p.fetch
	ss.setRunning(p.conns)
	defer ss.setRunning(nil)
	var sent uint32
	for f.at < len(p.conns) && (max == 0 || sent < max) {
		b := p.conns[f.at]
		limit := uint32(0)
		if max > 0 {
			limit = max - sent
		}
		if err := b.SendExecute(p.names[f.at], limit); err != nil {
			return pgwire.ConnLost(b.Cluster(), err)
		}
		if _, err := b.Send(&pgproto3.Flush{}), b.Flush(); err != nil {
			return pgwire.ConnLost(b.Cluster(), err)
		}
		suspended, err := bt.readShardRows(b, &sent)
		if err != nil {
			done(err)
			bt.stepFailed(err)
			return nil
		}
		if suspended {
			break // the shard has more rows: so has the portal
		}
		f.at++
	}
	done(nil)
	if max > 0 && sent == max {
		return ss.send(&pgproto3.PortalSuspended{})
	}
	return ss.complete("SELECT " + strconv.FormatUint(uint64(sent), 10))
}

// readShardRows relays one shard's answer to an Execute, counting its
// rows into sent; suspended: it ended with PortalSuspended (else with its
// command tag, which the caller's own replaces).
func (bt *batch) readShardRows(b *backend.Conn, sent *uint32) (suspended bool, err error) {
	ss := bt.ss
	wc := ss.mergeClient()
	for {
		m, err := b.Read()
		if err != nil {
			return false, pgwire.ConnLost(b.Cluster(), err)
		}
		switch m.Type {
		case 'D':
			*sent++
			wc.SendRaw(m.Type, m.Body)
		case 's':
			return true, nil
		case 'C', 'I':
			return false, nil
		case 'E':
			ss.markErrored(b)
			return false, pgwire.NewBackendError(m.Body, b.Cluster(), nil)
		case 'N':
			wc.SendRaw(m.Type, m.Body)
		case 'S':
			if ps := b.Observe(m); ps != nil {
				wc.ParameterStatus(ps)
			}
		}
	}
}
