package difftest

import (
	"github.com/shardgate/shardgate/internal/proxytest"
	"github.com/shardgate/shardgate/internal/testenv"
)

// topologyYAML is the proxy's topology over the two proxy clusters. The
// sharded group puts two of its four shards on each cluster (virtual
// shards); the catalog group does the same with a different pairing.
// tickets has a unique global secondary index on code (the oracle: a
// unique index of the same name). devices is keyed by an expression,
// lower(serial). customers and orders opt in to moving a
// row whose shard key an UPDATE changes (shard_key_update: move_row), as
// one Postgres would update it in place.
func topologyYAML(pg0, pg1 *testenv.Cluster) string {
	return proxytest.Topology(database, `groups:
  main:
    unsharded: true
    cluster: pg0
    sequences: [orders_id_seq]
  by_customer:
    index: { name: by_customer, column: customer_id, type: bigint, function: xxhash }
    shards: { "-40": pg0, "40-80": pg1, "80-c0": pg0, "c0-": pg1 }
    tables:
      customers: { column: id, shard_key_update: move_row }
      orders:    { sequence: { column: id, name: orders_id_seq }, shard_key_update: move_row }
      items:     {}
      events:    {}
      tickets:   {}
    reference: [countries, currencies]
    secondary_indexes:
      tickets_by_code: { table: tickets, column: code, type: bigint, unique: true, state: active }
  catalog:
    index: { name: by_sku, expression: "lower(sku)", type: text, function: xxhash }
    shards: { "-40": pg1, "40-80": pg0, "80-c0": pg0, "c0-": pg1 }
    tables:
      products: {}
  devices:
    index: { name: by_serial, expression: "lower(serial)", type: text, function: xxhash }
    shards: { "-80": pg0, "80-": pg1 }
    tables:
      devices: {}
`, pg0, pg1)
}
