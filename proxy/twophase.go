package proxy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/pgwire"
	"github.com/shardgate/shardgate/sqlerr"
)

// Two-phase commit (DESIGN.md, "Routing semantics"): a transaction that
// wrote on more than one cluster is prepared on every one of them
// (PREPARE TRANSACTION), the decision to commit is recorded in the main
// group's shardgate schema, and only then is each prepared transaction
// committed (COMMIT PREPARED). A proxy that dies between the phases leaves
// prepared transactions behind; recovery (at start-up and periodically)
// commits those whose decision was recorded and rolls back the rest, so
// every such transaction ends complete on every cluster or on none.

// CommitMode chooses how a transaction that wrote on several clusters ends.
type CommitMode string

// Commit modes, as in the topology's proxy.commit.
const (
	CommitTwoPhase   CommitMode = "two_phase"
	CommitBestEffort CommitMode = "best_effort"
)

// gidPrefix marks prepared transactions that belong to shardgate.
const gidPrefix = "shardgate_"

const decisionDDL = `CREATE SCHEMA IF NOT EXISTS shardgate;
CREATE TABLE IF NOT EXISTS shardgate.commit_decisions (
    gid          text PRIMARY KEY,
    participants text[] NOT NULL,
    decided_at   timestamptz NOT NULL DEFAULT now()
)`

// failpoint names a place in the commit protocol where tests stop the
// proxy as a crash would.
type failpoint string

const (
	failAfterPrepare  failpoint = "after-prepare"  // prepared everywhere, no decision yet
	failAfterDecision failpoint = "after-decision" // decision recorded, nothing committed
)

// errCrash is what a failpoint returns: the session behaves as if the proxy
// died (its connections are dropped without cleanup).
var errCrash = sqlerr.New("57P01", "shardgate stopped during two-phase commit (test failpoint)")

type twoPhase struct {
	srv      *Server
	proxyID  string
	seq      atomic.Uint64
	ddlOnce  sync.Mutex
	ddlDone  bool
	failAt   failpoint
	abortAge time.Duration // prepared transactions without a decision older than this are rolled back
}

func newTwoPhase(srv *Server) *twoPhase {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return &twoPhase{srv: srv, proxyID: hex.EncodeToString(b), abortAge: srv.cfg.InDoubtTimeout}
}

// ensureSchema creates the decision log on main once.
func (tp *twoPhase) ensureSchema(ctx context.Context, conn *backend.Conn) error {
	tp.ddlOnce.Lock()
	defer tp.ddlOnce.Unlock()
	if tp.ddlDone {
		return nil
	}
	err := conn.SimpleExec(decisionDDL, nil)
	if lostCreateRace(err) {
		err = conn.SimpleExec(decisionDDL, nil)
	}
	if err != nil {
		return err
	}
	tp.ddlDone = true
	return nil
}

// lostCreateRace reports the error of CREATE ... IF NOT EXISTS that ran
// concurrently with the same statement elsewhere (recovery, another
// proxy): both see no schema, one fails on the catalog's unique index.
// Running it again finds the object.
func lostCreateRace(err error) bool {
	switch pgwire.ErrCode(err) {
	case "23505", "42P06", "42P07":
		return true
	}
	return false
}

// commit ends tx with two-phase commit. written lists the clusters the
// transaction wrote on (two or more); the others are committed plainly.
func (ss *session) commitTwoPhase(tx *txState) error {
	tp := ss.srv.twopc
	r := ss.srv.cur.Load()
	gid := fmt.Sprintf("%s%s_%d_%d", gidPrefix, tp.proxyID, ss.pid, tp.seq.Add(1))
	var participants []string
	for _, c := range tx.order {
		if tx.wrote[c] {
			participants = append(participants, c)
		}
	}
	// Read-only clusters first: nothing of theirs needs to be atomic.
	for _, c := range tx.order {
		if !tx.wrote[c] {
			b := tx.conns[c]
			_ = b.SimpleExec("COMMIT", nil)
			ss.releaseConn(b)
		}
	}
	// Phase one.
	var prepared []string
	var failed error
	for _, c := range participants {
		b := tx.conns[c]
		if b.Broken {
			failed = pgwire.ConnLost(c, errBrokenConn)
			break
		}
		if err := b.SimpleExec("PREPARE TRANSACTION '"+gid+"'", nil); err != nil {
			failed = pgwire.Annotate(err, c)
			if b.Broken {
				failed = pgwire.ConnLost(c, err)
			}
			break
		}
		if b.TxStatus != 'I' {
			// PREPARE of an aborted transaction rolls it back.
			failed = sqlerr.New("40001", "could not prepare the transaction on cluster %s", c)
			break
		}
		prepared = append(prepared, c)
	}
	if failed == nil && tp.failAt == failAfterPrepare {
		ss.crash(tx)
		return errCrash
	}
	if failed == nil {
		failed = ss.recordDecision(r, tx, gid, participants)
	}
	if failed != nil {
		for _, c := range participants {
			b := tx.conns[c]
			if b.Broken {
				continue
			}
			if contains(prepared, c) {
				_ = b.SimpleExec("ROLLBACK PREPARED '"+gid+"'", nil)
			} else {
				_ = b.SimpleExec("ROLLBACK", nil)
			}
		}
		for _, c := range participants {
			ss.releaseConn(tx.conns[c])
		}
		return failed
	}
	if tp.failAt == failAfterDecision {
		ss.crash(tx)
		return errCrash
	}
	// Phase two. The decision is durable: a failure here is repaired by
	// recovery, so the client is told the transaction committed.
	for _, c := range participants {
		b := tx.conns[c]
		if err := b.SimpleExec("COMMIT PREPARED '"+gid+"'", nil); err != nil {
			ss.srv.log.Warn("COMMIT PREPARED failed; recovery will finish it", "gid", gid, "cluster", c, "err", err)
		}
		ss.releaseConn(b)
	}
	go ss.srv.forgetDecision(gid)
	return nil
}

