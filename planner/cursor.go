package planner

import (
	"strconv"

	pg "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"github.com/shardgate/shardgate/keyexpr"
	"github.com/shardgate/shardgate/sqlerr"
)

// CursorInfo names the cursor of DECLARE, FETCH, MOVE and CLOSE. A
// cursor lives on the one backend connection where it was declared; the
// proxy keeps, per session, which connection that is.
type CursorInfo struct {
	// Name is the cursor's name as Postgres folds it: lower-cased unless
	// it was double-quoted. "" with All.
	Name string
	// All is set for CLOSE ALL.
	All bool
	// WithHold is set for DECLARE ... WITH HOLD: the cursor outlives the
	// transaction that declared it, so the session keeps its backend
	// connection until the cursor is closed (Plan.Session has
	// SessionPins).
	WithHold bool
	// Scroll is set for DECLARE ... SCROLL, NoScroll for NO SCROLL;
	// Binary for DECLARE BINARY (FETCH then returns rows in binary format).
	Scroll, NoScroll, Binary bool
	// Forward is what FETCH or MOVE asks for, when it goes forward (nil:
	// another direction, or not a FETCH).
	Forward *FetchCount
}

// Cursor options of DECLARE (src/include/nodes/parsenodes.h).
const (
	cursorOptBinary   = 0x0001
	cursorOptScroll   = 0x0002
	cursorOptNoScroll = 0x0004
	cursorOptHold     = 0x0020
)

// buildDeclareCursor plans DECLARE. A cursor over a read one backend
// answers (main or another unsharded group, or a single shard) is
// declared there. Over a read across clusters:
//   - a forward-only cursor without hold is a MergedCursor: a cursor of
//     the same read on every cluster, merged by the proxy as FETCH asks;
//   - a read the merge cannot answer, or a cursor WITH HOLD or SCROLL
//     (which the merge cannot keep or move back in), is declared on the
//     coordinator over intermediate results (Intermediate, whose SQL is
//     the read: Declare wraps it), where Postgres keeps it.
func (p *Planner) buildDeclareCursor(pl *Plan, d *pg.DeclareCursorStmt) error {
	pl.Kind = DeclareCursor
	pl.Cursor = &CursorInfo{
		Name:     d.Portalname,
		WithHold: d.Options&cursorOptHold != 0,
		Scroll:   d.Options&cursorOptScroll != 0,
		NoScroll: d.Options&cursorOptNoScroll != 0,
		Binary:   d.Options&cursorOptBinary != 0,
	}
	a := newAnalysis(p)
	top := a.statementLevel(nil, d.Query, true)
	r, err := a.decide(top)
	if err == nil && r.mode() == ModeSingle {
		pl.Root = r
		return nil
	}
	s := d.Query.GetSelectStmt()
	if s == nil {
		if err == nil {
			err = sqlerr.New(sqlerr.FeatureNotSupported, "a cursor over %s across shards is not supported", r.Tables)
		}
		return err
	}
	sql, derr := deparse(d.Query)
	if derr != nil {
		return sqlerr.New(sqlerr.InternalError, "cannot print the cursor's query: %v", derr)
	}
	read := &Plan{Kind: Select, Returns: true, SQL: sql, NumParams: pl.NumParams}
	if err := p.buildSelect(read, proto.Clone(s).(*pg.SelectStmt)); err != nil {
		return err
	}
	switch read.Mode() {
	case ModeSingle:
		pl.Root = read.Root
		return nil
	case ModeIntermediate:
		pl.Root = read.Root
		return nil
	}
	if pl.Cursor.WithHold || pl.Cursor.Scroll {
		what := "WITH HOLD"
		if !pl.Cursor.WithHold {
			what = "SCROLL"
		}
		cause := sqlerr.New(sqlerr.FeatureNotSupported, "a cursor %s over %s across shards is kept on the coordinator", what, routeTables(read.Root))
		return p.buildIntermediate(pl, proto.Clone(s).(*pg.SelectStmt), cause)
	}
	pl.Root = &MergedCursor{Read: read}
	return nil
}

// routeTables names the tables of a plan's Route.
func routeTables(root Primitive) string {
	for root != nil {
		if r, ok := root.(*Route); ok {
			return r.Tables
		}
		in := root.Inputs()
		if len(in) == 0 {
			break
		}
		root = in[0]
	}
	return "a read"
}

