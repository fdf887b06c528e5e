package proxy

import (
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/planner"
	"github.com/shardgate/shardgate/sqlerr"
	"github.com/shardgate/shardgate/topology"
)

// Reads on standbys. A session's shardgate.target says where its
// statements go: primary (the default, read-your-writes), replica (a
// standby of each cluster, an error when none is eligible) or
// prefer_replica (a standby when one is eligible, else the primary).
// Under replica and prefer_replica the session is read-only: a statement
// that may write is refused with 25006, as a standby would refuse it.
//
// The setting is tracked like any other session setting (SET, SET LOCAL,
// RESET, DISCARD ALL, the start-up options, a transaction's rollback) and
// replayed on backend connections, where it is an inert placeholder; the
// proxy reads it from the session's settings. A transaction's statements
// on a cluster stay on the connection it began there (one snapshot).

// targetSetting is the setting's name.
const targetSetting = planner.ProxySetting

// parseTarget reads a value of shardgate.target as SET writes it (SQL
// text: 'replica', replica, "replica"); "" for DEFAULT; ok false for
// another value.
func parseTarget(v string) (string, bool) {
	v = strings.TrimSpace(v)
	if len(v) >= 2 && (v[0] == '\'' && v[len(v)-1] == '\'' || v[0] == '"' && v[len(v)-1] == '"') {
		v = v[1 : len(v)-1]
	}
	switch strings.ToLower(v) {
	case topology.TargetPrimary:
		return topology.TargetPrimary, true
	case topology.TargetReplica:
		return topology.TargetReplica, true
	case topology.TargetPreferReplica:
		return topology.TargetPreferReplica, true
	case "default":
		return "", true
	}
	return "", false
}

func errBadTarget(v string) error {
	return sqlerr.New("22023", "invalid value for parameter \"%s\": %s", targetSetting, v).
		WithHint("Available values: primary, replica, prefer_replica.")
}

// target is where the session's statements go now: a SET LOCAL of the
// transaction, else the session's setting, else the user's default or
// proxy.reads.target.
func (ss *session) target() string {
	if ss.tx != nil && ss.tx.target != "" {
		return ss.tx.target
	}
	if v, ok := ss.settings[targetSetting]; ok {
		if t, ok := parseTarget(v); ok && t != "" {
			return t
		}
	}
	if ss.defaultTarget != "" {
		return ss.defaultTarget
	}
	return topology.TargetPrimary
}

// setDefaultTarget takes the session's default target, and where its
// READ ONLY transactions go, from the topology: the user's, else
// proxy.reads'.
func (ss *session) setDefaultTarget(topo *topology.Topology) {
	ss.defaultTarget = topo.Proxy.Reads.Target
	ss.readOnlyTarget = topo.Proxy.Reads.ReadOnlyTransactions
	u := topo.Proxy.Auth.User(ss.user)
	if u != nil && u.Target != "" {
		ss.defaultTarget = u.Target
	}
	if u != nil && u.ReadOnlyTransactions != "" {
		ss.readOnlyTarget = u.ReadOnlyTransactions
	}
}

// checkTargetSettings refuses a bad value of shardgate.target in the
// session's start-up settings.
func (ss *session) checkTargetSettings() error {
	if v, ok := ss.settings[targetSetting]; ok {
		if _, ok := parseTarget(v); !ok {
			return errBadTarget(v)
		}
	}
	return nil
}

