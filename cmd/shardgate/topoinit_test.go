package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/examples/ecommerce"
	"github.com/shardgate/shardgate/internal/testenv"
)

// TestTopologyInit runs `shardgate topology init` against a test cluster:
// the file it writes passes `topology validate` and names the cluster;
// --help shows an example.
func TestTopologyInit(t *testing.T) {
	env := testenv.Shared(t)
	file := filepath.Join(t.TempDir(), "init.yaml")
	_, stderr, err := run("topology", "init", "--dsn", env.Clusters[0].DSN(ecommerce.Database), "--cluster", "app", "-o", file)
	if err != nil || !strings.Contains(stderr, "init.yaml: ") {
		t.Fatalf("init: %q %v", stderr, err)
	}
	out, _, err := run("topology", "validate", file)
	if err != nil || !strings.Contains(out, "ok: 1 clusters, 1 groups") {
		t.Fatalf("validate: %q %v", out, err)
	}
	out, _, err = run("topology", "show", file)
	if err != nil || !strings.Contains(out, "app") {
		t.Fatalf("show: %q %v", out, err)
	}
	out, _, err = run("topology", "init", "--help")
	if err != nil || !strings.Contains(out, "shardgate topology init --dsn postgres://") {
		t.Fatalf("help: %q %v", out, err)
	}
	if _, _, err := run("topology", "init"); err == nil {
		t.Fatal("init without --dsn accepted")
	}
}
