package proxy

import (
	"context"
	"testing"
	"time"
)

func preparedCount(t *testing.T) int {
	n := 0
	for _, cl := range env.Clusters {
		n += count(t, cl.DSN("shop"), "SELECT count(*) FROM pg_prepared_xacts WHERE gid LIKE 'shardgate\\_%'")
	}
	return n
}

func customersEverywhere(t *testing.T) int {
	n := 0
	for _, cl := range env.Clusters {
		n += count(t, cl.DSN("shop"), "SELECT count(*) FROM customers")
	}
	return n
}

// insertOnBothClusters writes ten customers, which the xxhash spreads over
// both clusters, in one transaction.
func insertOnBothClusters(t *testing.T, p *testProxy, first int) error {
	c := connect(t, p.dsn())
	ctx := context.Background()
	mustExec(t, c, "BEGIN")
	for id := first; id < first+10; id++ {
		mustExec(t, c, "INSERT INTO customers (id, name) VALUES ($1, 'x')", id)
	}
	_, err := c.Exec(ctx, "COMMIT")
	return err
}

func TestTwoPhaseCommit(t *testing.T) {
	fast := func(c *Config) { c.InDoubtTimeout = time.Millisecond; c.RecoverEvery = -1 }
	p := startProxy(t, shopTopology(""), fast)
	setupShop(t, p)
	ctx := context.Background()

	// A normal multi-cluster commit leaves nothing prepared behind.
	if err := insertOnBothClusters(t, p, 1); err != nil {
		t.Fatal(err)
	}
	if n := customersEverywhere(t); n != 10 {
		t.Fatalf("after commit: %d rows", n)
	}
	if n := preparedCount(t); n != 0 {
		t.Fatalf("%d prepared transactions left", n)
	}

	// Crash after PREPARE, before the decision: recovery rolls back.
	p.srv.twopc.failAt = failAfterPrepare
	if err := insertOnBothClusters(t, p, 100); sqlstate(err) != "57P01" {
		t.Fatalf("failpoint: want 57P01, got %v", err)
	}
	if n := preparedCount(t); n != 2 {
		t.Fatalf("want 2 in-doubt transactions, got %d", n)
	}
	restarted := startProxy(t, shopTopology(""), fast)
	time.Sleep(5 * time.Millisecond)
	c, rb, err := restarted.srv.Recover(ctx)
	if err != nil || c != 0 || rb != 2 {
		t.Fatalf("recover: committed %d rolled back %d err %v", c, rb, err)
	}
	if n := customersEverywhere(t); n != 10 {
		t.Fatalf("after rollback recovery: %d rows, want 10", n)
	}

	// Crash after the decision: recovery commits everywhere.
	p.srv.twopc.failAt = failAfterDecision
	if err := insertOnBothClusters(t, p, 200); sqlstate(err) != "57P01" {
		t.Fatalf("failpoint: want 57P01, got %v", err)
	}
	if n := customersEverywhere(t); n != 10 {
		t.Fatalf("before recovery: %d rows visible, want 10", n)
	}
	c, rb, err = restarted.srv.Recover(ctx)
	if err != nil || c != 2 || rb != 0 {
		t.Fatalf("recover: committed %d rolled back %d err %v", c, rb, err)
	}
	if n := customersEverywhere(t); n != 20 {
		t.Fatalf("after commit recovery: %d rows, want 20", n)
	}
	if n := preparedCount(t); n != 0 {
		t.Fatalf("%d prepared transactions left", n)
	}
}
