package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/proxytest"
	"github.com/shardgate/shardgate/keyexpr"
	"github.com/shardgate/shardgate/vschema"
)

// `shardgate verify` exits 0 on rows written through the proxy, 1 with the
// row named once a row is written directly on the wrong shard, and 0 again
// after --repair moved it.
func TestVerifyCommand(t *testing.T) {
	f := newGSIFixture(t, "vcmd", 300, "")
	file := filepath.Join(t.TempDir(), "topology.yaml")
	if err := os.WriteFile(file, []byte(f.base), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, err := run("verify", "--topology", file)
	if err != nil || !strings.Contains(out, "\nclean\n") {
		t.Fatalf("clean fleet: %v\n%s", err, out)
	}
	vs, err := vschema.Build(proxytest.Parse(t, f.base))
	if err != nil {
		t.Fatal(err)
	}
	right, err := vs.Table("", "gb_orders").ClusterOfRow(func(string) (keyexpr.Value, bool) { return keyexpr.Int(4242), true })
	if err != nil {
		t.Fatal(err)
	}
	wrong := map[string]string{"s0": "s1", "s1": "s0"}[right]
	exec1(t, f.conn(wrong), "INSERT INTO gb_orders (id, customer_id, note) VALUES (90001, 4242, 'wrong shard')")
	out, stderr, err := run("verify", "--topology", file)
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != 1 || !strings.Contains(out, "{4242,90001}: key 4242 belongs on "+right) {
		t.Fatalf("misplaced row: %v\n%s\n%s", err, out, stderr)
	}
	if !strings.Contains(stderr, "misplaced public.gb_orders on "+wrong+": ") {
		t.Errorf("no progress line on stderr:\n%s", stderr)
	}
	if out, _, err := run("verify", "--topology", file, "--repair"); err != nil || !strings.Contains(out, "moved") {
		t.Fatalf("repair: %v\n%s", err, out)
	}
	if out, _, err := run("verify", "--topology", file, "--table", "gb_orders"); err != nil || !strings.Contains(out, "\nclean\n") {
		t.Fatalf("after repair: %v\n%s", err, out)
	}
}