// recordDecision writes the commit decision on main. When main's cluster
// is a participant, its connection is idle once PREPARE TRANSACTION has
// detached the transaction from it, and records the decision: taking a
// second pooled connection there while holding one deadlocks as soon as
// as many sessions commit at once as the pool has connections.
func (ss *session) recordDecision(r *routing, tx *txState, gid string, participants []string) error {
	main := r.vs.Main().Clusters[0]
	b := tx.conns[main]
	if b == nil || b.Broken || !tx.wrote[main] || b.TxStatus != 'I' {
		var err error
		if b, err = r.pools[main].Acquire(context.Background()); err != nil {
			return err
		}
		defer r.pools[main].Release(b)
	}
	if err := ss.srv.twopc.ensureSchema(context.Background(), b); err != nil {
		return pgwire.Annotate(err, main)
	}
	q := fmt.Sprintf("INSERT INTO shardgate.commit_decisions (gid, participants) VALUES (%s, ARRAY[%s]::text[])",
		pgwire.QuoteLiteral(gid), joinQuoted(participants))
	if err := b.SimpleExec(q, nil); err != nil {
		return pgwire.Annotate(err, main)
	}
	return nil
}

// crash drops the transaction's connections without ending anything, as a
// dead proxy would: prepared transactions stay behind for recovery.
func (ss *session) crash(tx *txState) {
	for _, c := range tx.order {
		b := tx.conns[c]
		b.Broken = true
		ss.releaseConn(b)
	}
}

func (s *Server) forgetDecision(gid string) {
	r := s.cur.Load()
	main := r.vs.Main().Clusters[0]
	b, err := r.pools[main].Acquire(context.Background())
	if err != nil {
		return
	}
	defer r.pools[main].Release(b)
	_ = b.SimpleExec("DELETE FROM shardgate.commit_decisions WHERE gid = "+pgwire.QuoteLiteral(gid), nil)
}

// Recover resolves in-doubt prepared transactions of shardgate on every
// cluster: committed where the decision was recorded, rolled back where it
// was not and the transaction is older than the in-doubt timeout. It
// returns how many it committed and rolled back.
func (s *Server) Recover(ctx context.Context) (committed, rolledBack int, err error) {
	r := s.cur.Load()
	mainDSN := ""
	for _, c := range r.topo.Clusters {
		if c.Name == r.vs.Main().Clusters[0] {
			mainDSN = c.DSN
		}
	}
	mc, err := pgx.Connect(ctx, mainDSN)
	if err != nil {
		return 0, 0, err
	}
	defer mc.Close(ctx)
	_, err = mc.Exec(ctx, decisionDDL)
	if lostCreateRace(err) {
		_, err = mc.Exec(ctx, decisionDDL)
	}
	if err != nil {
		return 0, 0, err
	}
	for _, c := range r.topo.Clusters {
		conn, err := pgx.Connect(ctx, c.DSN)
		if err != nil {
			s.log.Warn("2PC recovery: cluster unreachable", "cluster", c.Name, "err", err)
			continue
		}
		rows, err := conn.Query(ctx, `SELECT gid, now() - prepared > make_interval(secs => $1) FROM pg_prepared_xacts
			WHERE database = current_database() AND gid LIKE 'shardgate\_%'`, s.twopc.abortAge.Seconds())
		type pending struct {
			gid string
			old bool
		}
		var list []pending
		if err == nil {
			for rows.Next() {
				var p pending
				if err := rows.Scan(&p.gid, &p.old); err == nil {
					list = append(list, p)
				}
			}
			rows.Close()
		}
		for _, p := range list {
			var decided bool
			if err := mc.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM shardgate.commit_decisions WHERE gid = $1)", p.gid).Scan(&decided); err != nil {
				continue
			}
			switch {
			case decided:
				if _, err := conn.Exec(ctx, "COMMIT PREPARED "+pgwire.QuoteLiteral(p.gid)); err == nil {
					committed++
				}
			case p.old:
				if _, err := conn.Exec(ctx, "ROLLBACK PREPARED "+pgwire.QuoteLiteral(p.gid)); err == nil {
					rolledBack++
				}
			}
		}
		conn.Close(ctx)
	}
	// Decisions whose transactions are all finished can go.
	_, _ = mc.Exec(ctx, `DELETE FROM shardgate.commit_decisions WHERE decided_at < now() - interval '1 hour'`)
	return committed, rolledBack, nil
}

// recoverLoop runs Recover at start-up and then periodically.
func (s *Server) recoverLoop(ctx context.Context, every time.Duration) {
	for {
		c, rb, err := s.Recover(ctx)
		if err != nil {
			s.log.Warn("2PC recovery failed; will retry", "err", err)
		} else if c+rb > 0 {
			s.log.Info("2PC recovery resolved in-doubt transactions", "committed", c, "rolled_back", rb)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func joinQuoted(list []string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = pgwire.QuoteLiteral(s)
	}
	return strings.Join(q, ", ")
}
