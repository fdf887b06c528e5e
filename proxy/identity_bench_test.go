package proxy

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/testenv"
)

// BenchmarkPointReadPerRole: a point read through the proxy as sg_app, on
// the pool of its own role (identity client) and on the DSN user's
// (identity service, as before per-role sessions), in the same run:
//
//	go test -run '^$' -bench BenchmarkPointReadPerRole -count 3 ./proxy
func BenchmarkPointReadPerRole(b *testing.B) {
	verifiers := identityFixture(b)
	ctx := context.Background()
	for _, id := range []Identity{IdentityService, IdentityClient} {
		b.Run(string(id), func(b *testing.B) {
			p := startIdentityProxy(b, verifiers, func(c *Config) { c.Identity = id })
			app := connectAs(b, p.addr, "sg_app")
			mustExec(b, app, "DELETE FROM orders")
			var values []string
			for i := 1; i <= 1000; i++ {
				values = append(values, fmt.Sprintf("(%d, %d, %d)", i, i, i))
			}
			mustExec(b, app, "INSERT INTO orders (id, customer_id, total) VALUES "+strings.Join(values, ", "))
			var who string
			if err := app.QueryRow(ctx, "SELECT current_user").Scan(&who); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			var total int64
			for i := 0; i < b.N; i++ {
				k := i%1000 + 1
				if err := app.QueryRow(ctx, "SELECT total::bigint FROM orders WHERE customer_id = $1 AND id = $1", k).Scan(&total); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.Logf("ran as %s", who)
		})
	}
}

// BenchmarkPgbenchPointReadPerRole runs pgbench (4 clients, prepared, 8 s)
// point reads through two proxies over the same clusters, one serving
// sg_app on its own role's connections (identity client), one on the DSN
// user's (identity service), alternating three rounds, and reports the
// mean tps of each:
//
//	go test -run '^$' -bench BenchmarkPgbenchPointReadPerRole -v ./proxy
func BenchmarkPgbenchPointReadPerRole(b *testing.B) {
	verifiers := identityFixture(b)
	pgbench := testenv.Pgbench(b)
	script := filepath.Join(b.TempDir(), "point.sql")
	if err := os.WriteFile(script, []byte("\\set k random(1, 1000)\nSELECT total FROM orders WHERE customer_id = :k AND id = :k;\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	ids := []Identity{IdentityService, IdentityClient}
	proxies := map[Identity]*testProxy{}
	for _, id := range ids {
		proxies[id] = startIdentityProxy(b, verifiers, func(c *Config) { c.Identity = id; c.PoolSize = 8 })
	}
	app := connectAs(b, proxies[IdentityClient].addr, "sg_app")
	var values []string
	for i := 1; i <= 1000; i++ {
		values = append(values, fmt.Sprintf("(%d, %d, %d)", i, i, i))
	}
	mustExec(b, app, "INSERT INTO orders (id, customer_id, total) VALUES "+strings.Join(values, ", "))
	tps := map[Identity]float64{}
	b.ResetTimer()
	for round := 0; round < 3; round++ {
		for _, id := range ids {
			cmd := exec.Command(pgbench, "-n", "-M", "prepared", "-c", "4", "-j", "2", "-T", "8", "-f", script,
				fmt.Sprintf("postgres://sg_app@%s/%s?sslmode=disable", proxies[id].addr, identityDB))
			cmd.Env = append(os.Environ(), "PGPASSWORD="+identityRoles["sg_app"])
			out, err := cmd.CombinedOutput()
			if err != nil {
				b.Fatalf("pgbench: %v\n%s", err, out)
			}
			m := regexp.MustCompile(`tps = ([0-9.]+)`).FindSubmatch(out)
			if m == nil {
				b.Fatalf("no tps in:\n%s", out)
			}
			v, _ := strconv.ParseFloat(string(m[1]), 64)
			b.Logf("round %d, identity %s: %.0f tps", round, id, v)
			tps[id] += v / 3
		}
	}
	b.ReportMetric(tps[IdentityService], "tps-service")
	b.ReportMetric(tps[IdentityClient], "tps-client")
}
