package merge

import (
	"slices"
	"testing"

	"github.com/shardgate/shardgate/planner"
)

// The formats asked of the shards for a merged aggregate: a column the
// proxy computes (max(placed) - min(placed)) has no shard column of its
// own, so the client's format for it must not become that of shard column
// 0 (pgjdbc binds int8 binary and interval text: customer_id came back as
// text under a binary RowDescription).
func TestShardFormatsComputedColumn(t *testing.T) {
	// SELECT customer_id, max(placed) - min(placed) FROM orders GROUP BY customer_id
	// shard columns: customer_id, max(placed), min(placed)
	a := &planner.Aggregate{
		Group: []int{0},
		Aggs:  []planner.AggSpec{{Func: planner.AggMax, Col: 1, Count: -1, Distinct: -1}, {Func: planner.AggMin, Col: 2, Count: -1, Distinct: -1}},
		Outputs: []planner.AggOutput{
			{Agg: -1, Col: 0},
			{Agg: -1, Expr: &planner.PostExpr{Op: planner.PostBinary, Name: "-", Args: []*planner.PostExpr{{Op: planner.PostAgg, Agg: 0}, {Op: planner.PostAgg, Agg: 1}}}},
		},
		ShardColumns: 3,
	}
	for _, tc := range []struct{ client, want []int16 }{
		{[]int16{1, 0}, []int16{1, 1, 1}},
		{[]int16{0, 1}, []int16{0, 1, 1}},
		{[]int16{0}, []int16{0, 1, 1}},
		{nil, []int16{0, 1, 1}},
	} {
		if got := ShardFormats(a, tc.client); !slices.Equal(got, tc.want) {
			t.Errorf("client formats %v: shard formats %v, want %v", tc.client, got, tc.want)
		}
	}
}