// checkTarget runs before a statement: a value given to shardgate.target
// must be one of its values, and a session reading on standbys may not
// write.
func (ss *session) checkTarget(plan *planner.Plan) error {
	for _, s := range plan.Settings {
		if s.Name == targetSetting {
			if _, ok := parseTarget(s.Value); !ok {
				return errBadTarget(s.Value)
			}
		}
	}
	if plan.Set != nil && plan.Set.Name == targetSetting && plan.Set.Value != "" {
		if _, ok := parseTarget(plan.Set.Value); !ok {
			return errBadTarget(plan.Set.Value)
		}
	}
	ss.anyHost = !readsData(plan)
	if ss.target() == topology.TargetPrimary || !mayWrite(plan) {
		return nil
	}
	detail := fmt.Sprintf("shardgate.target is %s: the session reads on standbys.", ss.target())
	if ss.tx != nil && ss.tx.readOnlyOptIn {
		detail = fmt.Sprintf("The transaction is READ ONLY, and proxy.reads.read_only_transactions (%s) sends it to standbys.", ss.target())
	}
	return errReadOnly(plan, detail)
}

// mayWrite reports whether a statement sent to the backends may write
// (transaction control, PREPARE and what the proxy answers itself do
// not; EXECUTE is judged by its statement at Bind).
func mayWrite(plan *planner.Plan) bool {
	switch plan.Kind {
	case planner.Insert, planner.Update, planner.Delete, planner.Merge, planner.DDL, planner.Call, planner.Notify, planner.Other:
		return true
	case planner.Copy:
		return plan.WritesData()
	}
	return false
}

// readsData reports whether a statement reads rows, which under
// shardgate.target = replica must come from a standby; the others (SET,
// SHOW, LISTEN ...) run on a standby when one is eligible, else on the
// primary.
func readsData(plan *planner.Plan) bool {
	switch plan.Kind {
	case planner.Select, planner.Explain, planner.DeclareCursor, planner.Copy, planner.Fetch, planner.Move:
		return true
	}
	return false
}

// errReadOnly is a standby's answer to a write, 25006.
func errReadOnly(plan *planner.Plan, detail string) error {
	what := "this statement"
	if f := strings.Fields(plan.SQL); len(f) > 0 {
		what = strings.ToUpper(f[0])
	}
	return sqlerr.New("25006", "cannot execute %s in a read-only transaction", what).
		WithDetail("%s", detail).
		WithHint("SET shardgate.target = 'primary' to write.")
}

// noteLocalTarget records a SET LOCAL shardgate.target that succeeded,
// or a transaction's READ ONLY (or READ WRITE) declaration.
func (ss *session) noteLocalTarget(plan *planner.Plan) {
	if ss.tx == nil {
		return
	}
	if readOnly, ok := declaresReadOnly(plan); ok {
		ss.noteReadOnly(readOnly)
		return
	}
	if plan.Kind != planner.Set || plan.Set == nil || !plan.Set.Local || plan.Set.Name != targetSetting {
		return
	}
	if t, ok := parseTarget(plan.Set.Value); ok {
		ss.tx.target = t
		ss.tx.readOnlyOptIn = false
	}
}

// declaresReadOnly reports whether plan is a BEGIN / START TRANSACTION
// or SET TRANSACTION that says READ ONLY (true) or READ WRITE (false);
// ok false when it says neither.
func declaresReadOnly(plan *planner.Plan) (readOnly, ok bool) {
	var modes string
	switch {
	case plan.Kind == planner.Begin && plan.Tx != nil:
		modes = plan.Tx.Options
	case plan.Kind == planner.Set && plan.Set != nil && plan.Set.Name == "transaction":
		modes = plan.Set.Value
	default:
		return false, false
	}
	modes = strings.ToUpper(modes)
	switch {
	case strings.Contains(modes, "READ ONLY"):
		return true, true
	case strings.Contains(modes, "READ WRITE"):
		return false, true
	}
	return false, false
}

// noteReadOnly applies proxy.reads.read_only_transactions to a
// transaction declared READ ONLY while the session's target is the
// primary (from the clusters it has not touched yet, as SET LOCAL
// shardgate.target would); READ WRITE takes the opt-in back.
func (ss *session) noteReadOnly(readOnly bool) {
	tx := ss.tx
	switch {
	case readOnly && tx.target == "" && ss.target() == topology.TargetPrimary && ss.readOnlyTarget != "" && ss.readOnlyTarget != topology.TargetPrimary:
		tx.target, tx.readOnlyOptIn = ss.readOnlyTarget, true
	case !readOnly && tx.readOnlyOptIn:
		tx.target, tx.readOnlyOptIn = "", false
	}
}

