package proxy

import (
	"context"
	"errors"
	"time"

	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/sqlerr"
	"github.com/shardgate/shardgate/twopc"
)

// Two-phase commit (docs/transactions.md) is package twopc; this
// file is the glue: it hands twopc the transaction's backend connections
// and a connection to main, and tells it where the clusters are.

// CommitMode chooses how a transaction that wrote on several clusters ends.
type CommitMode string

// Commit modes, as in the topology's proxy.commit.
const (
	CommitTwoPhase   CommitMode = "two_phase"
	CommitBestEffort CommitMode = "best_effort"
)

// twoPhase is the server's coordinator and resolver.
type twoPhase struct {
	coord *twopc.Coordinator
	res   *twopc.Resolver
}

func newTwoPhase(s *Server) *twoPhase {
	cfg := twopc.Config{
		Clusters:       s.clusterDSNs,
		InDoubtTimeout: s.cfg.InDoubtTimeout,
		ConnectTimeout: s.cfg.ConnectTimeout,
		Logger:         s.log,
		Resolved:       func(r twopc.Result) { s.metrics.Recovered(r.Committed, r.RolledBack) },
	}
	if s.cfg.twopcTune != nil {
		s.cfg.twopcTune(&cfg)
	}
	return &twoPhase{coord: twopc.NewCoordinator(cfg), res: twopc.NewResolver(cfg)}
}

// clusterDSNs is the current topology's main cluster and DSNs: where
// each cluster's pool dials now (after a failover the promoted standby,
// never the fenced host the writes left).
func (s *Server) clusterDSNs() (string, map[string]string) {
	r := s.cur.Load()
	dsns := make(map[string]string, len(r.topo.Clusters))
	for _, c := range r.topo.Clusters {
		dsns[c.Name] = c.DSN
		if p := r.pools[c.Name]; p != nil {
			dsns[c.Name] = p.DSN()
		}
	}
	return r.vs.Main().Clusters[0], dsns
}

// commitTwoPhase ends tx, which wrote on two or more clusters, with
// two-phase commit; the clusters it only read are committed plainly first.
func (ss *session) commitTwoPhase(tx *txState) error {
	r := ss.srv.cur.Load()
	var parts []twopc.Participant
	for _, c := range tx.order {
		b := tx.conns[c]
		if tx.wrote[c] {
			parts = append(parts, b)
			continue
		}
		_ = b.SimpleExec("COMMIT", nil)
		ss.releaseConn(b)
	}
	for _, c := range tx.svcOrder { // the GSI entries written as the service identity (gsisvc.go)
		parts = append(parts, gsiPart{tx.svc[c]})
	}
	ss.srv.metrics.TwoPhase("prepared")
	err := ss.srv.twopc.coord.Commit(context.Background(), parts, ss.decisionConn(r, tx))
	ss.srv.metrics.TwoPhaseEnd(sqlerr.Code(err))
	for _, p := range parts {
		b, ok := p.(*backend.Conn)
		if !ok {
			b = p.(gsiPart).Conn
		}
		if errors.Is(err, twopc.ErrAbandoned) {
			// A test failpoint: drop the connections as a dead proxy
			// would, leaving the prepared transactions behind.
			b.Broken = true
		}
		ss.releaseConn(b)
	}
	return err
}

// decisionConn lends twopc a connection to main. When main's cluster is a
// participant, its connection is idle once PREPARE TRANSACTION has detached
// the transaction from it, and records the decision: taking a second pooled
// connection there while holding one deadlocks as soon as as many sessions
// commit at once as the pool has connections.
func (ss *session) decisionConn(r *routing, tx *txState) twopc.MainConn {
	main := r.vs.Main().Clusters[0]
	return func(ctx context.Context) (twopc.DecisionConn, func(), error) {
		if r.pools[main] == nil {
			return nil, nil, errUnknownCluster(main)
		}
		if ss.login.User != "" { // the client's role: the service identity records it
			return ss.srv.decide.of(ss.srv, r).Borrow(ctx)
		}
		if b := tx.conns[main]; b != nil && tx.wrote[main] && !b.Broken && b.TxStatus == 'I' {
			return b, func() {}, nil
		}
		return r.pools[main].Borrow(ctx)
	}
}

// Recover resolves in-doubt prepared transactions of shardgate on every
// cluster (see twopc.Resolver) and returns how many it committed and
// rolled back.
func (s *Server) Recover(ctx context.Context) (committed, rolledBack int, err error) {
	res, err := s.twopc.res.Resolve(ctx)
	return res.Committed, res.RolledBack, err
}

// resolveWhenBack makes the pool of a cluster that is reachable again
// after a failure run recovery for that cluster at once: transactions
// decided 'commit' while it was down release their locks there without
// waiting for the next periodic pass. Without the recovery loop (a
// RecoverEvery below 0) it does nothing.
func (s *Server) resolveWhenBack(p *backend.Pool) {
	if s.cfg.RecoverEvery < 0 {
		return
	}
	cluster := p.Cluster()
	p.OnReachable(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		res, err := s.twopc.res.ResolveCluster(ctx, cluster)
		switch {
		case err != nil:
			s.log.Warn("2PC recovery of a cluster back from a failure failed; the periodic pass retries", "cluster", cluster, "err", err)
		case res.Committed+res.RolledBack > 0:
			s.log.Info("2PC recovery of a cluster back from a failure", "cluster", cluster, "committed", res.Committed, "rolled_back", res.RolledBack)
		}
	})
}

// recoverLoop runs recovery at start-up and then periodically.
func (s *Server) recoverLoop(ctx context.Context, every time.Duration) {
	s.twopc.res.Run(ctx, every)
}
