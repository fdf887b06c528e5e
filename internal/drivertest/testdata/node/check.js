// Run by TestNodePostgres (internal/drivertest): node-postgres, pg-cursor
// and pg-query-stream through the proxy.
//   node check.js DSN ROWS STEP
// orders holds ids 1..ROWS over four shards (customer_id = id % 50 + 1,
// amount = (id % 997).(id % 100)). STEP checks what it reads and prints one
// line "STEP key=value ..."; any failure exits with status 1 and the error
// on stderr. A step that has not ended after STEP_TIMEOUT ms exits too, so
// a session that never answers fails the step instead of hanging it.
'use strict';

const { Client } = require('pg');
const Cursor = require('pg-cursor');
const QueryStream = require('pg-query-stream');

const STEP_TIMEOUT = 60000;
const [dsn, rowsArg, step] = process.argv.slice(2);
const rows = Number(rowsArg);

setTimeout(() => {
  console.error(`${step}: no answer from the proxy within ${STEP_TIMEOUT / 1000} s`);
  process.exit(1);
}, STEP_TIMEOUT).unref();

function amount(id) {
  return `${id % 997}.${String(id % 100).padStart(2, '0')}`;
}

// Checker takes the rows of "SELECT id, amount FROM orders" in whatever
// batches they come: each id once, its amount right, in id order when
// ordered; done() checks every id 1..rows came.
class Checker {
  constructor(name, ordered) {
    Object.assign(this, { name, ordered, seen: new Set(), last: 0 });
  }

  add(row) {
    const id = Number(row.id);
    if (this.ordered && id <= this.last) {
      throw new Error(`${this.name}: id ${id} after ${this.last}`);
    }
    if (this.seen.has(id)) {
      throw new Error(`${this.name}: id ${id} twice`);
    }
    if (row.amount !== amount(id)) {
      throw new Error(`${this.name}: id ${id}: amount ${row.amount}`);
    }
    this.seen.add(id);
    this.last = id;
  }

  done() {
    for (let id = 1; id <= rows; id++) {
      if (!this.seen.has(id)) {
        throw new Error(`${this.name}: ${this.seen.size} rows, id ${id} missing`);
      }
    }
    if (this.seen.size !== rows) {
      throw new Error(`${this.name}: ${this.seen.size} rows, want ${rows}`);
    }
    return `rows=${this.seen.size}`;
  }
}

function select(ordered) {
  return 'SELECT id, amount FROM orders' + (ordered ? ' ORDER BY id' : '');
}

// readCursor reads a pg-cursor 100 rows at a time (Execute(100) on one
// portal, until it is drained).
async function readCursor(client, ordered) {
  const check = new Checker('cursor', ordered);
  const cursor = client.query(new Cursor(select(ordered)));
  let reads = 0;
  for (;;) {
    const batch = await cursor.read(100);
    reads++;
    if (batch.length > 100) {
      throw new Error(`cursor: read(100) returned ${batch.length} rows`);
    }
    if (batch.length === 0) {
      break;
    }
    batch.forEach((row) => check.add(row));
  }
  await cursor.close();
  if (reads < rows / 100) {
    throw new Error(`cursor: ${reads} reads for ${rows} rows`);
  }
  return check.done();
}

// readStream reads a pg-query-stream (a pg-cursor underneath, 100 rows a
// batch) to its end.
async function readStream(client, ordered) {
  const check = new Checker('stream', ordered);
  const stream = client.query(new QueryStream(select(ordered), [], { batchSize: 100 }));
  for await (const row of stream) {
    check.add(row);
  }
  return check.done();
}

// plain runs parameterized queries: a named prepared statement 12 times
// (prepared once on the server), an unnamed one, a scatter aggregate.
async function plain(client) {
  let points = 0;
  for (let i = 1; i <= 12; i++) {
    const id = i * 13;
    const r = await client.query({
      name: 'point',
      text: 'SELECT id, amount FROM orders WHERE customer_id = $1 AND id = $2',
      values: [id % 50 + 1, id],
    });
    if (r.rows.length !== 1 || Number(r.rows[0].id) !== id || r.rows[0].amount !== amount(id)) {
      throw new Error(`plain: point read of ${id}: ${JSON.stringify(r.rows)}`);
    }
    points++;
  }
  const many = await client.query('SELECT count(*) AS n FROM orders WHERE customer_id = ANY($1)', [[1, 2, 3]]);
  const agg = await client.query('SELECT count(*) AS c, sum(id) AS s, min(amount) AS lo, max(amount) AS hi FROM orders');
  const { c, s, lo, hi } = agg.rows[0];
  return `count=${c} sum=${s} min=${lo} max=${hi} point=${points} any=${many.rows[0].n}`;
}

const steps = {
  cursor_ordered: (client) => readCursor(client, true),
  cursor_unordered: (client) => readCursor(client, false),
  stream_ordered: (client) => readStream(client, true),
  stream_unordered: (client) => readStream(client, false),
  plain,
};

async function main() {
  const client = new Client({ connectionString: dsn, connectionTimeoutMillis: 10000 });
  await client.connect();
  try {
    console.log(`${step} ${await steps[step](client)}`);
  } finally {
    await client.end();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
