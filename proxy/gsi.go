package proxy

import (
	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/gsi"
	"github.com/shardgate/shardgate/intermediate"
	"github.com/shardgate/shardgate/pgwire"
)

// gsiSession lends package gsi the transaction's connections.
type gsiSession struct {
	ss *session
	r  *routing
}

func (g gsiSession) Conn(cluster string) (*backend.Conn, error) {
	b, err := g.ss.connFor(g.r, cluster)
	if g.ss.tx.gsi = g.Pending() == nil; err == nil {
		err = intermediate.MarkWrites(g.ss.tx.pulledOn, g.ss.tx.wrote, []string{cluster})
	}
	return b, err
}

// Pending is the transaction's lookup work if begun under best_effort.
func (g gsiSession) Pending() *gsi.Pending {
	if tx := g.ss.tx; tx != nil && tx.lookups == nil && !tx.gsi && g.ss.srv.live.Load().commit == CommitBestEffort {
		tx.lookups = gsi.NewPending(g.r.pools, g.ss.stopWait)
	} else if tx == nil {
		return nil
	}
	return g.ss.tx.lookups
}

func (g gsiSession) Send(msg pgwire.Encodable) error { return g.ss.send(msg) }

func (g gsiSession) SendRaw(typ byte, body []byte) { g.ss.mergeClient().SendRaw(typ, body) }

func (g gsiSession) Lend(cluster string) (*backend.Conn, error) { return g.ss.connFor(g.r, cluster) }

func (g gsiSession) Done(b *backend.Conn) { g.ss.finishStatement([]*backend.Conn{b}) }

// bound is the Bind of a portal run by the proxy, for gsi.Run.
func (p *portal) bound() *gsi.Bound {
	if p == nil {
		return nil
	}
	return &gsi.Bound{Params: p.params, Formats: p.formats}
}
