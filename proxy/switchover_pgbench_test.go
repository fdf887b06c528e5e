package proxy

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/shardgate/shardgate/auth"
	"github.com/shardgate/shardgate/internal/testenv"
)

// Planned switchovers under pgbench (the lanes of
// failover_pgbench_test.go).

// switchoverSetup is pg1 on a primary of its own (a promoted copy of
// the shared pg1) with one asynchronous standby, behind n proxies with
// failover_buffer buffer.
func switchoverSetup(t *testing.T, n int, buffer string) (p1, sb *testenv.Cluster, proxies []*testProxy) {
	t.Helper()
	p1 = startStandby(t, env.Clusters[1], testenv.StandbyOptions{})
	if err := p1.Promote(context.Background()); err != nil {
		t.Fatal(err)
	}
	sb = startStandby(t, p1, testenv.StandbyOptions{})
	yaml := failoverTopology(p1, sb, buffer) + adminUsers
	users := func(c *Config) {
		c.Users = []auth.User{{Name: "app", Password: "x"}, {Name: "boss", Password: "x", Admin: true}}
	}
	for i := 0; i < n; i++ {
		proxies = append(proxies, startProxy(t, yaml, users))
	}
	setupShop(t, proxies[0])
	t.Cleanup(func() {
		_ = env.Clusters[0].Exec(context.Background(), "shop", "DELETE FROM shardgate.primaries WHERE cluster = 'pg1'")
	})
	return p1, sb, proxies
}

// switchover runs cmd on console once (simple protocol) and returns its
// row: cluster, host, epoch, pause_ms.
func switchover(t *testing.T, console *pgx.Conn, cmd string) ([4]string, error) {
	t.Helper()
	var row [4]string
	err := console.QueryRow(context.Background(), cmd, pgx.QueryExecModeSimpleProtocol).Scan(&row[0], &row[1], &row[2], &row[3])
	return row, err
}

// maxLatency is the longest latency of the acknowledged transactions of
// the lanes lane%mod == rem that began within [from, to], and how many.
func maxLatency(res testenv.LanesResult, mod, rem int, from, to time.Time) (time.Duration, int) {
	var mx time.Duration
	n := 0
	for _, tx := range res.Txns {
		if tx.Lane%mod != rem || tx.Start.Before(from) || tx.Start.After(to) {
			continue
		}
		n++
		mx = max(mx, tx.End.Sub(tx.Start))
	}
	return mx, n
}

// noLaneErrors fails the test for every run that ended in an error.
func noLaneErrors(t *testing.T, res testenv.LanesResult) {
	t.Helper()
	for _, e := range res.Errors {
		t.Errorf("lane %d run %d failed: %s", e.Lane, e.Run, e.Message)
	}
}

// TestSwitchoverUnderPgbench: 8 pgbench lanes over two proxies write
// through SWITCHOVER pg1 on the first proxy, the second one PAUSEd for
// it (and RESUMEd once it follows main's new epoch), as docs/admin.md
// says to: no transaction fails, none acknowledged is lost, and the
// write pause is measured (pause_ms, and the longest latency pgbench
// logged).
func TestSwitchoverUnderPgbench(t *testing.T) {
	ctx := context.Background()
	p1, sb, px := switchoverSetup(t, 2, "10s")
	pa, pb := px[0], px[1]
	load := startWriteLanes(t, 8, 12*time.Second, pa, pb)
	time.Sleep(3 * time.Second)
	ca, cb := connect(t, adminDSN(pa, "boss")), connect(t, adminDSN(pb, "boss"))
	start := time.Now()
	if _, err := cb.Exec(ctx, "PAUSE pg1"); err != nil {
		t.Fatalf("PAUSE on the second proxy: %v", err)
	}
	paused := time.Now()
	row, err := switchover(t, ca, fmt.Sprintf("SWITCHOVER pg1 TO 127.0.0.1:%d", sb.Port))
	if err != nil {
		t.Fatalf("SWITCHOVER: %v", err)
	}
	switched := time.Now()
	rsb := pb.srv.cur.Load().replicas["pg1"]
	waitFor(t, "the second proxy to follow main's epoch", 30*time.Second, func() bool { return rsb.FailoverState().Epoch == 1 })
	if _, err := cb.Exec(ctx, "RESUME pg1"); err != nil {
		t.Fatalf("RESUME on the second proxy: %v", err)
	}
	resumed := time.Now()
	res, err := load.Wait()
	if err != nil {
		t.Fatal(err)
	}
	noLaneErrors(t, res)
	check := checkLaneWrites(t, res, env.Clusters[0], sb)
	if check.Lost != 0 || check.Dup != 0 {
		t.Fatalf("%d acknowledged writes lost, %d duplicated", check.Lost, check.Dup)
	}
	la, na := maxLatency(res, 2, 0, paused, switched)
	lb, nb := maxLatency(res, 2, 1, start, resumed)
	t.Logf("switchover under pgbench: %d runs, %d transactions acknowledged, %d failed, 0 lost; SWITCHOVER pause_ms %s (PAUSE on the other proxy took %s, its follow and RESUME %s more); longest transaction begun during it: %s over %d on the switching proxy, %s over %d on the paused one",
		res.Runs, check.Acked, len(res.Errors), row[3], paused.Sub(start).Round(time.Millisecond), resumed.Sub(switched).Round(time.Millisecond), la.Round(time.Millisecond), na, lb.Round(time.Millisecond), nb)
	if row[1] != fmt.Sprintf("127.0.0.1:%d", sb.Port) || row[2] != "1" {
		t.Fatalf("SWITCHOVER answered %v", row)
	}
	var ms float64
	fmt.Sscan(row[3], &ms)
	if ms > 2000 {
		t.Fatalf("writes held %.1f ms", ms)
	}
	checkFollowed(t, sb, p1, 1, pa, pb)
}

