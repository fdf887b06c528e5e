package planner

import (
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/shardgate/shardgate/sqlerr"
	"github.com/shardgate/shardgate/topology"
	"github.com/shardgate/shardgate/vschema"
)

// Sequences live in the main group (docs/concepts.md); a sharded
// table's id column is bound to one of them in the topology
// (tables: orders: { sequence: { column: id, name: orders_id_seq } }).
// The planner marks where a statement needs a value of such a sequence;
// the proxy draws the values (SequenceSource) when it runs the statement:
//
//   - INSERT ... VALUES into a member table that omits the bound column, or
//     gives DEFAULT for it: one draw per row (InsertSplit), routed on when
//     the column is the shard key.
//   - nextval('seq') of a sequence main lists, in the VALUES of an INSERT
//     that does not run on main's cluster: one draw per call (InsertSplit,
//     or SequenceFill for reference tables).
//   - a table-less SELECT nextval('seq') (SequenceFill over the Route to
//     main): drawn from the proxy's cached block, not from the sequence.
//
// nextval('seq') anywhere else in a statement that runs outside main's
// cluster is refused (0A000): there the backend would call a sequence
// that is not the main one, or none. On main's cluster itself nextval
// runs natively and is always right.

// SequenceSource hands out values of main-group sequences. Next returns n
// values of seq (schema-qualified as SQL spells it, e.g.
// public.orders_id_seq), each unique for the sequence's life, in the
// order the statement uses them. The proxy implements it over blocks
// reserved on the main cluster.
type SequenceSource interface {
	Next(seq string, n int) ([]int64, error)
}

// drawer is a primitive whose targets need drawn sequence values.
type drawer interface {
	targetsWith(pl *Plan, params []Param, seqs SequenceSource) ([]Target, error)
}

// drawValues draws the values of one execution: draws names the sequence
// of each, in statement order; each sequence is asked once.
func drawValues(draws []string, seqs SequenceSource) ([]int64, error) {
	if len(draws) == 0 {
		return nil, nil
	}
	if seqs == nil {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported,
			"the statement needs values of sequence %s, which only a running proxy draws", draws[0])
	}
	var order []string
	counts := map[string]int{}
	for _, s := range draws {
		if counts[s] == 0 {
			order = append(order, s)
		}
		counts[s]++
	}
	got := make(map[string][]int64, len(order))
	for _, s := range order {
		vs, err := seqs.Next(s, counts[s])
		if err != nil {
			return nil, err
		}
		if len(vs) != counts[s] {
			return nil, sqlerr.New(sqlerr.InternalError, "sequence %s gave %d values for %d", s, len(vs), counts[s])
		}
		got[s] = vs
	}
	out := make([]int64, len(draws))
	for i, s := range draws {
		out[i] = got[s][0]
		got[s] = got[s][1:]
	}
	return out, nil
}

// shortSequence drops the public schema from a sequence name for display.
func shortSequence(seq string) string {
	return strings.TrimPrefix(seq, topology.DefaultSchema+".")
}

// listedSequence returns the main group's sequence a name (as nextval's
// regclass argument spells it) refers to, schema-qualified.
func (p *Planner) listedSequence(name string) (string, bool) {
	q, err := topology.ParseQualifiedName(name)
	if err != nil {
		return "", false
	}
	main := p.vs.Topology().Main()
	if main == nil {
		return "", false
	}
	for _, s := range main.Sequences {
		if s == q {
			return s.String(), true
		}
	}
	return "", false
}

// mainSequence is listedSequence widened to every sequence: an object the
// topology does not name lives in the main group, so nextval('s') of an
// unlisted s draws from main too. listed tells which it was.
func (p *Planner) mainSequence(name string) (seq string, listed, ok bool) {
	if s, ok := p.listedSequence(name); ok {
		return s, true, true
	}
	q, err := topology.ParseQualifiedName(name)
	if err != nil {
		return "", false, false
	}
	if t := p.vs.Table(q.Schema, q.Name); t != nil && t.Named {
		return "", false, false // a table of the topology, not a sequence
	}
	return q.String(), false, true
}

