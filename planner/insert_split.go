package planner

import (
	"sort"
	"strconv"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/shardgate/shardgate/sqlerr"
	"github.com/shardgate/shardgate/vschema"
)

// InsertSplit sends each row of a multi-row INSERT ... VALUES to the shard
// its key maps to: one statement per cluster, holding only that cluster's
// rows. The rewrite is textual: the statement is cut, once, into the text
// before the first row, each row, and the text after the last row, so
// Targets only concatenates strings (and renumbers $n) at execution, and
// every byte the client wrote (casts, comments, RETURNING, ON CONFLICT)
// reaches the backend unchanged.
//
// It also carries every INSERT ... VALUES into a sharded table that needs
// values from main-group sequences (an omitted or DEFAULT sequence column,
// nextval('seq') in a row), even of one row: the values are drawn at
// execution (SequenceSource), routed on when the sequence column is the
// shard key, and written into each row as integer literals. Literals, not
// extra parameters: the rewritten statement differs per execution anyway
// (it is parsed unnamed on the backend, like every split), a literal needs
// no type OID or format code in Bind, and the simple and extended
// protocols share one rewrite.
type InsertSplit struct {
	Group *vschema.Group
	Table string
	Rows  []KeyRef // one key per row, in statement order

	prefix, suffix sqlSegment
	rows           []sqlSegment
	numParams      int
	// draws names the sequence of each value drawn per execution, in
	// statement order (row by row, left to right): the order in which
	// Postgres would call nextval.
	draws []string
	// nextvals counts the nextval('seq') calls of the statement the
	// draws replace.
	nextvals int
	// maySkip is set when ON CONFLICT can return no row for an input row
	// (DO NOTHING, DO UPDATE ... WHERE): RETURNING rows then cannot be
	// matched to input rows by counting, see Target.Each.
	maySkip bool
	// returning: the INSERT has RETURNING (not only returns rows, as
	// EXPLAIN INSERT does), so a split must put them in statement order.
	returning bool
	// mergeValues: the statement is a MERGE whose VALUES source is split
	// by the key it joins on (merge_values.go).
	mergeValues bool
}

// sqlSegment is a piece of statement text and where its $n and its drawn
// sequence values sit in it.
type sqlSegment struct {
	text   string
	params []paramSpan
	fills  []fillSpan // sorted by start
}

type paramSpan struct{ start, end, n int }

// fillSpan is where a drawn value goes: text[start:end] (empty for an
// insertion) is replaced by lead and the value in the span's form.
type fillSpan struct {
	start, end int
	draw       int
	lead       string
	form       fillForm
}

// fillForm is how a drawn value is written.
type fillForm uint8

const (
	// formLiteral: 1234, in place of DEFAULT or for an omitted column,
	// where the value is assigned to the column as is.
	formLiteral fillForm = iota
	// formCast: (1234::bigint), in place of a nextval() call inside an
	// expression: nextval's type, and safe after any operator.
	formCast
	// formNamed: (SELECT 1234::bigint AS nextval), in place of a nextval()
	// call in a select list: a scalar subquery takes its column name from
	// its target, so the result column is still called "nextval".
	formNamed
)

func (f fillSpan) render(b *strings.Builder, v int64) {
	b.WriteString(f.lead)
	n := strconv.FormatInt(v, 10)
	switch f.form {
	case formCast:
		b.WriteString("(" + n + "::bigint)")
	case formNamed:
		b.WriteString("(SELECT " + n + "::bigint AS nextval)")
	default:
		b.WriteString(n)
	}
}

// write appends the segment with its parameters renumbered and its fills
// replaced by the drawn values (vals indexed by draw; nil writes 0, for
// describing the statement).
func (seg *sqlSegment) write(b *strings.Builder, renumber func(int) int, vals []int64) {
	from := 0
	pi, fi := 0, 0
	for pi < len(seg.params) || fi < len(seg.fills) {
		if fi < len(seg.fills) && (pi == len(seg.params) || seg.fills[fi].start <= seg.params[pi].start) {
			f := seg.fills[fi]
			fi++
			b.WriteString(seg.text[from:f.start])
			var v int64
			if vals != nil {
				v = vals[f.draw]
			}
			f.render(b, v)
			from = f.end
			for pi < len(seg.params) && seg.params[pi].start < f.end {
				pi++ // inside the replaced text
			}
			continue
		}
		p := seg.params[pi]
		pi++
		b.WriteString(seg.text[from:p.start])
		b.WriteString("$" + strconv.Itoa(renumber(p.n)))
		from = p.end
	}
	b.WriteString(seg.text[from:])
}

