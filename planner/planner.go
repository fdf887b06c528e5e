package planner

import (
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/shardgate/shardgate/sqlerr"
	"github.com/shardgate/shardgate/stats"
	"github.com/shardgate/shardgate/vschema"
)

// Cache bounds. A plan is a few hundred bytes plus its SQL; 10k shapes is
// far more than any application has, and the byte bound keeps huge one-off
// statements (bulk INSERTs planned verbatim) from crowding them out.
const (
	cacheEntries = 10000
	cacheBytes   = 32 << 20
)

// Planner turns SQL into plans against one VSchema. It is safe for
// concurrent use; plans it returns are immutable and shared.
type Planner struct {
	vs       *vschema.VSchema
	cache    *planCache
	counters *stats.PlanCacheCounters
	// columns, when set, names the columns of INSERTs without a column
	// list (columns.go).
	columns ColumnSource
}

// WithCounters makes the planner count its cache hits and misses in c
// (kept across topologies by the caller) and returns it.
func (p *Planner) WithCounters(c *stats.PlanCacheCounters) *Planner {
	p.counters = c
	return p
}

// CacheSize reports the entries and key bytes the plan cache holds.
func (p *Planner) CacheSize() (entries, bytes int) {
	p.cache.mu.Lock()
	defer p.cache.mu.Unlock()
	return len(p.cache.entries), p.cache.bytes
}

// New returns a planner for vs. A new topology gets a new Planner (and
// with it an empty cache).
func New(vs *vschema.VSchema) *Planner {
	return &Planner{vs: vs, cache: newPlanCache(cacheEntries, cacheBytes)}
}

// VSchema returns the routing view the planner plans against.
func (p *Planner) VSchema() *vschema.VSchema { return p.vs }

// Plan plans one statement of the extended protocol (Parse), which may
// contain $n parameters. Plans and errors are cached by the exact text.
func (p *Planner) Plan(sql string) (*Plan, error) {
	if pl, err, ok := p.cache.get(sql); ok {
		if p.counters != nil {
			p.counters.Hits.Add(1)
		}
		if pl != nil {
			if q := pl.QueryStats(); q != nil {
				q.CacheHit() // SHOW QUERIES' plan_cache_hits
			}
		}
		return pl, err
	}
	if p.counters != nil {
		p.counters.Misses.Add(1)
	}
	pl, columnsOf, err := p.buildNamed(sql)
	if _, need := NeedsColumns(err); need || err != nil && sqlerr.Code(err) == sqlerr.InternalError {
		return nil, err // never cache what might be a planner bug's transient state, nor a question
	}
	p.cache.putUsing(sql, pl, err, columnsOf)
	return pl, err
}

// PlanSimple plans a simple-protocol Query message: it splits the text into
// statements and plans each. Literals are lifted out of DML statements
// first (see normalize), so that statements differing only in their
// literals share one cached plan; Bound.Params holds the lifted values.
//
// Errors: a syntax error anywhere fails the whole message with no
// statements, as the backend parses the whole string before running any.
// Any other error is returned with the statements planned before the
// failing one, which the backend would have run before reporting it.
func (p *Planner) PlanSimple(sql string) ([]*Bound, error) {
	var spanBuf [4]stmtSpan
	spans, needParser := splitStatements(sql, spanBuf[:0])
	if needParser {
		var err error
		if spans, err = parserSplit(sql); err != nil {
			return nil, err
		}
	}
	if len(spans) == 0 {
		return []*Bound{{Plan: emptyPlan, SQL: ""}}, nil
	}
	var store []Bound
	var bounds []*Bound
	if len(spans) == 1 { // the usual case, in one allocation
		one := new(struct {
			b [1]Bound
			p [1]*Bound
		})
		store, bounds = one.b[:], one.p[:0]
	} else {
		store, bounds = make([]Bound, len(spans)), make([]*Bound, 0, len(spans))
	}
	for i, sp := range spans {
		text := sql[sp.start:sp.end]
		err := p.planStatement(&store[i], text)
		if err == nil {
			bounds = append(bounds, &store[i])
			continue
		}
		if sqlerr.Code(err) == sqlerr.SyntaxError {
			return nil, shiftPosition(err, charOffset(sql, sp.start))
		}
		// The backend would run the earlier statements, then fail here;
		// but a syntax error further on would have stopped it before
		// running anything. (Too deep a statement is not a syntax error:
		// Postgres finds it when it gets there.)
		for _, later := range spans[i+1:] {
			if _, perr := parse(sql[later.start:later.end]); perr != nil && perr != errTooDeep {
				return nil, syntaxError(perr, charOffset(sql, later.start), "")
			}
		}
		return bounds, err
	}
	return bounds, nil
}

