package planner

import (
	"testing"

	"github.com/shardgate/shardgate/stats"
)

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"SELECT * FROM t WHERE a = 42 AND b = 'secret' -- note\n":    "SELECT * FROM t WHERE a = ? AND b = ?",
		"insert into x values (E'it''s', $$dollar$$, B'101', 1.5e3)": "insert into x values (?, ?, ?, ?)",
		"SELECT 'unterminated":                      "SELECT ?",
		"UPDATE t /* c */ SET v = -7 WHERE id = $1": "UPDATE t SET v = -? WHERE id = $1",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestFingerprint: the simple protocol's literals and the extended
// protocol's parameters give one fingerprint, numbered in order, with no
// value left in it.
func TestFingerprint(t *testing.T) {
	want := "SELECT name, pg_sleep($1) FROM customers WHERE id = $2 AND note = $3"
	for _, in := range []string{
		"SELECT name, pg_sleep(0.02) FROM customers WHERE id = 17 AND note = 'secret'",
		"SELECT  name, pg_sleep(0.02) FROM customers -- who\n WHERE id = $1 AND note = $2",
		"SELECT name, pg_sleep($1) FROM customers WHERE id = $2 AND note = E'x'",
		"SELECT name, pg_sleep($3) FROM customers WHERE id = $1 AND note = $$x$$ ;",
	} {
		if got := Fingerprint(in); got != want {
			t.Errorf("Fingerprint(%q) = %q, want %q", in, got, want)
		}
	}
	if got := Fingerprint("INSERT INTO t VALUES (date '2024-01-01', B'101', 1.5e3)"); got != "INSERT INTO t VALUES (date $1, $2, $3)" {
		t.Errorf("typed literals: %q", got)
	}
}

func TestRouteKind(t *testing.T) {
	p := testPlanner(t)
	for _, c := range []struct {
		sql   string
		kind  RouteKind
		group string
	}{
		{"BEGIN", RouteProxy, ""},
		{"SELECT * FROM orders WHERE customer_id = 1", RouteSingle, "by_customer"},
		{"SELECT * FROM orders", RouteScatter, "by_customer"},
		{"SELECT * FROM orders WHERE customer_id IN (1, 2, 3, 4, 5, 6)", RouteMulti, "by_customer"},
		{"SELECT count(*) FROM orders", RouteMerge, "by_customer"},
		{"INSERT INTO countries VALUES (1)", RouteMulti, "by_customer"},
		{"SELECT * FROM settings", RouteSingle, "main"},
		{"SELECT * FROM invoices WHERE id = 7", RouteLookup, "by_customer"},
	} {
		pl, err := p.Plan(c.sql)
		if err != nil {
			t.Fatalf("%s: %v", c.sql, err)
		}
		targets, err := pl.Targets(nil)
		if err != nil {
			t.Fatalf("%s: %v", c.sql, err)
		}
		if got := pl.RouteKind(len(targets)); got != c.kind || pl.GroupName() != c.group {
			t.Errorf("%s: %s in %q, want %s in %q", c.sql, got, pl.GroupName(), c.kind, c.group)
		}
	}
}

func TestPlanCacheCounters(t *testing.T) {
	p := New(testPlanner(t).VSchema())
	var c stats.PlanCacheCounters
	p.WithCounters(&c)
	for _, sql := range []string{"SELECT 1", "SELECT 1", "SELECT 2"} {
		if _, err := p.Plan(sql); err != nil {
			t.Fatal(err)
		}
	}
	if h, m := c.Hits.Load(), c.Misses.Load(); h != 1 || m != 2 {
		t.Errorf("hits %d misses %d, want 1 and 2", h, m)
	}
	if n, _ := p.CacheSize(); n != 2 {
		t.Errorf("cache holds %d entries, want 2", n)
	}
}
