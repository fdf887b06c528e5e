# Run by TestPsycopg3 (internal/drivertest): psycopg 3 through the proxy.
#   python3 psycopg3_check.py DSN ROWS STEP
# orders holds ids 1..ROWS over four shards (customer_id = id % 50 + 1,
# amount = (id % 997).(id % 100)). STEP checks what it reads and prints one
# line "STEP key=value ..."; any failure raises (exit status 1, the
# traceback on stderr). A step that has not ended after STEP_TIMEOUT
# seconds raises too, so a session that never answers fails the step
# instead of hanging it.
import signal
import sys
from decimal import Decimal

import psycopg

STEP_TIMEOUT = 60

dsn, rows, step = sys.argv[1], int(sys.argv[2]), sys.argv[3]


def timed_out(signum, frame):
    raise TimeoutError(f"{step}: no answer from the proxy within {STEP_TIMEOUT} s")


signal.signal(signal.SIGALRM, timed_out)
signal.alarm(STEP_TIMEOUT)

conn = psycopg.connect(dsn, connect_timeout=10)


def amount(i):
    return Decimal(f"{i % 997}.{i % 100:02d}")


def read_ordered(name, batches, key, want_ids):
    """Checks rows (from an iterator of batches) come in key order, each id once, and are want_ids."""
    n, last, seen = 0, None, set()
    for batch in batches:
        for row in batch:
            k = key(row)
            if last is not None and k < last:
                raise AssertionError(f"{name}: row {n + 1}: {row} after {last}")
            if row[0] in seen:
                raise AssertionError(f"{name}: id {row[0]} twice")
            if row[-1] != amount(row[0]):
                raise AssertionError(f"{name}: id {row[0]}: amount {row[-1]}")
            seen.add(row[0])
            last = k
            n += 1
    if seen != want_ids:
        raise AssertionError(f"{name}: {n} rows, want {len(want_ids)} (missing {sorted(want_ids - seen)[:5]})")
    return n


def fetched(cur, size):
    """The batches fetchmany(size) returns, until the cursor is read."""
    while True:
        batch = cur.fetchmany(size)
        if not batch:
            return
        yield batch


def named(where, params, keep):
    """Two named (server-side) cursors over orders WHERE where (keep: the
    same on an id): one iterated in id order, one read with fetchmany in
    amount order, descending."""
    want = {i for i in range(1, rows + 1) if keep(i)}
    cur = conn.cursor(name="c1")
    cur.itersize = 70
    cur.execute(f"SELECT id, customer_id, amount FROM orders WHERE {where} ORDER BY id", params)
    a = read_ordered("c1", ([r] for r in cur), lambda r: r[0], want)
    cur.close()
    conn.commit()
    cur = conn.cursor(name="c2")
    cur.execute(f"SELECT id, amount FROM orders WHERE {where} ORDER BY amount DESC, id", params)
    b = read_ordered("c2", fetched(cur, 33), lambda r: (-r[1], r[0]), want)
    cur.close()
    conn.commit()
    return f"rows={a},{b}"


def named_one_shard():
    return named("customer_id = %s", (7,), lambda i: i % 50 + 1 == 7)


def named_scatter():
    return named("amount >= %s", (Decimal(100),), lambda i: amount(i) >= 100)


def pipeline():
    """Several statements and an executemany in one pipeline, in one
    transaction: rows on several shards written, then read back."""
    cur, agg, point = conn.cursor(), conn.cursor(), conn.cursor()
    with conn.pipeline():
        cur.execute("INSERT INTO orders (id, customer_id, amount) VALUES (%s, %s, %s)", (rows + 1, 1, Decimal("1.25")))
        cur.execute("UPDATE orders SET note = %s WHERE customer_id = %s AND id = %s", ("piped", 1, rows + 1))
        cur.executemany(
            "INSERT INTO orders (id, customer_id, amount, note) VALUES (%s, %s, %s, %s)",
            [(rows + 1 + i, i % 50 + 1, Decimal(f"{i}.50"), "piped") for i in range(1, 100)],
        )
        agg.execute("SELECT count(*), sum(amount), count(DISTINCT customer_id) FROM orders WHERE note = %s", ("piped",))
        point.execute("SELECT id, note FROM orders WHERE customer_id = %s AND id = %s", (1, rows + 1))
    count, total, customers = agg.fetchone()
    got = point.fetchall()
    if got != [(rows + 1, "piped")]:
        raise AssertionError(f"pipeline: point read {got}")
    conn.commit()
    with conn.pipeline():
        cur.execute("DELETE FROM orders WHERE id > %s", (rows,))
        agg.execute("SELECT count(*) FROM orders")
    deleted = cur.rowcount
    left = agg.fetchone()[0]
    conn.commit()
    return f"count={count} sum={total} customers={customers} deleted={deleted} left={left}"


