package planner

import (
	"strings"
	"sync"
	"testing"

	"github.com/shardgate/shardgate/vschema"
)

// mapColumns is a ColumnSource a test fills and empties.
type mapColumns struct {
	mu   sync.Mutex
	cols map[string][]string
}

func (m *mapColumns) Columns(t *vschema.Table) ([]string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.cols[t.String()]
	return c, ok
}

// TestColumnsAskedThenForgotten: an INSERT without a column list asks for
// the table's columns, is planned with them once they are known, and is
// planned again with the new order after ForgetColumns.
func TestColumnsAskedThenForgotten(t *testing.T) {
	src := &mapColumns{cols: map[string][]string{}}
	p := New(testPlanner(t).VSchema()).WithColumns(src)
	const q = "INSERT INTO orders VALUES (1, 5, 2)"
	_, err := p.Plan(q)
	table, ok := NeedsColumns(err)
	if !ok || table.String() != "public.orders" {
		t.Fatalf("Plan = %v, want a question for the columns of public.orders", err)
	}
	src.mu.Lock()
	src.cols["public.orders"] = []string{"id", "customer_id", "total"}
	src.mu.Unlock()
	pl, err := p.Plan(q)
	if err != nil || !strings.Contains(pl.SQL, "(id, customer_id, total) VALUES") {
		t.Fatalf("Plan = %v, %v; want the columns named", pl, err)
	}
	src.mu.Lock()
	src.cols["public.orders"] = []string{"customer_id", "id", "total"}
	src.mu.Unlock()
	if pl, _ := p.Plan(q); !strings.Contains(pl.SQL, "(id, customer_id, total)") {
		t.Fatalf("plan not cached: %s", pl.SQL)
	}
	p.ForgetColumns()
	pl, err = p.Plan(q)
	if err != nil || !strings.Contains(pl.SQL, "(customer_id, id, total)") {
		t.Fatalf("after ForgetColumns: %v, %v; want the new order", pl, err)
	}
}