// showTarget answers SHOW shardgate.target (its RowDescription too
// unless Describe sent it).
func (ss *session) showTarget(describe bool) error {
	if describe {
		if err := ss.send(targetRowDescription); err != nil {
			return err
		}
	}
	if err := ss.send(&pgproto3.DataRow{Values: [][]byte{[]byte(ss.target())}}); err != nil {
		return err
	}
	return ss.complete("SHOW")
}

// targetRowDescription describes SHOW shardgate.target's answer.
var targetRowDescription = &pgproto3.RowDescription{Fields: []pgproto3.FieldDescription{{
	Name: []byte(targetSetting), DataTypeOID: 25, DataTypeSize: -1, TypeModifier: -1,
}}}

// readOnlySeqs refuses to draw sequence values (nextval) for a session
// reading on standbys.
type readOnlySeqs struct{}

func (readOnlySeqs) Next(string, int) ([]int64, error) {
	return nil, sqlerr.New("25006", "cannot execute nextval() in a read-only transaction").
		WithHint("SET shardgate.target = 'primary' to draw sequence values.")
}

// poolFor is the pool a new connection of cluster comes from under the
// session's target, and the standby it belongs to (nil: the primary).
// skip are standbys that failed this statement already.
func (ss *session) poolFor(r *routing, cluster string, skip []*backend.Standby) (*backend.Pool, *backend.Standby, error) {
	p := r.pools[cluster]
	t := ss.target()
	if t == topology.TargetPrimary || p == nil {
		return p, nil, nil
	}
	rs := r.replicas[cluster]
	why := "it has no replicas"
	if rs != nil {
		s, reason := rs.Choose(skip...)
		if s != nil {
			return s.Pool, s, nil
		}
		why = reason
	}
	if t == topology.TargetPreferReplica || ss.anyHost {
		return p, nil, nil
	}
	return nil, nil, sqlerr.New("57P03", "cluster %s: no replica can serve reads (%s)", cluster, why).
		WithHint("shardgate.target = prefer_replica reads on the primary when no replica can.")
}

// standbyDown reports whether err, from a standby's pool, says the
// standby cannot be reached (the read may go to another host).
func standbyDown(err error) bool {
	switch sqlerr.Code(err) {
	case "08006", "08001", "57P03", "57P01":
		return true
	}
	return false
}

// heldMismatch refuses to use a connection the session holds for its
// session state (temporary tables, session advisory locks, LISTEN, WITH
// HOLD cursors, settings it cannot replay) on the other kind of host than
// its target asks for: the state is on that connection. (A connection held
// for session pooling only is exchanged instead: acquire.)
func (ss *session) heldMismatch(b *backend.Conn) error {
	t := ss.target()
	const why = "its session state (temporary tables, session advisory locks, LISTEN, WITH HOLD cursors or settings the proxy cannot replay) lives there"
	const hint = "Set shardgate.target before creating that state, or end it first (DISCARD ALL, UNLISTEN *, CLOSE the cursor, pg_advisory_unlock_all())."
	switch {
	case t == topology.TargetReplica && !b.Pool().IsStandby():
		return sqlerr.New("0A000", "cluster %s: this session holds a connection to the primary, so it cannot read on a standby", b.Cluster()).
			WithDetail("%s.", why).WithHint(hint)
	case t == topology.TargetPrimary && b.Pool().IsStandby():
		return sqlerr.New("0A000", "cluster %s: this session holds a connection to a standby, so it cannot use the primary", b.Cluster()).
			WithDetail("%s.", why).WithHint(hint)
	}
	return nil
}
