package proxy

import (
	"github.com/shardgate/shardgate/planner"
	"github.com/shardgate/shardgate/sqlerr"
)

// execWritePullout runs an UPDATE or DELETE whose subquery runs first
// (planner.WritePullout): the subquery on the session's connections,
// then the statement with its value written in, planned and executed as
// any other statement; ext: see execute.
func (ss *session) execWritePullout(r *routing, wp *planner.WritePullout, ext *portal) error {
	st, done := ss.intermediate(r, wp.Sub, nil, false, true)
	lit, err := st.WriteLiteral(wp)
	done()
	if err != nil {
		return err
	}
	sql := wp.WriteSQL(lit)
	plan, err := r.planner.Plan(sql)
	if err != nil {
		return err
	}
	if plan.Mode() == planner.ModeProxy {
		return sqlerr.New(sqlerr.FeatureNotSupported, "the statement with its subquery's value cannot be routed: %s", sql)
	}
	return ss.execute(r, plan, sql, nil, ext)
}
