// Package topoinit writes a starting topology for an existing database:
// `shardgate topology init --dsn ...` inspects a live Postgres database
// (Inspect: its tables, columns, primary keys, foreign keys and sequences,
// read from pg_catalog) and renders a topology file (Render) that puts every
// table in the main group and lists every sequence there, so the
// application works through the proxy unchanged. The file carries
// suggestions, as comments only, for shard groups: one per table that
// other tables reference by foreign key, and one per key-like column
// (customer_id, tenant_id, ...) that several tables share.
//
// Inspect is the only function that touches a database; Suggest and
// Render are pure. The package imports pgx, keyexpr (identifier quoting)
// and topology (type names); nothing of shardgate imports it but cmd.
package topoinit
