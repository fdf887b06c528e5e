// Package stats holds the proxy's counters: one set of Prometheus metrics
// per server, read by /metrics and by the admin console's SHOW STATS, so
// both report the same numbers.
//
// The hot path never allocates to count: statement counters are resolved
// once per (group, route kind) and kept in a copy-on-write map, latency
// histograms once per route kind, and every increment is an atomic add.
//
// stats sits below backend (which counts its dials and pool waits here)
// and imports nothing of shardgate.
package stats
