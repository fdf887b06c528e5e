package planner

import (
	"github.com/jackc/pgx/v5/pgproto3"
	pg "github.com/pganalyze/pg_query_go/v6"
	"github.com/shardgate/shardgate/pgwire"

	"github.com/shardgate/shardgate/sqlerr"
)

// SignalInfo describes a statement that is nothing but a call of
// pg_terminate_backend or pg_cancel_backend: SELECT f(pid [, timeout])
// with one target, no FROM and no other clause, each argument a constant
// or a parameter. Clients see the proxy's session process IDs, not a
// backend's, so the proxy answers the call itself when the pid is one of
// its sessions; any other pid runs on main like any table-less SELECT
// (the plan's route). SELECT pg_backend_pid() of the same shape is one
// too (OwnPID): the proxy answers it with the session's process ID, the
// one BackendKeyData gave the client, not a pooled backend's.
type SignalInfo struct {
	// Func is "pg_terminate_backend", "pg_cancel_backend" or
	// "pg_backend_pid".
	Func string
	// Column is the result column's name: the alias, else Func.
	Column string
	// PID is the process ID argument; Timeout pg_terminate_backend's
	// second argument (milliseconds to wait for the end), nil if absent.
	PID     ValueRef
	Timeout *ValueRef
}

// OwnPID reports pg_backend_pid(), which has no arguments.
func (si *SignalInfo) OwnPID() bool { return si.Func == "pg_backend_pid" }

// Result is the one-row answer the proxy gives a signal call itself, with
// its RowDescription (formats: a Bind's result format codes): pid for
// pg_backend_pid(), else ok.
func (si *SignalInfo) Result(pid uint32, formats []int16, ok bool) (*pgproto3.RowDescription, *pgproto3.DataRow) {
	if si.OwnPID() {
		return pgwire.Int4Result(si.Column, formats, int32(pid))
	}
	return pgwire.BoolResult(si.Column, formats, ok)
}

// Terminate reports pg_terminate_backend (else pg_cancel_backend).
func (si *SignalInfo) Terminate() bool { return si.Func == "pg_terminate_backend" }

// Values evaluates the arguments for the statement's parameters: the pid
// (null when NULL: the function is strict) and the timeout (0 when
// absent), with the errors Postgres gives for a negative timeout.
func (si *SignalInfo) Values(params []Param) (pid int64, null bool, timeout int64, err error) {
	pid, null, err = limitValue(si.PID, params)
	if err != nil || null || si.Timeout == nil {
		return pid, null, 0, err
	}
	timeout, null, err = limitValue(*si.Timeout, params)
	if err == nil && !null && timeout < 0 {
		err = sqlerr.New("22023", "\"timeout\" must not be negative")
	}
	return pid, null, timeout, err
}

// signalCall recognises SELECT pg_terminate_backend(pid [, timeout]) and
// SELECT pg_cancel_backend(pid); nil for anything else.
func signalCall(stmt *pg.Node) *SignalInfo {
	s := stmt.GetSelectStmt()
	if s == nil || len(s.TargetList) != 1 || len(s.FromClause) > 0 || s.WhereClause != nil ||
		s.GroupClause != nil || s.HavingClause != nil || s.WithClause != nil || s.IntoClause != nil ||
		s.DistinctClause != nil || s.SortClause != nil || s.LimitCount != nil || s.LimitOffset != nil ||
		s.LockingClause != nil || s.WindowClause != nil || s.Op != pg.SetOperation_SETOP_NONE {
		return nil
	}
	rt := s.TargetList[0].GetResTarget()
	if rt == nil {
		return nil
	}
	f := rt.Val.GetFuncCall()
	if f == nil || f.AggStar || f.AggDistinct || f.FuncVariadic || f.Over != nil || f.AggFilter != nil || len(f.AggOrder) > 0 {
		return nil
	}
	name, _ := catalogFunction(f.Funcname)
	max := 1
	switch name {
	case "pg_terminate_backend":
		max = 2
	case "pg_cancel_backend":
	case "pg_backend_pid":
		if len(f.Args) > 0 {
			return nil
		}
		si := &SignalInfo{Func: name, Column: name}
		if rt.Name != "" {
			si.Column = rt.Name
		}
		return si
	default:
		return nil
	}
	if len(f.Args) == 0 || len(f.Args) > max {
		return nil
	}
	si := &SignalInfo{Func: name, Column: name}
	if rt.Name != "" {
		si.Column = rt.Name
	}
	var ok bool
	if si.PID, ok = valueRef(f.Args[0]); !ok {
		return nil
	}
	if len(f.Args) == 2 {
		t, ok := valueRef(f.Args[1])
		if !ok {
			return nil
		}
		si.Timeout = &t
	}
	return si
}
