package planner

import (
	"errors"
	"sort"
	"strconv"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// ShardSQL is the statement a Route sends to each of several clusters when
// it differs from the client's: the rewrite of a merge (hidden sort
// columns, aggregate pieces, LIMIT offset+count) and the IN list that pins
// the route, cut down to each cluster's own keys.
//
// The rewrite happens once, at plan time, on the parse tree, which is then
// deparsed with marker identifiers where per-execution text goes (the IN
// list's items, the shard LIMIT). Targets only concatenates strings and
// renumbers $n, as InsertSplit does: no parse at execution.
type ShardSQL struct {
	// Text is the deparsed statement with the holes filled for EXPLAIN:
	// every IN item, and the shard LIMIT as written.
	Text string

	parts []sqlSegment // text around the holes: len(holes)+1
	holes []shardHole
	// items are the IN list's items as SQL, aligned with Route.Keys;
	// nil when the list is not pruned.
	items []sqlSegment
	// or: the items are an OR's branches, joined with OR in
	// parentheses (prune_lists.go); else an IN list's, joined with commas.
	or bool
	// array: the hole is an ANY array literal (prune_arrays.go), items
	// its one original; fill is given each cluster's literal.
	array bool
	// limit is the client's LIMIT/OFFSET, sent as LIMIT offset+count.
	limit *Limit
}

type shardHole uint8

const (
	holeInList shardHole = iota + 1
	holeLimit
)

// Marker identifiers deparsed where holes go. A statement that itself
// names them is simply not pruned (see newShardSQL).
const (
	markerInList = "sg_hole_in_list"
	markerLimit  = "sg_hole_limit"
)

func markerNode(name string) *pg.Node {
	return &pg.Node{Node: &pg.Node_ColumnRef{ColumnRef: &pg.ColumnRef{
		Fields: []*pg.Node{{Node: &pg.Node_String_{String_: &pg.String{Sval: name}}}},
	}}}
}

// newShardSQL deparses stmt, whose IN list (if in is set) and LIMIT (if
// limit is set) hold marker identifiers, into a template. items are the
// IN list's original items, aligned with the route's keys; or: they are
// the branches of an OR the marker stands for.
func newShardSQL(stmt *pg.Node, items []*pg.Node, or bool, limit *Limit) (*ShardSQL, error) {
	text, err := deparse(stmt)
	if err != nil {
		return nil, err
	}
	if err := checkRoundTrip(stmt, text); err != nil {
		return nil, err
	}
	sh := &ShardSQL{limit: limit, or: or}
	type cut struct {
		at   int
		kind shardHole
		n    int
	}
	var cuts []cut
	if items != nil {
		i := strings.Index(text, markerInList)
		if i < 0 || strings.Count(text, markerInList) != 1 {
			return nil, errNoTemplate
		}
		cuts = append(cuts, cut{i, holeInList, len(markerInList)})
		for _, it := range items {
			s, ok := itemText(it)
			if !ok {
				var err error
				if s, err = deparseExpr(it); err != nil {
					return nil, err
				}
			}
			sh.items = append(sh.items, newSegment(s))
		}
	}
	if limit != nil {
		i := strings.Index(text, markerLimit)
		if i < 0 || strings.Count(text, markerLimit) != 1 {
			return nil, errNoTemplate
		}
		cuts = append(cuts, cut{i, holeLimit, len(markerLimit)})
	}
	sort.Slice(cuts, func(i, j int) bool { return cuts[i].at < cuts[j].at })
	from := 0
	for _, c := range cuts {
		sh.parts = append(sh.parts, newSegment(text[from:c.at]))
		sh.holes = append(sh.holes, c.kind)
		from = c.at + c.n
	}
	sh.parts = append(sh.parts, newSegment(text[from:]))
	all := make([]int, len(sh.items))
	for i := range all {
		all[i] = i
	}
	sh.Text = sh.render(all, "", sh.explainLimit(), nil)
	return sh, nil
}

// checkRoundTrip makes sure the deparsed text parses back into the tree it
// was printed from (positions aside): a shard statement that meant
// something else than the rewrite would be a wrong answer, so a deparser
// slip is refused instead.
func checkRoundTrip(stmt *pg.Node, text string) error {
	tree, err := pg.Parse(text)
	if err != nil {
		return err
	}
	if len(tree.Stmts) != 1 {
		return errRoundTrip
	}
	a := proto.Clone(stmt)
	b := proto.Clone(tree.Stmts[0].Stmt)
	clearLocations(a.ProtoReflect())
	clearLocations(b.ProtoReflect())
	if !proto.Equal(a, b) {
		return errRoundTrip
	}
	return nil
}

var errRoundTrip = errors.New("the deparsed statement does not parse back to the rewrite")

// clearLocations zeroes every "location" field of a parse tree.
func clearLocations(m protoreflect.Message) {
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.Name() == "location" && fd.Kind() == protoreflect.Int32Kind:
			m.Clear(fd)
		case fd.Kind() != protoreflect.MessageKind:
		case fd.IsList():
			l := v.List()
			for i := 0; i < l.Len(); i++ {
				clearLocations(l.Get(i).Message())
			}
		case fd.IsMap():
		default:
			clearLocations(v.Message())
		}
		return true
	})
}

// errNoTemplate: the markers did not survive deparsing as expected; the
// caller falls back to sending the statement unchanged (or refuses).
var errNoTemplate = &templateError{}

type templateError struct{}

func (*templateError) Error() string { return "shard statement template is ambiguous" }

