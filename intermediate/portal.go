package intermediate

import (
	"strings"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/merge"
	"github.com/shardgate/shardgate/pgwire"
)

// A read executed with a row limit (Execute's max rows, extended
// protocol): the first Execute runs the pulls, binds the coordinator's
// statement to a portal of the coordinator's connection, inside its
// transaction (the one the executor opened, or the client's), and
// executes it with the client's row limit; the coordinator's
// PortalSuspended goes to the client, and the portal is kept (a
// merge.Portal in the session's merge.Suspended). The next Execute of the
// client's portal executes the coordinator's again. The temporary tables
// and the coordinator's connection are held until the portal ends: its
// last row, Close, Bind of the unnamed portal again, Sync outside a
// transaction block, the end of the transaction, the client's
// disconnection. Meanwhile nothing else may use that connection
// (merge.Suspended.Busy). An ended portal stays known until it is closed,
// so that executing it again answers SELECT 0, as Postgres does.

// portalName is the coordinator's portal of a row-limited read; one
// connection serves at most one, being busy while it is suspended.
const portalName = "_sg_limited"

// Portal is a row-limited read suspended on the coordinator (or ended).
type Portal struct {
	s       *Statement
	release func(*backend.Conn)
	over    bool
}

// Execute runs s for an Execute with a row limit max (0: none) of the
// client's portal name, or continues the portal held under that name. It
// returns the command tag, or "" when the portal is suspended (then held
// under name, and PortalSuspended sent to the client). release gives the
// coordinator's connection back once a suspended portal ends; until then
// the caller must not give it back (it is busy in held).
func Execute(s *Statement, held merge.Suspended, name string, max uint32, release func(*backend.Conn)) (string, error) {
	if p, ok := held[name].(*Portal); ok {
		if p.over {
			return "SELECT 0", nil // as Postgres answers a portal at its end
		}
		tag, err := p.execute(held, name, &pgproto3.Execute{Portal: portalName, MaxRows: max})
		if tag != "" || err != nil {
			release(p.s.coord) // it was busy in held until now
		}
		return tag, err
	}
	if err := s.open(true); err != nil {
		return "", s.close(err)
	}
	for i, pl := range s.im.Pulls {
		if err := s.pull(pl, s.sources[i]); err != nil {
			return "", s.close(err)
		}
	}
	p := &Portal{s: s, release: release}
	bind := s.bind(nil, s.Formats)
	bind.DestinationPortal = portalName
	send(s.coord, &pgproto3.Parse{Query: s.im.SQL, ParameterOIDs: s.oids(nil)}, bind)
	return p.execute(held, name, &pgproto3.Execute{Portal: portalName, MaxRows: max})
}

// execute sends ex (and Sync) to the coordinator and relays its answer:
// rows and notices to the client; the portal is held suspended, or ends.
func (p *Portal) execute(held merge.Suspended, name string, ex *pgproto3.Execute) (string, error) {
	s := p.s
	send(s.coord, ex, &pgproto3.Sync{})
	tag, suspended := "", false
	err := read(s.coord, func(m pgwire.RawMessage) error {
		switch m.Type {
		case 'D', 'N':
			s.Client.SendRaw(m.Type, m.Body)
		case 's':
			suspended = true
		case 'C':
			tag = strings.TrimRight(string(m.Body), "\x00")
		}
		return nil
	})
	if err == nil && suspended {
		held[name] = p
		s.Client.SendRaw('s', nil)
		return "", nil
	}
	if err == nil {
		held[name] = &Portal{over: true}
	} else {
		delete(held, name)
	}
	return tag, p.finish(err)
}

// finish closes the coordinator's portal and ends the statement there
// (its temporary tables go: see Statement.close).
func (p *Portal) finish(err error) error {
	s := p.s
	if err == nil && !s.began && !s.coord.Broken && s.coord.TxStatus == 'T' {
		// Before its tables can be dropped (55006 while a portal reads them).
		send(s.coord, &pgproto3.Close{ObjectType: 'P', Name: portalName}, &pgproto3.Sync{})
		err = drain(s.coord)
	}
	return s.close(err)
}

// Conns is the coordinator's connection while the portal is suspended
// (merge.Portal).
func (p *Portal) Conns() []*backend.Conn {
	if p.over {
		return nil
	}
	return []*backend.Conn{p.s.coord}
}

// End ends a suspended portal (merge.Portal): the coordinator's portal
// is closed, the temporary tables go, and the connection is given back.
// The coordinator is synced already: no connection is left to sync.
func (p *Portal) End(bool) []*backend.Conn {
	if !p.over {
		p.over = true
		_ = p.finish(nil)
		p.release(p.s.coord)
	}
	return nil
}
