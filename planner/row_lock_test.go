package planner

import (
	"strings"
	"testing"
)

// TestRowWriteLocksTarget: the source of an UPDATE ... FROM / DELETE ...
// USING across groups locks the rows of its target's pull only, FOR NO
// KEY UPDATE (UPDATE) or FOR UPDATE (DELETE), on every cluster the pull
// reads, also when its key conditions narrow it to one.
func TestRowWriteLocksTarget(t *testing.T) {
	for _, c := range []struct {
		sql, lock string
		clusters  int
	}{
		{"UPDATE items i SET price = p.price FROM products p WHERE p.sku = i.sku", LockNoKeyUpdate, 2},
		{"UPDATE items i SET price = p.price FROM products p WHERE p.sku = i.sku AND i.customer_id = 5", LockNoKeyUpdate, 1},
		{"DELETE FROM items i USING products p WHERE p.sku = i.sku AND i.customer_id = $1", LockUpdate, 1},
		{"UPDATE orders SET total = (SELECT max(total) FROM orders)", LockNoKeyUpdate, 2},
	} {
		pl, err := testPlanner(t).Plan(c.sql)
		if err != nil {
			t.Fatalf("%s: %v", c.sql, err)
		}
		rw, ok := pl.Root.(*RowWrite)
		if !ok {
			t.Fatalf("%s: planned %T", c.sql, pl.Root)
		}
		pulls := rw.Source.Root.(*Intermediate).Pulls
		var params []Param
		if strings.Contains(c.sql, "$1") {
			params = []Param{{Value: []byte("5"), OID: 20}}
		}
		for i, p := range pulls {
			want := ""
			if i == 0 {
				want = c.lock
			}
			if p.Lock != want {
				t.Errorf("%s: pull %d of %s locks %q, want %q", c.sql, i, p.Table, p.Lock, want)
			}
			srcs := p.Sources(params)
			if i == 0 && len(srcs) != c.clusters {
				t.Errorf("%s: the target's pull reads %d clusters, want %d", c.sql, len(srcs), c.clusters)
			}
			for _, s := range srcs {
				if got := strings.HasSuffix(s.SQL, " "+c.lock); got != (i == 0) {
					t.Errorf("%s: pull %d runs %q on %s", c.sql, i, s.SQL, s.Cluster)
				}
			}
		}
	}
}
