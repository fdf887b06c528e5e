package proxytest

import (
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/testenv"
)

func TestTopologyAndRetarget(t *testing.T) {
	pg0, pg1 := &testenv.Cluster{Name: "pg0", Port: 5001}, &testenv.Cluster{Name: "pg1", Port: 5002}
	doc := Topology("shop", "groups:\n  main: { unsharded: true, cluster: pg1 }\n", pg0, pg1)
	want := `version: 1
clusters:
  pg0: { dsn: "postgres://postgres@127.0.0.1:5001/shop?sslmode=disable" }
  pg1: { dsn: "postgres://postgres@127.0.0.1:5002/shop?sslmode=disable" }
groups:
  main: { unsharded: true, cluster: pg1 }
`
	if doc != want {
		t.Fatalf("Topology:\n%s\nwant\n%s", doc, want)
	}
	if topo := Parse(t, doc); len(topo.Clusters) != 2 {
		t.Fatalf("parsed %d clusters", len(topo.Clusters))
	}

	env := &testenv.Env{Clusters: []*testenv.Cluster{pg1}}
	file := "clusters:\n  pg0: { dsn: \"postgres://x@h:1/a\" }\n  pg3: { dsn: \"postgres://x@h:3/a\" }\n"
	got := Retarget(file, env, "bench")
	if !strings.Contains(got, `pg0: { dsn: "postgres://postgres@127.0.0.1:5002/bench?sslmode=disable" }`) {
		t.Fatalf("pg0 not retargeted:\n%s", got)
	}
	if !strings.Contains(got, `pg3: { dsn: "postgres://x@h:3/a" }`) {
		t.Fatalf("pg3 (no such test cluster) changed:\n%s", got)
	}
}
