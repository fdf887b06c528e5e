package workflows

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
)

// catchUp bounds a stream between two copy cycles (cycles.go): it ends
// before the first transaction the next cycle's snapshot (gate) does not
// see, or once the stream has passed until, a WAL position written after
// that snapshot was taken.
type catchUp struct {
	gate  snapshot
	until pglogrepl.LSN
}

// stream applies the changes of one source's slot to the targets until
// ctx ends. Each source transaction becomes one transaction per target
// cluster it touches, which also records its end LSN there; a target
// skips transactions it has already recorded, so a restart applies each
// change once. The slot is told only LSNs every target has applied.
func (r *Runner) stream(ctx context.Context, s *source) error { return r.streamUntil(ctx, s, nil) }

// walPage is Postgres's WAL page size (XLOG_BLCKSZ, 8 KiB unless built
// otherwise): the most an idle server's flush position is past its last
// record.
const walPage = 8192

// streamUntil streams, until ctx ends or, with cu, until the catch-up
// ends (nil). A catch-up closes its replication connection when it ends:
// the next one resumes from what the slot was told.
func (r *Runner) streamUntil(ctx context.Context, s *source, cu *catchUp) (err error) {
	targets, closeTargets, err := r.connectTargets(ctx)
	if err != nil {
		return err
	}
	defer closeTargets()
	for _, c := range targets {
		// The tables that do not serve refuse writes with a trigger
		// (switch.go); the stream's writes are a replica's, which it
		// does not fire for.
		if _, err := c.Exec(ctx, "SET session_replication_role = replica"); err != nil {
			return fmt.Errorf("target: %w", err)
		}
	}
	ap := &applier{r: r, source: s.Cluster, src: s.conn, targets: targets, rels: map[uint32]*relInfo{}, ctx: ctx}
	if err := ap.readApplied(ctx); err != nil {
		return err
	}
	if err := ap.readCycles(ctx); err != nil {
		return err
	}
	if s.repl == nil {
		if s.repl, err = pgconn.Connect(ctx, replicationDSN(s.DSN)); err != nil {
			return fmt.Errorf("source %s: replication connection: %w", s.Cluster, err)
		}
	}
	var processed, walEnd pglogrepl.LSN
	var hold *vdiffHold // a vdiff's stop position (vdiffstop.go); none during a catch-up
	if cu == nil {
		hold = &vdiffHold{r: r, source: s.Cluster}
		if err := hold.refresh(ctx); err != nil {
			return err
		}
	}
	if cu != nil {
		defer func() {
			if err == nil {
				err = pglogrepl.SendStandbyStatusUpdate(ctx, s.repl, pglogrepl.StandbyStatusUpdate{WALWritePosition: processed})
			}
			s.repl.Close(context.Background())
			s.repl = nil
		}()
	}
	err = pglogrepl.StartReplication(ctx, s.repl, slotName(r.id, s.Cluster), 0, pglogrepl.StartReplicationOptions{
		PluginArgs: []string{"proto_version '1'", "publication_names '" + pubName(r.id) + "'", "messages 'true'"},
	})
	if err != nil {
		return fmt.Errorf("source %s: start replication: %w", s.Cluster, err)
	}
	var commitTime time.Time // of the last transaction applied
	inTx := false
	marker := "" // the switch marker of the transaction being read
	next := time.Now()
	// applyPending applies the group of committed source transactions
	// (applier.flush) and acknowledges it.
	applyPending := func() error {
		_, err := ap.flush(ctx)
		if end := ap.flushed; err == nil && end > 0 {
			processed = max(processed, end)
			r.setProcessed(s.Cluster, processed)
		}
		return err
	}
	// holdAt stops the stream for a vdiff when what comes next starts at
	// or after its stop position: everything before is applied first.
	holdAt := func(next pglogrepl.LSN) error {
		if !hold.reached(next) {
			return nil
		}
		if err := applyPending(); err != nil {
			return err
		}
		return hold.wait(ctx, s.repl, processed, maxLSN(ap.applied), next)
	}
	for {
		if ap.due() || time.Now().After(next) && ap.pending != nil {
			if err := applyPending(); err != nil {
				return err
			}
		}
		if time.Now().After(next) {
			if err := pglogrepl.SendStandbyStatusUpdate(ctx, s.repl, pglogrepl.StandbyStatusUpdate{WALWritePosition: processed}); err != nil {
				return fmt.Errorf("source %s: status update: %w", s.Cluster, err)
			}
			if processed > 0 {
				// The walsender's WAL end trails the source under load: ask
				// the source for its WAL position — the flush position, the
				// most the walsender can send (the insert position of an idle
				// server may sit in a WAL page never flushed: the WAL writer
				// writes whole pages but for async commits). The flush
				// position is itself the end of the last page written, past
				// the last record: a source within one WAL page of what the
				// stream has is shown as caught up. With synchronous_commit
				// off a commit is flushed within wal_writer_delay; the switch
				// does not rely on this position (it awaits its own marker).
				var cur pglogrepl.LSN
				var curText string
				if err := s.conn.QueryRow(ctx, "SELECT pg_current_wal_flush_lsn()::text").Scan(&curText); err == nil {
					cur, _ = pglogrepl.ParseLSN(curText)
				} else if ctx.Err() != nil {
					return ctx.Err()
				}
				at := max(walEnd, processed)
				if cur > at+walPage {
					at = cur
				}
				if err := r.store.streamProgress(ctx, r.id, s.Cluster, processed.String(), at.String(), commitTime); err != nil {
					return err
				}
			}
			// Between transactions what is applied is consistent: a
			// requested stop ends the stream here.
			if err := r.checkStop(ctx); err != nil {
				return err
			}
			if hold != nil && !inTx {
				if err := hold.refresh(ctx); err != nil {
					return err
				}
				if err := holdAt(processed); err != nil {
					return err
				}
			}
			next = time.Now().Add(time.Second)
		}
		deadline := next
		if g := ap.pendingSince.Add(groupWait); ap.pending != nil && g.Before(deadline) {
			deadline = g
		}
		rctx, cancel := context.WithDeadline(ctx, deadline)
		raw, err := s.repl.ReceiveMessage(rctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if pgconn.Timeout(err) {
				continue
			}
			return fmt.Errorf("source %s: receive: %w", s.Cluster, err)
		}
		switch m := raw.(type) {
		case *pgproto3.ErrorResponse:
			return fmt.Errorf("source %s: %w", s.Cluster, pgconn.ErrorResponseToPgError(m))
		case *pgproto3.CopyData:
			switch m.Data[0] {
			case pglogrepl.PrimaryKeepaliveMessageByteID:
				k, err := pglogrepl.ParsePrimaryKeepaliveMessage(m.Data[1:])
				if err != nil {
					return err
				}
				walEnd = max(walEnd, k.ServerWALEnd)
				if !inTx && ap.pending == nil {
					processed = max(processed, k.ServerWALEnd)
					r.setProcessed(s.Cluster, processed)
				}
				if k.ReplyRequested {
					next = time.Time{}
				}
				if cu != nil && !inTx && k.ServerWALEnd >= cu.until {
					return applyPending()
				}
				if !inTx {
					if err := holdAt(k.ServerWALEnd); err != nil {
						return err
					}
				}
			case pglogrepl.XLogDataByteID:
				x, err := pglogrepl.ParseXLogData(m.Data[1:])
				if err != nil {
					return err
				}
				walEnd = max(walEnd, x.ServerWALEnd)
				msg, err := pglogrepl.Parse(x.WALData)
				if err != nil {
					return fmt.Errorf("source %s: decode: %w", s.Cluster, err)
				}
				switch msg := msg.(type) {
				case *pglogrepl.BeginMessage:
					if cu != nil && !cu.gate.visible(msg.Xid) {
						// Streamed again after the next cycle's copy.
						return applyPending()
					}
					if err := holdAt(msg.FinalLSN); err != nil {
						return err
					}
					inTx = true
					ap.begin(msg)
				case *pglogrepl.CommitMessage:
					ap.committed(msg.TransactionEndLSN)
					inTx = false
					commitTime = msg.CommitTime
					if marker != "" {
						// A switch blocked the source's writes and asks when
						// everything before is applied: now. The stream then
						// waits for the switch's outcome.
						if err := applyPending(); err != nil {
							return err
						}
						if err := r.store.markerApplied(context.WithoutCancel(ctx), r.id, s.Cluster, marker); err != nil {
							return err
						}
						if !strings.HasPrefix(marker, syncPrefix) { // (one written before the hold: no wait)
							r.logf("workflow %d: %s caught up for switch %s", r.id, s.Cluster, marker)
							if err := r.awaitSwitch(ctx); err != nil {
								return err
							}
						}
						marker = ""
					}
					if cu != nil && msg.TransactionEndLSN >= cu.until {
						return applyPending()
					}
				case *pglogrepl.LogicalDecodingMessage:
					if msg.Prefix == switchMarker {
						marker = string(msg.Content)
					}
					if msg.Prefix == ddlPrefix && msg.Transactional && inTx {
						if err := ap.ddl(msg.Content); err != nil {
							return fmt.Errorf("source %s: %w", s.Cluster, err)
						}
					}
					if msg.Prefix == vdiffFence && !inTx {
						if err := holdAt(msg.LSN); err != nil {
							return err
						}
					}
				default:
					if err := ap.change(msg); err != nil {
						return fmt.Errorf("source %s: %w", s.Cluster, err)
					}
				}
			}
		}
	}
}

func (r *Runner) setProcessed(source string, lsn pglogrepl.LSN) {
	r.mu.Lock()
	r.processed[source] = lsn
	r.mu.Unlock()
}

// Processed returns, per source cluster, the LSN before which every
// change has been applied by this runner.
func (r *Runner) Processed() map[string]pglogrepl.LSN {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]pglogrepl.LSN{}
	for k, v := range r.processed {
		out[k] = v
	}
	return out
}
