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

// Suspended is a session's suspended merges, by portal name. Their
// connections are busy: nothing else may use them before the merge ends.
type Suspended map[string]*Exec

// Busy returns an error if b (nil: any connection) serves a suspended
// merge.
func (h Suspended) Busy(b *backend.Conn) error {
	for name, e := range h {
		for _, s := range e.Streams {
			if b == nil || s.b == b {
				return sqlerr.New(sqlerr.FeatureNotSupported, "cluster %s is still reading the rows of portal \"%s\", which runs on several shards", s.b.Cluster(), name).
					WithHint("Fetch the portal's remaining rows or close it first.")
			}
		}
	}
	return nil
}

// End finishes the suspended merge of portal name, if any (the portal is
// closed): its rows are read and dropped. With sync, each connection is
// then synced (outside a batch, which would sync it); it returns the
// merge's connections.
func (h Suspended) End(name string, sync bool) []*backend.Conn {
	e, ok := h[name]
	if !ok {
		return nil
	}
	delete(h, name)
	_ = e.Finish(true)
	var conns []*backend.Conn
	for _, s := range e.Streams {
		conns = append(conns, s.b)
		if sync && !s.b.Broken && s.b.Send(&pgproto3.Sync{}) == nil && s.b.Flush() == nil {
			_ = s.b.DrainUntilReady(nil)
		}
	}
	return conns
}

// EndAll ends every suspended merge (see End).
func (h Suspended) EndAll(sync bool) (conns []*backend.Conn) {
	for name := range h {
		conns = append(conns, h.End(name, sync)...)
	}
	return conns
}
