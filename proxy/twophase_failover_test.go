package proxy

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/shardgate/shardgate/auth"
	"github.com/shardgate/shardgate/internal/testenv"
	"github.com/shardgate/shardgate/twopc"
)

// TestTwoPhaseAcrossFailover: a two-phase transaction over pg0 and pg1
// whose decision (commit) is recorded, then pg1's primary is killed
// (kill -9) before its COMMIT PREPARED: its prepared transaction is on
// the synchronous standby, which is promoted. The in-doubt record in
// main is resolved against the new primary: the rows are committed
// there and nothing stays prepared.
func TestTwoPhaseAcrossFailover(t *testing.T) {
	ctx := context.Background()
	p1 := startStandby(t, env.Clusters[1], testenv.StandbyOptions{})
	if err := p1.Promote(ctx); err != nil {
		t.Fatal(err)
	}
	sb := startStandby(t, p1, testenv.StandbyOptions{Sync: true})
	p := startProxy(t, failoverTopology(p1, sb, "10s"), func(c *Config) {
		c.Users = []auth.User{{Name: "app", Password: "x"}}
		c.RecoverEvery = -1
		c.twopcTune = func(tc *twopc.Config) { tc.RetryBackoff = time.Hour }
	})
	t.Cleanup(func() {
		rollbackLeftovers(t)
		_ = env.Clusters[0].Exec(context.Background(), "shop", "DELETE FROM shardgate.primaries WHERE cluster = 'pg1'")
	})
	setupShop(t, p)

	var gid string
	p.srv.twopc.coord.SetHooks(twopc.Hooks{
		AfterPrepare:  func(g string) error { gid = g; return nil },
		AfterDecision: func(string) error { return p1.Kill9() },
	})
	if err := insertOnBothClusters(t, p, 1); err != nil {
		t.Fatalf("COMMIT after the decision must succeed: %v", err)
	}
	p.srv.twopc.coord.SetHooks(twopc.Hooks{})
	wantDecision(t, gid, "commit")
	if err := sb.Promote(ctx); err != nil {
		t.Fatal(err)
	}
	direct := connect(t, sb.DSN("shop"))
	preparedOnSB := func() int {
		var n int
		if err := direct.QueryRow(ctx, "SELECT count(*) FROM pg_prepared_xacts WHERE split_part(gid, '@', 1) = $1", gid).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// A standby lists no prepared transaction: the promotion restores them.
	if n := preparedOnSB(); n != 1 {
		t.Fatalf("the promoted standby has %d prepared transactions of %s, want pg1's one", n, gid)
	}
	rs := p.srv.cur.Load().replicas["pg1"]
	waitFor(t, "the proxy to follow the promoted standby", 30*time.Second, func() bool {
		return rs.Primary().Host() == fmt.Sprintf("127.0.0.1:%d", sb.Port)
	})
	committed, rolledBack, err := p.srv.Recover(ctx)
	if err != nil || rolledBack != 0 {
		t.Fatalf("recover: committed %d rolled back %d: %v", committed, rolledBack, err)
	}
	waitFor(t, "pg1's part committed on the new primary", 15*time.Second, func() bool { return preparedOnSB() == 0 })
	onPg0 := count(t, env.Clusters[0].DSN("shop"), "SELECT count(*) FROM customers WHERE id BETWEEN 1 AND 10")
	onNew := count(t, sb.DSN("shop"), "SELECT count(*) FROM customers WHERE id BETWEEN 1 AND 10")
	t.Logf("gid %s: recovery committed %d; %d rows on pg0, %d on the new primary of pg1", gid, committed, onPg0, onNew)
	if onPg0+onNew != 10 || onNew == 0 || onPg0 == 0 {
		t.Fatalf("the transaction: %d rows on pg0 and %d on pg1's new primary, want all 10 over both", onPg0, onNew)
	}
	wantDecision(t, gid, "")
}
