package topology

import (
	"strings"
	"testing"
	"time"
)

const replicasBase = `version: 1
clusters:
  pg0:
    dsn: "postgres://postgres@127.0.0.1:5441/shop"
    replicas:
      - "postgres://postgres@127.0.0.1:5451/shop"
      - { dsn: "postgres://postgres@127.0.0.1:5452/shop", zone: b, priority: 2 }
    max_lag: 3s
    failover_buffer: 4s
  pg1:
    dsn: "postgres://postgres@127.0.0.1:5442/shop"
    max_lag: 16MB
proxy:
  reads: { target: prefer_replica, read_only_transactions: replica }
  auth:
    method: md5
    users:
      alice: { password: secret, target: replica, read_only_transactions: prefer_replica }
groups:
  main:
    unsharded: true
    cluster: pg0
`

func TestReplicas(t *testing.T) {
	topo := mustParse(t, replicasBase)
	pg0 := topo.Cluster("pg0")
	if len(pg0.Replicas) != 2 || pg0.Replicas[0].DSN != "postgres://postgres@127.0.0.1:5451/shop" || pg0.Replicas[0].Pos.Line != 6 {
		t.Fatalf("replicas: %+v", pg0.Replicas)
	}
	if r := pg0.Replicas[1]; r.Zone != "b" || r.Priority != 2 {
		t.Fatalf("second replica: %+v", r)
	}
	if pg0.MaxLag != (MaxLag{Time: 3 * time.Second}) || topo.Cluster("pg1").MaxLag != (MaxLag{Bytes: 16 << 20}) {
		t.Fatalf("max_lag: %+v %+v", pg0.MaxLag, topo.Cluster("pg1").MaxLag)
	}
	if pg0.FailoverBuffer != 4*time.Second || topo.Cluster("pg1").FailoverBuffer != 0 {
		t.Fatalf("failover_buffer: %s %s", pg0.FailoverBuffer, topo.Cluster("pg1").FailoverBuffer)
	}
	if topo := mustParse(t, strings.Replace(replicasBase, "    failover_buffer: 4s\n", "", 1)); topo.Cluster("pg0").FailoverBuffer != DefaultFailoverBuffer {
		t.Fatalf("default failover_buffer: %s", topo.Cluster("pg0").FailoverBuffer)
	}
	if topo.Proxy.Reads.Target != TargetPreferReplica || topo.Proxy.Auth.User("alice").Target != TargetReplica {
		t.Fatalf("targets: %q %q", topo.Proxy.Reads.Target, topo.Proxy.Auth.User("alice").Target)
	}
	if d := mustParse(t, diffBase); d.Proxy.Reads.Target != TargetPrimary || d.Proxy.Reads.ReadOnlyTransactions != TargetPrimary {
		t.Fatalf("default target %q, read_only_transactions %q", d.Proxy.Reads.Target, d.Proxy.Reads.ReadOnlyTransactions)
	}
	if topo.Proxy.Reads.ReadOnlyTransactions != TargetReplica || topo.Proxy.Auth.User("alice").ReadOnlyTransactions != TargetPreferReplica {
		t.Fatalf("read_only_transactions: %q %q", topo.Proxy.Reads.ReadOnlyTransactions, topo.Proxy.Auth.User("alice").ReadOnlyTransactions)
	}

	for _, c := range []struct{ from, to, want string }{
		{`"postgres://postgres@127.0.0.1:5451/shop"`, `"postgres://postgres@127.0.0.1:5441/shop"`, "t.yaml:6:9: cluster \"pg0\" replica 1: 127.0.0.1:5441/shop is the cluster's own dsn"},
		{`"postgres://postgres@127.0.0.1:5451/shop"`, `"postgres://postgres@127.0.0.1:5452/shop"`, "t.yaml:7:16: cluster \"pg0\" replica 2: 127.0.0.1:5452/shop is listed twice (first at line 6)"},
		{`max_lag: 3s`, `max_lag: soon`, `t.yaml:8:14: max_lag: invalid value "soon"`},
		{`failover_buffer: 4s`, `failover_buffer: soon`, `t.yaml:9:22: failover_buffer: invalid duration "soon"`},
		{`failover_buffer: 4s`, `failover_buffer: 2m`, `t.yaml:9:22: failover_buffer: 2m0s must be positive and at most 1m`},
		{`max_lag: 16MB`, "max_lag: 16MB\n    failover_buffer: 1s", `failover_buffer: cluster "pg1" has no replicas to fail over to`},
		{`max_lag: 3s`, `max_lag: -1s`, `t.yaml:8:14: max_lag: "-1s" must be positive`},
		{`priority: 2`, `priority: -2`, `priority: must be between 0 and 1000, not -2`},
		{`zone: b,`, `zones: b,`, `unknown key "zones"`},
		{`target: prefer_replica`, `target: standby`, `t.yaml:14:20: unknown target "standby" (expected primary, replica or prefer_replica)`},
		{`read_only_transactions: replica`, `read_only_transactions: standby`, `t.yaml:14:60: unknown read_only_transactions "standby" (expected primary, replica or prefer_replica)`},
		{`read_only_transactions: prefer_replica`, `read_only_transactions: yes`, `t.yaml:18:75: unknown read_only_transactions "yes"`},
		{`"postgres://postgres@127.0.0.1:5451/shop"`, `"mysql://x"`, `t.yaml:6:9: invalid dsn`},
	} {
		_, err := Parse("t.yaml", []byte(strings.Replace(replicasBase, c.from, c.to, 1)))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s -> %s: got %v, want %q", c.from, c.to, err, c.want)
		}
	}
}

func TestDiffReplicas(t *testing.T) {
	old := mustParse(t, replicasBase)
	new := mustParse(t, strings.NewReplacer(
		`      - "postgres://postgres@127.0.0.1:5451/shop"`+"\n", "",
		`priority: 2 }`, "priority: 2 }\n      - \"postgres://postgres@127.0.0.1:5453/shop\"",
		"max_lag: 3s", "max_lag: 1s",
		"target: prefer_replica", "target: primary",
		"read_only_transactions: replica", "read_only_transactions: primary").Replace(replicasBase))
	plan := Diff(old, new)
	var got []string
	for _, c := range plan.Changes {
		got = append(got, c.Message)
	}
	all := strings.Join(got, "\n")
	for _, want := range []string{
		"cluster pg0: replica 127.0.0.1:5453/shop added",
		"cluster pg0: replica 127.0.0.1:5451/shop removed",
		`cluster pg0: max_lag "1s" instead of "3s"`,
		"proxy.reads.target changes from prefer_replica to primary",
		"proxy.reads.read_only_transactions changes from replica to primary",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("diff lacks %q:\n%s", want, all)
		}
	}
	if len(plan.Refused()) > 0 {
		t.Errorf("replica changes refused: %s", all)
	}
}
