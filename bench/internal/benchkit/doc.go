// Package benchkit holds what shardgate's benchmark harnesses share:
// child processes bounded in time and stopped with the harness (Proc,
// RunCmd), building the proxy, describing the machine, medians, and
// replacing one section of docs/benchmarks.md.
//
// The harnesses themselves are bench/pgbench (pgbench -S through
// pgbouncer and shardgate) and bench/scatter (cross-shard queries, COPY and
// streaming memory); see bench/README.md.
package benchkit
