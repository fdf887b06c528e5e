-- A pgbench write load for the README's tour "Reshard the demo from 2 to 4
-- shards": each transaction inserts one order of a random customer (its id
-- from orders_id_seq on main, its shard from customer_id) and marks an
-- order of another customer paid, through the proxy:
--   pgbench -n -c 2 -T 120 -P 10 -f examples/ecommerce/load.sql \
--       "postgres://postgres@127.0.0.1:6432/shop?sslmode=disable"
\set c random(1, 1000)
\set d random(1, 1000)
INSERT INTO orders (customer_id, total, currency) VALUES (:c, 19.99, 'EUR');
UPDATE orders SET status = 'paid' WHERE customer_id = :d AND status = 'pending';