// nextvalSequence recognizes nextval('seq') (also pg_catalog.nextval, and
// 'seq'::regclass) of a sequence main lists.
func (p *Planner) nextvalSequence(n *pg.Node) (*pg.FuncCall, string, bool) {
	fc, ok := n.GetNode().(*pg.Node_FuncCall)
	if !ok {
		return nil, "", false
	}
	f := fc.FuncCall
	names := f.Funcname
	if len(names) == 0 || len(names) > 2 || stringValue(names[len(names)-1]) != "nextval" ||
		len(names) == 2 && stringValue(names[0]) != "pg_catalog" ||
		len(f.Args) != 1 || f.AggStar || f.AggDistinct || f.FuncVariadic || f.Over != nil ||
		f.AggFilter != nil || len(f.AggOrder) > 0 {
		return nil, "", false
	}
	arg := f.Args[0]
	for {
		tc, ok := arg.GetNode().(*pg.Node_TypeCast)
		if !ok {
			break
		}
		if t := tc.TypeCast.TypeName; t == nil || len(t.Names) == 0 ||
			!isOneOf(stringValue(t.Names[len(t.Names)-1]), []string{"regclass", "text", "varchar", "unknown"}) {
			return nil, "", false
		}
		arg = tc.TypeCast.Arg
	}
	c, ok := arg.GetNode().(*pg.Node_AConst)
	if !ok {
		return nil, "", false
	}
	sv, ok := c.AConst.Val.(*pg.A_Const_Sval)
	if !ok {
		return nil, "", false
	}
	seq, _, ok := p.mainSequence(sv.Sval.Sval)
	return f, seq, ok
}

// nextvalCall is one nextval('seq') of a listed sequence in a statement.
type nextvalCall struct {
	call      *pg.FuncCall
	seq       string
	inSublink bool // inside a subquery, which may run it any number of times
}

// nextvalCalls lists the nextval calls of listed sequences in a tree,
// marking those inside a subquery (m itself may be one).
func (p *Planner) nextvalCalls(m *pg.Node) []nextvalCall {
	var out []nextvalCall
	var visit func(n *pg.Node, inSub bool)
	visit = func(n *pg.Node, inSub bool) {
		walk(n, func(c *pg.Node) bool {
			if fc, seq, ok := p.nextvalSequence(c); ok {
				out = append(out, nextvalCall{call: fc, seq: seq, inSublink: inSub})
				return false
			}
			if c != n && isSubquery(c) {
				visit(c, true)
				return false
			}
			return true
		})
	}
	visit(m, isSubquery(m))
	return out
}

// isSubquery reports the nodes whose body may run any number of times
// per evaluation of the expression around them.
func isSubquery(n *pg.Node) bool {
	switch n.GetNode().(type) {
	case *pg.Node_SubLink, *pg.Node_RangeSubselect, *pg.Node_CommonTableExpr:
		return true
	}
	return false
}

// nextvalRefused is the refusal of a nextval call the proxy cannot draw.
func nextvalRefused(seq, where string) error {
	return sqlerr.New(sqlerr.FeatureNotSupported,
		"nextval('%s') is supported here only in the VALUES rows of an INSERT and in a table-less SELECT", shortSequence(seq)).
		WithDetail("Sequence %s lives in the main group; this statement runs on %s, where nextval would not draw from it.", shortSequence(seq), where).
		WithHint("Draw the value first (SELECT nextval('%s')) and pass it to the statement.", shortSequence(seq))
}

