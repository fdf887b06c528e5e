package drivertest

import (
	"fmt"
	"testing"

	"github.com/shardgate/shardgate/internal/proxytest"
)

// TestPsycopg3 runs psycopg 3 through the proxy
// (testdata/psycopg3_check.py, one step a run): named (server-side)
// cursors on one shard and across shards, iterated and read with
// fetchmany; pipeline mode, and a failing pipeline in autocommit; COPY
// with cursor.copy(); ordinary cursors, prepared on the server past
// prepare_threshold, text and binary.
func TestPsycopg3(t *testing.T) {
	py := python(t, "psycopg", "python3-psycopg")
	dsn := startProxy(t)
	const n = 10000
	load(t, proxytest.Connect(t, dsn), n)

	over100 := 0
	for i := 1; i <= n; i++ {
		if i%997 >= 100 {
			over100++
		}
	}
	runSteps(t, []string{py, "testdata/psycopg3_check.py", dsn, fmt.Sprint(n)}, []step{
		{"named_one_shard", fmt.Sprintf("rows=%d,%d", n/50, n/50)},
		{"named_scatter", fmt.Sprintf("rows=%d,%d", over100, over100)},
		{"pipeline", fmt.Sprintf("count=100 sum=5000.75 customers=50 deleted=100 left=%d", n)},
		{"pipeline_error", "error=UniqueViolation left=0"},
		{"copy", "in=200 out=200 binary=200 deleted=200"},
		{"plain", fmt.Sprintf("%s point=12 binary=%d", loaded(n), 3*n/50)},
	})
}
