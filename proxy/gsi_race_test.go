package proxy

import (
	"context"
	"errors"
	"math/rand"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// TestGSIConcurrent: 8 clients writing at random for a few seconds
// (SHARDGATE_GSI_SECONDS, default 3) — inserts through both protocols,
// deletes by the indexed column and by key, updates of other columns and
// of the indexed columns through both protocols —
// leave each lookup table exactly the projection of the owner table.
func TestGSIConcurrent(t *testing.T) {
	p := startProxy(t, gsiTopology(), nil)
	setupGSI(t, p)
	dur := 3 * time.Second
	if s := os.Getenv("SHARDGATE_GSI_SECONDS"); s != "" {
		if d, err := time.ParseDuration(s + "s"); err == nil {
			dur = d
		}
	}
	notes := []any{"a", "b", "c", nil}
	var ok, dup, retry atomic.Int64
	deadline := time.Now().Add(dur)
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			c := connect(t, p.dsn())
			rnd := rand.New(rand.NewSource(int64(w)))
			for time.Now().Before(deadline) {
				id, cust := rnd.Int63n(200), rnd.Int63n(50)
				note := notes[rnd.Intn(len(notes))]
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				var err error
				switch rnd.Intn(9) {
				case 0, 1:
					_, err = c.Exec(ctx, "INSERT INTO gs_orders (id, customer_id, note) VALUES ($1, $2, $3)", id, cust, note)
				case 2:
					_, err = c.Exec(ctx, "INSERT INTO gs_orders (id, customer_id, note) VALUES ($1, $2, 'simple')", pgx.QueryExecModeSimpleProtocol, id, cust)
				case 3:
					_, err = c.Exec(ctx, "DELETE FROM gs_orders WHERE id = $1", id)
				case 4:
					_, err = c.Exec(ctx, "DELETE FROM gs_orders WHERE customer_id = $1 AND id < $2", cust, id)
				case 5:
					_, err = c.Exec(ctx, "UPDATE gs_orders SET total = coalesce(total, 0) + 1 WHERE customer_id = $1", cust)
				case 6:
					_, err = c.Exec(ctx, "UPDATE gs_orders SET id = $1 WHERE id = $2", id, rnd.Int63n(200))
				case 7:
					_, err = c.Exec(ctx, "UPDATE gs_orders SET note = $1 WHERE customer_id = $2", note, cust)
				case 8:
					_, err = c.Exec(ctx, "UPDATE gs_orders SET id = id + 1, note = 'u' WHERE customer_id = $1 AND id < $2", pgx.QueryExecModeSimpleProtocol, cust, id)
				}
				cancel()
				var pe *pgconn.PgError
				switch {
				case err == nil:
					ok.Add(1)
				case errors.As(err, &pe) && pe.Code == "23505":
					dup.Add(1)
				case errors.As(err, &pe) && (pe.Code == "40P01" || pe.Code == "40001"):
					retry.Add(1) // two updates locking rows in opposite orders
				default:
					t.Errorf("client %d: %v", w, err)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	n := checkLookups(t, p)
	t.Logf("%d statements, %d unique violations, %d deadlocks or serialization failures, %d owner rows at the end", ok.Load(), dup.Load(), retry.Load(), n)
	if ok.Load() == 0 || dup.Load() == 0 {
		t.Errorf("no contention: %d ok, %d duplicates", ok.Load(), dup.Load())
	}
}

// TestGSIUniqueRace: pairs of clients insert the same value at the same
// moment for owners on different clusters: exactly one of each pair wins,
// the other gets the index's 23505.
func TestGSIUniqueRace(t *testing.T) {
	p := startProxy(t, gsiTopology(), nil)
	setupGSI(t, p)
	uniqueRace(t, p)
}

// TestGSIUniqueRaceBestEffort: the same under commit: best_effort, each
// value first given a dangling entry (of a customer with no rows) that
// both inserts of the pair try to take over.
func TestGSIUniqueRaceBestEffort(t *testing.T) {
	p := startProxy(t, gsiTopology(), func(c *Config) { c.Commit = CommitBestEffort })
	setupGSI(t, p)
	byCluster := map[string]*pgx.Conn{}
	for _, cl := range env.Clusters {
		byCluster[cl.Name] = connect(t, cl.DSN("shop"))
	}
	for i := int64(0); i < 20; i++ {
		mustExec(t, byCluster[lookupClusterOf(t, p, 5000+i)], "INSERT INTO gs_orders_by_id (id, customer_id) VALUES ($1, 999)", 5000+i)
	}
	uniqueRace(t, p)
}

// uniqueRace inserts 20 pairs of the same id at the same moment, for
// customers on different clusters: exactly one of each pair wins, and the
// lookup tables are exact.
func uniqueRace(t *testing.T, p *testProxy) {
	other := int64(2)
	for clusterOf(t, p, other) == clusterOf(t, p, 1) {
		other++
	}
	const pairs = 20
	conns := [2]*pgx.Conn{connect(t, p.dsn()), connect(t, p.dsn())}
	for i := int64(0); i < pairs; i++ {
		var wg sync.WaitGroup
		var errs [2]error
		start := make(chan struct{})
		for j, cust := range []int64{1, other} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				mode := []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeSimpleProtocol}[i%2]
				_, errs[j] = conns[j].Exec(context.Background(), "INSERT INTO gs_orders (id, customer_id) VALUES ($1, $2)", mode, 5000+i, cust)
			}()
		}
		close(start)
		wg.Wait()
		won := 0
		for _, err := range errs {
			var pe *pgconn.PgError
			switch {
			case err == nil:
				won++
			case !errors.As(err, &pe) || pe.Code != "23505" || pe.ConstraintName != "gs_orders_by_id":
				t.Fatalf("pair %d: %v", i, err)
			}
		}
		if won != 1 {
			t.Fatalf("pair %d: %d inserts won, want exactly 1", i, won)
		}
	}
	if n := checkLookups(t, p); n != pairs {
		t.Errorf("%d owner rows, want %d", n, pairs)
	}
}
