// Package topology loads, validates and watches shardgate's topology file:
// the YAML model of clusters, shard groups, sharding indexes, shards,
// member and reference tables, sequences, secondary indexes and the proxy's
// own settings (every key is described in docs/topology.md).
//
// The file is decoded from yaml.Node by hand rather than unmarshalled into
// structs, so that every value keeps its line and column and so that one
// pass can report every problem at once: Parse returns a *ValidationError
// listing each one as "file:line:col: message", sorted by position, and
// refuses the file as a whole. Warnings (such as the one for the modulo
// function) do not refuse a file; they are kept in Topology.Warnings.
//
// Lifecycle: a *Topology is a plain value produced by Load or Parse and is
// never modified afterwards; treat it as read-only and share it freely.
// Watch reloads the file when it changes (or when asked to, on SIGHUP) and
// hands over a new *Topology each time; an invalid edit is reported and
// the previous topology stays in force. Compiling a Topology into the
// routing view is vschema's job.
//
// Reloads: Diff compares the topology in force with an edited one and
// classifies every change as applied, needing a restart, or refused
// (anything that would route statements to shards that do not hold the
// rows: the file does not move data). Changes that move a table carry an
// EmptyCheck, which the caller runs against the clusters (Verify), since
// this package touches no database. See diff.go.
//
// Secrets (secrets.go): passwords come from the file, the environment
// (${NAME}) or password_file:; RedactDSN masks them wherever a DSN is
// printed, and a file holding one that others may read gets a warning.
// A cluster's TLS settings are libpq's DSN parameters (backendtls.go),
// checked here, their relative paths resolved from the file's directory.
//
// Dependencies: keyexpr (to parse index expressions), auth (the users as
// it takes them: AuthConfig.AuthUsers), yaml.v3 and fsnotify.
// This package must never import vschema, the planner or the proxy, and
// never touches the network (it reads the files the topology names:
// password files, and checks that TLS files exist).
package topology
