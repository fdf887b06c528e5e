package main

import (
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/shardgate/shardgate/bench/internal/benchkit"
)

const procStatus = `Name:	shardgate
Umask:	0022
State:	S (sleeping)
Tgid:	4242
VmPeak:	 1261432 kB
VmSize:	 1261432 kB
VmLck:	       0 kB
VmHWM:	   48212 kB
VmRSS:	   31508 kB
RssAnon:	   18000 kB
Threads:	9
`

func TestParseStatus(t *testing.T) {
	m, err := benchkit.ParseStatus([]byte(procStatus))
	if err != nil || m.RSS != 31508 || m.HWM != 48212 {
		t.Fatalf("got %+v, %v", m, err)
	}
	// A kernel thread has no Vm lines; a zombie neither.
	if _, err := benchkit.ParseStatus([]byte("Name:\tkthreadd\nState:\tS (sleeping)\n")); err == nil {
		t.Fatal("no error without VmRSS/VmHWM")
	}
	if _, err := benchkit.ParseStatus([]byte("VmHWM:\t12 MB\nVmRSS:\t10 kB\n")); err == nil {
		t.Fatal("no error for a unit other than kB")
	}
	if _, err := benchkit.ParseStatus([]byte("VmHWM:\tx kB\nVmRSS:\t10 kB\n")); err == nil {
		t.Fatal("no error for a malformed number")
	}
}

func TestFlatness(t *testing.T) {
	const mb = 1024
	steady := []int64{20 * mb, 30 * mb, 31 * mb, 30 * mb, 32 * mb, 31 * mb, 30 * mb, 31 * mb, 32 * mb, 31 * mb, 30 * mb, 31 * mb}
	if flat, growth, _, why := benchkit.Flatness(20*mb, 33*mb, steady); !flat || growth != 13*mb || why != "" {
		t.Fatalf("steady: flat=%v growth=%d why=%q", flat, growth, why)
	}
	var rising []int64
	for i := range 40 {
		rising = append(rising, int64(20+i)*mb)
	}
	if flat, _, trend, why := benchkit.Flatness(20*mb, 60*mb, rising); flat || trend < 16*mb || !strings.Contains(why, "rising") {
		t.Fatalf("rising: flat=%v trend=%d why=%q", flat, trend, why)
	}
	if flat, _, _, why := benchkit.Flatness(20*mb, 200*mb, steady); flat || !strings.Contains(why, "peak") {
		t.Fatalf("high peak: flat=%v why=%q", flat, why)
	}
	if flat, _, _, why := benchkit.Flatness(20*mb, 25*mb, steady[:3]); !flat || !strings.Contains(why, "only 3 samples") {
		t.Fatalf("short: flat=%v why=%q", flat, why)
	}
}

func TestShardRanges(t *testing.T) {
	if got := strings.Join(shardRanges(4), " "); got != "-40 40-80 80-c0 c0-" {
		t.Fatalf("4: %s", got)
	}
	if got := strings.Join(shardRanges(2), " "); got != "-80 80-" {
		t.Fatalf("2: %s", got)
	}
	if got := strings.Join(shardRanges(1), " "); got != "-" {
		t.Fatalf("1: %s", got)
	}
}

func TestAppendText(t *testing.T) {
	r := row{id: 7, customer: 42, cents: 123405, status: "paid", created: 59*86400 + 3661}
	got := string(appendText(nil, r, false))
	if want := "7\t42\t1234.05\tpaid\t2024-02-29 01:01:01+00\n"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	last := string(appendTimestamp(nil, 366*86400-1))
	if last != "2024-12-31 23:59:59+00" {
		t.Fatalf("last second of 2024: %q", last)
	}
	withNote := string(appendText(nil, r, true))
	if f := strings.Split(strings.TrimSuffix(withNote, "\n"), "\t"); len(f) != 6 || !strings.HasPrefix(f[5], "note ") {
		t.Fatalf("big row: %q", withNote)
	}
}

func TestGenRow(t *testing.T) {
	if genRow(seedOrders, 5) != genRow(seedOrders, 5) {
		t.Fatal("not deterministic")
	}
	if genRow(seedOrders, 5) == genRow(seedCopy, 5) {
		t.Fatal("the seed does not matter")
	}
	seen := map[string]int{}
	for i := int64(1); i <= 10000; i++ {
		r := genRow(seedOrders, i)
		if r.id != i || r.customer < 1 || r.customer > customers || r.cents < 0 || r.cents >= 100000000 || r.created < 0 || r.created >= 366*86400 {
			t.Fatalf("row %d out of range: %+v", i, r)
		}
		seen[r.status]++
	}
	if len(seen) != len(statuses) {
		t.Fatalf("statuses %v", seen)
	}
}

