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
		{Binary: true, OID: oidInt8, Value: []byte{0, 0, 0, 0, 0, 0, 0, 9}}}
	f.Fuzz(func(t *testing.T, sql string) {
		if pl, err := p.Plan(sql); err == nil {
			exercise(pl, params)
		}
		if bounds, _ := p.PlanSimple(sql); bounds != nil {
			for _, b := range bounds {
				b.Explain()
				_, _ = b.Targets()
			}
		}
		normalize(sql)
		splitStatements(sql, nil)
		_, _ = parseArrayText(sql)
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
