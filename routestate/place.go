package routestate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/shardgate/shardgate/keyexpr"
	"github.com/shardgate/shardgate/sqlerr"
	"github.com/shardgate/shardgate/topology"
	"github.com/shardgate/shardgate/vschema"
)

// Placement is a change of one directory entry (PlaceKey).
type Placement struct {
	Group string
	// Key is the key's value (for an expression index, the expression's
	// result), as text.
	Key string
	// To is the cluster the key goes to; "" removes its entry, sending
	// the key back to the function's shard.
	To string
	// Force changes the entry even if the key has rows on the cluster it
	// leaves. They are not moved: they stay where they are, unread.
	Force  bool
	Author string
	// Timeout bounds each wait: for every live proxy to serve a
	// revision, and for the transactions writing on the old cluster.
	Timeout time.Duration
}

// Placing is what PlaceKey did.
type Placing struct {
	Key      string // the key's canonical text (KeyText)
	From, To string // clusters before and after
	Changed  bool   // false: the key was already routed to To
	Rev      Revision
}

// PlaceKey sets (or removes) a lookup group's directory entry so that no
// proxy ever routes the key to two places at once:
//
//  1. a revision marks the entry pending: every proxy refuses the key
//     (55P03) once it installs it; PlaceKey waits until every live proxy
//     serves it;
//  2. on the cluster the key leaves, it waits until the transactions in
//     flight when the proxies stopped routing the key there have ended
//     (prepared ones included: the snapshot's xmin passes the xmax seen);
//  3. unless Force, it checks that no member table of the group has a row
//     of the key there; if one has, the entry goes back to what it was
//     (PlaceKey waits for the proxies to follow) and the change is
//     refused (55000);
//  4. a revision sets the entry (or removes it), and PlaceKey waits until
//     every live proxy serves it.
//
// Running it again after a crash in between settles a pending entry.
// clusterDSN gives a cluster's connection string.
func PlaceKey(ctx context.Context, main *pgx.Conn, file *topology.Topology, p Placement, clusterDSN func(string) string) (Placing, error) {
	rev, err := Load(ctx, main)
	if err != nil {
		return Placing{}, err
	}
	eff, err := Apply(file, rev)
	if err != nil {
		return Placing{}, err
	}
	tg := eff.Topology.Group(p.Group)
	g := eff.VSchema.Group(p.Group)
	if tg == nil || g == nil || tg.Unsharded {
		return Placing{}, sqlerr.New(sqlerr.UndefinedObject, "no sharded group %q", p.Group)
	}
	if !tg.Lookup() {
		return Placing{}, sqlerr.New(sqlerr.ObjectNotInPrerequisiteState, "group %q has no directory", p.Group).
			WithHint("Set placement: lookup on the group in the topology file.")
	}
	key, err := g.Index.KeyFromValue(keyexpr.Text(p.Key))
	if err != nil {
		return Placing{}, err
	}
	text := KeyText(key)
	if c := tg.ListCluster(text); c != "" {
		return Placing{}, sqlerr.New(sqlerr.InvalidParameterValue, "key %s of group %q is placed on cluster %s by the topology file's list", text, p.Group, c)
	}
	out := Placing{Key: text, To: p.To}
	fn, err := g.FunctionShard(key)
	if err != nil && p.To == "" {
		return Placing{}, err
	}
	if p.To == "" && fn != nil {
		out.To = fn.Cluster
	}
	if p.To != "" && !slices.Contains(tg.DirectoryClusters(), p.To) {
		return Placing{}, sqlerr.New(sqlerr.InvalidParameterValue, "group %q does not use cluster %s", p.Group, p.To).
			WithHint("Add it to the group's lookup_clusters (and create the group's tables there) first.")
	}
	prev := rev.State.Directory[p.Group][text]
	switch {
	case prev != nil && prev.Pending:
		out.From = prev.From // an earlier run stopped half-way
	case prev != nil:
		out.From = prev.Cluster
	case fn != nil:
		out.From = fn.Cluster
	}
	final := &Placed{Cluster: p.To}
	if p.To == "" {
		final = nil
	}
	if prev != nil && !prev.Pending && final != nil && prev.Cluster == final.Cluster || prev == nil && final == nil {
		out.Rev = rev
		return out, nil // nothing to change
	}
	reason := fmt.Sprintf("place %s key %s on %s", p.Group, text, out.To)
	if final == nil {
		reason = fmt.Sprintf("remove %s key %s from the directory", p.Group, text)
	}
	pending := &Placed{Cluster: p.To, Pending: true, From: out.From}
	if rev, err = setEntry(ctx, main, p.Group, text, pending, p.Author, reason+": pending"); err != nil {
		return out, err
	}
	if err := WaitServed(ctx, main, rev.Rev, p.Timeout); err != nil {
		return out, err
	}
	if out.From != "" && out.From != out.To {
		if err := checkLeft(ctx, out.From, clusterDSN(out.From), g, tg, key, text, p); err != nil {
			// The entry before (a pending one, left by an earlier run
			// stopped half-way, stays pending).
			back, rerr := setEntry(ctx, main, p.Group, text, prev, p.Author, reason+": refused")
			if rerr == nil {
				rerr = WaitServed(ctx, main, back.Rev, p.Timeout)
			}
			if rerr != nil {
				return out, fmt.Errorf("%w (and restoring the entry failed: %v; run the command again)", err, rerr)
			}
			return out, err
		}
	}
	if rev, err = setEntry(ctx, main, p.Group, text, final, p.Author, reason); err != nil {
		return out, err
	}
	if err := WaitServed(ctx, main, rev.Rev, p.Timeout); err != nil {
		return out, err
	}
	out.Changed, out.Rev = true, rev
	return out, nil
}

