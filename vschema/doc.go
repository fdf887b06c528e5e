// Package vschema is the compiled, immutable routing view of a topology:
// table -> group -> sharding index -> shards -> clusters, plus the key
// functions that decide where a row lives.
//
// A key travels this way: the planner or a workflow has a row (or a
// statement's literals and parameters) and asks the table's group index
// for its Key (Index.KeyFromColumns, Table.KeyFromColumns, KeyFromText,
// KeyFromValue), which evaluates the index expression with keyexpr and
// converts the result to the index's type, failing with Postgres's
// SQLSTATE where Postgres would (22P02, 22003, 22004). The group's
// Function then maps the key to a shard: xxhash hashes the key's
// canonical bytes (CanonicalBytes) to an 8-byte keyspace id (KeyspaceID)
// and finds the key range that holds it; range and modulo work on the
// integer directly. A group with a list or a directory (placement.go)
// looks the key up first: a listed key goes to the lookup:CLUSTER shard
// of its cluster, appended after the function's shards. Golden vectors in this package's tests pin canonical
// bytes and keyspace ids, so no refactor can silently move stored rows.
//
// Lifecycle: Build compiles a validated *topology.Topology into a
// *VSchema. A VSchema and everything reachable from it are immutable and
// safe for concurrent use without locks; when the topology file changes,
// a new VSchema is built and swapped in whole (an atomic.Pointer in the
// caller), and plans made from the old one may finish against it.
// Slices returned by accessors are shared: callers must not modify them.
//
// Dependencies: topology, keyexpr, sqlerr and xxhash. This
// package must never import the planner, the proxy, gsi or workflows,
// and it never touches the network.
package vschema
