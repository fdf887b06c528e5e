package merge

import (
	"github.com/shardgate/shardgate/planner"
	"github.com/shardgate/shardgate/sqlerr"
)

// What a merge asks of the statements before they run: the shard
// statement's result formats, and the checks Postgres makes before any
// work.

// ShardFormats are the result formats of the shard statement: the
// client's for the columns it sees, binary for the hidden columns and the
// aggregate pieces the proxy decodes and re-encodes.
func ShardFormats(root planner.Primitive, client []int16) []int16 {
	clientFormat := func(i int) int16 {
		switch {
		case len(client) == 0:
			return 0
		case len(client) == 1:
			return client[0]
		case i < len(client):
			return client[i]
		}
		return 1
	}
	if a := findAggregate(root); a != nil {
		out := make([]int16, a.ShardColumns)
		for i := range out {
			out[i] = 1
		}
		nvis := len(a.Outputs) - a.Hidden
		for k, o := range a.Outputs[:nvis] {
			switch {
			case o.Expr != nil:
				// Computed by the proxy from binary pieces: no shard
				// column of its own (Col is 0, not the output's).
			case o.Agg < 0:
				out[o.Col] = clientFormat(k)
			case a.Aggs[o.Agg].Func == planner.AggMin || a.Aggs[o.Agg].Func == planner.AggMax:
				out[a.Aggs[o.Agg].Col] = clientFormat(k)
			}
		}
		return out
	}
	r := planner.LeafRoute(root)
	if len(client) <= 1 || r == nil || r.Hidden == 0 {
		// One code for all (hidden columns included), or exactly the
		// client's columns.
		return client
	}
	out := append([]int16(nil), client...)
	for i := 0; i < r.Hidden; i++ {
		out = append(out, 1)
	}
	return out
}

// findAggregate finds the plan's Aggregate.
func findAggregate(p planner.Primitive) *planner.Aggregate {
	for p != nil {
		if a, ok := p.(*planner.Aggregate); ok {
			return a
		}
		in := p.Inputs()
		if len(in) != 1 {
			return nil
		}
		p = in[0]
	}
	return nil
}

// CheckLimit checks the plan's LIMIT and OFFSET values: their errors come
// before any work, as in Postgres.
func CheckLimit(root planner.Primitive, params []planner.Param) error {
	if l := findLimit(root); l != nil {
		if _, _, err := l.Values(params); err != nil {
			return err
		}
	}
	return nil
}

// CheckFormats checks the client's result format codes (Bind) against the
// columns of an aggregating merge, which Postgres checks at Bind.
func CheckFormats(root planner.Primitive, formats []int16) error {
	if a := findAggregate(root); a != nil && len(formats) > 1 && len(formats) != len(a.Outputs)-a.Hidden {
		return sqlerr.New(sqlerr.ProtocolViolation, "bind message has %d result formats but query has %d columns",
			len(formats), len(a.Outputs)-a.Hidden)
	}
	return nil
}

// findLimit finds the plan's Limit.
func findLimit(p planner.Primitive) *planner.Limit {
	for p != nil {
		if l, ok := p.(*planner.Limit); ok {
			return l
		}
		in := p.Inputs()
		if len(in) != 1 {
			return nil
		}
		p = in[0]
	}
	return nil
}
