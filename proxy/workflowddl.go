package proxy

import (
	"github.com/shardgate/shardgate/planner"
	"github.com/shardgate/shardgate/workflows"
)

// DDL on a table in a workflow (workflows/ddl.go): refused before it runs
// when the workflow's stream cannot follow it; else it runs as usual with,
// in its transaction on each cluster, a logical message the workflow's
// stream applies on its targets at that point.

// workflowDDL is a DDL statement the streams of workflows follow.
type workflowDDL struct {
	d   *workflows.DDL
	msg []byte // the logical message's content
}

// workflowCandidate says whether a statement is DDL a workflow may have
// to follow or refuse: the extended protocol runs it as the simple one
// does (execute, as a local portal), where the check and the message are.
func workflowCandidate(plan *planner.Plan) bool {
	if plan.Kind != planner.DDL || plan.Mode() == planner.ModeProxy {
		return false
	}
	d, _ := workflows.ParseDDL(plan.SQL)
	return d != nil
}

// checkWorkflowDDL reads the workflows in main for a DDL statement that
// changes tables. It returns nil when no workflow holds them, and
// refuses (55000, naming the workflow) what a workflow cannot follow.
func (ss *session) checkWorkflowDDL(r *routing, plan *planner.Plan, sql string) (*workflowDDL, error) {
	if plan.Kind != planner.DDL || plan.Mode() == planner.ModeProxy {
		return nil, nil
	}
	d, err := workflows.ParseDDL(sql)
	if d == nil || err != nil {
		return nil, err
	}
	main := r.vs.Main().Clusters[0]
	p := r.pools[main]
	if p == nil {
		return nil, errUnknownCluster(main)
	}
	b, err := p.Lease(ss.pid, "")
	if err != nil {
		return nil, err
	}
	defer b.Release()
	rows, err := b.Query(workflows.DDLSchemaSQL)
	if err != nil || len(rows) != 1 || string(rows[0][0]) != "t" {
		return nil, err // no workflow was ever created
	}
	if rows, err = b.Query(workflows.DDLWorkflowsSQL); err != nil {
		return nil, err
	}
	msg, err := d.Decide(rows)
	if msg == nil || err != nil {
		return nil, err
	}
	return &workflowDDL{d: d, msg: msg}, nil
}

// emitWorkflowDDL writes the message in the statement's transaction on every
// target cluster, before the statement runs there (the stream applies
// the transaction at its commit, the message and the statement together).
func (ss *session) emitWorkflowDDL(r *routing, w *workflowDDL, targets []planner.Target) error {
	sql := workflows.DDLMessageSQL(w.msg)
	for _, t := range targets {
		b, err := ss.connFor(r, t.Cluster)
		if err != nil {
			return err
		}
		if _, err := b.Query(sql); err != nil {
			return b.ClusterErr(err)
		}
	}
	return nil
}

// keptKeys refuses, after the statement ran and before its transaction
// commits, a statement that took a workflow table's primary key away.
func (ss *session) keptKeys(r *routing, w *workflowDDL, targets []planner.Target) error {
	sql := w.d.DDLKeptKeySQL()
	if sql == "" {
		return nil
	}
	for _, t := range targets {
		b, err := ss.connFor(r, t.Cluster)
		if err != nil {
			return err
		}
		rows, err := b.Query(sql)
		if err != nil {
			return b.ClusterErr(err)
		}
		if len(rows) == 1 && string(rows[0][0]) != "0" {
			return w.d.LostKey()
		}
	}
	return nil
}
