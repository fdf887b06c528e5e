package planner

import (
	"strconv"

	pg "github.com/pganalyze/pg_query_go/v6"

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
	// Scroll is set for DECLARE ... SCROLL; Binary for DECLARE BINARY
	// (FETCH then returns rows in binary format).
	Scroll, Binary bool
}

// Cursor options of DECLARE (src/include/nodes/parsenodes.h).
const (
	cursorOptBinary = 0x0001
	cursorOptScroll = 0x0002
	cursorOptHold   = 0x0020
)

// buildDeclareCursor allows cursors where one backend holds them: main or
// another unsharded group, or a single shard. A cursor over a read that
// spans clusters would need the merge behind a cursor: refused.
func (p *Planner) buildDeclareCursor(pl *Plan, d *pg.DeclareCursorStmt) error {
	pl.Kind = DeclareCursor
	a := newAnalysis(p)
	top := a.statementLevel(nil, d.Query, true)
	r, err := a.decide(top)
	if err != nil {
		return err
	}
	if r.mode() != ModeSingle {
		return sqlerr.New(sqlerr.FeatureNotSupported, "a cursor over %s across shards is not supported", r.Tables).
			WithHint("Pin the query to one shard, or read it without a cursor.")
	}
	pl.Root = r
	pl.Cursor = &CursorInfo{
		Name:     d.Portalname,
		WithHold: d.Options&cursorOptHold != 0,
		Scroll:   d.Options&cursorOptScroll != 0,
		Binary:   d.Options&cursorOptBinary != 0,
	}
	return nil
}

// buildFetch plans FETCH and MOVE: they run where the cursor is.
func buildFetch(pl *Plan, f *pg.FetchStmt) {
	pl.Kind, pl.Returns = Fetch, true
	if f.Ismove {
		pl.Kind, pl.Returns = Move, false
	}
	pl.Cursor = &CursorInfo{Name: f.Portalname}
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
