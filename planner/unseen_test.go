package planner

import (
	"slices"
	"testing"
)

// Which statements may run code the proxy cannot see into (and so change
// settings unseen): read from the parse tree.
func TestUnseenCode(t *testing.T) {
	p := testPlanner(t)
	cases := []struct {
		sql  string
		want UnseenCode
	}{
		{"SET search_path = x", UnseenNone},
		{"BEGIN", UnseenNone},
		{"SHOW search_path", UnseenNone},
		{"SELECT 1", UnseenNone},
		{"SELECT name FROM public.customers WHERE id = 7", UnseenByPath},
		{"SELECT name FROM customers", UnseenNone},
		{"SELECT name FROM customers WHERE id = $1", UnseenByPath},
		{"SELECT lower(name), count(*) FROM customers GROUP BY 1", UnseenByPath},
		{"SELECT pg_catalog.count(*) FROM public.customers", UnseenNone},
		{"SELECT * FROM pg_catalog.pg_class", UnseenNone},
		{"WITH c AS (SELECT 1 AS one) SELECT * FROM c", UnseenNone},
		{"INSERT INTO public.orders (id, customer_id) VALUES (1, 2)", UnseenNone},
		{"SELECT set_config('search_path', 'x', false)", UnseenByPath},
		{"DO $$BEGIN PERFORM set_config('search_path', 'x', false); END$$", UnseenAlways},
		{"CALL do_it()", UnseenAlways},
		{"SELECT my_function(1)", UnseenAlways},
		{"SELECT public.lower(name) FROM public.customers", UnseenAlways},
		{"SELECT * FROM public.unlisted", UnseenNone},
		{"UPDATE public.customers SET name = my_function(name) WHERE id = 1", UnseenAlways},
		{"CREATE INDEX ON customers (name)", UnseenAlways},
		{"EXPLAIN SELECT my_function(1)", UnseenAlways},
		{"DECLARE c CURSOR FOR SELECT my_function(1)", UnseenAlways},
		{"COPY (SELECT my_function(1)) TO STDOUT", UnseenAlways},
	}
	for _, c := range cases {
		pl, err := p.Plan(c.sql)
		if err != nil {
			t.Errorf("%s: %v", c.sql, err)
			continue
		}
		if pl.UnseenCode != c.want {
			t.Errorf("%s: unseen code %d, want %d", c.sql, pl.UnseenCode, c.want)
		}
	}
	if pl, _ := p.Plan("SELECT name FROM customers WHERE id = 1"); pl.Unseen(false) || !pl.Unseen(true) {
		t.Errorf("a read with an operator named without a schema is unseen only under a search_path with pg_catalog after another schema")
	}
}

// The relations a statement names, for the proxy's catalog of relations
// that run code: every table reference once, the schema kept when given;
// none for a statement that is checked anyway.
func TestUnseenRelations(t *testing.T) {
	p := testPlanner(t)
	cases := []struct {
		sql  string
		want []string
	}{
		{"SELECT 1", nil},
		{"SET search_path = x", nil},
		{"SELECT name FROM customers WHERE id = 1", []string{"customers"}},
		{"SELECT c.name FROM public.customers c JOIN orders o ON o.customer_id = c.id WHERE c.id = 1 AND EXISTS (SELECT 1 FROM public.customers)", []string{"public\x00customers", "orders"}},
		{"INSERT INTO public.orders (id, customer_id) VALUES (1, 2)", []string{"public\x00orders"}},
		{"UPDATE sg.t SET x = 1", []string{"sg\x00t"}},
		{"WITH c AS (SELECT 1 AS one) SELECT * FROM c", []string{"c"}},
		{"SELECT my_function(1) FROM customers", nil},
	}
	for _, c := range cases {
		pl, err := p.Plan(c.sql)
		if err != nil {
			t.Errorf("%s: %v", c.sql, err)
			continue
		}
		if !slices.Equal(pl.Relations, c.want) {
			t.Errorf("%s: relations %q, want %q", c.sql, pl.Relations, c.want)
		}
	}
}
