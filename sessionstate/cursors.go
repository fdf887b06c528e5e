package sessionstate

import (
	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/planner"
	"github.com/shardgate/shardgate/sqlerr"
)

// Cursor is where one cursor of a session lives.
type Cursor struct {
	Conn    *backend.Conn
	Cluster string
	// Hold is set for a cursor WITH HOLD, which outlives its transaction.
	Hold bool
	// Tx identifies the transaction a cursor without hold belongs to.
	Tx any
	// Unsure: declared WITH HOLD inside a transaction, the cursor
	// survives only if that commits (see CheckUnsure).
	Unsure bool
}

// Cursors are a session's open cursors by name.
type Cursors map[string]*Cursor

// Targets is where FETCH, MOVE or CLOSE of plan runs: the cluster of the
// cursor; for CLOSE ALL every cluster holding one, or main when none does
// (where Postgres answers it as a no-op). live says whether a cursor may
// still exist on a connection the session owns; an unknown or dead
// cursor is Postgres's 34000.
func (cs Cursors) Targets(plan *planner.Plan, main string, live func(*Cursor) bool) ([]planner.Target, error) {
	if plan.Cursor.All {
		var ts []planner.Target
		seen := map[string]bool{}
		for _, c := range cs {
			if live(c) && !seen[c.Cluster] {
				seen[c.Cluster] = true
				ts = append(ts, planner.Target{Cluster: c.Cluster})
			}
		}
		if len(ts) == 0 {
			ts = append(ts, planner.Target{Cluster: main})
		}
		return ts, nil
	}
	if c, ok := cs[plan.Cursor.Name]; ok && live(c) {
		return []planner.Target{{Cluster: c.Cluster}}, nil
	}
	return nil, sqlerr.New("34000", "cursor \"%s\" does not exist", plan.Cursor.Name)
}

// AnyHold reports a cursor WITH HOLD, which pins the session.
func (cs Cursors) AnyHold() bool {
	for _, c := range cs {
		if c.Hold {
			return true
		}
	}
	return false
}

// Closed forgets what a successful CLOSE closed.
func (cs Cursors) Closed(plan *planner.Plan) {
	for name := range cs {
		if plan.Cursor.All || name == plan.Cursor.Name {
			delete(cs, name)
		}
	}
}

// Prune forgets the cursors that are no longer live.
func (cs Cursors) Prune(live func(*Cursor) bool) {
	for name, c := range cs {
		if !live(c) {
			delete(cs, name)
		}
	}
}

// CheckUnsure asks the backends which cursors WITH HOLD declared inside a
// finished transaction survived it (not if it rolled back, or back to a
// savepoint before the DECLARE), and forgets the others.
func (cs Cursors) CheckUnsure() {
	for _, c := range cs {
		if !c.Unsure {
			continue
		}
		rows, err := c.Conn.Query("SELECT name FROM pg_catalog.pg_cursors WHERE is_holdable")
		kept := map[string]bool{}
		for _, row := range rows {
			kept[string(row[0])] = true
		}
		for n, o := range cs {
			if o.Conn == c.Conn && o.Unsure {
				o.Unsure = false
				if err != nil || !kept[n] {
					delete(cs, n)
				}
			}
		}
	}
}

// Channels are the notification channels a session listens on.
type Channels map[string]bool

// Track records the channels of a successful LISTEN or UNLISTEN (UNLISTEN
// * names none: it stops them all).
func (chs Channels) Track(plan *planner.Plan) {
	switch {
	case plan.Session&planner.SessionListen != 0:
		for _, ch := range plan.Channels {
			chs[ch] = true
		}
	case plan.Session&planner.SessionUnlisten != 0:
		if len(plan.Channels) == 0 {
			clear(chs)
		}
		for _, ch := range plan.Channels {
			delete(chs, ch)
		}
	}
}

// AdvisoryLocksHeld reports whether any of a session's connections (not
// in a transaction) holds an advisory lock, from pg_locks. A connection
// that cannot be asked counts as holding one; a broken one holds none.
func AdvisoryLocksHeld(conns []*backend.Conn) bool {
	for _, c := range conns {
		if c.Broken {
			continue
		}
		rows, err := c.Query("SELECT 1 FROM pg_catalog.pg_locks WHERE locktype = 'advisory' AND pid = pg_catalog.pg_backend_pid() LIMIT 1")
		if err != nil || len(rows) > 0 {
			return true
		}
	}
	return false
}