// explainLimit renders the shard LIMIT for EXPLAIN.
func (sh *ShardSQL) explainLimit() string {
	l := sh.limit
	if l == nil {
		return ""
	}
	if l.Count == nil {
		return "ALL"
	}
	if l.Count.Null {
		return "NULL"
	}
	if l.Offset == nil {
		return limitString(l.Count)
	}
	if l.Count.Param == 0 && l.Offset.Param == 0 {
		if off, cnt, err := l.Values(nil); err == nil {
			return shardLimitText(off, cnt)
		}
	}
	return "(" + limitString(l.Offset) + " + " + limitString(l.Count) + ")"
}

// shardLimitText is the LIMIT a shard needs to hand the proxy offset+count
// rows; ALL for no limit (or a sum beyond bigint).
func shardLimitText(offset, count int64) string {
	if count < 0 || offset > (1<<63-1)-count {
		return "ALL"
	}
	return strconv.FormatInt(offset+count, 10)
}

// render concatenates the template with the chosen IN items (or, for an
// ANY array, lit if set) and the limit text, renumbering $n if renumber
// is set.
func (sh *ShardSQL) render(items []int, lit, limit string, renumber func(int) int) string {
	var b strings.Builder
	write := func(seg *sqlSegment) {
		from := 0
		for _, p := range seg.params {
			b.WriteString(seg.text[from:p.start])
			n := p.n
			if renumber != nil {
				n = renumber(n)
			}
			b.WriteString("$" + strconv.Itoa(n))
			from = p.end
		}
		b.WriteString(seg.text[from:])
	}
	for i, h := range sh.holes {
		write(&sh.parts[i])
		switch h {
		case holeInList:
			if lit != "" {
				b.WriteString(lit)
				break
			}
			sep := ", "
			if sh.or {
				sep = " OR "
				b.WriteByte('(')
			}
			for j, it := range items {
				if j > 0 {
					b.WriteString(sep)
				}
				write(&sh.items[it])
			}
			if sh.or {
				b.WriteByte(')')
			}
		case holeLimit:
			b.WriteString(limit)
		}
	}
	write(&sh.parts[len(sh.parts)-1])
	return b.String()
}

// fill builds one cluster's statement: the IN items given (indices into
// the route's keys; ignored without an IN hole) or the ANY array literal
// lit, and the shard LIMIT for
// the parameters. It returns the SQL and the 0-based indices of the
// original parameters it uses, in its $n order (nil when all numParams are
// used unchanged).
func (sh *ShardSQL) fill(items []int, lit string, params []Param, numParams int) (string, []int, error) {
	limit := ""
	if sh.limit != nil {
		off, cnt, err := sh.limit.Values(params)
		if err != nil {
			return "", nil, err
		}
		limit = shardLimitText(off, cnt)
		if limit == "ALL" && sh.limit.WithTies {
			limit = "9223372036854775807" // FETCH FIRST has no ALL
		}
	}
	var used []int
	if numParams > 0 {
		seen := make([]bool, numParams+1)
		mark := func(seg *sqlSegment) {
			for _, p := range seg.params {
				if p.n <= numParams {
					seen[p.n] = true
				}
			}
		}
		for i, h := range sh.holes {
			mark(&sh.parts[i])
			if h == holeInList {
				for _, it := range items {
					mark(&sh.items[it])
				}
			}
		}
		mark(&sh.parts[len(sh.parts)-1])
		for n := 1; n <= numParams; n++ {
			if seen[n] {
				used = append(used, n)
			}
		}
	}
	if len(used) == numParams {
		return sh.render(items, lit, limit, nil), nil, nil
	}
	renumber := func(n int) int { return sort.SearchInts(used, n) + 1 }
	idx := make([]int, len(used))
	for i, n := range used {
		idx[i] = n - 1
	}
	if idx == nil {
		idx = []int{}
	}
	return sh.render(items, lit, limit, renumber), idx, nil
}

// deparseExpr prints one expression as SQL, by deparsing SELECT expr.
func deparseExpr(n *pg.Node) (string, error) {
	stmt := &pg.Node{Node: &pg.Node_SelectStmt{SelectStmt: &pg.SelectStmt{
		TargetList:  []*pg.Node{{Node: &pg.Node_ResTarget{ResTarget: &pg.ResTarget{Val: n}}}},
		Op:          pg.SetOperation_SETOP_NONE,
		LimitOption: pg.LimitOption_LIMIT_OPTION_DEFAULT,
	}}}
	s, err := deparse(stmt)
	if err != nil {
		return "", err
	}
	return strings.TrimPrefix(s, "SELECT "), nil
}

// exprKey identifies an expression by its deparsed text, which ignores
// positions and spelling (case of keywords, spacing): two equal keys are
// the same expression as Postgres will parse it.
func exprKey(n *pg.Node) string {
	s, err := deparseExpr(n)
	if err != nil {
		return ""
	}
	return s
}

// newSegment cuts a piece of deparsed shard-statement text into a segment
// with its $n parameters. It keeps the hand lexer: the text is pg_query's
// deparser output, not the client's, its pieces (cut at template markers)
// and IN-list items are many and small, and a pg_query Scan per item would
// cost a cgo call each for nothing the lexer gets wrong on deparser output.
func newSegment(text string) sqlSegment {
	seg := sqlSegment{text: text}
	l := lexer{src: text}
	for {
		t := l.next()
		if t.kind == tokEOF {
			return seg
		}
		if t.kind == tokParam {
			n, err := strconv.Atoi(text[t.start+1 : t.end])
			if err == nil {
				seg.params = append(seg.params, paramSpan{t.start, t.end, n})
			}
		}
	}
}
