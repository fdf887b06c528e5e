// Package admin is the admin console: a client that connects to the
// database "shardgate" as a user marked admin (proxy.auth.users.NAME.admin)
// gets SHOW commands answered as ordinary result sets, and RELOAD, PAUSE,
// RESUME, KILL and GSI BACKFILL (docs/admin.md lists them with their
// columns). It speaks both the simple and the extended protocol, text
// columns only.
//
// The console reads the server through Source, which package proxy
// implements; admin imports nothing above backend, planner, topology,
// stats and gsi (whose backfill GSI BACKFILL runs in the background).
// Collector exposes the same state and the counters of package stats to
// Prometheus.
package admin
