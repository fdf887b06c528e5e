package planner

import (
	"testing"
)

// FuzzPlan checks that no input makes the planner panic, through both entry
// points, and that whatever plans can be explained and resolved. Seeds live
// in testdata/fuzz/FuzzPlan; the golden files are added at run time.
func FuzzPlan(f *testing.F) {
	for _, s := range []string{
		"SELECT * FROM orders WHERE customer_id = $1",
		"INSERT INTO orders (customer_id, total) VALUES ($1, 1), ($2, 2)",
		"SELECT 'a'\n'b'",
		"WITH RECURSIVE t AS (SELECT 1 UNION ALL SELECT * FROM t) SELECT * FROM t",
	} {
		f.Add(s)
	}
	for _, c := range loadAllGolden(f) {
		f.Add(c.sql)
	}
	p := testPlanner(f)
	params := []Param{{Value: []byte("5")}, {Value: []byte("x")}, {Null: true},
		{Binary: true, OID: oidInt8, Value: []byte{0, 0, 0, 0, 0, 0, 0, 9}},
		{Value: []byte("7.5"), OID: oidNumeric}, {Binary: true, OID: oidFloat8, Value: []byte{0x43, 0x40, 0, 0, 0, 0, 0, 1}},
		{Binary: true, OID: oidNumeric, Value: []byte{0, 1, 0x7f, 0xff, 0, 0, 0, 0, 0, 1}}}
	f.Fuzz(func(t *testing.T, sql string) {
		if pl, err := p.Plan(sql); err == nil {
			exercise(pl, params)
		}
		if bounds, _ := p.PlanSimple(sql); bounds != nil {
			for _, b := range bounds {
				b.Explain()
				_, _ = b.Targets()
				_, _ = b.TargetsWith(fakeSequences{})
				sameAsVerbatim(t, p, b)
			}
		}
		normalize(sql)
		splitStatements(sql, nil)
		_, _ = parseArrayText(sql, typeUnknown)
		_, _ = parseArrayText(sql, typeNumeric)
		_, _ = parseNumeric(sql)
		_, _ = parseFloat(sql, 64)
		_, _ = parseArrayBinary([]byte(sql), 1)
	})
}

func exercise(pl *Plan, params []Param) {
	pl.Explain()
	pl.ExplainParams(params)
	pl.Mode()
	_, _ = pl.Targets(nil)
	_, _ = pl.Targets(params)
	_, _ = pl.Targets(params[:1])
	_, _ = pl.TargetsWith(params, fakeSequences{})
	pl.DescribeTarget()
}

func loadAllGolden(tb testing.TB) []goldenCase {
	tb.Helper()
	var all []goldenCase
	for _, f := range goldenFiles(tb) {
		cases, err := readGolden(f)
		if err != nil {
			tb.Fatal(err)
		}
		all = append(all, cases...)
	}
	return all
}

// sameAsVerbatim checks that a rewritten statement planned from its
// normalized shape, with the lifted literals put back, is exactly what the
// statement planned as written gives.
func sameAsVerbatim(t *testing.T, p *Planner, b *Bound) {
	if b.Params == nil {
		return
	}
	verbatim, err := p.build(b.SQL)
	if err != nil {
		return
	}
	got, err1 := b.TargetsWith(fakeSequences{})
	want, err2 := (&Bound{Plan: verbatim, SQL: b.SQL}).TargetsWith(fakeSequences{})
	if (err1 == nil) != (err2 == nil) {
		return // a literal the shape cannot judge the same way: not this check's business
	}
	if err1 != nil {
		return
	}
	if len(got) != len(want) {
		t.Fatalf("%s: %d targets from the shape, %d as written", b.SQL, len(got), len(want))
	}
	for i := range got {
		if got[i].Cluster != want[i].Cluster || got[i].SQL != want[i].SQL {
			t.Fatalf("%s: target %d from the shape\n%s %s\nas written\n%s %s", b.SQL, i, got[i].Cluster, got[i].SQL, want[i].Cluster, want[i].SQL)
		}
	}
}
