package main

import (
	"bytes"
	"strings"
	"testing"
)

func run(args ...string) (stdout, stderr string, err error) {
	root := newRoot()
	var out, errb bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetArgs(args)
	err = root.Execute()
	return out.String(), errb.String(), err
}

func TestTopologyValidate(t *testing.T) {
	out, _, err := run("topology", "validate", "../../examples/ecommerce/topology.yaml")
	if err != nil || !strings.Contains(out, "ok: 2 clusters, 3 groups, 4 shards") {
		t.Fatalf("valid file: %q %v", out, err)
	}
	_, stderr, err := run("topology", "validate", "../../topology/testdata/four_problems.yaml")
	if err == nil || exitCode(err) == 0 {
		t.Fatal("invalid file accepted")
	}
	for _, want := range []string{
		`:12:33: unknown key "colum" in index (did you mean "column"?)`,
		`:15:7: key ranges leave a gap between 80 and c0`,
		`:15:14: unknown cluster "pg9"`,
		`:20:47: unsupported function "md5" in index expression`,
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("missing %q in:\n%s", want, stderr)
		}
	}
}

func TestTopologyShowAndExplain(t *testing.T) {
	out, _, err := run("topology", "show", "../../examples/ecommerce/topology.yaml")
	if err != nil || !strings.Contains(out, "by_customer") || !strings.Contains(out, "80-") {
		t.Fatalf("show: %q %v", out, err)
	}
	out, _, err = run("explain", "--topology", "../../examples/ecommerce/topology.yaml", "SELECT * FROM orders WHERE customer_id = 42")
	if err != nil || !strings.Contains(out, "Route EqualUnique group=by_customer") || !strings.Contains(out, "80- (pg1)") {
		t.Fatalf("explain: %q %v", out, err)
	}
	if _, _, err := run("explain", "--topology", "../../examples/ecommerce/topology.yaml", "SELEC 1"); err == nil {
		t.Fatal("syntax error accepted")
	}
	out, _, err = run("version")
	if err != nil || !strings.HasPrefix(out, "shardgate ") {
		t.Fatalf("version: %q %v", out, err)
	}
}