// The placement goes through vschema; it must agree with the documented
// routing: XXH64 of the key's 8 big-endian bytes, first byte against the
// ranges.
func TestPlacement(t *testing.T) {
	names := []string{"pg1", "pg2"}
	dsns := []string{"postgres://postgres@127.0.0.1:1/bench", "postgres://postgres@127.0.0.1:2/bench"}
	p, err := newPlacement(topologyYAML("127.0.0.1:6432", 16, names, dsns, 4), "orders")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(p.shards, " ") != "-40 40-80 80-c0 c0-" || strings.Join(p.clusters, " ") != "pg1 pg2 pg1 pg2" {
		t.Fatalf("shards %v on %v", p.shards, p.clusters)
	}
	var n [4]int
	for c := int64(1); c <= customers; c++ {
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], uint64(c))
		want := int(xxhash.Sum64(b[:]) >> 62) // the top two bits pick a quarter
		if got := int(p.shardOf[c]); got != want {
			t.Fatalf("customer %d: shard %d, want %d", c, got, want)
		}
		n[want]++
	}
	for i, k := range n {
		if k < customers/4-1000 || k > customers/4+1000 {
			t.Fatalf("shard %d has %d of %d customers", i, k, customers)
		}
	}
	rows, _ := p.tally(seedOrders, 1000)
	if rows[0]+rows[1]+rows[2]+rows[3] != 1000 {
		t.Fatalf("tally %v", rows)
	}
}

func TestParseFlags(t *testing.T) {
	c, err := parseFlags([]string{"-rows", "1000", "-shard-clusters", "2", "-protocols", "simple", "-repo", "/x"})
	if err != nil || c.rows != 1000 || c.shardClusters != 2 || len(c.protocols) != 1 || c.docPath != "/x/docs/benchmarks.md" {
		t.Fatalf("got %+v, %v", c, err)
	}
	for _, bad := range [][]string{{"-shard-clusters", "3"}, {"-protocols", "binary"}, {"-runs", "0"}, {"extra"}} {
		if _, err := parseFlags(append(bad, "-repo", "/x")); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
}

func TestMarkdown(t *testing.T) {
	cfg, _ := parseFlags([]string{"-repo", "/x", "-copy-rows", "100", "-stream-rows", "1000"})
	r := &report{cfg: cfg, date: "d", machine: "m", pgVersion: "15", shardgate: "abc", command: "bash bench/run.sh -scenario scatter",
		shardRows: []int64{1, 2, 3, 4}, loadTime: 3 * time.Second, loadStart: "1.00"}
	r.queries = []*queryResult{
		{query: "count(*)", protocol: "simple", single: []float64{10, 12, 11}, proxy: []float64{20, 22, 24}},
		{query: "top", protocol: "simple", single: []float64{10}, proxyErr: "0A000: ORDER BY across shards is not supported", proxyCode: "0A000"},
		{query: "grp", protocol: "extended", single: []float64{10}, proxy: []float64{5}, mismatch: "row 1: a, b"},
	}
	r.copies = []*copyResult{{target: "single", secs: []float64{1, 2, 3}}, {target: "shardgate", err: "0A000: COPY of sharded table orders is not supported yet", code: "0A000"}}
	r.streams = []*streamResult{
		{query: "SELECT * FROM big", target: "single", rows: 1000, rates: []float64{2000, 1800, 2200}, mibps: []float64{2, 2, 2}, load: [2]string{"1.00", "2.00"}},
		{query: "SELECT * FROM big", target: "shardgate", rows: 1000, rates: []float64{1000, 900, 1100}, mibps: []float64{1, 1, 1}, load: [2]string{"1.00", "2.00"},
			rss: []rssRound{
				{start: 10240, hwm: 20480, end: 15360, growth: 10240, trend: 100, samples: 10, flat: true},
				{start: 9216, hwm: 19456, end: 16384, growth: 10240, trend: -100, samples: 12, flat: true},
			}},
		{query: "SELECT * FROM big ORDER BY id", target: "shardgate", code: "0A000", err: "0A000: no"},
	}
	md := r.markdown()
	for _, want := range []string{
		"## Across shards (issue 4)\n",
		"Command: `bash bench/run.sh -scenario scatter`",
		"| count(*) | simple | 11.0 (10.0–12.0) | 22.0 (20.0–24.0) | 2.00× | same |  |",
		"| top | simple | 10.0 (10.0–10.0) | refused (0A000) [1] |  |  |  |",
		"| grp | extended | 10.0 (10.0–10.0) | 5.0 (5.0–5.0) | 0.50× | **differ** [2] |  |",
		"1. top (simple) through shardgate: 0A000: ORDER BY across shards is not supported",
		"| single | 50 | 2.00 (1.00–3.00) | 1.00× |",
		"1. SELECT * FROM big ORDER BY id from shardgate: 0A000: no",
		"| shardgate → 4 shards | refused (0A000) [1] |",
		"| `SELECT * FROM big` | single | 2000 (1800–2200) | 2.0 |  |  |  |  |  |  | 1.00 → 2.00 |",
		"| `SELECT * FROM big` | shardgate | 1000 (900–1100) | 1.0 | 0.50× | 9.0 MiB | 20.0 MiB | 16.0 MiB | 10.0 MiB | yes (22 samples in 2 runs, trend +0.1 MiB) | 1.00 → 2.00 |",
		"| `SELECT * FROM big ORDER BY id` | shardgate | refused (0A000) [1] |",
		"per shard: -40 1, 40-80 2, 80-c0 3, c0- 4",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("missing %q in\n%s", want, md)
		}
	}
	if !strings.HasPrefix(md, heading+"\n") || strings.Contains(md, "\n## ") {
		t.Errorf("the section must have one ## heading (subsections use ###):\n%s", md)
	}
}
