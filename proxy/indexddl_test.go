package proxy

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/shardgate/shardgate/internal/proxytest"
)

// TestIndexStatementsEveryCluster: an index created through the proxy on a
// sharded table exists on every cluster of its group; DROP INDEX, ALTER
// INDEX and REINDEX INDEX through the proxy reach every one of them, in
// both protocols, and an index of main's alone is dropped without errors
// from the clusters that never had it. Main's error is the client's.
func TestIndexStatementsEveryCluster(t *testing.T) {
	p := startProxy(t, shopTopology(""), nil)
	c := setupShop(t, p)
	ctx := context.Background()
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
		exec := func(sql string) error {
			_, err := c.Exec(ctx, sql, mode)
			return err
		}
		for _, sql := range []string{
			"CREATE INDEX orders_total_idx ON orders (total)",
			"ALTER INDEX orders_total_idx RENAME TO orders_sum_idx",
			"ALTER INDEX orders_sum_idx SET (fillfactor = 70)",
			"REINDEX INDEX orders_sum_idx",
			"CREATE INDEX settings_v_idx ON settings (v)",
		} {
			if err := exec(sql); err != nil {
				t.Fatalf("%s: %s: %v", mode, sql, err)
			}
		}
		for _, cl := range env.Clusters {
			if n := count(t, cl.DSN("shop"), "SELECT count(*) FROM pg_indexes WHERE indexname = 'orders_sum_idx' AND indexdef LIKE '%fillfactor=''70''%'"); n != 1 {
				t.Fatalf("%s: cluster %s has %d renamed orders_sum_idx with fillfactor 70, want 1", mode, cl.Name, n)
			}
		}
		for _, sql := range []string{"DROP INDEX orders_sum_idx", "DROP INDEX settings_v_idx"} {
			if err := exec(sql); err != nil {
				t.Fatalf("%s: %s: %v", mode, sql, err)
			}
		}
		for _, cl := range env.Clusters {
			if n := count(t, cl.DSN("shop"), "SELECT count(*) FROM pg_indexes WHERE indexname IN ('orders_sum_idx', 'orders_total_idx', 'settings_v_idx')"); n != 0 {
				t.Fatalf("%s: cluster %s still has %d of the dropped indexes", mode, cl.Name, n)
			}
		}
		if err := exec("DROP INDEX orders_sum_idx"); sqlstate(err) != "42704" {
			t.Fatalf("%s: DROP INDEX of a missing index: %v, want 42704 from main", mode, err)
		}
		if err := exec("DROP INDEX CONCURRENTLY IF EXISTS orders_sum_idx"); sqlstate(err) != "0A000" {
			t.Fatalf("%s: DROP INDEX CONCURRENTLY: %v, want 0A000", mode, err)
		}
		if err := exec("DROP INDEX IF EXISTS orders_sum_idx"); err != nil {
			t.Fatalf("%s: DROP INDEX IF EXISTS: %v", mode, err)
		}
	}
}

// DROP INDEX without IF EXISTS of the index of a group that does not live
// on main's cluster (it exists on that group's clusters only) drops it, as
// Postgres drops an index that exists, in both protocols, in and outside
// a transaction block; an index that exists nowhere is still 42704.
// Before, main's cluster ran the statement as written and failed 42704.
func TestDropIndexNotOnMain(t *testing.T) {
	p := startProxy(t, proxytest.Topology("shop", `groups:
  main:
    unsharded: true
    cluster: pg0
  fleet:
    unsharded: true
    cluster: pg1
    tables: [trucks]
`, env.Clusters...), nil)
	c := connect(t, p.dsn())
	ctx := context.Background()
	mustExec(t, c, "DROP TABLE IF EXISTS trucks")
	mustExec(t, c, "CREATE TABLE trucks (id bigint PRIMARY KEY, plate text)")
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
		for _, inTx := range []bool{false, true} {
			mustExec(t, c, "CREATE INDEX trucks_plate_idx ON trucks (plate)")
			if n := count(t, env.Clusters[1].DSN("shop"), "SELECT count(*) FROM pg_indexes WHERE indexname = 'trucks_plate_idx'"); n != 1 {
				t.Fatalf("pg1 has %d trucks_plate_idx", n)
			}
			if inTx {
				mustExec(t, c, "BEGIN")
			}
			if tag, err := c.Exec(ctx, "DROP INDEX trucks_plate_idx", mode); err != nil || tag.String() != "DROP INDEX" {
				t.Fatalf("%s (in a transaction: %v): DROP INDEX: %v %v", mode, inTx, tag, err)
			}
			if inTx {
				mustExec(t, c, "COMMIT")
			}
			if n := count(t, env.Clusters[1].DSN("shop"), "SELECT count(*) FROM pg_indexes WHERE indexname = 'trucks_plate_idx'"); n != 0 {
				t.Fatalf("%s: pg1 still has trucks_plate_idx", mode)
			}
		}
		if _, err := c.Exec(ctx, "DROP INDEX trucks_plate_idx", mode); sqlstate(err) != "42704" {
			t.Fatalf("%s: DROP INDEX of an index that exists nowhere: %v, want 42704", mode, err)
		}
	}
}