// checkLeft waits for the writers in flight on the cluster the key
// leaves, then (unless Force) refuses if a member table has rows of the
// key there.
func checkLeft(ctx context.Context, cluster, dsn string, g *vschema.Group, tg *topology.Group, key vschema.Key, text string, p Placement) error {
	c, cancel := context.WithTimeout(ctx, p.Timeout)
	defer cancel()
	conn, err := pgx.Connect(c, dsn)
	if err != nil {
		return fmt.Errorf("connect to the cluster the key leaves: %w", err)
	}
	defer conn.Close(context.Background())
	if err := waitWriters(c, conn); err != nil {
		return err
	}
	if p.Force {
		return nil
	}
	for _, t := range g.Tables {
		sql := fmt.Sprintf("SELECT EXISTS (SELECT 1 FROM %s WHERE %s = $1::%s)", quoteTable(t), keySQL(t, tg), tg.Index.Type)
		var found bool
		if err := conn.QueryRow(c, sql, text).Scan(&found); err != nil {
			return fmt.Errorf("look for rows of key %s in %s: %w", text, t, err)
		}
		if found {
			return sqlerr.New(sqlerr.ObjectNotInPrerequisiteState, "key %s of group %q has rows in table %s on cluster %s", key, p.Group, t, cluster).
				WithDetail("Changing its directory entry moves no rows: they would stay there, unread.").
				WithHint("Use --force to change the entry anyway (the rows are not moved).")
		}
	}
	return nil
}

func keySQL(t *vschema.Table, tg *topology.Group) string {
	if t.KeyColumn != "" {
		return keyexpr.QuoteIdentifier(t.KeyColumn)
	}
	return "(" + tg.Index.Expression.String() + ")"
}

func quoteTable(t *vschema.Table) string {
	return keyexpr.QuoteIdentifier(t.Schema) + "." + keyexpr.QuoteIdentifier(t.Name)
}

// waitWriters waits until every transaction holding a transaction id
// when it was called has ended: the snapshot's xmin reaches the xmax seen
// first (prepared transactions hold the xmin too).
func waitWriters(ctx context.Context, conn *pgx.Conn) error {
	var xmax string
	if err := conn.QueryRow(ctx, `SELECT pg_snapshot_xmax(pg_current_snapshot())::text`).Scan(&xmax); err != nil {
		return err
	}
	for {
		var done bool
		if err := conn.QueryRow(ctx, `SELECT pg_snapshot_xmin(pg_current_snapshot()) >= $1::xid8`, xmax).Scan(&done); err != nil {
			if ctx.Err() != nil {
				return sqlerr.New(sqlerr.LockNotAvailable, "transactions older than the change still run on the cluster the key leaves").
					WithHint("Find them in pg_stat_activity and pg_prepared_xacts, then run the command again.")
			}
			return err
		}
		if done {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// setEntry commits a revision with the entry of key set to p (nil
// removes it), retrying when another revision was written meanwhile.
func setEntry(ctx context.Context, main *pgx.Conn, group, key string, p *Placed, author, reason string) (Revision, error) {
	for attempt := 0; ; attempt++ {
		cur, err := Load(ctx, main)
		if err != nil {
			return Revision{}, err
		}
		rev, err := Commit(ctx, main, cur.Rev, author, reason, func(s *State) error {
			if p == nil {
				delete(s.Directory[group], key)
				if len(s.Directory[group]) == 0 {
					delete(s.Directory, group)
				}
				return nil
			}
			if s.Directory == nil {
				s.Directory = map[string]map[string]*Placed{}
			}
			if s.Directory[group] == nil {
				s.Directory[group] = map[string]*Placed{}
			}
			s.Directory[group][key] = p
			return nil
		})
		if errors.Is(err, ErrConflict) && attempt < 10 {
			continue
		}
		return rev, err
	}
}

// WaitServed waits until every live proxy serves revision rev or a later
// one.
func WaitServed(ctx context.Context, main *pgx.Conn, rev int64, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		ps, err := Proxies(ctx, main)
		if err != nil {
			return err
		}
		var behind []string
		for _, p := range ps {
			if p.Live && p.Revision < rev {
				behind = append(behind, p.ID)
			}
		}
		if len(behind) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return sqlerr.New(sqlerr.LockNotAvailable, "proxies %v do not serve routing revision %d after %s", behind, rev, timeout).
				WithHint("The entry stays pending (the key is refused); run the command again once they follow.")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}
