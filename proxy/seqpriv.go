package proxy

import (
	"context"

	"github.com/shardgate/shardgate/pgwire"
	"github.com/shardgate/shardgate/planner"
	"github.com/shardgate/shardgate/sqlerr"
	"github.com/shardgate/shardgate/topology"
)

// Sequence values come from blocks the service identity reserves on main
// (package seqblock), not from the client's own nextval: for a session
// running as its own role the proxy first asks main, once per session and
// sequence, whether the role may draw from the sequence (USAGE or UPDATE,
// as nextval needs), and refuses with Postgres's 42501 otherwise.

// roleSeqs is the session's sequence source under per-role sessions.
type roleSeqs struct {
	ss      *session
	allowed map[string]bool
}

// seqSource is where the session's statements draw sequence values from.
func (ss *session) seqSource() planner.SequenceSource {
	if ss.target() != topology.TargetPrimary {
		return readOnlySeqs{}
	}
	if ss.login.User == "" {
		return ss.srv.seqs
	}
	ss.seqs.ss = ss
	return &ss.seqs
}

// Next draws n values of seq once the role may.
func (r *roleSeqs) Next(seq string, n int) ([]int64, error) {
	if !r.allowed[seq] {
		if err := r.check(seq); err != nil {
			return nil, err
		}
		if r.allowed == nil {
			r.allowed = map[string]bool{}
		}
		r.allowed[seq] = true
	}
	return r.ss.srv.seqs.Next(seq, n)
}

func (r *roleSeqs) check(seq string) error {
	rt := r.ss.srv.cur.Load()
	main := rt.vs.Main().Clusters[0]
	ctx, cancel := context.WithTimeout(context.Background(), r.ss.srv.live.Load().connectTimeout)
	defer cancel()
	// The decisions' pool: the session may hold main's connections.
	pool := r.ss.srv.decide.of(r.ss.srv, rt)
	b, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer pool.Release(b)
	role, name := pgwire.QuoteLiteral(r.ss.login.User), pgwire.QuoteLiteral(seq)
	rows, err := b.Query("SELECT has_sequence_privilege(" + role + ", " + name + ", 'USAGE') OR has_sequence_privilege(" + role + ", " + name + ", 'UPDATE')")
	if err != nil {
		return pgwire.Annotate(err, main)
	}
	if len(rows) != 1 || string(rows[0][0]) != "t" {
		return sqlerr.New("42501", "permission denied for sequence %s", seq)
	}
	return nil
}