// seqFill is where one drawn value goes, as the analysis finds it in the
// parse tree; newInsertSplit turns it into a fillSpan of its row's text.
type seqFill struct {
	kind fillKind
	loc  int // byte offset in the statement (fillDefault, fillCall)
	seq  string
	draw int
}

type fillKind uint8

const (
	fillAppend  fillKind = iota // an omitted sequence column: appended to the row
	fillDefault                 // DEFAULT for the sequence column
	fillCall                    // nextval('seq') of a sequence main lists
)

func newInsertSplit(sql string, g *vschema.Group, rel *relInfo, info *insertInfo, returning, maySkip bool) (*InsertSplit, error) {
	refuse := func() error {
		return sqlerr.New(sqlerr.FeatureNotSupported,
			"cannot split this INSERT into %s by shard", rel.display).
			WithHint("Insert the rows one statement at a time.")
	}
	rows := info.rows
	s := &InsertSplit{Group: g, Table: rel.display, Rows: rows, draws: info.draws, nextvals: info.nextvals, returning: returning, maySkip: maySkip}
	sc, err := scanSQL(sql)
	if err != nil {
		return nil, refuse()
	}
	if info.defaultValues {
		// INSERT INTO t DEFAULT VALUES becomes INSERT INTO t (col) VALUES (v).
		start, end, ok := sc.defaultValuesSpan()
		if !ok || len(rows) != 1 {
			return nil, refuse()
		}
		s.prefix = sc.segment(0, start)
		s.prefix.insertText(len(s.prefix.text), "("+info.addColumn+") VALUES ")
		s.suffix = sc.segment(end, len(sql))
		s.rows = []sqlSegment{{text: "()"}}
		if !s.addFills(0, info.fills[0], sc, stmtSpan{}) {
			return nil, refuse()
		}
	} else {
		spans, suffixStart, ok := sc.valuesRows(info.values)
		if !ok || len(spans) != len(rows) {
			return nil, refuse()
		}
		prefixEnd := spans[0].start
		s.prefix = sc.segment(0, prefixEnd)
		s.suffix = sc.segment(suffixStart, len(sql))
		if info.addColumn != "" {
			at := sc.columnListEnd(info.lastColLoc)
			if at < 0 || at >= prefixEnd {
				return nil, refuse()
			}
			s.prefix.insertText(at, ", "+info.addColumn)
		}
		for i, sp := range spans {
			s.rows = append(s.rows, sc.segment(sp.start, sp.end))
			if i < len(info.fills) {
				if !s.addFills(i, info.fills[i], sc, sp) {
					return nil, refuse()
				}
			}
		}
	}
	for _, seg := range append([]sqlSegment{s.prefix, s.suffix}, s.rows...) {
		for _, p := range seg.params {
			if p.n > s.numParams {
				s.numParams = p.n
			}
		}
	}
	return s, nil
}

// addFills places the drawn values of row i, whose text is
// sc.src[sp.start:sp.end] (the tree's fill locations are offsets of the
// statement). false when a fill is not where the tree says.
func (s *InsertSplit) addFills(i int, fills []seqFill, sc scanned, sp stmtSpan) bool {
	seg := &s.rows[i]
	for _, f := range fills {
		fs := fillSpan{draw: f.draw}
		switch f.kind {
		case fillAppend:
			fs.start = len(seg.text) - 1 // before the row's ')'
			fs.end = fs.start
			if strings.TrimSpace(seg.text[1:fs.start]) != "" {
				fs.lead = ", "
			}
		case fillDefault:
			// SetToDefault's location is its DEFAULT keyword.
			t := sc.startsAt(f.loc)
			if !sc.is(t, pg.Token_DEFAULT) || sc.end(t) > sp.end {
				return false
			}
			fs.start, fs.end = f.loc-sp.start, sc.end(t)-sp.start
		case fillCall:
			end := sc.callEnd(f.loc)
			if f.loc < sp.start || end < 0 || end > sp.end {
				return false
			}
			fs.start, fs.end = f.loc-sp.start, end-sp.start
			fs.form = formCast
		}
		seg.fills = append(seg.fills, fs)
	}
	sort.SliceStable(seg.fills, func(a, b int) bool { return seg.fills[a].start < seg.fills[b].start })
	return true
}

