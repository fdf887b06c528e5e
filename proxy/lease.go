package proxy

import (
	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/pgwire"
	"github.com/shardgate/shardgate/sqlerr"
)

func errUnknownCluster(c string) error {
	return sqlerr.New("08006", "cluster %s is not in the current topology", c)
}

// acquire takes a connection of cluster from the pool (or the session's
// held one in session mode) with this session's settings applied.
func (ss *session) acquire(r *routing, cluster string) (*backend.Conn, error) {
	b, held := ss.held[cluster]
	if err := ss.suspended.BusyOn(cluster); err != nil {
		return nil, err
	}
	if held && !b.Broken && ss.heldMismatch(b) != nil {
		if b.SettingsUnseen {
			ss.checkUnseen(b) // adopts what unseen code set, or pins
		}
		if ss.pinnedNow() || b.TxStatus != 'I' && !b.Broken {
			return nil, ss.heldMismatch(b)
		}
		// Held for session pooling only, and between transactions: it
		// goes back to its pool (closed there if the check broke it), and
		// a connection of the kind of host the target asks for is taken
		// (and held) instead.
		delete(ss.held, cluster)
		b.Release()
		held = false
	}
	if !held || b.Broken {
		var err error
		if b, err = ss.lease(r, cluster); err != nil {
			return nil, err
		}
		ss.poolWait += b.LeaseWait
		held = false
		b.SetClient(ss.pid)
	}
	return ss.withSettings(b, held, cluster)
}

// withSettings applies the session's settings to b, acquired for cluster
// (held: the session's own, kept in session mode).
func (ss *session) withSettings(b *backend.Conn, held bool, cluster string) (*backend.Conn, error) {
	if b.SettingsKey != ss.settingsKey && ss.settings != nil {
		if err := b.SimpleExec(ss.settingsSQL(), nil); err != nil {
			b.SettingsKey = ""
			if !held || b.Broken {
				ss.releaseConn(b)
			}
			if b.Broken {
				return nil, pgwire.ConnLost(cluster, err)
			}
			return nil, err
		}
		b.SettingsKey = ss.settingsKey
	}
	if (ss.srv.cfg.PoolMode == PoolSession || ss.pinnedNow()) && ss.held != nil {
		ss.held[cluster] = b
	}
	return b, nil
}

// lease takes a connection of cluster from the pool of the host the
// session's target picks (replicas.go). A standby that cannot be reached
// is banned and the next one tried, then (prefer_replica) the primary.
func (ss *session) lease(r *routing, cluster string) (*backend.Conn, error) {
	var failed []*backend.Standby
	for {
		p, sb, err := ss.poolFor(r, cluster, failed)
		if err != nil {
			return nil, err
		}
		if p == nil {
			return nil, errUnknownCluster(cluster)
		}
		var b *backend.Conn // the pool bounds the wait and a dial; a cancel ends the wait
		if ss.noWait {      // start-up's probe (startparams.go)
			b, err = p.TryAcquire()
		} else {
			ss.waiting.Store(true)
			b, err = p.AcquireAs(ss.stopWait, ss.login)
			ss.waiting.Store(false)
		}
		if err == nil || sb == nil || !standbyDown(err) {
			return b, err
		}
		sb.Fail(err)
		failed = append(failed, sb)
	}
}

// releaseConn gives a connection back unless the session holds it.
func (ss *session) releaseConn(b *backend.Conn) {
	if b == nil {
		return
	}
	if b.SettingsUnseen {
		ss.checkUnseen(b)
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
			b.SettingsUnseen = b.SettingsUnseen || ss.unseen
			return b, ss.suspended.Busy(b)
		}
	}
	b, err := ss.acquire(r, cluster)
	if err != nil {
		return nil, err
	}
	return ss.useConn(b)
}

// useConn makes b, acquired, the statement's: the transaction's, if the
// session is in one.
func (ss *session) useConn(b *backend.Conn) (*backend.Conn, error) {
	// Checked before it leaves the session (releaseConn, unseen.go).
	b.SettingsUnseen = b.SettingsUnseen || ss.unseen
	if ss.tx == nil {
		return b, nil
	}
	if err := ss.joinTx(b); err != nil {
		return nil, err
	}
	return b, nil
}

// joinTx makes b, leased and idle, the transaction's connection to its
// cluster; on failure b is given back.
func (ss *session) joinTx(b *backend.Conn) error {
	cluster := b.Cluster()
	if err := b.SimpleExec(ss.tx.replay.SQL(ss.tx.begin), nil); err != nil {
		broken := b.Broken
		if b.TxStatus != 'I' && !broken {
			_ = b.SimpleExec("ROLLBACK", nil)
		}
		ss.releaseConn(b)
		if broken {
			return pgwire.ConnLost(cluster, err)
		}
		return err
	}
	ss.tx.conns[cluster] = b
	ss.tx.order = append(ss.tx.order, cluster)
	return nil
}

// inTx reports whether conn b belongs to the open transaction (and so must
// not be released after a statement).
func (ss *session) inTx(b *backend.Conn) bool {
	if ss.tx == nil {
		return false
	}
	return ss.tx.conns[b.Cluster()] == b
}

// finishStatement releases connections leased for one statement outside a transaction.
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
