package gsi

import (
	"fmt"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/merge"
	"github.com/shardgate/shardgate/pgwire"
	"github.com/shardgate/shardgate/planner"
)

// lookupPortal is the portal a lookup runs in: a named one, closed after,
// so that no unnamed portal of the client's on the connection is replaced.
const lookupPortal = "sggsi"

// lookup runs a lookup read on b and appends the owners' keys it returns
// to owners. Its statement is prepared once per connection (under a key
// of its own in b.Prepared, so a connection keeps the plan from one read
// to the next) and bound with the values: one round trip, no parsing or
// planning once prepared.
func lookup(b *backend.Conn, q planner.LookupQuery, owners []string) ([]string, error) {
	key := "\x00gsi\x00" + q.SQL
	name, prepared := b.Prepared[key]
	if !prepared {
		name = b.NextName("sg")
		_ = b.Send(&pgproto3.Parse{Name: name, Query: q.SQL})
	}
	_ = b.Send(&pgproto3.Bind{DestinationPortal: lookupPortal, PreparedStatement: name, Parameters: [][]byte{[]byte(q.Values)}})
	_ = b.Send(&pgproto3.Execute{Portal: lookupPortal})
	_ = b.Send(&pgproto3.Close{ObjectType: 'P', Name: lookupPortal})
	_ = b.Send(&pgproto3.Sync{})
	if err := b.Flush(); err != nil {
		return nil, pgwire.ConnLost(b.Cluster(), err)
	}
	err := merge.ReadAnswer(b, nil, func(m pgwire.RawMessage) error {
		switch m.Type {
		case '1':
			b.Prepared[key] = name
		case 'D':
			vals, err := pgwire.ParseDataRow(m.Body)
			if err == nil && len(vals) != 1 {
				err = fmt.Errorf("a lookup row of %d columns", len(vals))
			}
			if err != nil {
				return err
			}
			owners = append(owners, string(vals[0]))
		}
		return nil
	})
	return owners, err
}
