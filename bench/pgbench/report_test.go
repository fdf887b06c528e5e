package main

import (
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"
)

const pg15Output = `pgbench (15.18 (Debian 15.18-0+deb12u1))
transaction type: <builtin: select only>
scaling factor: 10
query mode: prepared
number of clients: 8
number of threads: 2
maximum number of tries: 1
duration: 15 s
number of transactions actually processed: 312345
number of failed transactions: 0 (0.000%)
latency average = 0.384 ms
initial connection time = 12.345 ms
tps = 20823.123456 (without initial connection time)
`

func TestParsePgbench(t *testing.T) {
	tps, lat, txns, err := parsePgbench(pg15Output)
	if err != nil || tps != 20823.123456 || lat != 0.384 || txns != 312345 {
		t.Fatalf("got %v %v %v %v", tps, lat, txns, err)
	}
	old := strings.Replace(pg15Output, "(without initial connection time)", "(excluding connections establishing)", 1)
	if tps, _, _, err := parsePgbench(old); err != nil || tps != 20823.123456 {
		t.Fatalf("pre-14 output: %v %v", tps, err)
	}
	if _, _, _, err := parsePgbench("pgbench: error: connection to server failed\n"); err == nil {
		t.Fatal("no error for output without figures")
	}
	failed := strings.Replace(pg15Output, "failed transactions: 0 (0.000%)", "failed transactions: 7 (0.002%)", 1)
	if tps, _, _, err := parsePgbench(failed); err == nil || tps == 0 {
		t.Fatalf("failed transactions: %v %v", tps, err)
	}
}

func TestPgbenchError(t *testing.T) {
	out := "pgbench (15.18)\npgbench: error: client 3 script 0 aborted in command 1 query 0: ERROR:  prepared statement \"P_0\" already exists\n" +
		"pgbench: error: Run was aborted; the above results are incomplete.\n"
	if got := pgbenchError(out); !strings.Contains(got, `prepared statement "P_0" already exists`) {
		t.Fatalf("got %q", got)
	}
}

func TestKeyspaceID(t *testing.T) {
	// The canonical bytes of a bigint are its 8-byte big-endian two's complement.
	if got, want := keyspaceID(1), xxhash.Sum64([]byte{0, 0, 0, 0, 0, 0, 0, 1}); got != want {
		t.Fatalf("keyspaceID(1) = %x, want %x", got, want)
	}
	if got, want := keyspaceID(-1), xxhash.Sum64([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}); got != want {
		t.Fatalf("keyspaceID(-1) = %x, want %x", got, want)
	}
	if got := keyspaceID(1); got != 0x9f1ffc793b8a47da {
		t.Fatalf("keyspaceID(1) = %016x, want 9f1ffc793b8a47da", got)
	}
	if shardOf(1) != 1 {
		t.Fatal("aid 1 belongs to shard 80-")
	}
	var n [2]int
	for aid := int64(1); aid <= 100000; aid++ {
		n[shardOf(aid)]++
	}
	if n[0] < 49000 || n[1] < 49000 {
		t.Fatalf("unbalanced split %v", n)
	}
}

func TestMarkdown(t *testing.T) {
	r := &report{
		heading: "## h", targets: []string{tDirect, tPgbouncer, tOne}, modes: []string{"simple", "prepared"}, clients: []int{8, 64},
		goals: []goal{{text: "g", modes: []string{"simple"}, against: tPgbouncer, ratio: 1}},
		results: []result{
			{target: tDirect, mode: "simple", clients: 8, ok: true, tps: 1000, latency: 1},
			{target: tPgbouncer, mode: "simple", clients: 8, ok: true, tps: 800, latency: 1.2, cpuPerStmt: 40},
			{target: tOne, mode: "simple", clients: 8, ok: true, tps: 900, latency: 1.1, cpuPerStmt: 50, pgPerStmt: 31.5},
			{target: tDirect, mode: "prepared", clients: 8, ok: true, tps: 2000, latency: 0.5},
			{target: tPgbouncer, mode: "prepared", clients: 8, na: bouncerNoPrepared, err: "pgbench failed"},
			{target: tOne, mode: "prepared", clients: 8, err: "boom | x", setupErr: true},
			{target: tDirect, mode: "simple", clients: 64, ok: true, tps: 1000, latency: 8},
			{target: tPgbouncer, mode: "simple", clients: 64, ok: true, tps: 1000, latency: 8},
			{target: tOne, mode: "simple", clients: 64, ok: true, tps: 500, latency: 16, cpuPerStmt: 70.25},
		},
		clientsSection: "### idle\n",
	}
	md := r.markdown()
	for _, want := range []string{
		"| 8 | pgbouncer | simple | 800 | 1.200 | 0.80× | 1.00× | 40.0 | 1.00× |  |",
		"| 8 | shardgate-one | simple | 900 | 1.100 | 0.90× | 1.12× | 50.0 | 1.25× | 31.5 |",
		"| 8 | pgbouncer | prepared | n/a (" + bouncerNoPrepared + ") [1] |",
		"| 8 | shardgate-one | prepared | error [2] |",
		"| 64 | shardgate-one | simple | 500 | 16.000 | 0.50× | 0.50× | 70.2 |  |  |",
		`2. shardgate-one: boom \| x`,
		"- g: shardgate-one simple at 8 clients 1.12× (met), simple at 64 clients 0.50× (not met)",
		"\n### idle\n",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("missing %q in\n%s", want, md)
		}
	}
}

