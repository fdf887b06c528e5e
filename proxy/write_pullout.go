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
	st, done, _ := ss.intermediate(r, wp.Sub, nil, nil, true) // no write: no error
	lit, err := st.WriteLiteral(wp)
	done()
	if err != nil {
		return err
	}
	return ss.executeWritten(r, wp.WriteSQL(lit), "its subquery's value", ext)
}

// executeWritten plans and executes sql, a statement with what (a value
// the proxy computed first) written in; ext: see execute.
func (ss *session) executeWritten(r *routing, sql, what string, ext *portal) error {
	plan, err := r.planner.Plan(sql)
	if err != nil {
		return err
	}
	if plan.Mode() == planner.ModeProxy {
		return sqlerr.New(sqlerr.FeatureNotSupported, "the statement with %s cannot be routed: %s", what, sql)
	}
	return ss.execute(r, plan, sql, nil, ext)
}
