package planner

import "strings"

// RouteKind classifies how a statement ran, for metrics and the admin
// console: by the plan and the number of clusters it ran on.
type RouteKind uint8

// Route kinds. RouteLookup is the kind of plans that read a secondary
// index first; the planner builds none yet, so it stays at zero.
// RouteIntermediate is the kind of Intermediate plans (steps over
// temporary tables on the coordinator).
const (
	RouteProxy        RouteKind = iota // answered by the proxy itself (BEGIN, COMMIT, EXPLAIN (ROUTE), ...)
	RouteSingle                        // one cluster
	RouteMulti                         // several clusters named by keys, or every copy of replicated data
	RouteScatter                       // every shard of a group, rows concatenated
	RouteMerge                         // several clusters, rows merged (ORDER BY, LIMIT, aggregates)
	RouteLookup                        // a secondary index read first, then the shard it names
	RouteIntermediate                  // a plan in steps with intermediate results
)

// RouteKindNames names the route kinds, by value.
var RouteKindNames = []string{"proxy", "single", "multi", "scatter", "merge", "lookup", "intermediate"}

func (k RouteKind) String() string { return RouteKindNames[k] }

// RouteKind is how the plan ran on n target clusters.
func (pl *Plan) RouteKind(n int) RouteKind {
	switch mode := pl.Mode(); {
	case mode == ModeProxy || n == 0:
		return RouteProxy
	case mode == ModeIntermediate:
		return RouteIntermediate
	case pl.Lookup != nil:
		return RouteLookup
	case n == 1:
		return RouteSingle
	case mode == ModeMerge:
		return RouteMerge
	}
	if r, ok := pl.Root.(*Route); ok && r.Opcode == Scatter {
		return RouteScatter
	}
	if c, ok := pl.Root.(*CopyOut); ok && c.Route.Opcode == Scatter {
		return RouteScatter
	}
	return RouteMulti
}

// GroupName is the shard group the plan runs in; "" when it names none
// (transaction control, cursors).
func (pl *Plan) GroupName() string {
	switch r := pl.Root.(type) {
	case *Route:
		return r.Group.Name
	case *MergeSort, *Aggregate, *Sort, *Distinct, *Limit:
		return LeafRoute(r).Group.Name
	case *InsertSplit:
		return r.Group.Name
	case *SequenceFill:
		return r.Route.Group.Name
	case *SessionSet:
		return r.Group.Name
	case *CopyIn:
		return r.Group.Name
	case *CopyOut:
		return r.Route.Group.Name
	case *Intermediate:
		if len(r.Pulls) > 0 {
			return r.Pulls[0].Group
		}
	}
	return ""
}

// Redact is sql with every literal (strings, numbers, dollar quotes,
// bit strings) replaced by ?, comments dropped and white space folded:
// a statement's shape for logs, without the values it carried.
func Redact(sql string) string { return redact(sql, false) }

// Fingerprint is the text a statement's statistics are kept under (SHOW
// QUERIES): Redact's shape with every value, a literal or a $n parameter,
// written $1, $2, ... in the order they appear. Statements that differ only
// in their values share one fingerprint, whether sent with the simple
// protocol (literals inline) or the extended one ($n), prepared or not; it
// holds no literal value. A trailing semicolon is dropped.
func Fingerprint(sql string) string {
	return strings.TrimRight(redact(sql, true), "; ")
}

func redact(sql string, numbered bool) string {
	var b strings.Builder
	l := lexer{src: sql}
	space, n := false, 0
	for {
		t := l.next()
		switch t.kind {
		case tokEOF:
			return strings.TrimSpace(b.String())
		case tokError:
			b.WriteString(" ?")
			return strings.TrimSpace(b.String())
		case tokSpace, tokComment:
			space = true
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		switch t.kind {
		case tokString, tokEString, tokDollarString, tokOtherString, tokNumber, tokParam:
			switch {
			case numbered:
				n++
				b.WriteByte('$')
				b.WriteString(itoa(n))
			case t.kind == tokParam:
				b.WriteString(sql[t.start:t.end])
			default:
				b.WriteByte('?')
			}
		default:
			b.WriteString(sql[t.start:t.end])
		}
	}
}
