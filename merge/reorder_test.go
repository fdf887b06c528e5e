package merge

import (
	"reflect"
	"testing"

	"github.com/shardgate/shardgate/planner"
)

// TestReorder: RETURNING rows of an INSERT split over two clusters come
// back in VALUES order, whatever order the clusters answered in.
func TestReorder(t *testing.T) {
	if NewReorder([]planner.Target{{Cluster: "pg0"}, {Cluster: "pg1"}}) != nil {
		t.Fatal("targets without rows need no reordering")
	}
	// VALUES rows 0, 2, 3 went to pg0 in one statement; row 1 to pg1 as a
	// statement per row (Each), the second of which returned nothing.
	o := NewReorder([]planner.Target{
		{Cluster: "pg0", Rows: []int{0, 2, 3}},
		{Cluster: "pg1", Rows: []int{1, 4}, Each: []planner.Target{{Rows: []int{1}}, {Rows: []int{4}}}},
	})
	for _, r := range []string{"r0", "r2", "r3"} {
		o.Add([]byte(r))
	}
	o.Next()
	o.Add([]byte("r1"))
	o.Next()
	o.Next()
	var got []string
	o.Emit(func(d []byte) { got = append(got, string(d)) })
	if want := []string{"r0", "r1", "r2", "r3"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("rows %v, want %v", got, want)
	}
}
