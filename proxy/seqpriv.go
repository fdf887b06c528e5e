package proxy

import (
	"context"
	"strings"

	"github.com/shardgate/shardgate/pgwire"
	"github.com/shardgate/shardgate/planner"
	"github.com/shardgate/shardgate/sessionstate"
	"github.com/shardgate/shardgate/sqlerr"
	"github.com/shardgate/shardgate/topology"
)

// Sequence values come from blocks the service identity reserves on main
// (package seqblock), not from the client's own nextval: for a session
// running as its own role the proxy first asks main, once per session,
// current role and sequence, whether the role may draw from the sequence
// (USAGE or UPDATE, as nextval needs), and refuses with Postgres's 42501
// otherwise. Postgres checks the privileges on the table a statement
// inserts into before it evaluates the column's default, so when the role
// may not draw, the proxy first asks the table's cluster whether the role
// may insert into the table at all (into any of its columns, as an INSERT
// naming no column needs) and, if not, names the table, as Postgres does.

// roleSeqs is the session's sequence source under per-role sessions, for
// the statement sql.
type roleSeqs struct {
	ss      *session
	sql     string
	allowed map[string]bool // by role and sequence
}

// seqSource is where the session's statement sql draws sequence values
// from.
func (ss *session) seqSource(sql string) planner.SequenceSource {
	if ss.target() != topology.TargetPrimary {
		return readOnlySeqs{}
	}
	if ss.login.User == "" {
		return ss.srv.seqs
	}
	ss.seqs.ss, ss.seqs.sql = ss, sql
	return &ss.seqs
}

// Next draws n values of seq once the role may.
func (r *roleSeqs) Next(seq string, n int) ([]int64, error) {
	role := r.ss.currentRole()
	key := role + "\x00" + seq
	if !r.allowed[key] {
		if err := r.check(role, seq); err != nil {
			return nil, err
		}
		if r.allowed == nil {
			r.allowed = map[string]bool{}
		}
		r.allowed[key] = true
	}
	return r.ss.srv.seqs.Next(seq, n)
}

func (r *roleSeqs) check(role, seq string) error {
	rt := r.ss.srv.cur.Load()
	main := rt.vs.Main().Clusters[0]
	q, name := pgwire.QuoteLiteral(role), pgwire.QuoteLiteral(seq)
	may, err := r.ask(rt, main, "SELECT has_sequence_privilege("+q+", "+name+", 'USAGE') OR has_sequence_privilege("+q+", "+name+", 'UPDATE')")
	if err != nil || may {
		return err
	}
	if schema, table, ok := planner.InsertTarget(r.sql); ok {
		cluster := main
		if t := rt.vs.Table(schema, table); t != nil && t.Group != nil && len(t.Group.Clusters) > 0 {
			cluster = t.Group.Clusters[0]
		}
		rel := pgwire.QuoteIdent(table)
		if schema != "" {
			rel = pgwire.QuoteIdent(schema) + "." + rel
		}
		may, err := r.ask(rt, cluster, "SELECT pg_catalog.to_regclass("+pgwire.QuoteLiteral(rel)+") IS NULL OR pg_catalog.has_any_column_privilege("+q+", "+pgwire.QuoteLiteral(rel)+"::regclass, 'INSERT')")
		if err != nil {
			return err
		}
		if !may {
			return sqlerr.New("42501", "permission denied for table %s", table)
		}
	}
	return sqlerr.New("42501", "permission denied for sequence %s", seqName(seq))
}

// ask answers a yes-or-no question on cluster as the service identity
// (main's through the decisions' pool: the session may hold all of main's
// connections).
func (r *roleSeqs) ask(rt *routing, cluster, sql string) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), r.ss.srv.live.Load().connectTimeout)
	defer cancel()
	pool := rt.pools[cluster]
	if cluster == rt.vs.Main().Clusters[0] {
		pool = r.ss.srv.decide.of(r.ss.srv, rt)
	}
	if pool == nil {
		return false, errUnknownCluster(cluster)
	}
	b, err := pool.Acquire(ctx)
	if err != nil {
		return false, err
	}
	defer pool.Release(b)
	rows, err := b.Query(sql)
	if err != nil {
		return false, pgwire.Annotate(err, cluster)
	}
	return len(rows) == 1 && string(rows[0][0]) == "t", nil
}

// currentRole is the role the session's statements run as now, as
// current_user would answer: SET ROLE's (with the transaction's SET LOCAL
// over it), else SET SESSION AUTHORIZATION's, else the login's.
func (ss *session) currentRole() string {
	s := sessionstate.Settings(ss.settings)
	if ss.tx != nil {
		s = s.WithLocal(&ss.tx.replay, "role", "session_authorization")
	}
	if v, ok := s["role"]; ok {
		if role := settingName(v); role != "" && role != "none" {
			return role
		}
	}
	if v, ok := s["session_authorization"]; ok {
		if role := settingName(v); role != "" {
			return role
		}
	}
	return ss.login.User
}

// settingName is the name a setting's SQL text gives: a string literal
// unquoted, a quoted identifier unquoted, a bare word lower-cased; ""
// for DEFAULT.
func settingName(v string) string {
	v = strings.TrimSpace(v)
	switch {
	case strings.EqualFold(v, "default"):
		return ""
	case len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'':
		return strings.ReplaceAll(v[1:len(v)-1], "''", "'")
	case len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"':
		return strings.ReplaceAll(v[1:len(v)-1], `""`, `"`)
	}
	return strings.ToLower(v)
}

// seqName is a sequence's name without its schema, as Postgres's message
// gives it.
func seqName(seq string) string {
	if q, err := topology.ParseQualifiedName(seq); err == nil {
		return q.Name
	}
	return seq
}
