package proxy

import (
	"strings"

	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/gsi"
	"github.com/shardgate/shardgate/pgwire"
	"github.com/shardgate/shardgate/planner"
	"github.com/shardgate/shardgate/sessionstate"
	"github.com/shardgate/shardgate/sqlerr"
)

// Transactions: a session's transaction state over every cluster it
// touched, and the transaction control statements.

// txState is an open transaction of a session: the backend connections it
// has touched (each with its own transaction, opened lazily) and what must
// be replayed on a connection that joins late.
type txState struct {
	// implicit marks the transaction Postgres wraps around a multi-statement
	// Query, or that the proxy wraps around one multi-cluster write.
	implicit bool
	begin    string // BEGIN statement with its options
	// isolation is the transaction's isolation level, once a read
	// through an index as the service identity asked (snapshot.go).
	isolation string
	conns     map[string]*backend.Conn
	order     []string // clusters in the order they joined
	// replay is what a cluster joining late runs after begin: SET
	// TRANSACTION, SET LOCAL, SET CONSTRAINTS and savepoints, in order.
	replay sessionstate.TxReplay
	failed bool
	// columns is set once the transaction ran DDL (columns.go).
	columns *txColumns
	// saved is the session's settings before the transaction: SET inside a
	// transaction is undone by its rollback.
	saved         map[string]string
	settingsDirty bool
	// wrote marks the clusters the transaction changed data on: two or
	// more make the commit two-phase.
	wrote   map[string]bool
	gateSeq uint64 // the switch gate's arming when it began (Gate.Hold)
	// pulledOn: the coordinator a read over intermediate results made
	// temporary tables on ("": none; see intermediate.MarkWrites).
	pulledOn string
	gsi      bool         // wrote entries of global secondary indexes: two-phase in either commit mode
	lookups  *gsi.Pending // or, begun under best_effort, wrote them in the consistent-lookup order
	// svc are the service identity's connections that wrote the entries
	// of a session running as its own role, by lookup cluster (gsisvc.go).
	svc      map[string]*backend.Conn
	svcOrder []string
	// target is the transaction's SET LOCAL shardgate.target ("": none;
	// replicas.go).
	target string
	// readOnlyOptIn: target came from the transaction's READ ONLY
	// declaration (proxy.reads.read_only_transactions).
	readOnlyOptIn bool
}

func (ss *session) newTx(implicit bool, begin string) *txState {
	cp := make(map[string]string, len(ss.settings))
	for k, v := range ss.settings {
		cp[k] = v
	}
	if begin == "" {
		begin = "BEGIN"
	}
	return &txState{implicit: implicit, begin: begin, conns: map[string]*backend.Conn{}, saved: cp, wrote: map[string]bool{}, gateSeq: ss.srv.cfg.Gate.Seq()}
}

// endTx commits or rolls back every backend transaction, in join order
// (best effort: each cluster commits on its own), and returns the first
// error.
func (ss *session) endTx(commit bool) (err error) {
	ss.suspended.EndAll(true) // before the connections answer COMMIT or ROLLBACK
	tx := ss.tx
	ss.tx = nil
	defer ss.columnsTxEnd(tx) // once it committed or rolled back
	if tx == nil {
		return nil
	} else if l := tx.lookups; l != nil { // commit: best_effort's lookup entries (gsi.Pending)
		return l.End(commit && !tx.failed, func(c bool) error { ss.tx, tx.lookups = tx, nil; return ss.endTx(c) })
	}
	defer func() {
		if commit && !tx.failed && err == nil {
			tx.replay.CommitListens(ss.listening)
		}
	}()
	clear(ss.portals) // a transaction's portals end with it
	ss.srv.metrics.Transaction()
	if commit && !tx.failed && (ss.srv.live.Load().commit == CommitTwoPhase || tx.gsi) && len(tx.wrote)+len(tx.svc) > 1 {
		for _, b := range tx.conns {
			if tx.settingsDirty { // before commitTwoPhase gives the connections back
				b.SettingsKey = ""
			}
		}
		err := ss.commitTwoPhase(tx)
		if tx.settingsDirty && err != nil {
			ss.settings = tx.saved
			ss.recomputeSettingsKey()
		}
		return err
	}
	var first error
	verb := endTag[commit && !tx.failed]
	for _, b := range tx.all() {
		cluster := b.Cluster()
		if b.Broken {
			if first == nil {
				first = pgwire.ConnLost(cluster, backend.ErrBroken)
			}
			ss.releaseConn(b)
			continue
		}
		err := b.SimpleExec(verb, nil)
		if err != nil && first == nil {
			first = b.ClusterErr(err)
			// Later clusters: a failed commit on one means the rest roll
			// back, so the damage stays on the clusters already committed.
			verb = "ROLLBACK"
		}
		if tx.settingsDirty {
			b.SettingsKey = ""
		}
		ss.releaseConn(b)
	}
	if tx.settingsDirty && !(commit && !tx.failed && first == nil) {
		ss.settings = tx.saved
		ss.recomputeSettingsKey()
	}
	return first
}

