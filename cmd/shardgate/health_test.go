package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/shardgate/shardgate/admin"
	"github.com/shardgate/shardgate/examples/ecommerce"
	"github.com/shardgate/shardgate/internal/testenv"
)

// get serves one GET of path from mux.
func get(mux http.Handler, path string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec
}

// TestHealthAndReadiness: /healthz answers 200 "ok"; /readyz 200 with
// every cluster up, 503 naming the cluster while one is stopped, and 200
// again once it is back (issue 25).
func TestHealthAndReadiness(t *testing.T) {
	env := testenv.Shared(t)
	pg0, pg1 := env.Clusters[0], env.Clusters[1]
	yaml := fmt.Sprintf(`version: 1
clusters:
  pg0: { dsn: %q }
  pg1: { dsn: %q }
groups:
  main: { unsharded: true, cluster: pg0 }
  g: { index: { column: id, type: bigint, function: xxhash }, shards: { "-80": pg0, "80-": pg1 }, tables: { t: {} } }
`, pg0.DSN(ecommerce.Database), pg1.DSN(ecommerce.Database))
	mux := metricsMux(newTestServer(t, yaml), false)
	if rec := get(mux, "/healthz"); rec.Code != 200 || rec.Body.String() != "ok\n" {
		t.Errorf("/healthz: %d %q", rec.Code, rec.Body.String())
	}
	ready := func() (int, admin.Readiness) {
		rec := get(mux, "/readyz")
		var r admin.Readiness
		if err := json.Unmarshal(rec.Body.Bytes(), &r); err != nil {
			t.Fatalf("/readyz body %q: %v", rec.Body.String(), err)
		}
		return rec.Code, r
	}
	// waitReady polls /readyz until it answers code (a cluster's refusal
	// is remembered for 200 ms, a restart takes its time).
	waitReady := func(code int) admin.Readiness {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			got, r := ready()
			if got == code {
				return r
			}
			if time.Now().After(deadline) {
				t.Fatalf("/readyz answers %d, want %d: %+v", got, code, r)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if r := waitReady(200); !r.Ready || r.Main != "up" || r.Clusters["pg0"] != "up" || r.Clusters["pg1"] != "up" || r.Revision != 1 {
		t.Errorf("ready: %+v", r)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := pg1.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pg1.Start(context.Background()) })
	r := waitReady(503)
	if r.Ready || r.Main != "up" || !strings.HasPrefix(r.Clusters["pg1"], "down: ") || len(r.NotReady) != 1 || !strings.HasPrefix(r.NotReady[0], "cluster pg1 is down") {
		t.Errorf("pg1 stopped: %+v", r)
	}
	if err := pg1.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if r := waitReady(200); r.Clusters["pg1"] != "up" || len(r.NotReady) != 0 {
		t.Errorf("pg1 back: %+v", r)
	}
}
