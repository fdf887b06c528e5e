# Run by TestPsycopg2 (internal/drivertest): psycopg2 through the proxy.
#   python3 psycopg2_check.py DSN ROWS
# orders holds ids 1..ROWS over four shards. Each step checks what it
# reads and prints one line "step key=value ..."; any failure raises
# (exit status 1, the traceback on stderr).
import sys

import psycopg2

dsn, rows = sys.argv[1], int(sys.argv[2])
conn = psycopg2.connect(dsn)


def check_ordered(name, cur, key, desc=False):
    """Reads a named cursor to its end, checking every id comes once and in order."""
    n, last, seen = 0, None, set()
    for row in cur:
        k = key(row)
        if last is not None and ((k > last) if desc else (k < last)):
            raise AssertionError(f"{name}: row {n + 1}: {k} after {last}")
        if row[0] in seen:
            raise AssertionError(f"{name}: id {row[0]} twice")
        seen.add(row[0])
        last = k
        n += 1
    return n, seen


# 1. A named cursor (DECLARE ... CURSOR + FETCH FORWARD itersize) over the
# merge of the four shards, ORDER BY the id.
cur = conn.cursor(name="by_id")
cur.itersize = 700
cur.execute("SELECT id, customer_id, amount FROM orders ORDER BY id")
n, seen = check_ordered("by_id", cur, lambda r: r[0])
cur.close()
conn.commit()
if seen != set(range(1, rows + 1)):
    raise AssertionError(f"by_id: {n} rows, want ids 1..{rows}")
print(f"named rows={n}")

# 2. Ordered by a column that is not the key, descending, with a bound
# parameter, fetched with fetchmany.
cur = conn.cursor(name="by_amount")
cur.execute("SELECT id, amount FROM orders WHERE amount >= %s ORDER BY amount DESC, id", (50,))
n, last = 0, None
while True:
    batch = cur.fetchmany(333)
    if not batch:
        break
    for row in batch:
        k = (-row[1], row[0])
        if last is not None and k < last:
            raise AssertionError(f"by_amount: {row} after {last}")
        last = k
        n += 1
cur.close()
conn.commit()
print(f"named_desc rows={n}")

# 3. A named cursor WITH HOLD (runs on the coordinator) read after COMMIT,
# and a scrollable one moved backwards.
cur = conn.cursor(name="held", withhold=True)
cur.itersize = 250
cur.execute("SELECT id FROM orders WHERE id <= 1000 ORDER BY id")
conn.commit()
n, _ = check_ordered("held", cur, lambda r: r[0])
cur.close()
print(f"withhold rows={n}")
cur = conn.cursor(name="scroll", scrollable=True)
cur.execute("SELECT id FROM orders WHERE id <= 100 ORDER BY id")
first = cur.fetchmany(10)
cur.scroll(-5)
again = cur.fetchone()
cur.scroll(0, mode="absolute")
top = cur.fetchone()
cur.close()
conn.commit()
print(f"scroll first={first[0][0]},{first[-1][0]} after_back={again[0]} absolute={top[0]}")

# 4. The ordinary cursor: a scatter aggregate, and a point read with a
# parameter (psycopg2 interpolates it on the client).
cur = conn.cursor()
cur.execute("SELECT count(*), sum(id), min(amount), max(amount) FROM orders")
c, s, lo, hi = cur.fetchone()
cur.execute("SELECT id, customer_id FROM orders WHERE customer_id = %s AND id = %s", (rows % 50 + 1, rows))
point = cur.fetchall()
conn.commit()
print(f"plain count={c} sum={s} min={lo} max={hi} point={len(point)}")

# 5. executemany: one INSERT per row, routed by each row's customer_id.
extra = [(rows + i, i % 50 + 1, f"{i}.25") for i in range(1, 101)]
cur.executemany("INSERT INTO orders (id, customer_id, amount) VALUES (%s, %s, %s)", extra)
conn.commit()
cur.execute("SELECT count(*), sum(amount) FROM orders WHERE id > %s", (rows,))
c, s = cur.fetchone()
print(f"executemany count={c} sum={s}")

# 6. copy_expert: COPY FROM STDIN routed per row, then COPY (... ORDER BY)
# TO STDOUT merged across the shards.
import io

data = "".join(f"{rows + 100 + i}\t{i % 50 + 1}\t{i}.50\n" for i in range(1, 201))
cur.copy_expert("COPY orders (id, customer_id, amount) FROM STDIN", io.StringIO(data))
conn.commit()
out = io.StringIO()
cur.copy_expert(f"COPY (SELECT id, amount FROM orders WHERE id > {rows} ORDER BY id) TO STDOUT", out)
conn.commit()
lines = out.getvalue().splitlines()
ids = [int(line.split("\t")[0]) for line in lines]
if ids != list(range(rows + 1, rows + 301)):
    raise AssertionError(f"copy out: {len(ids)} ids, first {ids[:3]}")
print(f"copy rows={len(lines)}")
conn.close()