// parserSplit asks pg_query where the statements are, for the texts the
// lexer cannot split alone, and maps them back to spans of sql.
func parserSplit(sql string) ([]stmtSpan, error) {
	parts, err := pg.SplitWithParser(sql, true)
	if err != nil {
		return nil, syntaxError(err, 0, sql)
	}
	var spans []stmtSpan
	from := 0
	for _, part := range parts {
		off := strings.Index(sql[from:], part)
		if off < 0 {
			return nil, sqlerr.New(sqlerr.InternalError, "cannot locate statement %q in the query", part)
		}
		off += from
		spans = append(spans, stmtSpan{off, off + len(part)})
		from = off + len(part)
	}
	return spans, nil
}

var emptyPlan = &Plan{Kind: Empty, Root: &ProxyLocal{What: "empty query"}}

// planStatement plans one statement of a simple Query: from its normalized
// shape when that is safe, as written otherwise.
func (p *Planner) planStatement(b *Bound, text string) error {
	if norm, params, ok := normalize(text); ok && len(params) > 0 {
		pl, err := p.Plan(norm)
		if err == nil && shapeUsable(pl) && !clockLiterals(pl, params) {
			*b = Bound{Plan: pl, Params: params, SQL: text}
			return nil
		}
		// Not usable: a parse error (a literal where only a literal may
		// stand), or a refusal that the literals themselves might lift
		// (SET key = 5 WHERE key = 5 is fine; SET key = $1 WHERE key = $2
		// is not). A split INSERT is usable: Bound.Targets puts the
		// lifted literals back into the rewritten rows. A clock word
		// ('now') written into every copy of a reference table is judged
		// on the text, where a cast to text can excuse it (copies.go).
	}
	pl, err := p.Plan(text)
	if err != nil {
		return err
	}
	*b = Bound{Plan: pl, SQL: text}
	return nil
}

// shapeUsable reports whether a plan of normalized text can stand for the
// statement as written.
func shapeUsable(pl *Plan) bool {
	if _, ok := pl.Root.(*WritableCTE); ok {
		return false // its steps run as written (wcte.go)
	}
	switch pl.Kind {
	case Select, Insert, Update, Delete:
		// A merge reads ORDER BY 2 as a column and ORDER BY $1 as an
		// expression: its keys need the statement as written. So do the
		// steps of an intermediate plan, and a shape with $n for literals
		// may miss that the statement runs on one shard (k = 7 AND k = 7).
		return pl.Mode() != ModeMerge && pl.Mode() != ModeIntermediate
	}
	return false
}

// shiftPosition moves the character position of a syntax error from the
// statement to the whole Query string.
func shiftPosition(err error, offset int) error {
	e, ok := sqlerr.As(err)
	if !ok || offset == 0 {
		return err
	}
	const marker = " at character "
	i := strings.LastIndex(e.Message, marker)
	if i < 0 {
		return err
	}
	n := 0
	for _, c := range e.Message[i+len(marker):] {
		if c < '0' || c > '9' {
			return err
		}
		n = n*10 + int(c-'0')
	}
	c := *e
	c.Message = e.Message[:i] + marker + itoa(n+offset)
	return &c
}