// sequencePass runs after a statement is planned: it refuses nextval
// calls of main's sequences that would run on another cluster, and puts a
// SequenceFill over plans whose calls the proxy draws (a table-less
// SELECT, an INSERT ... VALUES into a reference table). EXPLAIN's inner
// statement has its own pass (buildExplain).
func (p *Planner) sequencePass(pl *Plan, stmt *pg.Node) error {
	if _, ok := stmt.GetNode().(*pg.Node_ExplainStmt); ok || pl.Kind == Prepare || !containsFoldASCII(pl.SQL, "nextval") {
		return nil
	}
	calls := p.nextvalCalls(stmt)
	if len(calls) == 0 {
		return nil
	}
	resolved := 0
	if _, ok := ReadOf(pl); ok {
		return nil // the SELECT runs on the coordinator, main's cluster: nextval runs natively
	}
	if s, ok := pl.Root.(*InsertSplit); ok {
		resolved = s.nextvals
	}
	if resolved >= len(calls) {
		return nil
	}
	onMain, where := p.runsOnMain(pl.Root)
	if onMain && resolved == 0 {
		if f := p.tablelessNextval(pl, stmt, calls); f != nil {
			pl.Root = f
		}
		return nil // main holds the sequence: nextval runs natively
	}
	if r, ok := pl.Root.(*Route); ok && resolved == 0 && pl.Kind == Insert {
		if f, err := p.insertNextval(pl, r, stmt, calls); err != nil || f != nil {
			if f != nil {
				pl.Root = f
			}
			return err
		}
	}
	for _, c := range calls {
		if c.inSublink {
			return nextvalRefused(c.seq, where)
		}
	}
	return nextvalRefused(calls[0].seq, where)
}

// nextvalInSubquery refuses nextval in a subquery of an INSERT's VALUES:
// the subquery may call it any number of times.
func nextvalInSubquery(seq, table string) error {
	return sqlerr.New(sqlerr.FeatureNotSupported,
		"nextval('%s') inside a subquery of an INSERT into %s is not supported", shortSequence(seq), table).
		WithHint("Call nextval('%s') directly in the VALUES row.", shortSequence(seq))
}

// runsOnMain reports whether every cluster a plan can run on is main's
// cluster, and otherwise names where it runs, for messages.
func (p *Planner) runsOnMain(root Primitive) (bool, string) {
	mainCluster := p.vs.Main().Clusters[0]
	onMain, where := true, ""
	check := func(g *vschema.Group) {
		for _, c := range g.Clusters {
			if c != mainCluster && onMain {
				onMain = false
				where = "group " + g.Name + " (" + strings.Join(g.Clusters, ", ") + ")"
			}
		}
	}
	var visit func(pr Primitive)
	visit = func(pr Primitive) {
		switch x := pr.(type) {
		case nil:
			return
		case *Route:
			check(x.Group)
		case *InsertSplit:
			check(x.Group)
		case *SessionSet:
			check(x.Group)
		}
		for _, in := range pr.Inputs() {
			visit(in)
		}
	}
	visit(root)
	return onMain, where
}

// tablelessNextval plans SELECT nextval('seq'), ... without FROM as a
// SequenceFill: the proxy draws the values from its cached block and main
// only evaluates the rest. Anything that may evaluate nextval other than
// once per call (a FROM list, WHERE, a subquery, a set operation) stays
// native on main, which is right, just not cached.
func (p *Planner) tablelessNextval(pl *Plan, stmt *pg.Node, calls []nextvalCall) *SequenceFill {
	r, ok := pl.Root.(*Route)
	sel, isSel := stmt.GetNode().(*pg.Node_SelectStmt)
	if !ok || !isSel || pl.Kind != Select {
		return nil
	}
	s := sel.SelectStmt
	if len(s.FromClause) > 0 || s.WhereClause != nil || len(s.GroupClause) > 0 || s.HavingClause != nil ||
		s.Op != pg.SetOperation_SETOP_NONE || s.WithClause != nil || len(s.ValuesLists) > 0 ||
		s.LimitCount != nil || s.LimitOffset != nil || s.IntoClause != nil || len(s.LockingClause) > 0 ||
		len(s.WindowClause) > 0 {
		return nil
	}
	for _, c := range calls {
		if c.inSublink {
			return nil
		}
		if _, listed := p.listedSequence(strings.TrimPrefix(c.seq, topology.DefaultSchema+".")); !listed {
			return nil // an unlisted sequence on main: nextval runs natively there
		}
	}
	f, err := newSequenceFill(pl.SQL, r, calls, formNamed)
	if err != nil {
		return nil
	}
	return f
}

