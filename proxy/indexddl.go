package proxy

import (
	"strings"

	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/pgwire"
	"github.com/shardgate/shardgate/planner"
)

// indexTargets orders the clusters of a DROP INDEX without IF EXISTS
// (planner.EveryCluster.Indexes): main's cluster runs it as written, and
// answers, when it holds every index named; otherwise the first other
// cluster that holds them all does, and main runs the IF EXISTS form with
// the rest. So the index of a group that does not live on main's cluster
// drops as Postgres drops an index that exists; one that exists nowhere
// is main's 42704.
func (ss *session) indexTargets(r *routing, plan *planner.Plan, ts []planner.Target) ([]planner.Target, error) {
	e, ok := plan.Root.(*planner.EveryCluster)
	if !ok || len(e.Indexes) == 0 || len(ts) < 2 || ts[0].Cluster != e.Main {
		return ts, nil
	}
	quoted := make([]string, len(e.Indexes))
	for i, n := range e.Indexes {
		quoted[i] = pgwire.QuoteLiteral(n)
	}
	check := "SELECT bool_and(pg_catalog.to_regclass(n) IS NOT NULL) FROM unnest(ARRAY[" + strings.Join(quoted, ", ") + "]::text[]) n"
	holdsAll := func(cluster string) (bool, error) {
		b, err := ss.connFor(r, cluster)
		if err != nil {
			return false, err
		}
		defer ss.finishStatement([]*backend.Conn{b})
		rows, err := b.Query(check)
		if err != nil {
			return false, pgwire.Annotate(err, cluster)
		}
		return len(rows) == 1 && string(rows[0][0]) == "t", nil
	}
	if ok, err := holdsAll(e.Main); ok || err != nil {
		return ts, err
	}
	for i, t := range ts[1:] {
		ok, err := holdsAll(t.Cluster)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		out := []planner.Target{{Cluster: t.Cluster}, {Cluster: e.Main, SQL: e.Others}}
		out = append(out, ts[1:i+1]...)
		return append(out, ts[i+2:]...), nil
	}
	return ts, nil
}
