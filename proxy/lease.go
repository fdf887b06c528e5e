package proxy

import (
	"context"
	"errors"

	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/pgwire"
	"github.com/shardgate/shardgate/sqlerr"
)

var errBrokenConn = errors.New("connection broken earlier in the transaction")

func errUnknownCluster(c string) error {
	return sqlerr.New("08006", "cluster %s is not in the current topology", c)
}

// txState is an open transaction of a session: the backend connections it
// has touched (each with its own transaction, opened lazily) and what must
// be replayed on a connection that joins late.
type txState struct {
	// implicit marks the transaction Postgres wraps around a multi-statement
	// Query, or that the proxy wraps around one multi-cluster write.
	implicit bool
	begin    string // BEGIN statement with its options
	conns    map[string]*backend.Conn
	order    []string // clusters in the order they joined
	savepts  []string
	failed   bool
	// saved is the session's settings before the transaction: SET inside a
	// transaction is undone by its rollback.
	saved         map[string]string
	settingsDirty bool
	// wrote marks the clusters the transaction changed data on: two or
	// more make the commit two-phase.
	wrote map[string]bool
}

func newTx(implicit bool, begin string, settings map[string]string) *txState {
	cp := make(map[string]string, len(settings))
	for k, v := range settings {
		cp[k] = v
	}
	if begin == "" {
		begin = "BEGIN"
	}
	return &txState{implicit: implicit, begin: begin, conns: map[string]*backend.Conn{}, saved: cp, wrote: map[string]bool{}}
}

// acquire takes a connection of cluster from the pool (or the session's
// held one in session mode) with this session's settings applied.
func (ss *session) acquire(r *routing, cluster string) (*backend.Conn, error) {
	if b, ok := ss.held[cluster]; ok && !b.Broken {
		return b, nil
	}
	p := r.pools[cluster]
	if p == nil {
		return nil, errUnknownCluster(cluster)
	}
	ctx := context.Background()
	var cancel context.CancelFunc
	if ss.srv.cfg.MaxWait > 0 {
		ctx, cancel = context.WithTimeout(ctx, ss.srv.cfg.MaxWait+ss.srv.cfg.ConnectTimeout)
		defer cancel()
	}
	b, err := p.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	if b.SettingsKey != ss.settingsKey && ss.settings != nil {
		if err := b.SimpleExec(ss.settingsSQL(), nil); err != nil {
			b.SettingsKey = ""
			if b.Broken {
				p.Release(b)
				return nil, pgwire.ConnLost(cluster, err)
			}
			p.Release(b)
			return nil, err
		}
		b.SettingsKey = ss.settingsKey
	}
	if (ss.srv.cfg.PoolMode == PoolSession || ss.pinned) && ss.held != nil {
		ss.held[cluster] = b
	}
	return b, nil
}

// releaseConn gives a connection back unless the session holds it.
func (ss *session) releaseConn(b *backend.Conn) {
	if b == nil {
		return
	}
	if h, ok := ss.held[b.Cluster()]; ok && h == b {
		if b.Broken {
			delete(ss.held, b.Cluster())
			b.Release()
		}
		return
	}
	b.Release()
}

// connFor returns the connection a statement should use on cluster: the
// transaction's own if the session is in one (opening the backend
// transaction and replaying savepoints on first use), else a fresh lease
// the caller must release with releaseConn.
func (ss *session) connFor(r *routing, cluster string) (*backend.Conn, error) {
	if ss.tx != nil {
		if b, ok := ss.tx.conns[cluster]; ok {
			return b, nil
		}
	}
	b, err := ss.acquire(r, cluster)
	if err != nil {
		return nil, err
	}
	if ss.tx == nil {
		return b, nil
	}
	sql := ss.tx.begin + ";"
	for _, sp := range ss.tx.savepts {
		sql += "SAVEPOINT " + pgwire.QuoteIdent(sp) + ";"
	}
	if err := b.SimpleExec(sql, nil); err != nil {
		broken := b.Broken
		if b.TxStatus != 'I' && !broken {
			_ = b.SimpleExec("ROLLBACK", nil)
		}
		ss.releaseConn(b)
		if broken {
			return nil, pgwire.ConnLost(cluster, err)
		}
		return nil, err
	}
	ss.tx.conns[cluster] = b
	ss.tx.order = append(ss.tx.order, cluster)
	return b, nil
}

// inTx reports whether conn b belongs to the open transaction (and so must
// not be released after a statement).
func (ss *session) inTx(b *backend.Conn) bool {
	if ss.tx == nil {
		return false
	}
	return ss.tx.conns[b.Cluster()] == b
}

// finishStatement releases connections leased for one statement outside a
// transaction.
func (ss *session) finishStatement(conns []*backend.Conn) {
	ss.setRunning(nil)
	for _, b := range conns {
		if !ss.inTx(b) {
			if b.TxStatus != 'I' && !b.Broken {
				// A statement that left a transaction open outside a
				// client transaction (e.g. a bare BEGIN sent by a function)
				// is rolled back: connections return clean.
				_ = b.SimpleExec("ROLLBACK", nil)
			}
			ss.releaseConn(b)
		}
	}
}

// endTx commits or rolls back every backend transaction, in join order
// (best effort: each cluster commits on its own), and returns the first
// error.
func (ss *session) endTx(commit bool) error {
	tx := ss.tx
	ss.tx = nil
	if tx == nil {
		return nil
	}
	if commit && !tx.failed && ss.srv.cfg.Commit == CommitTwoPhase && len(tx.wrote) > 1 {
		err := ss.commitTwoPhase(tx)
		if tx.settingsDirty {
			for _, b := range tx.conns {
				b.SettingsKey = ""
			}
			if err != nil {
				ss.settings = tx.saved
				ss.recomputeSettingsKey()
			}
		}
		return err
	}
	var first error
	verb := "ROLLBACK"
	if commit && !tx.failed {
		verb = "COMMIT"
	}
	for _, cluster := range tx.order {
		b := tx.conns[cluster]
		if b.Broken {
			if first == nil {
				first = pgwire.ConnLost(cluster, errBrokenConn)
			}
			ss.releaseConn(b)
			continue
		}
		err := b.SimpleExec(verb, nil)
		if err != nil && first == nil {
			if b.Broken {
				first = pgwire.ConnLost(cluster, err)
			} else {
				first = pgwire.Annotate(err, cluster)
			}
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
