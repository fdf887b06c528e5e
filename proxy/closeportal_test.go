package proxy

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgproto3"
)

// portalsHolding counts, on each test cluster, the shop sessions idle in a
// transaction that hold a snapshot (an open portal does, under READ
// COMMITTED; none does once its portals are closed).
func portalsHolding(t *testing.T) []int {
	t.Helper()
	var n []int
	for _, cl := range env.Clusters {
		c := connect(t, cl.DSN("shop"))
		var k int
		if err := c.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = 'shop' AND state = 'idle in transaction' AND backend_xmin IS NOT NULL`).Scan(&k); err != nil {
			t.Fatal(err)
		}
		_ = c.Close(context.Background())
		n = append(n, k)
	}
	return n
}

// The client's Close of a named portal closes it on the backends that
// hold it, before the batch's Sync, as Postgres closes it: the backend
// portal does not stay open, with its snapshot and memory, until the
// transaction ends. Both for a portal on one backend (it leaves
// pg_cursors of the session's connection) and for a row-limited scatter
// over two shards (neither shard's backend keeps a snapshot).
func TestExtClosePortalOnBackends(t *testing.T) {
	p := startProxy(t, shopTopology(""), nil)
	c := setupShop(t, p)
	for _, cl := range env.Clusters {
		id := customerOn(t, p, cl.Name)
		for i := 0; i < 3; i++ {
			mustExec(t, c, "INSERT INTO orders (id, customer_id, total) VALUES ($1, $2, 1)", id*10+i, id)
		}
	}
	mustExec(t, c, "INSERT INTO settings SELECT 'k' || g, 'v' FROM generate_series(1, 5) g")
	x := dialRaw(t, p.addr)
	x.login(t)
	cursors := "SELECT count(*) FROM pg_cursors WHERE name = 'p1'"

	x.query(t, "BEGIN")
	x.sendAll(t, &pgproto3.Parse{Query: "SELECT k FROM settings FOR UPDATE"}, &pgproto3.Bind{DestinationPortal: "p1"},
		&pgproto3.Execute{Portal: "p1", MaxRows: 2}, &pgproto3.Sync{})
	if got := x.until(t, 'Z'); got != "12DDsZ" {
		t.Fatalf("row-limited Execute: %s", got)
	}
	if n := x.value(t, cursors); n != "1" {
		t.Fatalf("%s portals p1 on the backend before Close", n)
	}
	x.sendAll(t, &pgproto3.Close{ObjectType: 'P', Name: "p1"}, &pgproto3.Sync{})
	if got := x.until(t, 'Z'); got != "3Z" {
		t.Fatalf("Close: %s", got)
	}
	if n := x.value(t, cursors); n != "0" {
		t.Fatalf("%s portals p1 left on the backend after the client closed it", n)
	}
	// Closed in the batch that bound it: gone before the next statement.
	x.sendAll(t, &pgproto3.Bind{DestinationPortal: "p1"}, &pgproto3.Execute{Portal: "p1", MaxRows: 1},
		&pgproto3.Close{ObjectType: 'P', Name: "p1"}, &pgproto3.Parse{Query: cursors}, &pgproto3.Bind{}, &pgproto3.Execute{}, &pgproto3.Sync{})
	if got, rows := x.typesAndRows(t); got != "2Ds31"+"2DC(SELECT 1)Z" || rows[1] != "0" {
		t.Fatalf("Bind, Execute, Close, count: %s %v", got, rows)
	}
	x.query(t, "COMMIT")

	x.query(t, "BEGIN")
	// A scatter and a merged read (ORDER BY), each suspended by a row limit.
	for _, q := range []string{"SELECT id FROM orders", "SELECT id FROM orders ORDER BY id"} {
		x.sendAll(t, &pgproto3.Parse{Query: q}, &pgproto3.Bind{DestinationPortal: "p2"},
			&pgproto3.Execute{Portal: "p2", MaxRows: 1}, &pgproto3.Sync{})
		if got := x.until(t, 'Z'); got != "12DsZ" {
			t.Fatalf("%s, row-limited: %s", q, got)
		}
		scatter := q == "SELECT id FROM orders" // a merge reads its shards' rows ahead: their portals hold no snapshot
		if n := portalsHolding(t); scatter && fmt.Sprint(n) != "[1 1]" {
			t.Fatalf("%s: sessions holding a snapshot on each cluster with the portal open: %v", q, n)
		}
		x.sendAll(t, &pgproto3.Close{ObjectType: 'P', Name: "p2"}, &pgproto3.Sync{})
		if got := x.until(t, 'Z'); got != "3Z" {
			t.Fatalf("%s: Close: %s", q, got)
		}
		if n := portalsHolding(t); fmt.Sprint(n) != "[0 0]" {
			t.Fatalf("%s: sessions holding a snapshot on each cluster after Close: %v", q, n)
		}
		// The name is free again on every shard, in the batch that closed it too.
		run := []pgproto3.FrontendMessage{&pgproto3.Bind{DestinationPortal: "p2"}, &pgproto3.Execute{Portal: "p2", MaxRows: 1},
			&pgproto3.Close{ObjectType: 'P', Name: "p2"}}
		x.sendAll(t, append(append(run, run...), &pgproto3.Sync{})...)
		if got := x.until(t, 'Z'); got != "2Ds32Ds3Z" {
			t.Fatalf("%s: bound again after Close: %s", q, got)
		}
	}
	x.sendAll(t, &pgproto3.Execute{Portal: "p2"}, &pgproto3.Sync{})
	if got := x.until(t, 'Z'); got != "E[34000]Z" {
		t.Fatalf("Execute after Close: %s", got)
	}
	x.query(t, "ROLLBACK")
}
