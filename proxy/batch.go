package proxy

import (
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/merge"
	"github.com/shardgate/shardgate/pgwire"
	"github.com/shardgate/shardgate/planner"
	"github.com/shardgate/shardgate/routestate"
)

// The extended protocol's batches: the responses a batch expects, in
// client order, and how they are read from the backends and relayed.

// expect is one step of a batch's response, in client order: either a
// message the proxy makes, or messages to read from backends.
type expect struct {
	synth pgwire.Encodable

	conns []*backend.Conn
	until string // message types ending this step, besides ErrorResponse
	relay bool   // relay the step's messages (else swallow them)
	multi bool   // several backends: rows concatenated, tags summed
	mode  planner.RouteMode
	stmt  *clientStmt
	// targets, for an Execute, let the relay put a split INSERT's
	// RETURNING rows in statement order (see merge.Reorder).
	targets []planner.Target
	// onOK runs after the step completed without error; onErr when a backend reported one.
	onOK  func()
	onErr func()
	// done, for a client's Execute, counts the statement (observe) once its answer is read.
	done func(error)
	exec func()           // if set, the whole step: the merge executor's (merges.go)
	one  [1]*backend.Conn // conns of a step on one backend (step)
}

// batch is the extended-protocol work between two Syncs.
type batch struct {
	gateSeq   uint64 // Gate.Enter's
	ss        *session
	r         *routing
	queue     []*expect
	dropping  bool // an error was reported: skip to Sync
	errorSent bool
	// quiet runs an SQL EXECUTE (sqlprepare.go) inside a simple Query:
	// no BindComplete, NoData or ReadyForQuery.
	quiet bool
	// pool holds the expects made by step, reused from batch to batch of the
	// session (used of them handed out); synced is sync's scratch.
	pool   []*expect
	used   int
	synced []*backend.Conn
	// limited are the connections of merges executed with a row limit in
	// this batch: Sync goes to them only once their merge is over (see sync).
	limited []*backend.Conn
}

// runBatch executes the buffered extended-protocol messages. With sync it
// ends the batch (ReadyForQuery); otherwise (Flush) it delivers what is ready.
func (ss *session) runBatch(sync bool) {
	bt := ss.extBatch()
	ss.ext = nil
	bt.run(ss.extMsgs, sync)
	ss.srv.cfg.Gate.Leave(bt.gateSeq)
	ss.srv.cfg.Gate.Answered(ss.heldAt)
	ss.heldAt = time.Time{}
	ss.extMsgs = ss.extMsgs[:0]
	ss.extStore().copier.Reset()
	ss.extFailed = bt.dropping && !sync
}

// extStorage is what the extended protocol reuses from batch to batch: a
// session that never uses it (an idle client's) holds none.
type extStorage struct {
	copier pgwire.MessageCopier // extMsgs' storage
	batch  batch                // the storage extBatch reuses
}

func (ss *session) extStore() *extStorage {
	if ss.store == nil {
		ss.store = &extStorage{}
	}
	return ss.store
}

func (ss *session) extBatch() *batch {
	if ss.ext != nil {
		return ss.ext
	}
	g := ss.srv.cfg.Gate
	seq := g.Enter() // left at the end of runBatch, or by cleanup
	if g.Armed() {
		ss.heldAt = g.Hold(ss.tx != nil && ss.tx.gateSeq != g.Seq() && len(ss.tx.conns) > 0, func() []string { return routestate.MessageSQL(ss.extMsgs, ss.stmtSQL) })
	}
	bt := &ss.extStore().batch // reused, with the storage of its queue and steps
	*bt = batch{ss: ss, r: ss.srv.cur.Load(), dropping: ss.extFailed, queue: bt.queue[:0], pool: bt.pool, synced: bt.synced[:0], limited: bt.limited[:0], gateSeq: seq}
	return bt
}