// insertNextval plans INSERT ... VALUES (nextval('seq'), ...) into a
// table outside main's cluster that is not sharded (a reference table's
// copies, another unsharded group): every copy gets the same drawn
// values. It returns nil, nil when the statement is not of that shape.
func (p *Planner) insertNextval(pl *Plan, r *Route, stmt *pg.Node, calls []nextvalCall) (*SequenceFill, error) {
	ins, ok := stmt.GetNode().(*pg.Node_InsertStmt)
	if !ok {
		return nil, nil
	}
	sel, _ := ins.InsertStmt.SelectStmt.GetNode().(*pg.Node_SelectStmt)
	if sel == nil || !isPlainValues(sel.SelectStmt) {
		return nil, nil
	}
	var inValues []nextvalCall
	for _, row := range sel.SelectStmt.ValuesLists {
		for _, c := range p.nextvalCalls(row) {
			if c.inSublink {
				return nil, nextvalInSubquery(c.seq, ins.InsertStmt.Relation.Relname)
			}
			inValues = append(inValues, c)
		}
	}
	if len(inValues) != len(calls) {
		return nil, nil
	}
	f, err := newSequenceFill(pl.SQL, r, inValues, formCast)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// SequenceFill runs its Route with the statement's nextval('seq') calls
// replaced by values the proxy draws: a table-less SELECT nextval on main,
// or an INSERT ... VALUES into the copies of a reference table, which must
// all get the same values.
type SequenceFill struct {
	Route *Route
	seg   sqlSegment
	draws []string
}

func newSequenceFill(sql string, r *Route, calls []nextvalCall, form fillForm) (*SequenceFill, error) {
	sc, err := scanSQL(sql)
	if err != nil {
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, "cannot find the nextval calls of the statement")
	}
	f := &SequenceFill{Route: r, seg: sc.segment(0, len(sql))}
	for i, c := range calls {
		start := int(c.call.Location)
		end := sc.callEnd(start)
		if end < 0 {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, "cannot find the nextval call at offset %d", start)
		}
		f.seg.fills = append(f.seg.fills, fillSpan{start: start, end: end, draw: i, form: form})
		f.draws = append(f.draws, c.seq)
	}
	return f, nil
}

// Name implements Primitive.
func (f *SequenceFill) Name() string { return "SequenceFill" }

// Inputs implements Primitive: the Route it runs.
func (f *SequenceFill) Inputs() []Primitive { return []Primitive{f.Route} }

func (f *SequenceFill) mode() RouteMode { return f.Route.mode() }

func (f *SequenceFill) targets(pl *Plan, params []Param) ([]Target, error) {
	return f.targetsWith(pl, params, nil)
}

func (f *SequenceFill) targetsWith(pl *Plan, params []Param, seqs SequenceSource) ([]Target, error) {
	vals, err := drawValues(f.draws, seqs)
	if err != nil {
		return nil, err
	}
	ts, err := f.Route.targets(pl, params)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	f.seg.write(&b, func(n int) int { return n }, vals)
	for i := range ts {
		ts[i].SQL = b.String()
	}
	return ts, nil
}

func (f *SequenceFill) describeSQL() string {
	var b strings.Builder
	f.seg.write(&b, func(n int) int { return n }, nil)
	return b.String()
}

func (f *SequenceFill) explain(w *explainWriter, pl *Plan, depth int) {
	names := make([]string, len(f.draws))
	for i, s := range f.draws {
		names[i] = shortSequence(s)
	}
	w.line(depth, "SequenceFill draws=%s", strings.Join(names, ", "))
	f.Route.explain(w, pl, depth+1)
}

// containsFoldASCII reports whether s contains sub, ignoring ASCII case.
func containsFoldASCII(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if equalFoldASCII(s[i:i+len(sub)], sub) {
			return true
		}
	}
	return false
}
