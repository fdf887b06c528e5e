-- E-commerce example: DDL for the SHARDED groups of topology.yaml.
--
-- The file has one section per shard group, each opened by a marker line
-- "-- @group NAME". A section runs on EVERY cluster of that group (in
-- topology.yaml both groups span pg0 and pg1), because every shard holds the
-- same tables with its own slice of the rows. Sequences are not here: they
-- live on the main group only, see schema_main.sql.
--
-- Rules a sharded schema follows, visible below:
--   * A primary or unique key of a sharded table must contain the shard key
--     (customer_id, or lower(sku)): each shard can only enforce uniqueness of
--     the rows it holds, and rows with equal keys always share a shard.
--   * No foreign keys between sharded tables: shards are loaded, copied and
--     resharded table by table. Integrity is the application's (and the
--     example generator's) job. Reference tables are copied whole to every
--     cluster, so joins with them stay local.
--   * Ids come from sequences on main (see schema_main.sql), not from
--     per-shard serial columns, which would collide across shards.
--
-- Every statement is idempotent, so the file can be applied again.

-- @group by_customer
-- Sharded by customer_id (customers: by id). Runs on every cluster of by_customer.

-- Reference tables: a full copy on every cluster of the group.
CREATE TABLE IF NOT EXISTS countries (
    code char(2) PRIMARY KEY,
    name text    NOT NULL
);

CREATE TABLE IF NOT EXISTS currencies (
    code char(3) PRIMARY KEY,
    name text    NOT NULL
);

-- Member tables. customers.id carries the same value as customer_id elsewhere.
CREATE TABLE IF NOT EXISTS customers (
    id         bigint PRIMARY KEY,            -- the shard key; from customers_id_seq
    name       text        NOT NULL,
    email      text        NOT NULL,
    country    char(2)     NOT NULL,          -- countries.code
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS addresses (
    id          bigint  NOT NULL,             -- supplied by the application
    customer_id bigint  NOT NULL,             -- the shard key
    line1       text    NOT NULL,
    city        text    NOT NULL,
    country     char(2) NOT NULL,             -- countries.code
    PRIMARY KEY (customer_id, id)
);

CREATE TABLE IF NOT EXISTS orders (
    id          bigint        NOT NULL,       -- from orders_id_seq; found by id through orders_by_id
    customer_id bigint        NOT NULL,       -- the shard key
    status      text          NOT NULL DEFAULT 'pending'
                CHECK (status IN ('pending', 'paid', 'shipped', 'delivered', 'cancelled')),
    total       numeric(12,2) NOT NULL DEFAULT 0,
    currency    char(3)       NOT NULL,       -- currencies.code
    created_at  timestamptz   NOT NULL DEFAULT now(),
    PRIMARY KEY (customer_id, id)
);

CREATE TABLE IF NOT EXISTS items (
    id          bigint        NOT NULL,       -- from items_id_seq
    customer_id bigint        NOT NULL,       -- the shard key: the order's customer
    order_id    bigint        NOT NULL,       -- orders.id of the same customer
    sku         text          NOT NULL,       -- products.sku (another group: no join pushdown)
    qty         int           NOT NULL CHECK (qty > 0),
    price       numeric(12,2) NOT NULL,       -- unit price when ordered
    PRIMARY KEY (customer_id, id)
);
CREATE INDEX IF NOT EXISTS items_order_idx ON items (customer_id, order_id);

-- The GSI table of orders_by_id (secondary_indexes in topology.yaml): order
-- id -> customer_id. It is sharded by its own id over this group's shards,
-- so "WHERE orders.id = $1" is one read here, then one read on the order's shard.
-- The proxy writes it together with orders (docs/topology.md, secondary_indexes);
-- nobody else should.
CREATE TABLE IF NOT EXISTS orders_by_id (
    id          bigint PRIMARY KEY,           -- orders.id: this table's shard key
    customer_id bigint NOT NULL               -- where the order lives
);

-- The GSI table of customers_by_email: lower(email) -> customers.id, sharded
-- by the value; unique, so a second customer with the same lower(email)
-- anywhere is a 23505 named customers_by_email.
CREATE TABLE IF NOT EXISTS customers_by_email (
    value       text PRIMARY KEY,             -- lower(email): this table's shard key
    id          bigint NOT NULL               -- the customer's id (its shard key)
);

-- @group catalog
-- Sharded by lower(sku). Runs on every cluster of catalog.

CREATE TABLE IF NOT EXISTS products (
    id    bigint        NOT NULL,             -- from products_id_seq; unique by construction,
                                              -- not enforceable across shards
    sku   text          NOT NULL,             -- mixed case, e.g. 'AbC-00042'
    name  text          NOT NULL,
    price numeric(12,2) NOT NULL,
    -- Equal SKUs have equal lower(sku), hence share a shard: both keys are
    -- enforced globally by enforcing them per shard.
    PRIMARY KEY (sku)
);
CREATE UNIQUE INDEX IF NOT EXISTS products_lower_sku_key ON products (lower(sku));
CREATE INDEX IF NOT EXISTS products_id_idx ON products (id);
