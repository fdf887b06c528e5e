package proxy

import (
	"context"
	"fmt"
	"strings"
	"testing"
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