func TestCombine(t *testing.T) {
	ok := func(tps, lat float64) result {
		return result{target: tOne, mode: "simple", ok: true, tps: tps, latency: lat, cpuPerStmt: 1000 / tps}
	}
	c := combine([]result{ok(100, 3), ok(300, 1), ok(200, 2)})
	if !c.ok || c.tps != 200 || c.latency != 2 || c.minTPS != 100 || c.maxTPS != 300 || c.rounds != 3 || c.cpuPerStmt != 5 {
		t.Fatalf("got %+v", c)
	}
	unmeasured := ok(400, 1)
	unmeasured.cpuPerStmt = 0
	if c = combine([]result{ok(100, 3), unmeasured}); c.cpuPerStmt != 0 {
		t.Fatalf("a round without the CPU time: median %v of the others, want none", c.cpuPerStmt)
	}
	bad := result{target: tOne, mode: "simple", err: "boom"}
	c = combine([]result{ok(100, 3), bad})
	if c.ok || !strings.Contains(c.err, "1 of 2 rounds failed, first: boom") {
		t.Fatalf("got %+v", c)
	}
}

func TestParsePerf(t *testing.T) {
	out := "109,,raw_syscalls:sys_enter,852639,100.00,,\n1,,sched:sched_switch,852639,100.00,,\n3,,syscalls:sys_enter_read,852639,100.00,,\n"
	pc := parsePerf(out, 0)
	if pc.err != nil || pc.counts["raw_syscalls:sys_enter"] != 109 || pc.counts["sched:sched_switch"] != 1 || pc.counts["syscalls:sys_enter_read"] != 3 {
		t.Fatalf("got %v %v", pc.counts, pc.err)
	}
	if pc := parsePerf("<not counted>,,raw_syscalls:sys_enter,0,100.00,,\n", 0); pc.err == nil {
		t.Fatal("no error for an event perf did not count")
	}
	if pc := parsePerf("Error: no permission\n", 0); pc.err == nil {
		t.Fatal("no error for output without counts")
	}
	r := result{perStmt: map[string]float64{"raw_syscalls:sys_enter": 8.8, "syscalls:sys_enter_read": 3.4}}
	if got, want := r.perfNote(), "syscalls 8.80, read 3.40"; got != want {
		t.Fatalf("perfNote = %q, want %q", got, want)
	}
	rounds := []result{{perStmt: map[string]float64{"x": 1}}, {perStmt: map[string]float64{"x": 3}}, {perStmt: map[string]float64{"x": 2}}}
	if m := combinePerf(rounds); m["x"] != 2 {
		t.Fatalf("combinePerf = %v, want the median 2", m)
	}
	if m := combinePerf(append(rounds, result{})); m != nil {
		t.Fatalf("combinePerf with a round not counted = %v, want nil", m)
	}
}

func TestRoundOrder(t *testing.T) {
	targets := []string{"a", "b", "c"}
	for round, want := range map[int]string{1: "a,b,c", 2: "b,c,a", 3: "c,a,b", 4: "a,b,c"} {
		if got := strings.Join(roundOrder(targets, round), ","); got != want {
			t.Errorf("round %d: %s, want %s", round, got, want)
		}
	}
	if got := strings.Join(targets, ","); got != "a,b,c" {
		t.Errorf("roundOrder changed its argument: %s", got)
	}
}
