package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/shardgate/shardgate/keyexpr"
	"github.com/shardgate/shardgate/topology"
	"github.com/shardgate/shardgate/vschema"
)

// The data set: an orders-like table. Every row is a pure function of
// (table seed, row number), so the single baseline and the shards hold
// exactly the same rows without any of them being stored in the harness.
const (
	customers = 100000 // distinct customer_id values, 1..customers

	seedOrders = 1 // orders: the queried table
	seedCopy   = 2 // orders_copy: the COPY payload
	seedBig    = 3 // big: the streamed table
)

// schemaSQL creates the tables on every cluster. Primary keys are added
// after the load (addKeysSQL), except on orders_copy, whose COPY is
// measured with its index in place on both sides.
const schemaSQL = `
CREATE TABLE orders (
    id          bigint        NOT NULL,
    customer_id bigint        NOT NULL,
    amount      numeric(12,2) NOT NULL,
    status      text          NOT NULL,
    created_at  timestamptz   NOT NULL
);
CREATE TABLE orders_copy (
    id          bigint        PRIMARY KEY,
    customer_id bigint        NOT NULL,
    amount      numeric(12,2) NOT NULL,
    status      text          NOT NULL,
    created_at  timestamptz   NOT NULL
);
CREATE TABLE big (
    id          bigint        NOT NULL,
    customer_id bigint        NOT NULL,
    amount      numeric(12,2) NOT NULL,
    status      text          NOT NULL,
    created_at  timestamptz   NOT NULL,
    note        text          NOT NULL
);
`

var addKeysSQL = []string{
	"ALTER TABLE orders ADD PRIMARY KEY (id)",
	"ALTER TABLE big ADD PRIMARY KEY (id)",
	"VACUUM ANALYZE orders",
	"VACUUM ANALYZE big",
}

// statuses and their cumulative weights out of 100.
var statuses = []struct {
	name string
	upTo uint64
}{
	{"pending", 10}, {"paid", 30}, {"shipped", 55}, {"delivered", 90}, {"cancelled", 97}, {"refunded", 100},
}

// mix is SplitMix64's finaliser: a cheap, well-spread hash of x.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// row is one generated row.
type row struct {
	id, customer int64
	cents        int64  // amount in cents, 0 .. 999999.99 * 100
	status       string //
	created      int64  // seconds after 2024-01-01 00:00:00 UTC
}

// genRow returns row number i (1-based) of the table with the given seed.
func genRow(seed uint64, i int64) row {
	h := mix(seed<<56 ^ uint64(i))
	h2 := mix(h)
	r := row{
		id:       i,
		customer: 1 + int64(h%customers),
		cents:    int64(h2 % 100000000), // 0.00 .. 999999.99
		created:  int64((h2 >> 32) % (366 * 86400)),
	}
	w := (h >> 40) % 100
	for _, s := range statuses {
		if w < s.upTo {
			r.status = s.name
			break
		}
	}
	return r
}

// appendText appends r as a line of COPY's text format; withNote adds the
// big table's sixth column.
func appendText(b []byte, r row, withNote bool) []byte {
	b = strconv.AppendInt(b, r.id, 10)
	b = append(b, '\t')
	b = strconv.AppendInt(b, r.customer, 10)
	b = append(b, '\t')
	b = strconv.AppendInt(b, r.cents/100, 10)
	c := r.cents % 100
	b = append(b, '.', byte('0'+c/10), byte('0'+c%10), '\t')
	b = append(b, r.status...)
	b = append(b, '\t')
	b = appendTimestamp(b, r.created)
	if withNote {
		b = append(b, "\tnote "...)
		b = strconv.AppendUint(b, mix(uint64(r.id)), 16)
		b = append(b, " for customer "...)
		b = strconv.AppendInt(b, r.customer, 10)
		b = append(b, ", packed and shipped"...)
	}
	return append(b, '\n')
}

// appendTimestamp appends 2024-01-01 00:00:00+00 plus secs, as timestamptz
// text (2024 is a leap year; secs stays within it).
func appendTimestamp(b []byte, secs int64) []byte {
	days := secs / 86400
	rest := secs % 86400
	month := 0
	for _, n := range []int64{31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31} {
		if days < n {
			break
		}
		days -= n
		month++
	}
	two := func(b []byte, v int64) []byte { return append(b, byte('0'+v/10), byte('0'+v%10)) }
	b = append(b, "2024-"...)
	b = two(b, int64(month+1))
	b = append(b, '-')
	b = two(b, days+1)
	b = append(b, ' ')
	b = two(b, rest/3600)
	b = append(b, ':')
	b = two(b, rest%3600/60)
	b = append(b, ':')
	b = two(b, rest%60)
	return append(b, "+00"...)
}

// placement maps every customer_id to its shard and to the shard's cluster,
// as the proxy routes it: the topology file the proxy runs is parsed and
// compiled with vschema, and each key goes through Table.KeyFromColumns and
// Group.ShardFor.
type placement struct {
	shards   []string // shard names in keyspace order
	clusters []string // cluster of each shard
	shardOf  []uint8  // shardOf[customer] (index 0 unused)
}

