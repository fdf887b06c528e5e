package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/proxy"
	"github.com/shardgate/shardgate/topology"
)

const passwordsTopology = `version: 1
clusters:
  pg0: { dsn: "postgres://svc:hunter2a@127.0.0.1:5441/shop" }
  pg1: { dsn: "postgres://svc@127.0.0.1:5442/shop?password=hunter2b&sslmode=disable" }
groups:
  main: { unsharded: true, cluster: pg0 }
  g: { index: { column: id, type: bigint, function: xxhash }, shards: { "-": pg1 }, tables: { t: {} } }
proxy:
  auth: { method: md5, users: { app: { password: hunter2c } } }
`

// topology show prints the clusters' DSNs with every password masked.
func TestTopologyShowMasksPasswords(t *testing.T) {
	file := filepath.Join(t.TempDir(), "topology.yaml")
	if err := os.WriteFile(file, []byte(passwordsTopology), 0o600); err != nil {
		t.Fatal(err)
	}
	out, stderr, err := run("topology", "show", file)
	if err != nil {
		t.Fatalf("show: %v %s", err, stderr)
	}
	if strings.Contains(out+stderr, "hunter2") {
		t.Fatalf("a password is printed:\n%s%s", out, stderr)
	}
	if !strings.Contains(out, "postgres://svc:xxxxx@127.0.0.1:5441/shop") || !strings.Contains(out, "password=xxxxx") {
		t.Fatalf("DSNs not shown masked:\n%s", out)
	}
}

// newTestServer is the server `serve` would make of a topology file's
// text (not serving; closed at the end of the test).
func newTestServer(t *testing.T, yaml string) *proxy.Server {
	t.Helper()
	topo, err := topology.Parse("t.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := proxyConfig(topo)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := proxy.NewServer(cfg, topo)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv
}

// The metrics address serves /debug/pprof only with --pprof.
func TestPprofNeedsItsSwitch(t *testing.T) {
	srv := newTestServer(t, passwordsTopology)
	for _, profiles := range []bool{false, true} {
		mux := metricsMux(srv, profiles)
		for path, want := range map[string]int{"/metrics": 200, "/debug/pprof/": map[bool]int{false: 404, true: 200}[profiles]} {
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
			if rec.Code != want {
				t.Errorf("pprof %t: GET %s = %d, want %d", profiles, path, rec.Code, want)
			}
		}
	}
	if !strings.Contains(serveCmd().Flags().Lookup("pprof").Usage, "off by default") {
		t.Error("serve has no documented --pprof switch")
	}
}
