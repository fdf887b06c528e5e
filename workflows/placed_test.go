package workflows

import (
	"fmt"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/sqlerr"
)

// placedTopology is a topology over clusters that need not exist (NewPlan
// reads no database) whose by_customer group has the given extra lines.
func placedTopology(shards, extra string) string {
	var b strings.Builder
	b.WriteString("version: 1\nclusters:\n")
	for i, n := range []string{"main", "s0", "s1", "u0", "u1", "p0"} {
		fmt.Fprintf(&b, "  %s: { dsn: \"postgres://postgres@127.0.0.1:%d/shop\" }\n", n, 5500+i)
	}
	b.WriteString("groups:\n  main: { unsharded: true, cluster: main }\n")
	b.WriteString("  by_customer:\n    index: { name: by_customer, column: customer_id, type: bigint, function: xxhash }\n")
	b.WriteString("    tables: { customers: { column: id }, orders: {} }\n")
	b.WriteString("    shards: " + shards + "\n" + extra)
	return b.String()
}

// TestWorkflowRefusesPlacedGroups: a Reshard of a group that places keys
// by value (a list, lookup_clusters, placement: lookup) is refused at
// planning with 0A000, in either topology. Before, the plan was made and
// the copy routed a directory key's rows to its function's shard.
func TestWorkflowRefusesPlacedGroups(t *testing.T) {
	from2, to4 := `{ "-80": s0, "80-": s1 }`, `{ "-40": u0, "40-80": u1, "80-": s1 }`
	for _, extra := range []string{
		"    list: { 42: p0 }\n",
		"    placement: lookup\n",
		"    placement: lookup\n    lookup_clusters: [p0]\n",
	} {
		for _, side := range []string{"from", "to", "both"} {
			from, to := placedTopology(from2, ""), placedTopology(to4, "")
			if side != "to" {
				from = placedTopology(from2, extra)
			}
			if side != "from" {
				to = placedTopology(to4, extra)
			}
			_, err := NewPlan(Spec{Kind: Reshard, From: from, To: to, FromFile: "from.yaml", ToFile: "to.yaml", Group: "by_customer"})
			if e, ok := sqlerr.As(err); !ok || e.Code != sqlerr.FeatureNotSupported || !strings.Contains(err.Error(), "places keys by value") {
				t.Errorf("%q on %s: %v, want 0A000 places keys by value", strings.TrimSpace(extra), side, err)
			}
		}
	}
	// The same reshard without placements is planned.
	if _, err := NewPlan(Spec{Kind: Reshard, From: placedTopology(from2, ""), To: placedTopology(to4, ""), FromFile: "from.yaml", ToFile: "to.yaml", Group: "by_customer"}); err != nil {
		t.Fatalf("without placements: %v", err)
	}
}