// Declare is the DECLARE of this cursor over the read sql.
func (c *CursorInfo) Declare(sql string) string {
	q := "DECLARE " + keyexpr.QuoteIdentifier(c.Name)
	if c.Binary {
		q += " BINARY"
	}
	if c.Scroll {
		q += " SCROLL"
	} else if c.NoScroll {
		q += " NO SCROLL"
	}
	q += " CURSOR"
	if c.WithHold {
		q += " WITH HOLD"
	}
	return q + " FOR " + sql
}

// MergedCursor is DECLARE of a forward-only cursor without hold over a
// read across clusters (Read, a plan of mode ModeMerge or ModeScatter):
// the proxy declares a cursor of the shard statement on every target
// cluster (in the transaction) and merges their rows as FETCH and MOVE
// ask, fetching a batch from a cluster whenever the merge needs its next
// row, so the proxy holds at most a batch per cluster. The proxy runs it
// itself (mode ModeProxy).
type MergedCursor struct {
	Read *Plan
}

// Name implements Primitive.
func (m *MergedCursor) Name() string { return "MergedCursor" }

// Inputs implements Primitive.
func (m *MergedCursor) Inputs() []Primitive { return []Primitive{m.Read.Root} }

func (m *MergedCursor) mode() RouteMode { return ModeProxy }

func (m *MergedCursor) targets(*Plan, []Param) ([]Target, error) { return nil, nil }

func (m *MergedCursor) explain(w *explainWriter, pl *Plan, depth int) {
	w.line(depth, "MergedCursor cursor=%s (a cursor on every cluster, merged as FETCH asks)", strconv.Quote(pl.Cursor.Name))
	m.Read.Root.explain(w, m.Read, depth+1)
}

// FetchCount is how many rows a FETCH or MOVE going forward asks for
// (FETCH n, FORWARD n, NEXT; All: FETCH ALL, FORWARD ALL).
type FetchCount struct {
	N   int64
	All bool
}

// fetchAll is FETCH ALL's count (FETCH_ALL, LONG_MAX).
const fetchAll = 1<<63 - 1

// buildFetch plans FETCH and MOVE: they run where the cursor is.
func buildFetch(pl *Plan, f *pg.FetchStmt) {
	pl.Kind, pl.Returns = Fetch, true
	if f.Ismove {
		pl.Kind, pl.Returns = Move, false
	}
	pl.Cursor = &CursorInfo{Name: f.Portalname}
	switch {
	case f.Direction == pg.FetchDirection_FETCH_FORWARD && f.HowMany == fetchAll:
		pl.Cursor.Forward = &FetchCount{All: true}
	case f.Direction == pg.FetchDirection_FETCH_FORWARD && f.HowMany > 0:
		pl.Cursor.Forward = &FetchCount{N: f.HowMany}
	}
	pl.Root = &CursorOp{Kind: pl.Kind, Cursor: *pl.Cursor}
}

// buildClose plans CLOSE name and CLOSE ALL.
func buildClose(pl *Plan, c *pg.ClosePortalStmt) {
	pl.Kind = ClosePortal
	pl.Cursor = &CursorInfo{Name: c.Portalname, All: c.Portalname == ""}
	pl.Root = &CursorOp{Kind: pl.Kind, Cursor: *pl.Cursor}
}

// CursorOp is FETCH, MOVE or CLOSE: a statement about a cursor that runs
// where the cursor was declared, which only the session knows (mode
// ModeCursor). Targets returns nothing.
type CursorOp struct {
	Kind   StmtKind // Fetch, Move or ClosePortal
	Cursor CursorInfo
}

// Name implements Primitive.
func (c *CursorOp) Name() string { return "CursorOp" }

// Inputs implements Primitive.
func (c *CursorOp) Inputs() []Primitive { return nil }

func (c *CursorOp) mode() RouteMode { return ModeCursor }

func (c *CursorOp) targets(*Plan, []Param) ([]Target, error) { return nil, nil }

func (c *CursorOp) explain(w *explainWriter, pl *Plan, depth int) {
	if c.Cursor.All {
		w.line(depth, "CursorOp %s ALL", c.Kind)
		w.line(depth+1, "runs on every connection that holds a cursor of the session")
	} else {
		w.line(depth, "CursorOp %s cursor=%s", c.Kind, strconv.Quote(c.Cursor.Name))
		w.line(depth+1, "runs where the cursor was declared")
	}
	w.line(depth+1, "sql: %s", oneLine(pl.SQL))
}
