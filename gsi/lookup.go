package gsi

import (
	"encoding/binary"
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

// closeLookup closes the lookup's portal.
var closeLookup = &pgproto3.Close{ObjectType: 'P', Name: lookupPortal}

// lookup runs a lookup read on b and appends the owners' keys it returns
// to owners. Its statement is prepared once per connection (under its ID
// in b.Prepared, so a connection keeps the plan from one read to the
// next) and bound with the values: one round trip, no parsing or planning
// once prepared.
func lookup(b *backend.Conn, q planner.LookupQuery, owners []string) ([]string, error) {
	name, prepared := b.Prepared[q.ID]
	if !prepared {
		name = b.NextName("sg")
		_ = b.Send(&pgproto3.Parse{Name: name, Query: q.SQL})
	}
	params := [1][]byte{q.Values}
	_ = b.SendBind(&pgproto3.Bind{DestinationPortal: lookupPortal, PreparedStatement: name, Parameters: params[:]})
	_ = b.SendExecute(lookupPortal, 0)
	_ = b.Send(closeLookup)
	_ = b.Send(&pgproto3.Sync{})
	if err := b.Flush(); err != nil {
		return nil, pgwire.ConnLost(b.Cluster(), err)
	}
	err := merge.ReadAnswer(b, nil, func(m pgwire.RawMessage) error {
		switch m.Type {
		case '1':
			b.Prepared[q.ID] = name
		case 'D':
			v, err := oneColumn(m.Body)
			if err != nil {
				return err
			}
			owners = append(owners, string(v))
		}
		return nil
	})
	return owners, err
}

// oneColumn is the value of a DataRow of one non-null column.
func oneColumn(body []byte) ([]byte, error) {
	if len(body) < 6 || binary.BigEndian.Uint16(body) != 1 {
		return nil, fmt.Errorf("a lookup row that is not one column")
	}
	n := int32(binary.BigEndian.Uint32(body[2:]))
	if n < 0 || int(n) != len(body)-6 {
		return nil, fmt.Errorf("a lookup row of a null or malformed value")
	}
	return body[6:], nil
}
