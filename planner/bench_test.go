package planner

import (
	"strconv"
	"testing"
)

// BenchmarkPlanSimpleCached is the pgbench select through the simple
// protocol with a new literal each time: lex, normalize, cache hit.
func BenchmarkPlanSimpleCached(b *testing.B) {
	p := testPlanner(b)
	queries := make([]string, 1024)
	for i := range queries {
		queries[i] = "SELECT abalance FROM pgbench_accounts WHERE aid = " + strconv.Itoa(i*7919%100000+1) + ";"
	}
	if _, err := p.PlanSimple(queries[0]); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		bounds, err := p.PlanSimple(queries[i&1023])
		if err != nil || len(bounds) != 1 {
			b.Fatal(err)
		}
	}
}

// BenchmarkPlanSimpleCachedTargets adds resolving the shard of a sharded
// point read, which is what the proxy does next.
func BenchmarkPlanSimpleCachedTargets(b *testing.B) {
	p := testPlanner(b)
	queries := make([]string, 1024)
	for i := range queries {
		queries[i] = "SELECT * FROM orders WHERE customer_id = " + strconv.Itoa(i*7919%100000+1)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		bounds, err := p.PlanSimple(queries[i&1023])
		if err != nil {
			b.Fatal(err)
		}
		if _, err := bounds[0].Targets(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPlanCached is the extended protocol's Parse of a known
// statement.
func BenchmarkPlanCached(b *testing.B) {
	p := testPlanner(b)
	const sql = "SELECT * FROM orders WHERE customer_id = $1"
	params := []Param{{Value: []byte("42")}}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		pl, err := p.Plan(sql)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := pl.Targets(params); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPlanUncached is the slow path: a full parse and analysis.
func BenchmarkPlanUncached(b *testing.B) {
	p := testPlanner(b)
	const sql = "SELECT o.id, c.name FROM orders o JOIN customers c ON o.customer_id = c.id WHERE c.id = $1"
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := p.build(sql); err != nil {
			b.Fatal(err)
		}
	}
}
