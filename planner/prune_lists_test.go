package planner

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// A 10,000-value IN list (or OR of key equalities) on the shard key sends
// each cluster only its own values, and EXPLAIN (ROUTE) says so in a few
// short lines instead of printing the list.
func TestLongKeyListPrunedAndSummarized(t *testing.T) {
	p := testPlanner(t)
	const n = 10000
	in, or := make([]string, n), make([]string, n)
	for i := range n {
		in[i] = strconv.Itoa(i + 1)
		or[i] = "id = " + strconv.Itoa(i+1)
	}
	for _, c := range []struct {
		name, sql string
		item      *regexp.Regexp
	}{
		{"IN", "SELECT name FROM customers WHERE id IN (" + strings.Join(in, ", ") + ")", regexp.MustCompile(`\b\d+\b`)},
		{"OR", "SELECT name FROM customers WHERE " + strings.Join(or, " OR "), regexp.MustCompile(`id = \d+`)},
		{"UPDATE", "UPDATE customers SET name = 'x' WHERE id IN (" + strings.Join(in, ", ") + ")", regexp.MustCompile(`\b\d+\b`)},
		{"DELETE", "DELETE FROM customers WHERE " + strings.Join(or, " OR "), regexp.MustCompile(`id = \d+`)},
	} {
		pl, err := p.Plan(c.sql)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		rows := pl.Explain()
		per := map[string]int{}
		for _, r := range rows {
			if len(r) > 2200 {
				t.Errorf("%s: an EXPLAIN row of %d characters", c.name, len(r))
			}
			var cl string
			var got, of int
			if _, err := fmt.Sscanf(strings.TrimSpace(r), "%s %d of %d values", &cl, &got, &of); err == nil && of == n {
				per[strings.TrimSuffix(cl, ":")] = got
			}
		}
		ts, err := pl.Targets(nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(ts) != 2 {
			t.Fatalf("%s: %d targets, want both clusters", c.name, len(ts))
		}
		total := 0
		for _, tg := range ts {
			got := len(c.item.FindAllString(strings.SplitN(tg.SQL, "WHERE", 2)[1], -1))
			if got == 0 || got == n || got != per[tg.Cluster] {
				t.Errorf("%s: %s gets %d of the %d values, EXPLAIN says %d", c.name, tg.Cluster, got, n, per[tg.Cluster])
			}
			total += got
		}
		if total != n {
			t.Errorf("%s: the clusters get %d values in all, want %d", c.name, total, n)
		}
	}
}

// Only an OR whose every branch pins the key to one value is cut: one
// with another column, a NULL, or an IN list in a branch goes whole.
func TestOrPrunedOnlyWhenExact(t *testing.T) {
	p := testPlanner(t)
	for sql, pruned := range map[string]bool{
		"SELECT * FROM customers WHERE id = 1 OR id = 3":                  true,
		"SELECT * FROM customers WHERE (id = 1 AND name = 'a') OR id = 3": true,
		"SELECT * FROM customers WHERE id = 1 OR name = 'a'":              false,
		"SELECT * FROM customers WHERE id = 1 OR id = NULL":               false,
		"SELECT * FROM customers WHERE id = 1 OR id IN (3, 4)":            false,
		"SELECT * FROM customers WHERE (id = 1 OR id = 3) AND name = 'a'": true,
		"SELECT * FROM customers WHERE id NOT IN (1, 3)":                  false,
		"SELECT * FROM customers WHERE NOT (id = 1 OR id = 3)":            false,
	} {
		pl, err := p.Plan(sql)
		if err != nil {
			t.Fatal(err)
		}
		r, _ := pl.Root.(*Route)
		if got := r != nil && r.Shard != nil && r.Shard.items != nil; got != pruned {
			t.Errorf("%s: pruned %v, want %v", sql, got, pruned)
		}
	}
}
