// Package workflows moves rows between clusters while the application keeps
// writing: MoveTables (tables of main or of a group into a sharded group) and
// Reshard (a sharded group onto a new set of shards). One engine serves
// both. A workflow is created with pre-flight checks (Create, or a dry run
// with Plan.Describe), then Run copies every table under a snapshot taken
// with the replication slot of each source cluster, routing each row with
// the same vschema code the proxy routes with, and streams the changes made
// since (pgoutput) into the targets until stopped. RunVDiff compares
// sources and targets chunk by chunk with hashes computed by Postgres, at
// one consistent position per source while writes go on: the stream stops
// at the consistent point of a temporary slot whose exported snapshot the
// source is read under (vdiffstop.go); tables × targets in parallel, its
// progress recorded in main so that an interrupted vdiff resumes. Cancel
// drops slots, publications and the target copies.
//
// # State
//
// The workflow records live in the main group's cluster, schema
// "shardgate" (tables workflows, workflow_tables, workflow_streams, and
// workflow_vdiffs, workflow_vdiff_tables for the last vdiff),
// created on first use, so any process that reads the same topology sees
// them. Each target cluster also holds, in shardgate.workflow_target, the
// copy position and applied LSN of the rows it received, written in the
// same transaction as those rows: that record is what a restart resumes
// from, so nothing is copied or applied twice; main's copy is the view for
// status.
//
// # Runners
//
// Run holds the workflow's advisory lock in main (Store.Lock) while it
// runs, so one process at a time runs a workflow: a second is refused with
// 55P03. Background (behind `shardgate serve --workflows`) looks for
// runnable workflows in main and runs those it can lock. A runner records
// its host, pid and a heartbeat in its workflow's row (runnerstate.go);
// status reads a stream's lag from its slot when no runner reports. A
// runner retries transient errors (Transient: connections lost, backends
// terminated) with capped exponential backoff, recorded for status
// (retry.go); other errors put the workflow in phase error. Stop asks a
// runner, wherever it runs, to stop at a consistent point (after a copy
// chunk, between streamed transactions); Start makes it runnable again.
//
// A reshard moves only the shards that change (reshard.go): splits,
// merges (exact when a row cannot move between sources: refused
// otherwise) and one range of several; the lookup tables of the group's
// global secondary indexes move with it.
//
// The copy runs in cycles of bounded snapshot age, with tables of one
// source copied in parallel; each target records which snapshot each of
// its rows was copied under, so the stream applies each change exactly to
// the rows whose copy did not see it (cycles.go).
//
// MoveTables takes tables of main or of one other sharded group; a table
// the target topology lists among the group's reference tables is loaded
// on every target.
//
// # Switching traffic
//
// Switch and Reverse move a workflow's traffic between its sources and
// its targets (switch.go): every live proxy registered in main is asked,
// through routestate's gate, to hold the workflow's statements and
// acknowledges; writes on the serving side are blocked and a marker
// message written into each source's stream; the stream applies up to the
// marker; sequences are advanced; a routing revision naming the new side
// is committed in main; the proxies follow it and release what they held.
// A switch that fails before the revision is committed is rolled back
// (writes unblocked, proxies released); one interrupted after it is
// finished by the next runner (recoverSwitch, finishSwitch). Complete
// drops the side that no longer serves and writes the topology file back.
package workflows
