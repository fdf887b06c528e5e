// Package pgxsuite runs pgx's own test suite through the shardgate proxy and
// compares it with a run against PostgreSQL directly.
//
// The package has no code of its own; its test, TestPgxSuiteThroughProxy,
// does the work:
//
//  1. TestMain starts one throwaway cluster (internal/testenv) with a
//     database pgx_test set up as pgx's testsetup/postgresql_setup.sql sets
//     it up for a plain TCP, trust-auth target: the hstore and ltree
//     extensions and the uint64 domain. (The script's extra roles serve only
//     the TLS, password and socket variants of the suite, which need
//     PGX_TEST_* variables this test does not set, and its "tricky" user is
//     used only by pgtype's tests, which are not run.)
//
//  2. It copies the module directory of github.com/jackc/pgx/v5, at the
//     version in shardgate's go.mod, out of the read-only module cache into
//     a temporary directory, and builds the test binaries there once
//     (go test -run '^$'), so that the two runs' durations compare.
//
//  3. It runs there, one after the other,
//
//     go test -count=1 -json -timeout 15m . ./pgconn
//
//     with PGX_TEST_DATABASE pointing first at PostgreSQL directly and then
//     at an in-process proxy (pool size 20) over an all-main topology (one
//     unsharded group on the cluster), and GOFLAGS=<go env GOFLAGS> -mod=mod,
//     GOTOOLCHAIN=local, GOWORK=off. Every other PG* and PGX_* variable is
//     removed from the suite's environment, so both runs see the same
//     configuration and the TLS, Unix socket, password, PgBouncer, OAuth and
//     CockroachDB variants skip themselves. When this test's own deadline
//     (go test -timeout) is nearer than 15 minutes, pgx's -timeout is cut
//     to fit, so that a hanging test is still named by go test's timeout
//     panic and the summary is still written.
//
//  4. It counts the results from the -json stream and compares the two runs
//     as sets: every test that passes directly and fails through the proxy
//     must be listed, with its reason, in expected_failures.txt (at most 3
//     entries; "TestName/*" covers the subtests); an unlisted one fails the
//     test, and a listed one that passed is reported as stale. The proxy run
//     must also pass at least 95 % as many tests as the direct run.
//
// # What is counted
//
// The unit is the leaf test: a test or subtest that has no subtests of its
// own, keyed by package and full name ("pgconn TestConnect/TCP"; a
// t.TempDir path inside a subtest name is replaced by TEMPDIR). A parent
// test is not counted separately, because its result only repeats its
// subtests' — except a parent that fails while none of its subtests fails
// (a failure in its own body), which counts as one failure. A leaf that
// started but never finished (its binary timed out or died) counts as a
// failure; tests that never started are missing from the counts, which the
// 95 % rule then catches. Top-level test counts are reported too.
//
// # Report
//
// The test logs both runs' counts and durations; the panics of test
// binaries (timeouts name the tests then running); the tests that fail only
// through the proxy, grouped by their first error and then one by one with
// the first lines of their output; the tests that fail in both runs or only
// directly; tests that pass directly but are skipped or missing through the
// proxy; top-level tests at least 5 s slower through the proxy; and the skip
// reasons of the direct run. With PGXSUITE_REPORT=path the same summary is
// written to path, the two raw -json streams to path.direct.json and
// path.proxy.json, and the proxy's log to path.proxy.log.
//
// Two more variables help when investigating: PGXSUITE_RUN=regexp is passed
// to both runs as -run, and PGXSUITE_POOL_MODE=session runs the proxy with
// session pooling instead of its default (transaction pooling).
//
// `go test -short` skips the test, and does not start PostgreSQL, because
// the test builds and runs pgx's suite twice, which takes minutes.
package pgxsuite
