package proxy

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// BenchmarkGSIRead: one-row reads through the proxy by the shard key and
// through the index, in the simple and the extended protocol (one
// client): the index's read costs the lookup's round trip on top.
func BenchmarkGSIRead(b *testing.B) {
	p := startProxy(b, gsiTopology(), nil)
	c := setupGSI(b, p)
	ctx := context.Background()
	var rows []string
	for id := 1; id <= 200; id++ {
		rows = append(rows, fmt.Sprintf("(%d, %d, %d)", id, id%100, id))
	}
	mustExec(b, c, "INSERT INTO gs_orders (id, customer_id, total) VALUES "+strings.Join(rows, ", "), simple)
	for _, r := range []struct{ name, sql string }{
		{"key", "SELECT total FROM gs_orders WHERE customer_id = %d AND id = %d"},
		{"index", "SELECT total FROM gs_orders WHERE id = %[2]d"},
	} {
		for _, mode := range []string{"simple", "extended"} {
			b.Run(r.name+"/"+mode, func(b *testing.B) {
				var tot int64
				for i := 0; i < b.N; i++ {
					id := int64(i%200 + 1)
					var err error
					if mode == "simple" {
						err = c.QueryRow(ctx, fmt.Sprintf(r.sql, id%100, id), simple).Scan(&tot)
					} else {
						q := "SELECT total FROM gs_orders WHERE customer_id = $1 AND id = $2"
						args := []any{id % 100, id}
						if r.name == "index" {
							q, args = "SELECT total FROM gs_orders WHERE id = $1", []any{id}
						}
						err = c.QueryRow(ctx, q, args...).Scan(&tot)
					}
					if err != nil || tot != id {
						b.Fatalf("%d: %d %v", id, tot, err)
					}
				}
			})
		}
	}
}
