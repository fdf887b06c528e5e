package twopc

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/shardgate/shardgate/sqlerr"
)

// Resolver finishes in-doubt prepared transactions of shardgate on every
// cluster and forgets decisions nobody needs any more. Passes are
// serialised; several resolvers (other proxies) may run at once.
type Resolver struct {
	cfg   Config
	hooks hookSet
	mu    sync.Mutex
}

// Result counts what one resolver pass finished.
type Result struct {
	Committed  int // COMMIT PREPARED that succeeded
	RolledBack int // ROLLBACK PREPARED that succeeded
	Forgotten  int // decisions deleted as no longer needed
}

// NewResolver returns a resolver.
func NewResolver(cfg Config) *Resolver {
	return &Resolver{cfg: cfg.withDefaults()}
}

// SetHooks installs test failpoints.
func (r *Resolver) SetHooks(h Hooks) { r.hooks.set(h) }

// Run resolves at once and then every interval until ctx ends.
func (r *Resolver) Run(ctx context.Context, every time.Duration) {
	for {
		res, err := r.Resolve(ctx)
		if err != nil {
			r.cfg.Logger.Warn("2PC recovery failed; will retry", "err", err)
		} else if res.Committed+res.RolledBack > 0 {
			r.cfg.Logger.Info("2PC recovery resolved in-doubt transactions", "committed", res.Committed, "rolled_back", res.RolledBack)
		}
		t := time.NewTimer(every)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// decision is a row of the decision log.
type decision struct {
	gid          string
	outcome      Outcome
	participants []string
	expired      bool // an abort row past its retention
}

// Resolve makes one pass: every prepared shardgate transaction on every
// reachable cluster is committed or rolled back as its decision says
// (deciding 'abort' for those undecided past the in-doubt timeout), then
// the decisions that existed before the pass and that no cluster needs any
// more are deleted. It fails only when main is unreachable; an unreachable
// cluster is skipped (and keeps the decisions it may need).
func (r *Resolver) Resolve(ctx context.Context) (Result, error) {
	return r.pass(ctx, func(mc pgConn, main string, dsns map[string]string, res *Result) error {
		now := r.cfg.Now()
		// Decisions are read before any cluster is listed: every PREPARE of a
		// gid precedes its commit decision, so a listing taken afterwards shows
		// each of them that is still prepared.
		known, err := readDecisions(ctx, mc, now.Add(-AbortRetentionFactor*r.cfg.InDoubtTimeout))
		if err != nil {
			return fmt.Errorf("2PC recovery: reading decisions on %s: %w", main, err)
		}
		held := map[string]map[string]bool{} // cluster → gids prepared there, after the pass
		names := make([]string, 0, len(dsns))
		for name := range dsns {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			h, err := r.resolveCluster(ctx, mc, name, dsns[name], now.Add(-r.cfg.InDoubtTimeout), res)
			if err != nil {
				if err == errMainLost {
					return err
				}
				r.cfg.Logger.Warn("2PC recovery: cluster skipped", "cluster", name, "err", err)
				continue
			}
			held[name] = h
		}
		n, err := forget(ctx, mc, known, held, names)
		res.Forgotten = n
		return err
	})
}

// ResolveCluster is a pass over one cluster only, for a cluster that is
// reachable again after a failure: what is decided for the transactions
// it holds prepared is carried out at once, so their locks do not wait
// for the next full pass. Decisions are left to full passes to forget.
// An unknown cluster is nothing to do.
func (r *Resolver) ResolveCluster(ctx context.Context, cluster string) (Result, error) {
	return r.pass(ctx, func(mc pgConn, main string, dsns map[string]string, res *Result) error {
		dsn, ok := dsns[cluster]
		if !ok {
			return nil
		}
		_, err := r.resolveCluster(ctx, mc, cluster, dsn, r.cfg.Now().Add(-r.cfg.InDoubtTimeout), res)
		return err
	})
}

// pass runs one resolver pass, serialised with the others, on a
// connection to main with the decision log in place, and reports what it
// finished (Config.Resolved) whatever its outcome.
func (r *Resolver) pass(ctx context.Context, body func(mc pgConn, main string, dsns map[string]string, res *Result) error) (Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var res Result
	if r.cfg.Resolved != nil {
		defer func() { r.cfg.Resolved(res) }()
	}
	main, dsns := r.cfg.Clusters()
	mc, err := dial(ctx, dsns[main], r.cfg.ConnectTimeout)
	if err != nil {
		return res, sqlerr.New(sqlerr.ConnectionFailure, "2PC recovery: main cluster %s is unreachable: %v", main, err)
	}
	defer mc.close()
	if err := ensureSchema(ctx, mc); err != nil {
		return res, fmt.Errorf("2PC recovery: decision log on %s: %w", main, err)
	}
	err = body(mc, main, dsns, &res)
	return res, err
}

var errMainLost = sqlerr.New(sqlerr.ConnectionFailure, "2PC recovery: lost the connection to the main cluster")

type prepared struct {
	gid  string // the decision's
	name string // prepared under, on this cluster
	old  bool   // prepared before the in-doubt cutoff
}

func listPrepared(ctx context.Context, c pgConn, cluster string, cutoff time.Time) ([]prepared, error) {
	rows, err := c.query(ctx, `SELECT gid, prepared < `+timestampLiteral(cutoff)+` FROM pg_catalog.pg_prepared_xacts
WHERE database = current_database() AND gid LIKE 'shardgate\_%'`)
	if err != nil {
		return nil, err
	}
	out := make([]prepared, len(rows))
	for i, row := range rows {
		out[i] = prepared{gid: DecisionGID(row[0], cluster), name: row[0], old: row[1] == "t"}
	}
	return out, nil
}

// resolveCluster finishes what is decided on one cluster and returns the
// gids still prepared there afterwards.
func (r *Resolver) resolveCluster(ctx context.Context, mc pgConn, name, dsn string, cutoff time.Time, res *Result) (map[string]bool, error) {
	if dsn == "" {
		return nil, sqlerr.New(sqlerr.ConnectionFailure, "cluster %s has no DSN", name)
	}
	c, err := dial(ctx, dsn, r.cfg.ConnectTimeout)
	if err != nil {
		return nil, err
	}
	defer c.close()
	list, err := listPrepared(ctx, c, name, cutoff)
	if err != nil {
		return nil, err
	}
	hooks := r.hooks.get()
	for _, p := range list {
		var o Outcome
		if p.old {
			if hooks.BeforePropose != nil {
				hooks.BeforePropose(p.gid)
			}
			o, err = settle(ctx, mc, p.gid, []string{name})
		} else {
			o, err = readDecision(ctx, mc, p.gid)
		}
		if err != nil {
			if indefinite(err) {
				return nil, errMainLost
			}
			r.cfg.Logger.Warn("2PC recovery: no decision", "gid", p.gid, "err", err)
			continue
		}
		verb := ""
		switch o {
		case Commit:
			verb = "COMMIT PREPARED "
		case Abort:
			verb = "ROLLBACK PREPARED "
		case "":
			continue // undecided and young: its coordinator may be deciding
		default:
			r.cfg.Logger.Warn("2PC recovery: unknown outcome left alone", "gid", p.gid, "outcome", o)
			continue
		}
		if hooks.BeforeFinish != nil {
			hooks.BeforeFinish(p.gid, name, o)
		}
		if err := c.Exec(ctx, verb+quoteLiteral(p.name)); err != nil {
			// 42704: someone else finished it meanwhile. Anything else is
			// retried by the next pass.
			if code(err) != undefinedObject {
				r.cfg.Logger.Warn("2PC recovery: could not finish", "gid", p.gid, "cluster", name, "outcome", o, "err", err)
			}
			continue
		}
		r.cfg.Logger.Info("2PC recovery decision carried out", "gid", p.gid, "cluster", name, "outcome", string(o),
			"proposed_abort", p.old)
		if o == Commit {
			res.Committed++
		} else {
			res.RolledBack++
		}
	}
	after, err := listPrepared(ctx, c, name, cutoff)
	if err != nil {
		return nil, err
	}
	h := make(map[string]bool, len(after))
	for _, p := range after {
		h[p.gid] = true
	}
	return h, nil
}

func readDecision(ctx context.Context, mc pgConn, gid string) (Outcome, error) {
	row, found, err := mc.QueryRow(ctx, "SELECT outcome FROM shardgate.commit_decisions WHERE gid = "+quoteLiteral(gid))
	if err != nil || !found {
		return "", err
	}
	return Outcome(row[0]), nil
}

func readDecisions(ctx context.Context, mc pgConn, retention time.Time) ([]decision, error) {
	rows, err := mc.query(ctx, `SELECT gid, outcome, array_to_json(participants), decided_at < `+timestampLiteral(retention)+`
FROM shardgate.commit_decisions`)
	if err != nil {
		return nil, err
	}
	out := make([]decision, 0, len(rows))
	for _, row := range rows {
		d := decision{gid: row[0], outcome: Outcome(row[1]), expired: row[3] == "t"}
		if err := json.Unmarshal([]byte(row[2]), &d.participants); err != nil {
			return nil, fmt.Errorf("participants of %s: %w", d.gid, err)
		}
		out = append(out, d)
	}
	return out, nil
}

// forget deletes the decisions of known that no cluster needs: every
// cluster that could hold the gid (the participants of a commit; every
// cluster of the topology, and the participants, for an abort) was
// listed after the pass and holds it no more. Abort rows go only past
// their retention.
func forget(ctx context.Context, mc pgConn, known []decision, held map[string]map[string]bool, all []string) (int, error) {
	del := map[Outcome][]string{}
	for _, d := range known {
		check := d.participants
		switch d.outcome {
		case Commit:
		case Abort:
			if !d.expired {
				continue
			}
			check = append(append([]string(nil), check...), all...)
		default:
			continue
		}
		needed := false
		for _, cl := range check {
			h, listed := held[cl]
			if !listed || h[d.gid] {
				needed = true
				break
			}
		}
		if !needed {
			del[d.outcome] = append(del[d.outcome], d.gid)
		}
	}
	n := 0
	for _, o := range []Outcome{Commit, Abort} {
		gids := del[o]
		for len(gids) > 0 {
			chunk := gids[:min(len(gids), forgetBatch)]
			gids = gids[len(chunk):]
			if err := mc.Exec(ctx, "DELETE FROM shardgate.commit_decisions WHERE outcome = "+quoteLiteral(string(o))+" AND gid IN ("+joinQuoted(chunk)+")"); err != nil {
				return n, fmt.Errorf("2PC recovery: forgetting decisions: %w", err)
			}
			n += len(chunk)
		}
	}
	return n, nil
}
