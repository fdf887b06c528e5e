package difftest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/shardgate/shardgate/internal/proxytest"
	"github.com/shardgate/shardgate/internal/testenv"
	"github.com/shardgate/shardgate/proxy"
	"github.com/shardgate/shardgate/routestate"
)

const lookupDatabase = "lkdiff"

// TestLookupDirectoryDifferential: a lookup group whose function puts
// every key on pg0 while its list and directory place some keys on pg1
// answers reads and writes as one Postgres (pg2) does, in both
// protocols.
func TestLookupDirectoryDifferential(t *testing.T) {
	env := testenv.Shared(t)
	ctx := context.Background()
	for _, c := range env.Clusters {
		_ = c.Exec(ctx, "", "DROP DATABASE IF EXISTS "+lookupDatabase+" WITH (FORCE)")
		if err := c.Exec(ctx, "", "CREATE DATABASE "+lookupDatabase); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Exec(ctx, "", "DROP DATABASE IF EXISTS "+lookupDatabase+" WITH (FORCE)") })
	}
	yaml := proxytest.Topology(lookupDatabase, `groups:
  main: { unsharded: true, cluster: pg0 }
  by_tenant:
    index: { name: by_tenant, column: tenant_id, type: bigint, function: xxhash }
    shards: { "-80": pg0, "80-": pg0 }
    placement: lookup
    list: { "3": pg1 }
    lookup_clusters: [pg1]
    tables: { lk_rows: {} }
`, env.Clusters[0], env.Clusters[1])
	topo := proxytest.Parse(t, yaml)
	cfg := proxy.Config{PoolSize: 4, MaxWait: 10 * time.Second, Logger: proxytest.Logger(), Gate: routestate.NewGate()}
	srv, err := proxy.NewServer(cfg, topo)
	if err != nil {
		t.Fatal(err)
	}
	addr := proxytest.Serve(t, srv)
	mainDSN := env.Clusters[0].DSN(lookupDatabase)
	fctx, cancel := context.WithCancel(ctx)
	fol, err := routestate.Follow(fctx, mainDSN, addr, topo, cfg.Gate, srv.Reload, proxytest.Logger())
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); <-fol.Done() })
	mainConn := proxytest.Connect(t, mainDSN)
	rev, err := routestate.Commit(ctx, mainConn, 0, "test", "directory", func(s *routestate.State) error {
		s.Directory = map[string]map[string]*routestate.Placed{"by_tenant": {"5": {Cluster: "pg1"}, "8": {Cluster: "pg1"}, "13": {Cluster: "pg1"}}}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := routestate.WaitServed(ctx, mainConn, rev.Rev, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	s := &session{t: t, proxyDSN: proxytest.DSN(addr, "app", lookupDatabase), oracleDSN: env.Clusters[2].DSN(lookupDatabase)}
	s.proxy, s.oracle = s.connect(s.proxyDSN), s.connect(s.oracleDSN)
	defer s.proxy.Close(ctx)
	defer s.oracle.Close(ctx)
	setup := []string{"CREATE TABLE lk_rows (tenant_id bigint NOT NULL, id int NOT NULL, v text, PRIMARY KEY (tenant_id, id))"}
	var vals []string
	for tenant := 1; tenant <= 20; tenant++ {
		for id := 1; id <= 6; id++ {
			vals = append(vals, fmt.Sprintf("(%d, %d, 'v%d')", tenant, id, (tenant*7+id*3)%11))
		}
	}
	setup = append(setup, "INSERT INTO lk_rows VALUES "+strings.Join(vals, ", "))
	for _, sql := range setup {
		for _, onProxy := range []bool{true, false} {
			if r := s.exec(onProxy, pgx.QueryExecModeSimpleProtocol, sql); r.Err != nil {
				t.Fatalf("%s (proxy %v): %v", sql, onProxy, r.Err)
			}
		}
	}
	var onPg1 string
	pg1 := proxytest.Connect(t, env.Clusters[1].DSN(lookupDatabase))
	if err := pg1.QueryRow(ctx, "SELECT string_agg(DISTINCT tenant_id::text, ',' ORDER BY tenant_id::text) FROM lk_rows").Scan(&onPg1); err != nil || onPg1 != "13,3,5,8" {
		t.Fatalf("tenants on pg1: %q %v (want the list's 3 and the directory's 5, 8, 13)", onPg1, err)
	}
	steps := []struct {
		sql   string
		order orderKind
		write bool
		args  []any
	}{
		{sql: "SELECT * FROM lk_rows WHERE tenant_id = 5 ORDER BY id", order: orderFixed},
		{sql: "SELECT * FROM lk_rows WHERE tenant_id = 3 ORDER BY id", order: orderFixed},
		{sql: "SELECT * FROM lk_rows WHERE tenant_id = $1 ORDER BY id", order: orderFixed, args: []any{int64(8)}},
		{sql: "SELECT * FROM lk_rows WHERE tenant_id IN (1, 3, 5, 7, 13) ORDER BY tenant_id, id", order: orderFixed},
		{sql: "SELECT tenant_id, count(*), sum(id), max(v) FROM lk_rows GROUP BY tenant_id ORDER BY tenant_id", order: orderFixed},
		{sql: "SELECT count(*), count(DISTINCT v) FROM lk_rows", order: orderFixed},
		{sql: "SELECT * FROM lk_rows ORDER BY v DESC, tenant_id, id LIMIT 9", order: orderFixed},
		{sql: "SELECT * FROM lk_rows WHERE tenant_id IN (2, 4)", order: orderNone},
		{sql: "UPDATE lk_rows SET v = v || '!' WHERE tenant_id IN (5, 6) AND id < 4", write: true},
		{sql: "DELETE FROM lk_rows WHERE tenant_id = 13 AND id > 3 RETURNING tenant_id, id", write: true},
		{sql: "INSERT INTO lk_rows VALUES (8, 100, 'x'), (9, 100, 'y'), (3, 100, 'z') RETURNING *", write: true},
		{sql: "UPDATE lk_rows SET v = 'all' WHERE id = 2", write: true},
		{sql: "SELECT * FROM lk_rows ORDER BY tenant_id, id", order: orderFixed},
	}
	for _, st := range steps {
		q := &query{ID: st.sql, SQL: st.sql, Order: st.order, Write: st.write, Args: st.args}
		ms := modes
		if st.write {
			ms = modes[:1] // a write runs once per side
		}
		for _, m := range ms {
			p := s.exec(true, m.mode, q.SQL, q.Args...)
			o := s.exec(false, m.mode, q.SQL, q.Args...)
			if o.Err != nil {
				t.Fatalf("%s: oracle: %v", q.SQL, o.Err)
			}
			c := &comparer{m: s.proxy.TypeMap(), q: q}
			if diffs := c.compare(p, o); len(diffs) > 0 {
				t.Errorf("%s (%s):\n%s", q.SQL, m.name, strings.Join(diffs, "\n"))
			}
		}
	}
}
