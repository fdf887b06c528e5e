// Command verify is shardgate's benchmark of `shardgate verify` (run it
// with `bash bench/run.sh -scenario verify`). In one run it
//
//   - starts two throwaway PostgreSQL clusters with internal/testenv, a
//     main database on the first and one shard database on each;
//   - loads -rows rows into each of three tables: hashed (xxhash of
//     customer_id: its keys streamed by binary COPY and mapped in Go),
//     ranged (range of id: the check is one aggregate per chunk in
//     Postgres) and a reference table copied to both shards (chunked md5
//     on both sides);
//   - runs the verify of each table in turn, -rounds times, interleaved,
//     and prints the rows per second of each (the units' own rows and
//     seconds, and the wall time of the run), checking every run is clean.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/shardgate/shardgate/internal/testenv"
	"github.com/shardgate/shardgate/keyexpr"
	"github.com/shardgate/shardgate/topology"
	"github.com/shardgate/shardgate/verify"
	"github.com/shardgate/shardgate/vschema"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench/verify:", err)
		os.Exit(1)
	}
}

func run() error {
	fs := flag.NewFlagSet("bench/verify", flag.ContinueOnError)
	rows := fs.Int("rows", 1000000, "rows per table")
	rounds := fs.Int("rounds", 3, "verify runs per table, interleaved")
	chunk := fs.Int("chunk-rows", 10000, "verify's rows per chunk")
	_ = fs.String("repo", ".", "the repository (bench/run.sh passes it)")
	if err := fs.Parse(os.Args[1:]); err != nil {
		return err
	}
	ctx := context.Background()
	logf := func(format string, a ...any) { fmt.Fprintf(os.Stderr, "verify: "+format+"\n", a...) }
	logf("starting 2 PostgreSQL clusters")
	env, err := testenv.Start(ctx, testenv.Options{N: 2, Databases: []string{"vmain", "vshard"},
		Settings: map[string]string{"shared_buffers": "256MB", "max_wal_size": "4GB"}})
	if err != nil {
		return err
	}
	defer func() { _ = env.Stop() }()
	defer env.StopOnSignal()()
	yaml := fmt.Sprintf(`version: 1
clusters:
  main: { dsn: %q }
  s0: { dsn: %q }
  s1: { dsn: %q }
groups:
  main: { unsharded: true, cluster: main }
  hashed:
    index: { column: customer_id, type: bigint, function: xxhash }
    shards: { "-80": s0, "80-": s1 }
    tables: { hashed: {} }
    reference: [ref]
  ranged:
    index: { column: id, type: bigint, function: range }
    shards: [ { to: %d, cluster: s0 }, { from: %d, cluster: s1 } ]
    tables: { ranged: {} }
`, env.Clusters[0].DSN("vmain"), env.Clusters[0].DSN("vshard"), env.Clusters[1].DSN("vshard"), *rows/2, *rows/2)
	topo, err := topology.Parse("bench.yaml", []byte(yaml))
	if err != nil {
		return err
	}
	vs, err := vschema.Build(topo)
	if err != nil {
		return err
	}
	conns := map[string]*pgx.Conn{}
	for i, name := range []string{"s0", "s1"} {
		c, err := env.Clusters[i].Conn(ctx, "vshard")
		if err != nil {
			return err
		}
		defer c.Close(ctx)
		conns[name] = c
		for _, q := range []string{
			"CREATE TABLE hashed (customer_id bigint NOT NULL, id bigint NOT NULL, note text, PRIMARY KEY (customer_id, id))",
			"CREATE TABLE ranged (id bigint PRIMARY KEY, note text)",
			"CREATE TABLE ref (id bigint PRIMARY KEY, name text, amount numeric)",
			fmt.Sprintf("INSERT INTO ref SELECT g, 'name ' || g, g * 1.5 FROM generate_series(1, %d) g", *rows),
		} {
			if _, err := c.Exec(ctx, q); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		}
	}
	if _, err := conns["s0"].Exec(ctx, fmt.Sprintf("INSERT INTO ranged SELECT g, 'event ' || g FROM generate_series(1, %d - 1) g", *rows/2)); err != nil {
		return err
	}
	if _, err := conns["s1"].Exec(ctx, fmt.Sprintf("INSERT INTO ranged SELECT g, 'event ' || g FROM generate_series(%d, %d) g", *rows/2, *rows)); err != nil {
		return err
	}
	logf("loading %d rows into hashed, routed in Go", *rows)
	by := map[string][][]any{}
	t := vs.Table("", "hashed")
	for i := 1; i <= *rows; i++ {
		cust := int64(i % 50000)
		c, err := t.ClusterOfRow(func(string) (keyexpr.Value, bool) { return keyexpr.Int(cust), true })
		if err != nil {
			return err
		}
		by[c] = append(by[c], []any{cust, int64(i), "note"})
	}
	for c, rs := range by {
		if _, err := conns[c].CopyFrom(ctx, pgx.Identifier{"hashed"}, []string{"customer_id", "id", "note"}, pgx.CopyFromRows(rs)); err != nil {
			return err
		}
	}
	for _, c := range conns {
		if _, err := c.Exec(ctx, "VACUUM ANALYZE"); err != nil {
			return err
		}
	}
	type sample struct{ unitRate, wallRate float64 }
	results := map[string][]sample{}
	tables := []string{"hashed", "ranged", "ref"}
	for r := range *rounds {
		for _, table := range tables {
			start := time.Now()
			rep, err := verify.Run(ctx, topo, verify.Options{Table: table, ChunkRows: *chunk})
			if err != nil {
				return err
			}
			wall := time.Since(start)
			if rep.Left() != 0 {
				return fmt.Errorf("%s: %d findings on a clean fleet", table, rep.Left())
			}
			var n int64
			var secs float64
			for _, u := range rep.Units {
				if u.Check == verify.CheckSequence {
					continue
				}
				n += u.Rows
				secs += u.Seconds
			}
			s := sample{unitRate: float64(n) / secs, wallRate: float64(n) / wall.Seconds()}
			results[table] = append(results[table], s)
			logf("round %d %s: %d rows in %s, %.0f rows/s (checks), %.0f rows/s (wall)", r+1, table, n, wall.Round(time.Millisecond), s.unitRate, s.wallRate)
		}
	}
	how := map[string]string{
		"hashed": "xxhash: keys by binary COPY, mapped in Go",
		"ranged": "range: one aggregate per chunk in Postgres",
		"ref":    "reference: count and md5 per chunk on both copies",
	}
	fmt.Printf("## shardgate verify, %d rows per table (median of %d runs)\n\n", *rows, *rounds)
	fmt.Println("| table | check | rows/s (checks) | rows/s (wall) |")
	fmt.Println("| --- | --- | ---: | ---: |")
	for _, table := range tables {
		ss := results[table]
		sort.Slice(ss, func(i, j int) bool { return ss[i].unitRate < ss[j].unitRate })
		m := ss[len(ss)/2]
		fmt.Printf("| %s | %s | %.0f | %.0f |\n", table, how[table], m.unitRate, m.wallRate)
	}
	fmt.Printf("\n%s\n", strings.TrimSpace("Command: "+os.Getenv("BENCH_INVOKED_AS")))
	return nil
}