// TestSwitchoverWaitPromotion: SWITCHOVER ... WAIT PROMOTION under
// pgbench lanes does not promote the standby; once the old primary is
// fenced and the standby replayed it, the "operator" promotes it with
// pg_ctl and the switchover completes with no failed transaction. Not
// promoted within the failover buffer, it fails with 57014 and writes go
// on on the old primary, unfenced.
func TestSwitchoverWaitPromotion(t *testing.T) {
	ctx := context.Background()
	// The buffer leaves the "operator" below room to promote on a loaded
	// machine.
	p1, sb, px := switchoverSetup(t, 1, "6s")
	pa := px[0]
	console := connect(t, adminDSN(pa, "boss"))
	cmd := fmt.Sprintf("SWITCHOVER pg1 TO 127.0.0.1:%d WAIT PROMOTION", sb.Port)

	// Nobody promotes: 57014 after the buffer, the old primary
	// writable again, no transaction failed.
	load := startWriteLanes(t, 4, 10*time.Second, pa)
	time.Sleep(2 * time.Second)
	start := time.Now()
	_, err := switchover(t, console, cmd)
	if sqlstate(err) != "57014" {
		t.Fatalf("SWITCHOVER WAIT PROMOTION, nobody promoting: want 57014, got %v", err)
	}
	gaveUp := time.Now()
	t.Logf("not promoted: %v after %s", err, gaveUp.Sub(start).Round(time.Millisecond))
	if d := gaveUp.Sub(start); d < 6*time.Second {
		t.Fatalf("gave up after %s, before the failover buffer (6s)", d)
	}
	res, err := load.Wait()
	if err != nil {
		t.Fatal(err)
	}
	noLaneErrors(t, res)
	if check := checkLaneWrites(t, res, env.Clusters[0], p1); check.Lost != 0 || check.Dup != 0 {
		t.Fatalf("%d acknowledged writes lost, %d duplicated", check.Lost, check.Dup)
	}
	held, n := maxLatency(res, 1, 0, start, gaveUp)
	var ro string
	if err := connect(t, p1.DSN("shop")).QueryRow(ctx, "SHOW default_transaction_read_only").Scan(&ro); err != nil || ro != "off" {
		t.Fatalf("the old primary after the switchover gave up: default_transaction_read_only %q, %v", ro, err)
	}
	if rs := pa.srv.cur.Load().replicas["pg1"]; rs.Primary().Host() != fmt.Sprintf("127.0.0.1:%d", p1.Port) || rs.FailoverState().Epoch != 0 {
		t.Fatalf("pg1's writes go to %s at epoch %d", rs.Primary().Host(), rs.FailoverState().Epoch)
	}
	t.Logf("not promoted: %d transactions acknowledged, 0 failed, all on the old primary; the longest of the %d begun during the switchover: %s", len(res.Txns), n, held.Round(time.Millisecond))
	mustExec(t, connect(t, pa.dsn()), "DELETE FROM customers WHERE name = 'pgbench'") // the ids come again

	// The operator promotes once the old primary is fenced and the
	// standby has replayed it.
	promoted := make(chan error, 1)
	go func() {
		promoted <- func() error {
			for {
				var ro string
				c, err := pgx.Connect(ctx, p1.DSN("shop"))
				if err != nil {
					return err
				}
				err = c.QueryRow(ctx, "SHOW default_transaction_read_only").Scan(&ro)
				c.Close(ctx)
				if err != nil {
					return err
				}
				if ro == "on" {
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
			wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			if err := sb.WaitReplay(wctx); err != nil {
				return err
			}
			return sb.Promote(ctx)
		}()
	}()
	load = startWriteLanes(t, 4, 8*time.Second, pa)
	time.Sleep(2 * time.Second)
	row, err := switchover(t, console, cmd)
	if err != nil {
		t.Fatalf("SWITCHOVER WAIT PROMOTION: %v", err)
	}
	if err := <-promoted; err != nil {
		t.Fatalf("the operator's promotion: %v", err)
	}
	res, err = load.Wait()
	if err != nil {
		t.Fatal(err)
	}
	noLaneErrors(t, res)
	check := checkLaneWrites(t, res, env.Clusters[0], sb)
	if check.Lost != 0 || check.Dup != 0 {
		t.Fatalf("%d acknowledged writes lost, %d duplicated", check.Lost, check.Dup)
	}
	t.Logf("promoted by pg_ctl: SWITCHOVER answered %v; %d transactions acknowledged, 0 failed, 0 lost", row, check.Acked)
	if row[1] != fmt.Sprintf("127.0.0.1:%d", sb.Port) || row[2] != "1" {
		t.Fatalf("SWITCHOVER answered %v", row)
	}
	checkFollowed(t, sb, p1, 1, pa)
}
