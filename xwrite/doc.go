// Package xwrite executes writes whose rows cannot be produced where they
// go: INSERT ... SELECT across shards, groups or clusters
// (planner.InsertSelect), MERGE into a sharded table from a source read
// first (planner.MergeSource, merge.go: each cluster runs the MERGE once
// with its rows as a VALUES source of bound parameters typed as the
// source's columns), and UPDATE ... FROM / DELETE ... USING whose
// rows are matched across groups (planner.RowWrite, rows.go: the target's
// primary key read from the catalog, the source read with one row per
// target row, its pull of the target locking the rows it reads FOR NO KEY
// UPDATE, or FOR UPDATE for a DELETE or an UPDATE setting a column of a
// unique key, so that the values are computed from rows no other
// transaction changes before the apply; then the rows updated or deleted
// by key in batches, as VALUES joined on the key, with the target's own
// conditions re-checked).
//
// The SELECT runs as an intermediate read (package intermediate) on a
// connection of the coordinator's own, outside the session's transaction:
// the tables it reads are pulled from the session's connections (inside
// its transaction, so the statement sees the transaction's rows; for
// INSERT ... SELECT, the coordinator's own cluster's tables are read on
// the coordinator's connection when the transaction has not used that
// cluster yet). The coordinator's rows are read whole, within the
// source's max_bytes, before any is written: the coordinator's connection
// is then given back (intermediate.Statement.Release), and the proxy makes
// it the transaction's connection to its cluster if the transaction has
// none there, so a statement holds one connection per cluster and never
// gives one back to wait for another of the same pool while holding
// others. Each row
// goes to the cluster of its shard key (every copy of a reference table),
// with a value drawn from the sequence for a sequence-bound column the
// statement omits, into a per-cluster batch; a batch that is full (rows
// or bytes) is inserted there at once, on the transaction's connection,
// as one multi-row INSERT ... VALUES with bound parameters typed as the
// SELECT's columns (so Postgres assigns them to the target's columns as
// INSERT ... SELECT would), with the statement's ON CONFLICT DO NOTHING
// and RETURNING. A
// target with global secondary indexes has each batch's RETURNING
// extended by the key and the indexed values (package gsi, Inserted), and
// the batch's entries written on the lookup shards before the next one.
//
// xwrite imports backend, gsi, intermediate, pgwire, planner and sqlerr,
// and never proxy: the session lends connections through Session.
package xwrite