// abortTx rolls back everything, ignoring errors (client gone, or a fatal
// error).
func (ss *session) abortTx() { _ = ss.endTx(false) }

func (ss *session) execBegin(plan *planner.Plan) error {
	opts := ""
	if plan.Tx != nil {
		opts = plan.Tx.Options
	}
	begin := "BEGIN"
	if opts != "" {
		begin += " " + opts
	}
	switch {
	case ss.tx == nil:
		ss.tx = ss.newTx(false, begin)
	case ss.tx.implicit:
		ss.tx.implicit = false
		ss.tx.begin = begin
	default:
		if err := ss.notice("25001", "there is already a transaction in progress"); err != nil {
			return err
		}
	}
	tag := "BEGIN"
	if strings.HasPrefix(strings.ToUpper(strings.TrimSpace(plan.SQL)), "START") {
		tag = "START TRANSACTION"
	}
	return ss.complete(tag)
}

func (ss *session) execEnd(plan *planner.Plan) error {
	commit := plan.Kind == planner.Commit
	if ss.tx == nil || ss.tx.implicit {
		if err := ss.notice("25P01", "there is no transaction in progress"); err != nil {
			return err
		}
		if ss.tx != nil {
			if err := ss.endTx(commit && !ss.tx.failed); err != nil {
				return err
			}
		}
		return ss.complete(endTag[commit])
	}
	failed := ss.tx.failed
	begin := ss.tx.begin
	readOnly := ss.tx.readOnlyOptIn
	characteristics := ss.tx.replay.Characteristics()
	if err := ss.endTx(commit && !failed); err != nil {
		return err
	}
	if plan.Tx != nil && plan.Tx.Chain {
		// AND CHAIN: a new transaction with the same characteristics,
		// BEGIN's modes and those set since, on every cluster it joins.
		ss.tx = ss.newTx(false, begin)
		ss.tx.replay.Local(characteristics...)
		if readOnly {
			ss.noteReadOnly(true)
		}
	}
	return ss.complete(endTag[commit && !failed])
}

// endTag is the command tag of COMMIT (true) and ROLLBACK.
var endTag = map[bool]string{true: "COMMIT", false: "ROLLBACK"}

func (ss *session) execSavepoint(plan *planner.Plan) error {
	name := ""
	if plan.Tx != nil {
		name = plan.Tx.Name
	}
	if ss.tx == nil || ss.tx.implicit {
		word := map[planner.StmtKind]string{planner.Savepoint: "SAVEPOINT", planner.Release: "RELEASE SAVEPOINT", planner.RollbackTo: "ROLLBACK TO SAVEPOINT"}[plan.Kind]
		return sqlerr.New("25P01", "%s can only be used in transaction blocks", word)
	}
	if plan.Kind != planner.Savepoint && !ss.tx.replay.HasSavepoint(name) {
		ss.tx.failed = true
		return sqlerr.New("3B001", "savepoint \"%s\" does not exist", name)
	}
	var first error
	for _, b := range ss.tx.all() {
		if err := b.SimpleExec(plan.SQL, nil); err != nil && first == nil {
			first = b.ClusterErr(err)
		}
	}
	if first != nil {
		return first
	}
	switch plan.Kind {
	case planner.Savepoint:
		ss.tx.replay.Savepoint(name)
		return ss.complete("SAVEPOINT")
	case planner.Release:
		ss.tx.replay.Release(name)
		return ss.complete("RELEASE")
	default:
		ss.tx.replay.RollbackTo(name)
		ss.tx.failed = false
		return ss.complete("ROLLBACK")
	}
}
