package verify

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// A fleet whose rows are where their keys map, whose reference copies are
// equal, whose sequences are past their columns and whose index matches
// its table has nothing to report.
func TestCleanFleet(t *testing.T) {
	f := newFleet(t, "vfclean", 3000)
	rep := f.run(Options{})
	if rep.Left() != 0 {
		t.Fatalf("findings on a clean fleet: %s", describe(rep))
	}
	var orders int64
	for _, u := range rep.Units {
		if !u.Done {
			t.Errorf("%s not done", u.Name)
		}
		if u.Check == CheckMisplaced && u.Object == "public.vf_orders" {
			orders += u.Rows
		}
	}
	if orders != 3000 {
		t.Errorf("misplaced checks read %d orders, want 3000", orders)
	}
	for _, name := range []string{"misplaced public.vf_events on s1", "misplaced public.vf_items on s0", "reference public.vf_countries on s1",
		"sequence public.vf_orders", "sequence public.vf_notes", "gsi vf_orders_by_id"} {
		unit(t, rep, name)
	}
}

// Rows written directly on the wrong shard (xxhash, range and expression
// keys), a changed, a removed and an added reference row, a lagging bound
// sequence, a lagging serial and a removed index entry are all found;
// --repair fixes them, except a misplaced row whose primary key the right
// shard already has, and a second run finds only that one.
func TestFindsAndRepairs(t *testing.T) {
	f := newFleet(t, "vfbroken", 2000)
	wrongOrder := other(f.cluster("vf_orders", map[string]string{"customer_id": "5"}))
	f.exec(wrongOrder, "INSERT INTO vf_orders VALUES (5, 900001, 'misplaced')")
	// customer 6's order 12 exists on its shard: a conflicting copy elsewhere.
	conflict := other(f.cluster("vf_orders", map[string]string{"customer_id": "12"}))
	f.exec(conflict, "INSERT INTO vf_orders VALUES (12, 12, 'conflict')")
	f.exec("s1", "UPDATE vf_events SET id = 5000 WHERE id = 1500", "INSERT INTO vf_events VALUES (7, 'below 1000 on s1')",
		"DELETE FROM vf_events WHERE id = 1501")
	f.exec("s0", "DELETE FROM vf_events WHERE id = 7")
	wrongItem := other(f.cluster("vf_items", map[string]string{"sku": "Mixed-Case"}))
	f.exec(wrongItem, "INSERT INTO vf_items VALUES ('Mixed-Case', 1)")
	f.exec("s1", "UPDATE vf_countries SET name = 'changed' WHERE code = 'c17'", "DELETE FROM vf_countries WHERE code = 'c200'",
		"INSERT INTO vf_countries VALUES ('zz', 'extra', 0)")
	f.exec("main", "SELECT setval('vf_orders_id_seq', 1500)", "INSERT INTO vf_notes (id, body) VALUES (51, 'explicit'), (52, 'explicit')")
	f.exec("s0", "DELETE FROM vf_orders_by_id WHERE id IN (SELECT id FROM vf_orders_by_id ORDER BY id LIMIT 1)")

	rep := f.run(Options{})
	want := map[string]string{
		"misplaced public.vf_orders on " + wrongOrder: "{5,900001}",
		"misplaced public.vf_orders on " + conflict:   "{12,12}",
		"misplaced public.vf_events on s1":            "{7}",
		"misplaced public.vf_items on " + wrongItem:   "{Mixed-Case}",
		"reference public.vf_countries on s1":         "{c17}",
		"sequence public.vf_orders":                   "public.vf_orders_id_seq on main",
		"sequence public.vf_notes":                    "vf_notes_id_seq on main",
		"gsi vf_orders_by_id":                         "",
	}
	for name, key := range want {
		u := unit(t, rep, name)
		if u.Found == 0 {
			t.Errorf("%s: nothing found", name)
			continue
		}
		if key != "" && !hasKey(u, key) {
			t.Errorf("%s: no finding %s in %+v", name, key, u.Samples)
		}
	}
	ref := unit(t, rep, "reference public.vf_countries on s1")
	if ref.Found != 3 || !hasKey(ref, "{c200}") || !hasKey(ref, "{zz}") {
		t.Errorf("reference: %d found, %+v; want c17, c200, zz", ref.Found, ref.Samples)
	}
	if u := unit(t, rep, "misplaced public.vf_events on s0"); u.Found != 0 {
		t.Errorf("events on s0: %+v", u.Samples)
	}

	rep = f.run(Options{Repair: true})
	if left := rep.Left(); left != 1 {
		t.Fatalf("after repair %d left, want 1 (the conflicting order): %s", left, describe(rep))
	}
	if u := unit(t, rep, "misplaced public.vf_orders on "+conflict); u.Left() != 1 || !strings.Contains(u.Samples[0].Detail, "another row") {
		t.Errorf("conflict: %+v", u.Samples)
	}
	rep = f.run(Options{})
	if left := rep.Left(); left != 1 {
		t.Fatalf("second run: %d left, want 1: %s", left, describe(rep))
	}
	var n int
	if err := f.conns[other(wrongOrder)].QueryRow(context.Background(), "SELECT count(*) FROM vf_orders WHERE id = 900001 AND note = 'misplaced'").Scan(&n); err != nil || n != 1 {
		t.Errorf("the moved order: %d rows on its shard (%v)", n, err)
	}
	var next int64
	if err := f.conns["main"].QueryRow(context.Background(), "SELECT nextval('vf_orders_id_seq')").Scan(&next); err != nil || next <= 2000 {
		t.Errorf("vf_orders_id_seq gives %d after repair (%v), want > 2000", next, err)
	}
	var name string
	if err := f.conns["s1"].QueryRow(context.Background(), "SELECT name FROM vf_countries WHERE code = 'c17'").Scan(&name); err != nil || name != "country 17" {
		t.Errorf("c17 on s1 is %q after repair (%v)", name, err)
	}
}

