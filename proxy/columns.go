package proxy

import (
	"strings"
	"sync"
	"sync/atomic"

	"github.com/shardgate/shardgate/backend"
	"github.com/shardgate/shardgate/pgwire"
	"github.com/shardgate/shardgate/planner"
	"github.com/shardgate/shardgate/sqlerr"
	"github.com/shardgate/shardgate/vschema"
)

// The column order of tables, for INSERT without a column list
// (planner/columns.go). The planner asks for a table's columns with a
// planner.ColumnsNeeded error; the session reads them from the catalog of
// a cluster of the table's group, stores them and plans again. Each
// routing (each planner) has its own store, so a reload starts empty.
//
// DDL through the proxy may change a table's columns. DDL outside a
// transaction forgets every stored order, and the plans made with them,
// once it ran. DDL inside a transaction is not visible to other sessions
// until it commits, and may be rolled back: what the transaction reads
// from the catalog after it is kept apart, in a planner of its own
// (txColumns) that the transaction's statements are planned with, and the
// shared store is forgotten again when the transaction ends. DDL run on
// the clusters directly, bypassing the proxy, is not seen: a RELOAD (or a
// DDL statement through the proxy) makes the proxy read the catalog
// again.

// tableColumns is a routing's store of column orders.
type tableColumns struct {
	mu   sync.Mutex
	cols map[string][]string
	// gen counts the forgets: a client's prepared statement planned in
	// an earlier generation is planned again (replan).
	gen atomic.Uint64
}

func newTableColumns() *tableColumns { return &tableColumns{cols: map[string][]string{}} }

// Columns is the planner.ColumnSource.
func (c *tableColumns) Columns(t *vschema.Table) ([]string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cols, ok := c.cols[t.String()]
	return cols, ok
}

func (c *tableColumns) store(t *vschema.Table, cols []string) {
	c.mu.Lock()
	c.cols[t.String()] = cols
	c.mu.Unlock()
}

// forget drops every stored order.
func (c *tableColumns) forget() {
	c.mu.Lock()
	clear(c.cols)
	c.gen.Add(1)
	c.mu.Unlock()
}

// txColumns is a transaction's own view after it ran DDL: its store and
// a planner over it, whose plans are not shared.
type txColumns struct {
	cols    *tableColumns
	planner *planner.Planner
}

// planning returns the planner for the session's next statement: the
// transaction's own after DDL in it, else the routing's.
func (ss *session) planning(r *routing) *planner.Planner {
	if ss.tx != nil && ss.tx.columns != nil && ss.tx.columns.planner.VSchema() == r.vs {
		return ss.tx.columns.planner
	}
	return r.planner
}

// columnsGen is the generation of the column orders the session plans
// with.
func (ss *session) columnsGen(r *routing) uint64 {
	return ss.columnsStore(r).gen.Load() + r.columns.gen.Load()
}

// columnsStore is where columns read now are kept.
func (ss *session) columnsStore(r *routing) *tableColumns {
	if ss.tx != nil && ss.tx.columns != nil && ss.tx.columns.planner.VSchema() == r.vs {
		return ss.tx.columns.cols
	}
	return r.columns
}

// afterDDL runs once a DDL statement ran (or failed: forgetting is never
// wrong).
func (ss *session) afterDDL(r *routing) {
	r.columns.forget()
	r.code.forget()
	r.planner.ForgetColumns()
	if ss.tx == nil {
		return
	}
	if ss.tx.columns == nil || ss.tx.columns.planner.VSchema() != r.vs {
		cols := newTableColumns()
		ss.tx.columns = &txColumns{cols: cols, planner: planner.New(r.vs).WithColumns(cols)}
		return
	}
	ss.tx.columns.cols.forget()
	ss.tx.columns.planner.ForgetColumns()
}

// columnsTxEnd runs when a transaction that ran DDL ends: what other
// sessions stored meanwhile predates its commit.
func (ss *session) columnsTxEnd(tx *txState) {
	if tx == nil || tx.columns == nil {
		return
	}
	r := ss.srv.cur.Load()
	r.columns.forget()
	r.code.forget()
	r.planner.ForgetColumns()
}

// planReadingColumns runs plan, and while the planner asks for a table's
// columns, reads them (before is called first, so the reading finds the
// session's connections idle) and plans again.
func planReadingColumns[T any](ss *session, r *routing, before func(), plan func(*planner.Planner) (T, error)) (T, error) {
	for tries := 0; ; tries++ {
		v, err := plan(ss.planning(r))
		t, need := planner.NeedsColumns(err)
		if !need || tries == 3 {
			return v, err
		}
		if before != nil {
			before()
		}
		if err := ss.readColumns(r, t); err != nil {
			return v, err
		}
	}
}

// columnsQuery lists the columns an INSERT without a column list fills:
// attnum order, dropped columns left out. Generated columns stay: the
// statement may give them DEFAULT.
const columnsQuery = "SELECT a.attname FROM pg_catalog.pg_attribute a WHERE a.attrelid = pg_catalog.to_regclass(%s) AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum"

// readColumns reads t's columns from a cluster of its group: over the
// session's transaction connection there if it holds one (it sees the
// transaction's own DDL, and needs no second connection), else over one
// leased for the read.
func (ss *session) readColumns(r *routing, t *vschema.Table) error {
	clusters := r.vs.ClustersOf(t.Group.Name)
	if len(clusters) == 0 {
		return sqlerr.New(sqlerr.InternalError, "group %s has no clusters", t.Group.Name)
	}
	var b *backend.Conn
	if ss.tx != nil {
		for _, c := range clusters {
			if tb, ok := ss.tx.conns[c]; ok && !tb.Broken {
				b = tb
				break
			}
		}
	}
	if b == nil {
		lb, err := ss.acquire(r, clusters[0])
		if err != nil {
			return err
		}
		defer ss.releaseConn(lb)
		b = lb
	}
	name := pgwire.QuoteIdent(t.Schema) + "." + pgwire.QuoteIdent(t.Name)
	if t.Schema == "" {
		name = pgwire.QuoteIdent(t.Name)
	}
	rows, err := b.Query(strings.Replace(columnsQuery, "%s", pgwire.QuoteLiteral(name), 1))
	if err != nil {
		if b.Broken {
			return pgwire.ConnLost(b.Cluster(), err)
		}
		return err
	}
	if len(rows) == 0 {
		return sqlerr.New(sqlerr.UndefinedTable, "relation \"%s\" does not exist", t.Name)
	}
	cols := make([]string, len(rows))
	for i, row := range rows {
		cols[i] = string(row[0])
	}
	ss.columnsStore(r).store(t, cols)
	return nil
}

// idle delivers what the batch sent so far, so that the session's
// connections can run a query of the proxy's.
func (bt *batch) idle() {
	bt.flushBackends()
	bt.drain()
}