// columnListEnd returns the offset of the ')' that closes an INSERT's
// column list, given the offset of its last column (a ResTarget's
// location), or -1.
func (s scanned) columnListEnd(lastCol int) int {
	i := s.startsAt(lastCol)
	if i < 0 {
		return -1
	}
	depth := 0
	for ; i < len(s.toks); i++ {
		depth += bracketDelta(s.toks[i])
		if depth < 0 {
			if !s.is(i, pg.Token_ASCII_41) {
				return -1
			}
			return s.start(i)
		}
	}
	return -1
}

// defaultValuesSpan finds "DEFAULT VALUES" at the top level of an INSERT
// (the tree records no location for it).
func (s scanned) defaultValuesSpan() (start, end int, ok bool) {
	depth := 0
	prev := -1 // the previous token that is not a comment
	for i, t := range s.toks {
		if isCommentToken(t) {
			continue
		}
		depth += bracketDelta(t)
		if depth == 0 && t.Token == pg.Token_VALUES && prev >= 0 && s.is(prev, pg.Token_DEFAULT) {
			return s.start(prev), s.end(i), true
		}
		prev = i
	}
	return 0, 0, false
}

// valuesRows finds the rows of the statement's top-level VALUES list: the
// span of each row, from its '(' to its ')', and where the text after the
// last row starts. The tree's List of a row records no location, so the
// rows are cut at the tokens; each row must hold the location of its
// first value in the tree (values, the VALUES list as parsed).
func (s scanned) valuesRows(values *pg.SelectStmt) (rows []stmtSpan, suffixStart int, ok bool) {
	depth := 0
	i := 0
	for ; i < len(s.toks); i++ {
		depth += bracketDelta(s.toks[i])
		if depth == 0 && s.toks[i].Token == pg.Token_VALUES {
			break
		}
	}
	return s.valuesRowsAfter(i, values)
}

// valuesRowsAfter is valuesRows for the VALUES keyword at token i.
func (s scanned) valuesRowsAfter(i int, values *pg.SelectStmt) (rows []stmtSpan, suffixStart int, ok bool) {
	for i = s.next(i + 1); s.is(i, pg.Token_ASCII_40); i = s.next(i + 1) {
		j := s.closing(i)
		if j < 0 {
			return nil, 0, false
		}
		rows = append(rows, stmtSpan{s.start(i), s.end(j)})
		suffixStart = s.end(j)
		if i = s.next(j + 1); !s.is(i, pg.Token_ASCII_44) {
			break
		}
	}
	if values == nil || len(rows) != len(values.ValuesLists) {
		return nil, 0, false
	}
	for r, row := range values.ValuesLists {
		list, isList := row.Node.(*pg.Node_List)
		if !isList || len(list.List.Items) == 0 {
			return nil, 0, false
		}
		if loc := nodeLocation(list.List.Items[0]); loc >= 0 && (loc <= rows[r].start || loc >= rows[r].end) {
			return nil, 0, false
		}
	}
	return rows, suffixStart, true
}

// Name implements Primitive.
func (s *InsertSplit) Name() string {
	if s.mergeValues {
		return "MergeSplit"
	}
	return "InsertSplit"
}

// Inputs implements Primitive.
func (s *InsertSplit) Inputs() []Primitive { return nil }

func (s *InsertSplit) mode() RouteMode { return ModeScatter }

func (s *InsertSplit) targets(pl *Plan, params []Param) ([]Target, error) {
	return s.targetsWith(pl, params, nil)
}

