// Package routestate is the routing state every proxy shares: what the
// topology file declares, overlaid with what workflows and backfills
// decided since, stored in the main group.
//
// The file is what the admin declares. What a workflow changes — a group's
// shards after a reshard, tables moved by MoveTables, the state of a
// global secondary index after its backfill — is a routing revision: a row
// of main's shardgate.routing_revisions holding the whole State as JSON,
// numbered 1, 2, ... Commit writes the next one optimistically (40001 if
// another was written meanwhile) and NOTIFYs channel shardgate_routing in
// the same transaction, with the revision itself as the payload when it
// fits; CommitOn does the same over a revision the caller holds, with
// the caller's statements, in one round trip (a switch's arming and
// decision). Apply overlays a State on a file's topology and
// returns the effective topology, with each decided part listed in
// Topology.Overrides (so topology.Diff applies it and SHOW TOPOLOGY names
// its origin).
//
// Every serving proxy registers in shardgate.proxies (Register), beats a
// heartbeat about once a second and records the revision it routes with;
// Follow LISTENs on a connection of its own and polls as a fallback, and
// hands each new revision to the proxy. The directory of a lookup group is part of
// the state (directory.go); PlaceKey changes one entry through a pending
// revision every proxy follows before the entry is set (place.go). WriteBack writes the decided
// layout into the YAML file, keeping its comments.
//
// routestate sits above topology, vschema and backend, below proxy, gsi
// and workflows.
package routestate
