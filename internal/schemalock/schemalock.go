// Package schemalock serializes the creation of shardgate's own tables.
//
// Several parts of shardgate create tables in the `shardgate` schema of a
// cluster on first use (two-phase commit decisions, routing revisions,
// workflows, GSI backfills), and several processes may do it at the same
// moment: a proxy starting while a workflow runner starts. Two sessions
// running `CREATE SCHEMA IF NOT EXISTS` or `CREATE TABLE IF NOT EXISTS` at
// once can both find nothing and the second then fails on the catalog's
// unique index (23505). Each such DDL script starts with Prefix, a
// transaction-level advisory lock all of them share: the script runs as one
// implicit transaction, so the second session waits for the first to
// commit and then finds what it created.
package schemalock

// Prefix starts every DDL script that creates shardgate's own schema or
// tables. The key is fixed: any process of any version takes the same one.
const Prefix = "SELECT pg_advisory_xact_lock(7460373519437760800);\n"
