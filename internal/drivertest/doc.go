// Package drivertest runs client drivers other than pgx through the proxy,
// each as its users run it, against real Postgres clusters
// (internal/testenv) behind an in-process proxy (internal/proxytest).
//
// TestPsycopg2 runs testdata/psycopg2_check.py with the python3 that has
// psycopg2 (Debian: python3-psycopg2, which .ci/run installs): named
// (server-side) cursors over a merge of four shards with ORDER BY, read
// with FETCH FORWARD n; a cursor WITH HOLD and a scrollable one; the
// ordinary cursor; executemany; copy_expert both ways. The script checks
// order and completeness itself and prints what it read; the test compares
// that with the rows it loaded. Without psycopg2 the test is skipped,
// unless SHARDGATE_REQUIRE_DRIVERS=1 (set by .ci/run), which makes it fail.
//
// The package has no code of its own.
package drivertest
