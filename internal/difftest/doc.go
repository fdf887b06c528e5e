// Package difftest is the differential suite: it runs the same statements
// through the shardgate proxy and on one plain PostgreSQL (the oracle), and
// requires the same answers. The package has no code of its own; its tests
// do the work.
//
// # Setup
//
// TestMain starts three throwaway clusters (internal/testenv, initdb with
// locale C.UTF-8 or C, so text sorts by bytes on every cluster; the test
// checks that all three agree). pg2 is the oracle. pg0 and pg1 serve an
// in-process proxy (topology_test.go):
//
//   - by_customer: xxhash of customer_id over four shards -40, 40-80, 80-c0
//     and c0-, placed pg0, pg1, pg0, pg1: two virtual shards per cluster.
//     Members customers (key column id), orders (id filled from the main
//     group's orders_id_seq) and items; reference tables countries and
//     currencies. customers and orders set shard_key_update: move_row, so
//     an UPDATE of their shard key moves the row, as one Postgres updates
//     it in place.
//   - catalog: xxhash of lower(sku) over four shards (products).
//   - devices: xxhash of lower(serial) over two shards, one per cluster
//     (devices, filled by the write-pullout queries).
//   - main (pg0): the sequences and every table the topology does not name
//     (settings, audit).
//
// The schema (data_test.go) is created through the proxy, which fans DDL
// out to the groups' clusters, and on the oracle; only orders.id's default
// differs (nextval on the oracle, the sequence binding through the proxy).
// The data set comes from math/rand/v2 with a fixed seed: a few thousand
// rows with NULLs, ties, mixed-case and non-ASCII text, negative and
// edge-of-range keys, numerics of varying scale, floats including NaN,
// ±Infinity and -0, dates, timestamps, intervals, uuids, bytea, jsonb and
// arrays. It is loaded with multi-row INSERTs (split per shard by the
// proxy) through the proxy, and the same statements on the oracle.
// Float data are multiples of 1/8 (or 1/2), so sums do not depend on the
// order shards are added in; equal numerics always have one scale, and
// the only float zero is -0, so that GROUP BY, DISTINCT, min and max have
// one right answer.
//
// # Queries
//
// queries.sql lists the statements (see its header for the syntax): point
// and IN reads, scatter reads, every ORDER BY form, LIMIT/OFFSET,
// aggregates, GROUP BY/HAVING, DISTINCT, co-located and reference joins,
// subqueries, CTEs, set operations, window functions, bound parameters,
// session settings, errors, writes with RETURNING followed by reads,
// sequences and DDL. They run in file order, so reads see the writes
// before them. A statement that fails on the oracle must be marked
// "error" (and then fail through the proxy with the same SQLSTATE), so a
// typo cannot pass as two equal failures. Before them, the COPY steps of
// copy_test.go (ids copy.*) fill the events table with COPY FROM STDIN in
// text, csv and binary format, and compare COPY TO STDOUT outputs.
//
// Every read runs on both sides with pgx in two modes: the simple protocol
// (text results) and the extended protocol with a cached prepared statement
// (binary results for the types pgx knows). A write is first rehearsed in
// one mode inside a transaction that is rolled back, then run for real in
// the other mode. The answers must agree in: column names, type OIDs,
// type modifiers and formats; the command tag; the rows, value by value
// (raw wire bytes; binary floats exactly, any NaN alike), in sequence when
// the query is marked "ordered", by ORDER BY key columns when marked
// "keys=", as multisets otherwise; or, for errors, the SQLSTATE.
//
// After the queries, pgdump_test.go dumps the oracle's rows with pg_dump
// in each INSERT format (--inserts, --rows-per-insert, --column-inserts,
// --on-conflict-do-nothing), loads each dump with psql in one transaction
// over emptied tables through the proxy and into the oracle, and compares
// every table row by row (subtests pg_dump/...).
//
// # Refusals
//
// A statement the proxy refuses with SQLSTATE 0A000 (where the oracle does
// not) must be on allowlist.txt, under the reason it is refused. A refused
// write is run on the oracle only inside a rolled-back transaction, so both
// sides keep the same data. An allow-listed query that now runs and
// matches is reported as removable (a failure with DIFFTEST_STRICT=1);
// DIFFTEST_UPDATE_ALLOWLIST=1 rewrites the file from a run. Any other
// difference fails the test, with the query, the difference and the rows
// only one side returned.
//
// The summary (total, matched, refused and allow-listed, mismatched, and
// the refusals grouped by reason) is logged, and written to the file named
// by DIFFTEST_REPORT if set.
//
// Running a single query with -run TestDifferential/ID skips the writes
// before it; its answer may then differ for that reason alone.
package difftest