def pipeline_error():
    """A pipeline outside a transaction block (autocommit) is one implicit
    transaction: the duplicate key rolls back the insert before it and
    skips those after it, on every shard."""
    conn.autocommit = True
    cur = conn.cursor()
    err = None
    try:
        with conn.pipeline():
            for i, cid in ((1, 1), (2, 2), (3, 3)):
                cur.execute("INSERT INTO orders (id, customer_id, amount) VALUES (%s, %s, 1)", (rows + i, cid))
            cur.execute("INSERT INTO orders (id, customer_id, amount) VALUES (%s, %s, 1)", (rows + 1, 1))
            for i in range(4, 10):
                cur.execute("INSERT INTO orders (id, customer_id, amount) VALUES (%s, %s, 1)", (rows + i, i))
    except psycopg.errors.UniqueViolation as e:
        err = type(e).__name__
    left = conn.execute("SELECT count(*) FROM orders WHERE id > %s", (rows,)).fetchone()[0]
    conn.execute("DELETE FROM orders WHERE id > %s", (rows,))
    return f"error={err} left={left}"


def copy():
    """COPY FROM STDIN with write_row, then COPY TO STDOUT merged in order,
    as text and as binary."""
    cur = conn.cursor()
    with cur.copy("COPY orders (id, customer_id, amount) FROM STDIN") as cp:
        for i in range(1, 201):
            cp.write_row((rows + i, i % 50 + 1, amount(rows + i)))
    conn.commit()
    want = [(rows + i, amount(rows + i)) for i in range(1, 201)]
    with cur.copy(f"COPY (SELECT id, amount FROM orders WHERE id > {rows} ORDER BY id) TO STDOUT") as cp:
        text = [(int(r[0]), Decimal(r[1])) for r in cp.rows()]
    if text != want:
        raise AssertionError(f"copy out: {len(text)} rows, first {text[:3]}")
    with cur.copy(f"COPY (SELECT id, amount FROM orders WHERE id > {rows} ORDER BY id) TO STDOUT (FORMAT BINARY)") as cp:
        cp.set_types(["int8", "numeric"])
        binary = list(cp.rows())
    if binary != want:
        raise AssertionError(f"copy out binary: {len(binary)} rows, first {binary[:3]}")
    conn.commit()
    cur.execute("DELETE FROM orders WHERE id > %s", (rows,))
    deleted = cur.rowcount
    conn.commit()
    return f"in=200 out={len(text)} binary={len(binary)} deleted={deleted}"


def plain():
    """Ordinary cursors: a point read run past prepare_threshold (psycopg
    then prepares it on the server), a scatter aggregate as text and with
    binary results."""
    cur = conn.cursor()
    points = 0
    for i in range(1, 13):
        oid = i * 11
        cur.execute("SELECT id, amount FROM orders WHERE customer_id = %s AND id = %s", (oid % 50 + 1, oid))
        if cur.fetchall() != [(oid, amount(oid))]:
            raise AssertionError(f"plain: point read of {oid}")
        points += 1
    cur.execute("SELECT count(*), sum(id), min(amount), max(amount) FROM orders")
    c, s, lo, hi = cur.fetchone()
    bcur = conn.cursor(binary=True)
    bcur.execute("SELECT count(*), sum(id), min(amount), max(amount) FROM orders WHERE customer_id = ANY(%s)", ([1, 2, 3],))
    bc, bs, blo, bhi = bcur.fetchone()
    ids = [i for i in range(1, rows + 1) if i % 50 + 1 in (1, 2, 3)]
    if (bc, bs, blo, bhi) != (len(ids), sum(ids), min(map(amount, ids)), max(map(amount, ids))):
        raise AssertionError(f"plain: binary aggregate {(bc, bs, blo, bhi)}")
    conn.commit()
    return f"count={c} sum={s} min={lo} max={hi} point={points} binary={bc}"


steps = {f.__name__: f for f in (named_one_shard, named_scatter, pipeline, pipeline_error, copy, plain)}
print(step, steps[step]())
conn.close()