// pushBatch runs the messages read so far when the client pauses before
// the batch's Sync or Flush: what they send to backends is written at
// once, and their answers are read at the Sync. The backend then sees
// each message when Postgres would have (its statement_timeout starts at the Parse, not at the Sync).
func (ss *session) pushBatch() {
	bt := ss.extBatch()
	ss.ext = bt
	bt.steps(ss.extMsgs)
	ss.extMsgs = ss.extMsgs[:0]
	ss.extStore().copier.Reset()
	for _, b := range ss.batchOrder {
		if !b.Broken {
			_ = b.Flush()
		}
	}
}

// beforeRead runs before each read from the client (ClientReader): a read
// that may wait for the client first pushes what it sent so far.
func (ss *session) beforeRead() {
	if len(ss.extMsgs) > 0 {
		ss.pushBatch()
	}
}

func (bt *batch) run(msgs []pgproto3.FrontendMessage, sync bool) {
	bt.steps(msgs)
	if sync {
		bt.sync()
	} else {
		bt.flushBackends()
		bt.drain()
	}
}

// steps plans the messages and sends them on, queueing the answers they expect.
func (bt *batch) steps(msgs []pgproto3.FrontendMessage) {
	ss := bt.ss
	for _, m := range msgs {
		if bt.dropping {
			break
		}
		var err error
		switch m := m.(type) {
		case *pgproto3.Parse:
			err = bt.parse(m)
		case *pgproto3.Bind:
			err = bt.bind(m)
		case *pgproto3.Describe:
			err = bt.describe(m)
		case *pgproto3.Execute:
			err = bt.execute(m)
		case *pgproto3.Close:
			if m.ObjectType == 'S' {
				ss.dropStmt(m.Name)
				bt.synth(&pgproto3.CloseComplete{})
			} else {
				err = bt.closePortal(m.Name)
			}
		}
		if err != nil {
			bt.fail(err)
		}
	}
}

func (bt *batch) synth(m pgwire.Encodable) { bt.step(nil, expect{synth: m}) }

// step queues e, kept in one of the batch's reused steps (handed out
// again once drain ran them); with b, its conns are b alone.
func (bt *batch) step(b *backend.Conn, e expect) *expect {
	if bt.used == len(bt.pool) {
		bt.pool = append(bt.pool, new(expect))
	}
	p := bt.pool[bt.used]
	*p, bt.used, bt.queue = e, bt.used+1, append(bt.queue, p)
	if b != nil {
		p.one[0], p.conns = b, p.one[:]
	}
	return p
}

func (bt *batch) fail(err error) {
	bt.queue = append(bt.queue, &expect{synth: pgwire.ErrorResponse(err, "ERROR")})
	bt.dropping = true
	if bt.ss.tx != nil {
		bt.ss.tx.failed = true
	}
}

// stepFailed reports an error met while the batch's answers are read:
// once per batch, and the rest of the batch is skipped.
func (bt *batch) stepFailed(err error) {
	if !bt.errorSent {
		_ = bt.ss.sendError(err)
		bt.errorSent = true
	}
	bt.dropping = true
	if bt.ss.tx != nil {
		bt.ss.tx.failed = true
	}
}

// conn returns the batch's connection to cluster, leasing one if needed.
func (bt *batch) conn(cluster string) (*backend.Conn, error) {
	ss := bt.ss
	if b, ok := ss.batchConns[cluster]; ok {
		return b, ss.suspended.Busy(b)
	}
	b, err := ss.connFor(bt.r, cluster)
	if err != nil {
		return nil, err
	}
	bt.adopt(b)
	bt.closeForgotten(b)
	return b, nil
}

// adopt makes conns (leased for the batch, or of a portal bound in an
// earlier batch of the transaction) part of this batch: flushed and synced with it.
func (bt *batch) adopt(conns ...*backend.Conn) {
	for _, b := range conns {
		if bt.ss.batchConns[b.Cluster()] != b {
			if bt.ss.batchConns == nil {
				bt.ss.batchConns = map[string]*backend.Conn{}
			}
			bt.ss.batchConns[b.Cluster()] = b
			bt.ss.batchOrder = append(bt.ss.batchOrder, b)
		}
	}
}

