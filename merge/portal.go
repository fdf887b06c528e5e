package merge

import (
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/sqlerr"
)

// A merge run by Execute messages of the extended protocol. Every shard
// portal is executed without a row limit; an Execute with a row limit
// takes at most that many merged rows and leaves the merge suspended: its
// readers stay blocked on their full channels, so the shards' rows wait in
// the backends' sockets (TCP backpressure) and memory stays bounded. The
// next Execute of the client's portal continues the same merge; closing
// the portal finishes it (Finish: the rest is read and dropped).

// StartExecute starts the readers of an Execute's merge (streams whose
// connection answers nothing, skip, get none), checks every stream is
// described and builds the pipeline. On error the merge is finished.
func (e *Exec) StartExecute(skip func(*Stream) bool) error {
	e.Set = NewStreamSet(e.Streams, false)
	e.Set.Skip = skip
	e.Set.Start()
	for _, s := range e.Streams {
		if !s.Described() {
			_ = e.Finish(true)
			return sqlerr.New(sqlerr.InternalError, "no description of the shard statement on cluster %s", s.b.Cluster())
		}
	}
	if err := e.Build(); err != nil {
		e.Set.Fail(err)
		if ferr := e.Finish(false); ferr != nil {
			return ferr
		}
		return err
	}
	return nil
}

// Drop reads an Execute's answers to the end and drops them (the step is
// skipped after an error); skip is as for StartExecute.
func (e *Exec) Drop(skip func(*Stream) bool) {
	e.Set = NewStreamSet(e.Streams, false)
	e.Set.Skip = skip
	_ = e.Finish(true)
}

// StreamN writes at most max merged rows (0: all of them) and returns how
// many. done: the merge is over and finished, the shards' connections are
// the caller's again; otherwise it is suspended (see above) until the next
// StreamN or Finish. An error finishes the merge too.
func (e *Exec) StreamN(max int64) (n int64, done bool, err error) {
	n, end, err := e.streamN(max)
	if err == nil && !end {
		return n, false, nil
	}
	if err != nil {
		e.Set.Fail(err)
	}
	if ferr := e.Finish(false); ferr != nil {
		err = ferr
	}
	return n, true, err
}

// Portal is a portal an Execute's row limit left suspended: a merge
// (*Exec) or another package's (a read over intermediate results kept
// open on the coordinator).
type Portal interface {
	// Conns are the connections it keeps busy until it ends.
	Conns() []*backend.Conn
	// End finishes it: the rest of its rows is dropped. It returns the
	// connections the caller must sync (see Suspended.End).
	End(sync bool) []*backend.Conn
}

// Conns: see Portal.
func (e *Exec) Conns() []*backend.Conn {
	var conns []*backend.Conn
	for _, s := range e.Streams {
		conns = append(conns, s.b)
	}
	return conns
}

// End finishes the merge: its rows are read and dropped. With sync, each
// connection is then synced (outside a batch, which would sync it).
func (e *Exec) End(sync bool) []*backend.Conn {
	_ = e.Finish(true)
	for _, b := range e.Conns() {
		if sync && !b.Broken && b.Send(&pgproto3.Sync{}) == nil && b.Flush() == nil {
			_ = b.DrainUntilReady(nil)
		}
	}
	return e.Conns()
}

// Suspended is a session's suspended portals, by name. Their connections
// are busy: nothing else may use them before the portal ends.
type Suspended map[string]Portal

// Busy returns an error if b (nil: any connection) serves a suspended
// portal.
func (h Suspended) Busy(b *backend.Conn) error {
	return h.busy(func(c *backend.Conn) bool { return b == nil || c == b })
}

// BusyOn returns an error if a suspended portal holds a connection to
// cluster: a session uses one connection per cluster at a time (and with
// one connection per cluster in the pool, waiting for another would wait
// for itself).
func (h Suspended) BusyOn(cluster string) error {
	return h.busy(func(c *backend.Conn) bool { return c.Cluster() == cluster })
}

func (h Suspended) busy(match func(*backend.Conn) bool) error {
	for name, p := range h {
		for _, c := range p.Conns() {
			if match(c) {
				return sqlerr.New(sqlerr.FeatureNotSupported, "cluster %s is still reading the rows of portal \"%s\", suspended by a row limit", c.Cluster(), name).
					WithHint("Fetch the portal's remaining rows or close it first.")
			}
		}
	}
	return nil
}

// End finishes the suspended portal name, if any (the portal is closed):
// its rows are dropped. With sync, its connections are then synced
// (outside a batch, which would sync them); it returns the ones the
// caller's batch must sync otherwise.
func (h Suspended) End(name string, sync bool) []*backend.Conn {
	p, ok := h[name]
	if !ok {
		return nil
	}
	delete(h, name)
	return p.End(sync)
}

// EndAll ends every suspended portal (see End).
func (h Suspended) EndAll(sync bool) (conns []*backend.Conn) {
	for name := range h {
		conns = append(conns, h.End(name, sync)...)
	}
	return conns
}