func (s *InsertSplit) targetsWith(pl *Plan, params []Param, seqs SequenceSource) ([]Target, error) {
	vals, err := drawValues(s.draws, seqs)
	if err != nil {
		return nil, err
	}
	shards := make([]*vschema.Shard, len(s.Rows))
	for i, k := range s.Rows {
		if s.mergeValues && nullParamKey(k, params) {
			return nil, errMergeValuesRow(s.Table, i+1, "is NULL: it matches no row and would insert one without a shard")
		}
		sh, err := shardFor(s.Group, k.withDraws(vals), params)
		if err == nil && sh == nil {
			err = sqlerr.New(sqlerr.InternalError, "row %d of the INSERT has no shard", i+1)
			if s.mergeValues {
				err = errMergeValuesRow(s.Table, i+1, "equals no shard key value (a number with a fraction): it matches no row and would insert one under another key")
			}
		}
		if err != nil {
			return nil, err
		}
		shards[i] = sh
	}
	ts := targetsByCluster(s.Group, shards)
	if len(ts) == 1 && len(s.draws) == 0 {
		return ts, nil // every row on one cluster: the statement as written
	}
	for i := range ts {
		var rows []int
		for r, sh := range shards {
			if sh.Cluster == ts[i].Cluster {
				rows = append(rows, r)
			}
		}
		ts[i].SQL, ts[i].Params = s.rewrite(rows, vals, true)
		if !s.returning || pl.Kind != Insert || len(ts) == 1 {
			// (EXPLAIN INSERT ... RETURNING returns plan lines, in
			// whatever order the clusters explain.)
			continue
		}
		ts[i].Rows = rows
		if s.maySkip && len(rows) > 1 {
			for _, r := range rows {
				sql, ps := s.rewrite([]int{r}, vals, true)
				ts[i].Each = append(ts[i].Each, Target{Cluster: ts[i].Cluster, Shards: []string{shards[r].Name}, SQL: sql, Params: ps, Rows: []int{r}})
			}
		}
	}
	return ts, nil
}

// describeSQL is the statement to describe on a backend: with drawn values
// written in (as 0), so that nextval() of a sequence the cluster lacks is
// not parsed there. "" when the statement needs no rewrite.
func (s *InsertSplit) describeSQL() string {
	if len(s.draws) == 0 {
		return ""
	}
	rows := make([]int, len(s.rows))
	for i := range rows {
		rows[i] = i
	}
	sql, _ := s.rewrite(rows, nil, false)
	return sql
}

// rewrite builds the statement holding only the given rows, with the
// parameters it still uses renumbered from $1 in ascending order of their
// original numbers (renumber false keeps them as they are), and the
// drawn values written in.
func (s *InsertSplit) rewrite(rows []int, vals []int64, renumber bool) (string, []int) {
	if s.mergeValues {
		return s.mergeRewrite(rows), nil
	}
	segs := make([]*sqlSegment, 0, len(rows)+2)
	segs = append(segs, &s.prefix)
	for _, r := range rows {
		segs = append(segs, &s.rows[r])
	}
	segs = append(segs, &s.suffix)

	var used []int
	if s.numParams > 0 && renumber {
		seen := make([]bool, s.numParams+1)
		for _, seg := range segs {
			for _, p := range seg.params {
				seen[p.n] = true
			}
		}
		for n := 1; n <= s.numParams; n++ {
			if seen[n] {
				used = append(used, n)
			}
		}
	}
	renum := func(n int) int { return n }
	if used != nil {
		renum = func(n int) int { return sort.SearchInts(used, n) + 1 }
	}

	var b strings.Builder
	for i, seg := range segs {
		if i > 1 && i < len(segs)-1 {
			b.WriteString(", ")
		}
		seg.write(&b, renum, vals)
	}
	if used == nil {
		return b.String(), nil
	}
	idx := make([]int, len(used))
	for i, n := range used {
		idx[i] = n - 1
	}
	return b.String(), idx
}

func (s *InsertSplit) explain(w *explainWriter, pl *Plan, depth int) {
	g := s.Group
	plain := g.Index.Expr == nil
	w.line(depth, "%s group=%s index=%s table=%s rows=%d", s.Name(), g.Name, g.Index.Name, s.Table, len(s.Rows))
	for i, k := range s.Rows {
		row := "row " + strconv.Itoa(i+1) + ": key=" + k.render(w.params, plain)
		switch {
		case k.hasDraw():
			row += " -> drawn at execution"
		case w.resolvable([]KeyRef{k}):
			if sh, err := shardFor(g, k, w.params); err != nil {
				row += " -> error: " + errorMessage(err)
			} else if sh != nil {
				row += " -> " + sh.Name + " (" + sh.Cluster + ")"
			}
		}
		if i < len(s.rows) && len(s.rows[i].fills) > 0 {
			var names []string
			for _, f := range s.rows[i].fills {
				names = append(names, shortSequence(s.draws[f.draw]))
			}
			row += "; draws " + strings.Join(names, ", ")
		}
		w.line(depth+1, "%s", row)
	}
	w.line(depth+1, "sql: %s", oneLine(pl.SQL))
}
