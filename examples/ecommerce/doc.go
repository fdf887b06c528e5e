// Package ecommerce is shardgate's worked example: the shop of the source
// article, complete. It is what `shardgate demo`, the integration tests and
// the benchmarks run, and what newcomers read first.
//
// It owns these files, embedded as strings:
//
//   - topology.yaml (TopologyYAML): two clusters, pg0 and pg1 (127.0.0.1:5441
//     and :5442, database shop); the main group on pg0 with the sequences;
//     group by_customer (customers, addresses, orders, items, sharded by
//     customer_id with xxhash into -80 on pg0 and 80- on pg1; reference
//     tables countries and currencies; the GSIs orders_by_id and
//     customers_by_email, unique on lower(email)); and group
//     catalog (products, sharded by lower(sku)). TopologyFor swaps in other
//     DSNs, e.g. those of internal/testenv clusters.
//   - topology-4.yaml (Topology4YAML): topology.yaml after a reshard of
//     by_customer into four shards on clusters pg2..pg5 (databases shop_2
//     and shop_3 next to pg0's, shop_4 and shop_5 next to pg1's): the --to
//     of the README's reshard tour. Topology4For swaps in other DSNs.
//   - schema_main.sql (MainSchemaSQL): DDL for the main group's cluster only:
//     the sequences.
//   - schema.sql (SchemaSQL): DDL for the sharded groups, one "-- @group NAME"
//     section per group; a section runs on every cluster of its group.
//     GroupSchema(name) returns the DDL of one group, main included.
//
// and a deterministic data generator: Generate(Config, EmitFunc) streams the
// rows of every table (reference data, customers with their addresses,
// orders and items, products, and the orders_by_id GSI rows), table by
// table, to a callback that decides where they go. Ids run from 1 in every
// table; Stats.SetvalSQL moves the main group's sequences past them.
//
// load.sql, not embedded, is the tour's pgbench write load.
//
// It deliberately does not decide which shard a row belongs to: routing is
// the vschema package's job, and a loader built on Generate asks it.
package ecommerce
