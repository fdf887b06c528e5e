-- The differential suite's queries. Every entry runs through the proxy and
-- on the oracle, in file order (writes change what later reads see).
--
-- Header: -- q: ID [ordered | keys=N,...] [write] [ignore=col,...] [norehearse] [countonly]
--   ordered    the ORDER BY fixes the order of every row: compared in sequence
--   keys=N,... only the ORDER BY key columns (numbered from 1) are compared in
--              sequence; whole rows as multisets (ties may come in any order)
--   (neither)  rows compared as multisets
--   write      changes data: rehearsed in a rolled-back transaction, then run
--              once for real on each side
--   ignore=c   column c is compared for NULL-ness only (sequence-filled ids)
--   countonly  only the number of rows is compared (LIMIT without a total order)
--   args=v,... bound to $1, $2, ...: integers, NULL, {a;b} (the array '{a,b}'),
--              anything else as a string
--
-- Placement (by_customer, xxhash of customer_id; shards -40/80-c0 on pg0,
-- 40-80/c0- on pg1): 1 -> 80-c0, 3 -> -40 (both pg0: two virtual shards of one
-- cluster); 2 -> c0-, 9 -> 40-80 (both pg1); 7, 42 and -42 -> 80-c0 (pg0);
-- 100 -> 40-80 (pg1). TestKeyPlacement pins these facts.

-- ===================================================================
-- Point reads: one shard.
-- ===================================================================

-- q: point.customer_7 ordered
SELECT * FROM customers WHERE id = 7

-- q: point.customer_nan ordered
SELECT * FROM customers WHERE id = 0

-- q: point.customer_infinity ordered
SELECT * FROM customers WHERE id = -1

-- q: point.customer_neg_infinity ordered
SELECT id, score, rating, credit, born FROM customers WHERE id = -2

-- q: point.customer_neg_zero ordered
SELECT id, score, rating, credit, born, score::text AS s FROM customers WHERE id = -3

-- q: point.customer_max_bigint ordered
SELECT * FROM customers WHERE id = 9223372036854775807

-- q: point.customer_min_bigint ordered
SELECT * FROM customers WHERE id = -9223372036854775808

-- q: point.customer_huge_values ordered
SELECT id, score, rating, credit, born FROM customers WHERE id = -42

-- q: point.customer_text_literal ordered
SELECT id, name, email FROM customers WHERE id = '42'

-- q: point.customer_cast ordered
SELECT id, name FROM customers WHERE id = CAST('100' AS bigint)

-- q: point.customer_int_cast ordered
SELECT id, name FROM customers WHERE id = 101::int

-- q: point.customer_reversed ordered
SELECT id, name FROM customers WHERE 102 = id

-- q: point.customer_missing
SELECT * FROM customers WHERE id = 99999

-- q: point.customer_no_orders ordered
SELECT id, name, tier FROM customers WHERE id = 355

-- q: point.customer_and_filter
SELECT id, name FROM customers WHERE id = 7 AND tier IS NOT NULL AND name <> ''

-- q: point.customer_and_false
SELECT id FROM customers WHERE id = 7 AND false

-- q: point.orders_of_42 ordered
SELECT * FROM orders WHERE customer_id = 42 ORDER BY id

-- q: point.orders_of_3_paid ordered
SELECT id, status, total FROM orders WHERE customer_id = 3 AND status = 'paid' ORDER BY total DESC, id

-- q: point.orders_of_minus42 ordered
SELECT id, total, weight, placed_at FROM orders WHERE customer_id = -42 ORDER BY placed_at, id

-- q: point.order_by_pk ordered
SELECT * FROM orders WHERE customer_id = 7 AND id = (SELECT min(id) FROM orders WHERE customer_id = 7)

-- q: point.items_of_7 ordered
SELECT * FROM items WHERE customer_id = 7 ORDER BY order_id, line

-- q: point.orders_of_max_bigint ordered
SELECT id, total FROM orders WHERE customer_id = 9223372036854775807 ORDER BY id

-- q: point.orders_of_min_bigint ordered
SELECT id, total FROM orders WHERE customer_id = -9223372036854775808 ORDER BY id

-- q: point.limit_on_one_shard ordered
SELECT id, total FROM orders WHERE customer_id = 42 ORDER BY total DESC, id LIMIT 3 OFFSET 1

-- q: point.aggregate_on_one_shard ordered
SELECT count(*), sum(total), avg(total), min(placed_at), max(note) FROM orders WHERE customer_id = 3

-- q: point.group_on_one_shard ordered
SELECT status, count(*), sum(total) FROM orders WHERE customer_id = 42 GROUP BY status ORDER BY status

-- q: point.distinct_on_one_shard ordered
SELECT DISTINCT status FROM orders WHERE customer_id = 3 ORDER BY status

-- q: point.product_by_sku ordered
SELECT * FROM products WHERE sku = 'Lyr-00001'

-- q: point.product_by_lower_sku ordered
SELECT * FROM products WHERE lower(sku) = 'mbz-00002'

-- q: point.product_wrong_case
SELECT sku FROM products WHERE sku = 'MBZ-00002'

-- q: point.product_lower_of_literal ordered
SELECT sku, name, price FROM products WHERE lower(sku) = lower('FOS-00003')

-- q: point.product_missing
SELECT sku FROM products WHERE sku = 'nope-1'

-- ===================================================================
-- IN lists, ANY, OR on the key: one or several shards.
-- ===================================================================

-- q: in.two_keys_one_cluster
SELECT id, name FROM customers WHERE id IN (1, 3)

-- q: in.two_keys_one_cluster_ordered ordered
SELECT id, name FROM customers WHERE id IN (1, 3) ORDER BY id DESC

-- q: in.two_keys_pg1_ordered ordered
SELECT id, name, tier FROM customers WHERE id IN (2, 9) ORDER BY name, id

-- q: in.orders_one_cluster_aggregate ordered
SELECT count(*), sum(total), max(total) FROM orders WHERE customer_id IN (1, 3)

-- q: in.orders_one_cluster_limit ordered
SELECT id, customer_id, total FROM orders WHERE customer_id IN (1, 3, 7) ORDER BY total, id LIMIT 5

-- q: in.two_clusters
SELECT id, name FROM customers WHERE id IN (1, 2)

-- q: in.two_clusters_ordered ordered
SELECT id, name FROM customers WHERE id IN (1, 2, 3, 9) ORDER BY id

-- q: in.two_clusters_limit ordered
SELECT id, customer_id, total FROM orders WHERE customer_id IN (1, 2, 3, 9) ORDER BY id LIMIT 4

-- q: in.two_clusters_aggregate ordered
SELECT count(*), sum(total), min(id), max(id) FROM orders WHERE customer_id IN (1, 2, 3, 9)

-- q: in.duplicates
SELECT id FROM customers WHERE id IN (7, 7, 42, 42)

-- q: in.with_null
SELECT id FROM customers WHERE id IN (7, NULL, 100)

-- q: in.special_keys
SELECT id, score FROM customers WHERE id IN (0, -1, -2, -3, -42, 9223372036854775807, -9223372036854775808)

-- q: in.any_array_literal
SELECT id, name FROM customers WHERE id = ANY('{5,6,7,8}')

-- q: in.any_array_constructor
SELECT id, name FROM customers WHERE id = ANY(ARRAY[10, 11, 12]::bigint[])

-- q: in.any_empty_array
SELECT id FROM customers WHERE id = ANY('{}'::bigint[])

-- q: in.any_literal_cut ordered
SELECT id, name FROM customers WHERE id = ANY('{1,2,3,9,NULL,100,7.5}'::numeric[]) ORDER BY id

-- q: in.any_literal_text
SELECT sku, price FROM products WHERE lower(sku) = ANY('{lyr-00001, "mbz-00002",fos-00003,"it''s",pgb-00004}')

-- q: in.any_param ordered args={1;2;3;9;100}
SELECT id, name FROM customers WHERE id = ANY($1::bigint[]) ORDER BY id

-- q: in.any_param_aggregate args={1;2;3;9;100}
SELECT count(*), sum(total), min(id), max(id) FROM orders WHERE customer_id = ANY($1::bigint[])

-- q: in.any_param_read_twice ordered args={1;2;9}
SELECT id, cardinality($1::bigint[]) FROM customers WHERE id = ANY($1::bigint[]) ORDER BY id

-- q: in.any_under_or ordered
SELECT id FROM customers WHERE id = ANY('{1,2}') OR id = 9 ORDER BY id

-- q: in.any_not ordered
SELECT id FROM customers WHERE NOT (id = ANY('{1,2,3}')) AND id < 12 ORDER BY id

-- q: in.any_all ordered
SELECT id FROM customers WHERE id <> ALL('{1,2,3}') AND id < 12 ORDER BY id

-- q: in.or_of_keys
SELECT id, name FROM customers WHERE id = 13 OR id = 14 OR id = 100

-- q: in.orders_in_list
SELECT id, customer_id, status FROM orders WHERE customer_id IN (100, 101, 102) AND status <> 'cancelled'

-- q: in.products_in_list
SELECT sku, price FROM products WHERE sku IN ('Lyr-00001', 'mBz-00002', 'fOS-00003', 'PgB-00004', 'kBl-00005')

-- q: in.products_lower_in_list
SELECT sku, price FROM products WHERE lower(sku) IN ('qip-00006', 'wif-00007', 'giz-00008')

-- q: in.products_in_list_ordered ordered
SELECT sku, stock FROM products WHERE sku IN ('DLi-00009', 'IUN-00010', 'rxM-00011', 'WQx-00101', 'JBc-00102') ORDER BY sku

-- q: in.row_equality
SELECT id, customer_id FROM orders WHERE (customer_id, status) = (42, 'paid')

-- IN lists and ORs on the key are cut to each cluster's own keys (issue
-- 27): the answers must not change, whatever the list holds.

-- q: prune.in_300_keys
SELECT id, name FROM customers WHERE id IN (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122, 123, 124, 125, 126, 127, 128, 129, 130, 131, 132, 133, 134, 135, 136, 137, 138, 139, 140, 141, 142, 143, 144, 145, 146, 147, 148, 149, 150, 151, 152, 153, 154, 155, 156, 157, 158, 159, 160, 161, 162, 163, 164, 165, 166, 167, 168, 169, 170, 171, 172, 173, 174, 175, 176, 177, 178, 179, 180, 181, 182, 183, 184, 185, 186, 187, 188, 189, 190, 191, 192, 193, 194, 195, 196, 197, 198, 199, 200, 201, 202, 203, 204, 205, 206, 207, 208, 209, 210, 211, 212, 213, 214, 215, 216, 217, 218, 219, 220, 221, 222, 223, 224, 225, 226, 227, 228, 229, 230, 231, 232, 233, 234, 235, 236, 237, 238, 239, 240, 241, 242, 243, 244, 245, 246, 247, 248, 249, 250, 251, 252, 253, 254, 255, 256, 257, 258, 259, 260, 261, 262, 263, 264, 265, 266, 267, 268, 269, 270, 271, 272, 273, 274, 275, 276, 277, 278, 279, 280, 281, 282, 283, 284, 285, 286, 287, 288, 289, 290, 291, 292, 293, 294, 295, 296, 297, 298, 299, 300)

-- q: prune.or_200_keys
SELECT id, name FROM customers WHERE id = 1 OR id = 2 OR id = 3 OR id = 4 OR id = 5 OR id = 6 OR id = 7 OR id = 8 OR id = 9 OR id = 10 OR id = 11 OR id = 12 OR id = 13 OR id = 14 OR id = 15 OR id = 16 OR id = 17 OR id = 18 OR id = 19 OR id = 20 OR id = 21 OR id = 22 OR id = 23 OR id = 24 OR id = 25 OR id = 26 OR id = 27 OR id = 28 OR id = 29 OR id = 30 OR id = 31 OR id = 32 OR id = 33 OR id = 34 OR id = 35 OR id = 36 OR id = 37 OR id = 38 OR id = 39 OR id = 40 OR id = 41 OR id = 42 OR id = 43 OR id = 44 OR id = 45 OR id = 46 OR id = 47 OR id = 48 OR id = 49 OR id = 50 OR id = 51 OR id = 52 OR id = 53 OR id = 54 OR id = 55 OR id = 56 OR id = 57 OR id = 58 OR id = 59 OR id = 60 OR id = 61 OR id = 62 OR id = 63 OR id = 64 OR id = 65 OR id = 66 OR id = 67 OR id = 68 OR id = 69 OR id = 70 OR id = 71 OR id = 72 OR id = 73 OR id = 74 OR id = 75 OR id = 76 OR id = 77 OR id = 78 OR id = 79 OR id = 80 OR id = 81 OR id = 82 OR id = 83 OR id = 84 OR id = 85 OR id = 86 OR id = 87 OR id = 88 OR id = 89 OR id = 90 OR id = 91 OR id = 92 OR id = 93 OR id = 94 OR id = 95 OR id = 96 OR id = 97 OR id = 98 OR id = 99 OR id = 100 OR id = 101 OR id = 102 OR id = 103 OR id = 104 OR id = 105 OR id = 106 OR id = 107 OR id = 108 OR id = 109 OR id = 110 OR id = 111 OR id = 112 OR id = 113 OR id = 114 OR id = 115 OR id = 116 OR id = 117 OR id = 118 OR id = 119 OR id = 120 OR id = 121 OR id = 122 OR id = 123 OR id = 124 OR id = 125 OR id = 126 OR id = 127 OR id = 128 OR id = 129 OR id = 130 OR id = 131 OR id = 132 OR id = 133 OR id = 134 OR id = 135 OR id = 136 OR id = 137 OR id = 138 OR id = 139 OR id = 140 OR id = 141 OR id = 142 OR id = 143 OR id = 144 OR id = 145 OR id = 146 OR id = 147 OR id = 148 OR id = 149 OR id = 150 OR id = 151 OR id = 152 OR id = 153 OR id = 154 OR id = 155 OR id = 156 OR id = 157 OR id = 158 OR id = 159 OR id = 160 OR id = 161 OR id = 162 OR id = 163 OR id = 164 OR id = 165 OR id = 166 OR id = 167 OR id = 168 OR id = 169 OR id = 170 OR id = 171 OR id = 172 OR id = 173 OR id = 174 OR id = 175 OR id = 176 OR id = 177 OR id = 178 OR id = 179 OR id = 180 OR id = 181 OR id = 182 OR id = 183 OR id = 184 OR id = 185 OR id = 186 OR id = 187 OR id = 188 OR id = 189 OR id = 190 OR id = 191 OR id = 192 OR id = 193 OR id = 194 OR id = 195 OR id = 196 OR id = 197 OR id = 198 OR id = 199 OR id = 200

-- q: prune.or_with_null_branch
SELECT id FROM customers WHERE id = 1 OR id = NULL OR id = 2 OR id = 9

-- q: prune.or_duplicates
SELECT id FROM customers WHERE id = 7 OR id = 7 OR id = 2 OR id = 2 OR id = 3

-- q: prune.or_mixed_types
SELECT id FROM customers WHERE id = 1 OR id = '2' OR id = 3::int OR id = 9.0 OR id = 7.5 OR id = CAST('42' AS bigint)

-- q: prune.in_mixed_types
SELECT id FROM customers WHERE id IN (1, '2', 3.0, 9::smallint, 7.5, NULL, 42)

-- q: prune.in_duplicates_and_nulls
SELECT id FROM customers WHERE id IN (1, 1, NULL, 2, 2, NULL, 3, 9, 9)

-- q: prune.not_in
SELECT id FROM customers WHERE id NOT IN (1, 2, 3, 9) AND id BETWEEN 1 AND 40

-- q: prune.not_or
SELECT id FROM customers WHERE NOT (id = 1 OR id = 2) AND id BETWEEN 1 AND 12

-- q: prune.or_with_other_column
SELECT id FROM customers WHERE id = 1 OR id = 2 OR tier = 1

-- q: prune.or_branches_with_conditions
SELECT id, tier FROM customers WHERE (id = 1 AND tier IS NOT NULL) OR (id = 2 AND tier IS NULL) OR id = 9 OR id = 3

-- q: prune.or_and_other_conjunct
SELECT id, customer_id FROM orders WHERE (customer_id = 1 OR customer_id = 2 OR customer_id = 9) AND status <> 'cancelled'

-- q: prune.or_row_equalities
SELECT id, customer_id FROM orders WHERE (customer_id, status) = (1, 'paid') OR (customer_id, status) = (2, 'paid') OR (customer_id, status) = (9, 'open')

-- q: prune.or_ordered_limit ordered
SELECT id, customer_id FROM orders WHERE customer_id = 1 OR customer_id = 2 OR customer_id = 3 OR customer_id = 9 ORDER BY id LIMIT 7

-- q: prune.or_aggregate ordered
SELECT count(*), sum(total) FROM orders WHERE customer_id = 1 OR customer_id = 2 OR customer_id = 3 OR customer_id = 9

-- q: prune.any_with_null
SELECT id FROM customers WHERE id = ANY(ARRAY[1, NULL, 2, 9]::bigint[])

-- q: prune.in_param args=1,2,9
SELECT id FROM customers WHERE id IN ($1, $2, $3)

-- q: prune.any_update write
UPDATE orders SET total = total + 1 WHERE customer_id = ANY('{1,2,3,9}')

-- q: prune.any_delete_param write args={3;9;100}
DELETE FROM orders WHERE customer_id = ANY($1::bigint[]) AND status = 'cancelled'

-- ===================================================================
-- Scatter reads without merging: every shard, results concatenated.
-- ===================================================================

-- q: scatter.customers_all
SELECT * FROM customers

-- q: scatter.orders_all
SELECT * FROM orders

-- q: scatter.items_all
SELECT * FROM items

-- q: scatter.products_all
SELECT * FROM products

-- q: scatter.customers_tier
SELECT id, name, tier FROM customers WHERE tier = 3

-- q: scatter.customers_name_exact
SELECT id, name FROM customers WHERE name = 'alice'

-- q: scatter.customers_name_ilike
SELECT id, name FROM customers WHERE name ILIKE 'alice'

-- q: scatter.customers_name_like
SELECT id, name FROM customers WHERE name LIKE '%e' OR name LIKE 'Z%'

-- q: scatter.customers_unicode
SELECT id, name, nick FROM customers WHERE name IN ('Émile', 'émile', 'zoë', 'Ñandú')

-- q: scatter.customers_empty_name
SELECT id, name, email FROM customers WHERE name = '' OR name = ' spaced'

-- q: scatter.customers_null_email
SELECT id, name FROM customers WHERE email IS NULL

-- q: scatter.customers_score_nan
SELECT id, score FROM customers WHERE score = 'NaN'

-- q: scatter.customers_score_zero
SELECT id, score FROM customers WHERE score = 0

-- q: scatter.customers_score_range
SELECT id, score, rating FROM customers WHERE score > 900 OR rating < -49

-- q: scatter.customers_credit_negative
SELECT id, credit FROM customers WHERE credit < 0

-- q: scatter.customers_credit_small
SELECT id, credit FROM customers WHERE credit BETWEEN -0.001 AND 0.001

-- q: scatter.customers_born_old
SELECT id, born FROM customers WHERE born < '1945-01-01'

-- q: scatter.customers_last_seen
SELECT id, last_seen FROM customers WHERE last_seen >= '2023-06-01T00:00:00Z'

-- q: scatter.customers_uuid
SELECT id, ext_id FROM customers WHERE ext_id = '899e9600-a35f-4d35-a0bd-f87dd101490f'

-- q: scatter.customers_empty_bytea
SELECT id, avatar FROM customers WHERE avatar = '\x'

-- q: scatter.customers_jsonb_contains
SELECT id, prefs FROM customers WHERE prefs @> '{"theme": "dark"}'

-- q: scatter.customers_jsonb_field
SELECT id, prefs->>'theme' AS theme, (prefs->>'w')::numeric AS w FROM customers WHERE prefs ? 'beta' AND (prefs->>'n')::int >= 2

-- q: scatter.customers_array_any
SELECT id, tags FROM customers WHERE 'Asia' = ANY(tags)

-- q: scatter.customers_empty_array
SELECT id, tags FROM customers WHERE tags = '{}'

-- q: scatter.customers_interval
SELECT id, session FROM customers WHERE session > '90:00:00'

-- q: scatter.customers_char
SELECT id, code, length(code) AS len, code::text AS t FROM customers WHERE code LIKE 'A%'

-- q: scatter.customers_bool
SELECT id, active FROM customers WHERE active IS NOT TRUE

-- q: scatter.customers_expressions
SELECT id, upper(name) AS u, lower(name) AS l, length(name) AS n, balance * 2 AS b2, round(balance / 3, 6) AS b3,
       score / 8 AS s8, rating::float8 AS r8, born + 1 AS next_day, signup + interval '1 day 2 hours' AS later,
       date_trunc('month', last_seen) AS m, ext_id::text AS u2, encode(avatar, 'hex') AS hex, coalesce(nick, '-') AS nk
FROM customers WHERE id BETWEEN 1 AND 360

-- q: scatter.customers_case
SELECT id, CASE WHEN tier IS NULL THEN 'none' WHEN tier > 3 THEN 'high' ELSE 'low' END AS band FROM customers

-- q: scatter.orders_refunds
SELECT id, customer_id, status, total FROM orders WHERE total < 0 AND status = 'cancelled'

-- q: scatter.orders_note_like
SELECT id, note FROM orders WHERE note ILIKE '%door%'

-- q: scatter.orders_note_escape
SELECT id, note FROM orders WHERE note LIKE '%\%%' OR note LIKE '%\_%'

-- q: scatter.orders_weight_nan
SELECT id, weight FROM orders WHERE weight = 'NaN'

-- q: scatter.orders_unshipped
SELECT id, ship_date FROM orders WHERE ship_date IS NULL AND status = 'delivered'

-- q: scatter.orders_gift
SELECT id, gift FROM orders WHERE gift IS NOT FALSE AND qty > 15

-- q: scatter.orders_placed_window
SELECT id, placed_at FROM orders WHERE placed_at >= '2022-03-01' AND placed_at < '2022-03-08'

-- q: scatter.orders_arith
SELECT id, total * qty AS line_total, total / NULLIF(qty, 0) AS per_unit, discount * 3 AS d3, -total AS neg,
       weight * 2 AS w2, extract(epoch FROM placed_at) AS epoch, placed_at::date AS day
FROM orders WHERE customer_id > 300

-- q: scatter.items_sku_case
SELECT customer_id, order_id, line, sku FROM items WHERE sku ILIKE 'lyr-%' OR sku ILIKE 'mbz-%'

-- q: scatter.items_unknown_sku
SELECT customer_id, order_id, sku FROM items WHERE sku LIKE 'NOPE-%'

-- q: scatter.products_category
SELECT sku, category, price FROM products WHERE category = 'books'

-- q: scatter.products_jsonb
SELECT sku, attrs->'color' AS color, attrs->'ratio' AS ratio, jsonb_array_length(attrs->'tags') AS n
FROM products WHERE attrs->>'color' = 'Red'

-- q: scatter.products_price_range
SELECT sku, price FROM products WHERE price BETWEEN 10 AND 20

-- q: scatter.products_negative_stock
SELECT sku, stock FROM products WHERE stock <= 0

-- q: scatter.limit_no_order countonly
SELECT id, name FROM customers LIMIT 5

-- q: scatter.limit_no_order_filter countonly
SELECT id FROM orders WHERE status = 'paid' LIMIT 10

-- q: scatter.union_all
SELECT id, 'customer' AS kind FROM customers WHERE tier = 5
UNION ALL
SELECT id, 'order' FROM orders WHERE total > 4990

-- ===================================================================
-- ORDER BY across shards: every form, with ties and NULLs.
-- A unique last key (id, sku) makes the order total ("ordered"); where
-- only the keys are selected with ties, keys= compares the key sequence.
-- ===================================================================

-- q: order.id_asc ordered
SELECT id, name FROM customers ORDER BY id

-- q: order.id_desc ordered
SELECT id, name FROM customers ORDER BY id DESC

-- q: order.name_text ordered
SELECT name, id FROM customers ORDER BY name, id

-- q: order.name_desc ordered
SELECT name, id FROM customers ORDER BY name DESC, id DESC

-- q: order.name_ties keys=1
SELECT name, tier FROM customers ORDER BY name

-- q: order.name_collate_c ordered
SELECT name, id FROM customers ORDER BY name COLLATE "C", id

-- q: order.lower_name ordered
SELECT lower(name) AS l, id FROM customers ORDER BY lower(name), id

-- q: order.email_default_nulls_last ordered
SELECT email, id FROM customers ORDER BY email, id

-- q: order.email_nulls_first ordered
SELECT email, id FROM customers ORDER BY email NULLS FIRST, id

-- q: order.email_desc_default_nulls_first ordered
SELECT email, id FROM customers ORDER BY email DESC, id

-- q: order.email_desc_nulls_last ordered
SELECT email, id FROM customers ORDER BY email DESC NULLS LAST, id

-- q: order.tier_ties keys=1
SELECT tier, name, id FROM customers ORDER BY tier

-- q: order.tier_desc_nulls_last keys=1
SELECT tier, id FROM customers ORDER BY tier DESC NULLS LAST

-- q: order.tier_id ordered
SELECT tier, id FROM customers ORDER BY tier NULLS FIRST, id DESC

-- q: order.score_float ordered
SELECT score, id FROM customers ORDER BY score, id

-- q: order.score_desc ordered
SELECT score, id FROM customers ORDER BY score DESC, id

-- q: order.score_desc_nulls_last ordered
SELECT score, id FROM customers ORDER BY score DESC NULLS LAST, id

-- q: order.rating_real ordered
SELECT rating, id FROM customers ORDER BY rating NULLS FIRST, id

-- q: order.rating_ties keys=1
SELECT rating FROM customers ORDER BY rating DESC

-- q: order.credit_numeric ordered
SELECT credit, id FROM customers ORDER BY credit, id

-- q: order.credit_desc ordered
SELECT credit, id FROM customers ORDER BY credit DESC NULLS LAST, id

-- q: order.balance ordered
SELECT balance, id FROM customers ORDER BY balance DESC, id

-- q: order.born_date ordered
SELECT born, id FROM customers ORDER BY born, id

-- q: order.signup_timestamp ordered
SELECT signup, id FROM customers ORDER BY signup DESC NULLS LAST, id

-- q: order.last_seen_timestamptz ordered
SELECT last_seen, id FROM customers ORDER BY last_seen NULLS FIRST, id

-- q: order.uuid ordered
SELECT ext_id, id FROM customers ORDER BY ext_id, id

-- q: order.bytea ordered
SELECT avatar, id FROM customers ORDER BY avatar, id

-- q: order.bool keys=1
SELECT active FROM customers ORDER BY active

-- q: order.bool_id ordered
SELECT active, id FROM customers ORDER BY active DESC, id

-- q: order.varchar ordered
SELECT nick, id FROM customers ORDER BY nick, id

-- q: order.char_padded ordered
SELECT code, id FROM customers ORDER BY code DESC, id

-- q: order.interval ordered
SELECT session, id FROM customers ORDER BY session, id

-- q: order.jsonb ordered
SELECT prefs, id FROM customers ORDER BY prefs, id

-- q: order.array ordered
SELECT tags, id FROM customers ORDER BY tags, id

-- q: order.position ordered
SELECT id, name, tier FROM customers ORDER BY 3, 2, 1

-- q: order.alias ordered
SELECT id AS k, name AS n FROM customers ORDER BY n DESC, k

-- q: order.expression ordered
SELECT id, length(name) AS len FROM customers ORDER BY length(name) DESC, id

-- q: order.expression_not_selected ordered
SELECT id, name FROM customers ORDER BY id % 7, id

-- q: order.column_not_selected ordered
SELECT name FROM customers ORDER BY id

-- q: order.case_expression ordered
SELECT id, tier FROM customers ORDER BY CASE WHEN tier IS NULL THEN 0 ELSE tier END DESC, id

-- q: order.is_null_first ordered
SELECT id, email FROM customers ORDER BY email IS NULL DESC, id

-- q: order.using_operator ordered
SELECT id FROM customers ORDER BY id USING >

-- q: order.filtered ordered
SELECT id, name, tier FROM customers WHERE tier = 2 ORDER BY name, id

-- q: order.orders_total ordered
SELECT total, id, customer_id FROM orders ORDER BY total DESC, id

-- q: order.orders_status_ties keys=1
SELECT status, total FROM orders ORDER BY status

-- q: order.orders_status_total ordered
SELECT status, total, id FROM orders ORDER BY status, total, id

-- q: order.orders_placed_at ordered
SELECT placed_at, id FROM orders ORDER BY placed_at, id

-- q: order.orders_ship_date_nulls_first ordered
SELECT ship_date, id FROM orders ORDER BY ship_date NULLS FIRST, id

-- q: order.orders_weight_nan ordered
SELECT weight, id FROM orders ORDER BY weight DESC NULLS LAST, id

-- q: order.orders_discount ordered
SELECT discount, id FROM orders ORDER BY discount, id

-- q: order.orders_currency_char keys=1
SELECT currency, status FROM orders ORDER BY currency DESC NULLS LAST

-- q: order.orders_note ordered
SELECT note, id FROM orders WHERE note IS NOT NULL ORDER BY note, id

-- q: order.orders_mixed_directions ordered
SELECT status, gift, qty, id FROM orders ORDER BY status DESC, gift NULLS FIRST, qty DESC NULLS LAST, id

-- q: order.orders_customer keys=1
SELECT customer_id, total FROM orders ORDER BY customer_id

-- q: order.items ordered
SELECT customer_id, order_id, line, sku FROM items ORDER BY customer_id, order_id, line

-- q: order.items_sku ordered
SELECT sku, order_id, line FROM items ORDER BY sku, order_id, line

-- q: order.products_sku ordered
SELECT sku, name FROM products ORDER BY sku

-- q: order.products_lower_sku ordered
SELECT lower(sku) AS k, price FROM products ORDER BY lower(sku)

-- q: order.products_price ordered
SELECT price, sku FROM products ORDER BY price DESC NULLS LAST, sku

-- q: order.products_weight_real ordered
SELECT weight, sku FROM products ORDER BY weight, sku

-- q: order.products_released ordered
SELECT released, sku FROM products ORDER BY released NULLS FIRST, sku DESC

-- q: order.products_json_field ordered
SELECT attrs->>'color' AS color, sku FROM products ORDER BY attrs->>'color', sku

-- q: order.products_category_ties keys=1
SELECT category FROM products ORDER BY category NULLS FIRST

-- ===================================================================
-- LIMIT and OFFSET across shards.
-- ===================================================================

-- q: limit.first_10 ordered
SELECT id, name FROM customers ORDER BY id LIMIT 10

-- q: limit.offset ordered
SELECT id, name FROM customers ORDER BY id LIMIT 10 OFFSET 5

-- q: limit.offset_near_end ordered
SELECT id FROM customers ORDER BY id OFFSET 360

-- q: limit.offset_past_end ordered
SELECT id FROM customers ORDER BY id OFFSET 1000

-- q: limit.zero ordered
SELECT id FROM customers ORDER BY id LIMIT 0

-- q: limit.all ordered
SELECT id FROM customers ORDER BY id DESC LIMIT ALL

-- q: limit.null ordered
SELECT id FROM customers ORDER BY id LIMIT NULL

-- q: limit.fetch_first ordered
SELECT id, name FROM customers ORDER BY name, id FETCH FIRST 5 ROWS ONLY

-- q: limit.offset_fetch ordered
SELECT id, name FROM customers ORDER BY name DESC, id OFFSET 3 ROWS FETCH NEXT 4 ROWS ONLY

-- q: limit.fetch_with_ties keys=1
SELECT tier, id FROM customers ORDER BY tier FETCH FIRST 3 ROWS WITH TIES

-- q: limit.fetch_with_ties_desc keys=1
SELECT status FROM orders ORDER BY status DESC FETCH FIRST 1 ROW WITH TIES

-- q: limit.nulls_first ordered
SELECT email, id FROM customers ORDER BY email NULLS FIRST, id LIMIT 12

-- q: limit.score_top ordered
SELECT score, id FROM customers ORDER BY score DESC NULLS LAST, id LIMIT 5

-- q: limit.score_bottom ordered
SELECT score, id FROM customers ORDER BY score, id LIMIT 5

-- q: limit.credit_top ordered
SELECT credit, id FROM customers ORDER BY credit DESC NULLS LAST, id LIMIT 4 OFFSET 2

-- q: limit.orders_latest ordered
SELECT id, customer_id, placed_at FROM orders ORDER BY placed_at DESC, id LIMIT 20

-- q: limit.orders_biggest ordered
SELECT id, total FROM orders ORDER BY total DESC, id LIMIT 7

-- q: limit.orders_filter ordered
SELECT id, total FROM orders WHERE status = 'shipped' ORDER BY total, id LIMIT 10 OFFSET 10

-- q: limit.orders_deep_offset ordered
SELECT id FROM orders ORDER BY id LIMIT 5 OFFSET 2000

-- q: limit.orders_expression ordered
SELECT id, total * coalesce(qty, 0) AS v FROM orders ORDER BY total * coalesce(qty, 0) DESC, id LIMIT 8

-- q: limit.items ordered
SELECT order_id, line, price FROM items ORDER BY price DESC NULLS LAST, order_id, line LIMIT 15

-- q: limit.products ordered
SELECT sku, price FROM products ORDER BY price, sku LIMIT 10

-- q: limit.products_offset_only ordered
SELECT sku FROM products ORDER BY lower(sku) DESC OFFSET 290

-- q: limit.one ordered
SELECT id, born FROM customers ORDER BY born DESC NULLS LAST, id LIMIT 1

-- ===================================================================
-- Aggregates across shards. Floats are multiples of 1/8 (or 1/2), so
-- their sums are exact in any order; the special rows (NaN, ±Infinity,
-- -0, 1e300) have ids outside 1..360.
-- ===================================================================

-- q: agg.count_star ordered
SELECT count(*) FROM customers

-- q: agg.count_column ordered
SELECT count(email), count(tier), count(score), count(prefs) FROM customers

-- q: agg.count_orders ordered
SELECT count(*) FROM orders

-- q: agg.count_filtered ordered
SELECT count(*) FROM orders WHERE status = 'paid'

-- q: agg.count_empty ordered
SELECT count(*), count(note) FROM orders WHERE total > 1000000

-- q: agg.empty_input ordered
SELECT count(*), sum(total), avg(total), min(total), max(placed_at), sum(qty), avg(weight) FROM orders WHERE total > 1000000

-- q: agg.sum_int ordered
SELECT sum(qty), sum(id) FROM orders

-- q: agg.sum_smallint ordered
SELECT sum(tier) FROM customers

-- q: agg.sum_bigint ordered
SELECT sum(population) FROM countries

-- q: agg.sum_numeric ordered
SELECT sum(total), sum(discount) FROM orders

-- q: agg.sum_numeric_scales ordered
SELECT sum(credit) FROM customers WHERE id BETWEEN 1 AND 360

-- q: agg.sum_numeric_special ordered
SELECT sum(credit) FROM customers

-- q: agg.sum_numeric_infinity ordered
SELECT sum(credit) FROM customers WHERE id IN (-1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10)

-- q: agg.sum_float8 ordered
SELECT sum(score) FROM customers WHERE id BETWEEN 1 AND 360

-- q: agg.sum_float8_nan ordered
SELECT sum(score) FROM customers

-- q: agg.sum_float8_infinity ordered
SELECT sum(score) FROM customers WHERE score <> 'NaN' AND score <> '-Infinity'

-- q: agg.sum_float4 ordered
SELECT sum(rating) FROM customers WHERE id BETWEEN 1 AND 360

-- q: agg.sum_interval ordered
SELECT sum(session) FROM customers

-- q: agg.sum_money_expression ordered
SELECT sum(total * qty), sum(total) * 2 FROM orders

-- Expressions over aggregates of interval and money: the proxy evaluates
-- interval + - and unary -; what it has no arithmetic for (interval * /
-- numbers, timestamp and date arithmetic, money) runs over intermediate
-- results once the shards' column types say so.

-- q: agg.interval_add_sub ordered
SELECT max(session) - min(session), sum(session) + max(session), -min(session), max(signup::time) - min(signup::time) FROM customers

-- q: agg.interval_case_grouped ordered
SELECT tier, max(session) - min(session), CASE WHEN count(*) > 1 THEN sum(session) END, nullif(max(session), min(session)) FROM customers GROUP BY tier ORDER BY tier NULLS FIRST

-- q: agg.interval_having_order ordered
SELECT tier, sum(session) - min(session) FROM customers GROUP BY tier HAVING max(session) - min(session) > '1 day' ORDER BY max(session) + min(session), tier

-- q: agg.interval_mul_div ordered
SELECT sum(session) * 2, sum(session) / 3, min(session) * 1.5, avg(session) * 2, max(session) / 7.25 FROM customers

-- q: agg.timestamp_date_arith ordered
SELECT max(signup) + max(session), min(signup) - min(session), max(born) + 1, min(born) - 3, max(born) + min(session), max(last_seen) - min(last_seen) FROM customers WHERE born > '1900-01-01' AND signup < '2100-01-01'

-- q: agg.money_expressions ordered
SELECT sum(total::money), sum(total::money) * 2, max(total::money) - min(total::money), sum(total::money) / count(*), max(total::money) / min(total::money) FROM orders

-- q: agg.money_grouped ordered
SELECT customer_id, sum(total::money) * 2, max(total::money) / 2, count(*) * min(total::money) FROM orders GROUP BY customer_id ORDER BY customer_id

-- q: agg.group_by_money
SELECT total::money AS m, count(*) * 2 FROM orders GROUP BY total::money

-- q: agg.avg_int ordered
SELECT avg(qty) FROM orders

-- q: agg.avg_smallint ordered
SELECT avg(tier) FROM customers

-- q: agg.avg_numeric ordered
SELECT avg(total), avg(discount) FROM orders

-- q: agg.avg_numeric_scales ordered
SELECT avg(credit), avg(balance) FROM customers WHERE id BETWEEN 1 AND 360

-- q: agg.avg_float8 ordered
SELECT avg(score) FROM customers WHERE id BETWEEN 1 AND 360

-- q: agg.avg_float4 ordered
SELECT avg(rating) FROM customers WHERE id BETWEEN 1 AND 360

-- q: agg.avg_interval ordered
SELECT avg(session) FROM customers

-- q: agg.avg_with_nan ordered
SELECT avg(score), avg(credit) FROM customers

-- q: agg.sum_bigint_edges ordered
SELECT sum(id), avg(id), min(id), max(id) FROM customers

-- q: agg.sum_bigint_overflowing_int64 ordered
SELECT sum(id), count(*) FROM customers WHERE id > 0

-- q: agg.empty_on_one_cluster ordered
SELECT count(*), sum(total), avg(total), min(total), max(note), bool_and(gift) FROM orders
WHERE customer_id IN (3, 2) AND (customer_id = 3 OR total > 1000000)

-- q: agg.all_null_input ordered
SELECT count(tier), sum(tier), avg(tier), min(email), max(score) FROM customers WHERE tier IS NULL AND email IS NULL AND score IS NULL

-- q: agg.min_max_int ordered
SELECT min(qty), max(qty), min(id), max(id) FROM orders

-- q: agg.min_max_bigint_edges ordered
SELECT min(id), max(id) FROM customers

-- q: agg.min_max_text ordered
SELECT min(name), max(name), min(email), max(email) FROM customers

-- q: agg.min_max_numeric ordered
SELECT min(credit), max(credit), min(balance), max(balance) FROM customers

-- q: agg.min_max_numeric_plain ordered
SELECT min(credit), max(credit) FROM customers WHERE id BETWEEN 1 AND 360

-- q: agg.min_max_float ordered
SELECT min(score), max(score), min(rating), max(rating) FROM customers

-- q: agg.min_max_float_plain ordered
SELECT min(score), max(score) FROM customers WHERE id BETWEEN 1 AND 360

-- q: agg.min_max_date ordered
SELECT min(born), max(born) FROM customers

-- q: agg.min_max_timestamps ordered
SELECT min(signup), max(signup), min(last_seen), max(last_seen) FROM customers

-- q: agg.min_max_interval ordered
SELECT min(session), max(session) FROM customers

-- q: agg.min_max_char ordered
SELECT min(code), max(code), min(nick), max(nick) FROM customers

-- q: agg.min_max_array ordered
SELECT min(tags), max(tags) FROM customers

-- q: agg.min_max_orders ordered
SELECT min(total), max(total), min(placed_at), max(placed_at), min(ship_date), max(ship_date), min(weight), max(weight) FROM orders

-- q: agg.bool_and_or ordered
SELECT bool_and(active), bool_or(active), every(active) FROM customers

-- q: agg.bool_orders ordered
SELECT bool_and(gift), bool_or(gift) FROM orders

-- q: agg.bit_and_or ordered
SELECT bit_and(qty), bit_or(qty) FROM orders

-- q: agg.stddev_variance ordered
SELECT stddev(qty), variance(qty), stddev_pop(total), var_samp(total) FROM orders

-- q: agg.string_agg_ordered ordered
SELECT string_agg(name, ',' ORDER BY name, id) FROM customers WHERE tier = 1

-- q: agg.array_agg_ordered ordered
SELECT array_agg(id ORDER BY id) FROM customers WHERE tier = 5

-- q: agg.json_agg_ordered ordered
SELECT json_agg(code ORDER BY code) FROM countries

-- q: agg.jsonb_agg_scatter ordered
SELECT jsonb_agg(id ORDER BY id) FROM customers WHERE tier = 4 AND active

-- q: agg.count_distinct ordered
SELECT count(DISTINCT status), count(DISTINCT customer_id), count(DISTINCT currency) FROM orders

-- q: agg.sum_distinct ordered
SELECT sum(DISTINCT qty), avg(DISTINCT qty) FROM orders

-- q: agg.filter_clause ordered
SELECT count(*) FILTER (WHERE status = 'paid') AS paid, sum(total) FILTER (WHERE gift) AS gifts FROM orders

-- q: agg.percentile ordered
SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY total), percentile_disc(0.9) WITHIN GROUP (ORDER BY qty) FROM orders

-- q: agg.mode ordered
SELECT mode() WITHIN GROUP (ORDER BY status) FROM orders

-- q: agg.expression_of_aggregates ordered
SELECT max(total) - min(total) AS spread, count(*) + 1 AS n1, round(avg(total), 2) AS avg2, sum(total) / count(*) AS mean
FROM orders

-- q: agg.avg_cast ordered
SELECT avg(total)::numeric(12,2), avg(qty)::float8 FROM orders

-- q: agg.aggregate_with_limit ordered
SELECT count(*) FROM customers LIMIT 1

-- q: agg.items ordered
SELECT count(*), sum(qty), sum(price * qty), avg(price) FROM items

-- q: agg.products ordered
SELECT count(*), count(category), sum(stock), avg(price), min(sku), max(lower(sku)), sum(weight), min(released) FROM products

-- q: agg.reference_table ordered
SELECT count(*), sum(vat), avg(population), min(name), max(region) FROM countries

-- q: agg.join_colocated ordered
SELECT count(*), sum(o.total) FROM customers c JOIN orders o ON o.customer_id = c.id WHERE c.tier = 1

-- ===================================================================
-- GROUP BY and HAVING across shards.
-- ===================================================================

-- q: group.status
SELECT status, count(*), sum(total), avg(total), min(total), max(total) FROM orders GROUP BY status

-- q: group.status_ordered ordered
SELECT status, count(*) AS n FROM orders GROUP BY status ORDER BY status

-- q: group.tier_with_null
SELECT tier, count(*), avg(balance), max(name) FROM customers GROUP BY tier

-- q: group.country
SELECT country, count(*), min(id), max(id) FROM customers GROUP BY country

-- q: group.name_case
SELECT name, count(*) FROM customers GROUP BY name

-- q: group.by_position ordered
SELECT currency, count(*), sum(total) FROM orders GROUP BY 1 ORDER BY 1 NULLS FIRST

-- q: group.two_columns
SELECT status, gift, count(*), sum(qty) FROM orders GROUP BY status, gift

-- q: group.bool
SELECT active, count(*) FROM customers GROUP BY active

-- q: group.expression
SELECT date_trunc('year', placed_at) AS y, count(*), sum(total) FROM orders GROUP BY date_trunc('year', placed_at)

-- q: group.extract ordered
SELECT extract(month FROM placed_at) AS m, count(*) FROM orders GROUP BY 1 ORDER BY 1

-- GROUP BY an output column's alias: Postgres groups by the input column of
-- that name when the FROM list has one, by the output column otherwise.

-- q: group.alias_month ordered
SELECT date_trunc('month', placed_at) AS m, count(*), sum(total) FROM orders GROUP BY m ORDER BY m

-- q: group.alias_lower ordered
SELECT lower(name) AS n, count(*), max(id) FROM customers GROUP BY n ORDER BY n

-- q: group.alias_is_input_column
SELECT lower(name) AS name, count(*), min(id) FROM customers GROUP BY name

-- q: group.alias_is_input_column_ordered keys=1
SELECT upper(status) AS status, count(*), sum(total) FROM orders GROUP BY status ORDER BY status

-- q: group.alias_two
SELECT status AS st, gift AS g, count(*), sum(qty) FROM orders GROUP BY st, g HAVING count(*) > 3

-- q: group.alias_ordinal_expression
SELECT date_trunc('year', placed_at) AS y, currency AS c, count(*) FROM orders GROUP BY y, 2, date_trunc('year', placed_at)

-- q: group.alias_expressions_over_aggregates ordered
SELECT extract(year FROM placed_at) AS yr, round(avg(total), 2), count(DISTINCT customer_id), sum(total) * 2 FROM orders GROUP BY yr ORDER BY yr

-- q: group.alias_colocated_join ordered
SELECT c.tier AS t, count(o.id), sum(o.total) FROM customers c JOIN orders o ON o.customer_id = c.id GROUP BY t ORDER BY t NULLS FIRST

-- q: group.alias_param ordered args=100
SELECT date_trunc('month', placed_at) AS m, count(*) FROM orders WHERE total > $1 GROUP BY m ORDER BY m

-- q: group.alias_limit ordered
SELECT lower(status) AS s, sum(total) AS t FROM orders GROUP BY s ORDER BY t DESC, s LIMIT 3

-- q: group.alias_column ordered
SELECT customer_id AS cid, count(*) FROM orders GROUP BY cid ORDER BY count(*) DESC, cid LIMIT 10

-- q: group.alias_date_having ordered
SELECT ship_date - date '2020-01-01' AS days, count(*) FROM orders GROUP BY days HAVING count(*) > 1 ORDER BY days NULLS FIRST

-- q: group.alias_not_grouped error
SELECT upper(country) AS tier, count(*) FROM customers GROUP BY tier

-- q: group.alias_in_where error
SELECT lower(status) AS s, count(*) FROM orders WHERE s <> '' GROUP BY s

-- q: group.float_key
SELECT rating, count(*) FROM customers WHERE rating < -40 OR rating IS NULL OR rating = 0 GROUP BY rating

-- q: group.numeric_key
SELECT total, count(*) FROM orders WHERE total < 0 GROUP BY total

-- q: group.date_key
SELECT ship_date, count(*) FROM orders WHERE ship_date < '2020-03-01' GROUP BY ship_date

-- q: group.having_count
SELECT customer_id, count(*) FROM orders GROUP BY customer_id HAVING count(*) > 12

-- q: group.having_sum
SELECT status, sum(total) FROM orders GROUP BY status HAVING sum(total) > 1000000

-- q: group.having_not_selected
SELECT country FROM customers GROUP BY country HAVING avg(balance) > 500000

-- q: group.having_avg
SELECT tier, avg(score) FROM customers WHERE id BETWEEN 1 AND 360 GROUP BY tier HAVING avg(score) < 100

-- q: group.order_by_count ordered
SELECT status, count(*) AS n FROM orders GROUP BY status ORDER BY n DESC, status

-- q: group.order_limit ordered
SELECT customer_id, sum(total) AS s FROM orders GROUP BY customer_id ORDER BY s DESC, customer_id LIMIT 5

-- q: group.order_by_aggregate_not_selected ordered
SELECT country FROM customers WHERE country IS NOT NULL GROUP BY country ORDER BY max(id), country

-- q: group.shard_key
SELECT customer_id, count(*), sum(total) FROM orders GROUP BY customer_id

-- q: group.shard_key_items
SELECT customer_id, order_id, count(*), sum(qty) FROM items GROUP BY customer_id, order_id

-- q: group.count_distinct
SELECT status, count(DISTINCT customer_id) FROM orders GROUP BY status

-- q: group.string_agg
SELECT tier, string_agg(name, '|' ORDER BY id) FROM customers WHERE id < 40 GROUP BY tier

-- q: group.rollup
SELECT status, gift, count(*) FROM orders GROUP BY ROLLUP (status, gift)

-- q: group.grouping_sets
SELECT status, currency, count(*) FROM orders GROUP BY GROUPING SETS ((status), (currency), ())

-- q: group.join_reference
SELECT k.region, count(*), sum(c.balance) FROM customers c JOIN countries k ON k.code = c.country GROUP BY k.region

-- q: group.join_colocated
SELECT c.tier, count(o.id), sum(o.total) FROM customers c JOIN orders o ON o.customer_id = c.id GROUP BY c.tier

-- q: group.products_category
SELECT category, count(*), avg(price), sum(stock) FROM products GROUP BY category

-- q: group.products_having ordered
SELECT category, count(*) FROM products GROUP BY category HAVING count(*) > 30 ORDER BY category NULLS FIRST

-- q: group.reference_only ordered
SELECT region, count(*) FROM countries GROUP BY region ORDER BY region NULLS LAST

-- ===================================================================
-- DISTINCT across shards.
-- ===================================================================

-- q: distinct.status
SELECT DISTINCT status FROM orders

-- q: distinct.status_ordered ordered
SELECT DISTINCT status FROM orders ORDER BY status DESC

-- q: distinct.tier_nulls ordered
SELECT DISTINCT tier FROM customers ORDER BY tier NULLS FIRST

-- q: distinct.country
SELECT DISTINCT country FROM customers

-- q: distinct.name_case ordered
SELECT DISTINCT name FROM customers ORDER BY name

-- q: distinct.two_columns
SELECT DISTINCT tier, active FROM customers

-- q: distinct.float
SELECT DISTINCT rating FROM customers

-- q: distinct.numeric
SELECT DISTINCT balance FROM customers WHERE balance < -490000

-- q: distinct.expression
SELECT DISTINCT lower(name) FROM customers

-- q: distinct.limit ordered
SELECT DISTINCT currency FROM orders ORDER BY currency NULLS FIRST LIMIT 3

-- q: distinct.on ordered
SELECT DISTINCT ON (tier) tier, id, name FROM customers ORDER BY tier, id

-- q: distinct.on_desc ordered
SELECT DISTINCT ON (status) status, id, total FROM orders ORDER BY status, total DESC, id

-- q: distinct.shard_key
SELECT DISTINCT customer_id FROM orders

-- q: distinct.items_sku_lower
SELECT DISTINCT lower(sku) FROM items WHERE sku ILIKE 'a%'

-- q: distinct.products_category ordered
SELECT DISTINCT category FROM products ORDER BY category

-- q: distinct.union
SELECT status FROM orders WHERE total < 0
UNION
SELECT status FROM orders WHERE total > 4900

-- ===================================================================
-- Joins: co-located on the shard key, with reference tables, and the
-- ones that cannot run (different keys, different groups).
-- ===================================================================

-- q: join.customers_orders
SELECT c.id, c.name, o.id AS order_id, o.total FROM customers c JOIN orders o ON o.customer_id = c.id WHERE c.tier = 5

-- q: join.customers_orders_pinned ordered
SELECT c.name, o.id, o.status FROM customers c JOIN orders o ON o.customer_id = c.id WHERE c.id = 42 ORDER BY o.id

-- q: join.customers_orders_in_one_cluster ordered
SELECT c.id, o.id, o.total FROM customers c JOIN orders o ON o.customer_id = c.id WHERE c.id IN (1, 3) ORDER BY o.id

-- q: join.orders_items
SELECT o.id, o.status, i.line, i.sku, i.qty FROM orders o JOIN items i ON i.customer_id = o.customer_id AND i.order_id = o.id
WHERE o.status = 'pending'

-- q: join.three_tables
SELECT c.name, o.id, i.line, i.price FROM customers c
JOIN orders o ON o.customer_id = c.id
JOIN items i ON i.customer_id = o.customer_id AND i.order_id = o.id
WHERE c.country = 'de'

-- q: join.implicit_syntax
SELECT c.id, o.id FROM customers c, orders o WHERE o.customer_id = c.id AND o.total > 4950

-- q: join.using
SELECT customer_id, o.id, i.line FROM orders o JOIN items i USING (customer_id) WHERE o.id = i.order_id AND i.qty = 5

-- q: join.left_no_orders
SELECT c.id, c.name FROM customers c LEFT JOIN orders o ON o.customer_id = c.id WHERE o.id IS NULL

-- q: join.left_all
SELECT c.id, o.id, o.total FROM customers c LEFT JOIN orders o ON o.customer_id = c.id AND o.status = 'paid'

-- q: join.right
SELECT c.id, o.id FROM customers c RIGHT JOIN orders o ON o.customer_id = c.id AND c.tier = 2

-- q: join.full
SELECT c.id, o.id FROM customers c FULL JOIN orders o ON o.customer_id = c.id AND o.total > 4000 WHERE c.id > 300 OR c.id IS NULL

-- q: join.lateral
SELECT c.id, last.id AS last_order, last.placed_at FROM customers c,
LATERAL (SELECT o.id, o.placed_at FROM orders o WHERE o.customer_id = c.id ORDER BY o.placed_at DESC, o.id LIMIT 1) last
WHERE c.tier = 4

-- q: join.reference
SELECT c.id, c.country, k.name, k.region FROM customers c JOIN countries k ON k.code = c.country

-- q: join.reference_left
SELECT c.id, c.country, k.name FROM customers c LEFT JOIN countries k ON k.code = c.country WHERE k.code IS NULL

-- q: join.orders_currencies
SELECT o.id, o.total, x.rate, o.total * x.rate AS converted FROM orders o JOIN currencies x ON x.code = o.currency WHERE o.qty = 1

-- q: join.colocated_and_reference
SELECT c.id, k.region, o.total FROM customers c JOIN orders o ON o.customer_id = c.id
JOIN countries k ON k.code = c.country WHERE o.status = 'cancelled' AND k.region = 'Asia'

-- q: join.reference_pinned ordered
SELECT c.id, k.name FROM customers c JOIN countries k ON k.code = c.country WHERE c.id = 9

-- q: join.reference_only ordered
SELECT k.code, x.code FROM countries k CROSS JOIN currencies x WHERE k.code < 'c' ORDER BY 1, 2

-- q: join.ordered_limit ordered
SELECT c.id, o.id, o.total FROM customers c JOIN orders o ON o.customer_id = c.id ORDER BY o.total DESC, o.id LIMIT 10

-- q: join.ordered ordered
SELECT c.name, o.id FROM customers c JOIN orders o ON o.customer_id = c.id WHERE o.qty = 20 ORDER BY c.name, o.id

-- q: join.not_on_key
SELECT c.id, o.id FROM customers c JOIN orders o ON o.id = c.id WHERE c.id < 10

-- q: join.self_not_on_key
SELECT a.id, b.id FROM orders a JOIN orders b ON a.id = b.id + 1 WHERE a.id < 20

-- q: join.self_on_key
SELECT a.id, b.id FROM orders a JOIN orders b ON a.customer_id = b.customer_id AND b.id = a.id + 1

-- q: join.cross_group
SELECT i.order_id, i.line, p.name FROM items i JOIN products p ON lower(p.sku) = lower(i.sku) WHERE i.customer_id = 7

-- q: join.cross_group_scatter
SELECT count(*) FROM items i JOIN products p ON lower(p.sku) = lower(i.sku)

-- q: join.with_main_table
SELECT c.id, s.v FROM customers c JOIN settings s ON s.k = 'key_0' || (c.id % 10) WHERE c.id = 7

-- q: join.catalog_self ordered
SELECT a.sku, b.sku FROM products a JOIN products b ON lower(a.sku) = lower(b.sku) WHERE a.sku = 'Lyr-00001'

-- ===================================================================
-- Subqueries and CTEs.
-- ===================================================================

-- q: sub.in_colocated
SELECT id, customer_id, total FROM orders WHERE customer_id IN (SELECT id FROM customers WHERE tier = 5)

-- q: sub.exists_correlated
SELECT c.id, c.name FROM customers c WHERE EXISTS (SELECT 1 FROM orders o WHERE o.customer_id = c.id AND o.status = 'cancelled' AND o.total < 0)

-- q: sub.not_exists
SELECT c.id FROM customers c WHERE NOT EXISTS (SELECT 1 FROM orders o WHERE o.customer_id = c.id)

-- q: sub.scalar_correlated
SELECT c.id, (SELECT count(*) FROM orders o WHERE o.customer_id = c.id) AS n,
       (SELECT max(o.total) FROM orders o WHERE o.customer_id = c.id) AS biggest
FROM customers c WHERE c.tier = 3

-- q: sub.scalar_uncorrelated
SELECT id, total FROM orders WHERE total > (SELECT avg(total) * 1.9 FROM orders)

-- q: sub.scalar_uncorrelated_pinned ordered
SELECT id, total FROM orders WHERE customer_id = 7 AND total > (SELECT avg(total) FROM orders WHERE customer_id = 7) ORDER BY id

-- q: sub.in_uncorrelated_other_key
SELECT id, name FROM customers WHERE id IN (SELECT customer_id FROM orders WHERE total > 4980)

-- q: sub.from_grouped_by_key
SELECT customer_id, s FROM (SELECT customer_id, sum(total) AS s FROM orders GROUP BY customer_id) t WHERE s > 25000

-- q: sub.from_scatter
SELECT t.id FROM (SELECT id, total FROM orders WHERE status = 'paid') t WHERE t.total < 0

-- q: sub.from_aggregate ordered
SELECT max(n) FROM (SELECT customer_id, count(*) AS n FROM orders GROUP BY customer_id) t

-- q: sub.reference_in
SELECT id, country FROM customers WHERE country IN (SELECT code FROM countries WHERE region = 'Europe')

-- q: sub.reference_scalar
SELECT id, balance FROM customers WHERE tier = 1 AND country = (SELECT code FROM countries WHERE name = 'Deland')

-- q: sub.main_table
SELECT id FROM customers WHERE name IN (SELECT v FROM settings)

-- q: sub.any_subquery
SELECT id, total FROM orders WHERE customer_id = 42 AND total > ALL (SELECT total FROM orders WHERE customer_id = 42 AND status = 'paid')

-- q: sub.products_scalar ordered
SELECT sku, price, (SELECT count(*) FROM products p2 WHERE lower(p2.sku) = lower(p.sku)) AS same FROM products p WHERE p.sku = 'kBl-00005'

-- q: cte.pinned ordered
WITH mine AS (SELECT id, total FROM orders WHERE customer_id = 7)
SELECT count(*), sum(total) FROM mine

-- q: cte.scatter_plain
WITH big AS (SELECT id, customer_id, total FROM orders WHERE total > 4900)
SELECT id, customer_id FROM big

-- q: cte.scatter_aggregate ordered
WITH big AS (SELECT id, total FROM orders WHERE total > 4000)
SELECT count(*), sum(total) FROM big

-- q: cte.colocated_join
WITH paid AS (SELECT customer_id, count(*) AS n FROM orders WHERE status = 'paid' GROUP BY customer_id)
SELECT c.id, c.name, p.n FROM customers c JOIN paid p ON p.customer_id = c.id WHERE p.n >= 4

-- q: cte.two_ctes ordered
WITH a AS (SELECT id FROM customers WHERE id = 3), b AS (SELECT customer_id, total FROM orders WHERE customer_id = 3)
SELECT a.id, sum(b.total) FROM a JOIN b ON b.customer_id = a.id GROUP BY a.id

-- q: cte.ordered_limit ordered
WITH recent AS (SELECT id, placed_at FROM orders WHERE placed_at > '2024-06-01')
SELECT id, placed_at FROM recent ORDER BY placed_at, id LIMIT 5

-- q: cte.recursive ordered
WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 10) SELECT n, n * n AS sq FROM r ORDER BY n

-- q: cte.recursive_reference ordered
WITH RECURSIVE r(code, depth) AS (SELECT min(code), 1 FROM countries
  UNION ALL SELECT (SELECT min(code) FROM countries WHERE code > r.code), depth + 1 FROM r WHERE depth < 5)
SELECT code, depth FROM r ORDER BY depth

-- q: cte.recursive_sharded_seed_pinned ordered
WITH RECURSIVE r(n) AS (SELECT count(*) FROM orders WHERE customer_id = 42 UNION ALL SELECT n - 1 FROM r WHERE n > 0) SELECT n FROM r ORDER BY n

-- q: cte.recursive_sharded_seed_scatter ordered
WITH RECURSIVE r(n) AS (SELECT max(qty) FROM items UNION ALL SELECT n - 1 FROM r WHERE n > 0) SELECT count(*) AS c, sum(n) AS s FROM r

-- q: cte.recursive_reference_joined_sharded
WITH RECURSIVE r(code, depth) AS (SELECT min(code), 1 FROM countries
  UNION ALL SELECT (SELECT min(code) FROM countries WHERE code > r.code), depth + 1 FROM r WHERE depth < 5)
SELECT r.code, r.depth, count(c.id) AS n FROM r LEFT JOIN customers c ON c.country = r.code GROUP BY r.code, r.depth

-- q: cte.recursive_reference_in_pinned ordered
WITH RECURSIVE r(code, depth) AS (SELECT min(code), 1 FROM countries
  UNION ALL SELECT (SELECT min(code) FROM countries WHERE code > r.code), depth + 1 FROM r WHERE depth < 5)
SELECT id, country FROM customers WHERE id = 42 AND country IN (SELECT code FROM r)

-- q: cte.recursive_over_sharded ordered
WITH RECURSIVE r(id, depth) AS (SELECT min(id), 1 FROM customers WHERE id > 0
  UNION ALL SELECT (SELECT min(c.id) FROM customers c WHERE c.id > r.id), depth + 1 FROM r WHERE depth < 6)
SELECT id, depth FROM r ORDER BY depth

-- q: cte.recursive_join_sharded_pinned ordered
WITH RECURSIVE r(id, n) AS (SELECT min(id), 1 FROM orders WHERE customer_id = 42
  UNION ALL SELECT o.id, r.n + 1 FROM orders o JOIN r ON o.customer_id = 42 AND o.id = (SELECT min(id) FROM orders WHERE customer_id = 42 AND id > r.id) WHERE r.n < 4)
SELECT id, n FROM r ORDER BY n

-- q: cte.recursive_join_sharded_scatter ordered
WITH RECURSIVE r(id, n) AS (SELECT min(id), 1 FROM customers WHERE id > 0
  UNION ALL SELECT c.id, r.n + 1 FROM customers c JOIN r ON c.id = r.id + 1 WHERE r.n < 4)
SELECT id, n FROM r ORDER BY n

-- q: cte.recursive_sharded_outer_join ordered
WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < 5)
SELECT g.n, count(o.id) AS c FROM g LEFT JOIN orders o ON o.customer_id = g.n GROUP BY g.n ORDER BY g.n

-- q: cte.recursive_in_pinned_read ordered
WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < 5)
SELECT id, customer_id FROM orders WHERE customer_id = 42 AND id % 5 IN (SELECT n FROM g) ORDER BY id

-- q: cte.materialized ordered
WITH m AS MATERIALIZED (SELECT id, name FROM customers WHERE id = 100) SELECT * FROM m

-- q: setop.union_all_pinned ordered
SELECT id, name FROM customers WHERE id = 1 UNION ALL SELECT id, name FROM customers WHERE id = 2 ORDER BY 1

-- q: setop.union_all_scatter
SELECT customer_id FROM orders WHERE total > 4990 UNION ALL SELECT id FROM customers WHERE tier = 5

-- q: setop.intersect
SELECT customer_id FROM orders WHERE status = 'paid' INTERSECT SELECT id FROM customers WHERE tier = 2

-- q: setop.except
SELECT id FROM customers EXCEPT SELECT customer_id FROM orders

-- q: setop.union_reference ordered
SELECT code FROM countries WHERE region = 'Asia' UNION SELECT code FROM countries WHERE vat > 20 ORDER BY code

-- q: window.pinned ordered
SELECT id, total, row_number() OVER (ORDER BY total DESC, id) AS rn, sum(total) OVER () AS all_total
FROM orders WHERE customer_id = 42 ORDER BY id

-- q: window.partition_by_key
SELECT customer_id, id, rank() OVER (PARTITION BY customer_id ORDER BY total DESC, id) FROM orders WHERE total > 4500

-- q: window.scatter
SELECT id, row_number() OVER (ORDER BY id) FROM customers WHERE tier = 1

-- q: window.scatter_aggregate
SELECT id, count(*) OVER () FROM customers WHERE tier = 2

-- ===================================================================
-- Bound parameters: the extended protocol sends them (integers in binary
-- format), the simple protocol has pgx write them into the text. The
-- proxy must route on, and limit by, values it only sees at Bind.
-- ===================================================================

-- q: param.point ordered args=7
SELECT id, name, score FROM customers WHERE id = $1

-- q: param.point_negative ordered args=-42
SELECT id, score, credit FROM customers WHERE id = $1

-- q: param.point_max ordered args=9223372036854775807
SELECT id, name FROM customers WHERE id = $1

-- q: param.point_null args=NULL
SELECT id FROM customers WHERE id = $1

-- q: param.point_missing args=424242
SELECT id FROM customers WHERE id = $1

-- q: param.text_key ordered args=Lyr-00001
SELECT sku, name, price FROM products WHERE sku = $1

-- q: param.lower_text_key ordered args=MBZ-00002
SELECT sku, name FROM products WHERE lower(sku) = lower($1)

-- q: param.in_one_cluster args=1,3
SELECT id, name FROM customers WHERE id IN ($1, $2)

-- q: param.in_two_clusters args=1,2,3,9
SELECT id, name FROM customers WHERE id IN ($1, $2, $3, $4)

-- q: param.in_ordered ordered args=1,2,3,9
SELECT id, name FROM customers WHERE id IN ($1, $2, $3, $4) ORDER BY name, id

-- q: param.key_and_filter args=100,paid
SELECT id, status, total FROM orders WHERE customer_id = $1 AND status <> $2

-- q: param.scatter_filter args=2
SELECT id, name FROM customers WHERE tier = $1

-- q: param.scatter_text_filter args=cancelled
SELECT id, customer_id, total FROM orders WHERE status = $1 AND total < 0

-- q: param.scatter_timestamp args=2024-06-01
SELECT id, placed_at FROM orders WHERE placed_at >= $1

-- q: param.scatter_numeric args=4990.50
SELECT id, total FROM orders WHERE total > $1

-- q: param.pinned_limit ordered args=42,3
SELECT id, total FROM orders WHERE customer_id = $1 ORDER BY total DESC, id LIMIT $2

-- q: param.limit ordered args=5
SELECT id, name FROM customers ORDER BY id LIMIT $1

-- q: param.limit_offset ordered args=5,10
SELECT id, total FROM orders ORDER BY total, id LIMIT $1 OFFSET $2

-- q: param.aggregate_pinned ordered args=3
SELECT count(*), sum(total), max(placed_at) FROM orders WHERE customer_id = $1

-- q: param.aggregate_scatter ordered args=paid
SELECT count(*), sum(total), avg(qty) FROM orders WHERE status = $1

-- q: param.group_having args=470
SELECT status, count(*) FROM orders GROUP BY status HAVING count(*) > $1

-- q: param.join_pinned ordered args=9
SELECT c.name, o.id, k.name AS country FROM customers c JOIN orders o ON o.customer_id = c.id
LEFT JOIN countries k ON k.code = c.country WHERE c.id = $1 ORDER BY o.id

-- q: param.cte_pinned ordered args=7
WITH mine AS (SELECT id, total FROM orders WHERE customer_id = $1) SELECT count(*), sum(total) FROM mine

-- q: param.insert write args=8001,param_one,2
INSERT INTO customers (id, name, tier) VALUES ($1, $2, $3) RETURNING *

-- q: param.insert_many write args=8002,a,8003,b,8004,c,8005,d
INSERT INTO customers (id, name) VALUES ($1, $2), ($3, $4), ($5, $6), ($7, $8) RETURNING id, name

-- q: param.update write args=x,8002
UPDATE customers SET nick = $1 WHERE id = $2 RETURNING id, nick

-- q: param.update_scatter write args=8000,8100
UPDATE customers SET tier = 9 WHERE id BETWEEN $1 AND $2 RETURNING id, tier

-- q: param.delete write args=8003
DELETE FROM customers WHERE id = $1 RETURNING id, name

-- q: param.insert_product write args=PaRaM-1,param_product
INSERT INTO products (sku, name) VALUES ($1, $2) RETURNING sku, name, discontinued

-- q: param.after
SELECT id, name, nick, tier FROM customers WHERE id BETWEEN 8000 AND 8100

-- q: param.after_product ordered args=param-1
SELECT sku, name FROM products WHERE lower(sku) = $1

-- q: param.key_equals_null_literal
SELECT id FROM customers WHERE id = NULL

-- q: param.key_in_only_null
SELECT id FROM customers WHERE id IN (NULL)

-- q: param.key_is_null
SELECT id FROM customers WHERE id IS NULL

-- q: param.sku_null args=NULL
SELECT sku FROM products WHERE sku = $1

-- ===================================================================
-- The events table, filled by COPY before these queries (copy_test.go).
-- ===================================================================

-- q: copied.all
SELECT * FROM events

-- q: copied.pinned ordered
SELECT * FROM events WHERE customer_id = 7 ORDER BY seq

-- q: copied.special_text
SELECT customer_id, seq, kind FROM events WHERE kind LIKE '%\\%' OR kind LIKE '%,%' OR kind LIKE '%' || chr(9) || '%' OR kind LIKE '%' || chr(10) || '%' OR kind = ''

-- q: copied.null_payload
SELECT customer_id, seq FROM events WHERE payload IS NULL

-- q: copied.count ordered
SELECT count(*), sum(amount), min(at), max(at) FROM events

-- q: copied.failed_copies_left_nothing
SELECT customer_id FROM events WHERE customer_id BETWEEN 500 AND 520

-- ===================================================================
-- Reference tables, the main group, table-less statements.
-- ===================================================================

-- q: ref.countries ordered
SELECT * FROM countries ORDER BY code

-- q: ref.currencies ordered
SELECT * FROM currencies ORDER BY code DESC

-- q: ref.countries_filter
SELECT code, vat FROM countries WHERE vat > 10 OR region IS NULL

-- q: ref.countries_limit ordered
SELECT code, population FROM countries ORDER BY population DESC LIMIT 3 OFFSET 1

-- q: ref.distinct_region ordered
SELECT DISTINCT region FROM countries ORDER BY region NULLS FIRST

-- q: main.settings ordered
SELECT * FROM settings ORDER BY k

-- q: main.settings_aggregate ordered
SELECT count(*), count(v), min(v), max(k) FROM settings

-- q: main.settings_group
SELECT v, count(*) FROM settings GROUP BY v

-- q: main.audit_empty ordered
SELECT * FROM audit ORDER BY id

-- q: tableless.constants ordered
SELECT 1 AS one, 'two' AS two, 3.50 AS three, NULL AS nothing, true AS yes

-- q: tableless.floats ordered
SELECT 'NaN'::float8 AS nan, '-0'::float8 AS neg_zero, 'Infinity'::float8 AS inf, 1e300::float8 AS big,
       0.1::float8 + 0.2::float8 AS sum, 1::float4 / 3 AS third4, 1::float8 / 3 AS third8

-- q: tableless.numerics ordered
SELECT 1.50::numeric AS a, 'NaN'::numeric AS b, '-Infinity'::numeric AS c, 10::numeric / 3 AS d, 2::numeric ^ 100 AS e

-- q: tableless.types ordered
SELECT '2024-02-29'::date AS d, '2024-02-29 12:34:56.789012'::timestamp AS ts, '2024-02-29 12:34:56.789012+05:30'::timestamptz AS tstz,
       '1 day 2 hours'::interval AS i, 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid AS u, '\xdeadbeef'::bytea AS b,
       '{"b": 1, "a": [1, 2.50]}'::jsonb AS j, ARRAY[1, NULL, 3] AS arr, 'x'::char(3) AS c, B'101' AS bits

-- q: tableless.values ordered
SELECT * FROM (VALUES (1, 'a'), (2, NULL), (3, 'c')) v(x, y) ORDER BY x

-- q: tableless.generate_series ordered
SELECT g, g * 1.5 AS h FROM generate_series(1, 5) g

-- q: tableless.current_setting ordered
SELECT current_setting('TimeZone') AS tz, current_setting('DateStyle') AS ds, current_setting('standard_conforming_strings') AS scs

-- q: catalog.pg_class ordered
SELECT relname, relkind FROM pg_class WHERE relname IN ('settings', 'audit', 'orders_id_seq', 'ticket_seq') ORDER BY relname

-- q: catalog.information_schema ordered
SELECT column_name, data_type, numeric_precision, numeric_scale FROM information_schema.columns
WHERE table_name = 'orders' ORDER BY ordinal_position

-- ===================================================================
-- FROM-less SELECTs over sharded subqueries (issue 19): a statement
-- whose own rows come from no sharded table (no FROM, reference or main
-- tables only, a sharded table only on the nullable side of an outer
-- join, a constant UNION ALL branch) answers once, as one Postgres does:
-- on the one shard its subqueries are pinned to, else over intermediate
-- results. Customers 42 and 7 live on pg0, 9 and 100 on pg1.
-- ===================================================================

-- q: fromless.exists_pinned ordered
SELECT EXISTS (SELECT 1 FROM orders WHERE customer_id = 42) AS e

-- q: fromless.exists_pinned_other_cluster ordered
SELECT EXISTS (SELECT 1 FROM orders WHERE customer_id = 9) AS e

-- q: fromless.exists_missing_key ordered
SELECT EXISTS (SELECT 1 FROM orders WHERE customer_id = 123456789) AS e

-- q: fromless.not_exists_pinned ordered
SELECT NOT EXISTS (SELECT 1 FROM orders WHERE customer_id = 100) AS ne

-- q: fromless.exists_param ordered args=42
SELECT EXISTS (SELECT 1 FROM orders WHERE customer_id = $1) AS e

-- q: fromless.exists_scatter ordered
SELECT EXISTS (SELECT 1 FROM orders WHERE total > 100) AS e

-- q: fromless.exists_nowhere ordered
SELECT EXISTS (SELECT 1 FROM orders WHERE total < 0 AND total > 0) AS e

-- q: fromless.array_ordered ordered
SELECT ARRAY(SELECT id FROM customers WHERE id < 5 ORDER BY id) AS ids

-- q: fromless.array_pinned ordered
SELECT ARRAY(SELECT id FROM orders WHERE customer_id = 7 ORDER BY id) AS ids

-- q: fromless.where_exists ordered
SELECT 1 AS one WHERE EXISTS (SELECT 1 FROM orders)

-- q: fromless.where_not_exists ordered
SELECT 1 AS one WHERE NOT EXISTS (SELECT 1 FROM orders WHERE total > 1000000000)

-- q: fromless.where_scalar ordered
SELECT 'big' AS what WHERE (SELECT max(total) FROM orders) > 10

-- q: fromless.count ordered
SELECT (SELECT count(*) FROM orders) AS n

-- q: fromless.count_pinned ordered
SELECT (SELECT count(*) FROM orders WHERE customer_id = 42) AS n

-- q: fromless.arith ordered
SELECT 1 + (SELECT max(id) FROM orders) AS m

-- q: fromless.two_subqueries ordered
SELECT (SELECT count(*) FROM customers) AS c, (SELECT count(*) FROM items) AS i

-- q: fromless.two_pinned_same_key ordered
SELECT (SELECT count(*) FROM orders WHERE customer_id = 42) AS o, (SELECT count(*) FROM items WHERE customer_id = 42) AS i

-- q: fromless.two_pinned_other_keys ordered
SELECT (SELECT count(*) FROM orders WHERE customer_id = 42) AS a, (SELECT count(*) FROM orders WHERE customer_id = 9) AS b

-- q: fromless.values ordered
VALUES ((SELECT max(id) FROM orders))

-- q: fromless.values_pinned ordered
VALUES ((SELECT min(id) FROM orders WHERE customer_id = 9), 'x')

-- q: fromless.case_when ordered
SELECT CASE WHEN EXISTS (SELECT 1 FROM orders WHERE status = 'cancelled') THEN 'some' ELSE 'none' END AS c

-- q: fromless.case_when_pinned ordered
SELECT CASE WHEN EXISTS (SELECT 1 FROM orders WHERE customer_id = 2 AND total > 50) THEN 'some' ELSE 'none' END AS c

-- q: fromless.in_subquery ordered
SELECT 42 IN (SELECT customer_id FROM orders) AS has, -5 IN (SELECT customer_id FROM orders) AS hasnt

-- q: fromless.having ordered
SELECT 1 AS one HAVING EXISTS (SELECT 1 FROM items WHERE qty > 3)

-- q: fromless.correlated_pinned ordered
SELECT EXISTS (SELECT 1 FROM orders o WHERE o.customer_id = 42 AND EXISTS (SELECT 1 FROM items i WHERE i.customer_id = o.customer_id AND i.order_id = o.id)) AS e

-- q: fromless.correlated_outer_not_confined ordered
SELECT ARRAY(SELECT o.id FROM orders o WHERE o.total > 900 AND NOT EXISTS (SELECT 1 FROM items i WHERE i.customer_id = o.customer_id AND i.customer_id = 42) ORDER BY o.id) AS ids

-- q: fromless.join_pinned ordered
SELECT (SELECT count(*) FROM orders o JOIN items i ON i.customer_id = o.customer_id AND i.order_id = o.id WHERE o.customer_id = 9) AS n

-- q: fromless.reference_where_exists
SELECT code FROM countries WHERE EXISTS (SELECT 1 FROM orders WHERE customer_id = 42)

-- q: fromless.reference_where_exists_scatter
SELECT code FROM countries WHERE EXISTS (SELECT 1 FROM customers WHERE country = countries.code)

-- q: fromless.reference_in_subquery
SELECT code FROM countries WHERE code IN (SELECT country FROM customers WHERE tier = 3)

-- q: fromless.reference_scalar
SELECT code, (SELECT count(*) FROM customers c WHERE c.country = countries.code) AS n FROM countries

-- q: fromless.main_where_exists
SELECT k FROM settings WHERE EXISTS (SELECT FROM orders WHERE customer_id = 7)

-- q: fromless.reference_left_join_sharded
SELECT c.code, o.id FROM countries c LEFT JOIN orders o ON o.customer_id = 42 AND o.currency = c.code

-- q: fromless.reference_left_join_pinned_where
SELECT c.code, o.id FROM countries c LEFT JOIN orders o ON o.status <> c.code WHERE o.customer_id = 42

-- q: fromless.union_all_constant
SELECT 0::bigint AS id UNION ALL SELECT id FROM customers WHERE tier = 1

-- q: fromless.union_constant
SELECT 0::bigint AS id UNION SELECT customer_id FROM orders WHERE total > 500

-- q: fromless.derived ordered
SELECT * FROM (SELECT EXISTS (SELECT 1 FROM orders WHERE customer_id = 3) AS e) s

-- q: fromless.derived_scatter ordered
SELECT * FROM (SELECT (SELECT sum(qty) FROM items) AS q) s

-- q: fromless.cte ordered
WITH t AS (SELECT max(total) AS m FROM orders) SELECT (SELECT m FROM t) AS m

-- q: fromless.generate_series_scalar ordered
SELECT g FROM generate_series(1, 5) g WHERE g <= (SELECT count(*) FROM orders WHERE customer_id = 42)

-- q: fromless.pullout_no_row ordered
SELECT 1 AS one WHERE 5 = (SELECT max(id) FROM orders WHERE customer_id = 123456789)

-- q: fromless.pullout_main_table
SELECT k FROM settings WHERE k IN (SELECT 'key_' || lpad(tier::text, 2, '0') FROM customers WHERE tier < 3)

-- q: fromless.pullout_reference_scalar
SELECT code FROM countries WHERE code = (SELECT max(c.country) FROM customers c JOIN countries k ON k.code = c.country)

-- q: fromless.exists_equal_any ordered
SELECT EXISTS (SELECT 1 FROM customers WHERE id = ANY ('{1,2}')) AS e

-- Issue 19 leftovers: more FROM-less and target-list shapes, each
-- pushed down whole when its subqueries name one shard.

-- q: fromless.case_nested_exists ordered
SELECT CASE WHEN EXISTS (SELECT 1 FROM orders WHERE customer_id = 42) THEN CASE WHEN NOT EXISTS (SELECT 1 FROM items WHERE customer_id = 42 AND qty > 100) THEN 'a' ELSE 'b' END ELSE 'c' END AS c

-- q: fromless.case_nested_exists_scatter ordered
SELECT CASE WHEN EXISTS (SELECT 1 FROM orders WHERE total > 10) THEN CASE WHEN NOT EXISTS (SELECT 1 FROM items WHERE qty > 100) THEN 'a' ELSE 'b' END ELSE 'c' END AS c

-- q: fromless.sum_of_counts ordered
SELECT (SELECT count(*) FROM orders) + (SELECT count(*) FROM items) AS n

-- q: fromless.sum_of_counts_pinned ordered
SELECT (SELECT count(*) FROM orders WHERE customer_id = 9) + (SELECT count(*) FROM items WHERE customer_id = 9) AS n

-- q: fromless.where_in ordered
SELECT 1 AS one WHERE 5 IN (SELECT customer_id FROM orders)

-- q: fromless.where_in_found ordered
SELECT 1 AS one WHERE 42 IN (SELECT customer_id FROM orders)

-- q: fromless.where_in_pinned ordered
SELECT 1 AS one WHERE 42 IN (SELECT customer_id FROM orders WHERE customer_id = 42)

-- q: fromless.scalar_order_limit ordered
SELECT (SELECT id FROM orders ORDER BY total DESC, id LIMIT 1) AS top

-- q: fromless.scalar_order_limit_offset_pinned ordered
SELECT (SELECT id FROM orders WHERE customer_id = 9 ORDER BY id DESC LIMIT 1 OFFSET 1) AS second

-- q: fromless.array_order_limit ordered
SELECT ARRAY(SELECT id FROM customers ORDER BY id DESC LIMIT 3) AS ids

-- q: fromless.exists_and_not_exists ordered
SELECT EXISTS (SELECT 1 FROM orders WHERE customer_id = 42) AND NOT EXISTS (SELECT 1 FROM orders WHERE customer_id = 123456789) AS e

-- q: fromless.exists_and_not_exists_scatter ordered
SELECT EXISTS (SELECT 1 FROM orders WHERE total > 10) AND NOT EXISTS (SELECT 1 FROM items WHERE qty < 0) AS e

-- q: fromless.scalar_param ordered args=9
SELECT (SELECT count(*) FROM orders WHERE customer_id = $1) AS n

-- q: fromless.in_param ordered args=42
SELECT $1::bigint IN (SELECT customer_id FROM orders) AS has

-- q: fromless.exists_two_params ordered args=42,9
SELECT EXISTS (SELECT 1 FROM orders WHERE customer_id = $1) AND EXISTS (SELECT 1 FROM orders WHERE customer_id = $2) AS both

-- q: fromless.array_param ordered args=100
SELECT ARRAY(SELECT id FROM orders WHERE customer_id = $1 ORDER BY id) AS ids

-- q: fromless.case_param ordered args=7
SELECT CASE WHEN EXISTS (SELECT 1 FROM items WHERE customer_id = $1) THEN (SELECT count(*) FROM items WHERE customer_id = $1) ELSE -1 END AS n

-- q: fromless.where_in_param ordered args=100
SELECT 1 AS one WHERE $1::bigint IN (SELECT customer_id FROM orders WHERE total > 10)

-- q: fromless.target_list_reference
SELECT code, (SELECT count(*) FROM orders WHERE customer_id = 42) AS n FROM countries

-- q: fromless.target_list_pinned_same_shard ordered
SELECT id, (SELECT count(*) FROM items WHERE customer_id = 42) AS n FROM customers WHERE id = 42

-- q: fromless.target_list_pinned_other_shard ordered
SELECT id, EXISTS (SELECT 1 FROM orders WHERE customer_id = 9) AS e FROM customers WHERE id = 42

-- q: fromless.target_list_scatter_subquery
SELECT id, (SELECT max(total) FROM orders) AS m FROM customers WHERE tier = 3

-- q: fromless.unaliased_sum ordered
SELECT (SELECT count(*) FROM orders) + (SELECT count(*) FROM items)

-- q: fromless.unaliased_exists_two_shards ordered
SELECT EXISTS (SELECT 1 FROM orders WHERE customer_id = 42), EXISTS (SELECT 1 FROM orders WHERE customer_id = 9), NOT EXISTS (SELECT 1 FROM items WHERE customer_id = 100)

-- q: fromless.unaliased_array_and_count ordered
SELECT ARRAY(SELECT id FROM orders WHERE customer_id = 42 ORDER BY id), (SELECT count(*) FROM orders WHERE customer_id = 9)

-- q: fromless.cast_of_subquery ordered
SELECT (SELECT count(*) FROM orders WHERE customer_id = 42)::int, (SELECT count(*) FROM orders WHERE customer_id = 9)::int

-- q: fromless.case_two_shards ordered
SELECT CASE WHEN EXISTS (SELECT 1 FROM orders WHERE customer_id = 42) THEN (SELECT max(total) FROM orders WHERE customer_id = 9) END

-- Subqueries Postgres never reaches (a CASE branch not taken, AND and
-- COALESCE after their first argument decided) must not be run first:
-- each would fail (22012, 21000) where Postgres answers.

-- q: fromless.case_untaken_branch_fails ordered
SELECT CASE WHEN (SELECT count(*) FROM orders WHERE customer_id = 42) < 0 THEN (SELECT max(1 / (total - total)) FROM orders WHERE customer_id = 9) ELSE 0 END AS x

-- q: fromless.and_short_circuit ordered
SELECT (SELECT count(*) FROM orders WHERE customer_id = 42) < 0 AND (SELECT id FROM orders) > 0 AS x

-- q: fromless.coalesce_second_unreached ordered
SELECT COALESCE((SELECT count(*) FROM orders WHERE customer_id = 42), (SELECT id FROM orders)) AS x

-- A key condition outside a derived table with a LIMIT or a window
-- function restricts rows computed from every shard: it does not pin.

-- q: fromless.derived_limit_outer_pin_42
SELECT * FROM (SELECT customer_id, id, total FROM orders WHERE customer_id IN (42, 9) ORDER BY total DESC, id LIMIT 1) s WHERE s.customer_id = 42

-- q: fromless.derived_limit_outer_pin_9
SELECT * FROM (SELECT customer_id, id, total FROM orders WHERE customer_id IN (42, 9) ORDER BY total DESC, id LIMIT 1) s WHERE s.customer_id = 9

-- q: fromless.derived_window_outer_pin_42
SELECT * FROM (SELECT customer_id, id, rank() OVER (ORDER BY total DESC, id) AS r FROM orders WHERE customer_id IN (42, 9)) s WHERE s.customer_id = 42

-- q: fromless.derived_window_outer_pin_9
SELECT * FROM (SELECT customer_id, id, rank() OVER (ORDER BY total DESC, id) AS r FROM orders WHERE customer_id IN (42, 9)) s WHERE s.customer_id = 9

-- FROM-less statements whose subqueries are pinned by parameters to keys
-- of different clusters (issue 19): each subquery's key condition goes
-- into its pull, which reads only that key's rows on its cluster.

-- q: fromless.params_exists_two_clusters ordered args=42,100
SELECT EXISTS (SELECT 1 FROM orders WHERE customer_id = $1) AND EXISTS (SELECT 1 FROM items WHERE customer_id = $2) AS both

-- q: fromless.params_exists_one_missing ordered args=42,123456789
SELECT EXISTS (SELECT 1 FROM orders WHERE customer_id = $1) AS a, EXISTS (SELECT 1 FROM orders WHERE customer_id = $2) AS b

-- q: fromless.params_counts ordered args=3,2,9
SELECT (SELECT count(*) FROM orders WHERE customer_id = $1) + (SELECT count(*) FROM orders WHERE customer_id IN ($2, $3)) AS n

-- q: fromless.params_sums_filtered ordered args=9,paid,100
SELECT (SELECT sum(total) FROM orders WHERE customer_id = $1 AND status = $2) AS s9, (SELECT max(qty) FROM items WHERE customer_id = $3 AND qty > 0) AS q100

-- q: fromless.params_arrays ordered args=42,9
SELECT ARRAY(SELECT id FROM orders WHERE customer_id = $1 ORDER BY id) AS a, ARRAY(SELECT id FROM orders WHERE customer_id = $2 ORDER BY id DESC) AS b

-- q: fromless.params_where_exists ordered args=2,7
SELECT 1 AS one WHERE EXISTS (SELECT 1 FROM customers WHERE id = $1) AND NOT EXISTS (SELECT 1 FROM customers WHERE id = $2 AND tier < 0)

-- q: fromless.params_any_array ordered args={1;2;3;9},42
SELECT (SELECT count(*) FROM orders WHERE customer_id = ANY($1::bigint[])) AS n, (SELECT min(id) FROM orders WHERE customer_id = $2) AS m

-- q: fromless.params_values ordered args=9,100
VALUES ((SELECT count(*) FROM items WHERE customer_id = $1), (SELECT count(*) FROM items WHERE customer_id = $2))

-- q: fromless.params_case ordered args=7,2
SELECT CASE WHEN (SELECT count(*) FROM orders WHERE customer_id = $1) > 0 THEN (SELECT max(total) FROM orders WHERE customer_id = $2) ELSE 0 END AS x

-- q: fromless.params_product_by_sku ordered args=Lyr-00001,9
SELECT (SELECT count(*) FROM products WHERE sku = $1) AS p, (SELECT count(*) FROM orders WHERE customer_id = $2) AS o

-- q: fromless.params_lower_expression ordered args=mbz-00002,42
SELECT (SELECT count(*) FROM products WHERE lower(sku) = $1) AS p, (SELECT count(*) FROM items WHERE customer_id = $2) AS i

-- q: fromless.params_nested ordered args=42,9
SELECT (SELECT count(*) FROM orders WHERE customer_id = $1 AND id IN (SELECT order_id FROM items WHERE customer_id = $1)) AS a, (SELECT count(*) FROM orders WHERE customer_id = $2) AS b

-- q: fromless.params_unknown_column error args=42,9
SELECT (SELECT count(*) FROM orders WHERE customer_id = $1 AND no_such_column = 1) AS a, (SELECT count(*) FROM orders WHERE customer_id = $2) AS b

-- q: fromless.params_null ordered args=NULL,9
SELECT (SELECT count(*) FROM orders WHERE customer_id = $1) AS a, (SELECT count(*) FROM orders WHERE customer_id = $2) AS b

-- q: fromless.literals_two_clusters_where ordered
SELECT 1 AS one WHERE (SELECT count(*) FROM orders WHERE customer_id = 42) > 0 AND (SELECT count(*) FROM items WHERE customer_id = 100) > 0

-- ===================================================================
-- Session settings reach the shards: text output of timestamps and
-- floats depends on them.
-- ===================================================================

-- q: session.set_timezone
SET TimeZone = 'Asia/Kathmandu'

-- q: session.timestamptz_in_zone ordered
SELECT id, last_seen, last_seen::text AS t FROM customers WHERE id IN (1, 3, 7) ORDER BY id

-- q: session.timestamptz_in_zone_scatter
SELECT id, last_seen::date AS d, extract(hour FROM last_seen) AS h FROM customers WHERE tier = 5

-- q: session.reset_timezone
RESET TimeZone

-- q: session.set_float_digits
SET extra_float_digits = 0

-- q: session.floats_short
SELECT id, score::text AS s, score / 3 AS third FROM customers WHERE tier = 4

-- q: session.reset_float_digits
RESET extra_float_digits

-- q: session.set_datestyle
SET DateStyle = 'SQL, DMY'

-- q: session.dates_sql_style
SELECT id, born, signup FROM customers WHERE tier = 2

-- q: session.reset_datestyle
RESET DateStyle

-- q: session.set_intervalstyle
SET IntervalStyle = 'iso_8601'

-- q: session.intervals_iso
SELECT id, session FROM customers WHERE id IN (1, 2, 3, 4, 5, 6, 7, 8, 9, 10)

-- q: session.reset_intervalstyle
RESET IntervalStyle

-- ===================================================================
-- Output settings x values the proxy reads or computes itself (merged
-- aggregates, expressions over them, sort, GROUP BY and DISTINCT keys):
-- DateStyle (format and order), IntervalStyle, TimeZone,
-- extra_float_digits, bytea_output, lc_monetary.
-- ===================================================================

-- q: styles.sql_dmy.set1
SET DateStyle = 'SQL, DMY'

-- q: styles.sql_dmy.set2
SET IntervalStyle = 'iso_8601'

-- q: styles.sql_dmy.set3
SET TimeZone = 'Europe/Berlin'

-- q: styles.sql_dmy.set4
SET extra_float_digits = 0

-- q: styles.sql_dmy.set5
SET bytea_output = 'escape'

-- q: styles.sql_dmy.group_dates
SELECT tier, min(born), max(born), min(signup), max(signup), min(last_seen), max(last_seen) FROM customers GROUP BY tier

-- q: styles.sql_dmy.group_intervals
SELECT tier, sum(session), min(session), max(session), max(session) - min(session), -sum(session) FROM customers GROUP BY tier

-- q: styles.sql_dmy.span_timestamps
SELECT tier, max(signup) - min(signup) AS span, max(last_seen) - min(last_seen) AS zspan FROM customers WHERE signup < 'infinity' AND last_seen < 'infinity' GROUP BY tier

-- q: styles.sql_dmy.span_orders
SELECT status, max(placed_at) - min(placed_at), max(ship_date) - min(ship_date) FROM orders GROUP BY status

-- q: styles.sql_dmy.floats
SELECT tier, sum(score), avg(score), sum(rating), sum(score) / count(*) FROM customers WHERE id BETWEEN 1 AND 1000000 GROUP BY tier

-- q: styles.sql_dmy.key_date
SELECT born, count(*) FROM customers GROUP BY born

-- q: styles.sql_dmy.key_timestamptz
SELECT last_seen, count(*) FROM customers GROUP BY last_seen

-- q: styles.sql_dmy.key_interval
SELECT DISTINCT session FROM customers

-- q: styles.sql_dmy.key_bytea
SELECT avatar, count(*) FROM customers GROUP BY avatar

-- q: styles.sql_dmy.key_float
SELECT rating, count(*) FROM customers GROUP BY rating

-- q: styles.sql_dmy.sort_timestamptz ordered
SELECT id, last_seen FROM customers ORDER BY last_seen, id

-- q: styles.sql_dmy.sort_date ordered
SELECT id, born, signup FROM customers ORDER BY born DESC, signup, id

-- q: styles.sql_dmy.sort_interval ordered
SELECT id, session FROM customers ORDER BY session, id

-- q: styles.sql_dmy.sort_span ordered
SELECT tier, sum(session) AS s FROM customers GROUP BY tier ORDER BY s, tier

-- q: styles.sql_dmy.sort_float ordered
SELECT id, score, rating FROM customers ORDER BY rating, id

-- q: styles.sql_dmy.reset1
RESET DateStyle

-- q: styles.sql_dmy.reset2
RESET IntervalStyle

-- q: styles.sql_dmy.reset3
RESET TimeZone

-- q: styles.sql_dmy.reset4
RESET extra_float_digits

-- q: styles.sql_dmy.reset5
RESET bytea_output

-- q: styles.german.set1
SET DateStyle = 'German'

-- q: styles.german.set2
SET IntervalStyle = 'postgres_verbose'

-- q: styles.german.set3
SET TimeZone = 'America/New_York'

-- q: styles.german.set4
SET extra_float_digits = 3

-- q: styles.german.group_dates
SELECT tier, min(born), max(born), min(signup), max(signup), min(last_seen), max(last_seen) FROM customers GROUP BY tier

-- q: styles.german.group_intervals
SELECT tier, sum(session), min(session), max(session), max(session) - min(session), -sum(session) FROM customers GROUP BY tier

-- q: styles.german.span_timestamps
SELECT tier, max(signup) - min(signup) AS span, max(last_seen) - min(last_seen) AS zspan FROM customers WHERE signup < 'infinity' AND last_seen < 'infinity' GROUP BY tier

-- q: styles.german.span_orders
SELECT status, max(placed_at) - min(placed_at), max(ship_date) - min(ship_date) FROM orders GROUP BY status

-- q: styles.german.floats
SELECT tier, sum(score), avg(score), sum(rating), sum(score) / count(*) FROM customers WHERE id BETWEEN 1 AND 1000000 GROUP BY tier

-- q: styles.german.key_date
SELECT born, count(*) FROM customers GROUP BY born

-- q: styles.german.key_timestamptz
SELECT last_seen, count(*) FROM customers GROUP BY last_seen

-- q: styles.german.key_interval
SELECT DISTINCT session FROM customers

-- q: styles.german.key_bytea
SELECT avatar, count(*) FROM customers GROUP BY avatar

-- q: styles.german.key_float
SELECT rating, count(*) FROM customers GROUP BY rating

-- q: styles.german.sort_timestamptz ordered
SELECT id, last_seen FROM customers ORDER BY last_seen, id

-- q: styles.german.sort_date ordered
SELECT id, born, signup FROM customers ORDER BY born DESC, signup, id

-- q: styles.german.sort_interval ordered
SELECT id, session FROM customers ORDER BY session, id

-- q: styles.german.sort_span ordered
SELECT tier, sum(session) AS s FROM customers GROUP BY tier ORDER BY s, tier

-- q: styles.german.sort_float ordered
SELECT id, score, rating FROM customers ORDER BY rating, id

-- q: styles.german.reset1
RESET DateStyle

-- q: styles.german.reset2
RESET IntervalStyle

-- q: styles.german.reset3
RESET TimeZone

-- q: styles.german.reset4
RESET extra_float_digits

-- q: styles.postgres_mdy.set1
SET DateStyle = 'Postgres, MDY'

-- q: styles.postgres_mdy.set2
SET IntervalStyle = 'sql_standard'

-- q: styles.postgres_mdy.set3
SET TimeZone = 'Asia/Kolkata'

-- q: styles.postgres_mdy.set4
SET extra_float_digits = -5

-- q: styles.postgres_mdy.set5
SET bytea_output = 'escape'

-- q: styles.postgres_mdy.group_dates
SELECT tier, min(born), max(born), min(signup), max(signup), min(last_seen), max(last_seen) FROM customers GROUP BY tier

-- q: styles.postgres_mdy.group_intervals
SELECT tier, sum(session), min(session), max(session), max(session) - min(session), -sum(session) FROM customers GROUP BY tier

-- q: styles.postgres_mdy.span_timestamps
SELECT tier, max(signup) - min(signup) AS span, max(last_seen) - min(last_seen) AS zspan FROM customers WHERE signup < 'infinity' AND last_seen < 'infinity' GROUP BY tier

-- q: styles.postgres_mdy.span_orders
SELECT status, max(placed_at) - min(placed_at), max(ship_date) - min(ship_date) FROM orders GROUP BY status

-- q: styles.postgres_mdy.floats
SELECT tier, sum(score), avg(score), sum(rating), sum(score) / count(*) FROM customers WHERE id BETWEEN 1 AND 1000000 GROUP BY tier

-- q: styles.postgres_mdy.key_date
SELECT born, count(*) FROM customers GROUP BY born

-- q: styles.postgres_mdy.key_timestamptz
SELECT last_seen, count(*) FROM customers GROUP BY last_seen

-- q: styles.postgres_mdy.key_interval
SELECT DISTINCT session FROM customers

-- q: styles.postgres_mdy.key_bytea
SELECT avatar, count(*) FROM customers GROUP BY avatar

-- q: styles.postgres_mdy.key_float
SELECT rating, count(*) FROM customers GROUP BY rating

-- q: styles.postgres_mdy.sort_timestamptz ordered
SELECT id, last_seen FROM customers ORDER BY last_seen, id

-- q: styles.postgres_mdy.sort_date ordered
SELECT id, born, signup FROM customers ORDER BY born DESC, signup, id

-- q: styles.postgres_mdy.sort_interval ordered
SELECT id, session FROM customers ORDER BY session, id

-- q: styles.postgres_mdy.sort_span ordered
SELECT tier, sum(session) AS s FROM customers GROUP BY tier ORDER BY s, tier

-- q: styles.postgres_mdy.sort_float ordered
SELECT id, score, rating FROM customers ORDER BY rating, id

-- q: styles.postgres_mdy.reset1
RESET DateStyle

-- q: styles.postgres_mdy.reset2
RESET IntervalStyle

-- q: styles.postgres_mdy.reset3
RESET TimeZone

-- q: styles.postgres_mdy.reset4
RESET extra_float_digits

-- q: styles.postgres_mdy.reset5
RESET bytea_output

-- q: styles.posix_zone.set1
SET DateStyle = 'Postgres, DMY'

-- q: styles.posix_zone.set2
SET IntervalStyle = 'iso_8601'

-- q: styles.posix_zone.set3
SET TimeZone = 'UTC+3'

-- q: styles.posix_zone.set4
SET lc_monetary = 'C'

-- q: styles.posix_zone.group_dates
SELECT tier, min(born), max(born), min(signup), max(signup), min(last_seen), max(last_seen) FROM customers GROUP BY tier

-- q: styles.posix_zone.group_intervals
SELECT tier, sum(session), min(session), max(session), max(session) - min(session), -sum(session) FROM customers GROUP BY tier

-- q: styles.posix_zone.span_timestamps
SELECT tier, max(signup) - min(signup) AS span, max(last_seen) - min(last_seen) AS zspan FROM customers WHERE signup < 'infinity' AND last_seen < 'infinity' GROUP BY tier

-- q: styles.posix_zone.span_orders
SELECT status, max(placed_at) - min(placed_at), max(ship_date) - min(ship_date) FROM orders GROUP BY status

-- q: styles.posix_zone.floats
SELECT tier, sum(score), avg(score), sum(rating), sum(score) / count(*) FROM customers WHERE id BETWEEN 1 AND 1000000 GROUP BY tier

-- q: styles.posix_zone.key_date
SELECT born, count(*) FROM customers GROUP BY born

-- q: styles.posix_zone.key_timestamptz
SELECT last_seen, count(*) FROM customers GROUP BY last_seen

-- q: styles.posix_zone.key_interval
SELECT DISTINCT session FROM customers

-- q: styles.posix_zone.key_bytea
SELECT avatar, count(*) FROM customers GROUP BY avatar

-- q: styles.posix_zone.key_float
SELECT rating, count(*) FROM customers GROUP BY rating

-- q: styles.posix_zone.sort_timestamptz ordered
SELECT id, last_seen FROM customers ORDER BY last_seen, id

-- q: styles.posix_zone.sort_date ordered
SELECT id, born, signup FROM customers ORDER BY born DESC, signup, id

-- q: styles.posix_zone.sort_interval ordered
SELECT id, session FROM customers ORDER BY session, id

-- q: styles.posix_zone.sort_span ordered
SELECT tier, sum(session) AS s FROM customers GROUP BY tier ORDER BY s, tier

-- q: styles.posix_zone.sort_float ordered
SELECT id, score, rating FROM customers ORDER BY rating, id

-- q: styles.posix_zone.reset1
RESET DateStyle

-- q: styles.posix_zone.reset2
RESET IntervalStyle

-- q: styles.posix_zone.reset3
RESET TimeZone

-- q: styles.posix_zone.reset4
RESET lc_monetary

-- ===================================================================
-- Errors: the same SQLSTATE on both sides.
-- ===================================================================

-- q: error.division_by_zero_scatter error
SELECT id, 1 / (tier - tier) FROM customers WHERE tier IS NOT NULL

-- q: error.division_by_zero_pinned error
SELECT 1 / (tier - tier) FROM customers WHERE id = 1

-- q: error.bad_cast error
SELECT name::int FROM customers WHERE id = 1

-- q: error.bad_key_literal error
SELECT * FROM customers WHERE id = 'seven'

-- q: error.key_out_of_range error
SELECT * FROM customers WHERE id = '99999999999999999999'

-- q: error.undefined_column error
SELECT nope FROM customers

-- q: error.undefined_table error
SELECT * FROM no_such_table

-- q: error.undefined_function error
SELECT no_such_function(id) FROM customers WHERE id = 7

-- q: error.syntax error
SELECT FROM WHERE

-- q: error.ambiguous_column error
SELECT id FROM customers c JOIN orders o ON o.customer_id = c.id WHERE c.id = 7

-- q: error.numeric_overflow error
SELECT balance::numeric(3,1) FROM customers WHERE id = 7

-- ===================================================================
-- Intermediate results: what the streaming merge cannot combine runs on
-- the coordinator (main's cluster) over the tables pulled into temporary
-- tables (docs/intermediate.md).
-- ===================================================================

-- q: inter.join_cross_group_names
SELECT i.customer_id, i.order_id, i.line, p.name, p.category FROM items i JOIN products p ON lower(p.sku) = lower(i.sku)

-- q: inter.join_cross_group_grouped
SELECT p.category, count(*), sum(i.qty) FROM items i JOIN products p ON lower(p.sku) = lower(i.sku) GROUP BY p.category

-- q: inter.join_cross_group_left
SELECT i.sku, p.name FROM items i LEFT JOIN products p ON lower(p.sku) = lower(i.sku) WHERE i.customer_id IN (1, 2, 9)

-- q: inter.join_cross_group_filter_both
SELECT i.order_id, i.line, p.price FROM items i JOIN products p ON lower(p.sku) = lower(i.sku) WHERE i.qty > 2 AND p.price > 10

-- q: inter.join_not_on_key
SELECT o.id, o.status, i.line FROM orders o JOIN items i ON i.order_id = o.id

-- q: inter.join_not_on_key_count
SELECT count(*) FROM orders o JOIN items i ON i.order_id = o.id AND i.qty > 1

-- q: inter.self_join_status
SELECT a.status, count(*) FROM orders a JOIN orders b ON a.status = b.status AND a.id < b.id WHERE a.total > 100 GROUP BY a.status

-- q: inter.join_main_table
SELECT o.status, s.v FROM orders o JOIN settings s ON s.k = o.status

-- q: inter.join_customers_orders_not_on_key
SELECT c.country, count(*) FROM customers c JOIN orders o ON o.currency = c.code GROUP BY c.country

-- q: inter.full_join_cross_group
SELECT count(*), count(i.sku), count(p.sku) FROM items i FULL JOIN products p ON lower(p.sku) = lower(i.sku)

-- q: inter.window_row_number ordered
SELECT id, customer_id, row_number() OVER (ORDER BY total DESC, customer_id, id) FROM orders ORDER BY 3

-- q: inter.window_rank
SELECT customer_id, id, rank() OVER (PARTITION BY status ORDER BY total) FROM orders

-- q: inter.window_sum_running ordered
SELECT customer_id, id, sum(total) OVER (ORDER BY customer_id, id) FROM orders ORDER BY customer_id, id

-- q: inter.window_lag ordered
SELECT customer_id, id, lag(total) OVER (ORDER BY customer_id, id) FROM orders ORDER BY customer_id, id

-- q: inter.window_ntile
SELECT id, customer_id, ntile(4) OVER (ORDER BY placed_at, customer_id, id) FROM orders

-- q: inter.window_count_all
SELECT status, count(*) OVER () FROM orders

-- q: inter.window_over_aggregate ordered
SELECT status, count(*), rank() OVER (ORDER BY count(*) DESC, status) FROM orders GROUP BY status ORDER BY 3

-- q: inter.window_dense_rank_filtered
SELECT customer_id, dense_rank() OVER (ORDER BY customer_id) FROM orders WHERE total > 50

-- q: inter.percentile_cont
SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY total) FROM orders

-- q: inter.percentile_disc_grouped
SELECT status, percentile_disc(0.9) WITHIN GROUP (ORDER BY total) FROM orders GROUP BY status

-- q: inter.mode_currency
SELECT mode() WITHIN GROUP (ORDER BY currency) FROM orders WHERE currency IS NOT NULL

-- q: inter.percentile_array
SELECT percentile_cont(ARRAY[0.25, 0.5, 0.75]) WITHIN GROUP (ORDER BY qty) FROM items

-- q: inter.count_distinct_status
SELECT count(DISTINCT status) FROM orders

-- q: inter.count_distinct_grouped
SELECT status, count(DISTINCT customer_id) FROM orders GROUP BY status

-- q: inter.sum_distinct_qty
SELECT sum(DISTINCT qty), avg(DISTINCT qty) FROM items

-- q: inter.count_distinct_and_plain
SELECT count(*), count(DISTINCT sku), count(DISTINCT order_id) FROM items

-- q: inter.string_agg_ordered
SELECT status, string_agg(id::text, ',' ORDER BY id, customer_id) FROM orders WHERE customer_id < 20 GROUP BY status

-- q: inter.array_agg_ordered
SELECT array_agg(sku ORDER BY sku, order_id, line) FROM items WHERE qty > 3

-- q: inter.stddev_total
SELECT round(stddev(total), 6), round(variance(total), 6) FROM orders

-- q: inter.expression_over_aggregate
SELECT round(avg(total), 2), max(total) - min(total), sum(qty) * 2 FROM orders

-- q: inter.group_by_alias
SELECT date_trunc('month', placed_at) AS m, count(*) FROM orders GROUP BY m

-- q: inter.group_by_expression_alias
SELECT lower(status) AS s, count(*) FROM orders GROUP BY s

-- q: inter.having_expression
SELECT status FROM orders GROUP BY status HAVING sum(total) / count(*) > 10

-- q: inter.count_filter_cast
SELECT count(*) FILTER (WHERE gift)::int, count(*)::int FROM orders

-- q: inter.rollup
SELECT status, currency, count(*) FROM orders GROUP BY ROLLUP (status, currency)

-- q: inter.cube
SELECT status, gift, sum(total) FROM orders GROUP BY CUBE (status, gift)

-- q: inter.grouping_sets
SELECT status, qty, count(*), grouping(status, qty) FROM orders GROUP BY GROUPING SETS ((status), (qty), ())

-- q: inter.intersect
SELECT customer_id FROM orders INTERSECT SELECT id FROM customers

-- q: inter.except
SELECT id FROM customers EXCEPT SELECT customer_id FROM orders

-- q: inter.intersect_all
SELECT status FROM orders WHERE total > 100 INTERSECT ALL SELECT status FROM orders WHERE qty > 2

-- q: inter.except_cross_group
SELECT lower(sku) FROM items EXCEPT SELECT lower(sku) FROM products

-- q: inter.scalar_subquery_min
SELECT id, customer_id FROM orders WHERE total = (SELECT min(total) FROM orders)

-- q: inter.scalar_subquery_avg
SELECT count(*) FROM orders WHERE total > (SELECT avg(total) FROM orders)

-- q: inter.in_subquery_not_on_key
SELECT id, customer_id FROM orders WHERE id IN (SELECT order_id FROM items WHERE qty > 4)

-- Pullout: an uncorrelated subquery of the WHERE runs first, its value
-- bound as a parameter of the statement, which is then routed by it.

-- q: pullout.scalar_key
SELECT * FROM customers WHERE id = (SELECT max(customer_id) FROM orders WHERE total > 100)

-- q: pullout.scalar_no_row
SELECT id FROM customers WHERE id = (SELECT customer_id FROM orders WHERE total > 100000000)

-- q: pullout.scalar_null_test
SELECT count(*) FROM customers WHERE (SELECT min(id) FROM orders WHERE total > 100000000) IS NULL

-- q: pullout.scalar_numeric_vs_bigint ordered
SELECT id, customer_id FROM orders WHERE customer_id = 7 AND total >= (SELECT avg(total) FROM orders) ORDER BY id

-- q: pullout.scalar_text_cross_group
SELECT id, name FROM customers WHERE country = (SELECT min(code) FROM countries WHERE region = 'Europe') AND tier = 1

-- q: pullout.scalar_float
SELECT id FROM customers WHERE score = (SELECT max(score) FROM customers WHERE score < 'Infinity')

-- q: pullout.scalar_more_than_one_row error
SELECT * FROM customers WHERE id = (SELECT customer_id FROM orders WHERE total > 4900)

-- q: pullout.scalar_param args=99
SELECT id, tier FROM customers WHERE tier IS DISTINCT FROM $1 AND id = (SELECT max(customer_id) FROM orders WHERE status = 'paid')

-- q: pullout.inner_column_named_like_outer
SELECT count(*) FROM customers WHERE balance > (SELECT avg(total) FROM orders WHERE id = customer_id)

-- q: pullout.correlated_unqualified
SELECT id FROM customers WHERE id = (SELECT max(customer_id) FROM orders WHERE total > balance AND customer_id = id)

-- q: pullout.in_key_limit
SELECT id, name FROM customers WHERE id IN (SELECT customer_id FROM orders ORDER BY total DESC, id LIMIT 3)

-- q: pullout.in_cross_group
SELECT sku, name FROM products WHERE lower(sku) IN (SELECT lower(sku) FROM items WHERE qty > 4 AND order_id < 40)

-- q: pullout.in_nulls
SELECT count(*), count(*) FILTER (WHERE (tier IN (SELECT tier FROM customers WHERE id < 40)) IS NULL) FROM customers WHERE id = (SELECT min(id) FROM orders)

-- q: pullout.in_empty
SELECT id FROM customers WHERE id IN (SELECT customer_id FROM orders WHERE total > 100000000)

-- q: pullout.in_text_values
SELECT id FROM customers WHERE tier = 2 AND name IN (SELECT name FROM customers WHERE tier = 3 ORDER BY id LIMIT 20)

-- q: pullout.in_param args=paid
SELECT id, customer_id FROM orders WHERE status = $1 AND customer_id IN (SELECT id FROM customers ORDER BY balance DESC NULLS LAST, id LIMIT 2)

-- q: inter.not_exists_correlated
SELECT id FROM customers c WHERE NOT EXISTS (SELECT 1 FROM orders o WHERE o.currency = c.code)

-- q: inter.correlated_scalar_not_on_key
SELECT o.id, o.customer_id, (SELECT count(*) FROM items i WHERE i.order_id = o.id) FROM orders o

-- q: inter.exists_cross_group
SELECT count(*) FROM items i WHERE EXISTS (SELECT 1 FROM products p WHERE lower(p.sku) = lower(i.sku) AND p.stock > 10)

-- q: inter.derived_limit
SELECT count(*) FROM (SELECT id FROM orders ORDER BY total DESC, customer_id, id LIMIT 7) s

-- q: inter.derived_aggregate
SELECT max(n) FROM (SELECT customer_id, count(*) AS n FROM orders GROUP BY customer_id) s

-- q: inter.derived_top_per_status
SELECT status, id FROM (SELECT status, id, row_number() OVER (PARTITION BY status ORDER BY total DESC, customer_id, id) AS r FROM orders) s WHERE r = 1

-- q: inter.cte_aggregate
WITH t AS (SELECT sum(total) AS s FROM orders) SELECT * FROM t

-- q: inter.cte_limit
WITH top AS (SELECT customer_id, total FROM orders ORDER BY total DESC, customer_id, id LIMIT 5) SELECT count(DISTINCT customer_id), sum(total) FROM top

-- q: inter.cte_two_groups
WITH p AS (SELECT lower(sku) AS k, price FROM products), i AS (SELECT lower(sku) AS k, qty FROM items) SELECT sum(p.price * i.qty) FROM p JOIN i USING (k)

-- q: inter.cte_recursive
WITH RECURSIVE n(x) AS (SELECT min(qty) FROM items UNION ALL SELECT x + 1 FROM n WHERE x < 5) SELECT * FROM n

-- q: inter.distinct_order_outside
SELECT DISTINCT status FROM orders ORDER BY status

-- q: inter.cross_group_reference
SELECT c.region, count(*) FROM products p JOIN countries c ON c.code = p.category GROUP BY c.region

-- q: inter.lateral_top
SELECT c.id, x.total FROM customers c, LATERAL (SELECT total FROM orders o WHERE o.currency = c.code ORDER BY total DESC, id LIMIT 1) x

-- q: inter.join_in_list_key
SELECT o.id, i.line FROM orders o JOIN items i ON i.order_id = o.id WHERE o.customer_id IN (1, 2, 3, 9)

-- q: inter.param_join_cross_group
SELECT i.order_id, p.name FROM items i JOIN products p ON lower(p.sku) = lower(i.sku) WHERE i.qty > 3 AND p.price < 1000

-- q: inter.window_partition_non_key
SELECT customer_id, id, sum(total) OVER (PARTITION BY currency) FROM orders

-- q: inter.median_by_country
SELECT c.country, percentile_cont(0.5) WITHIN GROUP (ORDER BY o.total) FROM customers c JOIN orders o ON o.customer_id = c.id GROUP BY c.country

-- q: inter.union_under_union_all
SELECT status FROM orders UNION ALL (SELECT status FROM orders UNION SELECT 'x')

-- q: inter.jsonb_agg_ordered
SELECT jsonb_agg(id ORDER BY id, customer_id) FROM orders WHERE total > 400

-- ===================================================================
-- Cheap exact merges: expressions over combined aggregates evaluated by
-- the proxy, DISTINCT aggregates over shards grouped by their argument,
-- variances from pushed-down sums (docs/merges.md); and more reads of
-- the kinds intermediate results answer.
-- ===================================================================

-- q: cheap.sum_times_two
SELECT sum(total) * 2, sum(qty) * 2, count(*) * 3 FROM orders

-- q: cheap.round_avg
SELECT round(avg(total), 2), round(avg(qty), 3), round(avg(total)) FROM orders

-- q: cheap.round_avg_numeric_cast
SELECT round(avg(qty)::numeric, 6), round(avg(total)::numeric, 6) FROM orders

-- q: cheap.max_minus_min
SELECT max(total) - min(total), max(qty) - min(qty), max(ship_date) - min(ship_date) FROM orders

-- q: cheap.timestamp_span
SELECT max(placed_at) - min(placed_at) FROM orders

-- q: cheap.count_casts
SELECT count(*)::int, count(*)::numeric, count(*)::float8, count(*)::smallint FROM orders

-- q: cheap.count_filter_cast
SELECT count(*) FILTER (WHERE gift)::int, count(*) FILTER (WHERE NOT gift), count(*)::int FROM orders

-- q: cheap.grouped_expression ordered
SELECT status, sum(total) * 2 AS doubled, round(avg(total), 2) AS mean FROM orders GROUP BY status ORDER BY status

-- q: cheap.grouped_ratio
SELECT status, sum(total) / count(*), sum(qty) / count(*) FROM orders GROUP BY status

-- q: cheap.case_over_aggregate
SELECT status, CASE WHEN count(*) > 40 THEN 'many' ELSE 'few' END FROM orders GROUP BY status

-- q: cheap.case_numeric_branches
SELECT status, CASE WHEN count(*) > 40 THEN sum(total) WHEN count(*) > 5 THEN max(total) ELSE 0 END FROM orders GROUP BY status

-- q: cheap.case_null_else
SELECT currency, CASE WHEN sum(qty) > 100 THEN sum(qty) END FROM orders GROUP BY currency

-- q: cheap.coalesce_sum
SELECT status, coalesce(sum(total) FILTER (WHERE gift), 0), coalesce(max(qty) FILTER (WHERE total > 10000), -1) FROM orders GROUP BY status

-- q: cheap.nullif_division
SELECT status, sum(total) / nullif(count(*) FILTER (WHERE gift), 0) FROM orders GROUP BY status

-- q: cheap.group_key_times_count
SELECT qty, qty * count(*), count(*) * 10 + qty FROM orders WHERE qty IS NOT NULL GROUP BY qty

-- q: cheap.negated_and_float
SELECT -sum(qty), sum(qty)::float8 / 3, round(sum(qty)::float8 / 7) FROM orders

-- q: cheap.order_by_expression ordered
SELECT status, count(*) FROM orders GROUP BY status ORDER BY sum(total) * 2 DESC, status

-- q: cheap.order_by_expression_limit ordered
SELECT customer_id, sum(total) FROM orders GROUP BY customer_id ORDER BY sum(total) / count(*) DESC, customer_id LIMIT 5

-- q: cheap.having_expression
SELECT status FROM orders GROUP BY status HAVING sum(total) / count(*) > 10

-- q: cheap.having_round
SELECT customer_id, count(*) FROM orders GROUP BY customer_id HAVING round(avg(total)) > 500

-- q: cheap.integer_overflow error
SELECT (sum(qty) * 100000000)::int FROM orders

-- q: cheap.division_by_zero error
SELECT sum(total) / (count(*) - count(*)) FROM orders

-- q: cheap.round_float_two_args error
SELECT round(sum(qty)::float8, 2) FROM orders

-- q: cheap.expression_pinned
SELECT round(avg(total), 2), count(*)::int FROM orders WHERE customer_id = 7

-- q: cheap.expression_in_list
SELECT customer_id, sum(total) * 2 FROM orders WHERE customer_id IN (1, 2, 3, 9) GROUP BY customer_id

-- q: cheap.count_distinct_status
SELECT count(DISTINCT status), count(DISTINCT currency) FROM orders

-- q: cheap.count_distinct_grouped
SELECT status, count(DISTINCT customer_id), count(*) FROM orders GROUP BY status

-- q: cheap.sum_avg_distinct
SELECT sum(DISTINCT qty), avg(DISTINCT qty), count(DISTINCT qty) FROM items

-- q: cheap.count_distinct_and_plain
SELECT count(*), count(DISTINCT sku), count(DISTINCT order_id), sum(qty) FROM items

-- q: cheap.count_distinct_filter
SELECT count(DISTINCT status) FILTER (WHERE total > 500), count(DISTINCT currency) FILTER (WHERE gift) FROM orders

-- q: cheap.count_distinct_empty
SELECT count(DISTINCT status), sum(DISTINCT qty) FROM orders WHERE total < 0 AND total > 0

-- q: cheap.distinct_having_order ordered
SELECT currency, count(DISTINCT customer_id) FROM orders GROUP BY currency HAVING count(DISTINCT customer_id) > 3 ORDER BY 2 DESC, 1

-- q: cheap.sum_distinct_numeric
SELECT status, sum(DISTINCT total), avg(DISTINCT total) FROM orders GROUP BY status

-- q: cheap.distinct_expression_arg
SELECT count(DISTINCT lower(status)), count(DISTINCT qty % 3) FROM orders

-- q: cheap.distinct_ratio
SELECT round(count(DISTINCT customer_id)::numeric / count(*), 4) FROM orders

-- q: cheap.stddev_numeric
SELECT stddev(total::numeric), variance(total::numeric) FROM orders

-- q: cheap.stddev_pop_grouped
SELECT status, stddev_pop(qty::numeric), var_pop(qty::numeric), stddev_samp(qty::int), var_samp(qty::bigint) FROM orders GROUP BY status

-- q: cheap.stddev_rounded
SELECT round(stddev(total::numeric), 6), round(variance(qty::int), 6) FROM orders

-- q: cheap.stddev_one_row
SELECT customer_id, stddev(total::numeric), stddev_pop(total::numeric) FROM orders WHERE customer_id IN (1, 2) GROUP BY customer_id

-- q: cheap.stddev_items
SELECT stddev(price::numeric), var_pop(price::numeric) FROM items

-- q: cheap.stddev_float_intermediate
SELECT round(stddev(weight)::numeric, 6) FROM orders WHERE customer_id > 0

-- q: cheap.ordinal_group ordered
SELECT status, count(*) FROM orders GROUP BY 1 ORDER BY 1

-- q: cheap.expression_group
SELECT date_trunc('month', placed_at), count(*) FROM orders GROUP BY date_trunc('month', placed_at)

-- q: cheap.expression_group_ordinal
SELECT lower(status) AS s, count(*) FROM orders GROUP BY 1

-- q: cheap.group_alias
SELECT date_trunc('month', placed_at) AS m, count(*) FROM orders GROUP BY m

-- q: cheap.window_percent_rank
SELECT id, customer_id, percent_rank() OVER (ORDER BY total, customer_id, id) FROM orders WHERE qty > 3

-- q: cheap.window_first_value
SELECT customer_id, id, first_value(id) OVER (PARTITION BY customer_id ORDER BY id) FROM orders WHERE customer_id < 40

-- q: cheap.window_avg_frame
SELECT customer_id, id, round(avg(total) OVER (ORDER BY customer_id, id ROWS BETWEEN 2 PRECEDING AND CURRENT ROW), 2) FROM orders WHERE customer_id BETWEEN 1 AND 30

-- q: cheap.window_lead_status
SELECT status, id, customer_id, lead(id) OVER (PARTITION BY status ORDER BY customer_id, id) FROM orders WHERE customer_id < 50

-- q: cheap.window_count_partition
SELECT currency, count(*) OVER (PARTITION BY currency) FROM orders WHERE currency IS NOT NULL

-- q: cheap.percentile_disc_qty
SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY qty) FROM orders

-- q: cheap.percentile_cont_grouped
SELECT currency, percentile_cont(0.25) WITHIN GROUP (ORDER BY total) FROM orders GROUP BY currency

-- q: cheap.mode_status
SELECT mode() WITHIN GROUP (ORDER BY status) FROM orders

-- q: cheap.scalar_subquery_max
SELECT id, customer_id FROM orders WHERE total = (SELECT max(total) FROM orders)

-- q: cheap.in_subquery_uncorrelated
SELECT count(*) FROM orders WHERE customer_id IN (SELECT id FROM customers WHERE tier = 2)

-- q: cheap.exists_correlated
SELECT count(*) FROM customers c WHERE EXISTS (SELECT 1 FROM orders o WHERE o.customer_id = c.id AND o.total > 900)

-- q: cheap.correlated_scalar_count
SELECT c.id, (SELECT count(*) FROM orders o WHERE o.status = c.country) FROM customers c WHERE c.id < 20

-- q: cheap.cte_distinct_count
WITH s AS (SELECT DISTINCT status FROM orders) SELECT count(*) FROM s

-- q: cheap.cte_grouped_join
WITH t AS (SELECT customer_id, sum(total) AS s FROM orders GROUP BY customer_id) SELECT c.country, max(t.s) FROM t JOIN customers c ON c.id = t.customer_id GROUP BY c.country

-- q: cheap.grouping_sets_currency
SELECT status, currency, count(*) FROM orders GROUP BY GROUPING SETS ((status), (currency))

-- q: cheap.rollup_gift
SELECT gift, count(*), sum(total) FROM orders GROUP BY ROLLUP (gift)

-- q: cheap.derived_aggregate_expression
SELECT round(avg(n), 4) FROM (SELECT customer_id, count(*) AS n FROM orders GROUP BY customer_id) s

-- q: cheap.string_agg_distinct
SELECT string_agg(DISTINCT status, ',' ORDER BY status) FROM orders


-- ===================================================================
-- The wider corpus (issue 19: hidden corpora must give 0 wrong answers
-- and >= 97 % answered): the sections from here up to "Writes, each
-- followed by reads" add 867 statements shaped like the Postgres
-- regression tests' and sqllogictest's SELECTs and like what ORMs and
-- drivers send. On the code before the fixes beside them: 844 answered
-- and equal, 11 refused (0A000: a window function, LIMIT in a derived
-- table, INTERSECT or EXCEPT over an IN list or ANY array spanning
-- clusters; an ORDER BY on an int4range), 12 WRONG (a WITH query over a
-- WITH query over orders: its aggregate, window, LIMIT, DISTINCT (ON),
-- string_agg or GROUP BY ran on every shard): 98.7 % answered, 12 wrong.
-- After: 867 answered and equal, 0 refused, 0 wrong (100 %); the whole
-- file: 1915 of 1916 answered (the one refusal is by design,
-- xupd.shard_key_refused).
-- ===================================================================

-- ===================================================================
-- ORM-shaped reads (issue 19, hidden corpora): what SQLAlchemy, Django,
-- Hibernate/pgjdbc and ActiveRecord send: quoted and qualified
-- identifiers, bound LIMIT/OFFSET, IN lists of parameters, COUNT(*)
-- OVER () for pagination, EXISTS probes, CASE, COALESCE, casts, ILIKE,
-- ANY(ARRAY[...]) and jsonb operators.
-- ===================================================================

-- q: orm.sqla_get ordered args=7
SELECT customers.id AS customers_id, customers.name AS customers_name, customers.email AS customers_email
FROM customers WHERE customers.id = $1

-- q: orm.sqla_filter_by ordered args=2,10,0
SELECT customers.id AS customers_id, customers.name AS customers_name FROM customers
WHERE customers.tier = $1 ORDER BY customers.id LIMIT $2 OFFSET $3

-- q: orm.sqla_count
SELECT count(*) AS count_1 FROM (SELECT customers.id AS customers_id FROM customers WHERE customers.active = true) AS anon_1

-- q: orm.sqla_count_param args=paid
SELECT count(*) AS count_1 FROM (SELECT orders.id AS orders_id, orders.customer_id AS orders_customer_id
FROM orders WHERE orders.status = $1) AS anon_1

-- q: orm.sqla_exists_scalar ordered args=42
SELECT EXISTS (SELECT 1 FROM orders WHERE orders.customer_id = $1) AS anon_1

-- q: orm.sqla_exists_scatter ordered args=delivered
SELECT EXISTS (SELECT 1 FROM orders WHERE orders.status = $1 AND orders.total > 4000) AS anon_1

-- q: orm.sqla_not_exists_scatter ordered
SELECT NOT EXISTS (SELECT 1 FROM orders WHERE orders.status = 'nope') AS anon_1

-- q: orm.sqla_in_expanding args=1,2,3,9,42
SELECT customers.id, customers.name FROM customers WHERE customers.id IN ($1, $2, $3, $4, $5)

-- q: orm.sqla_in_expanding_text args=paid,shipped
SELECT orders.id, orders.status FROM orders WHERE orders.status IN ($1, $2) AND orders.total > 4500

-- q: orm.sqla_joinedload ordered args=3
SELECT customers.id AS customers_id, customers.name AS customers_name, orders_1.id AS orders_1_id, orders_1.total AS orders_1_total
FROM customers LEFT OUTER JOIN orders AS orders_1 ON customers.id = orders_1.customer_id
WHERE customers.id = $1 ORDER BY orders_1.id

-- q: orm.sqla_selectin args=1,2,3,9
SELECT orders.customer_id AS orders_customer_id, orders.id AS orders_id, orders.status AS orders_status
FROM orders WHERE orders.customer_id IN ($1, $2, $3, $4)

-- q: orm.sqla_limit_subquery_eager ordered args=5,0
SELECT anon_1.customers_id, anon_1.customers_name, orders_1.id AS orders_1_id
FROM (SELECT customers.id AS customers_id, customers.name AS customers_name FROM customers ORDER BY customers.id LIMIT $1 OFFSET $2) AS anon_1
LEFT OUTER JOIN orders AS orders_1 ON anon_1.customers_id = orders_1.customer_id ORDER BY anon_1.customers_id, orders_1.id

-- q: orm.sqla_coalesce_label ordered
SELECT customers.id, coalesce(customers.nick, customers.name, '?') AS display FROM customers WHERE customers.id BETWEEN 1 AND 30 ORDER BY customers.id

-- q: orm.sqla_case_label
SELECT orders.id, CASE WHEN orders.total > 3000 THEN 'big' WHEN orders.total > 1000 THEN 'medium' ELSE 'small' END AS size
FROM orders WHERE orders.customer_id IN (1, 2, 3)

-- q: orm.sqla_group_case ordered
SELECT CASE WHEN orders.total > 3000 THEN 'big' WHEN orders.total > 1000 THEN 'medium' ELSE 'small' END AS size, count(*) AS n
FROM orders GROUP BY 1 ORDER BY 1

-- q: orm.sqla_ilike args=%ALICE%
SELECT customers.id, customers.name FROM customers WHERE customers.name ILIKE $1

-- q: orm.sqla_ilike_escape
SELECT orders.id, orders.note FROM orders WHERE orders.note ILIKE '%\%%' ESCAPE '\'

-- q: orm.sqla_not_ilike
SELECT count(*) FROM orders WHERE orders.note NOT ILIKE 'leave%'

-- q: orm.sqla_startswith args=Lyr
SELECT products.sku FROM products WHERE (products.sku LIKE $1 || '%')

-- q: orm.sqla_contains_jsonb
SELECT customers.id FROM customers WHERE customers.prefs @> '{"theme": "dark"}'

-- q: orm.sqla_jsonb_astext ordered
SELECT customers.prefs ->> 'theme' AS theme, count(*) FROM customers GROUP BY customers.prefs ->> 'theme' ORDER BY 1 NULLS FIRST

-- q: orm.sqla_jsonb_path
SELECT products.sku, products.attrs #>> '{tags,1}' AS t FROM products WHERE products.attrs IS NOT NULL AND products.attrs ->> 'color' = 'red'

-- q: orm.sqla_jsonb_numeric ordered
SELECT (customers.prefs ->> 'n')::int AS n, sum((customers.prefs ->> 'w')::numeric) AS w FROM customers
WHERE customers.prefs IS NOT NULL GROUP BY 1 ORDER BY 1

-- q: orm.sqla_jsonb_has_key
SELECT count(*) FROM products WHERE products.attrs ? 'color'

-- q: orm.sqla_array_any args=books
SELECT products.sku FROM products WHERE products.category = ANY (ARRAY[$1, 'toys'])

-- q: orm.sqla_array_any_literal
SELECT customers.id FROM customers WHERE customers.id = ANY (ARRAY[1, 2, 3, 9, 100]::bigint[])

-- q: orm.sqla_array_contains
SELECT customers.id, customers.tags FROM customers WHERE customers.tags @> ARRAY['Europe']

-- q: orm.sqla_array_overlap
SELECT count(*) FROM customers WHERE customers.tags && ARRAY['paid', 'shipped']

-- q: orm.sqla_array_index
SELECT customers.tags[1] AS first_tag, count(*) FROM customers GROUP BY customers.tags[1]

-- q: orm.sqla_cast_text
SELECT CAST(customers.id AS VARCHAR) AS sid, CAST(customers.balance AS INTEGER) AS bal FROM customers WHERE customers.id < 20

-- q: orm.sqla_between args=10,20
SELECT customers.id FROM customers WHERE customers.id BETWEEN $1 AND $2

-- q: orm.sqla_is_distinct
SELECT count(*) FROM customers WHERE customers.tier IS DISTINCT FROM 3

-- q: orm.sqla_is_not_distinct args=NULL
SELECT count(*) FROM customers WHERE customers.tier IS NOT DISTINCT FROM $1

-- q: orm.sqla_nullsfirst ordered
SELECT customers.id, customers.tier FROM customers ORDER BY customers.tier ASC NULLS FIRST, customers.id DESC LIMIT 25

-- q: orm.sqla_distinct_column ordered
SELECT DISTINCT orders.currency FROM orders ORDER BY orders.currency NULLS LAST

-- q: orm.sqla_func_lower
SELECT lower(customers.name) AS lower_1, count(*) AS count_1 FROM customers GROUP BY lower(customers.name)

-- q: orm.sqla_scalar_subquery
SELECT customers.id, (SELECT count(*) FROM orders WHERE orders.customer_id = customers.id) AS order_count
FROM customers WHERE customers.id IN (1, 2, 3, 9, 100, 355)

-- q: orm.django_get ordered args=9
SELECT "customers"."id", "customers"."name", "customers"."email", "customers"."tier" FROM "customers" WHERE "customers"."id" = $1 LIMIT 21

-- q: orm.django_filter_order ordered args=3
SELECT "orders"."id", "orders"."customer_id", "orders"."total" FROM "orders" WHERE "orders"."customer_id" = $1 ORDER BY "orders"."placed_at" DESC, "orders"."id" DESC

-- q: orm.django_paginate ordered args=20,40
SELECT "orders"."id", "orders"."status" FROM "orders" ORDER BY "orders"."id" ASC LIMIT $1 OFFSET $2

-- q: orm.django_count
SELECT COUNT(*) AS "__count" FROM "orders" WHERE "orders"."status" = 'paid'

-- q: orm.django_exists ordered
SELECT 1 AS "a" FROM "orders" WHERE "orders"."customer_id" = 42 LIMIT 1

-- q: orm.django_exists_scatter countonly
SELECT 1 AS "a" FROM "orders" WHERE "orders"."total" > 4000 LIMIT 1

-- q: orm.django_exists_missing countonly
SELECT 1 AS "a" FROM "orders" WHERE "orders"."status" = 'lost' LIMIT 1

-- q: orm.django_aggregate ordered
SELECT SUM("orders"."total") AS "total__sum", AVG("orders"."qty") AS "qty__avg", MAX("orders"."placed_at") AS "m" FROM "orders"

-- q: orm.django_annotate ordered
SELECT "customers"."id", COUNT("orders"."id") AS "n" FROM "customers" LEFT OUTER JOIN "orders" ON ("customers"."id" = "orders"."customer_id")
WHERE "customers"."id" < 40 GROUP BY "customers"."id" ORDER BY "customers"."id"

-- q: orm.django_values_annotate ordered
SELECT "orders"."status", COUNT("orders"."id") AS "n", SUM("orders"."total") AS "s" FROM "orders" GROUP BY "orders"."status" ORDER BY "orders"."status"

-- q: orm.django_q_or
SELECT "customers"."id" FROM "customers" WHERE ("customers"."tier" = 1 OR "customers"."name" = 'bob')

-- q: orm.django_icontains
SELECT "customers"."id" FROM "customers" WHERE UPPER("customers"."name"::text) LIKE UPPER('%zo%')

-- q: orm.django_iexact
SELECT "customers"."id" FROM "customers" WHERE UPPER("customers"."name"::text) = UPPER('alice')

-- q: orm.django_in_subquery
SELECT "customers"."id" FROM "customers" WHERE "customers"."id" IN (SELECT U0."customer_id" FROM "orders" U0 WHERE U0."total" > 4900)

-- q: orm.django_exists_subquery ordered
SELECT "customers"."id" FROM "customers" WHERE EXISTS(SELECT 1 AS "a" FROM "orders" U1 WHERE (U1."customer_id" = ("customers"."id") AND U1."status" = 'cancelled') LIMIT 1) AND "customers"."tier" = 2 ORDER BY "customers"."id"

-- q: orm.django_date_trunc ordered
SELECT DATE_TRUNC('year', "orders"."placed_at" AT TIME ZONE 'UTC') AS "y", COUNT(*) FROM "orders" GROUP BY 1 ORDER BY 1

-- q: orm.django_extract
SELECT "orders"."id" FROM "orders" WHERE EXTRACT(MONTH FROM "orders"."placed_at" AT TIME ZONE 'UTC') = 2 AND "orders"."customer_id" IN (3, 7)

-- q: orm.django_isnull
SELECT COUNT(*) FROM "orders" WHERE "orders"."ship_date" IS NULL

-- q: orm.django_range ordered
SELECT "orders"."id" FROM "orders" WHERE "orders"."ship_date" BETWEEN '2021-01-01'::date AND '2021-01-31'::date ORDER BY "orders"."id"

-- q: orm.django_window_count ordered
SELECT "customers"."id", COUNT(*) OVER () AS "full_count" FROM "customers" WHERE "customers"."tier" = 3 ORDER BY "customers"."id" LIMIT 10

-- q: orm.django_distinct_on ordered
SELECT DISTINCT ON ("orders"."customer_id") "orders"."customer_id", "orders"."id", "orders"."total" FROM "orders"
WHERE "orders"."customer_id" < 30 ORDER BY "orders"."customer_id" ASC, "orders"."total" DESC, "orders"."id"

-- q: orm.hibernate_paged ordered args=10,5
SELECT o1_0.id, o1_0.customer_id, o1_0.status FROM orders o1_0 WHERE o1_0.status = 'paid' ORDER BY o1_0.id OFFSET $2 ROWS FETCH FIRST $1 ROWS ONLY

-- q: orm.hibernate_fetch_first ordered
SELECT c1_0.id, c1_0.name FROM customers c1_0 ORDER BY c1_0.id FETCH FIRST 7 ROWS ONLY

-- q: orm.hibernate_fetch_next ordered
SELECT c1_0.id FROM customers c1_0 ORDER BY c1_0.id OFFSET 5 ROWS FETCH NEXT 3 ROWS ONLY

-- q: orm.hibernate_count ordered
SELECT count(o1_0.id) FROM orders o1_0 WHERE o1_0.customer_id IN (1, 2, 3)

-- q: orm.hibernate_join_fetch ordered args=42
SELECT c1_0.id, o1_0.id, o1_0.total FROM customers c1_0 JOIN orders o1_0 ON c1_0.id = o1_0.customer_id WHERE c1_0.id = $1 ORDER BY o1_0.id

-- q: orm.hibernate_cast
SELECT cast(o1_0.total as varchar) FROM orders o1_0 WHERE o1_0.customer_id = 7

-- q: orm.hibernate_case_when ordered
SELECT sum(case when o1_0.gift then 1 else 0 end), sum(case when o1_0.gift is null then 1 else 0 end) FROM orders o1_0

-- q: orm.hibernate_coalesce_agg ordered
SELECT coalesce(sum(o1_0.discount), 0), coalesce(max(o1_0.note), 'none') FROM orders o1_0 WHERE o1_0.customer_id = 355

-- q: orm.hibernate_in_params args=pending,paid,shipped
SELECT count(*) FROM orders o1_0 WHERE o1_0.status in ($1, $2, $3)

-- q: orm.hibernate_member_of
SELECT c1_0.id FROM customers c1_0 WHERE exists (select 1 from orders o1_0 where o1_0.customer_id = c1_0.id and o1_0.total < 0) AND c1_0.tier = 1

-- q: orm.activerecord_find ordered args=100,1
SELECT "customers".* FROM "customers" WHERE "customers"."id" = $1 LIMIT $2

-- q: orm.activerecord_where_in
SELECT "orders".* FROM "orders" WHERE "orders"."customer_id" IN (1, 9) AND "orders"."status" = 'paid'

-- q: orm.activerecord_order_limit ordered args=5
SELECT "orders".* FROM "orders" ORDER BY "orders"."id" DESC LIMIT $1

-- q: orm.activerecord_first ordered
SELECT "products".* FROM "products" ORDER BY "products"."sku" ASC LIMIT 1

-- q: orm.activerecord_pluck
SELECT "customers"."email" FROM "customers" WHERE "customers"."tier" = 4

-- q: orm.activerecord_count_distinct ordered
SELECT COUNT(DISTINCT "orders"."customer_id") FROM "orders"

-- q: orm.activerecord_group_count ordered
SELECT COUNT(*) AS "count_all", "orders"."currency" AS "orders_currency" FROM "orders" GROUP BY "orders"."currency" ORDER BY "orders"."currency" NULLS FIRST

-- q: orm.activerecord_sum_where ordered
SELECT SUM("items"."qty") FROM "items" WHERE "items"."customer_id" = 42

-- q: orm.activerecord_exists ordered
SELECT 1 AS one FROM "customers" WHERE "customers"."name" = 'Zed' LIMIT 1

-- q: orm.activerecord_includes args=3,7
SELECT "items".* FROM "items" WHERE "items"."customer_id" IN ($1, $2)

-- q: orm.activerecord_minimum ordered
SELECT MIN("products"."price") FROM "products" WHERE "products"."discontinued" = FALSE

-- q: orm.activerecord_joins_distinct
SELECT DISTINCT "customers"."id" FROM "customers" INNER JOIN "orders" ON "orders"."customer_id" = "customers"."id" WHERE "orders"."total" > 4800

-- q: orm.pgjdbc_any_param ordered args={1;3;9}
SELECT id, name FROM customers WHERE id = ANY($1) ORDER BY id

-- q: orm.pgjdbc_text_array_param args={paid;pending}
SELECT count(*) FROM orders WHERE status = ANY($1::text[])

-- q: orm.count_over_paginate ordered
SELECT id, total, count(*) OVER () AS full_count FROM orders WHERE status = 'cancelled' ORDER BY total DESC, id LIMIT 5 OFFSET 5

-- q: orm.count_over_pinned ordered
SELECT id, count(*) OVER () FROM orders WHERE customer_id = 7 ORDER BY id LIMIT 3

-- ===================================================================
-- Aggregates as the regression tests write them (aggregates.sql,
-- sqllogictest): FILTER, ordered aggregates, ordered-set aggregates,
-- boolean and bit aggregates, statistics over exact types, grouping
-- sets, ROLLUP and CUBE with GROUPING().
-- ===================================================================

-- q: agg2.filter_count ordered
SELECT count(*) FILTER (WHERE status = 'paid') AS paid, count(*) FILTER (WHERE total < 0) AS neg, count(*) AS n FROM orders

-- q: agg2.filter_sum_group ordered
SELECT status, sum(total) FILTER (WHERE gift), sum(total) FILTER (WHERE NOT gift), count(note) FILTER (WHERE note ILIKE '%door%') FROM orders GROUP BY status ORDER BY status

-- q: agg2.filter_min_max ordered
SELECT min(placed_at) FILTER (WHERE currency = 'EUR'), max(ship_date) FILTER (WHERE currency IS NULL) FROM orders

-- q: agg2.filter_avg ordered
SELECT currency, avg(total) FILTER (WHERE qty > 10), avg(qty) FILTER (WHERE total > 0) FROM orders GROUP BY currency ORDER BY currency NULLS FIRST

-- q: agg2.filter_having ordered
SELECT customer_id FROM orders GROUP BY customer_id HAVING count(*) FILTER (WHERE status = 'cancelled') >= 4 ORDER BY customer_id

-- q: agg2.string_agg_ordered ordered
SELECT customer_id, string_agg(status, ',' ORDER BY id) FROM orders WHERE customer_id IN (1, 2, 3, 9) GROUP BY customer_id ORDER BY customer_id

-- q: agg2.string_agg_scatter ordered
SELECT string_agg(code, ';' ORDER BY code) FROM countries

-- q: agg2.string_agg_sharded_total ordered
SELECT string_agg(id::text, ',' ORDER BY id) FROM customers WHERE id BETWEEN 1 AND 40

-- q: agg2.string_agg_group_scatter ordered
SELECT tier, string_agg(name, '|' ORDER BY id) FROM customers WHERE id BETWEEN 1 AND 60 GROUP BY tier ORDER BY tier NULLS LAST

-- q: agg2.string_agg_desc ordered
SELECT status, string_agg(DISTINCT currency, ',' ORDER BY currency DESC) FROM orders GROUP BY status ORDER BY status

-- q: agg2.array_agg_ordered ordered
SELECT tier, array_agg(id ORDER BY id) FROM customers WHERE id < 50 GROUP BY tier ORDER BY tier NULLS FIRST

-- q: agg2.array_agg_distinct ordered
SELECT array_agg(DISTINCT status ORDER BY status) FROM orders

-- q: agg2.array_agg_nulls ordered
SELECT array_agg(tier ORDER BY id) FROM customers WHERE id BETWEEN 1 AND 25

-- q: agg2.array_agg_pinned ordered
SELECT array_agg(id ORDER BY placed_at, id) FROM orders WHERE customer_id = 9

-- q: agg2.json_agg_ordered ordered
SELECT json_agg(code ORDER BY code) FROM currencies

-- q: agg2.jsonb_agg_sharded ordered
SELECT jsonb_agg(id ORDER BY id) FROM customers WHERE tier = 5 AND id < 100

-- q: agg2.jsonb_object_agg ordered
SELECT jsonb_object_agg(k, v) FROM settings WHERE v IS NOT NULL

-- q: agg2.percentile_cont ordered
SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY total) FROM orders

-- q: agg2.percentile_cont_group ordered
SELECT status, percentile_cont(0.25) WITHIN GROUP (ORDER BY weight), percentile_disc(0.75) WITHIN GROUP (ORDER BY total) FROM orders GROUP BY status ORDER BY status

-- q: agg2.percentile_disc_array ordered
SELECT percentile_disc(ARRAY[0.1, 0.5, 0.9]) WITHIN GROUP (ORDER BY qty) FROM orders

-- q: agg2.mode ordered
SELECT mode() WITHIN GROUP (ORDER BY status) FROM orders

-- q: agg2.rank_hypothetical ordered
SELECT rank(1000) WITHIN GROUP (ORDER BY total), dense_rank(1000) WITHIN GROUP (ORDER BY total) FROM orders

-- q: agg2.bool_and_or ordered
SELECT bool_and(total > -100), bool_or(gift), every(qty > 0) FROM orders

-- q: agg2.bool_group ordered
SELECT status, bool_and(gift), bool_or(note IS NULL) FROM orders GROUP BY status ORDER BY status

-- q: agg2.bit_and_or ordered
SELECT bit_and(qty), bit_or(qty), bit_and(tier), bit_or(tier) FROM orders, (SELECT 1::smallint AS tier) t

-- q: agg2.bit_or_group ordered
SELECT tier, bit_or(id::int), bit_and(id::int) FROM customers WHERE id BETWEEN 1 AND 360 GROUP BY tier ORDER BY tier NULLS FIRST

-- q: agg2.stddev_numeric ordered
SELECT stddev(total), variance(total), stddev_pop(total), var_pop(total) FROM orders

-- q: agg2.stddev_int_group ordered
SELECT status, stddev_samp(qty), var_samp(qty) FROM orders GROUP BY status ORDER BY status

-- q: agg2.count_distinct_two ordered
SELECT count(DISTINCT status), count(DISTINCT currency), count(DISTINCT (status, currency)) FROM orders

-- q: agg2.sum_distinct ordered
SELECT sum(DISTINCT qty), avg(DISTINCT qty), count(DISTINCT qty) FROM orders

-- q: agg2.avg_numeric_scale ordered
SELECT avg(balance), avg(credit), sum(credit) FROM customers WHERE credit <> 'NaN' AND id BETWEEN 1 AND 360

-- q: agg2.avg_int_types ordered
SELECT avg(tier), sum(tier), avg(qty), sum(qty::bigint), avg(id) FROM customers, (SELECT 1 AS qty) q WHERE id BETWEEN 1 AND 360

-- q: agg2.min_max_text ordered
SELECT min(name), max(name), min(email), max(nick), min(code), max(code) FROM customers

-- q: agg2.min_max_misc ordered
SELECT min(ext_id::text), max(born), min(session), max(session), min(signup), max(last_seen) FROM customers WHERE id BETWEEN 1 AND 360

-- q: agg2.min_max_arrays ordered
SELECT min(tags), max(tags) FROM customers

-- q: agg2.aggregate_expression ordered
SELECT sum(total * qty), sum(total) / nullif(count(*), 0), max(total) - min(total), round(avg(total), 3) FROM orders

-- q: agg2.aggregate_of_case ordered
SELECT sum(CASE status WHEN 'paid' THEN total ELSE 0 END), count(CASE WHEN gift THEN 1 END) FROM orders

-- q: agg2.aggregate_coalesce ordered
SELECT coalesce(sum(discount), 0), coalesce(min(weight), -1), count(coalesce(note, '')) FROM orders

-- q: agg2.empty_aggregates ordered
SELECT count(*), sum(total), avg(total), min(id), max(note), bool_and(gift), string_agg(note, ','), array_agg(id) FROM orders WHERE id < 0

-- q: agg2.empty_group
SELECT status, count(*) FROM orders WHERE id < 0 GROUP BY status

-- q: agg2.grouping_sets keys=1,2
SELECT status, currency, count(*) FROM orders GROUP BY GROUPING SETS ((status), (currency), ()) ORDER BY status NULLS LAST, currency NULLS LAST

-- q: agg2.rollup
SELECT status, gift, count(*), sum(total) FROM orders GROUP BY ROLLUP (status, gift)

-- q: agg2.rollup_grouping
SELECT status, gift, grouping(status, gift) AS g, count(*) FROM orders GROUP BY ROLLUP (status, gift)

-- q: agg2.cube
SELECT currency, gift, count(*) FROM orders GROUP BY CUBE (currency, gift)

-- q: agg2.cube_having
SELECT status, currency, sum(qty) FROM orders GROUP BY CUBE (status, currency) HAVING sum(qty) > 500

-- q: agg2.grouping_sets_pinned
SELECT status, currency, count(*) FROM orders WHERE customer_id = 42 GROUP BY GROUPING SETS ((status, currency), ())

-- q: agg2.group_by_ordinal_expr ordered
SELECT extract(year FROM placed_at) AS y, count(*), sum(total) FROM orders GROUP BY 1 ORDER BY 1

-- q: agg2.group_by_expression_not_selected
SELECT count(*) FROM orders GROUP BY status, currency

-- q: agg2.group_by_bool ordered
SELECT total > 0 AS pos, count(*) FROM orders GROUP BY total > 0 ORDER BY 1

-- q: agg2.group_by_date_trunc ordered
SELECT date_trunc('quarter', ship_date)::date AS q, count(*) FROM orders GROUP BY 1 ORDER BY 1 NULLS FIRST

-- q: agg2.group_by_jsonb
SELECT prefs -> 'beta' AS beta, count(*) FROM customers GROUP BY prefs -> 'beta'

-- q: agg2.group_by_array
SELECT tags, count(*) FROM customers GROUP BY tags

-- q: agg2.group_by_interval
SELECT date_trunc('hour', session) AS h, count(*) FROM customers GROUP BY 1

-- q: agg2.group_by_uuid_null
SELECT ext_id IS NULL AS missing, count(*) FROM customers GROUP BY 1

-- q: agg2.group_by_bytea
SELECT length(avatar) AS len, count(*) FROM customers GROUP BY length(avatar)

-- q: agg2.having_no_group ordered
SELECT count(*) FROM orders HAVING count(*) > 10

-- q: agg2.having_false_no_group
SELECT count(*) FROM orders HAVING count(*) < 0

-- q: agg2.having_aggregate_not_selected ordered
SELECT status FROM orders GROUP BY status HAVING sum(total) > 10000 AND min(total) < 0 ORDER BY status

-- q: agg2.having_or ordered
SELECT currency, count(*) FROM orders GROUP BY currency HAVING count(*) > 300 OR currency IS NULL ORDER BY currency NULLS FIRST

-- q: agg2.order_by_aggregate ordered
SELECT customer_id, count(*) AS n FROM orders GROUP BY customer_id ORDER BY n DESC, customer_id LIMIT 10

-- q: agg2.order_by_aggregate_not_selected ordered
SELECT status FROM orders GROUP BY status ORDER BY max(total) DESC

-- q: agg2.group_limit_offset ordered
SELECT customer_id, sum(total) FROM orders GROUP BY customer_id ORDER BY customer_id LIMIT 5 OFFSET 100

-- q: agg2.nested_aggregate_subquery ordered
SELECT max(n), min(n), avg(n) FROM (SELECT customer_id, count(*) AS n FROM orders GROUP BY customer_id) s

-- q: agg2.aggregate_over_join ordered
SELECT c.tier, count(o.id), sum(o.total) FROM customers c JOIN orders o ON o.customer_id = c.id GROUP BY c.tier ORDER BY c.tier NULLS FIRST

-- q: agg2.aggregate_over_reference_join ordered
SELECT k.region, count(*) FROM customers c JOIN countries k ON k.code = c.country GROUP BY k.region ORDER BY k.region NULLS FIRST

-- q: agg2.count_star_vs_col ordered
SELECT count(*), count(email), count(tier), count(DISTINCT tier), count(prefs), count(tags) FROM customers

-- q: agg2.float_aggregates ordered
SELECT sum(weight), max(weight), min(weight), avg(weight) FROM orders WHERE weight <> 'NaN'

-- q: agg2.float_nan_aggregates ordered
SELECT sum(weight), max(weight), min(weight) FROM orders

-- q: agg2.real_aggregates ordered
SELECT sum(rating), avg(rating), max(rating), min(rating) FROM customers WHERE id BETWEEN 1 AND 360

-- q: agg2.corr_regr_exact ordered
SELECT regr_count(qty, total), covar_pop(qty::numeric, qty::numeric) IS NOT NULL FROM orders

-- q: agg2.param_filter ordered args=100
SELECT count(*) FILTER (WHERE total > $1), sum(total) FILTER (WHERE total <= $1) FROM orders

-- q: agg2.param_group_having ordered args=paid,20
SELECT customer_id, count(*) FROM orders WHERE status = $1 GROUP BY customer_id HAVING count(*) > $2 ORDER BY customer_id

-- q: agg2.items_revenue ordered
SELECT sku, sum(qty * price) AS revenue FROM items GROUP BY sku ORDER BY revenue DESC NULLS LAST, sku LIMIT 10

-- q: agg2.products_by_category ordered
SELECT category, count(*), min(price), max(price), sum(stock), avg(weight) FROM products GROUP BY category ORDER BY category NULLS FIRST

-- q: agg2.products_discontinued ordered
SELECT discontinued, count(*), count(released), max(released) FROM products GROUP BY discontinued ORDER BY discontinued

-- ===================================================================
-- Window functions (window.sql of the regression tests): ranking,
-- offsets, frames (ROWS, RANGE, GROUPS, EXCLUDE), named windows, windows
-- over aggregates, and windows below LIMIT.
-- ===================================================================

-- q: win2.row_number_global ordered
SELECT id, row_number() OVER (ORDER BY id) FROM customers WHERE id BETWEEN 1 AND 30 ORDER BY id

-- q: win2.row_number_partition ordered
SELECT customer_id, id, row_number() OVER (PARTITION BY customer_id ORDER BY id) AS rn FROM orders WHERE customer_id < 20 ORDER BY customer_id, id

-- q: win2.rank_dense_rank ordered
SELECT id, status, rank() OVER w, dense_rank() OVER w, percent_rank() OVER w, cume_dist() OVER w
FROM orders WHERE customer_id IN (3, 9) WINDOW w AS (ORDER BY status) ORDER BY status, id

-- q: win2.ntile ordered
SELECT id, ntile(4) OVER (ORDER BY id) FROM customers WHERE id BETWEEN 100 AND 120 ORDER BY id

-- q: win2.lag_lead ordered
SELECT id, total, lag(total) OVER (ORDER BY id), lead(total, 2, 0) OVER (ORDER BY id) FROM orders WHERE customer_id = 42 ORDER BY id

-- q: win2.lag_lead_scatter ordered
SELECT id, lag(id) OVER (ORDER BY id), lead(id) OVER (ORDER BY id) FROM customers WHERE id BETWEEN 1 AND 50 ORDER BY id

-- q: win2.first_last_value ordered
SELECT customer_id, id, first_value(id) OVER (PARTITION BY customer_id ORDER BY id), last_value(id) OVER (PARTITION BY customer_id ORDER BY id ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)
FROM orders WHERE customer_id BETWEEN 1 AND 15 ORDER BY customer_id, id

-- q: win2.nth_value ordered
SELECT id, nth_value(id, 3) OVER (ORDER BY id ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) FROM customers WHERE id BETWEEN 1 AND 10 ORDER BY id

-- q: win2.running_sum ordered
SELECT id, total, sum(total) OVER (ORDER BY id) AS running FROM orders WHERE customer_id = 7 ORDER BY id

-- q: win2.running_sum_scatter ordered
SELECT id, sum(id) OVER (ORDER BY id) FROM customers WHERE id BETWEEN 1 AND 40 ORDER BY id

-- q: win2.moving_avg_rows ordered
SELECT id, avg(total) OVER (ORDER BY id ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) FROM orders WHERE customer_id = 3 ORDER BY id

-- q: win2.range_offset ordered
SELECT id, count(*) OVER (ORDER BY id RANGE BETWEEN 5 PRECEDING AND 5 FOLLOWING) FROM customers WHERE id BETWEEN 1 AND 40 ORDER BY id

-- q: win2.range_interval ordered
SELECT id, placed_at, count(*) OVER (ORDER BY placed_at RANGE BETWEEN '30 days' PRECEDING AND CURRENT ROW) FROM orders WHERE customer_id = 42 ORDER BY placed_at, id

-- q: win2.groups_frame ordered
SELECT id, status, count(*) OVER (ORDER BY status GROUPS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM orders WHERE customer_id = 9 ORDER BY status, id

-- q: win2.exclude_current ordered
SELECT id, sum(id) OVER (ORDER BY id ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING EXCLUDE CURRENT ROW) FROM customers WHERE id BETWEEN 1 AND 20 ORDER BY id

-- q: win2.exclude_ties ordered
SELECT id, tier, count(*) OVER (ORDER BY tier RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW EXCLUDE TIES) FROM customers WHERE id BETWEEN 1 AND 30 ORDER BY tier, id

-- q: win2.partition_count ordered
SELECT DISTINCT status, count(*) OVER (PARTITION BY status) FROM orders ORDER BY status

-- q: win2.partition_sum_no_order
SELECT customer_id, id, sum(total) OVER (PARTITION BY customer_id) FROM orders WHERE customer_id IN (1, 2, 3, 9, 100)

-- q: win2.over_empty
SELECT id, count(*) OVER (), sum(total) OVER () FROM orders WHERE customer_id IN (1, 2, 100)

-- q: win2.over_aggregate ordered
SELECT status, count(*), sum(count(*)) OVER (ORDER BY status), rank() OVER (ORDER BY count(*) DESC) FROM orders GROUP BY status ORDER BY status

-- q: win2.over_aggregate_share ordered
SELECT currency, sum(total), round(sum(total) * 100 / sum(sum(total)) OVER (), 4) AS pct FROM orders GROUP BY currency ORDER BY currency NULLS FIRST

-- q: win2.top_n_per_group ordered
SELECT customer_id, id, total FROM (SELECT customer_id, id, total, row_number() OVER (PARTITION BY customer_id ORDER BY total DESC, id) AS rn FROM orders) s
WHERE rn <= 2 AND customer_id < 30 ORDER BY customer_id, rn

-- q: win2.top_n_global ordered
SELECT id, total FROM (SELECT id, total, rank() OVER (ORDER BY total DESC) AS r FROM orders) s WHERE r <= 5 ORDER BY total DESC, id

-- q: win2.window_then_limit ordered
SELECT id, row_number() OVER (ORDER BY name, id) FROM customers ORDER BY name, id LIMIT 10

-- q: win2.window_filter ordered
SELECT status, id, count(*) FILTER (WHERE gift) OVER (PARTITION BY status) FROM orders WHERE customer_id = 3 ORDER BY status, id

-- q: win2.window_text_agg ordered
SELECT id, string_agg(name, ',') OVER (ORDER BY id ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) FROM customers WHERE id BETWEEN 1 AND 12 ORDER BY id

-- q: win2.window_two_partitions ordered
SELECT id, row_number() OVER (PARTITION BY tier ORDER BY id), count(*) OVER (PARTITION BY active) FROM customers WHERE id BETWEEN 1 AND 40 ORDER BY id

-- q: win2.window_param ordered args=3
SELECT id, total, sum(total) OVER (ORDER BY id) FROM orders WHERE customer_id = $1 ORDER BY id

-- q: win2.window_in_cte ordered
WITH r AS (SELECT customer_id, total, dense_rank() OVER (ORDER BY total DESC) AS d FROM orders) SELECT customer_id, total, d FROM r WHERE d <= 3 ORDER BY d, customer_id

-- q: win2.window_products ordered
SELECT category, sku, price, rank() OVER (PARTITION BY category ORDER BY price DESC NULLS LAST) FROM products WHERE category IN ('books', 'toys') ORDER BY category, 4, sku

-- q: win2.window_cume_items ordered
SELECT order_id, line, sum(qty) OVER (PARTITION BY order_id ORDER BY line) FROM items WHERE customer_id = 7 ORDER BY order_id, line

-- q: win2.window_lag_date ordered
SELECT id, ship_date, ship_date - lag(ship_date) OVER (ORDER BY id) AS gap FROM orders WHERE customer_id = -42 ORDER BY id

-- q: win2.window_over_join ordered
SELECT c.id, o.id, row_number() OVER (PARTITION BY c.id ORDER BY o.id) FROM customers c JOIN orders o ON o.customer_id = c.id WHERE c.id IN (1, 2) ORDER BY c.id, o.id

-- q: win2.window_desc_nulls ordered
SELECT id, tier, rank() OVER (ORDER BY tier DESC NULLS LAST) FROM customers WHERE id BETWEEN 200 AND 230 ORDER BY 3, id

-- q: win2.window_min_max_frame ordered
SELECT id, min(total) OVER w, max(total) OVER w FROM orders WHERE customer_id = 42 WINDOW w AS (ORDER BY id ROWS BETWEEN 3 PRECEDING AND 3 FOLLOWING) ORDER BY id

-- q: win2.window_following_only ordered
SELECT id, sum(id) OVER (ORDER BY id ROWS BETWEEN 1 FOLLOWING AND 3 FOLLOWING) FROM customers WHERE id BETWEEN 1 AND 15 ORDER BY id

-- q: win2.window_named_inherit ordered
SELECT id, sum(total) OVER (w ROWS 2 PRECEDING) FROM orders WHERE customer_id = 9 WINDOW w AS (ORDER BY id) ORDER BY id

-- q: win2.window_count_over_distinct ordered
SELECT count(*) OVER (), status FROM (SELECT DISTINCT status FROM orders) s ORDER BY status

-- ===================================================================
-- Set operations, VALUES lists, generate_series joins and LATERAL
-- (union.sql, join.sql, sqllogictest select*.test shapes).
-- ===================================================================

-- q: set2.union_distinct
SELECT country FROM customers UNION SELECT code FROM countries

-- q: set2.union_all_count ordered
SELECT count(*) FROM (SELECT id FROM customers UNION ALL SELECT customer_id FROM orders) s

-- q: set2.union_ordered ordered
SELECT id, 'c' AS kind FROM customers WHERE id < 5 UNION ALL SELECT id, 'o' FROM orders WHERE id < 5 ORDER BY 2, 1

-- q: set2.union_limit ordered
SELECT status AS v FROM orders UNION SELECT currency FROM orders ORDER BY v NULLS FIRST LIMIT 4

-- q: set2.intersect
SELECT customer_id FROM orders WHERE status = 'paid' INTERSECT SELECT customer_id FROM orders WHERE status = 'cancelled'

-- q: set2.intersect_all
SELECT status FROM orders WHERE customer_id = 3 INTERSECT ALL SELECT status FROM orders WHERE customer_id = 42

-- q: set2.except
SELECT id FROM customers EXCEPT SELECT customer_id FROM orders

-- q: set2.except_all
SELECT status FROM orders WHERE customer_id = 42 EXCEPT ALL SELECT status FROM orders WHERE customer_id = 7

-- q: set2.except_reference
SELECT code FROM countries EXCEPT SELECT country FROM customers

-- q: set2.union_pinned_both ordered
SELECT id, total FROM orders WHERE customer_id = 7 UNION SELECT id, total FROM orders WHERE customer_id = 42 ORDER BY id

-- q: set2.union_of_aggregates
SELECT 'orders' AS t, count(*) FROM orders UNION ALL SELECT 'customers', count(*) FROM customers UNION ALL SELECT 'items', count(*) FROM items

-- q: set2.union_nested_parens ordered
(SELECT id FROM customers WHERE id < 4 UNION SELECT id FROM customers WHERE id BETWEEN 3 AND 6) EXCEPT SELECT 5 ORDER BY 1

-- q: set2.union_types
SELECT tier::numeric AS v FROM customers WHERE id < 4 UNION SELECT total FROM orders WHERE customer_id = 2

-- q: set2.union_null_literals
SELECT NULL::text AS a, status FROM orders WHERE customer_id = 1 UNION SELECT name, NULL FROM customers WHERE id = 1

-- q: set2.union_in_subquery
SELECT count(*) FROM customers WHERE id IN (SELECT customer_id FROM orders WHERE status = 'paid' UNION SELECT customer_id FROM items WHERE qty = 5)

-- q: set2.union_in_cte ordered
WITH u AS (SELECT customer_id FROM orders WHERE total > 4900 UNION SELECT id FROM customers WHERE tier = 5) SELECT count(*) FROM u

-- q: set2.intersect_products
SELECT lower(sku) FROM items INTERSECT SELECT lower(sku) FROM products WHERE price > 190

-- q: set2.union_all_group ordered
SELECT k, count(*) FROM (SELECT status AS k FROM orders UNION ALL SELECT category FROM products) s GROUP BY k ORDER BY k NULLS FIRST

-- q: set2.union_all_param args=7,9
SELECT id FROM orders WHERE customer_id = $1 UNION ALL SELECT id FROM orders WHERE customer_id = $2

-- q: set2.values_plain ordered
VALUES (1, 'one'), (2, 'two'), (3, NULL)

-- q: set2.values_order_limit ordered
VALUES (3), (1), (2) ORDER BY 1 DESC LIMIT 2

-- q: set2.values_join ordered
SELECT v.id, c.name FROM (VALUES (1), (2), (9), (100), (99999)) v(id) LEFT JOIN customers c ON c.id = v.id ORDER BY v.id

-- q: set2.values_join_inner
SELECT v.s, count(o.id) FROM (VALUES ('paid'), ('shipped'), ('nope')) v(s) JOIN orders o ON o.status = v.s GROUP BY v.s

-- q: set2.values_in
SELECT id FROM customers WHERE (id, tier) IN (VALUES (1::bigint, 1::smallint), (2, 2), (3, 3), (4, 4), (5, 5))

-- q: set2.values_in_list
SELECT count(*) FROM orders WHERE status IN (VALUES ('paid'), ('pending'))

-- q: set2.values_cte ordered
WITH v(k, label) AS (VALUES ('paid', 'P'), ('pending', 'W')) SELECT v.label, count(*) FROM orders o JOIN v ON v.k = o.status GROUP BY v.label ORDER BY v.label

-- q: set2.values_union ordered
SELECT * FROM (VALUES (1), (2)) a(x) UNION SELECT tier FROM customers WHERE tier IS NOT NULL ORDER BY 1

-- q: set2.gs_join ordered
SELECT g, c.name FROM generate_series(1, 10) g JOIN customers c ON c.id = g ORDER BY g

-- q: set2.gs_left_join_counts ordered
SELECT g, count(o.id) FROM generate_series(1, 12) g LEFT JOIN orders o ON o.customer_id = g GROUP BY g ORDER BY g

-- q: set2.gs_dates ordered
SELECT d::date, count(o.id) FROM generate_series('2021-03-01'::timestamp, '2021-03-10', '1 day') d
LEFT JOIN orders o ON o.ship_date = d::date GROUP BY d ORDER BY d

-- q: set2.gs_months ordered
SELECT m::date AS month, (SELECT count(*) FROM orders WHERE placed_at >= m AND placed_at < m + interval '1 month') AS n
FROM generate_series('2022-01-01'::timestamptz, '2022-06-01', '1 month') m ORDER BY m

-- q: set2.gs_cross_reference ordered
SELECT g, k.code FROM generate_series(1, 2) g CROSS JOIN countries k WHERE k.code < 'c' ORDER BY g, k.code

-- q: set2.gs_in_where
SELECT id FROM customers WHERE id IN (SELECT generate_series(5, 15))

-- q: set2.gs_ordinality ordered
SELECT * FROM generate_series(10, 30, 10) WITH ORDINALITY AS t(v, n)

-- q: set2.unnest_join ordered
SELECT u, c.name FROM unnest(ARRAY[3, 1, 2]::bigint[]) WITH ORDINALITY AS x(u, n) JOIN customers c ON c.id = x.u ORDER BY x.n

-- q: set2.unnest_tags
SELECT t, count(*) FROM customers, unnest(tags) t GROUP BY t

-- q: set2.lateral_top_per_customer ordered
SELECT c.id, o.id, o.total FROM customers c, LATERAL (SELECT id, total FROM orders WHERE customer_id = c.id ORDER BY total DESC, id LIMIT 2) o
WHERE c.id < 15 ORDER BY c.id, o.total DESC, o.id

-- q: set2.lateral_left_count ordered
SELECT c.id, x.n FROM customers c LEFT JOIN LATERAL (SELECT count(*) AS n FROM orders o WHERE o.customer_id = c.id) x ON true WHERE c.id BETWEEN 345 AND 360 ORDER BY c.id

-- q: set2.lateral_function
SELECT c.id, e.key, e.value FROM customers c, LATERAL jsonb_each_text(c.prefs) e WHERE c.id < 30

-- q: set2.lateral_gs ordered
SELECT o.id, g FROM orders o, LATERAL generate_series(1, o.qty) g WHERE o.customer_id = 2 AND o.qty < 4 ORDER BY o.id, g

-- q: set2.lateral_reference ordered
SELECT k.code, x.n FROM countries k, LATERAL (SELECT count(*) AS n FROM customers c WHERE c.country = k.code) x ORDER BY k.code

-- q: set2.lateral_pinned ordered args=42
SELECT o.id, x.lines FROM orders o, LATERAL (SELECT count(*) AS lines FROM items i WHERE i.order_id = o.id AND i.customer_id = o.customer_id) x
WHERE o.customer_id = $1 ORDER BY o.id

-- q: set2.lateral_values ordered
SELECT c.id, v.k, v.val FROM customers c, LATERAL (VALUES ('tier', c.tier::text), ('nick', c.nick)) v(k, val) WHERE c.id IN (1, 2) ORDER BY c.id, v.k

-- q: set2.cross_join_small ordered
SELECT a.code, b.code FROM currencies a CROSS JOIN currencies b WHERE a.code < b.code AND a.minor = b.minor ORDER BY 1, 2

-- q: set2.full_join_reference
SELECT k.code, c.id FROM countries k FULL JOIN customers c ON c.country = k.code WHERE c.id IS NULL OR c.id < 20

-- q: set2.right_join ordered
SELECT c.id, o.id FROM orders o RIGHT JOIN customers c ON c.id = o.customer_id WHERE c.id BETWEEN 350 AND 355 ORDER BY c.id, o.id

-- q: set2.join_using ordered
SELECT customer_id, count(*) FROM orders JOIN items USING (customer_id) WHERE customer_id IN (1, 2) GROUP BY customer_id ORDER BY customer_id

-- q: set2.natural_join
SELECT count(*) FROM orders NATURAL JOIN (SELECT customer_id, id FROM orders WHERE status = 'paid') p

-- q: set2.self_join_colocated
SELECT a.id, b.id FROM orders a JOIN orders b ON a.customer_id = b.customer_id AND a.id < b.id AND a.total = b.total

-- q: set2.join_three_colocated ordered
SELECT c.id, count(DISTINCT o.id), count(i.line) FROM customers c JOIN orders o ON o.customer_id = c.id JOIN items i ON i.customer_id = o.customer_id AND i.order_id = o.id
WHERE c.id < 10 GROUP BY c.id ORDER BY c.id

-- q: set2.anti_join_left
SELECT c.id FROM customers c LEFT JOIN orders o ON o.customer_id = c.id WHERE o.id IS NULL

-- q: set2.semi_join_reference ordered
SELECT code FROM countries k WHERE EXISTS (SELECT 1 FROM customers c WHERE c.country = k.code AND c.tier = 5) ORDER BY code

-- ===================================================================
-- Subqueries (subselect.sql): correlated and uncorrelated, EXISTS and
-- NOT EXISTS, IN and NOT IN with NULLs, ANY/ALL, scalar subqueries in
-- the target list, WHERE, HAVING and ORDER BY, CTEs (recursive too).
-- ===================================================================

-- q: sub2.exists_correlated_colocated
SELECT c.id FROM customers c WHERE EXISTS (SELECT 1 FROM orders o WHERE o.customer_id = c.id AND o.total > 4800)

-- q: sub2.not_exists_correlated ordered
SELECT c.id FROM customers c WHERE NOT EXISTS (SELECT 1 FROM orders o WHERE o.customer_id = c.id) ORDER BY c.id

-- q: sub2.exists_uncorrelated_true
SELECT count(*) FROM customers WHERE EXISTS (SELECT 1 FROM orders WHERE total > 4000)

-- q: sub2.exists_uncorrelated_false
SELECT count(*) FROM customers WHERE EXISTS (SELECT 1 FROM orders WHERE total > 1000000)

-- q: sub2.exists_reference_correlated
SELECT c.id FROM customers c WHERE EXISTS (SELECT 1 FROM countries k WHERE k.code = c.country AND k.region = 'Asia')

-- q: sub2.in_uncorrelated_scatter
SELECT id, name FROM customers WHERE id IN (SELECT customer_id FROM orders WHERE total > 4950)

-- q: sub2.in_reference
SELECT id FROM customers WHERE country IN (SELECT code FROM countries WHERE vat > 20)

-- q: sub2.not_in_with_nulls
SELECT count(*) FROM customers WHERE tier NOT IN (SELECT tier FROM customers WHERE id < 10)

-- q: sub2.not_in_without_nulls
SELECT count(*) FROM customers WHERE tier NOT IN (SELECT tier FROM customers WHERE id < 10 AND tier IS NOT NULL)

-- q: sub2.not_in_scatter_keys
SELECT count(*) FROM customers WHERE id NOT IN (SELECT customer_id FROM orders)

-- q: sub2.in_correlated
SELECT o.id FROM orders o WHERE o.customer_id IN (1, 2, 3) AND o.id IN (SELECT i.order_id FROM items i WHERE i.customer_id = o.customer_id AND i.qty = 5)

-- q: sub2.any_subquery
SELECT id FROM customers WHERE id = ANY (SELECT customer_id FROM orders WHERE status = 'cancelled' AND total > 4500)

-- q: sub2.all_subquery ordered
SELECT id, total FROM orders WHERE total >= ALL (SELECT total FROM orders) ORDER BY id

-- q: sub2.all_subquery_empty
SELECT count(*) FROM orders WHERE total > ALL (SELECT total FROM orders WHERE id < 0)

-- q: sub2.gt_any ordered
SELECT count(*) FROM products WHERE price > ANY (SELECT price FROM items WHERE customer_id = 42)

-- q: sub2.scalar_max ordered
SELECT id, total FROM orders WHERE total = (SELECT max(total) FROM orders) ORDER BY id

-- q: sub2.scalar_avg_compare
SELECT count(*) FROM orders WHERE total > (SELECT avg(total) FROM orders)

-- q: sub2.scalar_in_target ordered
SELECT (SELECT count(*) FROM orders) AS o, (SELECT count(*) FROM customers) AS c, (SELECT max(price) FROM products) AS p

-- q: sub2.scalar_correlated_target ordered
SELECT c.id, (SELECT max(o.total) FROM orders o WHERE o.customer_id = c.id) AS top FROM customers c WHERE c.id BETWEEN 1 AND 20 ORDER BY c.id

-- q: sub2.scalar_correlated_reference ordered
SELECT k.code, (SELECT count(*) FROM customers c WHERE c.country = k.code) FROM countries k ORDER BY k.code

-- q: sub2.scalar_in_having ordered
SELECT status, count(*) FROM orders GROUP BY status HAVING count(*) > (SELECT count(*) / 6 FROM orders) ORDER BY status

-- q: sub2.scalar_in_order_by ordered
SELECT id, name FROM customers WHERE id < 20 ORDER BY (SELECT count(*) FROM orders o WHERE o.customer_id = customers.id) DESC, id

-- q: sub2.derived_aggregate_join ordered
SELECT c.tier, avg(s.n) FROM customers c JOIN (SELECT customer_id, count(*) AS n FROM orders GROUP BY customer_id) s ON s.customer_id = c.id GROUP BY c.tier ORDER BY c.tier NULLS FIRST

-- q: sub2.derived_distinct
SELECT count(*) FROM (SELECT DISTINCT customer_id, status FROM orders) s

-- q: sub2.derived_limit ordered
SELECT * FROM (SELECT id, total FROM orders ORDER BY total DESC, id LIMIT 10) t ORDER BY id

-- q: sub2.derived_union_aggregate ordered
SELECT sum(n) FROM (SELECT count(*) AS n FROM orders UNION ALL SELECT count(*) FROM items) s

-- q: sub2.exists_in_case ordered
SELECT id, CASE WHEN EXISTS (SELECT 1 FROM orders o WHERE o.customer_id = c.id AND o.status = 'paid') THEN 'payer' ELSE 'other' END FROM customers c WHERE id BETWEEN 1 AND 15 ORDER BY id

-- q: sub2.cte_simple ordered
WITH big AS (SELECT customer_id, total FROM orders WHERE total > 4900) SELECT count(*), max(total) FROM big

-- q: sub2.cte_twice ordered
WITH s AS (SELECT status, count(*) AS n FROM orders GROUP BY status) SELECT a.status, a.n, b.n FROM s a JOIN s b ON a.status = b.status ORDER BY a.status

-- q: sub2.cte_chain ordered
WITH a AS (SELECT customer_id, sum(total) AS t FROM orders GROUP BY customer_id), b AS (SELECT customer_id FROM a WHERE t > 20000)
SELECT count(*) FROM b

-- q: sub2.cte_materialized ordered
WITH m AS MATERIALIZED (SELECT id, tier FROM customers WHERE id < 50) SELECT tier, count(*) FROM m GROUP BY tier ORDER BY tier NULLS FIRST

-- q: sub2.cte_not_materialized ordered
WITH m AS NOT MATERIALIZED (SELECT id, tier FROM customers) SELECT id FROM m WHERE id = 42

-- q: sub2.cte_recursive_counter ordered
WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t WHERE n < 10) SELECT sum(n), count(*) FROM t

-- q: sub2.cte_recursive_join ordered
WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t WHERE n < 5) SELECT t.n, c.name FROM t JOIN customers c ON c.id = t.n ORDER BY t.n

-- q: sub2.cte_recursive_dates ordered
WITH RECURSIVE d(day) AS (SELECT date '2021-01-01' UNION ALL SELECT day + 1 FROM d WHERE day < date '2021-01-07')
SELECT d.day, count(o.id) FROM d LEFT JOIN orders o ON o.ship_date = d.day GROUP BY d.day ORDER BY d.day

-- q: sub2.cte_param ordered args=paid
WITH p AS (SELECT customer_id, total FROM orders WHERE status = $1) SELECT count(*), sum(total) FROM p

-- q: sub2.cte_reference_join ordered
WITH k AS (SELECT code FROM countries WHERE region = 'Europe') SELECT count(*) FROM customers c JOIN k ON k.code = c.country

-- q: sub2.in_tuple_subquery
SELECT count(*) FROM items WHERE (customer_id, order_id) IN (SELECT customer_id, id FROM orders WHERE status = 'paid')

-- q: sub2.nested_in ordered
SELECT count(*) FROM customers WHERE id IN (SELECT customer_id FROM orders WHERE id IN (SELECT order_id FROM items WHERE qty = 5))

-- q: sub2.exists_or
SELECT id FROM customers c WHERE c.tier = 1 OR EXISTS (SELECT 1 FROM orders o WHERE o.customer_id = c.id AND o.total < -49)

-- q: sub2.not_exists_items ordered
SELECT count(*) FROM orders o WHERE NOT EXISTS (SELECT 1 FROM items i WHERE i.customer_id = o.customer_id AND i.order_id = o.id)

-- q: sub2.scalar_subquery_product_join ordered
SELECT i.sku, (SELECT p.name FROM products p WHERE lower(p.sku) = lower(i.sku)) FROM items i WHERE i.customer_id = 3 ORDER BY i.order_id, i.line

-- q: sub2.scalar_min_pinned ordered args=9
SELECT (SELECT min(placed_at) FROM orders WHERE customer_id = $1), (SELECT max(placed_at) FROM orders WHERE customer_id = $1)

-- q: sub2.array_subquery_pinned ordered
SELECT ARRAY(SELECT id FROM orders WHERE customer_id = 2 ORDER BY id)

-- q: sub2.array_subquery_scatter ordered
SELECT ARRAY(SELECT id FROM customers WHERE tier = 1 ORDER BY id)

-- q: sub2.exists_select_star ordered
SELECT EXISTS (SELECT * FROM customers WHERE name = 'Zed')

-- q: sub2.exists_limit_zero ordered
SELECT EXISTS (SELECT 1 FROM orders LIMIT 0)

-- q: sub2.case_subquery_count ordered
SELECT CASE WHEN (SELECT count(*) FROM orders WHERE status = 'paid') > 100 THEN 'many' ELSE 'few' END

-- q: sub2.coalesce_subquery ordered
SELECT coalesce((SELECT max(total) FROM orders WHERE customer_id = 355), 0)

-- ===================================================================
-- Expressions over the stored types (date/time arithmetic, numeric edge
-- cases, text functions, collation, casts): evaluated on the shards and
-- merged, or merged first and evaluated by the proxy.
-- ===================================================================

-- q: expr2.date_arith ordered
SELECT id, ship_date + 30 AS later, ship_date - date '2020-01-01' AS days, ship_date + interval '1 month' AS m FROM orders WHERE customer_id = 2 ORDER BY id

-- q: expr2.timestamp_arith
SELECT id, placed_at + interval '1 day 2 hours', placed_at - interval '90 minutes', date_trunc('week', placed_at) FROM orders WHERE customer_id = 9

-- q: expr2.age ordered
SELECT id, age(timestamp '2030-01-01', signup) FROM customers WHERE id BETWEEN 1 AND 10 ORDER BY id

-- q: expr2.extract_fields ordered
SELECT id, extract(dow FROM placed_at), extract(doy FROM placed_at), extract(epoch FROM placed_at), extract(isoyear FROM ship_date) FROM orders WHERE customer_id = 3 ORDER BY id

-- q: expr2.date_part_group ordered
SELECT date_part('month', ship_date) AS m, count(*) FROM orders GROUP BY 1 ORDER BY 1 NULLS FIRST

-- q: expr2.to_char ordered
SELECT o.id, to_char(placed_at, 'YYYY-MM-DD HH24:MI'), to_char(total, 'FM999990.00'), to_char(born, 'Dy DD Mon YYYY') FROM orders o JOIN customers c ON c.id = o.customer_id WHERE o.customer_id = 7 ORDER BY o.id

-- q: expr2.interval_group_sum ordered
SELECT tier, sum(session), avg(session), justify_hours(sum(session)) FROM customers GROUP BY tier ORDER BY tier NULLS FIRST

-- q: expr2.interval_arith
SELECT id, session * 2, session / 3, session + interval '1 day', -session FROM customers WHERE id BETWEEN 1 AND 30 AND session IS NOT NULL

-- q: expr2.timestamp_diff_group ordered
SELECT status, max(placed_at) - min(placed_at), max(ship_date) - min(ship_date) FROM orders WHERE customer_id IN (1, 2, 3, 9) GROUP BY status ORDER BY status

-- q: expr2.date_compare_literal
SELECT count(*) FROM orders WHERE placed_at >= '2022-01-01' AND placed_at < '2022-02-01'

-- q: expr2.date_compare_param args=2023-06-30
SELECT count(*) FROM orders WHERE ship_date > $1::date

-- q: expr2.overlaps
SELECT count(*) FROM orders WHERE (placed_at, placed_at + interval '10 days') OVERLAPS (timestamptz '2021-05-01 00:00+00', timestamptz '2021-05-31 00:00+00')

-- q: expr2.at_time_zone ordered
SELECT id, placed_at AT TIME ZONE 'America/New_York', (placed_at AT TIME ZONE 'Asia/Tokyo')::date FROM orders WHERE customer_id = 42 ORDER BY id

-- q: expr2.special_dates ordered
SELECT id, born, born + 1, born > date '2000-01-01', isfinite(born) FROM customers WHERE id IN (0, -1, -2, -3, -42, -9223372036854775808, 1000000007) ORDER BY id

-- q: expr2.make_date ordered
SELECT make_date(2024, 2, 29), make_timestamp(2020, 1, 2, 3, 4, 5.5), make_interval(days => 3, hours => 4)

-- q: expr2.numeric_round ordered
SELECT id, round(total, 1), trunc(total), ceil(total), floor(total), abs(total), sign(total) FROM orders WHERE customer_id = 42 ORDER BY id

-- q: expr2.numeric_division ordered
SELECT id, total / 3, total % 7, div(total, 7), mod(total, 7) FROM orders WHERE customer_id = 3 ORDER BY id

-- q: expr2.numeric_special ordered
SELECT id, credit, credit + 1, credit * 0, -credit, credit::float8 FROM customers WHERE id IN (0, -1, -2, -3, -42, -9223372036854775808, 1000000007) ORDER BY id

-- q: expr2.numeric_scale_ops ordered
SELECT id, scale(credit), balance * 1.5, balance / 7 FROM customers WHERE id BETWEEN 1 AND 10 ORDER BY id

-- q: expr2.numeric_sum_special ordered
SELECT sum(credit), max(credit), min(credit) FROM customers

-- q: expr2.numeric_power ordered
SELECT 2::numeric ^ 0.5, sqrt(2::numeric), exp(1::numeric), ln(10::numeric), log(1000::numeric), 1e-30::numeric * 1e30

-- q: expr2.numeric_cast_overflow error
SELECT total::numeric(3,1) FROM orders WHERE customer_id = 42

-- q: expr2.int_overflow error
SELECT sum(id * 4) FROM customers WHERE id = 9223372036854775807

-- q: expr2.division_by_zero error
SELECT total / 0 FROM orders WHERE customer_id = 3

-- q: expr2.division_by_zero_scatter error
SELECT total / (qty - qty) FROM orders WHERE qty IS NOT NULL

-- q: expr2.float_special ordered
SELECT id, score, score + 1, score * 2, score::numeric, score = 'NaN', score < 0 FROM customers WHERE id IN (0, -1, -2, -3, -9223372036854775808, 1000000007) ORDER BY id

-- q: expr2.float_ops ordered
SELECT id, score / 4, sqrt(abs(score)), round(score), trunc(score), score::int FROM customers WHERE id BETWEEN 1 AND 20 AND score IS NOT NULL ORDER BY id

-- q: expr2.float_cast_text
SELECT id, rating::text, score::text, weight::text FROM customers c, (SELECT 0.25::float8 AS weight) w WHERE id BETWEEN 30 AND 50

-- q: expr2.int_ops ordered
SELECT id, id % 7, id / 7, id << 2, id & 5, id | 8, id # 3, ~id FROM customers WHERE id BETWEEN 1 AND 15 ORDER BY id

-- q: expr2.greatest_least
SELECT id, greatest(tier, 3), least(balance, 0), greatest(born, date '1990-01-01') FROM customers WHERE id BETWEEN 1 AND 25

-- q: expr2.nullif_coalesce
SELECT id, nullif(tier, 3), coalesce(email, nick, 'none'), coalesce(tier, 0) + 1 FROM customers WHERE id BETWEEN 1 AND 25

-- q: expr2.text_functions
SELECT id, upper(name), lower(name), initcap(name), length(name), octet_length(name), reverse(name), left(name, 2), right(name, 2) FROM customers WHERE id BETWEEN 1 AND 30

-- q: expr2.text_more
SELECT id, substr(name, 2, 3), position('a' IN name), replace(name, 'a', 'A'), lpad(name, 8, '*'), rtrim(name), btrim(' ' || name || ' '), repeat(coalesce(code, '-'), 2) FROM customers WHERE id BETWEEN 30 AND 60

-- q: expr2.text_split
SELECT id, split_part(email, '@', 2), strpos(email, '@'), regexp_replace(email, '[0-9]+', '#') FROM customers WHERE id BETWEEN 1 AND 40 AND email IS NOT NULL

-- q: expr2.regex_match
SELECT id, name FROM customers WHERE name ~ '^[A-Z]' AND id < 100

-- q: expr2.regex_match_ci
SELECT count(*) FROM customers WHERE name ~* 'ALICE|bob'

-- q: expr2.similar_to
SELECT count(*) FROM orders WHERE note SIMILAR TO '(leave|call)%'

-- q: expr2.like_underscore
SELECT count(*) FROM orders WHERE note LIKE '50\_50'

-- q: expr2.concat ordered
SELECT id, concat(name, '-', tier), concat_ws('/', country, code, nick), name || ' ' || coalesce(tier::text, '?') FROM customers WHERE id BETWEEN 1 AND 12 ORDER BY id

-- q: expr2.format ordered
SELECT format('%s has %s', name, tier), format('%I.%L', 'Tab', name) FROM customers WHERE id IN (1, 2, 3) ORDER BY id

-- q: expr2.collate_c ordered
SELECT name FROM customers WHERE id BETWEEN 1 AND 40 ORDER BY name COLLATE "C", name

-- q: expr2.collate_posix_group ordered
SELECT name COLLATE "POSIX" AS n, count(*) FROM customers GROUP BY 1 ORDER BY 1

-- q: expr2.collate_compare
SELECT count(*) FROM customers WHERE name COLLATE "C" < 'a'

-- q: expr2.order_by_non_ascii ordered
SELECT DISTINCT name FROM customers ORDER BY name DESC

-- q: expr2.order_by_lower ordered
SELECT id, name FROM customers WHERE id < 60 ORDER BY lower(name), id

-- q: expr2.order_by_length ordered
SELECT id, name FROM customers WHERE id < 60 ORDER BY length(name) DESC, name, id

-- q: expr2.casts ordered
SELECT id::text, id::numeric / 2, tier::text, active::text, born::text, born::timestamp, signup::date, ext_id::text, code::text, nick::text FROM customers WHERE id BETWEEN 1 AND 8 ORDER BY id

-- q: expr2.cast_text_to_int
SELECT count(*) FROM customers WHERE id::text LIKE '1%'

-- q: expr2.cast_bool
SELECT 'yes'::boolean, 'f'::boolean, 1::boolean, (tier > 2)::int FROM customers WHERE id = 7

-- q: expr2.cast_bad error
SELECT name::int FROM customers WHERE id = 7

-- q: expr2.cast_bad_scatter error
SELECT status::int FROM orders

-- q: expr2.jsonb_ops ordered
SELECT id, prefs -> 'theme', prefs ->> 'n', prefs #> '{w}', jsonb_typeof(prefs -> 'beta'), prefs - 'theme', prefs || '{"x": 1}' FROM customers WHERE id BETWEEN 1 AND 40 AND prefs IS NOT NULL ORDER BY id

-- q: expr2.jsonb_build ordered
SELECT id, jsonb_build_object('id', id, 'name', name, 'tier', tier), json_build_array(id, name) FROM customers WHERE id IN (1, 2, 3) ORDER BY id

-- q: expr2.jsonb_path
SELECT sku, jsonb_path_query_first(attrs, '$.size') FROM products WHERE attrs @? '$.tags[*] ? (@ == "a")' AND sku < 'C'

-- q: expr2.jsonb_array_elements
SELECT e, count(*) FROM products, jsonb_array_elements_text(attrs -> 'tags') e GROUP BY e

-- q: expr2.array_ops ordered
SELECT id, array_length(tags, 1), cardinality(tags), array_to_string(tags, ','), tags || 'x'::text, array_position(tags, 'paid') FROM customers WHERE id BETWEEN 1 AND 40 AND tags IS NOT NULL ORDER BY id

-- q: expr2.array_literal_ops ordered
SELECT ARRAY[1, 2] || ARRAY[3], array_cat(ARRAY['a'], ARRAY['b']), ARRAY[3, 1, 2] @> ARRAY[1], array_remove(ARRAY[1, 2, 1], 1), string_to_array('a,b,,c', ',')

-- q: expr2.uuid_ops
SELECT ext_id, ext_id::text < '8', md5(ext_id::text) FROM customers WHERE id BETWEEN 1 AND 20 AND ext_id IS NOT NULL

-- q: expr2.bytea_ops
SELECT id, length(avatar), encode(avatar, 'hex'), encode(avatar, 'base64'), md5(avatar), substring(avatar FROM 1 FOR 2) FROM customers WHERE id BETWEEN 1 AND 20

-- q: expr2.bool_logic
SELECT id, active AND gift_ok, active OR NOT gift_ok, active IS TRUE, active IS NOT FALSE, active IS UNKNOWN FROM customers, (VALUES (true), (NULL::boolean)) g(gift_ok) WHERE id BETWEEN 1 AND 10

-- q: expr2.case_searched_null
SELECT id, CASE tier WHEN 1 THEN 'one' WHEN NULL THEN 'null?' ELSE 'other' END, CASE WHEN tier IS NULL THEN 'none' END FROM customers WHERE id BETWEEN 1 AND 40

-- q: expr2.in_list_nulls
SELECT count(*) FROM customers WHERE tier IN (1, NULL)

-- q: expr2.not_in_list_nulls
SELECT count(*) FROM customers WHERE tier NOT IN (1, NULL)

-- q: expr2.between_symmetric
SELECT count(*) FROM orders WHERE total BETWEEN SYMMETRIC 100 AND -100

-- q: expr2.row_compare ordered
SELECT id, total FROM orders WHERE (customer_id, id) > (42, 1000) AND customer_id < 45 ORDER BY customer_id, id

-- q: expr2.row_constructor ordered
SELECT ROW(id, name), (id, tier) IS NULL, (tier, tier) IS NOT NULL FROM customers WHERE id BETWEEN 1 AND 6 ORDER BY id

-- q: expr2.money_like_numeric ordered
SELECT to_char(sum(total), 'FM999G999G990D00') FROM orders

-- q: expr2.numeric_agg_expression ordered
SELECT round(sum(total) / count(*), 2), sum(total)::float8, sum(total)::int8, sum(total)::text FROM orders

-- q: expr2.float_agg_expression ordered
SELECT sum(score) / 8, sum(score)::numeric(20,3), floor(sum(weight)) FROM customers c, (SELECT 0.5::float8 AS weight) w WHERE id BETWEEN 1 AND 360

-- q: expr2.interval_from_numeric ordered
SELECT sum(qty) * interval '1 hour', max(qty) * interval '1 day' FROM orders

-- q: expr2.date_aggregates_expression ordered
SELECT max(ship_date) - min(ship_date), max(placed_at) - min(placed_at), min(ship_date) + 7, date_trunc('month', max(placed_at)) FROM orders

-- q: expr2.age_aggregates ordered
SELECT tier, age(max(signup), min(signup)) FROM customers GROUP BY tier ORDER BY tier NULLS FIRST

-- q: expr2.extract_aggregate ordered
SELECT extract(year FROM min(born)), extract(epoch FROM max(session)) FROM customers WHERE id BETWEEN 1 AND 360

-- ===================================================================
-- DISTINCT ON, FETCH FIRST ... WITH TIES, NULLS FIRST/LAST, sort keys
-- the proxy merges on (every stored type), TABLESAMPLE.
-- ===================================================================

-- q: ord2.distinct_on_latest ordered
SELECT DISTINCT ON (customer_id) customer_id, id, placed_at FROM orders ORDER BY customer_id, placed_at DESC, id

-- q: ord2.distinct_on_status ordered
SELECT DISTINCT ON (status) status, id, total FROM orders ORDER BY status, total DESC, id

-- q: ord2.distinct_on_expression ordered
SELECT DISTINCT ON (lower(name)) lower(name), id FROM customers ORDER BY lower(name), id

-- q: ord2.distinct_on_limit ordered
SELECT DISTINCT ON (tier) tier, id, name FROM customers ORDER BY tier NULLS FIRST, id LIMIT 3

-- q: ord2.distinct_on_pinned ordered
SELECT DISTINCT ON (status) status, id FROM orders WHERE customer_id = 42 ORDER BY status, id DESC

-- q: ord2.distinct_on_products ordered
SELECT DISTINCT ON (category) category, sku, price FROM products ORDER BY category NULLS LAST, price DESC NULLS LAST, sku

-- q: ord2.with_ties keys=1
SELECT tier, id FROM customers ORDER BY tier FETCH FIRST 3 ROWS WITH TIES

-- q: ord2.with_ties_keys keys=1
SELECT status, id FROM orders ORDER BY status FETCH FIRST 5 ROWS WITH TIES

-- q: ord2.with_ties_offset keys=1
SELECT qty FROM orders WHERE qty IS NOT NULL ORDER BY qty DESC OFFSET 2 ROWS FETCH FIRST 2 ROWS WITH TIES

-- q: ord2.with_ties_pinned keys=1
SELECT status, id FROM orders WHERE customer_id = 7 ORDER BY status FETCH FIRST 1 ROW WITH TIES

-- q: ord2.nulls_first_desc ordered
SELECT id, ship_date FROM orders WHERE customer_id IN (1, 2, 3) ORDER BY ship_date DESC NULLS FIRST, id

-- q: ord2.nulls_last_asc ordered
SELECT id, note FROM orders WHERE customer_id IN (7, 9) ORDER BY note ASC NULLS LAST, id

-- q: ord2.nulls_mixed_keys ordered
SELECT id, tier, nick FROM customers ORDER BY tier DESC NULLS LAST, nick NULLS FIRST, id LIMIT 40

-- q: ord2.order_bool keys=1
SELECT gift, id FROM orders WHERE customer_id = 3 ORDER BY gift NULLS FIRST

-- q: ord2.order_uuid ordered
SELECT ext_id, id FROM customers ORDER BY ext_id, id LIMIT 30

-- q: ord2.order_bytea ordered
SELECT avatar, id FROM customers ORDER BY avatar DESC NULLS LAST, id LIMIT 30

-- q: ord2.order_interval ordered
SELECT session, id FROM customers ORDER BY session NULLS FIRST, id LIMIT 30

-- q: ord2.order_jsonb ordered
SELECT prefs, id FROM customers ORDER BY prefs, id LIMIT 30

-- q: ord2.order_array ordered
SELECT tags, id FROM customers ORDER BY tags DESC, id LIMIT 30

-- q: ord2.order_char ordered
SELECT code, id FROM customers ORDER BY code, id LIMIT 30

-- q: ord2.order_varchar_desc ordered
SELECT nick, id FROM customers ORDER BY nick DESC, id DESC LIMIT 30

-- q: ord2.order_real ordered
SELECT rating, id FROM customers ORDER BY rating, id LIMIT 30

-- q: ord2.order_float_special ordered
SELECT score, id FROM customers WHERE id <= 0 OR id > 1000 ORDER BY score DESC, id

-- q: ord2.order_numeric_special ordered
SELECT credit, id FROM customers WHERE id <= 0 OR id > 1000 ORDER BY credit, id

-- q: ord2.order_dates_special ordered
SELECT born, id FROM customers WHERE id <= 0 OR id > 1000 ORDER BY born NULLS FIRST, id

-- q: ord2.order_timestamptz ordered
SELECT last_seen, id FROM customers ORDER BY last_seen DESC NULLS LAST, id LIMIT 25

-- q: ord2.order_expression ordered
SELECT id, total * qty AS v FROM orders WHERE qty IS NOT NULL ORDER BY total * qty DESC, id LIMIT 10

-- q: ord2.order_by_alias_expression ordered
SELECT id, -total AS neg FROM orders ORDER BY neg, id LIMIT 10

-- q: ord2.order_by_ordinal_desc ordered
SELECT customer_id, id FROM orders ORDER BY 1 DESC, 2 LIMIT 10

-- q: ord2.order_by_case ordered
SELECT id, status FROM orders WHERE customer_id = 42 ORDER BY CASE status WHEN 'pending' THEN 0 WHEN 'paid' THEN 1 ELSE 2 END, id

-- q: ord2.order_by_not_selected ordered
SELECT id FROM customers WHERE id < 100 ORDER BY name DESC, id

-- q: ord2.order_by_collate ordered
SELECT id, name FROM customers WHERE id < 80 ORDER BY name COLLATE "C" DESC, id

-- q: ord2.order_by_text_param ordered args=10
SELECT sku, name FROM products ORDER BY name, sku LIMIT $1

-- q: ord2.limit_all ordered
SELECT id FROM customers WHERE id < 10 ORDER BY id LIMIT ALL

-- q: ord2.limit_null ordered
SELECT id FROM customers WHERE id < 10 ORDER BY id LIMIT NULL

-- q: ord2.offset_only ordered
SELECT id FROM customers ORDER BY id OFFSET 360

-- q: ord2.limit_param_null ordered args=NULL
SELECT id FROM customers WHERE id < 8 ORDER BY id LIMIT $1

-- q: ord2.limit_expression ordered
SELECT id FROM customers ORDER BY id LIMIT 2 + 3

-- q: ord2.limit_negative error
SELECT id FROM customers ORDER BY id LIMIT -1

-- q: ord2.limit_no_order countonly
SELECT id FROM orders LIMIT 7

-- q: ord2.limit_no_order_offset countonly
SELECT id FROM orders OFFSET 2390

-- q: ord2.tablesample_system_all
SELECT count(*) FROM orders TABLESAMPLE SYSTEM (100)

-- q: ord2.tablesample_bernoulli_none
SELECT count(*) FROM customers TABLESAMPLE BERNOULLI (0)

-- q: ord2.order_aggregate_limit ordered
SELECT country, count(*) FROM customers GROUP BY country ORDER BY count(*) DESC, country NULLS FIRST LIMIT 5

-- q: ord2.order_distinct_limit ordered
SELECT DISTINCT customer_id FROM orders ORDER BY customer_id DESC LIMIT 5 OFFSET 3

-- ===================================================================
-- Catalog queries drivers and ORMs run at connect and for reflection
-- (SQLAlchemy, psycopg, pgjdbc, Django, ActiveRecord), narrowed to the
-- schema's own tables and to built-in objects, whose OIDs and names are
-- the same on every PostgreSQL 15.
-- ===================================================================

-- q: cat2.version_prefix ordered
SELECT split_part(version(), ' ', 1) AS v

-- q: cat2.server_version_num ordered
SELECT current_setting('server_version_num')::int / 10000 AS major

-- q: cat2.show_standard_conforming ordered
SHOW standard_conforming_strings

-- q: cat2.show_transaction_isolation ordered
SHOW transaction_isolation

-- q: cat2.current_schema ordered
SELECT current_schema(), current_schemas(false)

-- q: cat2.sqla_has_table ordered args=customers
SELECT pg_catalog.pg_class.relname FROM pg_catalog.pg_class JOIN pg_catalog.pg_namespace ON pg_catalog.pg_namespace.oid = pg_catalog.pg_class.relnamespace
WHERE pg_catalog.pg_class.relname = $1 AND pg_catalog.pg_class.relkind = ANY (ARRAY['r', 'p', 'f', 'v', 'm']) AND pg_catalog.pg_table_is_visible(pg_catalog.pg_class.oid) AND pg_catalog.pg_namespace.nspname != 'pg_catalog'

-- q: cat2.sqla_has_table_missing args=no_such_table
SELECT pg_catalog.pg_class.relname FROM pg_catalog.pg_class JOIN pg_catalog.pg_namespace ON pg_catalog.pg_namespace.oid = pg_catalog.pg_class.relnamespace
WHERE pg_catalog.pg_class.relname = $1 AND pg_catalog.pg_class.relkind = ANY (ARRAY['r', 'p', 'f', 'v', 'm']) AND pg_catalog.pg_table_is_visible(pg_catalog.pg_class.oid)

-- q: cat2.sqla_has_sequence ordered args=orders_id_seq
SELECT pg_catalog.pg_class.relname FROM pg_catalog.pg_class JOIN pg_catalog.pg_namespace ON pg_catalog.pg_namespace.oid = pg_catalog.pg_class.relnamespace
WHERE pg_catalog.pg_class.relkind = 'S' AND pg_catalog.pg_class.relname = $1 AND pg_catalog.pg_namespace.nspname = 'public'

-- q: cat2.sqla_columns ordered
SELECT a.attname, pg_catalog.format_type(a.atttypid, a.atttypmod) AS format_type, a.attnotnull, a.attnum
FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_class c ON c.oid = a.attrelid JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE c.relname = 'customers' AND n.nspname = 'public' AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum

-- q: cat2.sqla_columns_items ordered
SELECT a.attname, pg_catalog.format_type(a.atttypid, a.atttypmod), a.attnotnull FROM pg_catalog.pg_attribute a
WHERE a.attrelid = 'items'::regclass AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum

-- q: cat2.sqla_pk ordered
SELECT a.attname FROM pg_catalog.pg_index i JOIN pg_catalog.pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey)
WHERE i.indrelid = 'orders'::regclass AND i.indisprimary ORDER BY a.attnum

-- q: cat2.sqla_pk_constraint ordered
SELECT conname, contype FROM pg_catalog.pg_constraint WHERE conrelid = 'customers'::regclass ORDER BY conname

-- q: cat2.sqla_indexes ordered
SELECT i.relname, ix.indisunique, pg_catalog.pg_get_indexdef(ix.indexrelid) FROM pg_catalog.pg_index ix JOIN pg_catalog.pg_class i ON i.oid = ix.indexrelid
WHERE ix.indrelid = 'products'::regclass ORDER BY i.relname

-- q: cat2.sqla_table_names ordered
SELECT c.relname FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND c.relname IN ('customers', 'orders', 'items', 'products', 'countries', 'currencies', 'settings', 'audit', 'events', 'devices', 'tickets')
ORDER BY c.relname

-- q: cat2.psycopg_type_info ordered
SELECT t.oid, typarray, typname FROM pg_type t JOIN pg_namespace ns ON typnamespace = ns.oid WHERE typname IN ('int4', 'text', 'jsonb', 'uuid', 'numeric', 'timestamptz') ORDER BY typname

-- q: cat2.psycopg_hstore
SELECT t.oid, typarray FROM pg_type t JOIN pg_namespace ns ON typnamespace = ns.oid WHERE typname = 'hstore'

-- q: cat2.pgjdbc_type_by_oid ordered args=23
SELECT typinput = 'pg_catalog.array_in'::regproc AS is_array, typtype, typname, pg_type.oid FROM pg_catalog.pg_type
LEFT JOIN (SELECT ns.oid AS nspoid, ns.nspname, r.r FROM pg_namespace AS ns JOIN (SELECT s.r, (current_schemas(false))[s.r] AS nspname
FROM generate_series(1, array_upper(current_schemas(false), 1)) AS s(r)) AS r USING (nspname)) AS sp ON sp.nspoid = typnamespace
WHERE pg_type.oid = $1 ORDER BY sp.r, pg_type.oid DESC

-- q: cat2.pgjdbc_array_delim ordered
SELECT e.typdelim FROM pg_catalog.pg_type t, pg_catalog.pg_type e WHERE t.oid = 1009 AND t.typelem = e.oid

-- q: cat2.pgjdbc_typname ordered
SELECT n.nspname = ANY (current_schemas(true)), n.nspname, t.typname FROM pg_catalog.pg_type t JOIN pg_catalog.pg_namespace n ON t.typnamespace = n.oid WHERE t.oid = 3802

-- q: cat2.info_schema_tables ordered
SELECT table_name, table_type FROM information_schema.tables WHERE table_schema = 'public' AND table_name IN ('customers', 'orders', 'items', 'products', 'settings') ORDER BY table_name

-- q: cat2.info_schema_columns ordered
SELECT column_name, data_type, is_nullable, character_maximum_length, numeric_precision, numeric_scale FROM information_schema.columns
WHERE table_schema = 'public' AND table_name = 'customers' ORDER BY ordinal_position

-- q: cat2.info_schema_columns_products ordered
SELECT column_name, data_type, column_default, is_nullable FROM information_schema.columns WHERE table_name = 'products' ORDER BY ordinal_position

-- q: cat2.info_schema_constraints ordered
SELECT tc.constraint_type, kcu.column_name FROM information_schema.table_constraints tc JOIN information_schema.key_column_usage kcu
ON kcu.constraint_name = tc.constraint_name AND kcu.table_name = tc.table_name WHERE tc.table_name = 'items' ORDER BY kcu.ordinal_position

-- q: cat2.django_introspection ordered
SELECT c.relname, CASE WHEN c.relispartition THEN 'p' WHEN c.relkind IN ('m', 'v') THEN 'v' ELSE 't' END
FROM pg_catalog.pg_class c LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('f', 'm', 'p', 'r', 'v') AND n.nspname NOT IN ('pg_catalog', 'pg_toast') AND pg_catalog.pg_table_is_visible(c.oid)
AND c.relname IN ('customers', 'orders', 'countries') ORDER BY c.relname

-- q: cat2.activerecord_table_exists ordered
SELECT a.attname FROM pg_attribute a WHERE a.attrelid = '"currencies"'::regclass AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum

-- q: cat2.activerecord_pk ordered
SELECT attr.attname, nspname, seq.relname FROM pg_class seq, pg_attribute attr, pg_depend dep, pg_constraint cons, pg_namespace nsp
WHERE seq.oid = dep.objid AND seq.relkind = 'S' AND attr.attrelid = dep.refobjid AND attr.attnum = dep.refobjsubid AND attr.attrelid = cons.conrelid
AND attr.attnum = cons.conkey[1] AND seq.relnamespace = nsp.oid AND cons.contype = 'p' AND dep.classid = 'pg_class'::regclass AND dep.refobjid = '"audit"'::regclass

-- q: cat2.regtype_names ordered
SELECT 'int8'::regtype::text, 'varchar'::regtype::text, 'timestamptz'::regtype, 'float8'::regtype::oid

-- q: cat2.format_type_builtin ordered
SELECT format_type(1700, 786438), format_type(1043, 24), format_type(1184, -1)

-- q: cat2.pg_settings ordered
SELECT name, setting FROM pg_settings WHERE name IN ('integer_datetimes', 'max_identifier_length', 'server_encoding') ORDER BY name

-- q: cat2.pg_database_encoding ordered
SELECT pg_encoding_to_char(encoding) FROM pg_database WHERE datname = current_database()

-- q: cat2.txid_current_if_assigned ordered
SELECT txid_current_if_assigned() IS NULL

-- q: cat2.pg_is_in_recovery ordered
SELECT pg_is_in_recovery()

-- q: cat2.has_table_privilege ordered
SELECT has_table_privilege('customers', 'SELECT'), has_schema_privilege('public', 'USAGE')

-- q: cat2.obj_description ordered
SELECT obj_description('customers'::regclass, 'pg_class')

-- q: cat2.to_regclass ordered
SELECT to_regclass('orders') IS NOT NULL, to_regclass('nope') IS NULL

-- ===================================================================
-- sqllogictest select1-5 shapes, adapted: arithmetic over columns,
-- scalar subqueries against the whole table in CASE and WHERE, BETWEEN,
-- compound conditions, ORDER BY ordinals and expressions.
-- ===================================================================

-- q: slt.case_vs_avg ordered
SELECT CASE WHEN total > (SELECT avg(total) FROM orders) THEN qty * 2 ELSE qty * 10 END, id FROM orders WHERE customer_id = 3 ORDER BY 2

-- q: slt.case_vs_avg_scatter
SELECT CASE WHEN total > (SELECT avg(total) FROM orders) THEN 'hi' ELSE 'lo' END AS band, count(*) FROM orders GROUP BY 1

-- q: slt.where_vs_count
SELECT id FROM customers WHERE tier > (SELECT count(*) FROM currencies) / 4

-- q: slt.arith_target ordered
SELECT id * 2 + 1, qty - 1, total * 3 - qty, (qty + id) % 5 FROM orders WHERE customer_id = 9 AND qty IS NOT NULL ORDER BY id

-- q: slt.arith_where
SELECT id FROM orders WHERE qty * 3 > id % 17 + 40 AND customer_id BETWEEN 100 AND 200

-- q: slt.compound_or_and
SELECT id FROM orders WHERE (qty > 15 OR total < 0) AND (status = 'paid' OR gift IS NULL) AND customer_id < 100

-- q: slt.not_between
SELECT count(*) FROM orders WHERE qty NOT BETWEEN 5 AND 15

-- q: slt.is_null_combo
SELECT count(*) FROM orders WHERE qty IS NULL OR weight IS NULL OR discount IS NULL

-- q: slt.coalesce_arith ordered
SELECT coalesce(qty, 0) * 2 + coalesce(discount, 1), id FROM orders WHERE customer_id = 1 ORDER BY id

-- q: slt.abs_compare
SELECT id FROM orders WHERE abs(total - 2500) < 10

-- q: slt.order_by_expr_ordinal ordered
SELECT qty * id AS v, id FROM orders WHERE customer_id = 42 AND qty IS NOT NULL ORDER BY 1 DESC, 2

-- q: slt.nested_case ordered
SELECT id, CASE WHEN qty < 5 THEN CASE WHEN gift THEN 'a' ELSE 'b' END WHEN qty < 10 THEN 'c' ELSE 'd' END FROM orders WHERE customer_id = 7 ORDER BY id

-- q: slt.case_no_else
SELECT id, CASE WHEN qty > 18 THEN qty END FROM orders WHERE customer_id = 2

-- q: slt.exists_count_target
SELECT (SELECT count(*) FROM orders o2 WHERE o2.customer_id = o.customer_id AND o2.total < o.total) AS below, o.id FROM orders o WHERE o.customer_id = 9

-- q: slt.subquery_min_in_where
SELECT id FROM orders o WHERE total < (SELECT min(total) FROM orders o2 WHERE o2.customer_id = o.customer_id) + 100 AND customer_id < 50

-- q: slt.avg_of_expression ordered
SELECT avg(qty * 2 + 1), sum(qty - 3), max(qty * qty), min(-qty) FROM orders

-- q: slt.count_expression ordered
SELECT count(qty + 1), count(DISTINCT qty % 3), count(CASE WHEN qty > 10 THEN 1 END) FROM orders

-- q: slt.group_expression ordered
SELECT qty % 4, count(*), sum(qty) FROM orders GROUP BY qty % 4 ORDER BY 1 NULLS FIRST

-- q: slt.group_two_expressions ordered
SELECT qty / 5 AS a, tier AS b, count(*) FROM orders o JOIN customers c ON c.id = o.customer_id GROUP BY 1, 2 ORDER BY 1 NULLS FIRST, 2 NULLS FIRST

-- q: slt.having_expression ordered
SELECT qty, count(*) FROM orders GROUP BY qty HAVING count(*) * 2 > 200 ORDER BY qty NULLS FIRST

-- q: slt.in_list_expression
SELECT id FROM orders WHERE qty + 1 IN (2, 4, 21) AND customer_id < 40

-- q: slt.not_in_list
SELECT count(*) FROM orders WHERE qty NOT IN (1, 2, 3, 4, 5)

-- q: slt.between_columns
SELECT count(*) FROM orders WHERE qty BETWEEN id % 10 AND id % 10 + 5

-- q: slt.negative_literal_compare
SELECT count(*) FROM orders WHERE -total > 10

-- q: slt.unary_minus_group ordered
SELECT -qty AS n, count(*) FROM orders GROUP BY -qty ORDER BY n NULLS LAST

-- q: slt.distinct_expression
SELECT DISTINCT qty % 5 FROM orders

-- q: slt.distinct_two_columns
SELECT DISTINCT status, gift FROM orders

-- q: slt.distinct_count_where ordered
SELECT count(DISTINCT customer_id) FROM orders WHERE qty > 10

-- q: slt.cross_reference_arith
SELECT c.code, k.code FROM currencies c, countries k WHERE c.minor = 0 AND k.vat > 25

-- q: slt.join_where_arith ordered
SELECT o.id, i.line FROM orders o JOIN items i ON i.customer_id = o.customer_id AND i.order_id = o.id WHERE i.qty * 2 > o.qty AND o.customer_id = 3 ORDER BY o.id, i.line

-- q: slt.left_join_null_test
SELECT o.id FROM orders o LEFT JOIN items i ON i.customer_id = o.customer_id AND i.order_id = o.id WHERE i.line IS NULL AND o.customer_id < 30

-- q: slt.scalar_max_minus_min ordered
SELECT (SELECT max(qty) FROM orders) - (SELECT min(qty) FROM orders)

-- q: slt.in_subquery_expression
SELECT count(*) FROM orders WHERE qty IN (SELECT qty + 1 FROM orders WHERE customer_id = 7)

-- q: slt.not_in_subquery_nulls
SELECT count(*) FROM orders WHERE qty NOT IN (SELECT qty FROM orders WHERE customer_id = 7)

-- q: slt.not_exists_same_table
SELECT count(*) FROM orders o WHERE NOT EXISTS (SELECT 1 FROM orders o2 WHERE o2.customer_id = o.customer_id AND o2.total > o.total)

-- q: slt.all_greater_correlated
SELECT id FROM orders o WHERE customer_id < 20 AND total >= ALL (SELECT total FROM orders o2 WHERE o2.customer_id = o.customer_id)

-- q: slt.limit_expression_order ordered
SELECT id, qty FROM orders WHERE qty IS NOT NULL ORDER BY qty * 7 % 11, id LIMIT 12

-- q: slt.union_order_expression ordered
SELECT qty FROM orders WHERE customer_id = 3 UNION SELECT tier FROM customers WHERE id < 20 ORDER BY 1 NULLS FIRST

-- q: slt.except_order ordered
SELECT qty FROM orders EXCEPT SELECT qty FROM orders WHERE customer_id = 42 ORDER BY 1 NULLS LAST

-- q: slt.intersect_order ordered
SELECT DISTINCT tier FROM customers INTERSECT SELECT qty FROM orders ORDER BY 1

-- q: slt.param_arith ordered args=3,2
SELECT id, qty * $1 + $2 FROM orders WHERE customer_id = 7 AND qty IS NOT NULL ORDER BY id

-- q: slt.param_between args=5,8
SELECT count(*) FROM orders WHERE qty BETWEEN $1 AND $2

-- q: slt.param_case ordered args=10
SELECT CASE WHEN qty > $1 THEN 'big' ELSE 'small' END AS k, count(*) FROM orders WHERE qty IS NOT NULL GROUP BY 1 ORDER BY 1

-- q: slt.param_in_subquery args=4900
SELECT count(*) FROM customers WHERE id IN (SELECT customer_id FROM orders WHERE total > $1)

-- q: slt.param_exists ordered args=cancelled
SELECT EXISTS (SELECT 1 FROM orders WHERE status = $1)

-- q: slt.param_scalar_subquery ordered args=paid
SELECT (SELECT count(*) FROM orders WHERE status = $1) AS n

-- q: slt.param_coalesce args=none
SELECT id, coalesce(note, $1) FROM orders WHERE customer_id = 2

-- q: slt.param_ilike ordered args=%DOOR%
SELECT count(*) FROM orders WHERE note ILIKE $1

-- q: slt.param_limit_offset_group ordered args=3,1
SELECT status, count(*) FROM orders GROUP BY status ORDER BY status LIMIT $1 OFFSET $2

-- q: slt.param_any_text ordered args={paid;shipped;nope}
SELECT status, count(*) FROM orders WHERE status = ANY($1::text[]) GROUP BY status ORDER BY status

-- q: slt.param_not_any args={1;2;3}
SELECT count(*) FROM customers WHERE NOT (id = ANY($1::bigint[]))

-- q: slt.param_null_compare args=NULL
SELECT count(*) FROM orders WHERE qty = $1::int

-- q: slt.param_null_coalesce ordered args=NULL
SELECT coalesce($1::int, -1) AS v

-- q: slt.param_date_range args=2021-01-01,2021-12-31
SELECT count(*) FROM orders WHERE ship_date BETWEEN $1::date AND $2::date

-- q: slt.param_timestamptz ordered args=2022-03-01T00:00:00Z
SELECT count(*) FROM orders WHERE placed_at < $1::timestamptz

-- q: slt.param_numeric_cast ordered args=2.5
SELECT count(*) FROM orders WHERE total * $1::numeric > 10000

-- q: slt.param_window ordered args=2
SELECT id FROM (SELECT id, row_number() OVER (PARTITION BY customer_id ORDER BY id) AS rn FROM orders WHERE customer_id < 10) s WHERE rn = $1 ORDER BY id

-- q: slt.param_distinct_on ordered args=20
SELECT DISTINCT ON (customer_id) customer_id, id FROM orders WHERE customer_id < $1 ORDER BY customer_id, id DESC

-- q: slt.param_with_ties keys=1 args=2
SELECT qty, id FROM orders WHERE qty IS NOT NULL ORDER BY qty FETCH FIRST $1 ROWS WITH TIES

-- q: slt.param_string_agg ordered args=;
SELECT string_agg(code, $1 ORDER BY code) FROM currencies

-- q: slt.param_percentile ordered args=0.9
SELECT percentile_cont($1::float8) WITHIN GROUP (ORDER BY qty) FROM orders

-- q: slt.param_jsonb_key ordered args=theme
SELECT prefs ->> $1 AS t, count(*) FROM customers WHERE prefs IS NOT NULL GROUP BY 1 ORDER BY 1

-- q: slt.param_lateral ordered args=2
SELECT c.id, x.id FROM customers c, LATERAL (SELECT id FROM orders o WHERE o.customer_id = c.id ORDER BY id LIMIT $1) x WHERE c.id IN (1, 2, 3) ORDER BY c.id, x.id

-- q: slt.param_grouping_sets args=paid
SELECT status, currency, count(*) FROM orders WHERE status <> $1 GROUP BY GROUPING SETS ((status), (currency))

-- q: slt.param_union ordered args=3,9
SELECT id FROM orders WHERE customer_id = $1 UNION SELECT id FROM orders WHERE customer_id = $2 ORDER BY id

-- q: slt.param_count_over ordered args=5,0
SELECT id, count(*) OVER () FROM customers WHERE tier = 2 ORDER BY id LIMIT $1 OFFSET $2


-- ===================================================================
-- Routing and merge edge cases: key literals in other spellings and
-- types, key conditions on the nullable side of outer joins or without
-- a join condition, expressions of the key in GROUP BY / DISTINCT /
-- PARTITION BY, ROLLUP over the key, LIMIT inside derived tables and
-- set-operation branches, set operations on non-key columns, and sort
-- keys whose text order is not their value order.
-- ===================================================================

-- q: risk.key_numeric_literal ordered
SELECT id, name FROM customers WHERE id = 7.0

-- q: risk.key_fraction_literal
SELECT id FROM customers WHERE id = 7.5

-- q: risk.key_exponent_literal ordered
SELECT id, name FROM customers WHERE id = 1e1

-- q: risk.key_padded_text ordered
SELECT id, name FROM customers WHERE id = ' 7 '

-- q: risk.key_leading_zero ordered
SELECT id, name FROM customers WHERE id = 007

-- q: risk.key_plus_sign ordered
SELECT id, name FROM customers WHERE id = +9

-- q: risk.key_double_minus ordered
SELECT id, name FROM customers WHERE id = -(-9)

-- q: risk.key_smallint_cast ordered
SELECT id, name FROM customers WHERE id = 9::smallint

-- q: risk.key_numeric_cast ordered
SELECT id, name FROM customers WHERE id = '42'::numeric

-- q: risk.key_float_cast ordered
SELECT id, name FROM customers WHERE id = 42::float8

-- q: risk.key_in_numeric ordered
SELECT id FROM customers WHERE id IN (7.0, 9.0, 2.5) ORDER BY id

-- q: risk.key_in_duplicates_null ordered
SELECT id FROM customers WHERE id IN (7, 7, NULL, 9) ORDER BY id

-- q: risk.key_any_text_array ordered
SELECT id FROM customers WHERE id = ANY ('{7,9,100}') ORDER BY id

-- q: risk.key_any_int_array ordered
SELECT id FROM customers WHERE id = ANY ('{7,9,100}'::int[]) ORDER BY id

-- q: risk.key_not_ne ordered
SELECT id FROM customers WHERE NOT (id <> 9)

-- q: risk.key_between_point ordered
SELECT id FROM customers WHERE id BETWEEN 9 AND 9

-- q: risk.key_contradiction
SELECT id FROM orders WHERE customer_id = 7 AND customer_id = 9

-- q: risk.key_or_null ordered
SELECT count(*) FROM orders WHERE customer_id = 7 OR customer_id IS NULL

-- q: risk.key_coalesce
SELECT count(*) FROM orders WHERE coalesce(customer_id, 0) = 7

-- q: risk.key_plus_zero ordered
SELECT count(*) FROM orders WHERE customer_id + 0 = 7

-- q: risk.key_param_numeric ordered args=9.0
SELECT id FROM customers WHERE id = $1::numeric

-- q: risk.key_param_int4 ordered args=9
SELECT id FROM customers WHERE id = $1::int4

-- q: risk.key_param_function ordered args=abcdefghi
SELECT id FROM customers WHERE id = length($1)

-- q: risk.key_row_compare ordered
SELECT id, tier FROM customers WHERE (id, name) = (42, name)

-- q: risk.sku_padded
SELECT sku FROM products WHERE lower(sku) = 'mbz-00002 '

-- q: risk.sku_collate ordered
SELECT sku FROM products WHERE sku = 'Lyr-00001' COLLATE "C"

-- q: risk.sku_lower_in ordered
SELECT sku FROM products WHERE lower(sku) IN ('mbz-00002', 'lyr-00001', 'fos-00003') ORDER BY sku

-- q: risk.sku_upper
SELECT sku FROM products WHERE upper(sku) = 'MBZ-00002'

-- q: risk.sku_ilike
SELECT sku FROM products WHERE sku ILIKE 'mbz-00002'

-- q: risk.sku_param_upper ordered args=LYR-00001
SELECT sku FROM products WHERE lower(sku) = lower($1)

-- q: risk.sku_varchar_cast ordered
SELECT sku FROM products WHERE lower(sku) = 'mbz-00002'::varchar

-- q: risk.cross_join_pinned_left
SELECT o.id, c.id FROM orders o, customers c WHERE o.customer_id = 7 AND c.id < 5

-- q: risk.cross_join_pinned_count ordered
SELECT count(*) FROM orders o, customers c WHERE o.customer_id = 7

-- q: risk.join_on_true_pinned
SELECT o.id, c.id FROM orders o JOIN customers c ON true WHERE o.customer_id = 42 AND c.tier = 5 AND c.id < 100

-- q: risk.join_non_key_equality
SELECT o.id, c.id FROM orders o JOIN customers c ON c.id = o.id WHERE o.id < 300

-- q: risk.join_key_to_non_key
SELECT count(*) FROM orders o JOIN items i ON i.customer_id = o.id

-- q: risk.join_key_plus_zero
SELECT count(*) FROM customers c JOIN orders o ON o.customer_id = c.id + 0 WHERE c.id < 50

-- q: risk.join_pinned_other_key
SELECT count(*) FROM orders a JOIN orders b ON a.customer_id <> b.customer_id WHERE a.customer_id = 7 AND b.customer_id IN (9, 42)

-- q: risk.left_join_nullable_pin
SELECT o.id, c.name FROM orders o LEFT JOIN customers c ON c.id = o.customer_id AND c.id = 9 WHERE o.customer_id IN (7, 9)

-- q: risk.left_join_nullable_pin_items ordered
SELECT count(*), count(i.line) FROM orders o LEFT JOIN items i ON i.customer_id = o.customer_id AND i.order_id = o.id AND i.customer_id = 42

-- q: risk.right_join_pin
SELECT c.id, o.id FROM orders o RIGHT JOIN customers c ON c.id = o.customer_id AND o.customer_id = 3 WHERE c.id < 6

-- q: risk.full_join_pin ordered
SELECT count(*), count(o.id), count(c.id) FROM orders o FULL JOIN customers c ON c.id = o.customer_id AND c.id = 42

-- q: risk.left_join_where_pins ordered
SELECT o.id, c.name FROM orders o LEFT JOIN customers c ON c.id = o.customer_id WHERE c.id = 9 ORDER BY o.id

-- q: risk.exists_non_key_correlation
SELECT count(*) FROM customers c WHERE EXISTS (SELECT 1 FROM orders o WHERE o.id = c.id)

-- q: risk.in_non_key_subquery
SELECT count(*) FROM customers c WHERE c.id IN (SELECT o.id FROM orders o)

-- q: risk.not_in_non_key_subquery
SELECT count(*) FROM customers c WHERE c.id NOT IN (SELECT o.id FROM orders o)

-- q: risk.not_exists_non_key
SELECT count(*) FROM customers c WHERE NOT EXISTS (SELECT 1 FROM orders o WHERE o.qty = c.tier)

-- q: risk.scalar_non_key_correlation
SELECT c.id, (SELECT count(*) FROM orders o WHERE o.qty = c.id) FROM customers c WHERE c.id BETWEEN 1 AND 25

-- q: risk.scalar_inequality_correlation
SELECT c.id, (SELECT count(*) FROM orders o WHERE o.customer_id < c.id) FROM customers c WHERE c.id IN (1, 2, 3, 9, 42, 100)

-- q: risk.lateral_non_key
SELECT c.id, x.n FROM customers c, LATERAL (SELECT count(*) AS n FROM orders o WHERE o.qty = c.tier) x WHERE c.id < 12

-- q: risk.group_key_modulo ordered
SELECT customer_id % 10 AS m, count(*) FROM orders GROUP BY customer_id % 10 ORDER BY 1

-- q: risk.group_key_division ordered
SELECT customer_id / 100 AS b, count(*), sum(total) FROM orders WHERE customer_id BETWEEN 1 AND 360 GROUP BY 1 ORDER BY 1

-- q: risk.group_key_abs ordered
SELECT abs(customer_id) AS a, count(*) FROM orders WHERE customer_id BETWEEN -50 AND 50 GROUP BY abs(customer_id) ORDER BY 1

-- q: risk.group_key_cast_text ordered
SELECT left(customer_id::text, 1) AS d, count(*) FROM orders GROUP BY 1 ORDER BY 1

-- q: risk.group_key_and_expression ordered
SELECT customer_id, count(*) FROM orders GROUP BY customer_id HAVING customer_id % 50 = 0 ORDER BY customer_id

-- q: risk.distinct_key_modulo ordered
SELECT DISTINCT customer_id % 7 FROM orders ORDER BY 1

-- q: risk.count_distinct_key_modulo ordered
SELECT count(DISTINCT customer_id % 7), count(DISTINCT customer_id / 10) FROM orders

-- q: risk.count_distinct_key_join ordered
SELECT count(DISTINCT c.country), count(DISTINCT o.customer_id) FROM orders o JOIN customers c ON c.id = o.customer_id

-- q: risk.distinct_on_key_modulo ordered
SELECT DISTINCT ON (customer_id % 3) customer_id % 3, id FROM orders ORDER BY customer_id % 3, id

-- q: risk.window_partition_key_modulo ordered
SELECT id, count(*) OVER (PARTITION BY customer_id % 2) FROM orders WHERE id < 50 ORDER BY id

-- q: risk.window_partition_key ordered
SELECT customer_id, id, count(*) OVER (PARTITION BY customer_id), rank() OVER (PARTITION BY customer_id ORDER BY total DESC, id) FROM orders ORDER BY customer_id, id LIMIT 40

-- q: risk.window_partition_key_filter ordered
SELECT customer_id, id FROM (SELECT customer_id, id, row_number() OVER (PARTITION BY customer_id ORDER BY id) AS rn FROM orders) s WHERE rn = 1 ORDER BY customer_id LIMIT 30

-- q: risk.rollup_key
SELECT customer_id, count(*) FROM orders WHERE customer_id BETWEEN 1 AND 20 GROUP BY ROLLUP (customer_id)

-- q: risk.grouping_sets_key
SELECT customer_id, status, count(*) FROM orders WHERE customer_id < 10 GROUP BY GROUPING SETS ((customer_id), (status), ())

-- q: risk.cube_key
SELECT customer_id, gift, count(*) FROM orders WHERE customer_id < 10 GROUP BY CUBE (customer_id, gift)

-- q: risk.rollup_key_pinned
SELECT customer_id, status, count(*) FROM orders WHERE customer_id IN (7, 9) GROUP BY ROLLUP (customer_id, status)

-- q: risk.grouping_sets_empty_only ordered
SELECT count(*), sum(total) FROM orders GROUP BY GROUPING SETS (())

-- q: risk.group_by_empty_parens ordered
SELECT count(*) FROM orders GROUP BY ()

-- q: risk.count_limited_derived ordered
SELECT count(*) FROM (SELECT id FROM orders LIMIT 10) s

-- q: risk.sum_top_derived ordered
SELECT sum(total), count(*) FROM (SELECT total FROM orders ORDER BY total DESC, id LIMIT 10) s

-- q: risk.distinct_limited_derived ordered
SELECT count(DISTINCT customer_id) FROM (SELECT customer_id FROM orders ORDER BY id LIMIT 25) s

-- q: risk.offset_derived ordered
SELECT id FROM (SELECT id FROM orders ORDER BY id OFFSET 5) s ORDER BY id LIMIT 3

-- q: risk.in_limited_subquery
SELECT id FROM customers WHERE id IN (SELECT customer_id FROM orders ORDER BY total DESC, id LIMIT 3)

-- q: risk.exists_limited_derived ordered
SELECT count(*) FROM customers c WHERE c.id IN (SELECT customer_id FROM (SELECT customer_id FROM orders ORDER BY id LIMIT 5) s)

-- q: risk.row_number_global_max ordered
SELECT max(rn), min(rn) FROM (SELECT row_number() OVER () AS rn FROM orders) s

-- q: risk.window_count_grouped
SELECT status, count(*), count(*) OVER () FROM orders GROUP BY status

-- q: risk.distinct_aggregate_key_group
SELECT DISTINCT count(*) FROM orders GROUP BY customer_id

-- q: risk.union_branch_limits ordered
(SELECT id FROM orders ORDER BY id LIMIT 3) UNION ALL (SELECT id FROM orders ORDER BY id DESC LIMIT 3) ORDER BY 1

-- q: risk.union_branch_limit_count ordered
SELECT count(*) FROM ((SELECT id FROM orders ORDER BY id LIMIT 4) UNION ALL (SELECT id FROM customers ORDER BY id LIMIT 4)) s

-- q: risk.intersect_non_key_pins
SELECT status FROM orders WHERE customer_id = 9 INTERSECT SELECT status FROM orders WHERE customer_id = 7

-- q: risk.intersect_non_key_scatter
SELECT qty FROM orders INTERSECT SELECT tier FROM customers

-- q: risk.except_non_key_scatter
SELECT qty FROM orders EXCEPT SELECT tier FROM customers

-- q: risk.except_all_counts
SELECT status FROM orders EXCEPT ALL SELECT status FROM orders WHERE total > 100

-- q: risk.intersect_all_counts
SELECT status FROM orders INTERSECT ALL SELECT status FROM orders WHERE gift

-- q: risk.union_distinct_non_key
SELECT status FROM orders WHERE customer_id = 7 UNION SELECT status FROM orders WHERE customer_id = 9

-- q: risk.union_type_resolution
SELECT 1 AS v FROM customers WHERE id = 7 UNION SELECT 2.5 FROM customers WHERE id = 9

-- q: risk.union_all_type_resolution
SELECT tier FROM customers WHERE id = 9 UNION ALL SELECT qty FROM orders WHERE customer_id = 7 AND qty IS NOT NULL

-- q: risk.order_jsonb_numbers ordered
SELECT to_jsonb(total) AS j, id FROM orders ORDER BY j, id LIMIT 25

-- q: risk.order_jsonb_numbers_desc ordered
SELECT to_jsonb(qty) AS j, id FROM orders ORDER BY j DESC, id LIMIT 25

-- q: risk.order_jsonb_mixed ordered
SELECT attrs -> 'size' AS s, sku FROM products ORDER BY s NULLS FIRST, sku LIMIT 40

-- q: risk.order_int_array ordered
SELECT ARRAY[qty, id::int] AS a, id FROM orders WHERE qty IS NOT NULL ORDER BY a, id LIMIT 25

-- q: risk.order_text_array_prefix ordered
SELECT tags, id FROM customers WHERE tags IS NOT NULL ORDER BY tags, id LIMIT 40

-- q: risk.order_numeric_array ordered
SELECT ARRAY[total] AS a, id FROM orders ORDER BY a DESC, id LIMIT 20

-- q: risk.order_interval_units ordered
SELECT session * id AS s, id FROM customers WHERE session IS NOT NULL AND id BETWEEN 1 AND 360 ORDER BY s, id LIMIT 25

-- q: risk.order_interval_days ordered
SELECT make_interval(days => (id % 40)::int, hours => (id % 50)::int) AS s, id FROM customers WHERE id BETWEEN 1 AND 360 ORDER BY s DESC, id LIMIT 25

-- q: risk.order_timetz ordered
SELECT (placed_at AT TIME ZONE 'UTC')::time AS t, id FROM orders ORDER BY t, id LIMIT 20

-- q: risk.order_timetz_zone ordered
SELECT last_seen::timetz AS t, id FROM customers WHERE last_seen IS NOT NULL ORDER BY t, id LIMIT 20

-- q: risk.order_inet ordered
SELECT ('10.' || (id % 256) || '.0.' || (id % 7))::inet AS a, id FROM orders ORDER BY a, id LIMIT 20

-- q: risk.order_int4range ordered
SELECT int4range(qty, qty + (id % 5)::int) AS r, id FROM orders WHERE qty IS NOT NULL ORDER BY r, id LIMIT 20

-- q: risk.order_money ordered
SELECT total::money AS m, id FROM orders ORDER BY m, id LIMIT 15

-- q: risk.order_bit ordered
SELECT (id % 256)::int::bit(8) AS b, id FROM customers ORDER BY b, id LIMIT 15

-- q: risk.order_pattern_ops ordered
SELECT name, id FROM customers WHERE id < 100 ORDER BY name USING ~<~, id

-- q: risk.order_using_gt ordered
SELECT id FROM customers WHERE id < 60 ORDER BY id USING >

-- q: risk.order_row ordered
SELECT ROW(tier, id) AS r FROM customers WHERE id < 60 ORDER BY r

-- q: risk.order_bool_desc ordered
SELECT active, id FROM customers WHERE id < 60 ORDER BY active DESC, id

-- q: risk.order_char_padding ordered
SELECT code, id FROM customers WHERE code IS NOT NULL ORDER BY code DESC, id LIMIT 30

-- q: risk.order_numeric_text ordered
SELECT total::text AS t, id FROM orders ORDER BY t, id LIMIT 20

-- q: risk.order_float_neg_zero ordered
SELECT score, id FROM customers WHERE score BETWEEN -1 AND 1 ORDER BY score, id

-- q: risk.order_date_text_sql ordered
SELECT to_char(ship_date, 'DD/MM/YYYY') AS d, id FROM orders WHERE ship_date IS NOT NULL ORDER BY d, id LIMIT 20

-- q: risk.min_max_jsonb_proxy_types ordered
SELECT min(total::money), max(total::money), min((placed_at AT TIME ZONE 'UTC')::time), max(last_seen::timetz) FROM orders o JOIN customers c ON c.id = o.customer_id

-- q: risk.min_max_inet ordered
SELECT min(('10.0.' || (id % 256) || '.1')::inet), max(('10.0.' || (id % 256) || '.1')::inet) FROM orders

-- q: risk.min_max_array ordered
SELECT min(ARRAY[qty, id::int]), max(ARRAY[qty]) FROM orders

-- q: risk.max_interval_units ordered
SELECT max(make_interval(days => (id % 3)::int, hours => (id % 70)::int)), min(make_interval(months => (id % 2)::int, days => (id % 31)::int)) FROM orders

-- q: risk.sum_interval_units ordered
SELECT sum(make_interval(days => (id % 3)::int, hours => (id % 70)::int)), avg(make_interval(months => (id % 2)::int, days => (id % 31)::int)) FROM orders

-- q: risk.group_interval_equal_spellings ordered
SELECT count(*), sum(n) FROM (SELECT make_interval(hours => (id % 2)::int * 24, days => 1 - (id % 2)::int) AS iv, count(*) AS n FROM orders GROUP BY 1) s

-- q: risk.count_distinct_interval_spellings ordered
SELECT count(DISTINCT make_interval(hours => (id % 2)::int * 24, days => 1 - (id % 2)::int)) FROM orders

-- q: risk.distinct_interval_spellings_count ordered
SELECT count(*) FROM (SELECT DISTINCT make_interval(hours => (id % 2)::int * 24, days => 1 - (id % 2)::int) FROM orders) s

-- q: risk.group_numeric_equal_scales ordered
SELECT count(*) FROM (SELECT (qty::numeric / 2) * 2 AS v FROM orders UNION SELECT qty FROM orders) s

-- q: risk.distinct_numeric_scales
SELECT DISTINCT total / 1.0 FROM orders WHERE customer_id IN (1, 2, 3, 9)

-- q: risk.avg_int_division_scale ordered
SELECT avg(qty), avg(qty::bigint), avg(qty::smallint), avg(id), sum(qty), sum(id) FROM orders

-- q: risk.avg_group_scale ordered
SELECT status, avg(qty), avg(total), avg(discount) FROM orders GROUP BY status ORDER BY status

-- q: risk.sum_types ordered
SELECT pg_typeof(sum(qty)), pg_typeof(sum(id)), pg_typeof(sum(total)), pg_typeof(avg(qty)), pg_typeof(count(*)), sum(qty::smallint) FROM orders

-- q: risk.avg_float_int ordered
SELECT avg(weight), avg(rating), avg(tier) FROM orders o JOIN customers c ON c.id = o.customer_id WHERE weight <> 'NaN' AND c.id BETWEEN 1 AND 360

-- q: risk.having_sharded_subquery ordered
SELECT status, count(*) FROM orders GROUP BY status HAVING count(*) > (SELECT count(*) FROM customers) ORDER BY status

-- q: risk.order_by_aggregate_scatter_limit ordered
SELECT count(*) AS n FROM orders GROUP BY customer_id ORDER BY n DESC LIMIT 5

-- q: risk.count_star_join_reference ordered
SELECT count(*) FROM orders o JOIN currencies c ON c.code = o.currency

-- q: risk.join_reference_only ordered
SELECT count(*) FROM countries a JOIN currencies b ON b.minor = length(a.code)

-- q: risk.self_join_reference
SELECT a.code, b.code FROM countries a JOIN countries b ON a.region = b.region AND a.code < b.code

-- q: risk.reference_in_sharded_subquery
SELECT code FROM countries WHERE code IN (SELECT country FROM customers WHERE tier = 5)

-- q: risk.reference_not_in_sharded
SELECT count(*) FROM countries WHERE code NOT IN (SELECT country FROM customers WHERE country IS NOT NULL)

-- q: risk.reference_exists_sharded
SELECT code FROM countries k WHERE NOT EXISTS (SELECT 1 FROM customers c WHERE c.country = k.code)

-- q: risk.main_join_sharded
SELECT s.k, count(o.id) FROM settings s LEFT JOIN orders o ON o.note = s.v GROUP BY s.k

-- q: risk.main_in_sharded
SELECT k FROM settings WHERE v IN (SELECT note FROM orders WHERE customer_id = 42)

-- q: risk.sharded_in_main
SELECT count(*) FROM orders WHERE note IN (SELECT v FROM settings)

-- q: risk.catalog_join_items
SELECT count(*) FROM items i JOIN products p ON lower(p.sku) = lower(i.sku)

-- q: risk.catalog_left_join_items ordered
SELECT count(*), count(p.sku) FROM items i LEFT JOIN products p ON p.sku = i.sku

-- q: risk.products_in_items
SELECT count(*) FROM products WHERE lower(sku) IN (SELECT lower(sku) FROM items WHERE customer_id = 7)


-- ===================================================================
-- Values equal in Postgres but written with different bytes (numeric
-- scales of a quotient, -0 and 0, bpchar trailing blanks, jsonb numbers,
-- interval units): DISTINCT, GROUP BY, UNION and count(DISTINCT) must
-- merge them by value across shards. Row counts, or multisets of counts,
-- where Postgres itself may print either spelling.
-- ===================================================================

-- q: eqv.distinct_quotient countonly
SELECT DISTINCT total / qty FROM orders WHERE qty IS NOT NULL

-- q: eqv.count_distinct_quotient ordered
SELECT count(DISTINCT total / qty) FROM orders

-- q: eqv.group_quotient_counts
SELECT count(*) FROM orders WHERE qty IS NOT NULL GROUP BY total / qty

-- q: eqv.union_quotient countonly
SELECT total / qty FROM orders WHERE qty > 10 UNION SELECT total / qty FROM orders WHERE qty <= 10

-- q: eqv.distinct_neg_zero countonly
SELECT DISTINCT score * 0 FROM customers WHERE id BETWEEN 1 AND 360

-- q: eqv.count_distinct_neg_zero ordered
SELECT count(DISTINCT score * 0), count(DISTINCT rating * 0) FROM customers WHERE id BETWEEN 1 AND 360

-- q: eqv.group_neg_zero_counts
SELECT count(*) FROM customers WHERE id BETWEEN 1 AND 360 AND score IS NOT NULL GROUP BY score * 0

-- q: eqv.distinct_bpchar_blanks countonly
SELECT DISTINCT (status || repeat(' ', (id % 3)::int))::bpchar FROM orders

-- q: eqv.count_distinct_bpchar_blanks ordered
SELECT count(DISTINCT (status || repeat(' ', (id % 3)::int))::bpchar) FROM orders

-- q: eqv.group_bpchar_blanks_counts
SELECT count(*) FROM orders GROUP BY (status || repeat(' ', (id % 3)::int))::bpchar

-- q: eqv.distinct_jsonb_numbers countonly
SELECT DISTINCT to_jsonb(total / qty) FROM orders WHERE qty IS NOT NULL

-- q: eqv.count_distinct_jsonb_numbers ordered
SELECT count(DISTINCT to_jsonb(total / qty)) FROM orders

-- q: eqv.distinct_numeric_array countonly
SELECT DISTINCT ARRAY[total / qty] FROM orders WHERE qty IS NOT NULL

-- q: eqv.group_interval_counts
SELECT count(*) FROM orders GROUP BY make_interval(hours => (id % 2)::int * 24, days => 1 - (id % 2)::int)

-- q: eqv.distinct_on_quotient countonly
SELECT DISTINCT ON (total / qty) id FROM orders WHERE qty IS NOT NULL ORDER BY total / qty, id

-- q: eqv.intersect_quotient countonly
SELECT total / qty FROM orders WHERE qty > 10 INTERSECT SELECT total / qty FROM orders WHERE qty <= 10

-- q: eqv.except_quotient countonly
SELECT total / qty FROM orders WHERE qty > 10 EXCEPT SELECT total / qty FROM orders WHERE qty <= 10

-- q: eqv.join_on_quotient ordered
SELECT count(*) FROM (SELECT DISTINCT total / qty AS r FROM orders WHERE qty > 10) a JOIN (SELECT DISTINCT total / qty AS r FROM orders WHERE qty <= 10) b ON a.r = b.r

-- ===================================================================
-- Column names and type modifiers of what the proxy computes itself:
-- unaliased expressions over merged aggregates take Postgres' names
-- (?column?, sum, case, coalesce, ...).
-- ===================================================================

-- q: names.quotient_of_aggregates ordered
SELECT sum(total) / count(*) FROM orders

-- q: names.cast_of_aggregate ordered
SELECT avg(total)::numeric(10,2), sum(qty)::int, count(*)::text FROM orders

-- q: names.functions_of_aggregates ordered
SELECT round(avg(total), 2), coalesce(sum(discount), 0), abs(min(total)), greatest(max(qty), 0) FROM orders

-- q: names.case_of_aggregate ordered
SELECT CASE WHEN count(*) > 100 THEN 'many' ELSE 'few' END FROM orders

-- q: names.operators_of_aggregates ordered
SELECT max(total) - min(total), -sum(qty), sum(qty) IS NULL, count(*) + 1, (count(*)) FROM orders

-- q: names.filter_aggregates ordered
SELECT count(*) FILTER (WHERE gift), sum(total) FILTER (WHERE status = 'paid') FROM orders

-- q: names.group_expressions ordered
SELECT status || '!', count(*) * 2, upper(status) FROM orders GROUP BY status ORDER BY 1

-- q: names.quoted_aliases ordered
SELECT count(*) AS "Count", sum(total) AS "sum(total)", max(placed_at) AS "Last Order" FROM orders

-- q: names.typmods_passthrough
SELECT code, nick, balance, total, currency FROM customers c JOIN orders o ON o.customer_id = c.id WHERE c.id IN (1, 2, 3, 9)

-- q: names.typmods_aggregates ordered
SELECT max(code), min(nick), max(balance), min(total), max(currency) FROM customers c JOIN orders o ON o.customer_id = c.id

-- q: names.typmods_distinct ordered
SELECT DISTINCT currency FROM orders ORDER BY currency NULLS FIRST

-- q: names.typmods_union
SELECT code FROM customers WHERE id < 20 UNION SELECT code FROM customers WHERE id > 340

-- q: names.typmods_case
SELECT CASE WHEN tier > 2 THEN code ELSE code END, coalesce(code, 'x') FROM customers WHERE id < 30

-- q: names.star_join_pinned ordered
SELECT * FROM orders o JOIN customers c ON c.id = o.customer_id WHERE o.customer_id = 9 ORDER BY o.id

-- q: names.star_join_scatter ordered
SELECT * FROM orders o JOIN items i ON i.customer_id = o.customer_id AND i.order_id = o.id ORDER BY o.id, i.line LIMIT 15

-- q: names.table_syntax
TABLE currencies

-- q: names.table_syntax_sharded
TABLE orders

-- q: names.select_all_distinct_star
SELECT DISTINCT * FROM countries

-- q: names.comments ordered
/* application:Shop,controller:orders */ SELECT id, total FROM orders WHERE customer_id = 7 ORDER BY id -- trailing

-- q: names.comment_scatter ordered
SELECT /*+ hint */ count(*) FROM orders /* inline */ WHERE status = 'paid'

-- q: names.array_exists_names ordered
SELECT EXISTS (SELECT 1 FROM orders WHERE total > 4000), ARRAY(SELECT code FROM currencies ORDER BY code), ROW(1, 'a')

-- ===================================================================
-- Locking reads and job-queue shapes ORMs send (SKIP LOCKED), limits at
-- the edges of bigint, and FETCH FIRST 0 ROWS.
-- ===================================================================

-- q: lock.for_update_pinned ordered
SELECT id, status FROM orders WHERE customer_id = 7 ORDER BY id FOR UPDATE

-- q: lock.for_update_skip_locked ordered
SELECT id FROM orders WHERE customer_id = 42 AND status = 'pending' ORDER BY id LIMIT 3 FOR UPDATE SKIP LOCKED

-- q: lock.for_share_scatter
SELECT id FROM customers WHERE tier = 5 FOR SHARE

-- q: lock.for_no_key_update_of ordered
SELECT o.id FROM orders o JOIN customers c ON c.id = o.customer_id WHERE c.id = 3 ORDER BY o.id FOR NO KEY UPDATE OF o

-- q: lock.for_update_scatter_limit ordered
SELECT id FROM orders WHERE status = 'pending' ORDER BY id LIMIT 5 FOR UPDATE SKIP LOCKED

-- q: lock.limit_max_bigint ordered
SELECT id FROM customers WHERE id < 10 ORDER BY id LIMIT 9223372036854775807

-- q: lock.offset_max_bigint
SELECT id FROM customers ORDER BY id OFFSET 9223372036854775807

-- q: lock.offset_negative error
SELECT id FROM customers ORDER BY id OFFSET -1

-- q: lock.fetch_zero
SELECT id FROM customers ORDER BY id FETCH FIRST 0 ROWS ONLY

-- q: lock.limit_param_big ordered args=9223372036854775807,2
SELECT id FROM customers WHERE id < 10 ORDER BY id LIMIT $1 OFFSET $2

-- q: lock.offset_param_null ordered args=NULL
SELECT id FROM customers WHERE id < 6 ORDER BY id OFFSET $1


-- ===================================================================
-- Expressions the proxy may evaluate over merged aggregates: their
-- errors (division by zero, overflow, out-of-range results, bad
-- arguments) carry Postgres' SQLSTATE, their values its output; a scalar
-- subquery of several rows fails as in Postgres; text search.
-- ===================================================================

-- q: aggx.div_zero_filter_count error
SELECT sum(total) / count(*) FILTER (WHERE false) FROM orders

-- q: aggx.div_zero_int error
SELECT count(*) / (max(qty) - max(qty)) FROM orders

-- q: aggx.mod_zero error
SELECT sum(qty) % (count(*) - count(*)) FROM orders

-- q: aggx.float_div_zero error
SELECT sum(weight) / 0 FROM orders WHERE weight <> 'NaN'

-- q: aggx.sqrt_negative error
SELECT sqrt(min(total)) FROM orders

-- q: aggx.ln_negative error
SELECT ln(min(total)) FROM orders

-- q: aggx.int_overflow_mul error
SELECT count(*)::int * 2147483647 FROM orders

-- q: aggx.smallint_overflow error
SELECT (sum(qty) * 100)::smallint FROM orders

-- q: aggx.bigint_overflow error
SELECT max(customer_id) + 1 FROM orders

-- q: aggx.timestamp_out_of_range error
SELECT max(placed_at) + interval '300000 years' FROM orders

-- q: aggx.date_out_of_range error
SELECT min(ship_date) - 100000000 FROM orders

-- q: aggx.numeric_typmod_overflow error
SELECT sum(total)::numeric(5,2) FROM orders

-- q: aggx.group_div_zero error
SELECT status, sum(total) / (count(*) - count(*)) FROM orders GROUP BY status

-- q: aggx.having_div_zero error
SELECT status FROM orders GROUP BY status HAVING sum(total) / (count(*) - count(*)) > 0

-- q: aggx.order_by_div_zero error
SELECT status FROM orders GROUP BY status ORDER BY sum(qty) / (count(*) - count(*))

-- q: aggx.values_scale ordered
SELECT sum(total) * 1.5, sum(total) / 3, sum(total) / 7.0, avg(total) * avg(total), max(total) * max(total) * max(total) FROM orders

-- q: aggx.values_int ordered
SELECT count(*) / 7, count(*) % 7, sum(qty) / 13, sum(qty) % 13, -count(*), abs(-sum(qty)) FROM orders

-- q: aggx.values_float ordered
SELECT sum(qty) ^ 2, count(*)::float4 / 3, sum(weight) / 3, avg(weight) * 1.1 FROM orders WHERE weight <> 'NaN'

-- q: aggx.values_null ordered
SELECT sum(total) + NULL, max(qty) * NULL::int, count(*) FILTER (WHERE false) + 1, sum(qty) FILTER (WHERE false) + 1 FROM orders

-- q: aggx.values_numeric_funcs ordered
SELECT power(sum(qty), 0.5), exp(max(qty)::numeric / 10), ln(max(total)), log(max(total)), trunc(avg(total), 1), ceil(avg(qty)), floor(avg(qty)) FROM orders

-- q: aggx.values_text ordered
SELECT count(*)::text || ' orders', max(status) || '/' || min(status), upper(max(note)), length(string_agg(status, '' ORDER BY id)) FROM orders

-- q: aggx.values_bool ordered
SELECT count(*) > 100, sum(total) < 0, max(qty) = 20 AND min(qty) = 1, bool_and(gift) IS NULL FROM orders

-- q: aggx.values_dates ordered
SELECT max(ship_date) - 7, min(ship_date) + interval '1 day', max(placed_at)::date, date_trunc('year', min(placed_at)), extract(year FROM max(ship_date)) FROM orders

-- q: aggx.values_intervals ordered
SELECT sum(session) * 2, sum(session) / 3, max(session) - min(session), justify_hours(sum(session)), sum(session) + interval '1 month' FROM customers

-- q: aggx.values_grouped_intervals ordered
SELECT tier, sum(session) / count(*), avg(session) FROM customers GROUP BY tier ORDER BY tier NULLS FIRST

-- q: aggx.values_money ordered
SELECT sum(total)::money, max(total)::money * 2 FROM orders

-- q: aggx.values_case_types ordered
SELECT CASE WHEN count(*) > 0 THEN sum(total) ELSE 0.5 END, CASE WHEN count(*) > 0 THEN count(*) ELSE 1.5 END FROM orders

-- q: aggx.values_greatest ordered
SELECT greatest(max(total), 1000), least(min(qty), 0), greatest(max(placed_at), timestamptz '2000-01-01 00:00+00') FROM orders

-- q: aggx.scalar_subquery_many_rows error
SELECT (SELECT id FROM orders WHERE customer_id = 7)

-- q: aggx.scalar_subquery_many_rows_scatter error
SELECT id FROM customers WHERE id = (SELECT customer_id FROM orders WHERE total > 1000)

-- q: aggx.scalar_subquery_none ordered
SELECT (SELECT id FROM customers WHERE tier = 99) AS none

-- q: aggx.scalar_subquery_null_compare
SELECT id FROM customers WHERE id = (SELECT id FROM customers WHERE tier = 99)

-- q: aggx.in_subquery_empty ordered
SELECT count(*) FROM customers WHERE id IN (SELECT customer_id FROM orders WHERE total > 1000000)

-- q: aggx.not_in_subquery_empty ordered
SELECT count(*) FROM customers WHERE id NOT IN (SELECT customer_id FROM orders WHERE total > 1000000)

-- q: aggx.subquery_two_columns error
SELECT id FROM customers WHERE id IN (SELECT customer_id, id FROM orders)

-- q: fts.match_count ordered
SELECT count(*) FROM orders WHERE to_tsvector('simple', note) @@ to_tsquery('simple', 'door')

-- q: fts.match_group ordered
SELECT status, count(*) FROM orders WHERE to_tsvector('simple', coalesce(note, '')) @@ plainto_tsquery('simple', 'leave door') GROUP BY status ORDER BY status

-- q: fts.rank_order ordered
SELECT id, ts_rank(to_tsvector('simple', note), to_tsquery('simple', 'door | fragile')) AS r FROM orders WHERE note IS NOT NULL AND customer_id IN (3, 7, 42) ORDER BY r DESC, id LIMIT 10

-- q: fts.headline
SELECT id, ts_headline('simple', note, to_tsquery('simple', 'door')) FROM orders WHERE customer_id = 7 AND note ILIKE '%door%'

-- ===================================================================
-- Session output settings over the newer shapes: windows and INTERSECT
-- over IN lists spanning clusters, percentiles, DISTINCT ON, merged
-- expressions, under German dates, postgres_verbose intervals, a
-- far-off time zone, short floats and escaped bytea.
-- ===================================================================

-- q: styles2.set_datestyle
SET DateStyle = 'German'

-- q: styles2.set_intervalstyle
SET IntervalStyle = 'postgres_verbose'

-- q: styles2.set_timezone
SET TimeZone = 'Pacific/Chatham'

-- q: styles2.set_float_digits
SET extra_float_digits = -2

-- q: styles2.set_bytea
SET bytea_output = 'escape'

-- q: styles2.window_span ordered
SELECT id, placed_at, ship_date, lag(placed_at) OVER (ORDER BY id), weight / 3 FROM orders WHERE customer_id IN (3, 9) ORDER BY id

-- q: styles2.intersect_span
SELECT ship_date FROM orders WHERE customer_id = 9 INTERSECT SELECT ship_date FROM orders WHERE customer_id = 7

-- q: styles2.percentiles ordered
SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY placed_at - timestamptz '2020-01-01 00:00+00'), percentile_disc(0.5) WITHIN GROUP (ORDER BY ship_date), percentile_cont(0.3) WITHIN GROUP (ORDER BY weight) FROM orders

-- q: styles2.distinct_on ordered
SELECT DISTINCT ON (status) status, placed_at, ship_date, weight / 7 FROM orders ORDER BY status, placed_at DESC, id

-- q: styles2.merged_expressions ordered
SELECT max(placed_at) - min(placed_at), min(ship_date) + 1, sum(weight) / 7, avg(weight), max(session) FROM orders, (SELECT max(session) AS session FROM customers) s WHERE weight <> 'NaN'

-- q: styles2.group_dates
SELECT ship_date, count(*) FROM orders WHERE ship_date < '2020-03-01' GROUP BY ship_date

-- q: styles2.order_dates ordered
SELECT ship_date, id FROM orders WHERE ship_date IS NOT NULL ORDER BY ship_date DESC, id LIMIT 15

-- q: styles2.order_timestamptz ordered
SELECT placed_at, id FROM orders ORDER BY placed_at, id LIMIT 15

-- q: styles2.order_bytea ordered
SELECT avatar, id FROM customers ORDER BY avatar NULLS FIRST, id LIMIT 20

-- q: styles2.distinct_bytea
SELECT DISTINCT avatar FROM customers

-- q: styles2.min_max_intervals ordered
SELECT tier, min(session), max(session), sum(session) FROM customers GROUP BY tier ORDER BY tier NULLS FIRST

-- q: styles2.pullout_date
SELECT id FROM orders WHERE ship_date = (SELECT max(ship_date) FROM orders WHERE customer_id = 9)

-- q: styles2.pullout_float
SELECT id FROM orders WHERE weight = (SELECT max(weight) FROM orders WHERE customer_id = 9 AND weight <> 'NaN')

-- q: styles2.pullout_interval
SELECT id FROM customers WHERE session = (SELECT max(session) FROM customers WHERE tier = 2)

-- q: styles2.pullout_timestamptz
SELECT id FROM orders WHERE placed_at = (SELECT min(placed_at) FROM orders WHERE customer_id = 42)

-- q: styles2.intermediate_join_dates
SELECT i.order_id, p.released, o.ship_date FROM items i JOIN products p ON lower(p.sku) = lower(i.sku) JOIN orders o ON o.customer_id = i.customer_id AND o.id = i.order_id WHERE i.customer_id IN (3, 9) AND p.released IS NOT NULL

-- q: styles2.reset_datestyle
RESET DateStyle

-- q: styles2.reset_intervalstyle
RESET IntervalStyle

-- q: styles2.reset_timezone
RESET TimeZone

-- q: styles2.reset_float_digits
RESET extra_float_digits

-- q: styles2.reset_bytea
RESET bytea_output


-- ===================================================================
-- Statements whose parts are pinned to different shards (customers 7 and
-- 42 on pg0, 9 and 100 on pg1): a subquery, CTE or second table instance
-- with its own key condition must read its own shard, not the outer
-- one's; row-valued IN lists over the key; whole-row references (their
-- fields: a table's row type has a different OID on every cluster, so
-- SELECT c FROM customers c differs from the oracle in the column's type
-- OID alone).
-- ===================================================================

-- q: pins.exists_other_shard ordered
SELECT id FROM customers WHERE id = 7 AND EXISTS (SELECT 1 FROM orders o2 WHERE o2.customer_id = 9)

-- q: pins.not_exists_other_shard ordered
SELECT id FROM customers WHERE id = 7 AND NOT EXISTS (SELECT 1 FROM orders o2 WHERE o2.customer_id = 9)

-- q: pins.scalar_other_shard ordered
SELECT id, (SELECT count(*) FROM orders WHERE customer_id = 9) AS n9 FROM customers WHERE id = 7

-- q: pins.in_other_shard ordered
SELECT id, tier FROM customers c WHERE c.id = 7 AND c.tier IN (SELECT tier FROM customers WHERE id = 9)

-- q: pins.in_other_shard_negated ordered
SELECT id FROM customers c WHERE c.id = 7 AND c.tier NOT IN (SELECT coalesce(tier, 0) FROM customers WHERE id = 9)

-- q: pins.cte_other_shard ordered
WITH x AS (SELECT * FROM orders WHERE customer_id = 9) SELECT count(*) FROM customers c, x WHERE c.id = 7

-- q: pins.two_instances_no_join ordered
SELECT a.id, a.name, b.id, b.name FROM customers a, customers b WHERE a.id = 7 AND b.id = 9

-- q: pins.two_instances_same_cluster ordered
SELECT a.id, b.id FROM customers a, customers b WHERE a.id = 7 AND b.id = 3

-- q: pins.join_non_key_two_pins ordered
SELECT count(*) FROM orders a JOIN orders b ON a.status = b.status WHERE a.customer_id = 7 AND b.customer_id = 9

-- q: pins.join_non_key_same_cluster ordered
SELECT count(*) FROM orders a JOIN orders b ON a.status = b.status WHERE a.customer_id = 7 AND b.customer_id = 3

-- q: pins.derived_other_shard ordered
SELECT c.id, d.n FROM customers c, (SELECT count(*) AS n FROM orders WHERE customer_id = 100) d WHERE c.id = 42

-- q: pins.lateral_other_shard ordered
SELECT c.id, x.n FROM customers c, LATERAL (SELECT count(*) AS n FROM orders o WHERE o.customer_id = 9 AND o.qty > c.tier) x WHERE c.id = 7

-- q: pins.union_in_subquery ordered
SELECT count(*) FROM orders WHERE customer_id = 7 AND status IN (SELECT status FROM orders WHERE customer_id = 9 UNION SELECT 'x')

-- q: pins.param_other_shard ordered args=7,9
SELECT id, (SELECT count(*) FROM orders WHERE customer_id = $2) FROM customers WHERE id = $1

-- q: pins.param_exists_other ordered args=7,9
SELECT id FROM customers WHERE id = $1 AND EXISTS (SELECT 1 FROM orders WHERE customer_id = $2 AND total > 0)

-- q: pins.row_in_key_pairs
SELECT id, customer_id FROM orders WHERE (customer_id, status) IN ((7, 'paid'), (9, 'paid'))

-- q: pins.row_in_key_pairs_count ordered
SELECT count(*) FROM orders WHERE (customer_id, status) IN ((7, 'paid'), (9, 'paid'), (42, 'pending'))

-- q: pins.row_eq_key ordered
SELECT count(*) FROM orders WHERE (customer_id, status) = (9, 'paid')

-- q: pins.or_mixed_conditions ordered
SELECT count(*) FROM orders WHERE customer_id = 7 OR (customer_id = 9 AND status = 'paid')

-- q: pins.key_is_true ordered
SELECT count(*) FROM orders WHERE (customer_id = 9) IS TRUE

-- q: pins.key_in_and_in
SELECT id FROM orders WHERE customer_id IN (7) AND customer_id IN (9)

-- q: pins.key_any_minus ordered
SELECT count(*) FROM orders WHERE customer_id = ANY (ARRAY[7, 9]) AND customer_id <> 9

-- q: pins.key_not_all ordered
SELECT count(*) FROM orders WHERE NOT (customer_id <> ALL (ARRAY[7, 9]))

-- q: pins.key_case ordered
SELECT count(*) FROM orders WHERE CASE WHEN customer_id = 9 THEN true ELSE false END

-- q: pins.whole_row_field ordered
SELECT (c).name, (c).tier FROM customers c WHERE id IN (1, 2, 9) ORDER BY id

-- q: pins.row_to_json ordered
SELECT row_to_json(o) FROM orders o WHERE customer_id = 9 ORDER BY id

-- q: pins.json_agg_rows ordered
SELECT json_agg(c ORDER BY c.id) FROM (SELECT id, name, tier FROM customers WHERE id < 6) c

-- q: pins.star_and_more ordered
SELECT o.*, c.name FROM orders o JOIN customers c ON c.id = o.customer_id WHERE o.customer_id IN (2, 9) ORDER BY o.id

-- q: pins.aggregate_of_correlated ordered
SELECT max((SELECT count(*) FROM items i WHERE i.order_id = o.id AND i.customer_id = o.customer_id)) FROM orders o

-- q: pins.sum_case_exists ordered
SELECT sum(CASE WHEN EXISTS (SELECT 1 FROM items i WHERE i.customer_id = o.customer_id AND i.order_id = o.id) THEN 1 ELSE 0 END) FROM orders o

-- q: pins.events_kinds
SELECT kind, count(*), sum(amount) FROM events GROUP BY kind

-- q: pins.events_join_orders ordered
SELECT count(*) FROM events e JOIN orders o ON o.customer_id = e.customer_id

-- q: pins.events_payload
SELECT customer_id, seq, payload ->> 'k' FROM events WHERE payload ? 'k'

-- q: pins.events_window ordered
SELECT customer_id, seq, row_number() OVER (PARTITION BY customer_id ORDER BY seq) FROM events ORDER BY customer_id, seq


-- ===================================================================
-- Bound keys that span clusters (or not) under what no merge can do:
-- window functions, frames with bound offsets, LIMIT in a derived table,
-- INTERSECT, ordered-set and ordered aggregates; parameters in the
-- statements that run over intermediate results.
-- ===================================================================

-- q: pspan.window_any_two_clusters ordered args={7;9}
SELECT id, rank() OVER (ORDER BY total DESC, id) FROM orders WHERE customer_id = ANY($1::bigint[]) ORDER BY id

-- q: pspan.window_any_one_cluster ordered args={7;42}
SELECT id, rank() OVER (ORDER BY total DESC, id) FROM orders WHERE customer_id = ANY($1::bigint[]) ORDER BY id

-- q: pspan.window_in_params ordered args=3,9,100
SELECT id, dense_rank() OVER (ORDER BY status), count(*) OVER () FROM orders WHERE customer_id IN ($1, $2, $3) ORDER BY status, id

-- q: pspan.frame_param ordered args=9,42,2
SELECT id, sum(total) OVER (ORDER BY id ROWS BETWEEN $3 PRECEDING AND CURRENT ROW) FROM orders WHERE customer_id IN ($1, $2) ORDER BY id

-- q: pspan.derived_limit ordered args={7;9},3
SELECT * FROM (SELECT id, total FROM orders WHERE customer_id = ANY($1::bigint[]) ORDER BY total DESC, id LIMIT $2) s ORDER BY id

-- q: pspan.intersect_params args=7,9
SELECT status FROM orders WHERE customer_id = $1 INTERSECT SELECT status FROM orders WHERE customer_id = $2

-- q: pspan.except_params args=9,7
SELECT status FROM orders WHERE customer_id = $1 EXCEPT SELECT status FROM orders WHERE customer_id = $2

-- q: pspan.percentile_params ordered args=7,9
SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY total), mode() WITHIN GROUP (ORDER BY status) FROM orders WHERE customer_id IN ($1, $2)

-- q: pspan.string_agg_params ordered args=7,9
SELECT string_agg(status, ',' ORDER BY id), array_agg(id ORDER BY id DESC) FROM orders WHERE customer_id IN ($1, $2)

-- q: pspan.group_string_agg_params ordered args=3,9
SELECT customer_id, string_agg(status, ',' ORDER BY id) FROM orders WHERE customer_id IN ($1, $2) GROUP BY customer_id ORDER BY customer_id

-- q: pspan.top_per_customer ordered args=7,9,100
SELECT customer_id, id FROM (SELECT customer_id, id, row_number() OVER (PARTITION BY customer_id ORDER BY total DESC, id) AS rn FROM orders WHERE customer_id IN ($1, $2, $3)) s WHERE rn <= 2 ORDER BY customer_id, id

-- q: pspan.intermediate_limit_param ordered args=5
SELECT i.customer_id, i.order_id, i.line, p.name FROM items i JOIN products p ON lower(p.sku) = lower(i.sku) ORDER BY i.customer_id, i.order_id, i.line LIMIT $1

-- q: pspan.intermediate_filter_param args=150
SELECT p.category, count(*) FROM items i JOIN products p ON lower(p.sku) = lower(i.sku) WHERE p.price > $1 GROUP BY p.category

-- q: pspan.window_text_keys ordered args=Lyr-00001,MBZ-00002,FOS-00003
SELECT sku, rank() OVER (ORDER BY price DESC NULLS LAST, sku) FROM products WHERE lower(sku) IN (lower($1), lower($2), lower($3)) ORDER BY sku

-- q: pspan.window_literal_text_keys ordered
SELECT sku, row_number() OVER (ORDER BY sku) FROM products WHERE lower(sku) IN ('lyr-00001', 'mbz-00002', 'fos-00003') ORDER BY sku


-- ===================================================================
-- Odds and ends: nested derived tables and CTEs over windows, GROUP BY
-- with functional dependence on the key, DISTINCT over aggregates per
-- key, multiple set operations with parentheses, ORDER BY on a set
-- operation's column names, and VALUES joined to sharded aggregates.
-- ===================================================================

-- q: misc.nested_derived_window ordered
SELECT status, max(r) FROM (SELECT status, rn AS r FROM (SELECT status, row_number() OVER (PARTITION BY status ORDER BY id) AS rn FROM orders) a) b GROUP BY status ORDER BY status

-- q: misc.cte_window_cte ordered
WITH a AS (SELECT customer_id, sum(total) AS t FROM orders GROUP BY customer_id), b AS (SELECT customer_id, rank() OVER (ORDER BY t DESC, customer_id) AS r FROM a) SELECT customer_id, r FROM b WHERE r <= 5 ORDER BY r

-- q: misc.functional_dependence ordered
SELECT c.id, c.name, c.tier, count(o.id) FROM customers c LEFT JOIN orders o ON o.customer_id = c.id WHERE c.id BETWEEN 340 AND 360 GROUP BY c.id ORDER BY c.id

-- q: misc.distinct_counts_per_key ordered
SELECT DISTINCT n FROM (SELECT customer_id, count(*) AS n FROM orders GROUP BY customer_id) s ORDER BY n

-- q: misc.set_ops_parens ordered
(SELECT status FROM orders WHERE customer_id = 7 EXCEPT SELECT status FROM orders WHERE customer_id = 42) UNION (SELECT 'zzz') ORDER BY status

-- q: misc.set_ops_three ordered
SELECT status FROM orders WHERE qty = 1 UNION SELECT status FROM orders WHERE qty = 2 INTERSECT SELECT status FROM orders WHERE qty = 3 ORDER BY 1

-- q: misc.union_order_by_name ordered
SELECT id AS k, name FROM customers WHERE id < 4 UNION ALL SELECT id, status FROM orders WHERE id < 4 ORDER BY k, name

-- q: misc.union_order_limit_offset ordered
SELECT id FROM customers UNION SELECT customer_id FROM orders ORDER BY id DESC LIMIT 5 OFFSET 2

-- q: misc.values_join_aggregate ordered
SELECT v.s, v.label, coalesce(a.n, 0) FROM (VALUES ('paid', 'P'), ('lost', 'L'), ('shipped', 'S')) v(s, label) LEFT JOIN (SELECT status, count(*) AS n FROM orders GROUP BY status) a ON a.status = v.s ORDER BY v.s

-- q: misc.exists_group_having ordered
SELECT tier, count(*) FROM customers c WHERE EXISTS (SELECT 1 FROM orders o WHERE o.customer_id = c.id) GROUP BY tier HAVING count(*) > 10 ORDER BY tier NULLS FIRST

-- q: misc.in_aggregate_subquery ordered
SELECT count(*) FROM customers WHERE tier IN (SELECT max(tier) FROM customers UNION SELECT min(tier) FROM customers)

-- q: misc.order_by_subquery_alias ordered
SELECT c.id, (SELECT sum(total) FROM orders o WHERE o.customer_id = c.id) AS spent FROM customers c WHERE c.id < 30 ORDER BY spent DESC NULLS LAST, c.id LIMIT 10

-- q: misc.group_by_subquery_value ordered
SELECT (SELECT count(*) FROM orders o WHERE o.customer_id = c.id) AS n, count(*) FROM customers c GROUP BY 1 ORDER BY 1

-- q: misc.having_subquery_correlated ordered
SELECT customer_id, count(*) FROM orders o GROUP BY customer_id HAVING count(*) > (SELECT count(*) FROM items i WHERE i.customer_id = o.customer_id) / 2 ORDER BY customer_id LIMIT 20

-- q: misc.distinct_on_window ordered
SELECT DISTINCT ON (status) status, id, count(*) OVER (PARTITION BY status) FROM orders ORDER BY status, id

-- q: misc.limit_in_cte_join ordered
WITH top AS (SELECT customer_id, total FROM orders ORDER BY total DESC, id LIMIT 5) SELECT c.id, c.name, t.total FROM top t JOIN customers c ON c.id = t.customer_id ORDER BY t.total DESC, c.id

-- q: misc.generate_series_window ordered
SELECT g, sum(g) OVER (ORDER BY g), (SELECT count(*) FROM orders WHERE qty = g) FROM generate_series(1, 6) g ORDER BY g

-- q: misc.array_agg_group_by_array ordered
SELECT array_agg(id ORDER BY id) FILTER (WHERE id < 100), tags FROM customers WHERE tags IS NOT NULL GROUP BY tags ORDER BY tags LIMIT 10

-- q: misc.json_group ordered
SELECT prefs ->> 'theme' AS theme, jsonb_agg(id ORDER BY id) FILTER (WHERE id < 60) FROM customers GROUP BY 1 ORDER BY 1 NULLS LAST

-- q: misc.count_over_group_limit ordered
SELECT status, count(*), count(*) OVER () AS groups FROM orders GROUP BY status ORDER BY status LIMIT 3

-- q: misc.cte_over_cte_aggregate ordered
WITH a AS (SELECT customer_id, sum(total) AS t FROM orders GROUP BY customer_id), b AS (SELECT max(t) AS m, count(*) AS n FROM a) SELECT m, n FROM b

-- q: misc.cte_over_cte_limit ordered
WITH a AS (SELECT customer_id, sum(total) AS t FROM orders GROUP BY customer_id), b AS (SELECT customer_id, t FROM a ORDER BY t DESC, customer_id LIMIT 5) SELECT customer_id, t FROM b ORDER BY t DESC, customer_id

-- q: misc.cte_over_cte_distinct ordered
WITH a AS (SELECT customer_id, status FROM orders), b AS (SELECT DISTINCT status FROM a) SELECT count(*) FROM b

-- q: misc.cte_over_cte_group ordered
WITH a AS (SELECT customer_id, count(*) AS n FROM orders GROUP BY customer_id), b AS (SELECT n, count(*) AS k FROM a GROUP BY n) SELECT n, k FROM b ORDER BY n

-- q: misc.cte_three_levels ordered
WITH a AS (SELECT customer_id, total FROM orders), b AS (SELECT customer_id, sum(total) AS t FROM a GROUP BY customer_id), c AS (SELECT count(*) AS n, sum(t) AS s FROM b) SELECT n, s FROM c

-- q: misc.cte_over_cte_pinned ordered
WITH a AS (SELECT id, total FROM orders WHERE customer_id = 9), b AS (SELECT max(total) AS m, count(*) AS n FROM a) SELECT m, n FROM b

-- q: misc.derived_over_cte_aggregate ordered
WITH a AS (SELECT customer_id, sum(total) AS t FROM orders GROUP BY customer_id) SELECT m FROM (SELECT max(t) AS m FROM a) s

-- q: misc.subquery_over_cte_in_where ordered
WITH a AS (SELECT customer_id, count(*) AS n FROM orders GROUP BY customer_id) SELECT count(*) FROM customers WHERE id IN (SELECT customer_id FROM a WHERE n = (SELECT max(n) FROM a))

-- q: misc.scalar_over_cte ordered
WITH a AS (SELECT customer_id, count(*) AS n FROM orders GROUP BY customer_id) SELECT (SELECT max(n) FROM a), (SELECT count(*) FROM a)

-- q: misc.cte_over_cte_join ordered
WITH a AS (SELECT customer_id, sum(total) AS t FROM orders GROUP BY customer_id), b AS (SELECT a.customer_id, a.t, c.tier FROM a JOIN customers c ON c.id = a.customer_id) SELECT tier, count(*), max(t) FROM b GROUP BY tier ORDER BY tier NULLS FIRST

-- q: misc.cte_over_cte_union ordered
WITH a AS (SELECT customer_id FROM orders WHERE status = 'paid'), b AS (SELECT customer_id FROM a UNION SELECT customer_id FROM a) SELECT count(*) FROM b

-- q: misc.cte_over_cte_exists ordered
WITH a AS (SELECT customer_id, count(*) AS n FROM orders GROUP BY customer_id), b AS (SELECT customer_id FROM a WHERE n > 20) SELECT count(*) FROM customers c WHERE EXISTS (SELECT 1 FROM b WHERE b.customer_id = c.id)

-- q: misc.cte_over_cte_window_partition_key ordered
WITH a AS (SELECT customer_id, id, total FROM orders), b AS (SELECT customer_id, id, row_number() OVER (PARTITION BY customer_id ORDER BY total DESC, id) AS rn FROM a) SELECT customer_id, id FROM b WHERE rn = 1 ORDER BY customer_id LIMIT 10

-- q: misc.cte_over_cte_param ordered args=paid
WITH a AS (SELECT customer_id, total FROM orders WHERE status = $1), b AS (SELECT count(*) AS n, sum(total) AS s FROM a) SELECT n, s FROM b

-- q: misc.recursive_over_sharded ordered
WITH RECURSIVE r(n, s) AS (SELECT 1, (SELECT count(*) FROM orders WHERE qty = 1) UNION ALL SELECT n + 1, (SELECT count(*) FROM orders WHERE qty = n + 1) FROM r WHERE n < 5) SELECT n, s FROM r ORDER BY n

-- q: misc.cte_pinned_join_unpinned ordered
WITH a AS (SELECT * FROM orders WHERE customer_id = 7) SELECT count(*) FROM a, orders o WHERE o.status = a.status AND o.customer_id <> 7

-- q: misc.cte_pinned_join_other_pin ordered
WITH a AS (SELECT * FROM orders WHERE customer_id = 7) SELECT count(*) FROM a JOIN orders o ON o.status = a.status WHERE o.customer_id = 9

-- q: misc.cte_pinned_key_join ordered
WITH a AS (SELECT * FROM orders WHERE customer_id = 9) SELECT count(*) FROM a JOIN customers c ON c.id = a.customer_id

-- q: misc.derived_pinned_join_unpinned ordered
SELECT count(*) FROM (SELECT status FROM orders WHERE customer_id = 42) a JOIN orders o ON o.status = a.status

-- q: misc.cte_two_pins_union ordered
WITH a AS (SELECT id FROM orders WHERE customer_id = 7), b AS (SELECT id FROM orders WHERE customer_id = 9) SELECT count(*) FROM (SELECT id FROM a UNION ALL SELECT id FROM b) s

-- q: misc.cte_pinned_in_unpinned ordered
WITH a AS (SELECT status FROM orders WHERE customer_id = 100) SELECT count(*) FROM orders WHERE status IN (SELECT status FROM a)

-- q: misc.cte_pinned_scalar_unpinned ordered
WITH a AS (SELECT max(total) AS m FROM orders WHERE customer_id = 9) SELECT count(*) FROM orders, a WHERE orders.total > a.m

-- q: misc.cte_left_join_pinned ordered
WITH a AS (SELECT customer_id, count(*) AS n FROM orders WHERE customer_id = 9 GROUP BY customer_id) SELECT count(*), count(a.n) FROM customers c LEFT JOIN a ON a.customer_id = c.id

-- q: misc.nested_with_in_cte ordered
WITH b AS (WITH a AS (SELECT customer_id, sum(total) AS t FROM orders GROUP BY customer_id) SELECT max(t) AS m, count(*) AS n FROM a) SELECT m, n FROM b

-- q: misc.with_in_derived ordered
SELECT * FROM (WITH a AS (SELECT customer_id, sum(total) AS t FROM orders GROUP BY customer_id), b AS (SELECT max(t) AS m FROM a) SELECT m FROM b) s

-- q: misc.with_in_subquery ordered
SELECT count(*) FROM customers WHERE id IN (WITH a AS (SELECT customer_id, count(*) AS n FROM orders GROUP BY customer_id), b AS (SELECT customer_id FROM a ORDER BY n DESC, customer_id LIMIT 3) SELECT customer_id FROM b)

-- q: misc.cte_over_cte_distinct_on ordered
WITH a AS (SELECT customer_id, status, total FROM orders), b AS (SELECT DISTINCT ON (status) status, total FROM a ORDER BY status, total DESC) SELECT status, total FROM b ORDER BY status

-- q: misc.cte_over_cte_top_distinct ordered
WITH a AS (SELECT customer_id, count(*) AS n FROM orders GROUP BY customer_id) SELECT DISTINCT n FROM a ORDER BY n

-- q: misc.cte_over_cte_string_agg ordered
WITH a AS (SELECT customer_id, count(*) AS n FROM orders GROUP BY customer_id), b AS (SELECT string_agg(customer_id::text, ',' ORDER BY customer_id) AS s FROM a WHERE n > 25) SELECT s FROM b

-- ===================================================================
-- The second wide corpus (issue 19, hidden corpora; ids wide2.*): every
-- aggregate over every stored type grouped off the key, expressions over
-- merged aggregates, HAVING and ORDER BY on aggregates not selected, sort
-- keys of every type with LIMIT/OFFSET/FETCH forms, WITH TIES, window
-- frames (ROWS, RANGE, GROUPS, EXCLUDE), ranking partitioned off the key,
-- grouping sets, ordered-set and hypothetical aggregates, parameters in
-- every position, set operations with ORDER BY/LIMIT, jsonb and array
-- operators; sqllogictest-shaped predicates and select lists, DISTINCT
-- ON, LATERAL, generate_series and VALUES joins, numeric edge cases,
-- correlated subqueries, windows over groups, NULL logic, text and time
-- functions, bound LIMIT/OFFSET and casts of parameters, empty groups and
-- avg's forms: 540 statements. On the code before the fix beside them:
-- 534 answered and equal, 0 refused, 6 WRONG (avg of double precision
-- answered where Postgres fails with 22003: the sum of squared deviations
-- it keeps overflows; wide2.agg.customers.score.* and
-- wide2.avg_float8_squares_*): 100 % answered, 6 wrong. After: 540 equal.
-- ===================================================================

-- q: wide2.agg.customers.tier.g0
SELECT country AS g, min(tier), max(tier), count(tier), count(DISTINCT tier), sum(tier), avg(tier) FROM customers GROUP BY country

-- q: wide2.agg.customers.tier.g1
SELECT tier AS g, min(tier), max(tier), count(tier), count(DISTINCT tier), sum(tier), avg(tier) FROM customers GROUP BY tier

-- q: wide2.agg.customers.tier.all
SELECT min(tier), max(tier), count(tier), count(DISTINCT tier), sum(tier), avg(tier) FROM customers

-- q: wide2.agg.customers.balance.g0
SELECT country AS g, min(balance), max(balance), count(balance), count(DISTINCT balance), sum(balance), avg(balance) FROM customers GROUP BY country

-- q: wide2.agg.customers.balance.g1
SELECT tier AS g, min(balance), max(balance), count(balance), count(DISTINCT balance), sum(balance), avg(balance) FROM customers GROUP BY tier

-- q: wide2.agg.customers.balance.all
SELECT min(balance), max(balance), count(balance), count(DISTINCT balance), sum(balance), avg(balance) FROM customers

-- q: wide2.agg.customers.credit.g0
SELECT country AS g, min(credit), max(credit), count(credit), count(DISTINCT credit), sum(credit), avg(credit) FROM customers GROUP BY country

-- q: wide2.agg.customers.credit.g1
SELECT tier AS g, min(credit), max(credit), count(credit), count(DISTINCT credit), sum(credit), avg(credit) FROM customers GROUP BY tier

-- q: wide2.agg.customers.credit.all
SELECT min(credit), max(credit), count(credit), count(DISTINCT credit), sum(credit), avg(credit) FROM customers

-- Customer -42's 1e300 overflows avg's sum of squares; the NaN and the
-- infinities are left out: with them in the group, whether Postgres fails
-- depends on which row it reads first.
-- q: wide2.agg.customers.score.g0 error
SELECT country AS g, min(score), max(score), count(score), count(DISTINCT score), sum(score), avg(score) FROM customers WHERE id NOT IN (0, -1, -2) GROUP BY country

-- q: wide2.agg.customers.score.g1 error
SELECT tier AS g, min(score), max(score), count(score), count(DISTINCT score), sum(score), avg(score) FROM customers WHERE id NOT IN (0, -1, -2) GROUP BY tier

-- q: wide2.agg.customers.score.all error
SELECT min(score), max(score), count(score), count(DISTINCT score), sum(score), avg(score) FROM customers WHERE id NOT IN (0, -1, -2)

-- q: wide2.agg.customers.rating.g0
SELECT country AS g, min(rating), max(rating), count(rating), count(DISTINCT rating), sum(rating), avg(rating) FROM customers WHERE id <> -9223372036854775808 GROUP BY country

-- q: wide2.agg.customers.rating.g1
SELECT tier AS g, min(rating), max(rating), count(rating), count(DISTINCT rating), sum(rating), avg(rating) FROM customers WHERE id <> -9223372036854775808 GROUP BY tier

-- q: wide2.agg.customers.rating.all
SELECT min(rating), max(rating), count(rating), count(DISTINCT rating), sum(rating), avg(rating) FROM customers WHERE id <> -9223372036854775808

-- q: wide2.agg.customers.born.g0
SELECT country AS g, min(born), max(born), count(born), count(DISTINCT born) FROM customers GROUP BY country

-- q: wide2.agg.customers.born.g1
SELECT tier AS g, min(born), max(born), count(born), count(DISTINCT born) FROM customers GROUP BY tier

-- q: wide2.agg.customers.born.all
SELECT min(born), max(born), count(born), count(DISTINCT born) FROM customers

-- q: wide2.agg.customers.signup.g0
SELECT country AS g, min(signup), max(signup), count(signup), count(DISTINCT signup) FROM customers GROUP BY country

-- q: wide2.agg.customers.signup.g1
SELECT tier AS g, min(signup), max(signup), count(signup), count(DISTINCT signup) FROM customers GROUP BY tier

-- q: wide2.agg.customers.signup.all
SELECT min(signup), max(signup), count(signup), count(DISTINCT signup) FROM customers

-- q: wide2.agg.customers.last_seen.g0
SELECT country AS g, min(last_seen), max(last_seen), count(last_seen), count(DISTINCT last_seen) FROM customers GROUP BY country

-- q: wide2.agg.customers.last_seen.g1
SELECT tier AS g, min(last_seen), max(last_seen), count(last_seen), count(DISTINCT last_seen) FROM customers GROUP BY tier

-- q: wide2.agg.customers.last_seen.all
SELECT min(last_seen), max(last_seen), count(last_seen), count(DISTINCT last_seen) FROM customers

-- q: wide2.agg.customers.session.g0
SELECT country AS g, min(session), max(session), count(session), count(DISTINCT session), sum(session), avg(session) FROM customers GROUP BY country

-- q: wide2.agg.customers.session.g1
SELECT tier AS g, min(session), max(session), count(session), count(DISTINCT session), sum(session), avg(session) FROM customers GROUP BY tier

-- q: wide2.agg.customers.session.all
SELECT min(session), max(session), count(session), count(DISTINCT session), sum(session), avg(session) FROM customers

-- q: wide2.agg.customers.name.g0
SELECT country AS g, min(name), max(name), count(name), count(DISTINCT name) FROM customers GROUP BY country

-- q: wide2.agg.customers.name.g1
SELECT tier AS g, min(name), max(name), count(name), count(DISTINCT name) FROM customers GROUP BY tier

-- q: wide2.agg.customers.name.all
SELECT min(name), max(name), count(name), count(DISTINCT name) FROM customers

-- q: wide2.agg.customers.nick.g0
SELECT country AS g, min(nick), max(nick), count(nick), count(DISTINCT nick) FROM customers GROUP BY country

-- q: wide2.agg.customers.nick.g1
SELECT tier AS g, min(nick), max(nick), count(nick), count(DISTINCT nick) FROM customers GROUP BY tier

-- q: wide2.agg.customers.nick.all
SELECT min(nick), max(nick), count(nick), count(DISTINCT nick) FROM customers

-- q: wide2.agg.customers.code.g0
SELECT country AS g, min(code), max(code), count(code), count(DISTINCT code) FROM customers GROUP BY country

-- q: wide2.agg.customers.code.g1
SELECT tier AS g, min(code), max(code), count(code), count(DISTINCT code) FROM customers GROUP BY tier

-- q: wide2.agg.customers.code.all
SELECT min(code), max(code), count(code), count(DISTINCT code) FROM customers

-- q: wide2.agg.customers.active.g0
SELECT country AS g, bool_and(active), bool_or(active), every(active), count(active), count(*) FILTER (WHERE active) FROM customers GROUP BY country

-- q: wide2.agg.customers.active.g1
SELECT tier AS g, bool_and(active), bool_or(active), every(active), count(active), count(*) FILTER (WHERE active) FROM customers GROUP BY tier

-- q: wide2.agg.customers.active.all
SELECT bool_and(active), bool_or(active), every(active), count(active), count(*) FILTER (WHERE active) FROM customers

-- q: wide2.agg.orders.total.g0
SELECT status AS g, min(total), max(total), count(total), count(DISTINCT total), sum(total), avg(total) FROM orders GROUP BY status

-- q: wide2.agg.orders.total.g1
SELECT currency AS g, min(total), max(total), count(total), count(DISTINCT total), sum(total), avg(total) FROM orders GROUP BY currency

-- q: wide2.agg.orders.total.all
SELECT min(total), max(total), count(total), count(DISTINCT total), sum(total), avg(total) FROM orders

-- q: wide2.agg.orders.discount.g0
SELECT status AS g, min(discount), max(discount), count(discount), count(DISTINCT discount), sum(discount), avg(discount) FROM orders GROUP BY status

-- q: wide2.agg.orders.discount.g1
SELECT currency AS g, min(discount), max(discount), count(discount), count(DISTINCT discount), sum(discount), avg(discount) FROM orders GROUP BY currency

-- q: wide2.agg.orders.discount.all
SELECT min(discount), max(discount), count(discount), count(DISTINCT discount), sum(discount), avg(discount) FROM orders

-- q: wide2.agg.orders.qty.g0
SELECT status AS g, min(qty), max(qty), count(qty), count(DISTINCT qty), sum(qty), avg(qty) FROM orders GROUP BY status

-- q: wide2.agg.orders.qty.g1
SELECT currency AS g, min(qty), max(qty), count(qty), count(DISTINCT qty), sum(qty), avg(qty) FROM orders GROUP BY currency

-- q: wide2.agg.orders.qty.all
SELECT min(qty), max(qty), count(qty), count(DISTINCT qty), sum(qty), avg(qty) FROM orders

-- q: wide2.agg.orders.weight.g0
SELECT status AS g, min(weight), max(weight), count(weight), count(DISTINCT weight), sum(weight), avg(weight) FROM orders GROUP BY status

-- q: wide2.agg.orders.weight.g1
SELECT currency AS g, min(weight), max(weight), count(weight), count(DISTINCT weight), sum(weight), avg(weight) FROM orders GROUP BY currency

-- q: wide2.agg.orders.weight.all
SELECT min(weight), max(weight), count(weight), count(DISTINCT weight), sum(weight), avg(weight) FROM orders

-- q: wide2.agg.orders.placed_at.g0
SELECT status AS g, min(placed_at), max(placed_at), count(placed_at), count(DISTINCT placed_at) FROM orders GROUP BY status

-- q: wide2.agg.orders.placed_at.g1
SELECT currency AS g, min(placed_at), max(placed_at), count(placed_at), count(DISTINCT placed_at) FROM orders GROUP BY currency

-- q: wide2.agg.orders.placed_at.all
SELECT min(placed_at), max(placed_at), count(placed_at), count(DISTINCT placed_at) FROM orders

-- q: wide2.agg.orders.ship_date.g0
SELECT status AS g, min(ship_date), max(ship_date), count(ship_date), count(DISTINCT ship_date) FROM orders GROUP BY status

-- q: wide2.agg.orders.ship_date.g1
SELECT currency AS g, min(ship_date), max(ship_date), count(ship_date), count(DISTINCT ship_date) FROM orders GROUP BY currency

-- q: wide2.agg.orders.ship_date.all
SELECT min(ship_date), max(ship_date), count(ship_date), count(DISTINCT ship_date) FROM orders

-- q: wide2.agg.orders.note.g0
SELECT status AS g, min(note), max(note), count(note), count(DISTINCT note) FROM orders GROUP BY status

-- q: wide2.agg.orders.note.g1
SELECT currency AS g, min(note), max(note), count(note), count(DISTINCT note) FROM orders GROUP BY currency

-- q: wide2.agg.orders.note.all
SELECT min(note), max(note), count(note), count(DISTINCT note) FROM orders

-- q: wide2.agg.orders.gift.g0
SELECT status AS g, bool_and(gift), bool_or(gift), every(gift), count(gift), count(*) FILTER (WHERE gift) FROM orders GROUP BY status

-- q: wide2.agg.orders.gift.g1
SELECT currency AS g, bool_and(gift), bool_or(gift), every(gift), count(gift), count(*) FILTER (WHERE gift) FROM orders GROUP BY currency

-- q: wide2.agg.orders.gift.all
SELECT bool_and(gift), bool_or(gift), every(gift), count(gift), count(*) FILTER (WHERE gift) FROM orders

-- q: wide2.aggexpr.status.0 ordered
SELECT status, sum(total) / count(*) AS v FROM orders GROUP BY status ORDER BY status

-- q: wide2.aggexpr.all.0
SELECT sum(total) / count(*) AS v FROM orders WHERE customer_id > 0

-- q: wide2.aggexpr.status.1 ordered
SELECT status, round(avg(total), 3) AS v FROM orders GROUP BY status ORDER BY status

-- q: wide2.aggexpr.all.1
SELECT round(avg(total), 3) AS v FROM orders WHERE customer_id > 0

-- q: wide2.aggexpr.status.2 ordered
SELECT status, sum(qty) / count(*) AS v FROM orders GROUP BY status ORDER BY status

-- q: wide2.aggexpr.all.2
SELECT sum(qty) / count(*) AS v FROM orders WHERE customer_id > 0

-- q: wide2.aggexpr.status.3 ordered
SELECT status, sum(qty)::float8 / count(*) AS v FROM orders GROUP BY status ORDER BY status

-- q: wide2.aggexpr.all.3
SELECT sum(qty)::float8 / count(*) AS v FROM orders WHERE customer_id > 0

-- q: wide2.aggexpr.status.4 ordered
SELECT status, coalesce(sum(discount), 0) + 1 AS v FROM orders GROUP BY status ORDER BY status

-- q: wide2.aggexpr.all.4
SELECT coalesce(sum(discount), 0) + 1 AS v FROM orders WHERE customer_id > 0

-- q: wide2.aggexpr.status.5 ordered
SELECT status, max(total) - min(total) AS v FROM orders GROUP BY status ORDER BY status

-- q: wide2.aggexpr.all.5
SELECT max(total) - min(total) AS v FROM orders WHERE customer_id > 0

-- q: wide2.aggexpr.status.6 ordered
SELECT status, count(*) * 2 + 1 AS v FROM orders GROUP BY status ORDER BY status

-- q: wide2.aggexpr.all.6
SELECT count(*) * 2 + 1 AS v FROM orders WHERE customer_id > 0

-- q: wide2.aggexpr.status.7 ordered
SELECT status, avg(qty) * 100 AS v FROM orders GROUP BY status ORDER BY status

-- q: wide2.aggexpr.all.7
SELECT avg(qty) * 100 AS v FROM orders WHERE customer_id > 0

-- q: wide2.aggexpr.status.8 ordered
SELECT status, sum(total) FILTER (WHERE gift) AS v FROM orders GROUP BY status ORDER BY status

-- q: wide2.aggexpr.all.8
SELECT sum(total) FILTER (WHERE gift) AS v FROM orders WHERE customer_id > 0

-- q: wide2.aggexpr.status.9 ordered
SELECT status, count(DISTINCT customer_id) FILTER (WHERE qty > 2) AS v FROM orders GROUP BY status ORDER BY status

-- q: wide2.aggexpr.all.9
SELECT count(DISTINCT customer_id) FILTER (WHERE qty > 2) AS v FROM orders WHERE customer_id > 0

-- q: wide2.aggexpr.status.10 ordered
SELECT status, max(placed_at) - min(placed_at) AS v FROM orders GROUP BY status ORDER BY status

-- q: wide2.aggexpr.all.10
SELECT max(placed_at) - min(placed_at) AS v FROM orders WHERE customer_id > 0

-- q: wide2.aggexpr.status.11 ordered
SELECT status, min(ship_date) + 1 AS v FROM orders GROUP BY status ORDER BY status

-- q: wide2.aggexpr.all.11
SELECT min(ship_date) + 1 AS v FROM orders WHERE customer_id > 0

-- q: wide2.aggexpr.status.12 ordered
SELECT status, max(ship_date) - min(ship_date) AS v FROM orders GROUP BY status ORDER BY status

-- q: wide2.aggexpr.all.12
SELECT max(ship_date) - min(ship_date) AS v FROM orders WHERE customer_id > 0

-- q: wide2.aggexpr.status.13 ordered
SELECT status, sum(weight) / nullif(count(weight), 0) AS v FROM orders GROUP BY status ORDER BY status

-- q: wide2.aggexpr.all.13
SELECT sum(weight) / nullif(count(weight), 0) AS v FROM orders WHERE customer_id > 0

-- q: wide2.aggexpr.status.14 ordered
SELECT status, abs(min(weight)) AS v FROM orders GROUP BY status ORDER BY status

-- q: wide2.aggexpr.all.14
SELECT abs(min(weight)) AS v FROM orders WHERE customer_id > 0

-- q: wide2.aggexpr.status.15 ordered
SELECT status, greatest(max(qty), 5) AS v FROM orders GROUP BY status ORDER BY status

-- q: wide2.aggexpr.all.15
SELECT greatest(max(qty), 5) AS v FROM orders WHERE customer_id > 0

-- q: wide2.aggexpr.status.16 ordered
SELECT status, least(min(total), 10) AS v FROM orders GROUP BY status ORDER BY status

-- q: wide2.aggexpr.all.16
SELECT least(min(total), 10) AS v FROM orders WHERE customer_id > 0

-- q: wide2.aggexpr.status.17 ordered
SELECT status, sum(CASE WHEN gift THEN 1 ELSE 0 END) AS v FROM orders GROUP BY status ORDER BY status

-- q: wide2.aggexpr.all.17
SELECT sum(CASE WHEN gift THEN 1 ELSE 0 END) AS v FROM orders WHERE customer_id > 0

-- q: wide2.aggexpr.status.18 ordered
SELECT status, count(*) - count(note) AS v FROM orders GROUP BY status ORDER BY status

-- q: wide2.aggexpr.all.18
SELECT count(*) - count(note) AS v FROM orders WHERE customer_id > 0

-- q: wide2.aggexpr.status.19 ordered
SELECT status, max(length(note)) AS v FROM orders GROUP BY status ORDER BY status

-- q: wide2.aggexpr.all.19
SELECT max(length(note)) AS v FROM orders WHERE customer_id > 0

-- q: wide2.aggexpr.status.20 ordered
SELECT status, min(upper(note)) AS v FROM orders GROUP BY status ORDER BY status

-- q: wide2.aggexpr.all.20
SELECT min(upper(note)) AS v FROM orders WHERE customer_id > 0

-- q: wide2.aggexpr.status.21 ordered
SELECT status, sum(qty * total) AS v FROM orders GROUP BY status ORDER BY status

-- q: wide2.aggexpr.all.21
SELECT sum(qty * total) AS v FROM orders WHERE customer_id > 0

-- q: wide2.aggexpr.status.22 ordered
SELECT status, avg(total * qty) AS v FROM orders GROUP BY status ORDER BY status

-- q: wide2.aggexpr.all.22
SELECT avg(total * qty) AS v FROM orders WHERE customer_id > 0

-- q: wide2.aggexpr.status.23 ordered
SELECT status, max(total::int) AS v FROM orders GROUP BY status ORDER BY status

-- q: wide2.aggexpr.all.23
SELECT max(total::int) AS v FROM orders WHERE customer_id > 0

-- q: wide2.aggexpr.status.24 ordered
SELECT status, sum(total)::text AS v FROM orders GROUP BY status ORDER BY status

-- q: wide2.aggexpr.all.24
SELECT sum(total)::text AS v FROM orders WHERE customer_id > 0

-- q: wide2.aggexpr.status.25 ordered
SELECT status, stddev_pop(qty) AS v FROM orders GROUP BY status ORDER BY status

-- q: wide2.aggexpr.all.25
SELECT stddev_pop(qty) AS v FROM orders WHERE customer_id > 0

-- q: wide2.aggexpr.status.26 ordered
SELECT status, var_samp(total) AS v FROM orders GROUP BY status ORDER BY status

-- q: wide2.aggexpr.all.26
SELECT var_samp(total) AS v FROM orders WHERE customer_id > 0

-- q: wide2.aggexpr.status.27 ordered
SELECT status, bit_or(qty) AS v FROM orders GROUP BY status ORDER BY status

-- q: wide2.aggexpr.all.27
SELECT bit_or(qty) AS v FROM orders WHERE customer_id > 0

-- q: wide2.aggexpr.status.28 ordered
SELECT status, bit_and(qty) AS v FROM orders GROUP BY status ORDER BY status

-- q: wide2.aggexpr.all.28
SELECT bit_and(qty) AS v FROM orders WHERE customer_id > 0

-- q: wide2.aggexpr.status.29 ordered
SELECT status, sum(qty) > 100 AS v FROM orders GROUP BY status ORDER BY status

-- q: wide2.aggexpr.all.29
SELECT sum(qty) > 100 AS v FROM orders WHERE customer_id > 0

-- q: wide2.having.0 ordered
SELECT customer_id % 7 AS m, count(*) AS n FROM orders GROUP BY customer_id % 7 HAVING count(*) > 5 ORDER BY sum(total) DESC, m

-- q: wide2.having_cur.0 ordered
SELECT currency, count(*) AS n FROM orders GROUP BY currency HAVING count(*) > 5 ORDER BY currency NULLS FIRST

-- q: wide2.having.1 ordered
SELECT customer_id % 7 AS m, count(*) AS n FROM orders GROUP BY customer_id % 7 HAVING sum(total) > 1000 ORDER BY sum(total) DESC, m

-- q: wide2.having_cur.1 ordered
SELECT currency, count(*) AS n FROM orders GROUP BY currency HAVING sum(total) > 1000 ORDER BY currency NULLS FIRST

-- q: wide2.having.2 ordered
SELECT customer_id % 7 AS m, count(*) AS n FROM orders GROUP BY customer_id % 7 HAVING max(qty) >= 3 AND min(qty) <= 1 ORDER BY sum(total) DESC, m

-- q: wide2.having_cur.2 ordered
SELECT currency, count(*) AS n FROM orders GROUP BY currency HAVING max(qty) >= 3 AND min(qty) <= 1 ORDER BY currency NULLS FIRST

-- q: wide2.having.3 ordered
SELECT customer_id % 7 AS m, count(*) AS n FROM orders GROUP BY customer_id % 7 HAVING avg(total) < 500 ORDER BY sum(total) DESC, m

-- q: wide2.having_cur.3 ordered
SELECT currency, count(*) AS n FROM orders GROUP BY currency HAVING avg(total) < 500 ORDER BY currency NULLS FIRST

-- q: wide2.having.4 ordered
SELECT customer_id % 7 AS m, count(*) AS n FROM orders GROUP BY customer_id % 7 HAVING count(DISTINCT status) = 5 ORDER BY sum(total) DESC, m

-- q: wide2.having_cur.4 ordered
SELECT currency, count(*) AS n FROM orders GROUP BY currency HAVING count(DISTINCT status) = 5 ORDER BY currency NULLS FIRST

-- q: wide2.having.5 ordered
SELECT customer_id % 7 AS m, count(*) AS n FROM orders GROUP BY customer_id % 7 HAVING bool_or(gift) ORDER BY sum(total) DESC, m

-- q: wide2.having_cur.5 ordered
SELECT currency, count(*) AS n FROM orders GROUP BY currency HAVING bool_or(gift) ORDER BY currency NULLS FIRST

-- q: wide2.having.6 ordered
SELECT customer_id % 7 AS m, count(*) AS n FROM orders GROUP BY customer_id % 7 HAVING count(note) = 0 ORDER BY sum(total) DESC, m

-- q: wide2.having_cur.6 ordered
SELECT currency, count(*) AS n FROM orders GROUP BY currency HAVING count(note) = 0 ORDER BY currency NULLS FIRST

-- q: wide2.having.7 ordered
SELECT customer_id % 7 AS m, count(*) AS n FROM orders GROUP BY customer_id % 7 HAVING sum(qty) % 2 = 0 ORDER BY sum(total) DESC, m

-- q: wide2.having_cur.7 ordered
SELECT currency, count(*) AS n FROM orders GROUP BY currency HAVING sum(qty) % 2 = 0 ORDER BY currency NULLS FIRST

-- q: wide2.sort.balance.0 ordered
SELECT balance, id FROM customers ORDER BY balance ASC NULLS FIRST, id

-- q: wide2.sort.balance.1 ordered
SELECT balance, id FROM customers ORDER BY balance DESC NULLS LAST, id DESC LIMIT 5

-- q: wide2.sort.balance.2 ordered
SELECT balance, id FROM customers ORDER BY balance DESC , id OFFSET 350

-- q: wide2.sort.balance.3 ordered
SELECT balance, id FROM customers ORDER BY balance NULLS LAST, id DESC LIMIT ALL OFFSET 3

-- q: wide2.sort.credit.0 ordered
SELECT credit, id FROM customers ORDER BY credit ASC NULLS FIRST, id LIMIT 5

-- q: wide2.sort.credit.1 ordered
SELECT credit, id FROM customers ORDER BY credit DESC NULLS LAST, id DESC OFFSET 350

-- q: wide2.sort.credit.2 ordered
SELECT credit, id FROM customers ORDER BY credit DESC , id LIMIT ALL OFFSET 3

-- q: wide2.sort.credit.3 ordered
SELECT credit, id FROM customers ORDER BY credit NULLS LAST, id DESC FETCH FIRST 4 ROWS ONLY

-- q: wide2.sort.score.0 ordered
SELECT score, id FROM customers ORDER BY score ASC NULLS FIRST, id OFFSET 350

-- q: wide2.sort.score.1 ordered
SELECT score, id FROM customers ORDER BY score DESC NULLS LAST, id DESC LIMIT ALL OFFSET 3

-- q: wide2.sort.score.2 ordered
SELECT score, id FROM customers ORDER BY score DESC , id FETCH FIRST 4 ROWS ONLY

-- q: wide2.sort.score.3 ordered
SELECT score, id FROM customers ORDER BY score NULLS LAST, id DESC LIMIT 3 OFFSET 2

-- q: wide2.sort.rating.0 ordered
SELECT rating, id FROM customers ORDER BY rating ASC NULLS FIRST, id LIMIT ALL OFFSET 3

-- q: wide2.sort.rating.1 ordered
SELECT rating, id FROM customers ORDER BY rating DESC NULLS LAST, id DESC FETCH FIRST 4 ROWS ONLY

-- q: wide2.sort.rating.2 ordered
SELECT rating, id FROM customers ORDER BY rating DESC , id LIMIT 3 OFFSET 2

-- q: wide2.sort.rating.3 ordered
SELECT rating, id FROM customers ORDER BY rating NULLS LAST, id DESC

-- q: wide2.sort.born.0 ordered
SELECT born, id FROM customers ORDER BY born ASC NULLS FIRST, id FETCH FIRST 4 ROWS ONLY

-- q: wide2.sort.born.1 ordered
SELECT born, id FROM customers ORDER BY born DESC NULLS LAST, id DESC LIMIT 3 OFFSET 2

-- q: wide2.sort.born.2 ordered
SELECT born, id FROM customers ORDER BY born DESC , id

-- q: wide2.sort.born.3 ordered
SELECT born, id FROM customers ORDER BY born NULLS LAST, id DESC LIMIT 5

-- q: wide2.sort.signup.0 ordered
SELECT signup, id FROM customers ORDER BY signup ASC NULLS FIRST, id LIMIT 3 OFFSET 2

-- q: wide2.sort.signup.1 ordered
SELECT signup, id FROM customers ORDER BY signup DESC NULLS LAST, id DESC

-- q: wide2.sort.signup.2 ordered
SELECT signup, id FROM customers ORDER BY signup DESC , id LIMIT 5

-- q: wide2.sort.signup.3 ordered
SELECT signup, id FROM customers ORDER BY signup NULLS LAST, id DESC OFFSET 350

-- q: wide2.sort.last_seen.0 ordered
SELECT last_seen, id FROM customers ORDER BY last_seen ASC NULLS FIRST, id

-- q: wide2.sort.last_seen.1 ordered
SELECT last_seen, id FROM customers ORDER BY last_seen DESC NULLS LAST, id DESC LIMIT 5

-- q: wide2.sort.last_seen.2 ordered
SELECT last_seen, id FROM customers ORDER BY last_seen DESC , id OFFSET 350

-- q: wide2.sort.last_seen.3 ordered
SELECT last_seen, id FROM customers ORDER BY last_seen NULLS LAST, id DESC LIMIT ALL OFFSET 3

-- q: wide2.sort.ext_id.0 ordered
SELECT ext_id, id FROM customers ORDER BY ext_id ASC NULLS FIRST, id LIMIT 5

-- q: wide2.sort.ext_id.1 ordered
SELECT ext_id, id FROM customers ORDER BY ext_id DESC NULLS LAST, id DESC OFFSET 350

-- q: wide2.sort.ext_id.2 ordered
SELECT ext_id, id FROM customers ORDER BY ext_id DESC , id LIMIT ALL OFFSET 3

-- q: wide2.sort.ext_id.3 ordered
SELECT ext_id, id FROM customers ORDER BY ext_id NULLS LAST, id DESC FETCH FIRST 4 ROWS ONLY

-- q: wide2.sort.avatar.0 ordered
SELECT avatar, id FROM customers ORDER BY avatar ASC NULLS FIRST, id OFFSET 350

-- q: wide2.sort.avatar.1 ordered
SELECT avatar, id FROM customers ORDER BY avatar DESC NULLS LAST, id DESC LIMIT ALL OFFSET 3

-- q: wide2.sort.avatar.2 ordered
SELECT avatar, id FROM customers ORDER BY avatar DESC , id FETCH FIRST 4 ROWS ONLY

-- q: wide2.sort.avatar.3 ordered
SELECT avatar, id FROM customers ORDER BY avatar NULLS LAST, id DESC LIMIT 3 OFFSET 2

-- q: wide2.sort.nick.0 ordered
SELECT nick, id FROM customers ORDER BY nick ASC NULLS FIRST, id LIMIT ALL OFFSET 3

-- q: wide2.sort.nick.1 ordered
SELECT nick, id FROM customers ORDER BY nick DESC NULLS LAST, id DESC FETCH FIRST 4 ROWS ONLY

-- q: wide2.sort.nick.2 ordered
SELECT nick, id FROM customers ORDER BY nick DESC , id LIMIT 3 OFFSET 2

-- q: wide2.sort.nick.3 ordered
SELECT nick, id FROM customers ORDER BY nick NULLS LAST, id DESC

-- q: wide2.sort.code.0 ordered
SELECT code, id FROM customers ORDER BY code ASC NULLS FIRST, id FETCH FIRST 4 ROWS ONLY

-- q: wide2.sort.code.1 ordered
SELECT code, id FROM customers ORDER BY code DESC NULLS LAST, id DESC LIMIT 3 OFFSET 2

-- q: wide2.sort.code.2 ordered
SELECT code, id FROM customers ORDER BY code DESC , id

-- q: wide2.sort.code.3 ordered
SELECT code, id FROM customers ORDER BY code NULLS LAST, id DESC LIMIT 5

-- q: wide2.sort.prefs.0 ordered
SELECT prefs, id FROM customers ORDER BY prefs ASC NULLS FIRST, id LIMIT 3 OFFSET 2

-- q: wide2.sort.prefs.1 ordered
SELECT prefs, id FROM customers ORDER BY prefs DESC NULLS LAST, id DESC

-- q: wide2.sort.prefs.2 ordered
SELECT prefs, id FROM customers ORDER BY prefs DESC , id LIMIT 5

-- q: wide2.sort.prefs.3 ordered
SELECT prefs, id FROM customers ORDER BY prefs NULLS LAST, id DESC OFFSET 350

-- q: wide2.sort.tags.0 ordered
SELECT tags, id FROM customers ORDER BY tags ASC NULLS FIRST, id

-- q: wide2.sort.tags.1 ordered
SELECT tags, id FROM customers ORDER BY tags DESC NULLS LAST, id DESC LIMIT 5

-- q: wide2.sort.tags.2 ordered
SELECT tags, id FROM customers ORDER BY tags DESC , id OFFSET 350

-- q: wide2.sort.tags.3 ordered
SELECT tags, id FROM customers ORDER BY tags NULLS LAST, id DESC LIMIT ALL OFFSET 3

-- q: wide2.sort.session.0 ordered
SELECT session, id FROM customers ORDER BY session ASC NULLS FIRST, id LIMIT 5

-- q: wide2.sort.session.1 ordered
SELECT session, id FROM customers ORDER BY session DESC NULLS LAST, id DESC OFFSET 350

-- q: wide2.sort.session.2 ordered
SELECT session, id FROM customers ORDER BY session DESC , id LIMIT ALL OFFSET 3

-- q: wide2.sort.session.3 ordered
SELECT session, id FROM customers ORDER BY session NULLS LAST, id DESC FETCH FIRST 4 ROWS ONLY

-- q: wide2.sort.active.0 ordered
SELECT active, id FROM customers ORDER BY active ASC NULLS FIRST, id OFFSET 350

-- q: wide2.sort.active.1 ordered
SELECT active, id FROM customers ORDER BY active DESC NULLS LAST, id DESC LIMIT ALL OFFSET 3

-- q: wide2.sort.active.2 ordered
SELECT active, id FROM customers ORDER BY active DESC , id FETCH FIRST 4 ROWS ONLY

-- q: wide2.sort.active.3 ordered
SELECT active, id FROM customers ORDER BY active NULLS LAST, id DESC LIMIT 3 OFFSET 2

-- q: wide2.sort.tier.0 ordered
SELECT tier, id FROM customers ORDER BY tier ASC NULLS FIRST, id LIMIT ALL OFFSET 3

-- q: wide2.sort.tier.1 ordered
SELECT tier, id FROM customers ORDER BY tier DESC NULLS LAST, id DESC FETCH FIRST 4 ROWS ONLY

-- q: wide2.sort.tier.2 ordered
SELECT tier, id FROM customers ORDER BY tier DESC , id LIMIT 3 OFFSET 2

-- q: wide2.sort.tier.3 ordered
SELECT tier, id FROM customers ORDER BY tier NULLS LAST, id DESC

-- q: wide2.sort.email.0 ordered
SELECT email, id FROM customers ORDER BY email ASC NULLS FIRST, id FETCH FIRST 4 ROWS ONLY

-- q: wide2.sort.email.1 ordered
SELECT email, id FROM customers ORDER BY email DESC NULLS LAST, id DESC LIMIT 3 OFFSET 2

-- q: wide2.sort.email.2 ordered
SELECT email, id FROM customers ORDER BY email DESC , id

-- q: wide2.sort.email.3 ordered
SELECT email, id FROM customers ORDER BY email NULLS LAST, id DESC LIMIT 5

-- q: wide2.sort.country.0 ordered
SELECT country, id FROM customers ORDER BY country ASC NULLS FIRST, id LIMIT 3 OFFSET 2

-- q: wide2.sort.country.1 ordered
SELECT country, id FROM customers ORDER BY country DESC NULLS LAST, id DESC

-- q: wide2.sort.country.2 ordered
SELECT country, id FROM customers ORDER BY country DESC , id LIMIT 5

-- q: wide2.sort.country.3 ordered
SELECT country, id FROM customers ORDER BY country NULLS LAST, id DESC OFFSET 350

-- q: wide2.ties.tier keys=1
SELECT tier, id FROM customers ORDER BY tier NULLS FIRST FETCH FIRST 3 ROWS WITH TIES

-- q: wide2.ties_off.tier keys=1
SELECT tier FROM customers ORDER BY tier DESC OFFSET 2 ROWS FETCH NEXT 1 ROW WITH TIES

-- q: wide2.ties.country keys=1
SELECT country, id FROM customers ORDER BY country NULLS FIRST FETCH FIRST 3 ROWS WITH TIES

-- q: wide2.ties_off.country keys=1
SELECT country FROM customers ORDER BY country DESC OFFSET 2 ROWS FETCH NEXT 1 ROW WITH TIES

-- q: wide2.ties.active keys=1
SELECT active, id FROM customers ORDER BY active NULLS FIRST FETCH FIRST 3 ROWS WITH TIES

-- q: wide2.ties_off.active keys=1
SELECT active FROM customers ORDER BY active DESC OFFSET 2 ROWS FETCH NEXT 1 ROW WITH TIES

-- q: wide2.ties.status keys=1
SELECT status, id FROM orders ORDER BY status NULLS FIRST FETCH FIRST 3 ROWS WITH TIES

-- q: wide2.ties_off.status keys=1
SELECT status FROM orders ORDER BY status DESC OFFSET 2 ROWS FETCH NEXT 1 ROW WITH TIES

-- q: wide2.frame.0 ordered
SELECT id, qty, sum(qty) OVER w AS s, count(*) OVER w AS n, max(total) OVER w AS mx FROM orders WHERE customer_id BETWEEN 1 AND 60 WINDOW w AS (ORDER BY qty, id ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) ORDER BY qty, id

-- q: wide2.frame_part.0 ordered
SELECT id, status, sum(total) OVER (PARTITION BY status ORDER BY qty, id ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS s FROM orders WHERE customer_id < 40 ORDER BY status, qty, id

-- q: wide2.frame.1 ordered
SELECT id, qty, sum(qty) OVER w AS s, count(*) OVER w AS n, max(total) OVER w AS mx FROM orders WHERE customer_id BETWEEN 1 AND 60 WINDOW w AS (ORDER BY qty, id ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) ORDER BY qty, id

-- q: wide2.frame_part.1 ordered
SELECT id, status, sum(total) OVER (PARTITION BY status ORDER BY qty, id ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) AS s FROM orders WHERE customer_id < 40 ORDER BY status, qty, id

-- q: wide2.frame.2 ordered
SELECT id, qty, sum(qty) OVER w AS s, count(*) OVER w AS n, max(total) OVER w AS mx FROM orders WHERE customer_id BETWEEN 1 AND 60 WINDOW w AS (ORDER BY qty, id RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) ORDER BY qty, id

-- q: wide2.frame_part.2 ordered
SELECT id, status, sum(total) OVER (PARTITION BY status ORDER BY qty, id RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS s FROM orders WHERE customer_id < 40 ORDER BY status, qty, id

-- q: wide2.frame.3 ordered
SELECT id, qty, sum(qty) OVER w AS s, count(*) OVER w AS n, max(total) OVER w AS mx FROM orders WHERE customer_id BETWEEN 1 AND 60 WINDOW w AS (ORDER BY qty, id RANGE BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING) ORDER BY qty, id

-- q: wide2.frame_part.3 ordered
SELECT id, status, sum(total) OVER (PARTITION BY status ORDER BY qty, id RANGE BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING) AS s FROM orders WHERE customer_id < 40 ORDER BY status, qty, id

-- q: wide2.frame.4 ordered
SELECT id, qty, sum(qty) OVER w AS s, count(*) OVER w AS n, min(total) OVER w AS mn FROM orders WHERE customer_id BETWEEN 1 AND 60 WINDOW w AS (ORDER BY qty GROUPS BETWEEN 1 PRECEDING AND 1 FOLLOWING) ORDER BY qty, id

-- q: wide2.frame_part.4 ordered
SELECT id, status, sum(total) OVER (PARTITION BY status ORDER BY qty GROUPS BETWEEN 1 PRECEDING AND 1 FOLLOWING) AS s FROM orders WHERE customer_id < 40 ORDER BY status, qty, id

-- q: wide2.frame.5 ordered
SELECT id, qty, sum(qty) OVER w AS s, count(*) OVER w AS n, max(total) OVER w AS mx FROM orders WHERE customer_id BETWEEN 1 AND 60 WINDOW w AS (ORDER BY qty, id ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING EXCLUDE CURRENT ROW) ORDER BY qty, id

-- q: wide2.frame_part.5 ordered
SELECT id, status, sum(total) OVER (PARTITION BY status ORDER BY qty, id ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING EXCLUDE CURRENT ROW) AS s FROM orders WHERE customer_id < 40 ORDER BY status, qty, id

-- q: wide2.frame.6 ordered
SELECT id, qty, sum(qty) OVER w AS s, count(*) OVER w AS n, min(total) OVER w AS mn FROM orders WHERE customer_id BETWEEN 1 AND 60 WINDOW w AS (ORDER BY qty RANGE BETWEEN 10 PRECEDING AND 10 FOLLOWING) ORDER BY qty, id

-- q: wide2.frame_part.6 ordered
SELECT id, status, sum(total) OVER (PARTITION BY status ORDER BY qty RANGE BETWEEN 10 PRECEDING AND 10 FOLLOWING) AS s FROM orders WHERE customer_id < 40 ORDER BY status, qty, id

-- q: wide2.frame.7 ordered
SELECT id, qty, sum(qty) OVER w AS s, count(*) OVER w AS n, min(total) OVER w AS mn FROM orders WHERE customer_id BETWEEN 1 AND 60 WINDOW w AS (ORDER BY qty GROUPS BETWEEN CURRENT ROW AND 2 FOLLOWING EXCLUDE TIES) ORDER BY qty, id

-- q: wide2.frame_part.7 ordered
SELECT id, status, sum(total) OVER (PARTITION BY status ORDER BY qty GROUPS BETWEEN CURRENT ROW AND 2 FOLLOWING EXCLUDE TIES) AS s FROM orders WHERE customer_id < 40 ORDER BY status, qty, id

-- q: wide2.frame.8 ordered
SELECT id, qty, sum(qty) OVER w AS s, count(*) OVER w AS n, max(total) OVER w AS mx FROM orders WHERE customer_id BETWEEN 1 AND 60 WINDOW w AS (ORDER BY qty, id ROWS BETWEEN 3 PRECEDING AND 1 PRECEDING) ORDER BY qty, id

-- q: wide2.frame_part.8 ordered
SELECT id, status, sum(total) OVER (PARTITION BY status ORDER BY qty, id ROWS BETWEEN 3 PRECEDING AND 1 PRECEDING) AS s FROM orders WHERE customer_id < 40 ORDER BY status, qty, id

-- q: wide2.frame.9 ordered
SELECT id, qty, sum(qty) OVER w AS s, count(*) OVER w AS n, min(total) OVER w AS mn FROM orders WHERE customer_id BETWEEN 1 AND 60 WINDOW w AS (ORDER BY qty RANGE BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING EXCLUDE GROUP) ORDER BY qty, id

-- q: wide2.frame_part.9 ordered
SELECT id, status, sum(total) OVER (PARTITION BY status ORDER BY qty RANGE BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING EXCLUDE GROUP) AS s FROM orders WHERE customer_id < 40 ORDER BY status, qty, id

-- q: wide2.win.0
SELECT id, row_number() OVER (PARTITION BY status ORDER BY total DESC, id) AS w FROM orders WHERE customer_id BETWEEN -50 AND 80

-- q: wide2.win.1
SELECT id, rank() OVER (PARTITION BY currency ORDER BY qty) AS w FROM orders WHERE customer_id BETWEEN -50 AND 80

-- q: wide2.win.2
SELECT id, dense_rank() OVER (ORDER BY status) AS w FROM orders WHERE customer_id BETWEEN -50 AND 80

-- q: wide2.win.3
SELECT id, percent_rank() OVER (PARTITION BY status ORDER BY qty) AS w FROM orders WHERE customer_id BETWEEN -50 AND 80

-- q: wide2.win.4
SELECT id, cume_dist() OVER (ORDER BY currency NULLS FIRST) AS w FROM orders WHERE customer_id BETWEEN -50 AND 80

-- q: wide2.win.5
SELECT id, ntile(4) OVER (ORDER BY total, id) AS w FROM orders WHERE customer_id BETWEEN -50 AND 80

-- q: wide2.win.6
SELECT id, lag(total, 2, 0) OVER (PARTITION BY status ORDER BY id) AS w FROM orders WHERE customer_id BETWEEN -50 AND 80

-- q: wide2.win.7
SELECT id, lead(id) OVER (ORDER BY placed_at, id) AS w FROM orders WHERE customer_id BETWEEN -50 AND 80

-- q: wide2.win.8
SELECT id, first_value(id) OVER (PARTITION BY status ORDER BY total DESC, id) AS w FROM orders WHERE customer_id BETWEEN -50 AND 80

-- q: wide2.win.9
SELECT id, last_value(id) OVER (PARTITION BY status ORDER BY id ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS w FROM orders WHERE customer_id BETWEEN -50 AND 80

-- q: wide2.win.10
SELECT id, nth_value(total, 3) OVER (PARTITION BY currency ORDER BY total, id) AS w FROM orders WHERE customer_id BETWEEN -50 AND 80

-- q: wide2.win.11
SELECT id, count(*) OVER (PARTITION BY gift) AS w FROM orders WHERE customer_id BETWEEN -50 AND 80

-- q: wide2.win.12
SELECT id, sum(qty) OVER () AS w FROM orders WHERE customer_id BETWEEN -50 AND 80

-- q: wide2.win.13
SELECT id, avg(total) OVER (PARTITION BY status) AS w FROM orders WHERE customer_id BETWEEN -50 AND 80

-- q: wide2.gsets.0
SELECT status, gift, currency, grouping(status, gift, currency) AS gr, count(*) AS n, sum(total) AS s, max(qty) AS mx FROM orders GROUP BY GROUPING SETS ((status), (currency), (gift), ())

-- q: wide2.gsets_having.0 ordered
SELECT status, gift, currency, count(*) AS n FROM orders GROUP BY GROUPING SETS ((status), (currency), (gift), ()) HAVING count(*) > 10 ORDER BY n DESC, status NULLS FIRST, gift NULLS FIRST, currency NULLS FIRST

-- q: wide2.gsets.1
SELECT status, gift, currency, grouping(status, gift, currency) AS gr, count(*) AS n, sum(total) AS s, max(qty) AS mx FROM orders GROUP BY ROLLUP (status, gift, currency)

-- q: wide2.gsets_having.1 ordered
SELECT status, gift, currency, count(*) AS n FROM orders GROUP BY ROLLUP (status, gift, currency) HAVING count(*) > 10 ORDER BY n DESC, status NULLS FIRST, gift NULLS FIRST, currency NULLS FIRST

-- q: wide2.gsets.2
SELECT status, gift, currency, grouping(status, gift, currency) AS gr, count(*) AS n, sum(total) AS s, max(qty) AS mx FROM orders GROUP BY CUBE (status, gift, currency)

-- q: wide2.gsets_having.2 ordered
SELECT status, gift, currency, count(*) AS n FROM orders GROUP BY CUBE (status, gift, currency) HAVING count(*) > 10 ORDER BY n DESC, status NULLS FIRST, gift NULLS FIRST, currency NULLS FIRST

-- q: wide2.gsets.3
SELECT status, gift, currency, grouping(status, gift, currency) AS gr, count(*) AS n, sum(total) AS s, max(qty) AS mx FROM orders GROUP BY GROUPING SETS ((status, currency), (status), (gift))

-- q: wide2.gsets_having.3 ordered
SELECT status, gift, currency, count(*) AS n FROM orders GROUP BY GROUPING SETS ((status, currency), (status), (gift)) HAVING count(*) > 10 ORDER BY n DESC, status NULLS FIRST, gift NULLS FIRST, currency NULLS FIRST

-- q: wide2.gsets.4
SELECT status, gift, currency, grouping(status, gift, currency) AS gr, count(*) AS n, sum(total) AS s, max(qty) AS mx FROM orders GROUP BY status, ROLLUP (gift, currency)

-- q: wide2.gsets_having.4 ordered
SELECT status, gift, currency, count(*) AS n FROM orders GROUP BY status, ROLLUP (gift, currency) HAVING count(*) > 10 ORDER BY n DESC, status NULLS FIRST, gift NULLS FIRST, currency NULLS FIRST

-- q: wide2.gsets.5
SELECT status, gift, currency, grouping(status, gift, currency) AS gr, count(*) AS n, sum(total) AS s, max(qty) AS mx FROM orders GROUP BY ROLLUP ((status, gift), currency)

-- q: wide2.gsets_having.5 ordered
SELECT status, gift, currency, count(*) AS n FROM orders GROUP BY ROLLUP ((status, gift), currency) HAVING count(*) > 10 ORDER BY n DESC, status NULLS FIRST, gift NULLS FIRST, currency NULLS FIRST

-- q: wide2.gsets.6
SELECT status, gift, currency, grouping(status, gift, currency) AS gr, count(*) AS n, sum(total) AS s, max(qty) AS mx FROM orders GROUP BY CUBE (currency), status, gift

-- q: wide2.gsets_having.6 ordered
SELECT status, gift, currency, count(*) AS n FROM orders GROUP BY CUBE (currency), status, gift HAVING count(*) > 10 ORDER BY n DESC, status NULLS FIRST, gift NULLS FIRST, currency NULLS FIRST

-- q: wide2.gsets.7
SELECT status, gift, currency, grouping(status, gift, currency) AS gr, count(*) AS n, sum(total) AS s, max(qty) AS mx FROM orders GROUP BY GROUPING SETS (status, ROLLUP (gift, currency))

-- q: wide2.gsets_having.7 ordered
SELECT status, gift, currency, count(*) AS n FROM orders GROUP BY GROUPING SETS (status, ROLLUP (gift, currency)) HAVING count(*) > 10 ORDER BY n DESC, status NULLS FIRST, gift NULLS FIRST, currency NULLS FIRST

-- q: wide2.osa.0
SELECT gift, percentile_cont(0.5) WITHIN GROUP (ORDER BY total) AS v FROM orders GROUP BY gift

-- q: wide2.osa_all.0
SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY total) AS v FROM orders

-- q: wide2.osa.1
SELECT gift, percentile_disc(0.25) WITHIN GROUP (ORDER BY qty) AS v FROM orders GROUP BY gift

-- q: wide2.osa_all.1
SELECT percentile_disc(0.25) WITHIN GROUP (ORDER BY qty) AS v FROM orders

-- q: wide2.osa.2
SELECT gift, mode() WITHIN GROUP (ORDER BY currency) AS v FROM orders GROUP BY gift

-- q: wide2.osa_all.2
SELECT mode() WITHIN GROUP (ORDER BY currency) AS v FROM orders

-- q: wide2.osa.3
SELECT gift, rank(50) WITHIN GROUP (ORDER BY total) AS v FROM orders GROUP BY gift

-- q: wide2.osa_all.3
SELECT rank(50) WITHIN GROUP (ORDER BY total) AS v FROM orders

-- q: wide2.osa.4
SELECT gift, dense_rank(3) WITHIN GROUP (ORDER BY qty) AS v FROM orders GROUP BY gift

-- q: wide2.osa_all.4
SELECT dense_rank(3) WITHIN GROUP (ORDER BY qty) AS v FROM orders

-- q: wide2.osa.5
SELECT gift, percent_rank(100) WITHIN GROUP (ORDER BY total) AS v FROM orders GROUP BY gift

-- q: wide2.osa_all.5
SELECT percent_rank(100) WITHIN GROUP (ORDER BY total) AS v FROM orders

-- q: wide2.osa.6
SELECT gift, cume_dist(2) WITHIN GROUP (ORDER BY qty) AS v FROM orders GROUP BY gift

-- q: wide2.osa_all.6
SELECT cume_dist(2) WITHIN GROUP (ORDER BY qty) AS v FROM orders

-- q: wide2.osa.7
SELECT gift, percentile_cont(ARRAY[0.1, 0.9]) WITHIN GROUP (ORDER BY weight) AS v FROM orders GROUP BY gift

-- q: wide2.osa_all.7
SELECT percentile_cont(ARRAY[0.1, 0.9]) WITHIN GROUP (ORDER BY weight) AS v FROM orders

-- q: wide2.osa.8
SELECT gift, percentile_disc(0.5) WITHIN GROUP (ORDER BY placed_at) AS v FROM orders GROUP BY gift

-- q: wide2.osa_all.8
SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY placed_at) AS v FROM orders

-- q: wide2.osa.9
SELECT gift, string_agg(DISTINCT status, ',' ORDER BY status) AS v FROM orders GROUP BY gift

-- q: wide2.osa_all.9
SELECT string_agg(DISTINCT status, ',' ORDER BY status) AS v FROM orders

-- q: wide2.osa.10
SELECT gift, array_agg(DISTINCT currency ORDER BY currency) AS v FROM orders GROUP BY gift

-- q: wide2.osa_all.10
SELECT array_agg(DISTINCT currency ORDER BY currency) AS v FROM orders

-- q: wide2.osa.11
SELECT gift, json_agg(DISTINCT status ORDER BY status) AS v FROM orders GROUP BY gift

-- q: wide2.osa_all.11
SELECT json_agg(DISTINCT status ORDER BY status) AS v FROM orders

-- q: wide2.param.0 args=5
SELECT id, $1::int + tier AS t FROM customers WHERE id < 20

-- q: wide2.param.1 args=100.5
SELECT status, count(*) FROM orders WHERE total > $1::numeric GROUP BY status

-- q: wide2.param.2 ordered args=3,7
SELECT id FROM customers ORDER BY id LIMIT $1 OFFSET $2

-- q: wide2.param.3 args=10
SELECT status, sum(total) FROM orders GROUP BY status HAVING count(*) > $1

-- q: wide2.param.4 args=2,high
SELECT id, CASE WHEN tier > $1 THEN $2 ELSE 'low' END AS c FROM customers WHERE id BETWEEN 1 AND 30

-- q: wide2.param.5 args=2024-03-01T00:00:00Z
SELECT count(*) FROM orders WHERE placed_at > $1::timestamptz

-- q: wide2.param.6 args=1990-01-01
SELECT count(*) FROM customers WHERE born < $1::date

-- q: wide2.param.7 ordered args=a%
SELECT id FROM customers WHERE name ILIKE $1 ORDER BY id

-- q: wide2.param.8 ordered args={1;2;3;9;100}
SELECT id FROM customers WHERE id = ANY($1::bigint[]) ORDER BY id

-- q: wide2.param.9 ordered args=de,1
SELECT id, name FROM customers WHERE country = $1 AND tier = $2::smallint ORDER BY id

-- q: wide2.param.10 args=paid,shipped,nope
SELECT count(*) FROM orders WHERE status IN ($1, $2, $3)

-- q: wide2.param.11 args=0,99999
SELECT coalesce(max(total), $1::numeric) FROM orders WHERE customer_id = $2

-- q: wide2.param.12 ordered args=42,2
SELECT id FROM orders WHERE customer_id = $1 ORDER BY total DESC, id LIMIT $2

-- q: wide2.param.13 args=x
SELECT $1::text AS a, count(*) FROM orders

-- q: wide2.param.14 args=2
SELECT status, count(*) FILTER (WHERE qty > $1) FROM orders GROUP BY status

-- q: wide2.param.15 ordered args=NULL
SELECT id FROM customers WHERE tier IS NOT DISTINCT FROM $1::smallint ORDER BY id LIMIT 5

-- q: wide2.param.16 args=example
SELECT count(*) FROM customers WHERE email LIKE '%' || $1 || '%'

-- q: wide2.param.17 args=year
SELECT date_trunc($1, placed_at) AS d, count(*) FROM orders GROUP BY 1

-- q: wide2.param.18 args=1
SELECT id, round(balance, $1) FROM customers WHERE id BETWEEN 1 AND 9

-- q: wide2.param.19 args=10,200
SELECT count(*) FROM orders WHERE total BETWEEN $1 AND $2

-- q: wide2.param.20 ordered args=360
SELECT id FROM customers ORDER BY id DESC OFFSET $1

-- q: wide2.param.21 ordered args=4
SELECT id FROM customers ORDER BY id FETCH FIRST $1 ROWS ONLY

-- q: wide2.param.22 args=theme
SELECT id, prefs -> $1::text AS p FROM customers WHERE id BETWEEN 1 AND 12

-- q: wide2.param.23 args=vip
SELECT count(*) FROM customers WHERE $1 = ANY(tags)

-- q: wide2.param.24 args=1,2
SELECT customer_id, sum(qty) FROM orders WHERE customer_id IN ($1, $2) GROUP BY customer_id

-- q: wide2.param.25 args=0.5
SELECT max(total) - $1::numeric AS d FROM orders

-- q: wide2.param.26 ordered args=-5
SELECT id FROM customers WHERE id > $1 ORDER BY id LIMIT 3

-- q: wide2.param.27 args=2
SELECT count(*) FROM orders o JOIN customers c ON c.id = o.customer_id WHERE c.tier = $1

-- q: wide2.setop.tier.0 ordered
SELECT tier FROM customers WHERE id < 200 UNION SELECT qty FROM orders WHERE customer_id > 100 ORDER BY 1 NULLS FIRST

-- q: wide2.setop.lim.0 ordered
(SELECT country FROM customers UNION SELECT code FROM countries) ORDER BY 1 DESC NULLS LAST LIMIT 7

-- q: wide2.setop.cnt.0
SELECT count(*) FROM (SELECT status FROM orders UNION SELECT name FROM customers) s

-- q: wide2.setop.tier.1 ordered
SELECT tier FROM customers WHERE id < 200 UNION ALL SELECT qty FROM orders WHERE customer_id > 100 ORDER BY 1 NULLS FIRST

-- q: wide2.setop.lim.1 ordered
(SELECT country FROM customers UNION ALL SELECT code FROM countries) ORDER BY 1 DESC NULLS LAST LIMIT 7

-- q: wide2.setop.cnt.1
SELECT count(*) FROM (SELECT status FROM orders UNION ALL SELECT name FROM customers) s

-- q: wide2.setop.tier.2 ordered
SELECT tier FROM customers WHERE id < 200 INTERSECT SELECT qty FROM orders WHERE customer_id > 100 ORDER BY 1 NULLS FIRST

-- q: wide2.setop.lim.2 ordered
(SELECT country FROM customers INTERSECT SELECT code FROM countries) ORDER BY 1 DESC NULLS LAST LIMIT 7

-- q: wide2.setop.cnt.2
SELECT count(*) FROM (SELECT status FROM orders INTERSECT SELECT name FROM customers) s

-- q: wide2.setop.tier.3 ordered
SELECT tier FROM customers WHERE id < 200 EXCEPT SELECT qty FROM orders WHERE customer_id > 100 ORDER BY 1 NULLS FIRST

-- q: wide2.setop.lim.3 ordered
(SELECT country FROM customers EXCEPT SELECT code FROM countries) ORDER BY 1 DESC NULLS LAST LIMIT 7

-- q: wide2.setop.cnt.3
SELECT count(*) FROM (SELECT status FROM orders EXCEPT SELECT name FROM customers) s

-- q: wide2.setop.tier.4 ordered
SELECT tier FROM customers WHERE id < 200 INTERSECT ALL SELECT qty FROM orders WHERE customer_id > 100 ORDER BY 1 NULLS FIRST

-- q: wide2.setop.lim.4 ordered
(SELECT country FROM customers INTERSECT ALL SELECT code FROM countries) ORDER BY 1 DESC NULLS LAST LIMIT 7

-- q: wide2.setop.cnt.4
SELECT count(*) FROM (SELECT status FROM orders INTERSECT ALL SELECT name FROM customers) s

-- q: wide2.setop.tier.5 ordered
SELECT tier FROM customers WHERE id < 200 EXCEPT ALL SELECT qty FROM orders WHERE customer_id > 100 ORDER BY 1 NULLS FIRST

-- q: wide2.setop.lim.5 ordered
(SELECT country FROM customers EXCEPT ALL SELECT code FROM countries) ORDER BY 1 DESC NULLS LAST LIMIT 7

-- q: wide2.setop.cnt.5
SELECT count(*) FROM (SELECT status FROM orders EXCEPT ALL SELECT name FROM customers) s

-- q: wide2.json.0
SELECT prefs ->> 'theme' AS v, count(*) FROM customers GROUP BY 1

-- q: wide2.json_ord.0 ordered
SELECT id, prefs ->> 'theme' AS v FROM customers ORDER BY 2 NULLS FIRST, id LIMIT 20

-- q: wide2.json.1
SELECT prefs -> 'n' AS v, count(*) FROM customers GROUP BY 1

-- q: wide2.json_ord.1 ordered
SELECT id, prefs -> 'n' AS v FROM customers ORDER BY 2 NULLS FIRST, id LIMIT 20

-- q: wide2.json.2
SELECT jsonb_typeof(prefs) AS v, count(*) FROM customers GROUP BY 1

-- q: wide2.json_ord.2 ordered
SELECT id, jsonb_typeof(prefs) AS v FROM customers ORDER BY 2 NULLS FIRST, id LIMIT 20

-- q: wide2.json.3
SELECT prefs ? 'theme' AS v, count(*) FROM customers GROUP BY 1

-- q: wide2.json_ord.3 ordered
SELECT id, prefs ? 'theme' AS v FROM customers ORDER BY 2 NULLS FIRST, id LIMIT 20

-- q: wide2.json.4
SELECT prefs @> '{"theme": "dark"}' AS v, count(*) FROM customers GROUP BY 1

-- q: wide2.json_ord.4 ordered
SELECT id, prefs @> '{"theme": "dark"}' AS v FROM customers ORDER BY 2 NULLS FIRST, id LIMIT 20

-- q: wide2.json.5
SELECT array_length(tags, 1) AS v, count(*) FROM customers GROUP BY 1

-- q: wide2.json_ord.5 ordered
SELECT id, array_length(tags, 1) AS v FROM customers ORDER BY 2 NULLS FIRST, id LIMIT 20

-- q: wide2.json.6
SELECT tags[1] AS v, count(*) FROM customers GROUP BY 1

-- q: wide2.json_ord.6 ordered
SELECT id, tags[1] AS v FROM customers ORDER BY 2 NULLS FIRST, id LIMIT 20

-- q: wide2.json.7
SELECT cardinality(tags) AS v, count(*) FROM customers GROUP BY 1

-- q: wide2.json_ord.7 ordered
SELECT id, cardinality(tags) AS v FROM customers ORDER BY 2 NULLS FIRST, id LIMIT 20

-- q: wide2.json.8
SELECT 'vip' = ANY(tags) AS v, count(*) FROM customers GROUP BY 1

-- q: wide2.json_ord.8 ordered
SELECT id, 'vip' = ANY(tags) AS v FROM customers ORDER BY 2 NULLS FIRST, id LIMIT 20

-- q: wide2.json.9
SELECT tags && ARRAY['vip', 'new'] AS v, count(*) FROM customers GROUP BY 1

-- q: wide2.json_ord.9 ordered
SELECT id, tags && ARRAY['vip', 'new'] AS v FROM customers ORDER BY 2 NULLS FIRST, id LIMIT 20

-- q: wide2.json.10
SELECT array_to_string(tags, '|') AS v, count(*) FROM customers GROUP BY 1

-- q: wide2.json_ord.10 ordered
SELECT id, array_to_string(tags, '|') AS v FROM customers ORDER BY 2 NULLS FIRST, id LIMIT 20

-- q: wide2.json.11
SELECT jsonb_array_length(CASE WHEN jsonb_typeof(prefs) = 'array' THEN prefs END) AS v, count(*) FROM customers GROUP BY 1

-- q: wide2.json_ord.11 ordered
SELECT id, jsonb_array_length(CASE WHEN jsonb_typeof(prefs) = 'array' THEN prefs END) AS v FROM customers ORDER BY 2 NULLS FIRST, id LIMIT 20

-- avg(double precision) keeps a sum of squared deviations beside the sum;
-- rows far apart (customer -42's 1e300 and customer 2's score, on two
-- clusters) overflow it: 22003 on Postgres, where the shards' sums alone
-- gave a finite average through the proxy. An infinite value before
-- (customer -1's Infinity) stops the check, on both sides.
-- q: wide2.avg_float8_squares_overflow error
SELECT avg(score) FROM customers WHERE id IN (-42, 2)

-- q: wide2.avg_float8_squares_overflow_grouped error
SELECT tier IS NULL AS t, avg(score) FROM customers WHERE id IN (-42, 2, 9, 100) GROUP BY 1

-- q: wide2.avg_float8_squares_infinite
SELECT avg(score), sum(score) FROM customers WHERE id IN (-42, 2, -1)

-- q: wide2.avg_float8_close
SELECT avg(score * 1e150) FROM customers WHERE id IN (-3, 2, 9, 100)

-- q: wide2.avg_float8_squares_one_shard error
SELECT id IN (-42, 1) AS g, avg(score) FROM customers WHERE id IN (-42, 1, 2) GROUP BY 1

-- q: wide2.slt.0 ordered
SELECT id, CASE WHEN qty > 2 THEN total * 2 ELSE -total END AS x FROM orders WHERE qty > 2 ORDER BY 2 NULLS LAST, 1

-- q: wide2.slt_agg.0
SELECT count(*), sum(qty), min(CASE WHEN qty > 2 THEN total * 2 ELSE -total END) AS m FROM orders o WHERE qty > 2

-- q: wide2.slt_pos.0 ordered
SELECT CASE WHEN qty > 2 THEN total * 2 ELSE -total END AS x, count(*) FROM orders WHERE qty > 2 GROUP BY 1 ORDER BY 2 DESC, 1 NULLS FIRST LIMIT 5

-- q: wide2.slt.1 ordered
SELECT id, abs(qty - 3) + customer_id % 5 AS x FROM orders WHERE total < 100 OR qty IS NULL ORDER BY 2 NULLS LAST, 1

-- q: wide2.slt_agg.1
SELECT count(*), sum(qty), min(abs(qty - 3) + customer_id % 5) AS m FROM orders o WHERE total < 100 OR qty IS NULL

-- q: wide2.slt_pos.1 ordered
SELECT abs(qty - 3) + customer_id % 5 AS x, count(*) FROM orders WHERE total < 100 OR qty IS NULL GROUP BY 1 ORDER BY 2 DESC, 1 NULLS FIRST LIMIT 5

-- q: wide2.slt.2 ordered
SELECT id, coalesce(discount, total, 0) AS x FROM orders WHERE discount IS NOT NULL AND qty BETWEEN 1 AND 3 ORDER BY 2 NULLS LAST, 1

-- q: wide2.slt_agg.2
SELECT count(*), sum(qty), min(coalesce(discount, total, 0)) AS m FROM orders o WHERE discount IS NOT NULL AND qty BETWEEN 1 AND 3

-- q: wide2.slt_pos.2 ordered
SELECT coalesce(discount, total, 0) AS x, count(*) FROM orders WHERE discount IS NOT NULL AND qty BETWEEN 1 AND 3 GROUP BY 1 ORDER BY 2 DESC, 1 NULLS FIRST LIMIT 5

-- q: wide2.slt.3 ordered
SELECT id, (SELECT count(*) FROM items i WHERE i.customer_id = orders.customer_id AND i.order_id = orders.id) AS x FROM orders WHERE customer_id % 3 = 1 ORDER BY 2 NULLS LAST, 1

-- q: wide2.slt_agg.3
SELECT count(*), sum(qty), min((SELECT count(*) FROM items i WHERE i.customer_id = o.customer_id AND i.order_id = o.id)) AS m FROM orders o WHERE customer_id % 3 = 1

-- q: wide2.slt_pos.3 ordered
SELECT (SELECT count(*) FROM items i WHERE i.customer_id = orders.customer_id AND i.order_id = orders.id) AS x, count(*) FROM orders WHERE customer_id % 3 = 1 GROUP BY 1 ORDER BY 2 DESC, 1 NULLS FIRST LIMIT 5

-- q: wide2.slt.4 ordered
SELECT id, CASE qty WHEN 1 THEN 'one' WHEN 2 THEN 'two' ELSE 'many' END AS x FROM orders WHERE NOT (qty < 3) ORDER BY 2 NULLS LAST, 1

-- q: wide2.slt_agg.4
SELECT count(*), sum(qty), min(CASE qty WHEN 1 THEN 'one' WHEN 2 THEN 'two' ELSE 'many' END) AS m FROM orders o WHERE NOT (qty < 3)

-- q: wide2.slt_pos.4 ordered
SELECT CASE qty WHEN 1 THEN 'one' WHEN 2 THEN 'two' ELSE 'many' END AS x, count(*) FROM orders WHERE NOT (qty < 3) GROUP BY 1 ORDER BY 2 DESC, 1 NULLS FIRST LIMIT 5

-- q: wide2.slt.5 ordered
SELECT id, nullif(qty, 2) AS x FROM orders WHERE coalesce(discount, 0) > 0.1 ORDER BY 2 NULLS LAST, 1

-- q: wide2.slt_agg.5
SELECT count(*), sum(qty), min(nullif(qty, 2)) AS m FROM orders o WHERE coalesce(discount, 0) > 0.1

-- q: wide2.slt_pos.5 ordered
SELECT nullif(qty, 2) AS x, count(*) FROM orders WHERE coalesce(discount, 0) > 0.1 GROUP BY 1 ORDER BY 2 DESC, 1 NULLS FIRST LIMIT 5

-- q: wide2.slt.6 ordered
SELECT id, qty * 10 + length(status) AS x FROM orders WHERE qty IN (1, 3, 5) ORDER BY 2 NULLS LAST, 1

-- q: wide2.slt_agg.6
SELECT count(*), sum(qty), min(qty * 10 + length(status)) AS m FROM orders o WHERE qty IN (1, 3, 5)

-- q: wide2.slt_pos.6 ordered
SELECT qty * 10 + length(status) AS x, count(*) FROM orders WHERE qty IN (1, 3, 5) GROUP BY 1 ORDER BY 2 DESC, 1 NULLS FIRST LIMIT 5

-- q: wide2.slt.7 ordered
SELECT id, (SELECT max(price) FROM items i WHERE i.customer_id = orders.customer_id) AS x FROM orders WHERE total > (SELECT avg(total) FROM orders) ORDER BY 2 NULLS LAST, 1

-- q: wide2.slt_agg.7
SELECT count(*), sum(qty), min((SELECT max(price) FROM items i WHERE i.customer_id = o.customer_id)) AS m FROM orders o WHERE total > (SELECT avg(total) FROM orders)

-- q: wide2.slt_pos.7 ordered
SELECT (SELECT max(price) FROM items i WHERE i.customer_id = orders.customer_id) AS x, count(*) FROM orders WHERE total > (SELECT avg(total) FROM orders) GROUP BY 1 ORDER BY 2 DESC, 1 NULLS FIRST LIMIT 5

-- q: wide2.slt.8 ordered
SELECT id, total::int % 7 AS x FROM orders WHERE EXISTS (SELECT 1 FROM items i WHERE i.customer_id = orders.customer_id AND i.order_id = orders.id AND i.qty > 3) ORDER BY 2 NULLS LAST, 1

-- q: wide2.slt_agg.8
SELECT count(*), sum(qty), min(total::int % 7) AS m FROM orders o WHERE EXISTS (SELECT 1 FROM items i WHERE i.customer_id = o.customer_id AND i.order_id = o.id AND i.qty > 3)

-- q: wide2.slt_pos.8 ordered
SELECT total::int % 7 AS x, count(*) FROM orders WHERE EXISTS (SELECT 1 FROM items i WHERE i.customer_id = orders.customer_id AND i.order_id = orders.id AND i.qty > 3) GROUP BY 1 ORDER BY 2 DESC, 1 NULLS FIRST LIMIT 5

-- q: wide2.slt.9 ordered
SELECT id, -qty AS x FROM orders WHERE qty > ALL (SELECT qty FROM items WHERE items.order_id = orders.id AND items.customer_id = orders.customer_id) ORDER BY 2 NULLS LAST, 1

-- q: wide2.slt_agg.9
SELECT count(*), sum(qty), min(-qty) AS m FROM orders o WHERE qty > ALL (SELECT qty FROM items WHERE items.order_id = o.id AND items.customer_id = o.customer_id)

-- q: wide2.slt_pos.9 ordered
SELECT -qty AS x, count(*) FROM orders WHERE qty > ALL (SELECT qty FROM items WHERE items.order_id = orders.id AND items.customer_id = orders.customer_id) GROUP BY 1 ORDER BY 2 DESC, 1 NULLS FIRST LIMIT 5

-- q: wide2.don.0 ordered
SELECT DISTINCT ON (status) status, id, total FROM orders ORDER BY status, total DESC, id

-- q: wide2.don_lim.0 ordered
SELECT DISTINCT ON (status) id, qty FROM orders ORDER BY status, total DESC, id LIMIT 3 OFFSET 1

-- q: wide2.don.1 ordered
SELECT DISTINCT ON (currency) currency, id, total FROM orders ORDER BY currency NULLS FIRST, placed_at, id

-- q: wide2.don_lim.1 ordered
SELECT DISTINCT ON (currency) id, qty FROM orders ORDER BY currency NULLS FIRST, placed_at, id LIMIT 3 OFFSET 1

-- q: wide2.don.2 ordered
SELECT DISTINCT ON (customer_id % 4) customer_id % 4, id, total FROM orders ORDER BY customer_id % 4, qty DESC NULLS LAST, id

-- q: wide2.don_lim.2 ordered
SELECT DISTINCT ON (customer_id % 4) id, qty FROM orders ORDER BY customer_id % 4, qty DESC NULLS LAST, id LIMIT 3 OFFSET 1

-- q: wide2.don.3 ordered
SELECT DISTINCT ON (gift) gift, id, total FROM orders ORDER BY gift DESC, id

-- q: wide2.don_lim.3 ordered
SELECT DISTINCT ON (gift) id, qty FROM orders ORDER BY gift DESC, id LIMIT 3 OFFSET 1

-- q: wide2.don.4 ordered
SELECT DISTINCT ON (status, gift) status, id, total FROM orders ORDER BY status, gift, id DESC

-- q: wide2.don_lim.4 ordered
SELECT DISTINCT ON (status, gift) id, qty FROM orders ORDER BY status, gift, id DESC LIMIT 3 OFFSET 1

-- q: wide2.lateral.0 ordered
SELECT c.id, x.n FROM customers c, LATERAL (SELECT count(*) AS n FROM orders o WHERE o.customer_id = c.id) x WHERE c.id < 30 ORDER BY c.id

-- q: wide2.lateral.1 ordered
SELECT c.id, x.total FROM customers c CROSS JOIN LATERAL (SELECT total FROM orders o WHERE o.customer_id = c.id ORDER BY total DESC, id LIMIT 1) x WHERE c.id BETWEEN 1 AND 50 ORDER BY c.id

-- q: wide2.lateral.2 ordered
SELECT c.id, x.total FROM customers c LEFT JOIN LATERAL (SELECT total FROM orders o WHERE o.customer_id = c.id ORDER BY total, id LIMIT 2) x ON true WHERE c.id > 340 AND c.id <= 360 ORDER BY c.id, x.total NULLS FIRST

-- q: wide2.lateral.3 ordered
SELECT g, count(o.id) FROM generate_series(1, 5) g LEFT JOIN orders o ON o.qty = g GROUP BY g ORDER BY g

-- q: wide2.lateral.4 ordered
SELECT g, (SELECT count(*) FROM customers WHERE tier = g) FROM generate_series(0, 4) g ORDER BY g

-- q: wide2.lateral.5 ordered
SELECT v.k, c.name FROM (VALUES (1), (2), (9), (100), (99999)) v(k) LEFT JOIN customers c ON c.id = v.k ORDER BY v.k

-- q: wide2.lateral.6 ordered
SELECT v.s, count(o.id) FROM (VALUES ('paid'), ('pending'), ('nope')) v(s) LEFT JOIN orders o ON o.status = v.s GROUP BY v.s ORDER BY v.s

-- q: wide2.lateral.7 ordered
SELECT o.id, u.t FROM orders o, unnest(ARRAY[o.qty, o.qty * 2]) u(t) WHERE o.customer_id = 7 ORDER BY o.id, u.t

-- q: wide2.lateral.8 ordered
SELECT c.id, t FROM customers c, unnest(c.tags) WITH ORDINALITY AS u(t, n) WHERE c.id < 40 ORDER BY c.id, n

-- q: wide2.lateral.9 ordered
SELECT c.id, e.key, e.value FROM customers c, jsonb_each(CASE WHEN jsonb_typeof(c.prefs) = 'object' THEN c.prefs END) e WHERE c.id < 30 ORDER BY c.id, e.key

-- q: wide2.lateral.10 ordered
SELECT d::date, count(o.id) FROM generate_series('2024-01-01'::timestamp, '2024-01-10', '1 day') d LEFT JOIN orders o ON o.placed_at::date = d::date GROUP BY 1 ORDER BY 1

-- q: wide2.lateral.11 ordered
SELECT s.n, count(*) FROM (SELECT width_bucket(total, 0, 1000, 5) AS n FROM orders) s GROUP BY s.n ORDER BY s.n

-- q: wide2.num.0 ordered
SELECT id, round(total / 3, 4) AS v FROM orders WHERE customer_id BETWEEN 1 AND 30 ORDER BY v NULLS FIRST, id

-- q: wide2.num_agg.0
SELECT max(round(total / 3, 4)) AS mx, min(round(total / 3, 4)) AS mn, count(DISTINCT round(total / 3, 4)) AS d FROM orders

-- q: wide2.num.1 ordered
SELECT id, trunc(total * 1.005, 1) AS v FROM orders WHERE customer_id BETWEEN 1 AND 30 ORDER BY v NULLS FIRST, id

-- q: wide2.num_agg.1
SELECT max(trunc(total * 1.005, 1)) AS mx, min(trunc(total * 1.005, 1)) AS mn, count(DISTINCT trunc(total * 1.005, 1)) AS d FROM orders

-- q: wide2.num.2 ordered
SELECT id, total % 3.3 AS v FROM orders WHERE customer_id BETWEEN 1 AND 30 ORDER BY v NULLS FIRST, id

-- q: wide2.num_agg.2
SELECT max(total % 3.3) AS mx, min(total % 3.3) AS mn, count(DISTINCT total % 3.3) AS d FROM orders

-- q: wide2.num.3 ordered
SELECT id, div(total, 7) AS v FROM orders WHERE customer_id BETWEEN 1 AND 30 ORDER BY v NULLS FIRST, id

-- q: wide2.num_agg.3
SELECT max(div(total, 7)) AS mx, min(div(total, 7)) AS mn, count(DISTINCT div(total, 7)) AS d FROM orders

-- q: wide2.num.4 ordered
SELECT id, mod(qty, 3) AS v FROM orders WHERE customer_id BETWEEN 1 AND 30 ORDER BY v NULLS FIRST, id

-- q: wide2.num_agg.4
SELECT max(mod(qty, 3)) AS mx, min(mod(qty, 3)) AS mn, count(DISTINCT mod(qty, 3)) AS d FROM orders

-- q: wide2.num.5 ordered
SELECT id, power(qty, 2)::numeric(20,2) AS v FROM orders WHERE customer_id BETWEEN 1 AND 30 ORDER BY v NULLS FIRST, id

-- q: wide2.num_agg.5
SELECT max(power(qty, 2)::numeric(20,2)) AS mx, min(power(qty, 2)::numeric(20,2)) AS mn, count(DISTINCT power(qty, 2)::numeric(20,2)) AS d FROM orders

-- q: wide2.num.6 ordered
SELECT id, total::float8 AS v FROM orders WHERE customer_id BETWEEN 1 AND 30 ORDER BY v NULLS FIRST, id

-- q: wide2.num_agg.6
SELECT max(total::float8) AS mx, min(total::float8) AS mn, count(DISTINCT total::float8) AS d FROM orders

-- q: wide2.num.7 ordered
SELECT id, total::real AS v FROM orders WHERE customer_id BETWEEN 1 AND 30 ORDER BY v NULLS FIRST, id

-- q: wide2.num_agg.7
SELECT max(total::real) AS mx, min(total::real) AS mn, count(DISTINCT total::real) AS d FROM orders

-- q: wide2.num.8 ordered
SELECT id, (total * 1e5)::bigint AS v FROM orders WHERE customer_id BETWEEN 1 AND 30 ORDER BY v NULLS FIRST, id

-- q: wide2.num_agg.8
SELECT max((total * 1e5)::bigint) AS mx, min((total * 1e5)::bigint) AS mn, count(DISTINCT (total * 1e5)::bigint) AS d FROM orders

-- q: wide2.num.9 ordered
SELECT id, scale(total) AS v FROM orders WHERE customer_id BETWEEN 1 AND 30 ORDER BY v NULLS FIRST, id

-- q: wide2.num_agg.9
SELECT max(scale(total)) AS mx, min(scale(total)) AS mn, count(DISTINCT scale(total)) AS d FROM orders

-- q: wide2.num.10 ordered
SELECT id, sign(discount) AS v FROM orders WHERE customer_id BETWEEN 1 AND 30 ORDER BY v NULLS FIRST, id

-- q: wide2.num_agg.10
SELECT max(sign(discount)) AS mx, min(sign(discount)) AS mn, count(DISTINCT sign(discount)) AS d FROM orders

-- q: wide2.num.11 ordered
SELECT id, ceil(total / 7) AS v FROM orders WHERE customer_id BETWEEN 1 AND 30 ORDER BY v NULLS FIRST, id

-- q: wide2.num_agg.11
SELECT max(ceil(total / 7)) AS mx, min(ceil(total / 7)) AS mn, count(DISTINCT ceil(total / 7)) AS d FROM orders

-- q: wide2.num.12 ordered
SELECT id, floor(-total / 7) AS v FROM orders WHERE customer_id BETWEEN 1 AND 30 ORDER BY v NULLS FIRST, id

-- q: wide2.num_agg.12
SELECT max(floor(-total / 7)) AS mx, min(floor(-total / 7)) AS mn, count(DISTINCT floor(-total / 7)) AS d FROM orders

-- q: wide2.num.13 ordered
SELECT id, total::text || '$' AS v FROM orders WHERE customer_id BETWEEN 1 AND 30 ORDER BY v NULLS FIRST, id

-- q: wide2.num_agg.13
SELECT max(total::text || '$') AS mx, min(total::text || '$') AS mn, count(DISTINCT total::text || '$') AS d FROM orders

-- q: wide2.num.14 ordered
SELECT id, to_char(total, 'FM9999.00') AS v FROM orders WHERE customer_id BETWEEN 1 AND 30 ORDER BY v NULLS FIRST, id

-- q: wide2.num_agg.14
SELECT max(to_char(total, 'FM9999.00')) AS mx, min(to_char(total, 'FM9999.00')) AS mn, count(DISTINCT to_char(total, 'FM9999.00')) AS d FROM orders

-- q: wide2.num.15 ordered
SELECT id, (qty::numeric / 3)::numeric(10,5) AS v FROM orders WHERE customer_id BETWEEN 1 AND 30 ORDER BY v NULLS FIRST, id

-- q: wide2.num_agg.15
SELECT max((qty::numeric / 3)::numeric(10,5)) AS mx, min((qty::numeric / 3)::numeric(10,5)) AS mn, count(DISTINCT (qty::numeric / 3)::numeric(10,5)) AS d FROM orders

-- q: wide2.corr.0 ordered
SELECT c.id FROM customers c WHERE (SELECT count(*) FROM orders o WHERE o.customer_id = c.id) > 10 ORDER BY c.id

-- q: wide2.corr.1 ordered
SELECT c.id FROM customers c WHERE NOT EXISTS (SELECT 1 FROM orders o WHERE o.customer_id = c.id) ORDER BY c.id

-- q: wide2.corr.2 ordered
SELECT c.id, (SELECT max(o.total) FROM orders o WHERE o.customer_id = c.id AND o.status = 'paid') AS m FROM customers c WHERE c.id < 25 ORDER BY c.id

-- q: wide2.corr.3 ordered
SELECT o.id FROM orders o WHERE o.total = (SELECT max(o2.total) FROM orders o2 WHERE o2.customer_id = o.customer_id) AND o.customer_id < 20 ORDER BY o.id

-- q: wide2.corr.4
SELECT count(*) FROM orders o WHERE o.qty > (SELECT avg(i.qty) FROM items i WHERE i.customer_id = o.customer_id)

-- q: wide2.corr.5
SELECT c.country, count(*) FROM customers c WHERE c.id IN (SELECT customer_id FROM orders WHERE status = 'cancelled') GROUP BY c.country

-- q: wide2.corr.6
SELECT count(*) FROM customers c WHERE c.id NOT IN (SELECT customer_id FROM orders WHERE qty > 4)

-- q: wide2.corr.7 ordered
SELECT id FROM customers WHERE tier = ANY (SELECT qty FROM orders WHERE customer_id = 7) ORDER BY id

-- q: wide2.wingroup.0
SELECT status, sum(total) AS s, rank() OVER (ORDER BY sum(total) DESC) AS r FROM orders GROUP BY status

-- q: wide2.wingroup.1
SELECT currency, count(*) AS n, sum(count(*)) OVER () AS t FROM orders GROUP BY currency

-- q: wide2.wingroup.2 ordered
SELECT tier, avg(balance) AS a, lag(avg(balance)) OVER (ORDER BY tier NULLS FIRST) AS p FROM customers GROUP BY tier ORDER BY tier NULLS FIRST

-- q: wide2.wingroup.3 ordered
SELECT country, count(*) AS n, row_number() OVER (ORDER BY count(*) DESC, country NULLS LAST) AS r FROM customers GROUP BY country ORDER BY r LIMIT 10

-- q: wide2.wingroup.4 ordered
SELECT gift, max(qty) AS m, sum(max(qty)) OVER (ORDER BY gift NULLS FIRST) AS run FROM orders GROUP BY gift ORDER BY gift NULLS FIRST

-- q: wide2.nested.0 ordered
SELECT s.status, s.n FROM (SELECT status, count(*) AS n FROM orders GROUP BY status) s WHERE s.n > 10 ORDER BY s.n DESC, s.status

-- q: wide2.nested.1
SELECT max(n), min(n), avg(n) FROM (SELECT customer_id, count(*) AS n FROM orders GROUP BY customer_id) s

-- q: wide2.nested.2 ordered
SELECT n, count(*) FROM (SELECT customer_id, count(*) AS n FROM orders GROUP BY customer_id) s GROUP BY n ORDER BY n

-- q: wide2.nested.3 ordered
SELECT t.tier, t.c FROM (SELECT tier, count(DISTINCT country) AS c FROM customers GROUP BY tier) t ORDER BY t.tier NULLS LAST

-- q: wide2.nested.4
SELECT count(*) FROM (SELECT DISTINCT status, currency FROM orders) s

-- q: wide2.nested.5 ordered
SELECT * FROM (SELECT id, total FROM orders ORDER BY total DESC, id LIMIT 10) s ORDER BY id

-- q: wide2.nested.6
SELECT avg(total) FROM (SELECT total FROM orders ORDER BY total, id LIMIT 50) s

-- q: wide2.nested.7
SELECT (SELECT count(*) FROM orders) - (SELECT count(*) FROM items) AS d

-- q: wide2.nested.8 ordered
SELECT status FROM orders GROUP BY status HAVING sum(total) > (SELECT avg(total) * 100 FROM orders) ORDER BY 1

-- q: wide2.setagg.0 ordered
SELECT 'orders' AS t, count(*) FROM orders UNION ALL SELECT 'items', count(*) FROM items ORDER BY 1

-- q: wide2.setagg.1 ordered
SELECT status AS k, count(*) FROM orders GROUP BY status UNION SELECT country, count(*) FROM customers GROUP BY country ORDER BY 1 NULLS FIRST, 2

-- q: wide2.setagg.2
SELECT max(total) FROM orders INTERSECT SELECT max(total) FROM orders WHERE customer_id >= -9223372036854775808

-- q: wide2.setagg.3 ordered
SELECT customer_id FROM orders WHERE qty > 4 EXCEPT SELECT id FROM customers WHERE tier = 1 ORDER BY 1 LIMIT 10

-- q: wide2.nulls.0
SELECT count(*) FROM customers WHERE tier NOT IN (1, NULL)

-- q: wide2.nulls.1
SELECT count(*) FROM customers WHERE tier IN (1, NULL)

-- q: wide2.nulls.2
SELECT count(*) FROM orders WHERE discount = NULL

-- q: wide2.nulls.3
SELECT tier IS NULL AS n, tier IS DISTINCT FROM 1 AS d, count(*) FROM customers GROUP BY 1, 2

-- q: wide2.nulls.4
SELECT count(discount), count(*), sum(CASE WHEN discount IS NULL THEN 1 END) FROM orders

-- q: wide2.nulls.5 ordered
SELECT coalesce(email, 'none') AS e FROM customers ORDER BY e, id LIMIT 15

-- q: wide2.nulls.6
SELECT max(email), min(email) FROM customers WHERE email IS NULL

-- q: wide2.nulls.7 ordered
SELECT id FROM customers WHERE NOT (tier > 1) IS NOT FALSE ORDER BY id LIMIT 20

-- q: wide2.text.0
SELECT lower(name) AS l, count(*) FROM customers GROUP BY 1

-- q: wide2.text.1 ordered
SELECT upper(substr(name, 1, 1)) AS i, count(*) FROM customers GROUP BY 1 ORDER BY 1

-- q: wide2.text.2 ordered
SELECT length(name) AS n, string_agg(DISTINCT name, ',' ORDER BY name) FROM customers GROUP BY 1 ORDER BY 1

-- q: wide2.text.3 ordered
SELECT id, name FROM customers WHERE name ~ '^[A-Z]' ORDER BY name, id LIMIT 20

-- q: wide2.text.4 ordered
SELECT id, name FROM customers WHERE name ~* 'ali' ORDER BY id

-- q: wide2.text.5 ordered
SELECT name COLLATE "C" AS n FROM customers GROUP BY 1 ORDER BY 1 DESC LIMIT 10

-- q: wide2.text.6
SELECT min(name COLLATE "C"), max(name COLLATE "C") FROM customers

-- q: wide2.text.7
SELECT replace(note, ' ', '_') AS r, count(*) FROM orders GROUP BY 1

-- q: wide2.text.8
SELECT split_part(email, '@', 2) AS d, count(*) FROM customers GROUP BY 1

-- q: wide2.text.9 ordered
SELECT left(name, 2) || right(name, 1) AS x FROM customers ORDER BY x NULLS FIRST, id LIMIT 10

-- q: wide2.time.0 ordered
SELECT extract(year FROM placed_at) AS y, count(*) FROM orders GROUP BY 1 ORDER BY 1

-- q: wide2.time.1
SELECT date_part('dow', ship_date) AS d, count(*) FROM orders GROUP BY 1

-- q: wide2.time.2 ordered
SELECT to_char(placed_at, 'YYYY-MM') AS m, sum(total) FROM orders GROUP BY 1 ORDER BY 1

-- q: wide2.time.3
SELECT max(ship_date - placed_at::date), min(ship_date - placed_at::date) FROM orders

-- q: wide2.time.4 ordered
SELECT id, age('2030-01-01'::date, born) AS a FROM customers WHERE id BETWEEN 1 AND 20 ORDER BY a NULLS FIRST, id

-- q: wide2.time.5 ordered
SELECT date_trunc('week', signup) AS w, count(*) FROM customers GROUP BY 1 ORDER BY 2 DESC, 1 NULLS FIRST LIMIT 5

-- q: wide2.time.6
SELECT justify_interval(sum(session)) FROM customers

-- q: wide2.time.7 ordered
SELECT born + interval '1 year' AS b FROM customers WHERE id < 20 ORDER BY b NULLS LAST

-- q: wide2.bool.0 ordered
SELECT active, count(*) FROM customers GROUP BY active ORDER BY active NULLS FIRST

-- q: wide2.bool.1 ordered
SELECT id, active FROM customers ORDER BY active DESC NULLS LAST, id LIMIT 10

-- q: wide2.bool.2
SELECT count(*) FILTER (WHERE active), count(*) FILTER (WHERE NOT active), count(*) FILTER (WHERE active IS UNKNOWN) FROM customers

-- q: wide2.limparam.0 ordered args=355
SELECT id FROM customers ORDER BY id LIMIT ALL OFFSET $1

-- q: wide2.limparam.1 ordered args=NULL
SELECT id FROM customers ORDER BY id LIMIT $1

-- q: wide2.limparam.2 ordered args=10,3
SELECT id FROM customers ORDER BY id OFFSET $1 ROWS FETCH FIRST $2 ROWS ONLY

-- q: wide2.limparam.3 keys=1 args=2
SELECT tier FROM customers ORDER BY tier FETCH FIRST $1 ROWS WITH TIES

-- q: wide2.limparam.4 ordered
SELECT id FROM orders ORDER BY id LIMIT 5 OFFSET NULL

-- q: wide2.limparam.5 ordered
SELECT id FROM orders ORDER BY id LIMIT NULL OFFSET 6000

-- q: wide2.casts.0 args=5,1.25,2024-02-28,t
SELECT $1::int + 1 AS a, $2::numeric * 2 AS b, $3::date + 1 AS c, $4::bool AS d

-- q: wide2.casts.1 ordered args=9
SELECT id FROM customers WHERE id = $1::bigint

-- q: wide2.casts.2 args=99.5
SELECT count(*) FROM orders WHERE total > $1::float8

-- q: wide2.casts.3 args=c42
SELECT id FROM customers WHERE 'c' || id::text = $1

-- q: wide2.casts.4 ordered args={3;7;100}
SELECT id FROM customers WHERE id = ANY($1::int[]) ORDER BY id

-- q: wide2.casts.5 args=1950-01-01,1970-12-31
SELECT count(*) FROM customers WHERE born BETWEEN $1::date AND $2::date

-- q: wide2.casts.6 args=3
SELECT CAST($1 AS integer) * tier AS x FROM customers WHERE id = 7

-- q: wide2.edge.group_empty_set
SELECT sum(qty), count(*) FROM orders GROUP BY ()

-- q: wide2.edge.having_no_group
SELECT count(*) FROM orders HAVING count(*) > 0

-- q: wide2.edge.having_false
SELECT 1 AS one FROM orders HAVING false

-- q: wide2.edge.agg_where_false
SELECT count(*), sum(total), avg(score_like) FROM (SELECT total, weight AS score_like FROM orders WHERE false) s

-- q: wide2.edge.array_agg_ordered
SELECT array_agg(id ORDER BY id) FROM orders WHERE customer_id IN (1, 2, 3, 9)

-- q: wide2.edge.array_agg_distinct
SELECT array_agg(DISTINCT qty) FROM orders

-- q: wide2.edge.string_agg_grouped
SELECT status, string_agg(id::text, ',' ORDER BY id) FROM orders WHERE customer_id < 10 GROUP BY status

-- q: wide2.edge.max_filter_empty
SELECT max(id) FILTER (WHERE qty > 1000), count(*) FILTER (WHERE qty > 1000) FROM orders

-- q: wide2.edge.avg_float_filter
SELECT avg(weight) FILTER (WHERE gift), avg(weight) FILTER (WHERE NOT gift) FROM orders

-- q: wide2.edge.avg_float_having
SELECT tier, avg(score) FROM customers WHERE id BETWEEN 1 AND 360 GROUP BY tier HAVING avg(score) > 0

-- q: wide2.edge.avg_float_order ordered
SELECT tier FROM customers WHERE id BETWEEN 1 AND 360 GROUP BY tier ORDER BY avg(score), tier NULLS FIRST

-- q: wide2.edge.avg_float_expr
SELECT round(avg(weight)::numeric, 3), avg(weight) * 2 FROM orders

-- q: wide2.edge.avg_distinct_float
SELECT avg(DISTINCT weight) FROM orders

-- q: wide2.edge.avg_interval
SELECT status, avg(ship_date - placed_at::date), avg(placed_at - '2024-01-01'::timestamptz) FROM orders GROUP BY status

-- q: wide2.edge.avg_int_types
SELECT avg(c.tier), avg(o.qty), avg(o.id), avg(o.total), avg(c.rating::float8) FROM customers c JOIN orders o ON o.customer_id = c.id WHERE c.id BETWEEN 1 AND 360

-- q: wide2.edge.avg_float_scalar_pin
SELECT avg(score) FROM customers WHERE id = 7

-- q: wide2.edge.count_window_limit ordered
SELECT id, count(*) OVER () AS total_count FROM orders ORDER BY id LIMIT 5

-- q: wide2.edge.avg_float_groups_many
SELECT customer_id % 10 AS m, avg(weight), sum(weight) FROM orders GROUP BY 1

-- q: wide2.edge.avg_nan_inf_only
SELECT avg(score) FROM customers WHERE id IN (0, -1, -2)

-- q: wide2.edge.avg_inf_pair
SELECT avg(score) FROM customers WHERE id IN (-1, 2)

-- ===================================================================
-- Writes, each followed by reads of what it changed. Both sides get the
-- same statements; a write the proxy refuses runs on neither.
-- ===================================================================

-- q: write.insert_one_customer write
INSERT INTO customers (id, name, email, country, tier, balance, credit, score, rating, active, born, signup, last_seen,
                       ext_id, avatar, nick, code, prefs, tags, session)
VALUES (5001, 'Neu', 'neu@example.org', 'de', 2, 10.5, 1.23400, 0.375, -1.5, true, '2000-01-01', '2024-01-01 10:00:00',
        '2024-01-01 10:00:00+01', 'f47ac10b-58cc-4372-a567-0e02b2c3d479', '\x00ff', 'N1', 'Z9', '{"theme": "dark", "w": 1.10}',
        '{x,y}', '1:02:03')
RETURNING *

-- q: after.insert_one_customer ordered
SELECT * FROM customers WHERE id = 5001

-- q: write.insert_many_customers write
INSERT INTO customers (id, name, tier, balance, score) VALUES
(5002, 'eins', 1, 1.0000, 0.5), (5003, 'zwei', 2, -2.5, -0.25), (5004, 'drei', NULL, NULL, NULL), (5005, 'vier', 4, 4, 'Infinity'),
(5006, 'fünf', 5, 5.5, 5.5), (5007, 'sechs', 1, 6, 6), (5008, 'sieben', 2, 7, 7), (5009, 'acht', 3, 8, 8)
RETURNING id, name, tier, balance, score

-- q: after.insert_many_customers
SELECT id, name, tier FROM customers WHERE id BETWEEN 5000 AND 5999

-- q: after.insert_many_customers_ordered ordered
SELECT id, name, balance FROM customers WHERE id BETWEEN 5000 AND 5999 ORDER BY balance NULLS FIRST, id

-- q: write.insert_orders_explicit_ids write
INSERT INTO orders (id, customer_id, status, currency, total, discount, qty, weight, placed_at, ship_date, note, gift) VALUES
(900001, 5001, 'paid', 'EUR', 10.00, 0.5, 1, 1.25, '2024-03-01 12:00:00+00', '2024-03-02', 'first', true),
(900002, 5002, 'pending', 'USD', 20.50, NULL, 2, NULL, '2024-03-01 13:00:00+00', NULL, NULL, NULL),
(900003, 5003, 'shipped', NULL, -3.25, 0.125, NULL, 'NaN', '2024-03-01 14:00:00+00', '2024-03-05', 'Third', false),
(900004, 5004, 'delivered', 'GBP', 4000.00, 12, 4, 0.25, '2024-03-01 15:00:00+00', '2024-03-09', '', true),
(900005, 7, 'paid', 'CHF', 55.55, NULL, 5, 5, '2024-03-02 00:00:00+00', NULL, 'for seven', NULL)
RETURNING *

-- q: after.insert_orders_explicit_ids
SELECT id, customer_id, total FROM orders WHERE id > 900000

-- q: write.insert_default_keyword write
INSERT INTO orders (id, customer_id, status, total, placed_at, note, gift)
VALUES (900006, 5005, 'paid', 6.00, '2024-03-03 00:00:00+00', DEFAULT, DEFAULT)
RETURNING id, note, gift

-- q: write.insert_duplicate_key write error
INSERT INTO customers (id, name) VALUES (7, 'duplicate')

-- q: write.insert_without_key write error
INSERT INTO customers (name) VALUES ('nobody')

-- q: write.insert_null_key write error
INSERT INTO customers (id, name) VALUES (NULL, 'null key')

-- q: write.insert_orders_without_key write error
INSERT INTO orders (id, status, total, placed_at) VALUES (900007, 'paid', 1, '2024-01-01')

-- q: write.insert_partly_duplicate write error
INSERT INTO customers (id, name) VALUES (7020, 'a'), (7021, 'b'), (7022, 'c'), (7023, 'd'), (3, 'dup'), (7024, 'e')

-- q: after.insert_partly_duplicate
SELECT id FROM customers WHERE id BETWEEN 7020 AND 7024

-- q: write.on_conflict_do_nothing write
INSERT INTO customers (id, name) VALUES (7, 'again'), (5010, 'zehn') ON CONFLICT (id) DO NOTHING RETURNING id, name

-- q: write.on_conflict_do_update write
INSERT INTO customers (id, name, tier) VALUES (5001, 'Neu!', 1), (5011, 'elf', 1)
ON CONFLICT (id) DO UPDATE SET name = excluded.name || '?', tier = customers.tier + excluded.tier
RETURNING id, name, tier

-- INSERT without a column list: the proxy takes the table's column order
-- from the catalog (of a shard of its group) and names the columns.

-- q: write.nocols.customer write
INSERT INTO customers VALUES (5101, 'ohne', 'ohne@example.com', 'DE', 2) RETURNING id, name, email, country, tier

-- q: write.nocols.customers_many write
INSERT INTO customers VALUES (5102, 'a'), (5103, 'b'), (5104, 'c'), (9, 'nine again') ON CONFLICT (id) DO NOTHING RETURNING id, name

-- q: write.nocols.order_every_column write
INSERT INTO orders VALUES (900101, 5101, 'paid', 'EUR', 1.50, NULL, 1, 0.5, '2024-06-01 00:00:00+00', '2024-06-02', 'nocols', true) RETURNING *

-- q: write.nocols.order_default_id write ignore=id
INSERT INTO orders VALUES (DEFAULT, 5102, 'pending', NULL, 2, NULL, NULL, NULL, '2024-06-02 00:00:00+00'), (DEFAULT, 5103, 'paid', 'USD', 3, 0.25, 3, NULL, '2024-06-03 00:00:00+00') RETURNING id, customer_id, status

-- q: write.nocols.order_params write args=900102,5104,shipped
INSERT INTO orders VALUES ($1, $2, $3, 'GBP', 4, NULL, NULL, NULL, '2024-06-04 00:00:00+00')

-- q: write.nocols.items_select write
INSERT INTO items SELECT customer_id, id, 1, 'SKU-NC', 1, total FROM orders WHERE customer_id = 5101 RETURNING *

-- q: write.nocols.product write
INSERT INTO products VALUES ('NoCols-1', 'ohne Spalten', 'misc', 3.25, 1, 0.5, DEFAULT) RETURNING sku, name, discontinued

-- q: write.nocols.ticket write
INSERT INTO tickets VALUES (90, 5101, 9001, 'nocols') RETURNING *

-- q: write.nocols.too_many_values write error
INSERT INTO tickets VALUES (91, 5101, 9002, 'x', 'one too many')

-- q: write.nocols.null_key write error
INSERT INTO customers VALUES (NULL, 'no key')

-- q: after.nocols
SELECT o.customer_id, o.status, o.total, c.name FROM orders o JOIN customers c ON c.id = o.customer_id WHERE o.customer_id BETWEEN 5101 AND 5104

-- q: after.nocols_items ordered
SELECT * FROM items WHERE sku = 'SKU-NC' ORDER BY order_id

-- q: after.nocols_ticket ordered
SELECT id, customer_id, label FROM tickets WHERE code = 9001

-- q: after.on_conflict ordered
SELECT id, name, tier FROM customers WHERE id IN (7, 5001, 5010, 5011) ORDER BY id

-- q: after.on_conflict_unordered
SELECT id, name, tier FROM customers WHERE id IN (7, 5001, 5010, 5011)


-- q: write.float_specials write
INSERT INTO customers (id, name, score, rating, credit) VALUES
(5030, 'nan', 'NaN', '-0', 'NaN'), (5031, 'neg inf', '-Infinity', 'Infinity', '-Infinity'), (5032, 'neg zero', '-0', 'NaN', -0.0)
RETURNING id, score, rating, credit

-- q: after.float_specials_ordered ordered
SELECT score, rating, credit, id FROM customers WHERE id BETWEEN 5000 AND 5999 ORDER BY score NULLS FIRST, id

-- q: after.float_specials
SELECT score, rating, credit, id FROM customers WHERE id BETWEEN 5000 AND 5999


-- q: write.update_pinned write
UPDATE customers SET tier = 5, nick = 'upd' WHERE id = 5002 RETURNING id, tier, nick

-- q: write.update_in_two_clusters write
UPDATE orders SET note = coalesce(note, '') || '+' WHERE customer_id IN (1, 2, 3, 9, NULL) RETURNING id, customer_id, note

-- q: write.update_or_two_clusters write
UPDATE orders SET note = coalesce(note, '') || '-' WHERE customer_id = 1 OR customer_id = 2 OR customer_id = 100 RETURNING id, customer_id, note

-- q: write.delete_or_two_clusters write
DELETE FROM items WHERE (customer_id = 7 OR customer_id = 2) AND line > 2 RETURNING customer_id, order_id, line

-- q: after.write_prune
SELECT id, customer_id, note FROM orders WHERE customer_id IN (1, 2, 3, 9, 100)

-- q: write.update_scatter_returning write
UPDATE customers SET balance = balance + 1 WHERE tier = 1 RETURNING id, balance

-- q: after.update_scatter
SELECT id, balance FROM customers WHERE tier = 1

-- q: write.update_scatter_no_returning write
UPDATE orders SET note = upper(note) WHERE status = 'cancelled' AND note IS NOT NULL

-- q: after.update_scatter_notes
SELECT id, note FROM orders WHERE status = 'cancelled' AND note IS NOT NULL

-- q: write.update_from_reference write
UPDATE customers c SET nick = k.region FROM countries k WHERE k.code = c.country AND c.tier = 2 AND k.region IS NOT NULL
RETURNING c.id, c.nick

-- q: write.update_colocated_subquery write
UPDATE customers SET active = false
WHERE id IN (SELECT customer_id FROM orders WHERE status = 'cancelled' AND total < -40) RETURNING id, active

-- q: write.update_numeric_scale write
UPDATE customers SET credit = credit * 1.000 WHERE id BETWEEN 1 AND 40 RETURNING id, credit

-- q: write.update_returning_expressions write
UPDATE orders SET total = total * 1.1 WHERE customer_id = 3 AND status = 'paid'
RETURNING id, total, total * 2 AS doubled, round(total / 3, 3) AS third

-- q: write.update_shard_key write
UPDATE orders SET customer_id = 8 WHERE customer_id = 7 AND id = 900005

-- q: write.update_shard_key_to_itself write
UPDATE customers SET id = id WHERE id = 5003

-- q: write.update_failing_on_one_shard write error
UPDATE customers SET tier = 10 / (id - 5002) WHERE id IN (5002, 5003, 5005, 5006, 5007)

-- q: after.update_failing_on_one_shard ordered
SELECT id, tier FROM customers WHERE id IN (5002, 5003, 5005, 5006, 5007) ORDER BY id

-- q: after.update_failing_on_one_shard_unordered
SELECT id, tier FROM customers WHERE id IN (5002, 5003, 5005, 5006, 5007)


-- q: write.delete_pinned write
DELETE FROM orders WHERE customer_id = 5001 AND id = 900001 RETURNING *

-- q: write.delete_scatter write
DELETE FROM items WHERE qty = 5 AND price < 20 RETURNING customer_id, order_id, line, sku

-- q: after.delete_scatter
SELECT customer_id, order_id, line FROM items WHERE qty = 5 AND price < 20

-- q: write.delete_colocated_exists write
DELETE FROM items i WHERE EXISTS (SELECT 1 FROM orders o WHERE o.customer_id = i.customer_id AND o.id = i.order_id
  AND o.status = 'cancelled' AND o.total < -40) RETURNING i.order_id, i.line

-- q: write.delete_customer write
DELETE FROM customers WHERE id = 5009 RETURNING id, name

-- q: after.delete_customer
SELECT id FROM customers WHERE id = 5009

-- q: write.insert_select_pinned write
INSERT INTO items (customer_id, order_id, line, sku, qty, price)
SELECT customer_id, id, 9, 'SEL-1', 1, total FROM orders WHERE customer_id = 42 AND status = 'paid'
RETURNING customer_id, order_id, line, price

-- q: write.insert_select_scatter write
INSERT INTO items (customer_id, order_id, line, sku, qty, price)
SELECT customer_id, id, 8, 'SEL-2', 2, NULL FROM orders WHERE total > 4950
RETURNING customer_id, order_id, line

-- q: after.insert_select
SELECT customer_id, order_id, line, sku FROM items WHERE sku LIKE 'SEL-%'

-- q: write.insert_select_from_reference write
INSERT INTO customers (id, name) SELECT population + 6000, name FROM countries

-- q: write.xins_orders_scatter write
INSERT INTO orders (customer_id, status, total, placed_at)
SELECT id, 'xcopy', 10.5, '2024-01-01 00:00:00+00' FROM customers WHERE tier = 2
RETURNING customer_id, status, total

-- q: after.xins_orders_scatter
SELECT customer_id, status, total FROM orders WHERE status = 'xcopy'

-- q: after.xins_orders_scatter_count
SELECT count(*), count(DISTINCT customer_id) FROM orders WHERE status = 'xcopy'

-- q: write.xins_items_from_orders write
INSERT INTO items (customer_id, order_id, line, sku, qty, price)
SELECT o.customer_id, o.id, 21, 'XS-' || o.status, 3, o.total / 3 FROM orders o WHERE o.total > 4000 AND o.status <> 'xcopy'

-- q: after.xins_items_from_orders
SELECT customer_id, order_id, line, sku, qty, price FROM items WHERE line = 21

-- q: write.xins_items_cross_group write
INSERT INTO items (customer_id, order_id, line, sku, qty, price)
SELECT c.id, 7, 22, p.sku, 1, p.price FROM customers c JOIN products p ON p.name = c.name

-- q: after.xins_items_cross_group
SELECT customer_id, order_id, line, sku, price FROM items WHERE line = 22

-- q: write.xins_items_returning write
INSERT INTO items (customer_id, order_id, line, sku, qty, price)
SELECT customer_id, order_id, 23, sku, qty * 2, price FROM items WHERE line = 21
RETURNING customer_id, order_id, line, qty, price

-- q: after.xins_items_returning
SELECT customer_id, sum(qty), sum(price) FROM items WHERE line = 23 GROUP BY customer_id

-- q: write.xins_on_conflict_nothing write
INSERT INTO items (customer_id, order_id, line, sku, qty, price)
SELECT customer_id, order_id, line, 'dup', 0, 0 FROM items WHERE line IN (21, 23)
ON CONFLICT DO NOTHING RETURNING customer_id

-- q: write.xins_on_conflict_target write
INSERT INTO items AS i (customer_id, order_id, line, sku, qty, price)
SELECT customer_id, order_id, 24, sku, qty, price FROM items WHERE line IN (21, 23)
ON CONFLICT (customer_id, order_id, line) DO NOTHING RETURNING i.customer_id, i.line

-- q: after.xins_on_conflict
SELECT line, count(*), sum(qty) FROM items WHERE line BETWEEN 21 AND 24 GROUP BY line

-- q: write.xins_conflict_error write error
INSERT INTO items (customer_id, order_id, line, sku, qty, price)
SELECT customer_id, order_id, line, 'dup', 0, 0 FROM items WHERE line = 24

-- q: write.xins_null_in_not_null write error
INSERT INTO items (customer_id, order_id, line, sku, qty, price)
SELECT customer_id, order_id, 25, NULL, 1, 1 FROM items WHERE line = 24

-- q: write.xins_aggregated write
INSERT INTO items (customer_id, order_id, line, sku, qty, price)
SELECT customer_id, 0, 26, 'AGG', count(*)::int, sum(total) FROM orders GROUP BY customer_id HAVING count(*) > 3

-- q: after.xins_aggregated
SELECT customer_id, qty, price FROM items WHERE line = 26

-- q: write.xins_window write
INSERT INTO items (customer_id, order_id, line, sku, qty, price)
SELECT customer_id, id, 27, 'WIN', (row_number() OVER (PARTITION BY customer_id ORDER BY id))::int, total
FROM orders WHERE customer_id BETWEEN 1 AND 60 AND status NOT LIKE 'x%'

-- q: after.xins_window
SELECT customer_id, order_id, qty, price FROM items WHERE line = 27

-- q: write.xins_order_limit write
INSERT INTO items (customer_id, order_id, line, sku, qty, price)
SELECT customer_id, id, 28, 'TOP', 1, total FROM orders ORDER BY total DESC, id LIMIT 7
RETURNING customer_id, order_id, price

-- q: after.xins_order_limit
SELECT customer_id, order_id, price FROM items WHERE line = 28

-- q: write.xins_union write
INSERT INTO items (customer_id, order_id, line, sku, qty, price)
SELECT id, 1, 29, 'U1', 1, 1 FROM customers WHERE tier = 1
UNION ALL SELECT id, 2, 29, 'U2', 2, 2 FROM customers WHERE tier = 3

-- q: after.xins_union
SELECT customer_id, order_id, sku FROM items WHERE line = 29

-- q: write.xins_key_expression write
INSERT INTO items (customer_id, order_id, line, sku, qty, price)
SELECT id + 0, 3, 30, 'EXPR', 1, NULL FROM customers WHERE id BETWEEN 1 AND 40 AND tier IS NOT NULL

-- q: after.xins_key_expression
SELECT customer_id, order_id, sku FROM items WHERE line = 30

-- q: write.xins_key_numeric write
INSERT INTO items (customer_id, order_id, line, sku, qty, price)
SELECT (id::numeric + 0.0), 4, 31, 'NUM', 1, NULL FROM customers WHERE id BETWEEN 1 AND 20

-- q: after.xins_key_numeric
SELECT customer_id, sku FROM items WHERE line = 31

-- q: write.xins_key_text_cast write error
INSERT INTO items (customer_id, order_id, line, sku, qty, price)
SELECT id::text, 5, 32, 'TXT', 1, NULL FROM customers WHERE id BETWEEN 1 AND 5

-- q: write.xins_into_reference write
INSERT INTO currencies (code, name, rate, minor)
SELECT upper(left(status, 3)), 'from ' || status, 1.5, 2 FROM orders GROUP BY status HAVING count(*) > 0 ON CONFLICT DO NOTHING

-- q: after.xins_into_reference
SELECT code, name, rate, minor FROM currencies

-- q: after.xins_into_reference_join
SELECT c.code, count(*) FROM currencies c JOIN orders o ON upper(left(o.status, 3)) = c.code GROUP BY c.code

-- q: write.xins_into_main write
INSERT INTO settings (k, v) SELECT 'cust:' || id, name FROM customers WHERE tier = 4

-- q: after.xins_into_main
SELECT k, v FROM settings WHERE k LIKE 'cust:%'

-- q: write.xins_main_no_columns write
INSERT INTO settings SELECT 'ord:' || id, status FROM orders WHERE total > 4900

-- q: after.xins_main_no_columns
SELECT k, v FROM settings WHERE k LIKE 'ord:%'

-- q: write.xins_audit_from_sharded write
INSERT INTO audit (customer_id, action, amount) SELECT customer_id, 'xfer', sum(total) FROM orders GROUP BY customer_id HAVING sum(total) > 15000 ORDER BY customer_id
RETURNING customer_id, amount

-- q: after.xins_audit_from_sharded
SELECT customer_id, action, amount FROM audit WHERE action = 'xfer'

-- q: write.xins_customers_from_main write
INSERT INTO customers (id, name, tier) SELECT 7000 + id, 'aud ' || action, 9 FROM audit WHERE action = 'xfer'
RETURNING id, name, tier

-- q: after.xins_customers_from_main
SELECT id, name, tier FROM customers WHERE tier = 9

-- q: write.xins_customers_from_products write
INSERT INTO customers (id, name, nick) SELECT 9100 + row_number() OVER (ORDER BY sku), name, left(sku, 20) FROM products WHERE price > 90

-- q: after.xins_customers_from_products
SELECT id, name, nick FROM customers WHERE id > 9100 AND id < 9900

-- q: write.xins_products_from_customers write
INSERT INTO products (sku, name, price) SELECT 'C-' || id, name, 1.25 FROM customers WHERE tier = 9

-- q: after.xins_products_from_customers
SELECT sku, name, price FROM products WHERE sku LIKE 'C-%'

-- q: after.xins_products_point
SELECT sku, name FROM products WHERE lower(sku) = (SELECT lower(min(sku)) FROM products WHERE sku LIKE 'C-%')

-- q: write.xins_orders_with_seq_returning write
INSERT INTO orders (customer_id, status, total, placed_at, note)
SELECT customer_id, 'xseq', price, '2024-02-02 00:00:00+00', sku FROM items WHERE line = 28
RETURNING customer_id, total, note

-- q: after.xins_orders_with_seq
SELECT customer_id, total, note FROM orders WHERE status = 'xseq'

-- q: after.xins_orders_with_seq_ids
SELECT count(*), count(DISTINCT id) FROM orders WHERE status = 'xseq'

-- q: write.xins_params write args=29,100
INSERT INTO items (customer_id, order_id, line, sku, qty, price)
SELECT customer_id, order_id, 33, sku, qty + 1, price FROM items WHERE line = $1 AND customer_id < $2
RETURNING customer_id, line, qty

-- q: after.xins_params
SELECT customer_id, order_id, sku, qty FROM items WHERE line = 33

-- q: write.xins_params_key write args=30,17
INSERT INTO items (customer_id, order_id, line, sku, qty, price)
SELECT id, 6, 34, 'PK', $2::int, NULL FROM customers WHERE id < $1::bigint

-- q: after.xins_params_key
SELECT customer_id, qty FROM items WHERE line = 34

-- q: write.xins_nothing write
INSERT INTO items (customer_id, order_id, line, sku, qty, price)
SELECT customer_id, id, 35, 'NONE', 1, 1 FROM orders WHERE total < 0 RETURNING customer_id

-- q: write.xins_too_many_columns write error
INSERT INTO items (customer_id, order_id, line, sku, qty)
SELECT customer_id, id, 36, 'X', 1, 2 FROM orders WHERE total > 4990

-- q: write.xins_values_subquery write
INSERT INTO items (customer_id, order_id, line, sku, qty, price)
SELECT v.c, v.o, 37, 'VAL', 1, (SELECT max(total) FROM orders) FROM (VALUES (1, 1), (2, 2), (9, 3), (100, 4)) v(c, o)

-- q: after.xins_values_subquery
SELECT customer_id, order_id, price FROM items WHERE line = 37

-- q: write.xins_in_tx_sees_own_rows write
INSERT INTO items (customer_id, order_id, line, sku, qty, price)
SELECT customer_id, order_id, 38, sku, qty, price FROM items WHERE line IN (33, 34, 37)

-- q: after.xins_in_tx_sees_own_rows
SELECT line, count(*), sum(qty) FROM items WHERE line BETWEEN 33 AND 38 GROUP BY line

-- q: after.xins_totals
SELECT count(*), sum(qty), sum(price) FROM items WHERE line > 20

-- q: write.cte_delete_pinned write
WITH d AS (DELETE FROM items WHERE customer_id = 42 AND line = 9 RETURNING qty)
SELECT count(*), sum(qty) FROM d

-- q: write.reference_insert write
INSERT INTO countries (code, name, region, vat, population) VALUES ('xx', 'Xland', 'Nowhere', 1.00, 1), ('yy', 'Yland', NULL, NULL, 2)
RETURNING *

-- q: write.customer_in_new_country write
UPDATE customers SET country = 'xx' WHERE id IN (5003, 5004) RETURNING id, country

-- q: after.reference_insert_join
SELECT c.id, k.name, k.region FROM customers c JOIN countries k ON k.code = c.country WHERE k.code IN ('xx', 'yy')

-- q: write.reference_update write
UPDATE countries SET vat = vat + 0.5 WHERE region = 'Asia' RETURNING code, vat

-- q: after.reference_update ordered
SELECT code, vat FROM countries WHERE region = 'Asia' ORDER BY code

-- q: after.reference_update_unordered
SELECT code, vat FROM countries WHERE region = 'Asia'


-- q: write.reference_delete write
DELETE FROM countries WHERE code IN ('xx', 'yy') RETURNING code

-- q: after.reference_delete_join
SELECT c.id, k.code FROM customers c LEFT JOIN countries k ON k.code = c.country WHERE c.id IN (5003, 5004)

-- q: write.products_insert write
INSERT INTO products (sku, name, price, stock) VALUES ('NeW-1', 'new one', 1.00, 1), ('nEw-2', 'new two', 2.50, NULL),
('NEW-3', 'new three', NULL, 3) RETURNING sku, name, price, stock, discontinued

-- q: write.products_duplicate_lower write error
INSERT INTO products (sku, name) VALUES ('new-1', 'duplicate in another case')

-- q: write.products_update_pinned write
UPDATE products SET price = price * 2 WHERE sku = 'NeW-1' RETURNING *

-- q: write.products_update_lower write
UPDATE products SET stock = 0 WHERE lower(sku) = 'new-2' RETURNING sku, stock

-- q: write.products_update_scatter write
UPDATE products SET discontinued = true WHERE stock < 0 RETURNING sku

-- q: after.products ordered
SELECT sku, price, stock, discontinued FROM products WHERE lower(sku) IN ('new-1', 'new-2', 'new-3') ORDER BY sku

-- q: after.products_unordered
SELECT sku, price, stock, discontinued FROM products WHERE lower(sku) IN ('new-1', 'new-2', 'new-3')


-- q: write.products_delete write
DELETE FROM products WHERE sku IN ('NeW-1', 'nEw-2') RETURNING sku

-- q: write.main_insert write
INSERT INTO settings (k, v) VALUES ('new', 'value'), ('other', NULL) RETURNING *

-- q: write.main_update write
UPDATE settings SET v = coalesce(v, '') || '!' WHERE k LIKE 'key_0%' RETURNING k, v

-- q: write.main_delete write
DELETE FROM settings WHERE k = 'other' RETURNING k

-- q: write.main_bigserial write
INSERT INTO audit (customer_id, action, amount) VALUES (7, 'login', 1.5), (8, 'logout', NULL) RETURNING *

-- q: after.main ordered
SELECT * FROM settings ORDER BY k

-- q: after.audit ordered
SELECT * FROM audit ORDER BY id

-- ===================================================================
-- Sequences. ticket_seq is an ordinary sequence on main: nextval through
-- the proxy must give the oracle's numbers. orders.id is bound to
-- orders_id_seq in the topology: the proxy fills it, in cached blocks, so
-- the ids it returns are compared for presence only (ignore=id).
-- ===================================================================

-- q: seq.nextval write
SELECT nextval('ticket_seq')

-- q: seq.nextval_currval write
SELECT nextval('ticket_seq') AS n, currval('ticket_seq') AS c

-- q: seq.setval write
SELECT setval('ticket_seq', 1000)

-- q: seq.nextval_after_setval write
SELECT nextval('ticket_seq')

-- q: seq.nextval_series write
SELECT nextval('ticket_seq') FROM generate_series(1, 3)

-- q: seq.insert_bound_column write ignore=id
INSERT INTO orders (customer_id, status, total, placed_at, note) VALUES
(5001, 'pending', 12.34, '2024-05-05 05:05:05+00', 'seq'), (5002, 'paid', 1, '2024-05-05 05:05:06+00', 'seq'),
(5003, 'paid', 2, '2024-05-05 05:05:07+00', 'seq'), (5004, 'paid', 3, '2024-05-05 05:05:08+00', 'seq')
RETURNING customer_id, status, total

-- q: seq.insert_bound_column_default write ignore=id
INSERT INTO orders (id, customer_id, status, total, placed_at, note) VALUES (DEFAULT, 5005, 'paid', 4, '2024-05-05 05:05:09+00', 'seq')
RETURNING id, customer_id, note

-- q: seq.insert_bound_column_single write ignore=id
INSERT INTO orders (customer_id, status, total, placed_at, note) VALUES (7, 'shipped', 5, '2024-05-05 05:05:10+00', 'seq')
RETURNING *

-- q: after.seq_rows_pinned ordered
SELECT count(*), count(DISTINCT id), bool_and(id > 1000000) AS from_sequence FROM orders WHERE customer_id = 5001 AND note = 'seq'

-- q: after.seq_rows
SELECT customer_id, status, total, id > 1000000 AS from_sequence FROM orders WHERE note = 'seq'

-- q: after.seq_ids_unique ordered
SELECT count(*), count(DISTINCT id) FROM orders

-- q: seq.nextval_bound_sequence_in_values write ignore=id
INSERT INTO orders (id, customer_id, status, total, placed_at, note) VALUES
(nextval('orders_id_seq'), 2, 'paid', 1, '2024-06-01 00:00:00+00', 'bound'), (nextval('orders_id_seq'), 3, 'paid', 2, '2024-06-01 00:00:00+00', 'bound')
RETURNING id, customer_id, note

-- ticket_seq is not one of the topology's sequences: nextval() in a split
-- INSERT must still draw from main's ticket_seq (or be refused). The rows
-- go to events, so that a failure here does not spill into every later
-- read of orders.
-- q: seq.nextval_in_values write
INSERT INTO events (customer_id, seq, kind) VALUES (2, nextval('ticket_seq'), 'ticket'), (3, nextval('ticket_seq'), 'ticket')
RETURNING customer_id, seq, kind

-- q: after.nextval_in_values
SELECT customer_id, seq FROM events WHERE kind = 'ticket'

-- The proxy draws sequence values in blocks (like CACHE), so the next
-- native value is not the oracle's: compare only that the sequence still
-- draws on main after the proxy's draws (uniqueness of drawn values is
-- checked in proxy/sequence_test.go).
-- q: seq.nextval_after_values write
SELECT nextval('ticket_seq') > 0 AS drawn

-- MERGE into a sharded table: pinned to one shard by ON, or on every
-- shard from a co-located source joined on the key.

-- q: write.merge.pinned_values write
MERGE INTO orders o USING (VALUES (900201::bigint, 12.5), (900202, 3)) v(id, total) ON o.customer_id = 7 AND o.id = v.id
WHEN MATCHED THEN UPDATE SET total = v.total
WHEN NOT MATCHED THEN INSERT (id, customer_id, status, total, placed_at) VALUES (v.id, 7, 'paid', v.total, '2024-07-01 00:00:00+00')

-- q: write.merge.pinned_again write
MERGE INTO orders o USING (VALUES (900201::bigint, 1.25), (900203, 4)) v(id, total) ON o.customer_id = 7 AND o.id = v.id
WHEN MATCHED AND v.total < 2 THEN UPDATE SET total = o.total + v.total, note = 'merged'
WHEN MATCHED THEN DELETE
WHEN NOT MATCHED THEN INSERT (id, customer_id, status, total, placed_at) VALUES (v.id, 7, 'pending', v.total, '2024-07-02 00:00:00+00')

-- q: write.merge.pinned_param write args=9
MERGE INTO orders o USING (VALUES (900204::bigint)) v(id) ON o.customer_id = $1 AND o.id = v.id
WHEN NOT MATCHED THEN INSERT (id, customer_id, status, total, placed_at) VALUES (v.id, $1, 'paid', 9, '2024-07-03 00:00:00+00')

-- q: after.merge_pinned
SELECT id, customer_id, status, total, note FROM orders WHERE id BETWEEN 900201 AND 900204

-- q: write.merge.colocated write
MERGE INTO items i USING orders o ON i.customer_id = o.customer_id AND i.order_id = o.id AND i.line = 1
WHEN MATCHED AND o.status = 'paid' THEN UPDATE SET qty = i.qty + 1
WHEN NOT MATCHED AND o.id BETWEEN 900101 AND 900300 THEN INSERT (customer_id, order_id, line, sku, qty, price) VALUES (o.customer_id, o.id, 1, 'MERGED', 1, o.total)

-- q: after.merge_colocated
SELECT customer_id, order_id, line, sku, qty, price FROM items WHERE sku = 'MERGED' OR qty > 1

-- q: write.merge.matched_reference write
MERGE INTO customers c USING countries k ON c.country = k.code WHEN MATCHED AND k.region IS NOT NULL THEN UPDATE SET tier = 9

-- q: after.merge_matched_reference
SELECT id, tier FROM customers WHERE tier = 9

-- q: write.merge.cardinality write error
MERGE INTO orders o USING (VALUES (900201::bigint), (900201)) v(id) ON o.customer_id = 7 AND o.id = v.id WHEN MATCHED THEN UPDATE SET total = 0

-- MERGE from a VALUES source joined on the key in ON: each source row is
-- routed to its key's shard, each cluster merges its own rows (typed as
-- the whole list: the NULL total of a row alone on its cluster is still
-- numeric).

-- q: write.merge.values_routed write
MERGE INTO orders o USING (VALUES (1::bigint, 900301::bigint, 5.5), (2, 900302, 6), (3, 900303, 7), (4, 900304, NULL), (5, 900305, 8), (6, 900306, 9)) v(cid, id, total)
ON o.customer_id = v.cid AND o.id = v.id
WHEN MATCHED THEN UPDATE SET total = v.total
WHEN NOT MATCHED AND v.total IS NOT NULL THEN INSERT (id, customer_id, status, total, placed_at) VALUES (v.id, v.cid, 'paid', v.total, '2024-07-04 00:00:00+00')

-- q: write.merge.values_again write
MERGE INTO orders o USING (VALUES (1::bigint, 900301::bigint, 1.0), (4, 900304, 2), (5, 900305, 3), (6, 900306, NULL)) v(cid, id, total)
ON v.cid = o.customer_id AND o.id = v.id
WHEN MATCHED AND v.total < 1.5 THEN DELETE
WHEN MATCHED THEN UPDATE SET total = o.total + coalesce(v.total, 100), note = 'merged again'
WHEN NOT MATCHED THEN INSERT (id, customer_id, status, total, placed_at) VALUES (v.id, v.cid, 'pending', v.total, '2024-07-05 00:00:00+00')

-- q: write.merge.values_param write args=7,8
MERGE INTO orders o USING (VALUES ($1::bigint, 900307::bigint), ($2, 900308), (3, 900303)) v(cid, id) ON o.customer_id = v.cid AND o.id = v.id
WHEN MATCHED THEN UPDATE SET note = 'param'
WHEN NOT MATCHED THEN INSERT (id, customer_id, status, total, placed_at) VALUES (v.id, v.cid, 'paid', 1, '2024-07-06 00:00:00+00')

-- q: write.merge.values_matched_only write
MERGE INTO orders o USING (VALUES (2, 'two'), (3, 'three'), (8, 'eight')) AS v ON o.customer_id = v.column1 AND o.id BETWEEN 900301 AND 900310
WHEN MATCHED THEN UPDATE SET note = v.column2

-- q: write.merge.values_no_columns write
MERGE INTO orders o USING (VALUES (1::bigint, 900309::bigint), (2, 900310)) v(cid, id) ON o.customer_id = v.cid AND o.id = v.id
WHEN NOT MATCHED THEN INSERT VALUES (v.id, v.cid, 'shipped', 'EUR', 4.25, NULL, NULL, NULL, '2024-07-07 00:00:00+00')

-- q: write.merge.pinned_no_columns write
MERGE INTO orders o USING (VALUES (900205::bigint)) v(id) ON o.customer_id = 7 AND o.id = v.id
WHEN NOT MATCHED THEN INSERT VALUES (v.id, 7, 'paid', 'USD', 2, 0.5, 3, 1.25, '2024-07-08 00:00:00+00')

-- q: after.merge_values
SELECT id, customer_id, status, currency, total, note, placed_at FROM orders WHERE id BETWEEN 900301 AND 900310 OR id = 900205

-- q: write.merge.values_cardinality write error
MERGE INTO orders o USING (VALUES (2::bigint, 900302::bigint), (3, 900303), (2, 900302)) v(cid, id) ON o.customer_id = v.cid AND o.id = v.id WHEN MATCHED THEN UPDATE SET total = 0

-- q: write.merge.values_not_null write error
MERGE INTO orders o USING (VALUES (2::bigint, 900309::bigint), (3, 900310)) v(cid, id) ON o.customer_id = v.cid AND o.id = v.id
WHEN NOT MATCHED THEN INSERT (id, customer_id, total, placed_at) VALUES (v.id, v.cid, 1, now())

-- MERGE from a source the shards do not hold where the rows are matched (a
-- main table, a subquery over another group, a join across groups): the
-- source is read first over intermediate results and each row routed by
-- the key ON joins on, or to the shard ON pins (MergeSource); an INSERT
-- leaving orders.id to the proxy gets values drawn from orders_id_seq.

-- q: write.merge.source_setup write
INSERT INTO audit (customer_id, action, amount) VALUES (1, 'merge', 3.5), (2, 'merge', 4), (3, 'merge', NULL), (9, 'merge', 7.25), (NULL, 'merge', 1), (100, 'merge', 2)

-- q: write.merge.source_null_key write error
MERGE INTO orders o USING (SELECT customer_id, 900400 + customer_id AS id, amount FROM audit WHERE action = 'merge') a ON o.customer_id = a.customer_id AND o.id = a.id
WHEN NOT MATCHED THEN INSERT (id, customer_id, status, total, placed_at) VALUES (coalesce(a.id, 0), a.customer_id, 'merged', coalesce(a.amount, 0), '2024-07-09 00:00:00+00')

-- q: write.merge.source_main write
MERGE INTO orders o USING (SELECT customer_id, 900400 + customer_id AS id, amount FROM audit WHERE action = 'merge') a ON o.customer_id = a.customer_id AND o.id = a.id
WHEN MATCHED THEN UPDATE SET total = o.total + 1
WHEN NOT MATCHED AND a.amount IS NOT NULL AND a.customer_id IS NOT NULL THEN INSERT (id, customer_id, status, total, placed_at) VALUES (a.id, a.customer_id, 'merged', a.amount, '2024-07-09 00:00:00+00')

-- q: write.merge.source_main_again write
MERGE INTO orders o USING audit a ON o.customer_id = a.customer_id AND o.id = 900400 + a.customer_id AND a.action = 'merge'
WHEN MATCHED AND a.amount > 4 THEN DELETE
WHEN MATCHED THEN UPDATE SET total = o.total + coalesce(a.amount, 10), note = 'main ' || a.action

-- q: write.merge.source_other_group write
MERGE INTO orders o USING (SELECT length(sku)::bigint AS cid, count(*) AS n, max(price) AS price, string_agg(DISTINCT category, '/' ORDER BY category) AS cats FROM products GROUP BY 1) p
ON o.customer_id = p.cid AND o.id = 900450
WHEN MATCHED THEN UPDATE SET note = p.n || ' ' || coalesce(p.cats, '-')
WHEN NOT MATCHED THEN INSERT (id, customer_id, status, total, placed_at, note) VALUES (900450, p.cid, 'merged', coalesce(p.price, 0), '2024-07-10 00:00:00+00', p.cats)

-- q: write.merge.source_join_param write args=merge
MERGE INTO orders o USING (SELECT c.id AS cid, a.amount, c.name FROM customers c JOIN audit a ON a.customer_id = c.id WHERE a.action = $1) s
ON s.cid = o.customer_id AND o.id = 900400 + s.cid
WHEN MATCHED AND s.amount IS NULL THEN DELETE
WHEN MATCHED THEN UPDATE SET discount = s.amount, note = left(s.name, 10)

-- q: write.merge.source_pinned write
MERGE INTO orders o USING audit a ON o.customer_id = 7 AND o.id = 900460 + coalesce(a.customer_id, 0) AND a.action = 'merge'
WHEN MATCHED THEN UPDATE SET total = o.total * 2
WHEN NOT MATCHED AND a.action = 'merge' THEN INSERT (id, customer_id, status, total, placed_at) VALUES (900460 + coalesce(a.customer_id, 0), 7, 'pinned', coalesce(a.amount, 0), '2024-07-11 00:00:00+00')

-- q: write.merge.source_empty write
MERGE INTO orders o USING (SELECT customer_id, amount FROM audit WHERE action = 'no such action') a ON o.customer_id = a.customer_id
WHEN MATCHED THEN DELETE
WHEN NOT MATCHED THEN INSERT (id, customer_id, status, total, placed_at) VALUES (1, a.customer_id, 'none', 0, now())

-- q: write.merge.source_empty_mistyped write error
MERGE INTO orders o USING (SELECT customer_id::text AS cid FROM audit WHERE action = 'no such action') a ON o.customer_id = a.cid WHEN MATCHED THEN DELETE

-- MERGE read first with parameters outside its source (bound in each
-- cluster's MERGE, typed as Postgres types them in the whole statement)
-- and subqueries outside it (read with the source, as its columns): issue
-- 19.

-- q: write.merge.params_outside write args=merge,900400,param-merged
MERGE INTO orders o USING (SELECT customer_id, max(amount) AS amount FROM audit WHERE action = $1 GROUP BY customer_id) a ON o.customer_id = a.customer_id AND o.id = $2 + a.customer_id
WHEN MATCHED THEN UPDATE SET note = $3, discount = a.amount

-- q: write.merge.params_insert write args=900480,params,2024-07-13T00:00:00Z
MERGE INTO orders o USING (SELECT customer_id, max(amount) AS amount FROM audit WHERE action = 'merge' GROUP BY customer_id) a ON o.customer_id = a.customer_id AND o.id = $1 + a.customer_id
WHEN NOT MATCHED AND a.customer_id IS NOT NULL AND a.amount IS NOT NULL THEN INSERT (id, customer_id, status, total, placed_at) VALUES ($1 + a.customer_id, a.customer_id, $2, a.amount * 2, $3)

-- q: write.merge.params_shared write args=merge
MERGE INTO orders o USING (SELECT DISTINCT customer_id FROM audit WHERE action = $1 AND customer_id IS NOT NULL) a ON o.customer_id = a.customer_id AND o.id = 900480 + a.customer_id
WHEN MATCHED THEN UPDATE SET note = $1 || ' shared'

-- q: write.merge.params_pinned write args=9,pinned-param
MERGE INTO orders o USING (SELECT customer_id, max(amount) AS amount FROM audit WHERE action = 'merge' GROUP BY customer_id) a ON o.customer_id = $1 AND o.id = 900470 + coalesce(a.customer_id, 0)
WHEN MATCHED THEN UPDATE SET total = o.total + 1
WHEN NOT MATCHED THEN INSERT (id, customer_id, status, total, placed_at) VALUES (900470 + coalesce(a.customer_id, 0), $1, $2, coalesce(a.amount, 0), '2024-07-14 00:00:00+00')

-- q: write.merge.subquery_when write
MERGE INTO orders o USING (SELECT customer_id, max(amount) AS amount FROM audit WHERE action = 'merge' GROUP BY customer_id) a ON o.customer_id = a.customer_id AND o.id = 900480 + a.customer_id
WHEN MATCHED AND o.total < (SELECT avg(total) FROM orders) THEN UPDATE SET note = 'below average'

-- q: write.merge.subquery_set write
MERGE INTO orders o USING (SELECT DISTINCT customer_id FROM audit WHERE action = 'merge') a ON o.customer_id = a.customer_id AND o.id = 900400 + a.customer_id
WHEN MATCHED THEN UPDATE SET discount = (SELECT max(price) FROM products WHERE category IS NOT NULL), qty = (SELECT count(*) FROM items WHERE customer_id = 9)

-- q: write.merge.subquery_source_correlated write
MERGE INTO orders o USING (SELECT customer_id, max(amount) AS amount FROM audit WHERE action = 'merge' GROUP BY customer_id) a ON o.customer_id = a.customer_id AND o.id = 900480 + a.customer_id
WHEN MATCHED AND EXISTS (SELECT 1 FROM items i WHERE i.customer_id = a.customer_id AND i.qty > 1) THEN UPDATE SET note = 'has items'
WHEN MATCHED THEN UPDATE SET note = 'no items'

-- q: write.merge.subquery_in_list write
MERGE INTO orders o USING (SELECT customer_id, max(amount) AS amount FROM audit WHERE action = 'merge' GROUP BY customer_id) a ON o.customer_id = a.customer_id AND o.id = 900470 + a.customer_id
WHEN MATCHED AND a.customer_id IN (SELECT customer_id FROM orders WHERE total > 100) THEN DELETE
WHEN NOT MATCHED AND a.customer_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM orders WHERE id = 900470 + a.customer_id) THEN INSERT (id, customer_id, status, total, placed_at) VALUES (900470 + a.customer_id, a.customer_id, (SELECT min(status) FROM orders WHERE customer_id = 42), 1, '2024-07-15 00:00:00+00')

-- q: write.merge.subquery_params write args=42,9
MERGE INTO orders o USING (SELECT customer_id, max(amount) AS amount FROM audit WHERE action = 'merge' GROUP BY customer_id) a ON o.customer_id = a.customer_id AND o.id = 900480 + a.customer_id
WHEN MATCHED AND o.total > (SELECT min(total) FROM orders WHERE customer_id = $1) THEN UPDATE SET qty = (SELECT count(*) FROM orders WHERE customer_id = $2)

-- q: write.merge.subquery_values_source write
MERGE INTO orders o USING (VALUES (1::bigint, 900401::bigint), (2, 900402), (100, 900500)) v(cid, id) ON o.customer_id = v.cid AND o.id = v.id
WHEN MATCHED THEN UPDATE SET note = (SELECT max(name) FROM customers WHERE tier = 3)

-- q: write.merge.subquery_on write
MERGE INTO orders o USING (SELECT DISTINCT customer_id FROM audit WHERE action = 'merge') a ON o.customer_id = a.customer_id AND o.id = (SELECT 900480 + a.customer_id)
WHEN MATCHED THEN UPDATE SET note = 'on subquery'

-- q: write.merge.subquery_cardinality write error
MERGE INTO orders o USING (SELECT customer_id, max(amount) AS amount FROM audit WHERE action = 'merge' GROUP BY customer_id) a ON o.customer_id = a.customer_id AND o.id = 900480 + a.customer_id
WHEN MATCHED AND o.total > (SELECT total FROM orders WHERE customer_id = 9) THEN DELETE

-- The subquery that would fail runs only where the MERGE reaches it: no
-- target row matches here, so it answers, as Postgres does.
-- q: write.merge.subquery_cardinality_unreached write
MERGE INTO orders o USING (SELECT customer_id, max(amount) AS amount FROM audit WHERE action = 'merge' GROUP BY customer_id) a ON o.customer_id = a.customer_id AND o.id = 900990 + a.customer_id
WHEN MATCHED AND o.total > (SELECT total FROM orders WHERE customer_id = 9) THEN DELETE

-- A subquery reading the target's row would run on each cluster alone.
-- q: write.merge.subquery_target_correlated write
MERGE INTO orders o USING (SELECT customer_id, max(amount) AS amount FROM audit WHERE action = 'merge' GROUP BY customer_id) a ON o.customer_id = a.customer_id AND o.id = 900480 + a.customer_id
WHEN MATCHED AND (SELECT count(*) FROM orders x WHERE x.customer_id = o.customer_id) > 1 THEN UPDATE SET note = 'busy'

-- q: after.merge_params
SELECT id, customer_id, status, total, discount, qty, note FROM orders WHERE id BETWEEN 900400 AND 900500

-- q: after.merge_source
SELECT id, customer_id, status, total, discount, note FROM orders WHERE id BETWEEN 900400 AND 900500

-- q: write.merge.source_cardinality write error
MERGE INTO orders o USING (SELECT customer_id, 900400 + customer_id AS id FROM audit WHERE action = 'merge' UNION ALL SELECT 2, 900402) a
ON o.customer_id = a.customer_id AND o.id = a.id WHEN MATCHED THEN UPDATE SET total = 0

-- q: write.merge.source_sequence write
MERGE INTO orders o USING (SELECT customer_id, amount FROM audit WHERE action = 'merge' AND customer_id IS NOT NULL) a ON o.customer_id = a.customer_id AND o.note = 'seq merged'
WHEN NOT MATCHED THEN INSERT (customer_id, status, total, placed_at, note) VALUES (a.customer_id, 'seq', coalesce(a.amount, 0), '2024-07-12 00:00:00+00', 'seq merged')

-- q: write.merge.values_sequence write
MERGE INTO orders o USING (VALUES (1::bigint, 1.5), (2, 2.5), (9, 9.5)) v(cid, total) ON o.customer_id = v.cid AND o.note = 'seq values'
WHEN NOT MATCHED THEN INSERT (customer_id, status, total, placed_at, note) VALUES (v.cid, 'seq', v.total, '2024-07-12 00:00:00+00', 'seq values')

-- q: after.merge_sequence ignore=id
SELECT id, customer_id, status, total, note FROM orders WHERE note IN ('seq merged', 'seq values')

-- q: after.merge_sequence_ids
SELECT count(*), count(DISTINCT id), count(id) FROM orders WHERE note IN ('seq merged', 'seq values')

-- The drawn ids differ from the oracle's: the rows go, so that later reads
-- of these customers' orders compare ids again.
-- q: write.merge.sequence_cleanup write
DELETE FROM orders WHERE note IN ('seq merged', 'seq values')

-- Writable CTEs across groups (issue 19, item 5): the data-modifying WITH
-- query on a sharded table runs first, its RETURNING rows feed the
-- statement on main; a failing statement undoes the WITH query's write.

-- q: write.wcte.delete_into_main write
WITH gone AS (DELETE FROM items WHERE customer_id = 3 RETURNING *)
INSERT INTO settings (k, v) SELECT 'wcte ' || order_id || '/' || line, sku || ':' || qty || ':' || coalesce(price::text, '-') FROM gone

-- q: write.wcte.update_scatter_into_main write
WITH x AS (UPDATE orders SET note = 'wcte' WHERE customer_id IN (1, 2, 9) RETURNING id, customer_id, total * 2 AS doubled, extract(epoch FROM placed_at) AS at)
INSERT INTO settings (k, v) SELECT 'wcte o' || customer_id || '/' || id, doubled || ' ' || at FROM x

-- q: write.wcte.two_readonly_twice write
WITH a AS (UPDATE customers SET tier = 8 WHERE id IN (11, 12, 100) RETURNING id, name),
     b AS (DELETE FROM items WHERE customer_id = 9 RETURNING order_id, line, qty),
     c AS (SELECT count(*) AS n FROM audit)
INSERT INTO settings (k, v)
SELECT 'wcte c' || a.id, a.name || ' ' || (SELECT count(*) FROM b) || ' ' || (SELECT coalesce(sum(b1.qty), 0) FROM b b1 JOIN b AS b2(o, l) ON b1.order_id = b2.o AND b1.line = b2.l) || ' ' || c.n
FROM a, c

-- q: write.wcte.update_main_from write
WITH x AS (UPDATE orders SET qty = coalesce(qty, 0) + 1 WHERE customer_id = 2 RETURNING id, qty)
UPDATE settings SET v = v || ' qty ' || x.qty FROM x WHERE settings.k = 'wcte o2/' || x.id

-- q: write.wcte.delete_main_using write
WITH x AS (UPDATE orders SET note = 'wcte again' WHERE customer_id = 1 RETURNING id)
DELETE FROM settings USING x WHERE settings.k = 'wcte o1/' || x.id

-- q: write.wcte.empty write
WITH g AS (DELETE FROM orders WHERE customer_id = 123456 RETURNING *)
INSERT INTO settings (k, v) SELECT 'wcte none ' || id, status FROM g

-- q: write.wcte.select_back ordered write
WITH x AS (UPDATE orders SET note = 'wcte sel' WHERE customer_id IN (1, 2) RETURNING id, customer_id, total, total * 2 AS doubled, placed_at, note)
SELECT * FROM x ORDER BY customer_id, id

-- q: write.wcte.outer_fails write error
WITH g AS (DELETE FROM orders WHERE customer_id = 42 RETURNING id)
INSERT INTO settings (k, v) SELECT NULL, 'x' FROM g

-- q: write.wcte.param write args=7,wcte_param
WITH gone AS (DELETE FROM items WHERE customer_id = $1 AND line > 1 RETURNING *)
INSERT INTO settings (k, v) SELECT $2 || ' ' || order_id || '/' || line, sku || ':' || qty FROM gone

-- q: write.wcte.param_select_back ordered write args=1,wcte_psel
WITH x AS (UPDATE orders SET note = $2 WHERE customer_id = $1 RETURNING id, customer_id, note)
SELECT id, customer_id, note FROM x ORDER BY id

-- q: write.wcte.param_outer_only write args=wcte_outer
WITH x AS (UPDATE orders SET note = 'wcte outer' WHERE customer_id = 2 RETURNING id)
INSERT INTO settings (k, v) SELECT $1 || ' ' || id, 'o' FROM x

-- q: write.wcte.chain write
WITH a AS (DELETE FROM items WHERE customer_id = 100 RETURNING order_id, line, sku),
     b AS (INSERT INTO settings (k, v) SELECT 'wcte chain ' || order_id || '/' || line, sku FROM a RETURNING k)
INSERT INTO audit (customer_id, action) SELECT 100, 'chain ' || count(*) FROM b

-- q: write.wcte.chain_select ordered write
WITH a AS (UPDATE orders SET note = 'wcte chained' WHERE customer_id = 9 RETURNING id, customer_id),
     b AS (INSERT INTO settings (k, v) SELECT 'wcte ch9 ' || id, customer_id::text FROM a RETURNING k, v)
SELECT k, v FROM b ORDER BY k

-- q: write.wcte.chain_param write args=42
WITH a AS (UPDATE orders SET note = 'wcte chp' WHERE customer_id = $1 RETURNING id),
     b AS (INSERT INTO settings (k, v) SELECT 'wcte chp ' || id, $1::text FROM a RETURNING k)
INSERT INTO audit (customer_id, action) SELECT $1, 'chp ' || count(*) FROM b

-- q: write.wcte.readonly_in_step write
WITH x AS (SELECT id FROM orders WHERE customer_id = 9 AND total > 10),
     g AS (UPDATE items SET qty = qty + 1 WHERE customer_id = 9 AND order_id IN (SELECT id FROM x) RETURNING order_id, line, qty)
INSERT INTO settings (k, v) SELECT 'wcte ro ' || order_id || '/' || line, qty::text FROM g

-- q: write.wcte.readonly_in_step_and_outer ordered write
WITH x AS (SELECT code FROM countries WHERE code < 'm'),
     g AS (UPDATE customers SET tier = 7 WHERE id IN (3, 100) AND country IN (SELECT code FROM x) RETURNING id, country)
SELECT g.id, g.country, (SELECT count(*) FROM x) AS n FROM g ORDER BY g.id

-- q: write.wcte.readonly_outer_only write
WITH x AS (SELECT count(*) AS n FROM settings WHERE k LIKE 'wcte%'),
     g AS (DELETE FROM items WHERE customer_id = 2 AND line = 1 RETURNING order_id, line)
INSERT INTO settings (k, v) SELECT 'wcte roo ' || g.order_id, x.n::text FROM g, x

-- q: write.wcte.step_reads_modified_table write
WITH a AS (DELETE FROM orders WHERE customer_id = 3 RETURNING id),
     b AS (INSERT INTO settings (k, v) SELECT 'wcte n', count(*)::text FROM orders RETURNING k)
SELECT * FROM b, a

-- q: write.wcte.recursive write
WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < 3),
     d AS (UPDATE orders SET note = 'wcte rec' WHERE customer_id = 42 AND qty IN (SELECT n FROM g) RETURNING id, qty)
INSERT INTO settings (k, v) SELECT 'wcte rec ' || d.id, d.qty || '/' || (SELECT max(n) FROM g) FROM d

-- q: write.wcte.recursive_param_select ordered write args=9
WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < 4),
     d AS (UPDATE orders SET note = 'wcte recp' WHERE customer_id = $1 AND qty IN (SELECT n FROM g) RETURNING id, qty),
     s AS (INSERT INTO settings (k, v) SELECT 'wcte recp ' || id, qty::text FROM d RETURNING k, v)
SELECT k, v FROM s ORDER BY k

-- q: after.wcte_settings ordered
SELECT k, v FROM settings WHERE k LIKE 'wcte%' ORDER BY k

-- q: after.wcte_items
SELECT customer_id, count(*) FROM items WHERE customer_id IN (3, 9) GROUP BY customer_id

-- q: after.wcte_orders
SELECT customer_id, id, note, qty FROM orders WHERE note LIKE 'wcte%' OR customer_id = 42

-- q: after.wcte_customers
SELECT id, tier FROM customers WHERE tier = 8

-- ===================================================================
-- Reads after all the writes.
-- ===================================================================

-- q: final.customers_count ordered
SELECT count(*), count(DISTINCT name), sum(tier), max(id) FROM customers

-- q: final.customers_all
SELECT * FROM customers

-- q: final.orders_all
SELECT id, customer_id, status, currency, total, discount, qty, weight, placed_at, ship_date, note, gift FROM orders WHERE id < 1000000

-- q: final.items_all
SELECT * FROM items

-- q: final.products_all
SELECT * FROM products

-- q: final.countries ordered
SELECT * FROM countries ORDER BY code

-- q: final.orders_by_status ordered
SELECT status, count(*), sum(total) FROM orders GROUP BY status ORDER BY status

-- q: final.customers_by_score ordered
SELECT id, score FROM customers ORDER BY score DESC NULLS FIRST, id LIMIT 12

-- q: final.orders_top ordered
SELECT id, customer_id, total FROM orders WHERE id < 1000000 ORDER BY total DESC, id LIMIT 5

-- ===================================================================
-- DDL through the proxy (fan-out to the group, or main), then reads.
-- ===================================================================

-- q: ddl.add_column write norehearse
ALTER TABLE customers ADD COLUMN extra integer DEFAULT 7

-- q: ddl.read_new_column
SELECT id, extra FROM customers WHERE id IN (1, 2, 3)

-- q: ddl.read_new_column_ordered ordered
SELECT id, extra FROM customers WHERE id IN (1, 2, 3) ORDER BY id

-- q: ddl.group_new_column
SELECT extra, count(*) FROM customers GROUP BY extra

-- q: ddl.drop_column write norehearse
ALTER TABLE customers DROP COLUMN extra

-- q: ddl.create_index write
CREATE INDEX customers_name ON customers (lower(name))

-- q: ddl.create_main_table write norehearse
CREATE TABLE scratch (a integer PRIMARY KEY, b text)

-- q: ddl.use_main_table write
INSERT INTO scratch VALUES (1, 'one'), (2, 'two') RETURNING *

-- q: ddl.read_main_table ordered
SELECT * FROM scratch ORDER BY a

-- q: ddl.drop_main_table write norehearse
DROP TABLE scratch

-- ===================================================================
-- Global secondary index: tickets_by_code (unique, on code; the oracle
-- has a unique index of the same name). Reads by code go through the
-- lookup table, writes maintain it.
-- ===================================================================

-- q: gsi.insert write
INSERT INTO tickets (id, customer_id, code, label) VALUES (1, 1, 101, 'a'), (2, 2, 102, 'b'), (3, 9, 103, NULL), (4, 100, NULL, 'd'), (5, 3, 105, 'e'), (6, 7, 106, 'f'), (7, -42, 107, 'g')

-- q: gsi.point ordered
SELECT * FROM tickets WHERE code = 102

-- q: gsi.point_missing
SELECT * FROM tickets WHERE code = 999

-- q: gsi.in
SELECT id, customer_id, label FROM tickets WHERE code IN (101, 103, 107, 999)

-- q: gsi.any_literal
SELECT id, code FROM tickets WHERE code = ANY('{101,105,998}')

-- q: gsi.param_point ordered args=103
SELECT * FROM tickets WHERE code = $1

-- q: gsi.param_in args=101,106
SELECT id, code FROM tickets WHERE code IN ($1, $2)

-- q: gsi.param_any args={102;105;106}
SELECT id, code FROM tickets WHERE code = ANY($1::bigint[])

-- q: gsi.aggregate
SELECT count(*), sum(id) FROM tickets WHERE code IN (101, 102, 103)

-- q: gsi.update write
UPDATE tickets SET label = 'u' WHERE code = 101 RETURNING id, label

-- q: gsi.update_code write
UPDATE tickets SET code = 201 WHERE code = 102 RETURNING id, code

-- q: gsi.after_update_code
SELECT id, code FROM tickets WHERE code IN (102, 201)

-- q: gsi.delete write
DELETE FROM tickets WHERE code = 103 RETURNING id, customer_id

-- q: gsi.after_delete
SELECT id FROM tickets WHERE code = 103

-- q: gsi.unique_insert write error
INSERT INTO tickets (id, customer_id, code, label) VALUES (8, 2, 101, 'dup')

-- q: gsi.unique_insert_same_shard write error
INSERT INTO tickets (id, customer_id, code, label) VALUES (8, 1, 105, 'dup')

-- q: gsi.unique_update write error
UPDATE tickets SET code = 105 WHERE code = 201

-- q: gsi.unique_multirow write error
INSERT INTO tickets (id, customer_id, code, label) VALUES (9, 2, 300, 'x'), (10, 9, 300, 'y')

-- q: gsi.upsert write
INSERT INTO tickets AS t (id, customer_id, code, label) VALUES (1, 1, 101, 'a'), (11, 9, 111, 'k') ON CONFLICT (customer_id, id) DO UPDATE SET label = t.label || '+' RETURNING id, code, label

-- q: gsi.param_update write args=z,106
UPDATE tickets SET label = $1 WHERE code = $2

-- q: gsi.param_delete write args=107
DELETE FROM tickets WHERE code = $1

-- q: gsi.all ordered
SELECT * FROM tickets ORDER BY id

-- ===================================================================
-- UPDATE ... FROM and DELETE ... USING across groups: the target rows'
-- keys read over intermediate results, then written by key.
-- ===================================================================

-- q: xupd.items_ambiguous_returning write error
UPDATE items i SET price = p.price * 2 FROM products p WHERE lower(p.sku) = lower(i.sku) AND i.line < 20
RETURNING i.customer_id, price

-- q: xupd.items_from_products write
UPDATE items i SET price = p.price * 2, qty = i.qty + 1 FROM products p WHERE lower(p.sku) = lower(i.sku) AND i.line < 20
RETURNING i.customer_id, i.order_id, i.line, i.price, qty

-- q: after.xupd_items_from_products
SELECT customer_id, order_id, line, sku, qty, price FROM items WHERE line < 20

-- q: xupd.orders_constant_from_products write
UPDATE orders o SET note = 'cheap', gift = true FROM products p WHERE p.name = o.status AND p.price < 50

-- q: xupd.orders_many_matches write ignore=id
UPDATE orders o SET note = 'matched ' || p.category FROM products p WHERE p.category IS NOT NULL AND o.total > 4800
RETURNING o.customer_id, o.id, o.total

-- q: after.xupd_orders_many_matches ignore=id
SELECT customer_id, id, note IS NOT NULL, note LIKE 'matched %' FROM orders WHERE total > 4800

-- q: xupd.customers_subquery write
UPDATE customers SET tier = 5 WHERE id IN (SELECT customer_id FROM orders WHERE total > 4900) AND tier IS DISTINCT FROM 5
RETURNING id, tier

-- q: xupd.customers_param write args=vip,4000
UPDATE customers c SET nick = $1 FROM products p WHERE p.price * 40 > $2 AND lower(p.name) = lower(c.name)
RETURNING c.id, c.nick

-- q: after.xupd_customers
SELECT id, tier, nick FROM customers WHERE tier = 5 OR nick = 'vip'

-- q: xupd.reference_from_sharded write
UPDATE countries SET population = s.n FROM (SELECT country, count(*) AS n FROM customers GROUP BY country) s WHERE s.country = countries.code
RETURNING code, population

-- q: after.xupd_reference
SELECT code, population FROM countries

-- q: xupd.main_from_sharded write
UPDATE settings SET v = (SELECT count(*) FROM orders)::text WHERE k LIKE 'cust:%'

-- q: after.xupd_main
SELECT k, v FROM settings WHERE k LIKE 'cust:%'

-- q: xupd.shard_key_refused write error
UPDATE orders o SET customer_id = 1 FROM products p WHERE p.name = o.status

-- q: xdel.items_using_products write
DELETE FROM items i USING products p WHERE lower(p.sku) = lower(i.sku) AND p.price > 95
RETURNING i.customer_id, i.order_id, i.line

-- q: xdel.orders_param write args=xcopy,100
DELETE FROM orders o USING customers c, products p WHERE c.id = o.customer_id AND o.status = $1 AND p.name = c.name AND c.id < $2

-- q: xdel.orders_subquery write
DELETE FROM orders WHERE total < 20 AND customer_id NOT IN (SELECT length(sku) FROM products)

-- q: after.xdel
SELECT count(*), sum(total), count(DISTINCT customer_id) FROM orders

-- q: after.xdel_items
SELECT count(*), sum(price) FROM items

-- ===================================================================
-- Writes whose uncorrelated subquery runs first (issue 19, item 7): the
-- subquery's value is written into the statement, which is then routed
-- by it, moving the rows whose shard key it changes. devices is keyed by
-- lower(serial); orders (by customer_id) moves rows; tickets has a global
-- secondary index, which keeps the statement off the RowWrite path.
-- ===================================================================

-- q: wpull.devices_fill write
INSERT INTO devices (id, serial, tenant_id, label) VALUES
  (1, 'AB-100', NULL, 'a'), (2, 'ab-101', 1, 'b'), (3, 'Cd-200', NULL, 'c'), (4, 'cd-201', 2, NULL),
  (5, 'EF-300', 3, 'e'), (6, 'gh-400', NULL, 'f'), (7, 'ZZ-999', 4, 'g'), (8, 'mm-500', 4, 'h')

-- q: wpull.devices_update_key write
UPDATE devices SET serial = 'X' WHERE serial = (SELECT min(serial) FROM devices WHERE tenant_id IS NULL)

-- q: after.wpull_devices_update_key ordered
SELECT id, serial, tenant_id FROM devices ORDER BY id

-- q: wpull.devices_update_key_in write
UPDATE devices SET serial = lower(serial) || '-moved' WHERE serial IN (SELECT serial FROM devices WHERE tenant_id = 4)

-- q: after.wpull_devices_update_key_in ordered
SELECT id, serial, tenant_id FROM devices ORDER BY id

-- q: wpull.devices_update_key_none write
UPDATE devices SET serial = 'Y' WHERE serial = (SELECT max(serial) FROM devices WHERE tenant_id = 99)

-- q: wpull.devices_update_key_other_column write
UPDATE devices SET serial = upper(serial) WHERE tenant_id = (SELECT max(tenant_id) FROM devices WHERE label IS NOT NULL)

-- q: after.wpull_devices_update_key_other_column ordered
SELECT id, serial, tenant_id FROM devices ORDER BY id

-- q: wpull.devices_update_key_by_label_in write
UPDATE devices SET serial = serial || '!' WHERE label IN (SELECT label FROM devices WHERE tenant_id = 4)

-- q: after.wpull_devices_update_key_by_label_in ordered
SELECT id, serial, tenant_id, label FROM devices ORDER BY id

-- q: wpull.devices_update_two_rows write error
UPDATE devices SET serial = 'Z' WHERE serial = (SELECT serial FROM devices WHERE tenant_id IS NULL)

-- q: wpull.orders_update_key write
UPDATE orders SET customer_id = 9 WHERE id = (SELECT min(id) FROM orders WHERE status = 'shipped')

-- q: after.wpull_orders_update_key ordered
SELECT id, customer_id, status FROM orders WHERE customer_id = 9 ORDER BY id

-- q: wpull.tickets_delete write
DELETE FROM tickets WHERE code = (SELECT max(code) FROM tickets WHERE label IS NOT NULL)

-- q: after.wpull_tickets ordered
SELECT id, customer_id, code, label FROM tickets ORDER BY customer_id, id

-- ===================================================================
-- Corpus 19b: a wider differential corpus (ORM, sqllogictest shapes).
-- ===================================================================

-- q: c19b.agg.status.count
SELECT status AS g, count(*) AS a FROM orders GROUP BY status

-- q: c19b.agg.status.count_disc
SELECT status AS g, count(discount) AS a FROM orders GROUP BY status

-- q: c19b.agg.status.sum_total
SELECT status AS g, sum(total) AS a FROM orders GROUP BY status

-- q: c19b.agg.status.avg_total
SELECT status AS g, avg(total) AS a FROM orders GROUP BY status

-- q: c19b.agg.status.min_placed
SELECT status AS g, min(placed_at) AS a FROM orders GROUP BY status

-- q: c19b.agg.status.max_ship
SELECT status AS g, max(ship_date) AS a FROM orders GROUP BY status

-- q: c19b.agg.status.sum_qty_expr
SELECT status AS g, sum(qty * 2 + 1) AS a FROM orders GROUP BY status

-- q: c19b.agg.status.bool_and_gift
SELECT status AS g, bool_and(gift) AS a FROM orders GROUP BY status

-- q: c19b.agg.status.bool_or_gift
SELECT status AS g, bool_or(gift) AS a FROM orders GROUP BY status

-- q: c19b.agg.status.cnt_distinct_cur
SELECT status AS g, count(DISTINCT currency) AS a FROM orders GROUP BY status

-- q: c19b.agg.status.strag
SELECT status AS g, string_agg(status, ',' ORDER BY id) AS a FROM orders GROUP BY status

-- q: c19b.agg.status.arrag
SELECT status AS g, array_agg(total ORDER BY total DESC) AS a FROM orders GROUP BY status

-- q: c19b.agg.status.sum_case
SELECT status AS g, sum(CASE WHEN gift THEN total ELSE 0 END) AS a FROM orders GROUP BY status

-- q: c19b.agg.status.avg_qty
SELECT status AS g, avg(qty) AS a FROM orders GROUP BY status

-- q: c19b.agg.status.max_expr
SELECT status AS g, max(total - coalesce(discount, 0)) AS a FROM orders GROUP BY status

-- q: c19b.agg.status.sum_w
SELECT status AS g, sum(weight) AS a FROM orders GROUP BY status

-- q: c19b.agg.status.every_q
SELECT status AS g, every(qty > 0) AS a FROM orders GROUP BY status

-- q: c19b.agg.status.min_cur
SELECT status AS g, min(coalesce(currency, '-')) AS a FROM orders GROUP BY status

-- q: c19b.agg.currency.count
SELECT currency AS g, count(*) AS a FROM orders GROUP BY currency

-- q: c19b.agg.currency.count_disc
SELECT currency AS g, count(discount) AS a FROM orders GROUP BY currency

-- q: c19b.agg.currency.sum_total
SELECT currency AS g, sum(total) AS a FROM orders GROUP BY currency

-- q: c19b.agg.currency.avg_total
SELECT currency AS g, avg(total) AS a FROM orders GROUP BY currency

-- q: c19b.agg.currency.min_placed
SELECT currency AS g, min(placed_at) AS a FROM orders GROUP BY currency

-- q: c19b.agg.currency.max_ship
SELECT currency AS g, max(ship_date) AS a FROM orders GROUP BY currency

-- q: c19b.agg.currency.sum_qty_expr
SELECT currency AS g, sum(qty * 2 + 1) AS a FROM orders GROUP BY currency

-- q: c19b.agg.currency.bool_and_gift
SELECT currency AS g, bool_and(gift) AS a FROM orders GROUP BY currency

-- q: c19b.agg.currency.bool_or_gift
SELECT currency AS g, bool_or(gift) AS a FROM orders GROUP BY currency

-- q: c19b.agg.currency.cnt_distinct_cur
SELECT currency AS g, count(DISTINCT currency) AS a FROM orders GROUP BY currency

-- q: c19b.agg.currency.strag
SELECT currency AS g, string_agg(status, ',' ORDER BY id) AS a FROM orders GROUP BY currency

-- q: c19b.agg.currency.arrag
SELECT currency AS g, array_agg(total ORDER BY total DESC) AS a FROM orders GROUP BY currency

-- q: c19b.agg.currency.sum_case
SELECT currency AS g, sum(CASE WHEN gift THEN total ELSE 0 END) AS a FROM orders GROUP BY currency

-- q: c19b.agg.currency.avg_qty
SELECT currency AS g, avg(qty) AS a FROM orders GROUP BY currency

-- q: c19b.agg.currency.max_expr
SELECT currency AS g, max(total - coalesce(discount, 0)) AS a FROM orders GROUP BY currency

-- q: c19b.agg.currency.sum_w
SELECT currency AS g, sum(weight) AS a FROM orders GROUP BY currency

-- q: c19b.agg.currency.every_q
SELECT currency AS g, every(qty > 0) AS a FROM orders GROUP BY currency

-- q: c19b.agg.currency.min_cur
SELECT currency AS g, min(coalesce(currency, '-')) AS a FROM orders GROUP BY currency

-- q: c19b.agg.cust.count
SELECT customer_id AS g, count(*) AS a FROM orders GROUP BY customer_id

-- q: c19b.agg.cust.count_disc
SELECT customer_id AS g, count(discount) AS a FROM orders GROUP BY customer_id

-- q: c19b.agg.cust.sum_total
SELECT customer_id AS g, sum(total) AS a FROM orders GROUP BY customer_id

-- q: c19b.agg.cust.avg_total
SELECT customer_id AS g, avg(total) AS a FROM orders GROUP BY customer_id

-- q: c19b.agg.cust.min_placed
SELECT customer_id AS g, min(placed_at) AS a FROM orders GROUP BY customer_id

-- q: c19b.agg.cust.max_ship
SELECT customer_id AS g, max(ship_date) AS a FROM orders GROUP BY customer_id

-- q: c19b.agg.cust.sum_qty_expr
SELECT customer_id AS g, sum(qty * 2 + 1) AS a FROM orders GROUP BY customer_id

-- q: c19b.agg.cust.bool_and_gift
SELECT customer_id AS g, bool_and(gift) AS a FROM orders GROUP BY customer_id

-- q: c19b.agg.cust.bool_or_gift
SELECT customer_id AS g, bool_or(gift) AS a FROM orders GROUP BY customer_id

-- q: c19b.agg.cust.cnt_distinct_cur
SELECT customer_id AS g, count(DISTINCT currency) AS a FROM orders GROUP BY customer_id

-- q: c19b.agg.cust.strag
SELECT customer_id AS g, string_agg(status, ',' ORDER BY id) AS a FROM orders GROUP BY customer_id

-- q: c19b.agg.cust.arrag
SELECT customer_id AS g, array_agg(total ORDER BY total DESC) AS a FROM orders GROUP BY customer_id

-- q: c19b.agg.cust.sum_case
SELECT customer_id AS g, sum(CASE WHEN gift THEN total ELSE 0 END) AS a FROM orders GROUP BY customer_id

-- q: c19b.agg.cust.avg_qty
SELECT customer_id AS g, avg(qty) AS a FROM orders GROUP BY customer_id

-- q: c19b.agg.cust.max_expr
SELECT customer_id AS g, max(total - coalesce(discount, 0)) AS a FROM orders GROUP BY customer_id

-- q: c19b.agg.cust.sum_w
SELECT customer_id AS g, sum(weight) AS a FROM orders GROUP BY customer_id

-- q: c19b.agg.cust.every_q
SELECT customer_id AS g, every(qty > 0) AS a FROM orders GROUP BY customer_id

-- q: c19b.agg.cust.min_cur
SELECT customer_id AS g, min(coalesce(currency, '-')) AS a FROM orders GROUP BY customer_id

-- q: c19b.agg.gift.count
SELECT gift AS g, count(*) AS a FROM orders GROUP BY gift

-- q: c19b.agg.gift.count_disc
SELECT gift AS g, count(discount) AS a FROM orders GROUP BY gift

-- q: c19b.agg.gift.sum_total
SELECT gift AS g, sum(total) AS a FROM orders GROUP BY gift

-- q: c19b.agg.gift.avg_total
SELECT gift AS g, avg(total) AS a FROM orders GROUP BY gift

-- q: c19b.agg.gift.min_placed
SELECT gift AS g, min(placed_at) AS a FROM orders GROUP BY gift

-- q: c19b.agg.gift.max_ship
SELECT gift AS g, max(ship_date) AS a FROM orders GROUP BY gift

-- q: c19b.agg.gift.sum_qty_expr
SELECT gift AS g, sum(qty * 2 + 1) AS a FROM orders GROUP BY gift

-- q: c19b.agg.gift.bool_and_gift
SELECT gift AS g, bool_and(gift) AS a FROM orders GROUP BY gift

-- q: c19b.agg.gift.bool_or_gift
SELECT gift AS g, bool_or(gift) AS a FROM orders GROUP BY gift

-- q: c19b.agg.gift.cnt_distinct_cur
SELECT gift AS g, count(DISTINCT currency) AS a FROM orders GROUP BY gift

-- q: c19b.agg.gift.strag
SELECT gift AS g, string_agg(status, ',' ORDER BY id) AS a FROM orders GROUP BY gift

-- q: c19b.agg.gift.arrag
SELECT gift AS g, array_agg(total ORDER BY total DESC) AS a FROM orders GROUP BY gift

-- q: c19b.agg.gift.sum_case
SELECT gift AS g, sum(CASE WHEN gift THEN total ELSE 0 END) AS a FROM orders GROUP BY gift

-- q: c19b.agg.gift.avg_qty
SELECT gift AS g, avg(qty) AS a FROM orders GROUP BY gift

-- q: c19b.agg.gift.max_expr
SELECT gift AS g, max(total - coalesce(discount, 0)) AS a FROM orders GROUP BY gift

-- q: c19b.agg.gift.sum_w
SELECT gift AS g, sum(weight) AS a FROM orders GROUP BY gift

-- q: c19b.agg.gift.every_q
SELECT gift AS g, every(qty > 0) AS a FROM orders GROUP BY gift

-- q: c19b.agg.gift.min_cur
SELECT gift AS g, min(coalesce(currency, '-')) AS a FROM orders GROUP BY gift

-- q: c19b.agg.qtymod.count
SELECT qty % 3 AS g, count(*) AS a FROM orders GROUP BY qty % 3

-- q: c19b.agg.qtymod.count_disc
SELECT qty % 3 AS g, count(discount) AS a FROM orders GROUP BY qty % 3

-- q: c19b.agg.qtymod.sum_total
SELECT qty % 3 AS g, sum(total) AS a FROM orders GROUP BY qty % 3

-- q: c19b.agg.qtymod.avg_total
SELECT qty % 3 AS g, avg(total) AS a FROM orders GROUP BY qty % 3

-- q: c19b.agg.qtymod.min_placed
SELECT qty % 3 AS g, min(placed_at) AS a FROM orders GROUP BY qty % 3

-- q: c19b.agg.qtymod.max_ship
SELECT qty % 3 AS g, max(ship_date) AS a FROM orders GROUP BY qty % 3

-- q: c19b.agg.qtymod.sum_qty_expr
SELECT qty % 3 AS g, sum(qty * 2 + 1) AS a FROM orders GROUP BY qty % 3

-- q: c19b.agg.qtymod.bool_and_gift
SELECT qty % 3 AS g, bool_and(gift) AS a FROM orders GROUP BY qty % 3

-- q: c19b.agg.qtymod.bool_or_gift
SELECT qty % 3 AS g, bool_or(gift) AS a FROM orders GROUP BY qty % 3

-- q: c19b.agg.qtymod.cnt_distinct_cur
SELECT qty % 3 AS g, count(DISTINCT currency) AS a FROM orders GROUP BY qty % 3

-- q: c19b.agg.qtymod.strag
SELECT qty % 3 AS g, string_agg(status, ',' ORDER BY id) AS a FROM orders GROUP BY qty % 3

-- q: c19b.agg.qtymod.arrag
SELECT qty % 3 AS g, array_agg(total ORDER BY total DESC) AS a FROM orders GROUP BY qty % 3

-- q: c19b.agg.qtymod.sum_case
SELECT qty % 3 AS g, sum(CASE WHEN gift THEN total ELSE 0 END) AS a FROM orders GROUP BY qty % 3

-- q: c19b.agg.qtymod.avg_qty
SELECT qty % 3 AS g, avg(qty) AS a FROM orders GROUP BY qty % 3

-- q: c19b.agg.qtymod.max_expr
SELECT qty % 3 AS g, max(total - coalesce(discount, 0)) AS a FROM orders GROUP BY qty % 3

-- q: c19b.agg.qtymod.sum_w
SELECT qty % 3 AS g, sum(weight) AS a FROM orders GROUP BY qty % 3

-- q: c19b.agg.qtymod.every_q
SELECT qty % 3 AS g, every(qty > 0) AS a FROM orders GROUP BY qty % 3

-- q: c19b.agg.qtymod.min_cur
SELECT qty % 3 AS g, min(coalesce(currency, '-')) AS a FROM orders GROUP BY qty % 3

-- q: c19b.agg.shipnull.count
SELECT ship_date IS NULL AS g, count(*) AS a FROM orders GROUP BY ship_date IS NULL

-- q: c19b.agg.shipnull.count_disc
SELECT ship_date IS NULL AS g, count(discount) AS a FROM orders GROUP BY ship_date IS NULL

-- q: c19b.agg.shipnull.sum_total
SELECT ship_date IS NULL AS g, sum(total) AS a FROM orders GROUP BY ship_date IS NULL

-- q: c19b.agg.shipnull.avg_total
SELECT ship_date IS NULL AS g, avg(total) AS a FROM orders GROUP BY ship_date IS NULL

-- q: c19b.agg.shipnull.min_placed
SELECT ship_date IS NULL AS g, min(placed_at) AS a FROM orders GROUP BY ship_date IS NULL

-- q: c19b.agg.shipnull.max_ship
SELECT ship_date IS NULL AS g, max(ship_date) AS a FROM orders GROUP BY ship_date IS NULL

-- q: c19b.agg.shipnull.sum_qty_expr
SELECT ship_date IS NULL AS g, sum(qty * 2 + 1) AS a FROM orders GROUP BY ship_date IS NULL

-- q: c19b.agg.shipnull.bool_and_gift
SELECT ship_date IS NULL AS g, bool_and(gift) AS a FROM orders GROUP BY ship_date IS NULL

-- q: c19b.agg.shipnull.bool_or_gift
SELECT ship_date IS NULL AS g, bool_or(gift) AS a FROM orders GROUP BY ship_date IS NULL

-- q: c19b.agg.shipnull.cnt_distinct_cur
SELECT ship_date IS NULL AS g, count(DISTINCT currency) AS a FROM orders GROUP BY ship_date IS NULL

-- q: c19b.agg.shipnull.strag
SELECT ship_date IS NULL AS g, string_agg(status, ',' ORDER BY id) AS a FROM orders GROUP BY ship_date IS NULL

-- q: c19b.agg.shipnull.arrag
SELECT ship_date IS NULL AS g, array_agg(total ORDER BY total DESC) AS a FROM orders GROUP BY ship_date IS NULL

-- q: c19b.agg.shipnull.sum_case
SELECT ship_date IS NULL AS g, sum(CASE WHEN gift THEN total ELSE 0 END) AS a FROM orders GROUP BY ship_date IS NULL

-- q: c19b.agg.shipnull.avg_qty
SELECT ship_date IS NULL AS g, avg(qty) AS a FROM orders GROUP BY ship_date IS NULL

-- q: c19b.agg.shipnull.max_expr
SELECT ship_date IS NULL AS g, max(total - coalesce(discount, 0)) AS a FROM orders GROUP BY ship_date IS NULL

-- q: c19b.agg.shipnull.sum_w
SELECT ship_date IS NULL AS g, sum(weight) AS a FROM orders GROUP BY ship_date IS NULL

-- q: c19b.agg.shipnull.every_q
SELECT ship_date IS NULL AS g, every(qty > 0) AS a FROM orders GROUP BY ship_date IS NULL

-- q: c19b.agg.shipnull.min_cur
SELECT ship_date IS NULL AS g, min(coalesce(currency, '-')) AS a FROM orders GROUP BY ship_date IS NULL

-- q: c19b.agg.year.count
SELECT date_part('year', placed_at) AS g, count(*) AS a FROM orders GROUP BY date_part('year', placed_at)

-- q: c19b.agg.year.count_disc
SELECT date_part('year', placed_at) AS g, count(discount) AS a FROM orders GROUP BY date_part('year', placed_at)

-- q: c19b.agg.year.sum_total
SELECT date_part('year', placed_at) AS g, sum(total) AS a FROM orders GROUP BY date_part('year', placed_at)

-- q: c19b.agg.year.avg_total
SELECT date_part('year', placed_at) AS g, avg(total) AS a FROM orders GROUP BY date_part('year', placed_at)

-- q: c19b.agg.year.min_placed
SELECT date_part('year', placed_at) AS g, min(placed_at) AS a FROM orders GROUP BY date_part('year', placed_at)

-- q: c19b.agg.year.max_ship
SELECT date_part('year', placed_at) AS g, max(ship_date) AS a FROM orders GROUP BY date_part('year', placed_at)

-- q: c19b.agg.year.sum_qty_expr
SELECT date_part('year', placed_at) AS g, sum(qty * 2 + 1) AS a FROM orders GROUP BY date_part('year', placed_at)

-- q: c19b.agg.year.bool_and_gift
SELECT date_part('year', placed_at) AS g, bool_and(gift) AS a FROM orders GROUP BY date_part('year', placed_at)

-- q: c19b.agg.year.bool_or_gift
SELECT date_part('year', placed_at) AS g, bool_or(gift) AS a FROM orders GROUP BY date_part('year', placed_at)

-- q: c19b.agg.year.cnt_distinct_cur
SELECT date_part('year', placed_at) AS g, count(DISTINCT currency) AS a FROM orders GROUP BY date_part('year', placed_at)

-- q: c19b.agg.year.strag
SELECT date_part('year', placed_at) AS g, string_agg(status, ',' ORDER BY id) AS a FROM orders GROUP BY date_part('year', placed_at)

-- q: c19b.agg.year.arrag
SELECT date_part('year', placed_at) AS g, array_agg(total ORDER BY total DESC) AS a FROM orders GROUP BY date_part('year', placed_at)

-- q: c19b.agg.year.sum_case
SELECT date_part('year', placed_at) AS g, sum(CASE WHEN gift THEN total ELSE 0 END) AS a FROM orders GROUP BY date_part('year', placed_at)

-- q: c19b.agg.year.avg_qty
SELECT date_part('year', placed_at) AS g, avg(qty) AS a FROM orders GROUP BY date_part('year', placed_at)

-- q: c19b.agg.year.max_expr
SELECT date_part('year', placed_at) AS g, max(total - coalesce(discount, 0)) AS a FROM orders GROUP BY date_part('year', placed_at)

-- q: c19b.agg.year.sum_w
SELECT date_part('year', placed_at) AS g, sum(weight) AS a FROM orders GROUP BY date_part('year', placed_at)

-- q: c19b.agg.year.every_q
SELECT date_part('year', placed_at) AS g, every(qty > 0) AS a FROM orders GROUP BY date_part('year', placed_at)

-- q: c19b.agg.year.min_cur
SELECT date_part('year', placed_at) AS g, min(coalesce(currency, '-')) AS a FROM orders GROUP BY date_part('year', placed_at)

-- q: c19b.aggall.count
SELECT count(*) AS a FROM orders

-- q: c19b.aggall_where.count
SELECT count(*) AS a FROM orders WHERE total > 50

-- q: c19b.aggall_empty.count
SELECT count(*) AS a FROM orders WHERE false

-- q: c19b.aggall.count_disc
SELECT count(discount) AS a FROM orders

-- q: c19b.aggall_where.count_disc
SELECT count(discount) AS a FROM orders WHERE total > 50

-- q: c19b.aggall_empty.count_disc
SELECT count(discount) AS a FROM orders WHERE false

-- q: c19b.aggall.sum_total
SELECT sum(total) AS a FROM orders

-- q: c19b.aggall_where.sum_total
SELECT sum(total) AS a FROM orders WHERE total > 50

-- q: c19b.aggall_empty.sum_total
SELECT sum(total) AS a FROM orders WHERE false

-- q: c19b.aggall.avg_total
SELECT avg(total) AS a FROM orders

-- q: c19b.aggall_where.avg_total
SELECT avg(total) AS a FROM orders WHERE total > 50

-- q: c19b.aggall_empty.avg_total
SELECT avg(total) AS a FROM orders WHERE false

-- q: c19b.aggall.min_placed
SELECT min(placed_at) AS a FROM orders

-- q: c19b.aggall_where.min_placed
SELECT min(placed_at) AS a FROM orders WHERE total > 50

-- q: c19b.aggall_empty.min_placed
SELECT min(placed_at) AS a FROM orders WHERE false

-- q: c19b.aggall.max_ship
SELECT max(ship_date) AS a FROM orders

-- q: c19b.aggall_where.max_ship
SELECT max(ship_date) AS a FROM orders WHERE total > 50

-- q: c19b.aggall_empty.max_ship
SELECT max(ship_date) AS a FROM orders WHERE false

-- q: c19b.aggall.sum_qty_expr
SELECT sum(qty * 2 + 1) AS a FROM orders

-- q: c19b.aggall_where.sum_qty_expr
SELECT sum(qty * 2 + 1) AS a FROM orders WHERE total > 50

-- q: c19b.aggall_empty.sum_qty_expr
SELECT sum(qty * 2 + 1) AS a FROM orders WHERE false

-- q: c19b.aggall.bool_and_gift
SELECT bool_and(gift) AS a FROM orders

-- q: c19b.aggall_where.bool_and_gift
SELECT bool_and(gift) AS a FROM orders WHERE total > 50

-- q: c19b.aggall_empty.bool_and_gift
SELECT bool_and(gift) AS a FROM orders WHERE false

-- q: c19b.aggall.bool_or_gift
SELECT bool_or(gift) AS a FROM orders

-- q: c19b.aggall_where.bool_or_gift
SELECT bool_or(gift) AS a FROM orders WHERE total > 50

-- q: c19b.aggall_empty.bool_or_gift
SELECT bool_or(gift) AS a FROM orders WHERE false

-- q: c19b.aggall.cnt_distinct_cur
SELECT count(DISTINCT currency) AS a FROM orders

-- q: c19b.aggall_where.cnt_distinct_cur
SELECT count(DISTINCT currency) AS a FROM orders WHERE total > 50

-- q: c19b.aggall_empty.cnt_distinct_cur
SELECT count(DISTINCT currency) AS a FROM orders WHERE false

-- q: c19b.aggall.strag
SELECT string_agg(status, ',' ORDER BY id) AS a FROM orders

-- q: c19b.aggall_where.strag
SELECT string_agg(status, ',' ORDER BY id) AS a FROM orders WHERE total > 50

-- q: c19b.aggall_empty.strag
SELECT string_agg(status, ',' ORDER BY id) AS a FROM orders WHERE false

-- q: c19b.aggall.arrag
SELECT array_agg(total ORDER BY total DESC) AS a FROM orders

-- q: c19b.aggall_where.arrag
SELECT array_agg(total ORDER BY total DESC) AS a FROM orders WHERE total > 50

-- q: c19b.aggall_empty.arrag
SELECT array_agg(total ORDER BY total DESC) AS a FROM orders WHERE false

-- q: c19b.aggall.sum_case
SELECT sum(CASE WHEN gift THEN total ELSE 0 END) AS a FROM orders

-- q: c19b.aggall_where.sum_case
SELECT sum(CASE WHEN gift THEN total ELSE 0 END) AS a FROM orders WHERE total > 50

-- q: c19b.aggall_empty.sum_case
SELECT sum(CASE WHEN gift THEN total ELSE 0 END) AS a FROM orders WHERE false

-- q: c19b.aggall.avg_qty
SELECT avg(qty) AS a FROM orders

-- q: c19b.aggall_where.avg_qty
SELECT avg(qty) AS a FROM orders WHERE total > 50

-- q: c19b.aggall_empty.avg_qty
SELECT avg(qty) AS a FROM orders WHERE false

-- q: c19b.aggall.max_expr
SELECT max(total - coalesce(discount, 0)) AS a FROM orders

-- q: c19b.aggall_where.max_expr
SELECT max(total - coalesce(discount, 0)) AS a FROM orders WHERE total > 50

-- q: c19b.aggall_empty.max_expr
SELECT max(total - coalesce(discount, 0)) AS a FROM orders WHERE false

-- q: c19b.aggall.sum_w
SELECT sum(weight) AS a FROM orders

-- q: c19b.aggall_where.sum_w
SELECT sum(weight) AS a FROM orders WHERE total > 50

-- q: c19b.aggall_empty.sum_w
SELECT sum(weight) AS a FROM orders WHERE false

-- q: c19b.aggall.every_q
SELECT every(qty > 0) AS a FROM orders

-- q: c19b.aggall_where.every_q
SELECT every(qty > 0) AS a FROM orders WHERE total > 50

-- q: c19b.aggall_empty.every_q
SELECT every(qty > 0) AS a FROM orders WHERE false

-- q: c19b.aggall.min_cur
SELECT min(coalesce(currency, '-')) AS a FROM orders

-- q: c19b.aggall_where.min_cur
SELECT min(coalesce(currency, '-')) AS a FROM orders WHERE total > 50

-- q: c19b.aggall_empty.min_cur
SELECT min(coalesce(currency, '-')) AS a FROM orders WHERE false

-- q: c19b.filter.count
SELECT status, count(*) FILTER (WHERE gift) AS f, count(*) FILTER (WHERE qty IS NULL) AS n FROM orders GROUP BY status

-- q: c19b.filter_all.count
SELECT count(*) FILTER (WHERE currency = 'EUR') AS f FROM orders

-- q: c19b.filter.sum
SELECT status, sum(total) FILTER (WHERE gift) AS f, sum(total) FILTER (WHERE qty IS NULL) AS n FROM orders GROUP BY status

-- q: c19b.filter_all.sum
SELECT sum(total) FILTER (WHERE currency = 'EUR') AS f FROM orders

-- q: c19b.filter.avg
SELECT status, avg(qty) FILTER (WHERE gift) AS f, avg(qty) FILTER (WHERE qty IS NULL) AS n FROM orders GROUP BY status

-- q: c19b.filter_all.avg
SELECT avg(qty) FILTER (WHERE currency = 'EUR') AS f FROM orders

-- q: c19b.filter.max
SELECT status, max(id) FILTER (WHERE gift) AS f, max(id) FILTER (WHERE qty IS NULL) AS n FROM orders GROUP BY status

-- q: c19b.filter_all.max
SELECT max(id) FILTER (WHERE currency = 'EUR') AS f FROM orders

-- q: c19b.filter.strag
SELECT status, string_agg(status, '|' ORDER BY id) FILTER (WHERE gift) AS f, string_agg(status, '|' ORDER BY id) FILTER (WHERE qty IS NULL) AS n FROM orders GROUP BY status

-- q: c19b.filter_all.strag
SELECT string_agg(status, '|' ORDER BY id) FILTER (WHERE currency = 'EUR') AS f FROM orders

-- q: c19b.having.0
SELECT customer_id, count(*) FROM orders GROUP BY customer_id HAVING count(*) > 3

-- q: c19b.having_status.0
SELECT status, count(*) FROM orders GROUP BY status HAVING count(*) > 3

-- q: c19b.having.1
SELECT customer_id, count(*) FROM orders GROUP BY customer_id HAVING sum(total) > 100

-- q: c19b.having_status.1
SELECT status, count(*) FROM orders GROUP BY status HAVING sum(total) > 100

-- q: c19b.having.2
SELECT customer_id, count(*) FROM orders GROUP BY customer_id HAVING avg(qty) IS NULL

-- q: c19b.having_status.2
SELECT status, count(*) FROM orders GROUP BY status HAVING avg(qty) IS NULL

-- q: c19b.having.3
SELECT customer_id, count(*) FROM orders GROUP BY customer_id HAVING min(id) < 0

-- q: c19b.having_status.3
SELECT status, count(*) FROM orders GROUP BY status HAVING min(id) < 0

-- q: c19b.having.4
SELECT customer_id, count(*) FROM orders GROUP BY customer_id HAVING count(DISTINCT status) = 1

-- q: c19b.having_status.4
SELECT status, count(*) FROM orders GROUP BY status HAVING count(DISTINCT status) = 1

-- q: c19b.having.5
SELECT customer_id, count(*) FROM orders GROUP BY customer_id HAVING bool_or(gift)

-- q: c19b.having_status.5
SELECT status, count(*) FROM orders GROUP BY status HAVING bool_or(gift)

-- q: c19b.having.6
SELECT customer_id, count(*) FROM orders GROUP BY customer_id HAVING max(placed_at) > min(placed_at)

-- q: c19b.having_status.6
SELECT status, count(*) FROM orders GROUP BY status HAVING max(placed_at) > min(placed_at)

-- q: c19b.gsets.0
SELECT status, currency, count(*), sum(total), grouping(status) AS gr FROM orders GROUP BY ROLLUP (status, currency)

-- q: c19b.gsets.1
SELECT status, gift, count(*), sum(total), grouping(status) AS gr FROM orders GROUP BY CUBE (status, gift)

-- q: c19b.gsets.2
SELECT status, currency, count(*), sum(total), grouping(status) AS gr FROM orders GROUP BY GROUPING SETS ((status), (currency), ())

-- q: c19b.gsets.3
SELECT status, count(*), sum(total), grouping(status) AS gr FROM orders GROUP BY ROLLUP (status)

-- q: c19b.gsets.4
SELECT status, gift, count(*), sum(total), grouping(status) AS gr FROM orders GROUP BY GROUPING SETS ((status, gift), (gift))

-- q: c19b.gsets.5
SELECT currency, count(*), sum(total), grouping(currency) AS gr FROM orders GROUP BY CUBE (currency)

-- q: c19b.ord.name.asc ordered
SELECT id, name FROM customers ORDER BY name ASC, id LIMIT 15

-- q: c19b.ord.name.desc ordered
SELECT id, name FROM customers ORDER BY name DESC, id LIMIT 15

-- q: c19b.ord.name.asc_nulls_first ordered
SELECT id, name FROM customers ORDER BY name ASC NULLS FIRST, id LIMIT 15

-- q: c19b.ord.name.desc_nulls_last ordered
SELECT id, name FROM customers ORDER BY name DESC NULLS LAST, id LIMIT 15

-- q: c19b.ord_off.name ordered
SELECT id, name FROM customers ORDER BY name DESC, id OFFSET 5 LIMIT 7

-- q: c19b.ord_pos.name ordered
SELECT name, id FROM customers ORDER BY 1, 2 DESC LIMIT 9

-- q: c19b.ord_distinct.name ordered
SELECT DISTINCT name FROM customers ORDER BY 1 NULLS FIRST

-- q: c19b.distinct_on.name ordered
SELECT DISTINCT ON (name) name, id FROM customers ORDER BY name, id DESC

-- q: c19b.cnt_distinct.name
SELECT count(DISTINCT name), count(name), count(*) FROM customers

-- q: c19b.minmax.name
SELECT min(name), max(name) FROM customers

-- q: c19b.ord.email.asc ordered
SELECT id, email FROM customers ORDER BY email ASC, id LIMIT 15

-- q: c19b.ord.email.desc ordered
SELECT id, email FROM customers ORDER BY email DESC, id LIMIT 15

-- q: c19b.ord.email.asc_nulls_first ordered
SELECT id, email FROM customers ORDER BY email ASC NULLS FIRST, id LIMIT 15

-- q: c19b.ord.email.desc_nulls_last ordered
SELECT id, email FROM customers ORDER BY email DESC NULLS LAST, id LIMIT 15

-- q: c19b.ord_off.email ordered
SELECT id, email FROM customers ORDER BY email DESC, id OFFSET 5 LIMIT 7

-- q: c19b.ord_pos.email ordered
SELECT email, id FROM customers ORDER BY 1, 2 DESC LIMIT 9

-- q: c19b.ord_distinct.email ordered
SELECT DISTINCT email FROM customers ORDER BY 1 NULLS FIRST

-- q: c19b.distinct_on.email ordered
SELECT DISTINCT ON (email) email, id FROM customers ORDER BY email, id DESC

-- q: c19b.cnt_distinct.email
SELECT count(DISTINCT email), count(email), count(*) FROM customers

-- q: c19b.minmax.email
SELECT min(email), max(email) FROM customers

-- q: c19b.ord.country.asc ordered
SELECT id, country FROM customers ORDER BY country ASC, id LIMIT 15

-- q: c19b.ord.country.desc ordered
SELECT id, country FROM customers ORDER BY country DESC, id LIMIT 15

-- q: c19b.ord.country.asc_nulls_first ordered
SELECT id, country FROM customers ORDER BY country ASC NULLS FIRST, id LIMIT 15

-- q: c19b.ord.country.desc_nulls_last ordered
SELECT id, country FROM customers ORDER BY country DESC NULLS LAST, id LIMIT 15

-- q: c19b.ord_off.country ordered
SELECT id, country FROM customers ORDER BY country DESC, id OFFSET 5 LIMIT 7

-- q: c19b.ord_pos.country ordered
SELECT country, id FROM customers ORDER BY 1, 2 DESC LIMIT 9

-- q: c19b.ord_distinct.country ordered
SELECT DISTINCT country FROM customers ORDER BY 1 NULLS FIRST

-- q: c19b.distinct_on.country ordered
SELECT DISTINCT ON (country) country, id FROM customers ORDER BY country, id DESC

-- q: c19b.cnt_distinct.country
SELECT count(DISTINCT country), count(country), count(*) FROM customers

-- q: c19b.minmax.country
SELECT min(country), max(country) FROM customers

-- q: c19b.ord.tier.asc ordered
SELECT id, tier FROM customers ORDER BY tier ASC, id LIMIT 15

-- q: c19b.ord.tier.desc ordered
SELECT id, tier FROM customers ORDER BY tier DESC, id LIMIT 15

-- q: c19b.ord.tier.asc_nulls_first ordered
SELECT id, tier FROM customers ORDER BY tier ASC NULLS FIRST, id LIMIT 15

-- q: c19b.ord.tier.desc_nulls_last ordered
SELECT id, tier FROM customers ORDER BY tier DESC NULLS LAST, id LIMIT 15

-- q: c19b.ord_off.tier ordered
SELECT id, tier FROM customers ORDER BY tier DESC, id OFFSET 5 LIMIT 7

-- q: c19b.ord_pos.tier ordered
SELECT tier, id FROM customers ORDER BY 1, 2 DESC LIMIT 9

-- q: c19b.ord_distinct.tier ordered
SELECT DISTINCT tier FROM customers ORDER BY 1 NULLS FIRST

-- q: c19b.distinct_on.tier ordered
SELECT DISTINCT ON (tier) tier, id FROM customers ORDER BY tier, id DESC

-- q: c19b.cnt_distinct.tier
SELECT count(DISTINCT tier), count(tier), count(*) FROM customers

-- q: c19b.minmax.tier
SELECT min(tier), max(tier) FROM customers

-- q: c19b.ord.balance.asc ordered
SELECT id, balance FROM customers ORDER BY balance ASC, id LIMIT 15

-- q: c19b.ord.balance.desc ordered
SELECT id, balance FROM customers ORDER BY balance DESC, id LIMIT 15

-- q: c19b.ord.balance.asc_nulls_first ordered
SELECT id, balance FROM customers ORDER BY balance ASC NULLS FIRST, id LIMIT 15

-- q: c19b.ord.balance.desc_nulls_last ordered
SELECT id, balance FROM customers ORDER BY balance DESC NULLS LAST, id LIMIT 15

-- q: c19b.ord_off.balance ordered
SELECT id, balance FROM customers ORDER BY balance DESC, id OFFSET 5 LIMIT 7

-- q: c19b.ord_pos.balance ordered
SELECT balance, id FROM customers ORDER BY 1, 2 DESC LIMIT 9

-- q: c19b.ord_distinct.balance ordered
SELECT DISTINCT balance FROM customers ORDER BY 1 NULLS FIRST

-- q: c19b.distinct_on.balance ordered
SELECT DISTINCT ON (balance) balance, id FROM customers ORDER BY balance, id DESC

-- q: c19b.cnt_distinct.balance
SELECT count(DISTINCT balance), count(balance), count(*) FROM customers

-- q: c19b.minmax.balance
SELECT min(balance), max(balance) FROM customers

-- q: c19b.ord.credit.asc ordered
SELECT id, credit FROM customers ORDER BY credit ASC, id LIMIT 15

-- q: c19b.ord.credit.desc ordered
SELECT id, credit FROM customers ORDER BY credit DESC, id LIMIT 15

-- q: c19b.ord.credit.asc_nulls_first ordered
SELECT id, credit FROM customers ORDER BY credit ASC NULLS FIRST, id LIMIT 15

-- q: c19b.ord.credit.desc_nulls_last ordered
SELECT id, credit FROM customers ORDER BY credit DESC NULLS LAST, id LIMIT 15

-- q: c19b.ord_off.credit ordered
SELECT id, credit FROM customers ORDER BY credit DESC, id OFFSET 5 LIMIT 7

-- q: c19b.ord_pos.credit ordered
SELECT credit, id FROM customers ORDER BY 1, 2 DESC LIMIT 9

-- q: c19b.ord_distinct.credit ordered
SELECT DISTINCT credit FROM customers ORDER BY 1 NULLS FIRST

-- q: c19b.distinct_on.credit ordered
SELECT DISTINCT ON (credit) credit, id FROM customers ORDER BY credit, id DESC

-- q: c19b.cnt_distinct.credit
SELECT count(DISTINCT credit), count(credit), count(*) FROM customers

-- q: c19b.minmax.credit
SELECT min(credit), max(credit) FROM customers

-- q: c19b.ord.score.asc ordered
SELECT id, score FROM customers ORDER BY score ASC, id LIMIT 15

-- q: c19b.ord.score.desc ordered
SELECT id, score FROM customers ORDER BY score DESC, id LIMIT 15

-- q: c19b.ord.score.asc_nulls_first ordered
SELECT id, score FROM customers ORDER BY score ASC NULLS FIRST, id LIMIT 15

-- q: c19b.ord.score.desc_nulls_last ordered
SELECT id, score FROM customers ORDER BY score DESC NULLS LAST, id LIMIT 15

-- q: c19b.ord_off.score ordered
SELECT id, score FROM customers ORDER BY score DESC, id OFFSET 5 LIMIT 7

-- q: c19b.ord_pos.score ordered
SELECT score, id FROM customers ORDER BY 1, 2 DESC LIMIT 9

-- q: c19b.ord_distinct.score ordered
SELECT DISTINCT score FROM customers ORDER BY 1 NULLS FIRST

-- q: c19b.distinct_on.score ordered
SELECT DISTINCT ON (score) score, id FROM customers ORDER BY score, id DESC

-- q: c19b.cnt_distinct.score
SELECT count(DISTINCT score), count(score), count(*) FROM customers

-- q: c19b.minmax.score
SELECT min(score), max(score) FROM customers

-- q: c19b.ord.rating.asc ordered
SELECT id, rating FROM customers ORDER BY rating ASC, id LIMIT 15

-- q: c19b.ord.rating.desc ordered
SELECT id, rating FROM customers ORDER BY rating DESC, id LIMIT 15

-- q: c19b.ord.rating.asc_nulls_first ordered
SELECT id, rating FROM customers ORDER BY rating ASC NULLS FIRST, id LIMIT 15

-- q: c19b.ord.rating.desc_nulls_last ordered
SELECT id, rating FROM customers ORDER BY rating DESC NULLS LAST, id LIMIT 15

-- q: c19b.ord_off.rating ordered
SELECT id, rating FROM customers ORDER BY rating DESC, id OFFSET 5 LIMIT 7

-- q: c19b.ord_pos.rating ordered
SELECT rating, id FROM customers ORDER BY 1, 2 DESC LIMIT 9

-- q: c19b.ord_distinct.rating ordered
SELECT DISTINCT rating FROM customers ORDER BY 1 NULLS FIRST

-- q: c19b.distinct_on.rating ordered
SELECT DISTINCT ON (rating) rating, id FROM customers ORDER BY rating, id DESC

-- q: c19b.cnt_distinct.rating
SELECT count(DISTINCT rating), count(rating), count(*) FROM customers

-- q: c19b.minmax.rating
SELECT min(rating), max(rating) FROM customers

-- q: c19b.ord.active.asc ordered
SELECT id, active FROM customers ORDER BY active ASC, id LIMIT 15

-- q: c19b.ord.active.desc ordered
SELECT id, active FROM customers ORDER BY active DESC, id LIMIT 15

-- q: c19b.ord.active.asc_nulls_first ordered
SELECT id, active FROM customers ORDER BY active ASC NULLS FIRST, id LIMIT 15

-- q: c19b.ord.active.desc_nulls_last ordered
SELECT id, active FROM customers ORDER BY active DESC NULLS LAST, id LIMIT 15

-- q: c19b.ord_off.active ordered
SELECT id, active FROM customers ORDER BY active DESC, id OFFSET 5 LIMIT 7

-- q: c19b.ord_pos.active ordered
SELECT active, id FROM customers ORDER BY 1, 2 DESC LIMIT 9

-- q: c19b.ord_distinct.active ordered
SELECT DISTINCT active FROM customers ORDER BY 1 NULLS FIRST

-- q: c19b.distinct_on.active ordered
SELECT DISTINCT ON (active) active, id FROM customers ORDER BY active, id DESC

-- q: c19b.cnt_distinct.active
SELECT count(DISTINCT active), count(active), count(*) FROM customers

-- q: c19b.minmax.active
SELECT bool_and(active), bool_or(active) FROM customers

-- q: c19b.ord.born.asc ordered
SELECT id, born FROM customers ORDER BY born ASC, id LIMIT 15

-- q: c19b.ord.born.desc ordered
SELECT id, born FROM customers ORDER BY born DESC, id LIMIT 15

-- q: c19b.ord.born.asc_nulls_first ordered
SELECT id, born FROM customers ORDER BY born ASC NULLS FIRST, id LIMIT 15

-- q: c19b.ord.born.desc_nulls_last ordered
SELECT id, born FROM customers ORDER BY born DESC NULLS LAST, id LIMIT 15

-- q: c19b.ord_off.born ordered
SELECT id, born FROM customers ORDER BY born DESC, id OFFSET 5 LIMIT 7

-- q: c19b.ord_pos.born ordered
SELECT born, id FROM customers ORDER BY 1, 2 DESC LIMIT 9

-- q: c19b.ord_distinct.born ordered
SELECT DISTINCT born FROM customers ORDER BY 1 NULLS FIRST

-- q: c19b.distinct_on.born ordered
SELECT DISTINCT ON (born) born, id FROM customers ORDER BY born, id DESC

-- q: c19b.cnt_distinct.born
SELECT count(DISTINCT born), count(born), count(*) FROM customers

-- q: c19b.minmax.born
SELECT min(born), max(born) FROM customers

-- q: c19b.ord.signup.asc ordered
SELECT id, signup FROM customers ORDER BY signup ASC, id LIMIT 15

-- q: c19b.ord.signup.desc ordered
SELECT id, signup FROM customers ORDER BY signup DESC, id LIMIT 15

-- q: c19b.ord.signup.asc_nulls_first ordered
SELECT id, signup FROM customers ORDER BY signup ASC NULLS FIRST, id LIMIT 15

-- q: c19b.ord.signup.desc_nulls_last ordered
SELECT id, signup FROM customers ORDER BY signup DESC NULLS LAST, id LIMIT 15

-- q: c19b.ord_off.signup ordered
SELECT id, signup FROM customers ORDER BY signup DESC, id OFFSET 5 LIMIT 7

-- q: c19b.ord_pos.signup ordered
SELECT signup, id FROM customers ORDER BY 1, 2 DESC LIMIT 9

-- q: c19b.ord_distinct.signup ordered
SELECT DISTINCT signup FROM customers ORDER BY 1 NULLS FIRST

-- q: c19b.distinct_on.signup ordered
SELECT DISTINCT ON (signup) signup, id FROM customers ORDER BY signup, id DESC

-- q: c19b.cnt_distinct.signup
SELECT count(DISTINCT signup), count(signup), count(*) FROM customers

-- q: c19b.minmax.signup
SELECT min(signup), max(signup) FROM customers

-- q: c19b.ord.nick.asc ordered
SELECT id, nick FROM customers ORDER BY nick ASC, id LIMIT 15

-- q: c19b.ord.nick.desc ordered
SELECT id, nick FROM customers ORDER BY nick DESC, id LIMIT 15

-- q: c19b.ord.nick.asc_nulls_first ordered
SELECT id, nick FROM customers ORDER BY nick ASC NULLS FIRST, id LIMIT 15

-- q: c19b.ord.nick.desc_nulls_last ordered
SELECT id, nick FROM customers ORDER BY nick DESC NULLS LAST, id LIMIT 15

-- q: c19b.ord_off.nick ordered
SELECT id, nick FROM customers ORDER BY nick DESC, id OFFSET 5 LIMIT 7

-- q: c19b.ord_pos.nick ordered
SELECT nick, id FROM customers ORDER BY 1, 2 DESC LIMIT 9

-- q: c19b.ord_distinct.nick ordered
SELECT DISTINCT nick FROM customers ORDER BY 1 NULLS FIRST

-- q: c19b.distinct_on.nick ordered
SELECT DISTINCT ON (nick) nick, id FROM customers ORDER BY nick, id DESC

-- q: c19b.cnt_distinct.nick
SELECT count(DISTINCT nick), count(nick), count(*) FROM customers

-- q: c19b.minmax.nick
SELECT min(nick), max(nick) FROM customers

-- q: c19b.ord.code.asc ordered
SELECT id, code FROM customers ORDER BY code ASC, id LIMIT 15

-- q: c19b.ord.code.desc ordered
SELECT id, code FROM customers ORDER BY code DESC, id LIMIT 15

-- q: c19b.ord.code.asc_nulls_first ordered
SELECT id, code FROM customers ORDER BY code ASC NULLS FIRST, id LIMIT 15

-- q: c19b.ord.code.desc_nulls_last ordered
SELECT id, code FROM customers ORDER BY code DESC NULLS LAST, id LIMIT 15

-- q: c19b.ord_off.code ordered
SELECT id, code FROM customers ORDER BY code DESC, id OFFSET 5 LIMIT 7

-- q: c19b.ord_pos.code ordered
SELECT code, id FROM customers ORDER BY 1, 2 DESC LIMIT 9

-- q: c19b.ord_distinct.code ordered
SELECT DISTINCT code FROM customers ORDER BY 1 NULLS FIRST

-- q: c19b.distinct_on.code ordered
SELECT DISTINCT ON (code) code, id FROM customers ORDER BY code, id DESC

-- q: c19b.cnt_distinct.code
SELECT count(DISTINCT code), count(code), count(*) FROM customers

-- q: c19b.minmax.code
SELECT min(code), max(code) FROM customers

-- q: c19b.ord.last_seen.asc ordered
SELECT id, last_seen FROM customers ORDER BY last_seen ASC, id LIMIT 15

-- q: c19b.ord.last_seen.desc ordered
SELECT id, last_seen FROM customers ORDER BY last_seen DESC, id LIMIT 15

-- q: c19b.ord.last_seen.asc_nulls_first ordered
SELECT id, last_seen FROM customers ORDER BY last_seen ASC NULLS FIRST, id LIMIT 15

-- q: c19b.ord.last_seen.desc_nulls_last ordered
SELECT id, last_seen FROM customers ORDER BY last_seen DESC NULLS LAST, id LIMIT 15

-- q: c19b.ord_off.last_seen ordered
SELECT id, last_seen FROM customers ORDER BY last_seen DESC, id OFFSET 5 LIMIT 7

-- q: c19b.ord_pos.last_seen ordered
SELECT last_seen, id FROM customers ORDER BY 1, 2 DESC LIMIT 9

-- q: c19b.ord_distinct.last_seen ordered
SELECT DISTINCT last_seen FROM customers ORDER BY 1 NULLS FIRST

-- q: c19b.distinct_on.last_seen ordered
SELECT DISTINCT ON (last_seen) last_seen, id FROM customers ORDER BY last_seen, id DESC

-- q: c19b.cnt_distinct.last_seen
SELECT count(DISTINCT last_seen), count(last_seen), count(*) FROM customers

-- q: c19b.minmax.last_seen
SELECT min(last_seen), max(last_seen) FROM customers

-- q: c19b.ordexpr.0 ordered
SELECT id, lower(name) AS e FROM customers ORDER BY lower(name), id LIMIT 20

-- q: c19b.ordexpr_desc.0 ordered
SELECT id FROM customers ORDER BY lower(name) DESC NULLS LAST, id DESC LIMIT 11 OFFSET 3

-- q: c19b.ordexpr.1 ordered
SELECT id, length(name) AS e FROM customers ORDER BY length(name), id LIMIT 20

-- q: c19b.ordexpr_desc.1 ordered
SELECT id FROM customers ORDER BY length(name) DESC NULLS LAST, id DESC LIMIT 11 OFFSET 3

-- q: c19b.ordexpr.2 ordered
SELECT id, coalesce(tier, -1) AS e FROM customers ORDER BY coalesce(tier, -1), id LIMIT 20

-- q: c19b.ordexpr_desc.2 ordered
SELECT id FROM customers ORDER BY coalesce(tier, -1) DESC NULLS LAST, id DESC LIMIT 11 OFFSET 3

-- q: c19b.ordexpr.3 ordered
SELECT id, -tier AS e FROM customers ORDER BY -tier, id LIMIT 20

-- q: c19b.ordexpr_desc.3 ordered
SELECT id FROM customers ORDER BY -tier DESC NULLS LAST, id DESC LIMIT 11 OFFSET 3

-- q: c19b.ordexpr.4 ordered
SELECT id, abs(balance) AS e FROM customers ORDER BY abs(balance), id LIMIT 20

-- q: c19b.ordexpr_desc.4 ordered
SELECT id FROM customers ORDER BY abs(balance) DESC NULLS LAST, id DESC LIMIT 11 OFFSET 3

-- q: c19b.ordexpr.5 ordered
SELECT id, tier * 2 + 1 AS e FROM customers ORDER BY tier * 2 + 1, id LIMIT 20

-- q: c19b.ordexpr_desc.5 ordered
SELECT id FROM customers ORDER BY tier * 2 + 1 DESC NULLS LAST, id DESC LIMIT 11 OFFSET 3

-- q: c19b.ordexpr.6 ordered
SELECT id, country || name AS e FROM customers ORDER BY country || name, id LIMIT 20

-- q: c19b.ordexpr_desc.6 ordered
SELECT id FROM customers ORDER BY country || name DESC NULLS LAST, id DESC LIMIT 11 OFFSET 3

-- q: c19b.ordexpr.7 ordered
SELECT id, CASE WHEN active THEN 0 ELSE 1 END AS e FROM customers ORDER BY CASE WHEN active THEN 0 ELSE 1 END, id LIMIT 20

-- q: c19b.ordexpr_desc.7 ordered
SELECT id FROM customers ORDER BY CASE WHEN active THEN 0 ELSE 1 END DESC NULLS LAST, id DESC LIMIT 11 OFFSET 3

-- q: c19b.ordexpr.8 ordered
SELECT id, born > date '2000-01-01' AS e FROM customers ORDER BY born > date '2000-01-01', id LIMIT 20

-- q: c19b.ordexpr_desc.8 ordered
SELECT id FROM customers ORDER BY born > date '2000-01-01' DESC NULLS LAST, id DESC LIMIT 11 OFFSET 3

-- q: c19b.ordexpr.9 ordered
SELECT id, extract(month FROM signup) AS e FROM customers ORDER BY extract(month FROM signup), id LIMIT 20

-- q: c19b.ordexpr_desc.9 ordered
SELECT id FROM customers ORDER BY extract(month FROM signup) DESC NULLS LAST, id DESC LIMIT 11 OFFSET 3

-- q: c19b.ordexpr.10 ordered
SELECT id, balance::int AS e FROM customers ORDER BY balance::int, id LIMIT 20

-- q: c19b.ordexpr_desc.10 ordered
SELECT id FROM customers ORDER BY balance::int DESC NULLS LAST, id DESC LIMIT 11 OFFSET 3

-- q: c19b.ordexpr.11 ordered
SELECT id, score * -1 AS e FROM customers ORDER BY score * -1, id LIMIT 20

-- q: c19b.ordexpr_desc.11 ordered
SELECT id FROM customers ORDER BY score * -1 DESC NULLS LAST, id DESC LIMIT 11 OFFSET 3

-- q: c19b.limit_all ordered
SELECT id FROM customers ORDER BY id LIMIT ALL

-- q: c19b.offset_only ordered
SELECT id FROM customers ORDER BY id OFFSET 10

-- q: c19b.offset_big ordered
SELECT id FROM customers ORDER BY id OFFSET 100000

-- q: c19b.limit0 ordered
SELECT id FROM customers ORDER BY id LIMIT 0

-- q: c19b.limit_null ordered
SELECT id FROM customers ORDER BY id LIMIT NULL

-- q: c19b.fetch_first ordered
SELECT id FROM customers ORDER BY id FETCH FIRST 5 ROWS ONLY

-- q: c19b.fetch_first_1 ordered
SELECT id FROM customers ORDER BY id DESC FETCH FIRST ROW ONLY

-- q: c19b.offset_fetch ordered
SELECT id FROM customers ORDER BY id OFFSET 3 ROWS FETCH NEXT 4 ROWS ONLY

-- q: c19b.with_ties.tier keys=1
SELECT tier FROM customers ORDER BY tier FETCH FIRST 3 ROWS WITH TIES

-- q: c19b.with_ties_off.tier keys=1
SELECT tier FROM customers ORDER BY tier DESC OFFSET 2 FETCH FIRST 2 ROWS WITH TIES

-- q: c19b.with_ties.country keys=1
SELECT country FROM customers ORDER BY country FETCH FIRST 3 ROWS WITH TIES

-- q: c19b.with_ties_off.country keys=1
SELECT country FROM customers ORDER BY country DESC OFFSET 2 FETCH FIRST 2 ROWS WITH TIES

-- q: c19b.with_ties.active keys=1
SELECT active FROM customers ORDER BY active FETCH FIRST 3 ROWS WITH TIES

-- q: c19b.with_ties_off.active keys=1
SELECT active FROM customers ORDER BY active DESC OFFSET 2 FETCH FIRST 2 ROWS WITH TIES

-- q: c19b.with_ties.status keys=1
SELECT status FROM orders ORDER BY status FETCH FIRST 3 ROWS WITH TIES

-- q: c19b.with_ties_off.status keys=1
SELECT status FROM orders ORDER BY status DESC OFFSET 2 FETCH FIRST 2 ROWS WITH TIES

-- q: c19b.win.0
SELECT customer_id, id, row_number() OVER (PARTITION BY customer_id ORDER BY id) AS w FROM orders WHERE id < 1000000

-- q: c19b.win_ord.0 ordered
SELECT customer_id, id, row_number() OVER (PARTITION BY customer_id ORDER BY id) AS w FROM orders WHERE id < 1000000 ORDER BY customer_id, id LIMIT 25

-- q: c19b.win.1
SELECT customer_id, id, rank() OVER (PARTITION BY status ORDER BY total, id) AS w FROM orders WHERE id < 1000000

-- q: c19b.win_ord.1 ordered
SELECT customer_id, id, rank() OVER (PARTITION BY status ORDER BY total, id) AS w FROM orders WHERE id < 1000000 ORDER BY customer_id, id LIMIT 25

-- q: c19b.win.2
SELECT customer_id, id, dense_rank() OVER (ORDER BY status) AS w FROM orders WHERE id < 1000000

-- q: c19b.win_ord.2 ordered
SELECT customer_id, id, dense_rank() OVER (ORDER BY status) AS w FROM orders WHERE id < 1000000 ORDER BY customer_id, id LIMIT 25

-- q: c19b.win.3
SELECT customer_id, id, sum(total) OVER (PARTITION BY customer_id) AS w FROM orders WHERE id < 1000000

-- q: c19b.win_ord.3 ordered
SELECT customer_id, id, sum(total) OVER (PARTITION BY customer_id) AS w FROM orders WHERE id < 1000000 ORDER BY customer_id, id LIMIT 25

-- q: c19b.win.4
SELECT customer_id, id, sum(total) OVER (PARTITION BY customer_id ORDER BY id ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) AS w FROM orders WHERE id < 1000000

-- q: c19b.win_ord.4 ordered
SELECT customer_id, id, sum(total) OVER (PARTITION BY customer_id ORDER BY id ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) AS w FROM orders WHERE id < 1000000 ORDER BY customer_id, id LIMIT 25

-- q: c19b.win.5
SELECT customer_id, id, count(*) OVER () AS w FROM orders WHERE id < 1000000

-- q: c19b.win_ord.5 ordered
SELECT customer_id, id, count(*) OVER () AS w FROM orders WHERE id < 1000000 ORDER BY customer_id, id LIMIT 25

-- q: c19b.win.6
SELECT customer_id, id, lag(id) OVER (PARTITION BY customer_id ORDER BY id) AS w FROM orders WHERE id < 1000000

-- q: c19b.win_ord.6 ordered
SELECT customer_id, id, lag(id) OVER (PARTITION BY customer_id ORDER BY id) AS w FROM orders WHERE id < 1000000 ORDER BY customer_id, id LIMIT 25

-- q: c19b.win.7
SELECT customer_id, id, lead(total, 2, 0) OVER (PARTITION BY status ORDER BY id, customer_id) AS w FROM orders WHERE id < 1000000

-- q: c19b.win_ord.7 ordered
SELECT customer_id, id, lead(total, 2, 0) OVER (PARTITION BY status ORDER BY id, customer_id) AS w FROM orders WHERE id < 1000000 ORDER BY customer_id, id LIMIT 25

-- q: c19b.win.8
SELECT customer_id, id, first_value(id) OVER (PARTITION BY status ORDER BY total DESC, id) AS w FROM orders WHERE id < 1000000

-- q: c19b.win_ord.8 ordered
SELECT customer_id, id, first_value(id) OVER (PARTITION BY status ORDER BY total DESC, id) AS w FROM orders WHERE id < 1000000 ORDER BY customer_id, id LIMIT 25

-- q: c19b.win.9
SELECT customer_id, id, last_value(id) OVER (PARTITION BY status ORDER BY id, customer_id ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS w FROM orders WHERE id < 1000000

-- q: c19b.win_ord.9 ordered
SELECT customer_id, id, last_value(id) OVER (PARTITION BY status ORDER BY id, customer_id ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS w FROM orders WHERE id < 1000000 ORDER BY customer_id, id LIMIT 25

-- q: c19b.win.10
SELECT customer_id, id, ntile(3) OVER (ORDER BY id, customer_id) AS w FROM orders WHERE id < 1000000

-- q: c19b.win_ord.10 ordered
SELECT customer_id, id, ntile(3) OVER (ORDER BY id, customer_id) AS w FROM orders WHERE id < 1000000 ORDER BY customer_id, id LIMIT 25

-- q: c19b.win.11
SELECT customer_id, id, percent_rank() OVER (PARTITION BY customer_id ORDER BY id) AS w FROM orders WHERE id < 1000000

-- q: c19b.win_ord.11 ordered
SELECT customer_id, id, percent_rank() OVER (PARTITION BY customer_id ORDER BY id) AS w FROM orders WHERE id < 1000000 ORDER BY customer_id, id LIMIT 25

-- q: c19b.win.12
SELECT customer_id, id, cume_dist() OVER (ORDER BY status) AS w FROM orders WHERE id < 1000000

-- q: c19b.win_ord.12 ordered
SELECT customer_id, id, cume_dist() OVER (ORDER BY status) AS w FROM orders WHERE id < 1000000 ORDER BY customer_id, id LIMIT 25

-- q: c19b.win.13
SELECT customer_id, id, avg(total) OVER (ORDER BY id, customer_id RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS w FROM orders WHERE id < 1000000

-- q: c19b.win_ord.13 ordered
SELECT customer_id, id, avg(total) OVER (ORDER BY id, customer_id RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS w FROM orders WHERE id < 1000000 ORDER BY customer_id, id LIMIT 25

-- q: c19b.win.14
SELECT customer_id, id, max(total) OVER (PARTITION BY gift ORDER BY id, customer_id GROUPS BETWEEN 1 PRECEDING AND CURRENT ROW) AS w FROM orders WHERE id < 1000000

-- q: c19b.win_ord.14 ordered
SELECT customer_id, id, max(total) OVER (PARTITION BY gift ORDER BY id, customer_id GROUPS BETWEEN 1 PRECEDING AND CURRENT ROW) AS w FROM orders WHERE id < 1000000 ORDER BY customer_id, id LIMIT 25

-- q: c19b.win.15
SELECT customer_id, id, nth_value(id, 2) OVER (PARTITION BY customer_id ORDER BY id) AS w FROM orders WHERE id < 1000000

-- q: c19b.win_ord.15 ordered
SELECT customer_id, id, nth_value(id, 2) OVER (PARTITION BY customer_id ORDER BY id) AS w FROM orders WHERE id < 1000000 ORDER BY customer_id, id LIMIT 25

-- q: c19b.win.16
SELECT customer_id, id, sum(qty) OVER (ORDER BY id, customer_id ROWS BETWEEN CURRENT ROW AND 2 FOLLOWING EXCLUDE CURRENT ROW) AS w FROM orders WHERE id < 1000000

-- q: c19b.win_ord.16 ordered
SELECT customer_id, id, sum(qty) OVER (ORDER BY id, customer_id ROWS BETWEEN CURRENT ROW AND 2 FOLLOWING EXCLUDE CURRENT ROW) AS w FROM orders WHERE id < 1000000 ORDER BY customer_id, id LIMIT 25

-- q: c19b.setop.union
SELECT customer_id FROM orders WHERE status = 'shipped' UNION SELECT id FROM customers WHERE tier = 2

-- q: c19b.setop_ord.union ordered
SELECT customer_id AS c FROM orders WHERE status = 'shipped' UNION SELECT id FROM customers WHERE tier = 2 ORDER BY 1 DESC LIMIT 5

-- q: c19b.setop_txt.union ordered
SELECT country FROM customers UNION SELECT code FROM countries ORDER BY 1 NULLS FIRST

-- q: c19b.setop_paren.union
(SELECT id FROM customers ORDER BY id LIMIT 5) UNION (SELECT customer_id FROM orders ORDER BY customer_id DESC LIMIT 5)

-- q: c19b.setop.union_all
SELECT customer_id FROM orders WHERE status = 'shipped' UNION ALL SELECT id FROM customers WHERE tier = 2

-- q: c19b.setop_ord.union_all ordered
SELECT customer_id AS c FROM orders WHERE status = 'shipped' UNION ALL SELECT id FROM customers WHERE tier = 2 ORDER BY 1 DESC LIMIT 5

-- q: c19b.setop_txt.union_all ordered
SELECT country FROM customers UNION ALL SELECT code FROM countries ORDER BY 1 NULLS FIRST

-- q: c19b.setop_paren.union_all
(SELECT id FROM customers ORDER BY id LIMIT 5) UNION ALL (SELECT customer_id FROM orders ORDER BY customer_id DESC LIMIT 5)

-- q: c19b.setop.intersect
SELECT customer_id FROM orders WHERE status = 'shipped' INTERSECT SELECT id FROM customers WHERE tier = 2

-- q: c19b.setop_ord.intersect ordered
SELECT customer_id AS c FROM orders WHERE status = 'shipped' INTERSECT SELECT id FROM customers WHERE tier = 2 ORDER BY 1 DESC LIMIT 5

-- q: c19b.setop_txt.intersect ordered
SELECT country FROM customers INTERSECT SELECT code FROM countries ORDER BY 1 NULLS FIRST

-- q: c19b.setop_paren.intersect
(SELECT id FROM customers ORDER BY id LIMIT 5) INTERSECT (SELECT customer_id FROM orders ORDER BY customer_id DESC LIMIT 5)

-- q: c19b.setop.intersect_all
SELECT customer_id FROM orders WHERE status = 'shipped' INTERSECT ALL SELECT id FROM customers WHERE tier = 2

-- q: c19b.setop_ord.intersect_all ordered
SELECT customer_id AS c FROM orders WHERE status = 'shipped' INTERSECT ALL SELECT id FROM customers WHERE tier = 2 ORDER BY 1 DESC LIMIT 5

-- q: c19b.setop_txt.intersect_all ordered
SELECT country FROM customers INTERSECT ALL SELECT code FROM countries ORDER BY 1 NULLS FIRST

-- q: c19b.setop_paren.intersect_all
(SELECT id FROM customers ORDER BY id LIMIT 5) INTERSECT ALL (SELECT customer_id FROM orders ORDER BY customer_id DESC LIMIT 5)

-- q: c19b.setop.except
SELECT customer_id FROM orders WHERE status = 'shipped' EXCEPT SELECT id FROM customers WHERE tier = 2

-- q: c19b.setop_ord.except ordered
SELECT customer_id AS c FROM orders WHERE status = 'shipped' EXCEPT SELECT id FROM customers WHERE tier = 2 ORDER BY 1 DESC LIMIT 5

-- q: c19b.setop_txt.except ordered
SELECT country FROM customers EXCEPT SELECT code FROM countries ORDER BY 1 NULLS FIRST

-- q: c19b.setop_paren.except
(SELECT id FROM customers ORDER BY id LIMIT 5) EXCEPT (SELECT customer_id FROM orders ORDER BY customer_id DESC LIMIT 5)

-- q: c19b.setop.except_all
SELECT customer_id FROM orders WHERE status = 'shipped' EXCEPT ALL SELECT id FROM customers WHERE tier = 2

-- q: c19b.setop_ord.except_all ordered
SELECT customer_id AS c FROM orders WHERE status = 'shipped' EXCEPT ALL SELECT id FROM customers WHERE tier = 2 ORDER BY 1 DESC LIMIT 5

-- q: c19b.setop_txt.except_all ordered
SELECT country FROM customers EXCEPT ALL SELECT code FROM countries ORDER BY 1 NULLS FIRST

-- q: c19b.setop_paren.except_all
(SELECT id FROM customers ORDER BY id LIMIT 5) EXCEPT ALL (SELECT customer_id FROM orders ORDER BY customer_id DESC LIMIT 5)

-- q: c19b.sub.0
SELECT id, name FROM customers c WHERE EXISTS (SELECT 1 FROM orders o WHERE o.customer_id = c.id AND o.total > 100)

-- q: c19b.sub.1
SELECT id FROM customers c WHERE NOT EXISTS (SELECT 1 FROM orders o WHERE o.customer_id = c.id)

-- q: c19b.sub.2
SELECT id, (SELECT count(*) FROM orders o WHERE o.customer_id = c.id) AS n FROM customers c

-- q: c19b.sub.3
SELECT id, (SELECT max(total) FROM orders o WHERE o.customer_id = c.id) AS m FROM customers c

-- q: c19b.sub.4
SELECT id FROM customers WHERE id IN (SELECT customer_id FROM orders WHERE gift)

-- q: c19b.sub.5
SELECT id FROM customers WHERE id NOT IN (SELECT customer_id FROM orders WHERE gift)

-- q: c19b.sub.6
SELECT id FROM customers WHERE tier IN (SELECT tier FROM customers WHERE country = 'DE')

-- q: c19b.sub.7
SELECT id FROM customers WHERE tier NOT IN (SELECT tier FROM customers WHERE country = 'DE')

-- q: c19b.sub.8
SELECT id FROM customers WHERE balance > (SELECT avg(balance) FROM customers)

-- q: c19b.sub.9
SELECT id FROM customers WHERE balance > ALL (SELECT balance FROM customers WHERE country = 'FR')

-- q: c19b.sub.10
SELECT id FROM customers WHERE balance < ANY (SELECT balance FROM customers WHERE country = 'FR')

-- q: c19b.sub.11
SELECT id FROM orders o WHERE total > (SELECT avg(total) FROM orders o2 WHERE o2.customer_id = o.customer_id)

-- q: c19b.sub.12
SELECT id FROM orders o WHERE total > (SELECT avg(total) FROM orders o2 WHERE o2.status = o.status)

-- q: c19b.sub.13
SELECT o.id, (SELECT name FROM customers c WHERE c.id = o.customer_id) FROM orders o WHERE o.id < 1000000

-- q: c19b.sub.14
SELECT status, (SELECT count(*) FROM customers) AS n FROM orders GROUP BY status

-- q: c19b.sub.15
SELECT * FROM (SELECT customer_id, sum(total) AS s FROM orders GROUP BY customer_id) t WHERE s > 100

-- q: c19b.sub.16
SELECT * FROM (SELECT status, count(*) AS n FROM orders GROUP BY status) t ORDER BY n DESC, status

-- q: c19b.sub.17
SELECT x.status, x.n FROM (SELECT status, count(*) n FROM orders GROUP BY 1) x JOIN (SELECT status, max(total) m FROM orders GROUP BY 1) y USING (status)

-- q: c19b.sub.18
SELECT c.id, l.total FROM customers c CROSS JOIN LATERAL (SELECT total FROM orders o WHERE o.customer_id = c.id ORDER BY total DESC, id LIMIT 1) l

-- q: c19b.sub.19
SELECT c.id, l.n FROM customers c LEFT JOIN LATERAL (SELECT count(*) n FROM orders o WHERE o.customer_id = c.id) l ON true

-- q: c19b.sub.20
SELECT c.id, l.s FROM customers c, LATERAL (SELECT sum(total) s FROM orders o WHERE o.status = c.country) l

-- q: c19b.sub.21
SELECT id FROM customers WHERE (tier, active) IN (SELECT tier, active FROM customers WHERE id < 0)

-- q: c19b.sub.22
SELECT id, CASE WHEN id IN (SELECT customer_id FROM orders) THEN 'y' ELSE 'n' END FROM customers

-- q: c19b.sub.23
SELECT count(*) FROM orders WHERE customer_id IN (SELECT id FROM customers WHERE active)

-- q: c19b.sub.24
SELECT count(*) FROM orders WHERE customer_id = ANY (ARRAY(SELECT id FROM customers WHERE tier = 1))

-- q: c19b.sub.25
SELECT (SELECT min(id) FROM customers), (SELECT max(id) FROM orders), (SELECT count(*) FROM items)

-- q: c19b.sub.26
SELECT status FROM orders GROUP BY status HAVING count(*) > (SELECT count(*) / 10 FROM orders)

-- q: c19b.sub.27
SELECT id FROM customers c WHERE (SELECT count(*) FROM orders o WHERE o.customer_id = c.id) = 0

-- q: c19b.sub.28
SELECT id FROM customers c WHERE 2 < (SELECT count(*) FROM orders o WHERE o.customer_id = c.id AND o.gift)

-- q: c19b.sub.29
SELECT o.customer_id, count(*) FROM orders o WHERE EXISTS (SELECT 1 FROM items i WHERE i.customer_id = o.customer_id AND i.order_id = o.id) GROUP BY 1

-- q: c19b.join.0
SELECT c.id, o.id FROM customers c JOIN orders o ON o.customer_id = c.id WHERE o.id IS NULL OR o.id < 1000000

-- q: c19b.join.1
SELECT c.id, o.id FROM customers c LEFT JOIN orders o ON o.customer_id = c.id WHERE o.id IS NULL OR o.id < 1000000

-- q: c19b.join.2
SELECT c.id, o.id FROM customers c RIGHT JOIN orders o ON o.customer_id = c.id WHERE o.id IS NULL OR o.id < 1000000

-- q: c19b.join.3
SELECT c.id, o.id FROM customers c FULL JOIN orders o ON o.customer_id = c.id WHERE o.id IS NULL OR o.id < 1000000

-- q: c19b.join.4
SELECT c.id, co.name FROM customers c LEFT JOIN countries co ON co.code = c.country

-- q: c19b.join.5
SELECT o.id, cu.rate FROM orders o JOIN currencies cu ON cu.code = o.currency

-- q: c19b.join.6
SELECT c.country, count(o.id) FROM customers c LEFT JOIN orders o ON o.customer_id = c.id GROUP BY c.country

-- q: c19b.join.7
SELECT co.region, sum(o.total) FROM orders o JOIN customers c ON c.id = o.customer_id JOIN countries co ON co.code = c.country GROUP BY co.region

-- q: c19b.join.8
SELECT o.id, i.line FROM orders o JOIN items i ON i.customer_id = o.customer_id AND i.order_id = o.id

-- q: c19b.join.9
SELECT c.id FROM customers c JOIN orders o USING (id)

-- q: c19b.join.10
SELECT a.id, b.id FROM customers a JOIN customers b ON a.country = b.country WHERE a.id < b.id

-- q: c19b.join.11 ordered
SELECT c.id, o.id FROM customers c JOIN orders o ON o.customer_id = c.id AND o.total > 100 ORDER BY c.id, o.id LIMIT 10

-- q: c19b.join.12
SELECT * FROM countries NATURAL JOIN (SELECT code, count(*) FROM customers c JOIN countries USING (code) GROUP BY code) t

-- q: c19b.join.13
SELECT c.id, g FROM customers c CROSS JOIN generate_series(1, 3) g WHERE c.id BETWEEN 1 AND 10

-- q: c19b.join.14
SELECT g, count(o.id) FROM generate_series(1, 5) g LEFT JOIN orders o ON o.qty = g GROUP BY g

-- q: c19b.join.15
SELECT g FROM generate_series(1, 20) g WHERE g IN (SELECT qty FROM orders)

-- q: c19b.join.16
SELECT v.x, c.name FROM (VALUES (1), (2), (3), (42)) v(x) JOIN customers c ON c.id = v.x

-- q: c19b.join.17 ordered
SELECT v.x FROM (VALUES (1, 'a'), (2, NULL), (NULL, 'c')) v(x, y) ORDER BY x NULLS FIRST

-- q: c19b.expr.0
SELECT id, coalesce(email, nick, 'none') AS e FROM customers

-- q: c19b.expr.1
SELECT id, nullif(tier, 2) AS e FROM customers

-- q: c19b.expr.2
SELECT id, greatest(tier, 1) AS e FROM customers

-- q: c19b.expr.3
SELECT id, least(balance, 0) AS e FROM customers

-- q: c19b.expr.4
SELECT id, CASE tier WHEN 1 THEN 'a' WHEN 2 THEN 'b' END AS e FROM customers

-- q: c19b.expr.5
SELECT id, CASE WHEN score IS NULL THEN 'n' WHEN score > 0 THEN 'p' ELSE 'z' END AS e FROM customers

-- q: c19b.expr.6
SELECT id, upper(name) AS e FROM customers

-- q: c19b.expr.7
SELECT id, initcap(name) AS e FROM customers

-- q: c19b.expr.8
SELECT id, length(name) AS e FROM customers

-- q: c19b.expr.9
SELECT id, substr(name, 2, 3) AS e FROM customers

-- q: c19b.expr.10
SELECT id, position('a' IN name) AS e FROM customers

-- q: c19b.expr.11
SELECT id, name LIKE '%a%' AS e FROM customers

-- q: c19b.expr.12
SELECT id, name ILIKE 'A%' AS e FROM customers

-- q: c19b.expr.13
SELECT id, name ~ '^[A-Z]' AS e FROM customers

-- q: c19b.expr.14
SELECT id, split_part(email, '@', 2) AS e FROM customers

-- q: c19b.expr.15
SELECT id, replace(name, 'a', 'X') AS e FROM customers

-- q: c19b.expr.16
SELECT id, balance * 2 AS e FROM customers

-- q: c19b.expr.17
SELECT id, balance / 3 AS e FROM customers

-- q: c19b.expr.18
SELECT id, round(balance, 1) AS e FROM customers

-- q: c19b.expr.19
SELECT id, trunc(credit) AS e FROM customers

-- q: c19b.expr.20
SELECT id, credit % 7 AS e FROM customers

-- q: c19b.expr.21
SELECT id, score / 2 AS e FROM customers

-- q: c19b.expr.22
SELECT id, floor(score) AS e FROM customers

-- q: c19b.expr.23
SELECT id, ceil(rating) AS e FROM customers

-- q: c19b.expr.24
SELECT id, abs(balance) AS e FROM customers

-- q: c19b.expr.25
SELECT id, sign(credit) AS e FROM customers

-- q: c19b.expr.26
SELECT id, born + 1 AS e FROM customers

-- q: c19b.expr.27
SELECT id, date_trunc('month', signup) AS e FROM customers

-- q: c19b.expr.28
SELECT id, extract(dow FROM born) AS e FROM customers

-- q: c19b.expr.29
SELECT id, born < date '2030-01-01' AS e FROM customers

-- q: c19b.expr.30
SELECT id, signup + session AS e FROM customers

-- q: c19b.expr.31
SELECT id, to_char(born, 'YYYY-MM') AS e FROM customers

-- q: c19b.expr.32
SELECT id, prefs->>'theme' AS e FROM customers

-- q: c19b.expr.33
SELECT id, prefs->'n' AS e FROM customers

-- q: c19b.expr.34
SELECT id, prefs ? 'theme' AS e FROM customers

-- q: c19b.expr.35
SELECT id, jsonb_typeof(prefs) AS e FROM customers

-- q: c19b.expr.36
SELECT id, prefs @> '{}' AS e FROM customers

-- q: c19b.expr.37
SELECT id, tags[1] AS e FROM customers

-- q: c19b.expr.38
SELECT id, array_length(tags, 1) AS e FROM customers

-- q: c19b.expr.39
SELECT id, cardinality(tags) AS e FROM customers

-- q: c19b.expr.40
SELECT id, 'x' = ANY (tags) AS e FROM customers

-- q: c19b.expr.41
SELECT id, array_to_string(tags, ',') AS e FROM customers

-- q: c19b.expr.42
SELECT id, tags || 'z'::text AS e FROM customers

-- q: c19b.expr.43
SELECT id, md5(avatar) AS e FROM customers

-- q: c19b.expr.44
SELECT id, length(avatar) AS e FROM customers

-- q: c19b.expr.45
SELECT id, encode(avatar, 'hex') AS e FROM customers

-- q: c19b.expr.46
SELECT id, ext_id::text AS e FROM customers

-- q: c19b.expr.47
SELECT id, tier::text || '!' AS e FROM customers

-- q: c19b.expr.48
SELECT id, id::numeric / 7 AS e FROM customers

-- q: c19b.expr.49
SELECT id, (id % 5)::int AS e FROM customers

-- q: c19b.expr.50
SELECT id, active IS NOT TRUE AS e FROM customers

-- q: c19b.expr.51
SELECT id, active IS DISTINCT FROM true AS e FROM customers

-- q: c19b.expr.52
SELECT id, NOT active AS e FROM customers

-- q: c19b.expr.53
SELECT id, tier BETWEEN 1 AND 2 AS e FROM customers

-- q: c19b.expr.54
SELECT id, tier IS NULL AS e FROM customers

-- q: c19b.expr.55
SELECT id, code::text AS e FROM customers

-- q: c19b.expr.56
SELECT id, nick::text || '.' AS e FROM customers

-- q: c19b.expr.57
SELECT id, balance::float8 AS e FROM customers

-- q: c19b.expr.58
SELECT id, rating::numeric AS e FROM customers

-- q: c19b.expr.59
SELECT id, balance::numeric(20,1) AS e FROM customers

-- q: c19b.expr.60
SELECT id, session * 2 AS e FROM customers

-- q: c19b.expr.61
SELECT id, justify_interval(session) AS e FROM customers

-- q: c19b.expr.62
SELECT id, born::timestamp AS e FROM customers

-- q: c19b.expr.63
SELECT id, last_seen AT TIME ZONE 'UTC' AS e FROM customers

-- q: c19b.grpexpr.0
SELECT lower(country) AS g, count(*), sum(balance), max(name) FROM customers GROUP BY 1

-- q: c19b.grpexpr_ord.0 ordered
SELECT lower(country) AS g, count(*) AS n FROM customers GROUP BY 1 ORDER BY 1 NULLS LAST

-- q: c19b.grpexpr_cnt_ord.0 ordered
SELECT lower(country) AS g, count(*) AS n FROM customers GROUP BY 1 ORDER BY 2 DESC, 1 NULLS FIRST

-- q: c19b.grpexpr.1
SELECT tier IS NULL AS g, count(*), sum(balance), max(name) FROM customers GROUP BY 1

-- q: c19b.grpexpr_ord.1 ordered
SELECT tier IS NULL AS g, count(*) AS n FROM customers GROUP BY 1 ORDER BY 1 NULLS LAST

-- q: c19b.grpexpr_cnt_ord.1 ordered
SELECT tier IS NULL AS g, count(*) AS n FROM customers GROUP BY 1 ORDER BY 2 DESC, 1 NULLS FIRST

-- q: c19b.grpexpr.2
SELECT coalesce(tier, 0) AS g, count(*), sum(balance), max(name) FROM customers GROUP BY 1

-- q: c19b.grpexpr_ord.2 ordered
SELECT coalesce(tier, 0) AS g, count(*) AS n FROM customers GROUP BY 1 ORDER BY 1 NULLS LAST

-- q: c19b.grpexpr_cnt_ord.2 ordered
SELECT coalesce(tier, 0) AS g, count(*) AS n FROM customers GROUP BY 1 ORDER BY 2 DESC, 1 NULLS FIRST

-- q: c19b.grpexpr.3
SELECT date_trunc('year', born) AS g, count(*), sum(balance), max(name) FROM customers GROUP BY 1

-- q: c19b.grpexpr_ord.3 ordered
SELECT date_trunc('year', born) AS g, count(*) AS n FROM customers GROUP BY 1 ORDER BY 1 NULLS LAST

-- q: c19b.grpexpr_cnt_ord.3 ordered
SELECT date_trunc('year', born) AS g, count(*) AS n FROM customers GROUP BY 1 ORDER BY 2 DESC, 1 NULLS FIRST

-- q: c19b.grpexpr.4
SELECT active AS g, count(*), sum(balance), max(name) FROM customers GROUP BY 1

-- q: c19b.grpexpr_ord.4 ordered
SELECT active AS g, count(*) AS n FROM customers GROUP BY 1 ORDER BY 1 NULLS LAST

-- q: c19b.grpexpr_cnt_ord.4 ordered
SELECT active AS g, count(*) AS n FROM customers GROUP BY 1 ORDER BY 2 DESC, 1 NULLS FIRST

-- q: c19b.grpexpr.5
SELECT length(name) % 4 AS g, count(*), sum(balance), max(name) FROM customers GROUP BY 1

-- q: c19b.grpexpr_ord.5 ordered
SELECT length(name) % 4 AS g, count(*) AS n FROM customers GROUP BY 1 ORDER BY 1 NULLS LAST

-- q: c19b.grpexpr_cnt_ord.5 ordered
SELECT length(name) % 4 AS g, count(*) AS n FROM customers GROUP BY 1 ORDER BY 2 DESC, 1 NULLS FIRST

-- q: c19b.grpexpr.6
SELECT prefs->>'theme' AS g, count(*), sum(balance), max(name) FROM customers GROUP BY 1

-- q: c19b.grpexpr_ord.6 ordered
SELECT prefs->>'theme' AS g, count(*) AS n FROM customers GROUP BY 1 ORDER BY 1 NULLS LAST

-- q: c19b.grpexpr_cnt_ord.6 ordered
SELECT prefs->>'theme' AS g, count(*) AS n FROM customers GROUP BY 1 ORDER BY 2 DESC, 1 NULLS FIRST

-- q: c19b.grpexpr.7
SELECT cardinality(tags) AS g, count(*), sum(balance), max(name) FROM customers GROUP BY 1

-- q: c19b.grpexpr_ord.7 ordered
SELECT cardinality(tags) AS g, count(*) AS n FROM customers GROUP BY 1 ORDER BY 1 NULLS LAST

-- q: c19b.grpexpr_cnt_ord.7 ordered
SELECT cardinality(tags) AS g, count(*) AS n FROM customers GROUP BY 1 ORDER BY 2 DESC, 1 NULLS FIRST

-- q: c19b.grpexpr.8
SELECT round(balance, -2) AS g, count(*), sum(balance), max(name) FROM customers GROUP BY 1

-- q: c19b.grpexpr_ord.8 ordered
SELECT round(balance, -2) AS g, count(*) AS n FROM customers GROUP BY 1 ORDER BY 1 NULLS LAST

-- q: c19b.grpexpr_cnt_ord.8 ordered
SELECT round(balance, -2) AS g, count(*) AS n FROM customers GROUP BY 1 ORDER BY 2 DESC, 1 NULLS FIRST

-- q: c19b.grpexpr.9
SELECT nick IS NULL AS g, count(*), sum(balance), max(name) FROM customers GROUP BY 1

-- q: c19b.grpexpr_ord.9 ordered
SELECT nick IS NULL AS g, count(*) AS n FROM customers GROUP BY 1 ORDER BY 1 NULLS LAST

-- q: c19b.grpexpr_cnt_ord.9 ordered
SELECT nick IS NULL AS g, count(*) AS n FROM customers GROUP BY 1 ORDER BY 2 DESC, 1 NULLS FIRST

-- q: c19b.within.0
SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY total) FROM orders

-- q: c19b.within_grp.0
SELECT customer_id, percentile_cont(0.5) WITHIN GROUP (ORDER BY total) FROM orders GROUP BY customer_id

-- q: c19b.within.1
SELECT percentile_disc(0.25) WITHIN GROUP (ORDER BY qty) FROM orders

-- q: c19b.within_grp.1
SELECT customer_id, percentile_disc(0.25) WITHIN GROUP (ORDER BY qty) FROM orders GROUP BY customer_id

-- q: c19b.within.2
SELECT mode() WITHIN GROUP (ORDER BY status) FROM orders

-- q: c19b.within_grp.2
SELECT customer_id, mode() WITHIN GROUP (ORDER BY status) FROM orders GROUP BY customer_id

-- q: c19b.within.3
SELECT percentile_cont(ARRAY[0.1, 0.9]) WITHIN GROUP (ORDER BY total) FROM orders

-- q: c19b.within_grp.3
SELECT customer_id, percentile_cont(ARRAY[0.1, 0.9]) WITHIN GROUP (ORDER BY total) FROM orders GROUP BY customer_id

-- q: c19b.within.4
SELECT rank(100) WITHIN GROUP (ORDER BY total) FROM orders

-- q: c19b.within_grp.4
SELECT customer_id, rank(100) WITHIN GROUP (ORDER BY total) FROM orders GROUP BY customer_id

-- q: c19b.stat.0
SELECT stddev(total) FROM orders

-- q: c19b.stat_grp.0
SELECT status, stddev(total) FROM orders GROUP BY status

-- q: c19b.stat.1
SELECT variance(total) FROM orders

-- q: c19b.stat_grp.1
SELECT status, variance(total) FROM orders GROUP BY status

-- q: c19b.stat.2
SELECT stddev_pop(qty) FROM orders

-- q: c19b.stat_grp.2
SELECT status, stddev_pop(qty) FROM orders GROUP BY status

-- q: c19b.stat.3
SELECT var_samp(qty) FROM orders

-- q: c19b.stat_grp.3
SELECT status, var_samp(qty) FROM orders GROUP BY status

-- q: c19b.stat.4
SELECT round(corr(qty, total)::numeric, 8) FROM orders

-- q: c19b.stat_grp.4
SELECT status, round(corr(qty, total)::numeric, 8) FROM orders GROUP BY status

-- q: c19b.stat.5
SELECT round(regr_slope(total, qty)::numeric, 6) FROM orders

-- q: c19b.stat_grp.5
SELECT status, round(regr_slope(total, qty)::numeric, 6) FROM orders GROUP BY status

-- q: c19b.stat.6
SELECT round(covar_pop(qty, total)::numeric, 4) FROM orders

-- q: c19b.stat_grp.6
SELECT status, round(covar_pop(qty, total)::numeric, 4) FROM orders GROUP BY status

-- q: c19b.stat.7
SELECT bit_and(qty) FROM orders

-- q: c19b.stat_grp.7
SELECT status, bit_and(qty) FROM orders GROUP BY status

-- q: c19b.stat.8
SELECT bit_or(qty) FROM orders

-- q: c19b.stat_grp.8
SELECT status, bit_or(qty) FROM orders GROUP BY status

-- q: c19b.stat.9
SELECT json_agg(id ORDER BY id) FROM orders

-- q: c19b.stat_grp.9
SELECT status, json_agg(id ORDER BY id) FROM orders GROUP BY status

-- q: c19b.stat.10
SELECT jsonb_object_agg(id, status ORDER BY id) FROM orders

-- q: c19b.stat_grp.10
SELECT status, jsonb_object_agg(id, status ORDER BY id) FROM orders GROUP BY status

-- q: c19b.cte.0
WITH t AS (SELECT customer_id, sum(total) s FROM orders GROUP BY 1) SELECT * FROM t WHERE s > 50

-- q: c19b.cte.1
WITH t AS (SELECT * FROM customers WHERE tier = 1) SELECT count(*) FROM t

-- q: c19b.cte.2
WITH t AS MATERIALIZED (SELECT id FROM customers) SELECT count(*) FROM t JOIN orders o ON o.customer_id = t.id

-- q: c19b.cte.3
WITH a AS (SELECT status, count(*) n FROM orders GROUP BY 1), b AS (SELECT max(n) m FROM a) SELECT a.status FROM a, b WHERE a.n = b.m

-- q: c19b.cte.4
WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 10) SELECT n, (SELECT count(*) FROM orders WHERE qty = n) FROM r

-- q: c19b.cte.5
WITH t AS (SELECT id, row_number() OVER (ORDER BY balance DESC NULLS LAST, id) rn FROM customers) SELECT id FROM t WHERE rn <= 5

-- q: c19b.param.0 args=7
SELECT id, name FROM customers WHERE id = $1

-- q: c19b.param.1 args=2
SELECT id FROM customers WHERE tier = $1

-- q: c19b.param.2 args=NULL
SELECT id FROM customers WHERE tier = $1::int

-- q: c19b.param.3 args=A%
SELECT id FROM customers WHERE name LIKE $1

-- q: c19b.param.4 args={1;2;3;42}
SELECT id FROM customers WHERE id = ANY ($1::bigint[])

-- q: c19b.param.5 ordered args=4
SELECT id FROM customers ORDER BY id LIMIT $1

-- q: c19b.param.6 ordered args=3,2
SELECT id FROM customers ORDER BY id LIMIT $1 OFFSET $2

-- q: c19b.param.7 args=10
SELECT $1::int + id FROM customers WHERE id = 1

-- q: c19b.param.8 args=20.5
SELECT status, count(*) FROM orders WHERE total > $1::numeric GROUP BY status

-- q: c19b.param.9 args=2000-01-01
SELECT id FROM customers WHERE born > $1::date

-- q: c19b.param.10 args=1
SELECT id FROM customers WHERE coalesce(tier, $1::smallint) = 1

-- q: c19b.param.11 args=1,shipped
SELECT id FROM orders WHERE customer_id = $1 AND status = $2

-- q: c19b.param.12 args=1,2,3
SELECT count(*) FROM orders WHERE customer_id IN ($1, $2, $3)

-- q: c19b.param.13 args=hi,2
SELECT id, $1::text AS t FROM customers WHERE id = $2

-- q: c19b.param.14 args=true
SELECT id FROM customers WHERE $1::boolean AND active

-- q: c19b.param.15 args=5
SELECT CASE WHEN $1::int > 0 THEN 'p' ELSE 'n' END, id FROM customers WHERE id = 3

-- q: c19b.param.16 args=100
SELECT customer_id, sum(total) FROM orders GROUP BY customer_id HAVING sum(total) > $1

-- q: c19b.param.17 ordered args=5,3
SELECT id FROM customers WHERE id > $1 ORDER BY id FETCH FIRST $2 ROWS ONLY

-- q: c19b.param.18 args=dark
SELECT id FROM customers WHERE prefs->>'theme' = $1

-- q: c19b.param.19 args=x
SELECT id FROM customers WHERE $1 = ANY (tags)

-- q: c19b.cat.0 ordered
SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_name <> 'tickets_by_code' ORDER BY 1

-- q: c19b.cat.1 ordered
SELECT column_name, data_type, is_nullable, ordinal_position FROM information_schema.columns WHERE table_name = 'orders' ORDER BY ordinal_position

-- q: c19b.cat.2 ordered
SELECT c.relname, c.relkind FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relkind = 'r' AND c.relname <> 'tickets_by_code' ORDER BY 1

-- q: c19b.cat.3 ordered
SELECT a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull FROM pg_attribute a WHERE a.attrelid = 'customers'::regclass AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum

-- q: c19b.cat.4 ordered
SELECT conname, contype FROM pg_constraint WHERE conrelid = 'orders'::regclass ORDER BY 1

-- q: c19b.cat.5 ordered
SELECT indexname FROM pg_indexes WHERE tablename = 'orders' ORDER BY 1

-- q: c19b.cat.6
SELECT count(*) FROM pg_type WHERE typname = 'int4'

-- q: c19b.cat.7
SELECT current_schema()


-- ===================================================================
-- ORM and driver shapes (issue 19, plan19): SQLAlchemy's anon_1 derived
-- tables, IN (VALUES ...), = ANY($1) arrays, LATERAL, DISTINCT ON, row
-- locks, json/jsonb operators, generate_series joins and casts.
-- ===================================================================

-- q: orm19.anon_count ordered
SELECT count(*) AS count_1 FROM (SELECT orders.id AS orders_id, orders.total AS orders_total FROM orders WHERE orders.status = 'paid') AS anon_1

-- q: orm19.anon_pinned_ordered ordered
SELECT anon_1.orders_id, anon_1.orders_total FROM (SELECT orders.id AS orders_id, orders.total AS orders_total FROM orders WHERE orders.customer_id = 42) AS anon_1 ORDER BY anon_1.orders_id

-- q: orm19.anon_limit_offset ordered
SELECT anon_1.customers_id, anon_1.customers_name FROM (SELECT customers.id AS customers_id, customers.name AS customers_name FROM customers WHERE customers.tier = 3 ORDER BY customers.id LIMIT 5 OFFSET 2) AS anon_1 ORDER BY anon_1.customers_id

-- q: orm19.anon_group ordered
SELECT anon_1.status, anon_1.n FROM (SELECT orders.status AS status, count(*) AS n FROM orders GROUP BY orders.status) AS anon_1 ORDER BY anon_1.status

-- q: orm19.anon_joined_eager
SELECT anon_1.customers_id, items_1.sku, items_1.qty FROM (SELECT customers.id AS customers_id FROM customers WHERE customers.id IN (1, 2, 3, 9) ORDER BY customers.id LIMIT 3) AS anon_1 LEFT OUTER JOIN items AS items_1 ON anon_1.customers_id = items_1.customer_id

-- q: orm19.in_values
SELECT id, name FROM customers WHERE id IN (VALUES (1::bigint), (2), (9), (100))

-- q: orm19.in_values_tuples
SELECT customer_id, id, total FROM orders WHERE (customer_id, status) IN (VALUES (42::bigint, 'paid'), (9, 'shipped'))

-- q: orm19.join_values
SELECT o.id, v.label FROM orders o JOIN (VALUES (42::bigint, 'forty-two'), (7, 'seven')) AS v(cid, label) ON o.customer_id = v.cid

-- q: orm19.any_param_bigint ordered args={1;3;42;100}
SELECT id, name FROM customers WHERE id = ANY($1::bigint[]) ORDER BY id

-- q: orm19.any_param_text args={paid;shipped}
SELECT id, status FROM orders WHERE customer_id = 42 AND status = ANY($1::text[])

-- q: orm19.any_param_scatter args={paid;pending}
SELECT status, count(*) FROM orders WHERE status = ANY($1::text[]) GROUP BY status

-- q: orm19.not_all_param args={1;2;3}
SELECT count(*) FROM customers WHERE id <> ALL($1::bigint[])

-- q: orm19.lateral_pinned ordered
SELECT c.id, l.id AS order_id, l.total FROM customers c CROSS JOIN LATERAL (SELECT o.id, o.total FROM orders o WHERE o.customer_id = c.id ORDER BY o.total DESC, o.id LIMIT 2) l WHERE c.id = 42 ORDER BY l.total DESC, l.id

-- q: orm19.lateral_scatter
SELECT c.id, l.n FROM customers c LEFT JOIN LATERAL (SELECT count(*) AS n FROM items i WHERE i.customer_id = c.id) l ON true WHERE c.tier = 2

-- q: orm19.lateral_generate_series
SELECT c.id, g.k FROM customers c CROSS JOIN LATERAL generate_series(1, coalesce(c.tier, 0)) AS g(k) WHERE c.id IN (1, 2, 3)

-- q: orm19.distinct_on_latest keys=1
SELECT DISTINCT ON (customer_id) customer_id, id, placed_at FROM orders WHERE customer_id IN (1, 2, 3, 9, 42) ORDER BY customer_id, placed_at DESC, id DESC

-- q: orm19.distinct_on_scatter keys=1
SELECT DISTINCT ON (status) status, id, total FROM orders ORDER BY status, total DESC, id

-- q: orm19.distinct_on_expression keys=1
SELECT DISTINCT ON (lower(name)) lower(name) AS k, id FROM customers WHERE tier = 1 ORDER BY lower(name), id

-- q: orm19.for_update_pinned ordered
SELECT id, total FROM orders WHERE customer_id = 42 ORDER BY id FOR UPDATE

-- q: orm19.for_update_skip_locked ordered
SELECT id FROM orders WHERE customer_id = 9 ORDER BY id LIMIT 3 FOR UPDATE SKIP LOCKED

-- q: orm19.for_no_key_update_nowait ordered
SELECT id, name FROM customers WHERE id = 7 FOR NO KEY UPDATE NOWAIT

-- q: orm19.for_share_of ordered
SELECT o.id, c.name FROM orders o JOIN customers c ON c.id = o.customer_id WHERE o.customer_id = 42 ORDER BY o.id FOR SHARE OF o

-- q: orm19.jsonb_arrow
SELECT id, prefs -> 'theme' AS theme, prefs ->> 'n' AS n FROM customers WHERE prefs IS NOT NULL AND tier = 3

-- q: orm19.jsonb_contains
SELECT id FROM customers WHERE prefs @> '{"beta": true}'

-- q: orm19.jsonb_key_exists
SELECT count(*) FROM customers WHERE prefs ? 'theme'

-- q: orm19.jsonb_path
SELECT sku, attrs #>> '{tags,1}' AS t, (attrs -> 'size')::int AS size FROM products WHERE attrs IS NOT NULL AND (attrs ->> 'size')::int > 2

-- q: orm19.jsonb_group ordered
SELECT prefs ->> 'theme' AS theme, count(*) FROM customers WHERE prefs IS NOT NULL GROUP BY 1 ORDER BY 1

-- q: orm19.jsonb_agg_pinned ordered
SELECT jsonb_agg(id ORDER BY id) FROM orders WHERE customer_id = 42

-- q: orm19.jsonb_build_object ordered
SELECT jsonb_build_object('id', id, 'total', total) AS o FROM orders WHERE customer_id = 9 ORDER BY id

-- q: orm19.json_each
SELECT c.id, e.key, e.value FROM customers c, jsonb_each_text(c.prefs) e WHERE c.id IN (1, 2, 3, 9, 42, 100)

-- q: orm19.generate_series_join
SELECT g.d::date AS day, count(o.id) FROM generate_series('2024-01-01'::timestamptz, '2024-01-10', '1 day') AS g(d) LEFT JOIN orders o ON o.placed_at >= g.d AND o.placed_at < g.d + interval '1 day' GROUP BY 1

-- q: orm19.generate_series_keys
SELECT g.k, c.name FROM generate_series(1, 10) AS g(k) JOIN customers c ON c.id = g.k

-- q: orm19.generate_series_count ordered
SELECT count(*) FROM generate_series(1, 5) g CROSS JOIN customers c WHERE c.id = 42

-- q: orm19.casts_numeric ordered
SELECT id, total::float8 AS f, total::int AS i, total::text AS t, total::numeric(10,1) AS n FROM orders WHERE customer_id = 42 ORDER BY id

-- q: orm19.casts_time ordered
SELECT id, placed_at::date AS d, placed_at::timestamp AS ts, to_char(placed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI') AS c FROM orders WHERE customer_id = 9 ORDER BY id

-- q: orm19.casts_misc
SELECT id, ext_id::text AS u, active::int AS a, tier::text AS t, born::text AS b, session::text AS s, tags::text AS g FROM customers WHERE id IN (1, 2, 3, 7, 9, 42, 100)

-- q: orm19.casts_scatter_aggregate ordered
SELECT sum(total::int) AS s, max(total::float8) AS m, count(DISTINCT status::varchar(4)) AS d FROM orders

-- q: orm19.cast_param_types ordered args=42,2024-01-01,paid
SELECT count(*) FROM orders WHERE customer_id = $1::int8 AND placed_at >= $2::date AND status = $3::varchar

-- q: orm19.exists_correlated
SELECT c.id FROM customers c WHERE c.tier = 4 AND EXISTS (SELECT 1 FROM orders o WHERE o.customer_id = c.id AND o.status = 'paid')

-- q: orm19.count_over_window ordered
SELECT id, count(*) OVER () AS full_count FROM orders WHERE customer_id = 42 ORDER BY id LIMIT 3

-- q: orm19.coalesce_sum_scatter ordered
SELECT coalesce(sum(qty), 0) AS q FROM items WHERE sku = 'no such sku'

-- q: orm19.case_aggregate ordered
SELECT sum(CASE WHEN status = 'paid' THEN 1 ELSE 0 END) AS paid, count(*) FILTER (WHERE status <> 'paid') AS other FROM orders

-- q: orm19.upsert_setup write
INSERT INTO orders (id, customer_id, status, total, placed_at) VALUES (901001, 42, 'pending', 10, '2024-08-01 00:00:00+00'), (901002, 9, 'pending', 20, '2024-08-01 00:00:00+00')

-- q: orm19.upsert_where write
INSERT INTO orders (id, customer_id, status, total, placed_at) VALUES (901001, 42, 'paid', 15, '2024-08-02 00:00:00+00'), (901002, 9, 'paid', 5, '2024-08-02 00:00:00+00')
ON CONFLICT (customer_id, id) DO UPDATE SET total = EXCLUDED.total, status = EXCLUDED.status WHERE orders.total < EXCLUDED.total
RETURNING id, total, status, total * 2 AS doubled, upper(status) || '!' AS shout

-- q: orm19.upsert_nothing_returning write
INSERT INTO orders (id, customer_id, status, total, placed_at) VALUES (901001, 42, 'x', 1, '2024-08-03 00:00:00+00') ON CONFLICT DO NOTHING RETURNING id

-- q: orm19.update_returning_expressions write
UPDATE orders SET total = total + 1 WHERE id IN (901001, 901002) AND customer_id IN (42, 9) RETURNING id, total, total - 1 AS before, (total > 10) AS big, coalesce(note, 'none') AS note

-- q: orm19.delete_returning write
DELETE FROM orders WHERE id IN (901001, 901002) AND customer_id IN (42, 9) RETURNING customer_id, id, status

-- q: orm19.after_upsert
SELECT count(*) FROM orders WHERE id IN (901001, 901002)
