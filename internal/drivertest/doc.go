// Package drivertest runs client drivers other than pgx through the proxy,
// each as its users run it, against real Postgres clusters
// (internal/testenv) behind an in-process proxy (internal/proxytest).
//
// Each test loads orders (four shards over two clusters; customer_id is
// the key) through the proxy, then runs a driver's program from testdata/
// against it. A program checks order and completeness itself and prints
// one line of what it read; the test compares that line with what it
// loaded. Programs with several steps run one step a run, as subtests, so
// each case passes or fails on its own:
//
//   - TestPsycopg2 (psycopg2_check.py, Debian python3-psycopg2): named
//     (server-side) cursors over a merge of four shards with ORDER BY, read
//     with FETCH FORWARD n; a cursor WITH HOLD and a scrollable one; the
//     ordinary cursor; executemany; copy_expert both ways.
//   - TestPsycopg3 (psycopg3_check.py, Debian python3-psycopg), 10 k rows:
//     named cursors (conn.cursor(name=...): DECLARE, Describe Portal, FETCH)
//     on one shard and across shards, iterated and read with fetchmany;
//     pipeline mode (INSERT, UPDATE, executemany and reads in one pipeline
//     and transaction), and a pipeline in autocommit that a duplicate key
//     fails (nothing of it is left on any shard); cursor.copy() in, and out
//     as text and binary; a point read past prepare_threshold and text and
//     binary aggregates.
//   - TestJDBC (JdbcCheck.java, compiled with javac; Debian
//     libpostgresql-jdbc-java and openjdk-17-jdk-headless), 100 k rows:
//     setFetchSize(1000) with autocommit off (Execute(1000) + Sync on one
//     portal, again and again) over the ORDER BY merge and over an unordered
//     scatter; four PreparedStatements run 12 times each, past
//     prepareThreshold (server-side statements; int8, int4, numeric, text,
//     timestamptz and bool parameters; binary and text results in one row,
//     over a merged GROUP BY too); a batch of 500 inserts with
//     reWriteBatchedInserts=true; ordinary queries and updates
//     (executeUpdate sends a row limit of 1), one rolled back.
//   - TestNodePostgres (testdata/node/check.js; pg, pg-cursor and
//     pg-query-stream from testdata/node/package-lock.json, installed with
//     npm ci), 5 k rows: pg-cursor read(100) and pg-query-stream (batches of
//     100) over a scatter with ORDER BY (order checked) and without (every
//     row once); parameterized and named prepared queries.
//
// Every program bounds its own waits (a socket read timeout, or a timer
// for the step) and the test kills it after two minutes, so a session that
// never answers fails its step with a message rather than hanging the
// package; when a test failed, the clusters' sessions of its database are
// ended, so what a hung step left does not block the next test.
//
// .ci/run installs the drivers (apt-get, npm ci) and then sets
// SHARDGATE_REQUIRE_DRIVERS=1, which makes a missing driver a failure;
// without it a test whose driver is missing is skipped.
//
// The package has no code of its own.
package drivertest
