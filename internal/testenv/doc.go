// Package testenv starts and stops throwaway PostgreSQL clusters for tests,
// benchmarks and `shardgate demo`.
//
// # What it owns
//
// Everything under Env.BaseDir: one directory per cluster (pg0, pg1, ...)
// holding the data directory (data/, which also holds the Unix socket and
// shardgate.conf, the settings file rewritten on every start) and the server
// log (server.log); and the postmaster processes started from them. It does
// not know about shardgate's topology, schemas or routing: callers create
// tables, load data and build DSNs for their topology with Cluster.DSN.
//
// # Lifecycle
//
//  1. Start finds the server binaries (FindBinaries), makes a base directory
//     (a temporary one, or Options.BaseDir, kept and reused), arms a watchdog
//     process, then in parallel for each cluster: initdb (trust auth,
//     superuser postgres, UTF8, locale C.UTF-8 or else C) unless already
//     initialised, writes the settings (DefaultSettings + Options.Settings,
//     port, listen on 127.0.0.1 only; ssl = on with a certificate of the
//     Env's own CA for the clusters of Options.TLS), `pg_ctl start -w`,
//     and creates Options.Databases. A failed start reports the tail of
//     the server log.
//  2. Tests use Cluster.DSN, Conn and Exec; Cluster.Stop and Cluster.Start
//     take one backend down and bring it back on the same port.
//  3. Env.Stop (idempotent) stops every server (immediate mode for a
//     temporary base directory, which it then removes; fast mode, keeping
//     every commit, for a kept one). If the process dies first (panic,
//     `go test -timeout`, SIGKILL, Ctrl-C), the watchdog notices that its
//     pipe to this process closed and does the same. Env.StopOnSignal stops
//     the clusters on SIGINT/SIGTERM for programs without their own handler.
//
// When running as root, the servers run as the "postgres" account (PostgreSQL
// refuses root) and the directories are chowned to it.
//
// # In tests
//
// StartLanes runs a pgbench load that outlives connection errors (lanes
// of single-client pgbench, each started again after an error) and reads
// their per-transaction logs back; FindAcked looks the rows of the
// acknowledged transactions up on the servers.
//
// Run is a TestMain helper that shares one Env across a package's tests;
// Shared(t) returns it. ForTest(t, opts) gives one test its own clusters.
// Missing binaries fail the tests with instructions to install PostgreSQL,
// unless SHARDGATE_SKIP_PG=1, which skips the tests that need it.
package testenv
