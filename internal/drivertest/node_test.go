package drivertest

import (
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/shardgate/shardgate/internal/proxytest"
)

// TestNodePostgres runs node-postgres through the proxy
// (testdata/node/check.js, one step a run): pg-cursor's read(100) and
// pg-query-stream over a scatter with and without ORDER BY, checking the
// order (with ORDER BY) and that every row comes once; parameterized and
// named prepared queries. The packages are those of
// testdata/node/package-lock.json, installed by `npm ci` (.ci/run).
func TestNodePostgres(t *testing.T) {
	node, err := exec.LookPath("node")
	_, errm := os.Stat("testdata/node/node_modules/pg-query-stream")
	need(t, err == nil && errm == nil, "node with testdata/node's packages",
		"install node (Debian: apt-get install nodejs npm), then: npm ci --prefix internal/drivertest/testdata/node")
	dsn := startProxy(t)
	const n = 5000
	load(t, proxytest.Connect(t, dsn), n)

	runSteps(t, []string{node, "testdata/node/check.js", dsn, fmt.Sprint(n)}, []step{
		{"cursor_ordered", fmt.Sprintf("rows=%d", n)},
		{"cursor_unordered", fmt.Sprintf("rows=%d", n)},
		{"stream_ordered", fmt.Sprintf("rows=%d", n)},
		{"stream_unordered", fmt.Sprintf("rows=%d", n)},
		{"plain", fmt.Sprintf("%s point=12 any=%d", loaded(n), 3*n/50)},
	})
}
