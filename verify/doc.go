// Package verify checks a fleet's data against its routing: `shardgate
// verify`. It finds
//
//   - rows on a cluster their shard key does not map to (misplaced.go),
//   - reference tables whose copies differ from the group's first
//     cluster's (reference.go),
//   - sequences whose next value is one their column already holds
//     (sequence.go),
//   - global secondary indexes that differ from their owner tables, by
//     package gsi's verify (index.go),
//
// and, asked to repair, fixes what is safe: a misplaced row is moved to
// its cluster unless that cluster has another row with its primary key; a
// reference row is copied over from the first cluster; a sequence is
// advanced; an index's entries are gsi's repair.
//
// The routing checked against is the one the proxies follow: the topology
// file with main's latest routing revision applied (package routestate).
//
// A run is a list of units (one check of one table, on one cluster), each
// read in chunks, with the work pushed into Postgres where Postgres can do
// it: a chunk costs one aggregate per cluster, and only what differs
// crosses the network row by row. The run and each unit's position,
// counts and first findings are recorded in main (state.go:
// shardgate.verify_runs, shardgate.verify_units) after every chunk, so a
// run stopped by an error, an interrupt or kill -9 is continued by
// Options.Resume; one advisory lock in main keeps two runs apart.
//
// verify sits above gsi, routestate, vschema and topology; only cmd
// imports it. It must never import proxy, planner or workflows.
package verify
