-- E-commerce example: DDL for the MAIN group only (cluster pg0 in topology.yaml).
--
-- Run this once, on the main group's cluster. The sequences live here and
-- nowhere else: the proxy draws ids from them (in cached blocks) for INSERTs
-- into the sharded tables, so ids stay unique across every shard.
--
-- After loading the generated seed data (ids 1..N), move each sequence past
-- the highest id loaded; the generator's Stats.SetvalSQL() returns the
-- matching setval statements.
--
-- Every statement is idempotent, so the file can be applied again.

CREATE SEQUENCE IF NOT EXISTS customers_id_seq AS bigint;
CREATE SEQUENCE IF NOT EXISTS orders_id_seq    AS bigint;
CREATE SEQUENCE IF NOT EXISTS items_id_seq     AS bigint;
CREATE SEQUENCE IF NOT EXISTS products_id_seq  AS bigint;
