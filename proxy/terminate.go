package proxy

import (
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/shardgate/shardgate/auth"
	"github.com/shardgate/shardgate/planner"
	"github.com/shardgate/shardgate/sqlerr"
)

// Clients see the proxy's session process IDs (BackendKeyData), so the
// proxy answers SELECT pg_terminate_backend(pid) and pg_cancel_backend(pid)
// itself when pid is one of its sessions (planner.SignalInfo); other pids
// run on main. Terminating marks the session to end as a drain does.

// signalTarget is the session a signal call of plan names, nil if none.
func (ss *session) signalTarget(plan *planner.Plan, params []planner.Param) *session {
	if plan.Signal == nil {
		return nil
	}
	if plan.Signal.OwnPID() {
		return ss
	}
	pid, null, _, _ := plan.Signal.Values(params)
	if null || pid <= 0 || pid > 1<<31-1 {
		return nil
	}
	ss.srv.mu.Lock()
	defer ss.srv.mu.Unlock()
	return ss.srv.sessions[uint32(pid)]
}

// execSignal answers a signal call whose pid is a session of the proxy;
// handled is false for any other pid (the statement runs on main), unless
// ext was bound for a session that has ended since.
func (ss *session) execSignal(plan *planner.Plan, params []planner.Param, ext *portal) (handled bool, err error) {
	si := plan.Signal
	if si.OwnPID() {
		desc, row := si.Result(ss.pid, formatsOf(ext), false)
		return true, ss.sendResult(desc, row, ext)
	}
	pid, _, timeout, err := si.Values(params)
	target := ss.signalTarget(plan, params)
	ok := target != nil
	switch {
	case target == nil && ext == nil:
		return false, nil
	case target == nil:
		_ = ss.notice("01000", fmt.Sprintf("PID %d is not a PostgreSQL backend process", pid))
	case err != nil:
		return true, err
	case target.user != ss.user && ss.srv.auth.Load().Method() != auth.Trust:
		what := "query is being canceled"
		if si.Terminate() {
			what = "process is being terminated"
		}
		return true, sqlerr.New("42501", "must be a member of the role whose %s or member of pg_signal_backend", what)
	case !si.Terminate():
		ss.srv.cancelRunning(target)
	case target == ss:
		ss.srv.wake(ss, true)
		return true, ss.endKilled() // as a backend ending itself: no row
	default:
		ss.srv.terminateSession(target)
		deadline := time.Now().Add(time.Duration(timeout) * time.Millisecond)
		for timeout > 0 && ss.signalTarget(plan, params) == target {
			if time.Now().After(deadline) {
				_ = ss.notice("01000", fmt.Sprintf("backend with PID %d did not terminate within %d milliseconds", pid, timeout))
				ok = false
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	desc, row := si.Result(ss.pid, formatsOf(ext), ok)
	return true, ss.sendResult(desc, row, ext)
}

func formatsOf(ext *portal) []int16 {
	if ext == nil {
		return nil
	}
	return ext.formats
}

// sendResult sends a one-row answer: its RowDescription only in the
// simple protocol (Describe gave it in the extended one).
func (ss *session) sendResult(desc *pgproto3.RowDescription, row *pgproto3.DataRow, ext *portal) error {
	if ext == nil {
		_ = ss.send(desc)
	}
	_ = ss.send(row)
	return ss.complete("SELECT 1")
}

// terminateSession makes target end as pg_terminate_backend does: its
// running statement is cancelled, its transaction rolled back, and it gets
// FATAL 57P01. The cancel is repeated while the session lives, for a
// statement that reached its backend only after the first one.
//
// What it is blocked on that a cancel cannot end is cut after
// hardStopAfter (sessionend.go): its backend connections and its
// client's socket are closed.
func (s *Server) terminateSession(target *session) {
	if target.ending.Swap(true) {
		s.wake(target, true) // already ending: just ask again
		return
	}
	s.wake(target, true)
	go func() {
		const tick = 100 * time.Millisecond
		for i := 1; s.alive(target); i++ {
			time.Sleep(tick)
			switch elapsed := time.Duration(i) * tick; {
			case elapsed == hardStopAfter:
				s.stopHard(target)
			case elapsed > 5*time.Second:
				return
			}
			s.wake(target, true)
		}
	}()
}

// endKilled ends a session marked to end whose statement failed (it was
// cancelled for that reason): FATAL 57P01 instead of the statement's
// error, as a backend's, and the client connection is closed; cleanup
// rolls the transaction back.
func (ss *session) endKilled() error {
	_ = ss.sendFatal(errAdminShutdown)
	_ = ss.conn.Close()
	return errReported
}
