package proxy

import (
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/pgwire"
	"github.com/shardgate/shardgate/planner"
	"github.com/shardgate/shardgate/sqlerr"
)

// SQL-level PREPARE and EXECUTE: a PREPAREd statement is a client
// statement like one of Parse (extended.go), in the same namespace;
// EXECUTE binds its arguments and runs it through the extended-protocol
// executor, answering as a simple Query does.

// errReported is returned for an error already sent to the client.
var errReported = sqlerr.New("XX000", "error already reported")

func (ss *session) execPrepare(r *routing, plan *planner.Plan) error {
	info := plan.Prepared
	if _, ok := ss.stmts[info.Name]; ok {
		return sqlerr.New("42P05", "prepared statement \"%s\" already exists", info.Name)
	}
	if plan.Inner == nil || planner.RunsInSteps(plan.Inner) || plan.Inner.Mode() == planner.ModeCursor {
		return sqlerr.New("0A000", "shardgate cannot PREPARE this statement")
	}
	oids := append([]uint32(nil), info.ParamOIDs...)
	for i, o := range oids {
		if o != 0 {
			continue
		}
		// A type the planner does not know: main knows it.
		oid, err := ss.typeOID(r, info.ParamTypes[i])
		if err != nil {
			return err
		}
		oids[i] = oid
	}
	st := &clientStmt{name: info.Name, sql: info.Statement, paramOIDs: oids, plan: plan.Inner, planner: r.planner}
	st.gen = int(stmtSeq.Add(1))
	st.key = backend.StatementKey(st.sql, oids, st.gen)
	put(&ss.stmts, info.Name, st)
	return ss.complete("PREPARE")
}

// typeOID looks a type up on main, inside the session's transaction if it
// has one (the type may be new in it).
func (ss *session) typeOID(r *routing, typ string) (uint32, error) {
	main := r.vs.Main().Clusters[0]
	b, err := ss.connFor(r, main)
	if err != nil {
		return 0, err
	}
	defer ss.finishStatement([]*backend.Conn{b})
	oid, err := b.TypeOID(typ)
	if err != nil {
		return 0, pgwire.Annotate(err, main)
	}
	return oid, nil
}

func (ss *session) execSQLExecute(r *routing, plan *planner.Plan, ext *portal) error {
	info := plan.Prepared
	if ext != nil {
		return sqlerr.New("0A000", "SQL EXECUTE through the extended query protocol is not supported by shardgate").
			WithHint("Send EXECUTE as a simple Query, or bind the prepared statement with the protocol's Bind.")
	}
	st, ok := ss.stmts[info.Name]
	if !ok {
		return sqlerr.New("26000", "prepared statement \"%s\" does not exist", info.Name)
	}
	oids := make([]uint32, max(len(st.paramOIDs), st.plan.NumParams))
	copy(oids, st.paramOIDs)
	params, err := info.Bind(oids)
	if err != nil {
		return err
	}
	vals := make([][]byte, len(params))
	for i, p := range params {
		if !p.Null {
			vals[i] = append([]byte{}, p.Value...)
		}
	}
	bt := &batch{ss: ss, r: r, quiet: true}
	bt.run([]pgproto3.FrontendMessage{
		&pgproto3.Bind{PreparedStatement: info.Name, Parameters: vals},
		&pgproto3.Describe{ObjectType: 'P'},
		&pgproto3.Execute{},
	}, true)
	delete(ss.portals, "")
	if bt.errorSent {
		return errReported
	}
	return nil
}