// A run stopped after a chunk goes on from there with --resume: the units
// done are not redone, and every row is counted once.
func TestResume(t *testing.T) {
	f := newFleet(t, "vfresume", 20000)
	f.exec("s1", "UPDATE vf_countries SET pop = 0 WHERE code = 'c3'")
	stop := errors.New("stopped")
	chunks := 0
	_, err := Run(context.Background(), f.topo, Options{ChunkRows: 2000, chunkHook: func(u *Unit) error {
		if u.Check != CheckMisplaced || u.Object != "public.vf_orders" {
			return nil
		}
		chunks++
		if chunks == 3 {
			return stop
		}
		return nil
	}})
	if !errors.Is(err, stop) {
		t.Fatalf("run: %v, want the hook's error", err)
	}
	if _, err := Run(context.Background(), f.topo, Options{Resume: true, Group: "main"}); err == nil {
		t.Fatal("resume of another scope: no error")
	}
	resumed := 0
	rep, err := Run(context.Background(), f.topo, Options{ChunkRows: 2000, Resume: true, chunkHook: func(u *Unit) error {
		if u.Check == CheckMisplaced && u.Object == "public.vf_orders" {
			resumed++
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	var orders int64
	for _, u := range rep.Units {
		if u.Check == CheckMisplaced && u.Object == "public.vf_orders" {
			orders += u.Rows
		}
	}
	if orders != 20000 {
		t.Errorf("orders counted %d, want 20000", orders)
	}
	if resumed == 0 || chunks+resumed-1 > 12 {
		t.Errorf("%d chunks before, %d after: the resumed run redid chunks", chunks, resumed)
	}
	if rep.Left() != 1 || unit(t, rep, "reference public.vf_countries on s1").Found != 1 {
		t.Errorf("resumed report: %s", describe(rep))
	}
	if _, err := Run(context.Background(), f.topo, Options{Resume: true}); err == nil {
		t.Error("resume of a finished run: no error")
	}
}

// Scope: a group or a table only, and names that are not there refused.
func TestScope(t *testing.T) {
	f := newFleet(t, "vfscope", 100)
	rep := f.run(Options{Table: "vf_events"})
	var names []string
	for _, u := range rep.Units {
		names = append(names, u.Name)
	}
	if got := strings.Join(names, "; "); got != "misplaced public.vf_events on s0; misplaced public.vf_events on s1; sequence public.vf_events" {
		t.Errorf("units of vf_events: %s", got)
	}
	for _, o := range []Options{{Group: "nope"}, {Table: "nope"}} {
		if _, err := Run(context.Background(), f.topo, o); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
}

func hasKey(u *Unit, key string) bool {
	for _, f := range u.Samples {
		if f.Key == key {
			return true
		}
	}
	return false
}

func describe(rep *Report) string {
	var b strings.Builder
	for _, u := range rep.Units {
		fmt.Fprintf(&b, "\n%s: rows %d found %d repaired %d", u.Name, u.Rows, u.Found, u.Repaired)
		for _, s := range u.Samples {
			fmt.Fprintf(&b, "\n  %s: %s (repaired %v)", s.Key, s.Detail, s.Repaired)
		}
	}
	return b.String()
}