// txConn is conn, made part of the session's transaction if there is one.
func (bt *batch) txConn(cluster string) (*backend.Conn, error) {
	b, err := bt.conn(cluster)
	if err != nil {
		return nil, err
	}
	if tx := bt.ss.tx; tx != nil && tx.conns[cluster] != b {
		if err := bt.joinTx(b); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// dropReleased takes out of the batch the connections of a transaction
// that ended in its middle (COMMIT, ROLLBACK): they went back to the pool,
// and the rest of the batch leases anew.
func (bt *batch) dropReleased(owned map[string]*backend.Conn) {
	ss := bt.ss
	kept := ss.batchOrder[:0]
	for _, b := range ss.batchOrder {
		if c := b.Cluster(); owned[c] == b && ss.held[c] != b {
			delete(ss.batchConns, c)
			continue
		}
		kept = append(kept, b)
	}
	ss.batchOrder = kept
}

func (bt *batch) flushBackends() {
	for _, b := range bt.ss.batchOrder {
		if !b.Broken {
			_ = b.Send(&pgproto3.Flush{})
			_ = b.Flush()
		}
	}
}

// drain delivers every queued step in order.
func (bt *batch) drain() {
	ss := bt.ss
	for _, e := range bt.queue {
		if e.exec != nil {
			e.exec()
			continue
		}
		if e.synth != nil {
			// Responses queued before the batch's first error are
			// delivered; after it, nothing but that error (Postgres skips to Sync).
			if !bt.errorSent && !(bt.quiet && pgwire.IsAck(e.synth)) {
				_ = ss.send(e.synth)
			}
			if _, ok := e.synth.(*pgproto3.ErrorResponse); ok {
				bt.errorSent = true
			}
			continue
		}
		bt.readStep(e)
	}
	bt.queue, bt.used = bt.queue[:0], 0
	ss.setRunning(nil) // once per drain, not per step
}

// readStep reads one step's messages from its backends.
func (bt *batch) readStep(e *expect) {
	ss := bt.ss
	rl := merge.NewRelay(ss.mergeClient(), e.mode == planner.ModeReplicate, e.conns)
	if e.targets != nil && e.relay {
		rl.Order = merge.NewReorder(e.targets)
	}
	var stepErr error
	ran := false
	for _, b := range e.conns {
		if b.Broken || ss.errored[b] {
			if e.onErr != nil {
				e.onErr() // skipped by the backend (as after an error): undone
			}
			continue
		}
		ran = true
		ss.setRunning(e.conns)
		for stop := pgwire.Types(e.until); ; {
			if e.relay && !bt.errorSent && rl.Bulk(b, stop) {
				continue // rows passed on in one copy
			}
			m, err := b.Read()
			if err != nil {
				stepErr = pgwire.ConnLost(b.Cluster(), err)
				break
			}
			if m.Type == 'E' {
				ss.markErrored(b)
				if stepErr == nil {
					stepErr = pgwire.NewBackendError(m.Body, b.Cluster(), nil)
				}
				break
			}
			if m.Type == 't' && e.stmt != nil {
				var pd pgproto3.ParameterDescription
				if pd.Decode(m.Body) == nil {
					e.stmt.paramOIDs = append([]uint32(nil), pd.ParameterOIDs...)
					old := e.stmt.key
					e.stmt.key = backend.StatementKey(e.stmt.sql, e.stmt.paramOIDs, e.stmt.gen)
					// Keep the backend's name for the new key too.
					if name, ok := b.Prepared[old]; ok {
						b.Prepared[e.stmt.key] = name
						e.stmt.preparedOn(b.Pool(), e.stmt.key)
					}
				}
			}
			if (m.Type == 'T' || m.Type == 'n') && e.stmt != nil && e.relay && !bt.errorSent {
				e.stmt.shape.note(b.Cluster(), m.Type, m.Body) // the client's Describe (recheck)
			}
			end := len(e.until) > 0 && strings.IndexByte(e.until, m.Type) >= 0
			if e.relay && !bt.errorSent {
				if m.Type == 'G' {
					// COPY inside the extended protocol would need the
					// client's CopyData before Sync; refuse it cleanly.
					_ = b.Send(&pgproto3.CopyFail{Message: "COPY through the extended protocol is not supported by shardgate"})
					_ = b.Flush()
					continue
				}
				rl.HandleStep(b, m, bt.quiet)
			}
			if end {
				break
			}
		}
	}
	if stepErr == nil && e.relay && !bt.errorSent {
		_ = rl.Finish() // before done: the summed tag is the statement's rows (observe)
	}
	if e.done != nil && ran {
		e.done(stepErr)
	}
	if stepErr != nil {
		if e.onErr != nil {
			e.onErr()
		}
		bt.stepFailed(stepErr)
		return
	}
	if e.onOK != nil && !bt.errorSent {
		e.onOK()
	}
}

// failedBatchPortal names no portal: its Execute fails a backend's
// implicit transaction (sync).
const failedBatchPortal = "shardgate_batch_failed"

// sync ends the batch: Sync to every backend used, drain, read their
// ReadyForQuery, give back connections outside a transaction.
func (bt *batch) sync() {
	ss := bt.ss
	var failed []*backend.Conn // made to fail before their Sync
	syncAll := func(early bool) {
		for _, b := range ss.batchOrder {
			if b.Broken || slices.Contains(bt.synced, b) || ss.suspended.Busy(b) != nil {
				continue
			}
			if early && slices.Contains(bt.limited, b) {
				_, _ = b.Send(&pgproto3.Flush{}), b.Flush()
				continue
			}
			bt.synced = append(bt.synced, b)
			if early && bt.dropping && ss.tx == nil && !ss.errored[b] {
				// The batch failed before its Sync in the proxy (a
				// statement refused or not sent): the backend's implicit
				// transaction must not commit what the batch ran on it
				// before, as Postgres rolls the whole batch back. An
				// Execute of no portal fails it there (34000, not shown).
				_ = b.Send(&pgproto3.Execute{Portal: failedBatchPortal})
				failed = append(failed, b)
			}
			_, _ = b.Send(&pgproto3.Sync{}), b.Flush()
		}
	}
	// Sync goes with the batch, before its answers are read, except to
	// the shards of a merge a row limit may suspend: their answers are
	// read by the merge's readers while it is suspended, and a Sync's
	// ReadyForQuery would be read there in the middle of them.
	syncAll(true)
	bt.drain()
	if ss.tx == nil {
		bt.adopt(ss.suspended.EndAll(false)...) // portals end at Sync outside a transaction block
	}
	syncAll(false) // connections of merges that ended
	for _, b := range ss.batchOrder {
		if b.Broken || !slices.Contains(bt.synced, b) {
			continue // a suspended merge's, in a transaction block
		}
		// An error here came at Sync: the implicit transaction's commit
		// (a deferred constraint). Postgres reports it before ReadyForQuery.
		if err := b.DrainUntilReady(nil); err != nil && !bt.errorSent && !slices.Contains(failed, b) {
			bt.stepFailed(b.ClusterErr(err))
		}
	}
	if err := ss.spread(ss.spreadAtSync); err != nil && !bt.errorSent {
		bt.stepFailed(err)
	}
	ss.spreadAtSync = ""
	ss.errored = nil
	conns := ss.batchOrder
	ss.batchOrder = nil
	clear(ss.batchConns)
	ss.finishStatement(conns)
	if ss.batchOrder == nil {
		ss.batchOrder = conns[:0] // its storage, for the next batch
	}
	ss.extFailed, ss.batchOn, ss.batchWrote = false, "", false
	if ss.extTx {
		// The transaction bind opened for a write on several clusters
		// ends with the batch, unless the client made it its own (BEGIN).
		ss.extTx = false
		if ss.tx != nil && ss.tx.implicit {
			if err := ss.endTx(!ss.tx.failed); err != nil && !bt.errorSent {
				_ = ss.sendError(err)
				bt.errorSent = true
			}
		}
	}
	if ss.tx == nil {
		// Outside a transaction block Sync ends the implicit transaction
		// and its portals with it, as in Postgres.
		clear(ss.portals)
	}
	if !bt.quiet {
		ss.ready()
	}
}

func (ss *session) markErrored(b *backend.Conn) {
	if ss.errored == nil {
		ss.errored = map[*backend.Conn]bool{}
	}
	ss.errored[b] = true
}
