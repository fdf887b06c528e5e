package difftest

import (
	"strconv"
	"testing"

	"github.com/shardgate/shardgate/internal/proxytest"
	"github.com/shardgate/shardgate/internal/testenv"
	"github.com/shardgate/shardgate/vschema"
)

// TestKeyPlacement pins where the keys that queries.sql relies on live:
// pairs of keys on two shards of one cluster (virtual shards), and keys
// on the other cluster. If the topology or the hash changed, the queries
// would silently stop testing what their comments say.
func TestKeyPlacement(t *testing.T) {
	// Placement needs no server: clusters that are never dialed will do.
	topo := proxytest.Parse(t, topologyYAML(&testenv.Cluster{Name: "pg0", Port: 1}, &testenv.Cluster{Name: "pg1", Port: 2}))
	vs, err := vschema.Build(topo)
	if err != nil {
		t.Fatal(err)
	}
	g := vs.Group("by_customer")
	for key, want := range map[int64]string{
		1: "80-c0", 3: "-40", 7: "80-c0", 42: "80-c0", -42: "80-c0", // pg0
		2: "c0-", 9: "40-80", 100: "40-80", // pg1
	} {
		k, err := g.Index.KeyFromText(strconv.FormatInt(key, 10))
		if err != nil {
			t.Fatal(err)
		}
		sh, err := g.ShardFor(k)
		if err != nil {
			t.Fatal(err)
		}
		if sh.Name != want {
			t.Errorf("customer %d is on shard %s (%s), queries.sql assumes %s", key, sh.Name, sh.Cluster, want)
		}
	}
	for _, c := range []string{"pg0", "pg1"} {
		if n := len(g.ShardsOnCluster(c)); n != 2 {
			t.Errorf("%s holds %d shards of by_customer, want 2 (virtual shards)", c, n)
		}
	}
}
