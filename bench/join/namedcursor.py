# Streams SELECT id, customer_id, amount FROM orders ORDER BY id through the
# proxy with a psycopg2 named (server-side) cursor: DECLARE ... CURSOR,
# then FETCH FORWARD 1000 at a time over the merge of the shards. Checks
# the rows come complete and in order. Run by bench/join:
#   python3 namedcursor.py DSN ROWS
import sys
import time

import psycopg2

dsn, want = sys.argv[1], int(sys.argv[2])
conn = psycopg2.connect(dsn)
cur = conn.cursor(name="orders_by_id")
cur.itersize = 1000
t0 = time.time()
cur.execute("SELECT id, customer_id, amount FROM orders ORDER BY id")
n, last = 0, 0
for row in cur:
    if row[0] != last + 1:
        raise SystemExit(f"row {n + 1}: id {row[0]} after {last}")
    last = row[0]
    n += 1
cur.close()
conn.commit()
conn.close()
if n != want:
    raise SystemExit(f"{n} rows, want {want}")
print(f"rows={n} seconds={time.time() - t0:.2f}")
