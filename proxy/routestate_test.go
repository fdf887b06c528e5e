package proxy

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/shardgate/shardgate/auth"
	"github.com/shardgate/shardgate/internal/proxytest"
	"github.com/shardgate/shardgate/internal/schemalock"
	"github.com/shardgate/shardgate/routestate"
	"github.com/shardgate/shardgate/topology"
)

// TestRoutingRevisionFollowed: a proxy following main's routing revisions
// (as serve wires it) activates a secondary index a revision activates —
// which a file edit may not — shows where each part comes from in SHOW
// TOPOLOGY / SHOW GSI, lists itself in SHOW PROXIES, keeps the revision
// across RELOAD of the file, and holds a statement on a table a buffer
// request names until the request is withdrawn.
func TestRoutingRevisionFollowed(t *testing.T) {
	yaml := proxytest.Topology("shop", `groups:
  main:
    unsharded: true
    cluster: pg0
  by_customer:
    index: { name: by_customer, column: customer_id, type: bigint, function: xxhash }
    shards: { "-80": pg0, "80-": pg1 }
    tables:
      rs_orders: {}
    secondary_indexes:
      rs_orders_by_note: { table: rs_orders, column: note, type: text }
`+adminUsers, env.Clusters...)
	file := filepath.Join(t.TempDir(), "topology.yaml")
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	gate := routestate.NewGate()
	var fol *routestate.Follower
	p := startProxy(t, yaml, func(c *Config) {
		c.TopologyFile = file
		c.Users = []auth.User{{Name: "app", Password: "x"}, {Name: "boss", Password: "x", Admin: true}}
		c.Gate = gate
		c.Reload = func(t *topology.Topology) error { return fol.SetFile(t) }
	})
	mainDSN := env.Clusters[0].DSN("shop")
	mainConn := connect(t, mainDSN)
	mustExec(t, mainConn, schemalock.Prefix+"CREATE SCHEMA IF NOT EXISTS shardgate")
	mustExec(t, mainConn, "DROP TABLE IF EXISTS shardgate.routing_revisions, shardgate.proxies")
	var err error
	fol, err = routestate.Follow(ctx, mainDSN, p.addr, proxytest.Parse(t, yaml), gate, p.srv.Reload, proxytest.Logger())
	if err != nil {
		t.Fatal(err)
	}
	con := connect(t, adminDSN(p, "boss"))
	gsiState := func() (state, origin string) {
		_, rows := showRows(t, con, "SHOW GSI")
		return rows[0][5], rows[0][6]
	}
	if s, o := gsiState(); s != "backfilling" || o != "file" {
		t.Fatalf("before: %s from %s", s, o)
	}
	if _, rows := showRows(t, con, "SHOW PROXIES"); len(rows) != 1 || rows[0][1] != p.addr || rows[0][5] != "t" {
		t.Fatalf("SHOW PROXIES: %v", rows)
	}
	rev, err := routestate.Commit(ctx, mainConn, 0, "backfill", "rs_orders_by_note verified", func(s *routestate.State) error {
		s.GSI = map[string]string{"rs_orders_by_note": routestate.GSIActive}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for s, _ := gsiState(); s != "active"; s, _ = gsiState() {
		if time.Now().After(deadline) {
			t.Fatal("revision not followed within 2s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, o := gsiState(); o != "revision 1 by backfill (rs_orders_by_note verified)" {
		t.Fatalf("origin %q", o)
	}
	if !p.srv.cur.Load().vs.SecondaryIndexes()[0].Active {
		t.Fatal("the planner's vschema does not have the index active")
	}
	// RELOAD reads the file (backfilling) and keeps the revision's state.
	mustExec(t, con, "RELOAD")
	if s, _ := gsiState(); s != "active" {
		t.Fatalf("after RELOAD: %s", s)
	}
	if _, rows := showRows(t, con, "SHOW TOPOLOGY"); len(rows) == 0 || rows[0][8] != "file" {
		t.Fatalf("SHOW TOPOLOGY origin: %v", rows)
	}

	// A buffer request holds statements on rs_orders, not others.
	app := connect(t, p.dsn())
	mustExec(t, app, "DROP TABLE IF EXISTS rs_orders")
	mustExec(t, app, "CREATE TABLE rs_orders (customer_id bigint PRIMARY KEY, note text)")
	// A transaction opened before the request is armed is not held: it
	// finishes on the old routing (the switch waits for it); one opened
	// after is held like any statement.
	early := connect(t, p.dsn())
	mustExec(t, early, "BEGIN")
	mustExec(t, early, "SELECT 1")
	begun := connect(t, p.dsn()) // BEGIN only: nothing ran yet
	mustExec(t, begun, "BEGIN")
	req := &routestate.BufferRequest{ID: "t1", Tables: []string{"public.rs_orders"}, Deadline: time.Now().Add(10 * time.Second)}
	if rev, err = routestate.Commit(ctx, mainConn, rev.Rev, "switch", "buffer", func(s *routestate.State) error { s.Buffer = req; return nil }); err != nil {
		t.Fatal(err)
	}
	for !gate.Armed() {
		time.Sleep(10 * time.Millisecond)
	}
	mustExec(t, app, "SELECT 1")
	mustExec(t, early, "INSERT INTO rs_orders (customer_id, note) VALUES (10, 'early')")
	mustExec(t, early, "COMMIT")
	done := make(chan error, 4)
	late := connect(t, p.dsn())
	mustExec(t, late, "BEGIN")
	for i, c := range []*pgx.Conn{late, begun} {
		go func() {
			_, err := c.Exec(context.Background(), "INSERT INTO rs_orders (customer_id, note) VALUES ($1, 'late')", 11+i)
			if err == nil {
				_, err = c.Exec(context.Background(), "COMMIT")
			}
			done <- err
		}()
	}
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
		c := connect(t, p.dsn())
		go func() {
			_, err := c.Exec(context.Background(), "INSERT INTO rs_orders (customer_id, note) VALUES ($1, 'x')", mode, map[pgx.QueryExecMode]int{pgx.QueryExecModeSimpleProtocol: 1}[mode]+2)
			done <- err
		}()
	}
	time.Sleep(300 * time.Millisecond)
	if len(done) != 0 {
		t.Fatalf("an INSERT into rs_orders was not held: %v", <-done)
	}
	if _, err := routestate.Commit(ctx, mainConn, rev.Rev, "switch", "release", func(s *routestate.State) error { s.Buffer = nil; return nil }); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4; i++ {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(3 * time.Second):
			t.Fatal("held INSERT not released")
		}
	}
	if st := gate.Stats(); st.Buffered != 4 {
		t.Fatalf("gate stats %+v", st)
	}
	var n int
	if err := app.QueryRow(ctx, "SELECT count(*) FROM rs_orders").Scan(&n); err != nil || n != 5 {
		t.Fatalf("rows %d %v", n, err)
	}
}
