package proxy

import (
	"github.com/shardgate/shardgate/backend"
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
	if err == nil {
		err = intermediate.MarkWrites(g.ss.tx.pulledOn, g.ss.tx.wrote, []string{cluster})
	}
	return b, err
}

func (g gsiSession) Send(msg pgwire.Encodable) error { return g.ss.send(msg) }

func (g gsiSession) SendRaw(typ byte, body []byte) { mergeClient{g.ss}.SendRaw(typ, body) }

func (g gsiSession) Query(cluster, sql string) ([][][]byte, error) {
	b, err := g.ss.connFor(g.r, cluster)
	if err != nil {
		return nil, err
	}
	defer g.ss.finishStatement([]*backend.Conn{b})
	rows, err := b.Query(sql)
	if err != nil {
		return nil, pgwire.Annotate(err, cluster)
	}
	return rows, nil
}
