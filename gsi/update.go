package gsi

import (
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/shardgate/shardgate/pgwire"
	"github.com/shardgate/shardgate/planner"
	"github.com/shardgate/shardgate/sqlerr"
)

// runUpdate runs an UPDATE that sets indexed columns (planner.GSIUpdate,
// the steps in planner/gsi_update.go): on each target it locks the
// matching rows and reads their old values, runs the UPDATE on those rows
// only, with the original WHERE, then removes the old entries and writes
// the new ones. sql and ext as for Run.
func runUpdate(s Session, plan *planner.Plan, sql string, targets []planner.Target, ext *Bound) error {
	w := plan.GSI
	owner := w.Tables[0]
	var old []row
	updates := make([]planner.Target, len(targets))
	for i, t := range targets {
		b, err := s.Conn(t.Cluster)
		if err != nil {
			return err
		}
		lock, _ := w.UpdateTexts(sql, ext == nil, nil)
		locked := &result{}
		if ext != nil {
			lt := planner.Target{Cluster: t.Cluster, Shards: t.Shards, SQL: lock, Params: w.LockParams}
			if err := ext.send(b, lt, "", "", nil); err != nil {
				return err
			}
		} else if err := b.Send(&pgproto3.Query{String: lock}); err != nil {
			return pgwire.ConnLost(b.Cluster(), err)
		} else if err := b.Flush(); err != nil {
			return pgwire.ConnLost(b.Cluster(), err)
		}
		if err := locked.read(s, b, t); err != nil {
			return err
		}
		var ctids []string
		seen := map[string]bool{}
		for _, r := range locked.rows {
			// A row joined to several FROM rows is locked (and updated) once.
			if c := string(r.values[0]); !seen[c] {
				seen[c] = true
				ctids = append(ctids, c)
				old = append(old, row{stmtRow: -1, values: r.values[1:]})
			}
		}
		_, update := w.UpdateTexts(sql, ext == nil, ctids)
		updates[i] = planner.Target{Cluster: t.Cluster, Shards: t.Shards, SQL: update}
	}
	extra, cols := returning(owner, w.Alias)
	suffix := "\nRETURNING " + cols
	if plan.Returns {
		suffix = "\n, " + cols
	}
	res, err := runOwner(s, updates, "", suffix, ext, plan.Returns, extra)
	if err != nil {
		return err
	}
	if len(res.rows) != len(old) {
		// A locked row the WHERE no longer matched (a volatile function, a
		// subquery over rows changed since): its old entry is unknown.
		return sqlerr.New(sqlerr.SerializationFailure,
			"could not update the global secondary index %s: %d rows were locked, %d updated", w.Indexes[0].Name, len(old), len(res.rows)).
			WithHint("Retry the transaction.")
	}
	only := w.Indexes
	if err := maintainOnly(s, owner, planner.GSIDelete, old, extra, only); err != nil {
		return err
	}
	if err := maintainOnly(s, owner, planner.GSIInsert, res.rows, extra, only); err != nil {
		return err
	}
	return res.answer(s, plan.Returns, extra, ext == nil)
}