func newPlacement(topoYAML, table string) (*placement, error) {
	topo, err := topology.Parse("scatter.yaml", []byte(topoYAML))
	if err != nil {
		return nil, err
	}
	vs, err := vschema.Build(topo)
	if err != nil {
		return nil, err
	}
	t := vs.Table("", table)
	if !t.Sharded() {
		return nil, fmt.Errorf("table %s is not sharded in the topology", table)
	}
	p := &placement{shardOf: make([]uint8, customers+1)}
	for _, s := range t.Group.Shards {
		p.shards = append(p.shards, s.Name)
		p.clusters = append(p.clusters, s.Cluster)
	}
	for c := int64(1); c <= customers; c++ {
		key, err := t.KeyFromColumns(func(col string) (keyexpr.Value, bool) {
			if col == "customer_id" {
				return keyexpr.Int(c), true
			}
			return keyexpr.Null(), false
		})
		if err != nil {
			return nil, fmt.Errorf("shard key of customer_id %d: %w", c, err)
		}
		s, err := t.Group.ShardFor(key)
		if err != nil {
			return nil, fmt.Errorf("shard of customer_id %d: %w", c, err)
		}
		p.shardOf[c] = uint8(s.Index)
	}
	return p, nil
}

// cluster returns the cluster that holds customer's rows.
func (p *placement) cluster(customer int64) string { return p.clusters[p.shardOf[customer]] }

// tally counts, per shard, the rows 1..n of a table and the sum of their
// customer_id (what the COPY check compares per cluster).
func (p *placement) tally(seed uint64, n int64) (rows, sums []int64) {
	rows, sums = make([]int64, len(p.shards)), make([]int64, len(p.shards))
	for i := int64(1); i <= n; i++ {
		r := genRow(seed, i)
		s := p.shardOf[r.customer]
		rows[s]++
		sums[s] += r.customer
	}
	return rows, sums
}

// copyIn runs `COPY table FROM STDIN` (text format) on conn, feeding it rows
// 1..n of the table whose customer passes keep (nil: every row). It
// returns the number of rows the server reports.
func copyIn(ctx context.Context, conn *pgconn.PgConn, table string, seed uint64, n int64, withNote bool, keep func(customer int64) bool) (int64, error) {
	pr, pw := io.Pipe()
	go func() {
		w := bufio.NewWriterSize(pw, 256<<10)
		var line []byte
		for i := int64(1); i <= n; i++ {
			r := genRow(seed, i)
			if keep != nil && !keep(r.customer) {
				continue
			}
			line = appendText(line[:0], r, withNote)
			if _, err := w.Write(line); err != nil {
				pw.CloseWithError(err)
				return
			}
		}
		pw.CloseWithError(w.Flush())
	}()
	tag, err := conn.CopyFrom(ctx, pr, "COPY "+table+" FROM STDIN")
	pr.CloseWithError(io.ErrClosedPipe) // stops the writer if COPY ended early
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

// payload returns rows 1..n of a table as one COPY text-format buffer.
func payload(seed uint64, n int64, withNote bool) []byte {
	var b []byte
	for i := int64(1); i <= n; i++ {
		b = appendText(b, genRow(seed, i), withNote)
	}
	return b
}

// topologyYAML is the topology of the sharded side: four shards of the
// group by_customer (xxhash of customer_id) over the shard clusters, round
// robin, and the main group on the first of them. dsns are the shard
// clusters' DSNs, named pg1, pg2, ... as testenv names them.
func topologyYAML(listen string, poolSize int, names, dsns []string, shards int) string {
	var b strings.Builder
	b.WriteString("# Written by bench/scatter.\nversion: 1\n")
	fmt.Fprintf(&b, "proxy:\n  listen: %q\n  pool: { mode: transaction, size: %d }\n", listen, poolSize)
	b.WriteString("clusters:\n")
	for i, n := range names {
		fmt.Fprintf(&b, "  %s: { dsn: %q }\n", n, dsns[i])
	}
	fmt.Fprintf(&b, "groups:\n  main:\n    unsharded: true\n    cluster: %s\n", names[0])
	b.WriteString("  by_customer:\n    index: { name: by_customer, column: customer_id, type: bigint, function: xxhash }\n    shards:\n")
	for i, r := range shardRanges(shards) {
		fmt.Fprintf(&b, "      %q: %s\n", r, names[i%len(names)])
	}
	b.WriteString("    tables:\n      orders: {}\n      orders_copy: {}\n      big: {}\n")
	return b.String()
}

// shardRanges cuts the keyspace into n equal ranges of its first byte
// (n a power of two, 1 .. 256): 4 -> "-40", "40-80", "80-c0", "c0-".
func shardRanges(n int) []string {
	if n == 1 {
		return []string{"-"}
	}
	step := 256 / n
	out := make([]string, n)
	for i := range n {
		from, to := "", ""
		if i > 0 {
			from = fmt.Sprintf("%02x", i*step)
		}
		if i < n-1 {
			to = fmt.Sprintf("%02x", (i+1)*step)
		}
		out[i] = from + "-" + to
	}
	return out
}
