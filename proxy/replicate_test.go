package proxy

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestReplicatedWritesNoDeadlock: transactions that update the same rows of
// a reference table at once must not deadlock across clusters (each
// winning a row on a different cluster), in the simple and the extended
// protocol. Every copy ends identical.
func TestReplicatedWritesNoDeadlock(t *testing.T) {
	p := startProxy(t, shopTopology(""), func(c *Config) { c.PoolSize = 20 })
	c := setupShop(t, p)
	mustExec(t, c, "INSERT INTO countries VALUES ('A', '0'), ('B', '0')")
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
		t.Run(mode.String(), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			const workers, rounds = 6, 40
			var wg sync.WaitGroup
			errs := make(chan error, workers)
			for w := 0; w < workers; w++ {
				conn := connect(t, p.dsn())
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < rounds; i++ {
						err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
							// Two rows, in opposite orders on alternate rounds
							// within one cluster would deadlock there (and be
							// detected); here every transaction takes them in
							// the same order, as a well-behaved application does.
							for _, code := range []string{"A", "B"} {
								if _, err := tx.Exec(ctx, "UPDATE countries SET name = (name::int + 1)::text WHERE code = $1", mode, code); err != nil {
									return err
								}
							}
							return nil
						})
						if err != nil {
							errs <- fmt.Errorf("worker round %d: %w", i, err)
							return
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
		})
	}
	want := fmt.Sprint(2 * 6 * 40)
	for _, cl := range env.Clusters {
		bc := connect(t, cl.DSN("shop"))
		for _, code := range []string{"A", "B"} {
			var name string
			if err := bc.QueryRow(context.Background(), "SELECT name FROM countries WHERE code = $1", code).Scan(&name); err != nil {
				t.Fatal(err)
			}
			if name != want {
				t.Fatalf("cluster %s: country %s counts %s, want %s", cl.Name, code, name, want)
			}
		}
	}
}
