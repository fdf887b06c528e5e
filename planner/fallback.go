package planner

import (
	"strings"
	"sync"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/shardgate/shardgate/sqlerr"
)

// A merge plan is built without the column types, which only the shards'
// RowDescriptions tell: an expression over aggregates of interval or
// money, min of a type the proxy cannot compare, text under a collation
// other than C. What the merge finds it cannot compute exactly, before it
// sends any row, it hands to the plan's fallback: the same statement over
// intermediate results on the coordinator (intermediate.go), where
// Postgres computes it. The shards have run the statement once by then
// (its rows are dropped), so a statement that calls a function with side
// effects (nextval, pg_advisory_lock, a function of the user's) has no
// fallback: only built-in functions without side effects are evaluated
// twice.

// mergeFallback builds a merge plan's fallback on first use.
type mergeFallback struct {
	once sync.Once
	p    *Planner
	stmt *pg.SelectStmt // the statement as written (not the merge's rewrite)
	plan *Plan
	why  string // what it replaces, if not the merge (EXPLAIN's "instead of")
}

// setFallback gives a merge plan its fallback, unless the statement calls
// a function that may have side effects.
func (p *Planner) setFallback(pl *Plan, s *pg.SelectStmt) {
	ok := true
	walk(&pg.Node{Node: &pg.Node_SelectStmt{SelectStmt: s}}, func(n *pg.Node) bool {
		if f, isCall := n.Node.(*pg.Node_FuncCall); isCall {
			name, catalog := catalogFunction(f.FuncCall.Funcname)
			ok = ok && catalog && (sameEverywhere[name] || noSideEffects[name])
		}
		return ok
	})
	if ok {
		pl.fallback = &mergeFallback{p: p, stmt: s}
	}
}

// noSideEffects are built-in functions that sameEverywhere leaves out
// (their value may differ per cluster or per evaluation) but that change
// nothing when evaluated: aggregates, window functions, clocks, random.
var noSideEffects = map[string]bool{}

func init() {
	for _, f := range strings.Fields(`sum avg stddev stddev_samp stddev_pop variance var_samp var_pop
		string_agg array_agg json_agg jsonb_agg json_object_agg jsonb_object_agg bit_and bit_or bit_xor
		percentile_cont percentile_disc mode corr covar_pop covar_samp regr_avgx regr_avgy regr_count
		regr_intercept regr_r2 regr_slope regr_sxx regr_sxy regr_syy range_agg range_intersect_agg
		row_number rank dense_rank percent_rank cume_dist ntile lag lead first_value last_value nth_value
		grouping coalesce greatest least nullif random now clock_timestamp statement_timestamp
		transaction_timestamp timeofday gen_random_uuid`) {
		noSideEffects[f] = true
	}
}

// SpanFallback is the plan over intermediate results that replaces a
// route whose targets refused it with err: an IN list whose keys, known
// only when it runs, span clusters under what the merge cannot do (a
// window function, a LIMIT inside a derived table, ...). nil when err is
// not that refusal or the plan has no fallback.
func (pl *Plan) SpanFallback(err error) *Plan {
	if err == nil || sqlerr.Code(err) != sqlerr.FeatureNotSupported || pl.fallback == nil || pl.Lookup != nil {
		return nil
	}
	if !pl.spanRoute() {
		return nil
	}
	return pl.Fallback()
}

// spanRoute reports whether the plan is an IN route with a merge reason:
// one that may find, when it runs, that its keys span clusters.
func (pl *Plan) spanRoute() bool {
	r, ok := pl.Root.(*Route)
	return ok && r.Opcode == IN && r.MergeReason != ""
}

// Fallback is the plan over intermediate results that replaces a merge
// the merge executor refuses once it knows the column types (SQLSTATE
// 0A000, before any row is sent); nil when there is none.
func (pl *Plan) Fallback() *Plan {
	f := pl.fallback
	if f == nil {
		return nil
	}
	f.once.Do(func() {
		fb := &Plan{SQL: pl.SQL, Kind: Select, Returns: true, NumParams: pl.NumParams}
		why := f.why
		if why == "" {
			why = "the merge, when the column types the shards return rule it out"
		}
		cause := sqlerr.New(sqlerr.FeatureNotSupported, "%s", why)
		if f.p.buildIntermediate(fb, f.stmt, cause) == nil && fb.Mode() == ModeIntermediate {
			f.plan = fb
		}
		f.p, f.stmt = nil, nil
	})
	return f.plan
}
