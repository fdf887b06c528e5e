package schemalock_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/shardgate/shardgate/internal/testenv"
	"github.com/shardgate/shardgate/routestate"
	"github.com/shardgate/shardgate/workflows"
)

func TestMain(m *testing.M) { testenv.Run(m, testenv.Options{N: 1}, nil) }

// Processes creating shardgate's tables at the same moment on a fresh
// database (a proxy following routing revisions while a workflow runner
// opens its store) all succeed.
func TestConcurrentCreation(t *testing.T) {
	env := testenv.Shared(t)
	ctx := context.Background()
	for round := range 4 {
		db := fmt.Sprintf("fresh%d", round)
		if err := env.Clusters[0].Exec(ctx, "postgres", "CREATE DATABASE "+db); err != nil {
			t.Fatal(err)
		}
		dsn := env.Clusters[0].DSN(db)
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if i%2 == 0 {
					conn, err := pgx.Connect(ctx, dsn)
					if err != nil {
						errs <- err
						return
					}
					defer conn.Close(ctx)
					errs <- routestate.EnsureSchema(ctx, conn)
					return
				}
				s, err := workflows.OpenStore(ctx, dsn)
				if err == nil {
					s.Close()
				}
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
	}
}
