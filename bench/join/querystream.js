// Streams SELECT id FROM orders ORDER BY id through the proxy with node's
// pg-query-stream (pg-cursor: Execute with a row limit, 100 rows at a
// time) and checks the rows come complete and in order. Run by bench/join
// with -node-modules DIR (a directory holding pg and pg-query-stream):
//   NODE_PATH=DIR node querystream.js DSN ROWS
const { Client } = require('pg');
const QueryStream = require('pg-query-stream');

async function main() {
  const [dsn, want] = [process.argv[2], Number(process.argv[3])];
  const client = new Client({ connectionString: dsn });
  await client.connect();
  const stream = client.query(new QueryStream('SELECT id, customer_id, amount FROM orders ORDER BY id', [], { batchSize: 100 }));
  let n = 0, last = 0;
  const t0 = Date.now();
  for await (const row of stream) {
    const id = Number(row.id);
    if (id !== last + 1) throw new Error(`row ${n + 1}: id ${id} after ${last}`);
    last = id;
    n++;
  }
  await client.end();
  if (n !== want) throw new Error(`${n} rows, want ${want}`);
  console.log(`rows=${n} seconds=${((Date.now() - t0) / 1000).toFixed(2)}`);
}
main().catch((e) => { console.error(e.message); process.exit(1); });
