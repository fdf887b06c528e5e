package proxy

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/shardgate/shardgate/auth"
	"github.com/shardgate/shardgate/internal/testenv"
)

// Unplanned failover (backend/failover.go) against real streaming
// replication: the primary to lose is a copy of pg1 of its own (a
// standby of it, promoted), so the shared clusters stay up.

// failoverTopology is the shop topology with pg1 on primary, its
// replica standby.
func failoverTopology(primary, standby *testenv.Cluster, buffer string) string {
	yaml := replicaTopology("")
	old := fmt.Sprintf("%q", env.Clusters[1].DSN("shop"))
	return strings.Replace(yaml, "dsn: "+old, fmt.Sprintf("dsn: %q\n    replicas: [%q]\n    failover_buffer: %s", primary.DSN("shop"), standby.DSN("shop"), buffer), 1)
}

// writeResult is what one writer saw: the ids acknowledged, and when each
// failed statement started.
type writeResult struct {
	acked    []int64
	failures []time.Time
	errs     []string
	lastAck  []time.Time
}

func TestFailoverUnderLoad(t *testing.T) {
	ctx := context.Background()
	p1 := startStandby(t, env.Clusters[1], testenv.StandbyOptions{})
	if err := p1.Promote(ctx); err != nil {
		t.Fatal(err)
	}
	sb := startStandby(t, p1, testenv.StandbyOptions{Sync: true})
	yaml := failoverTopology(p1, sb, "10s")
	users := func(c *Config) {
		c.Users = []auth.User{{Name: "app", Password: "x"}, {Name: "boss", Password: "x", Admin: true}}
	}
	pa := startProxy(t, yaml+adminUsers, users)
	pb := startProxy(t, yaml+adminUsers, users)
	admin := setupShop(t, pa)
	t.Cleanup(func() {
		_ = env.Clusters[0].Exec(context.Background(), "shop", "DELETE FROM shardgate.primaries WHERE cluster = 'pg1'")
	})

	const writers = 6
	results, stopWriters := startWriters(t, writers, pa, pb)
	time.Sleep(time.Second)
	// The kill is in flight until the last process of the old primary
	// has exited: a statement written to one of its backends meanwhile
	// gets the backend's own 57P01 (terminating connection due to
	// unexpected postmaster exit), as a client of Postgres would.
	killStart := time.Now()
	if err := p1.Kill9(); err != nil {
		t.Fatal(err)
	}
	killedAt := time.Now()
	t.Logf("kill -9 of the primary's postmaster: its processes gone after %s", killedAt.Sub(killStart))
	time.Sleep(500 * time.Millisecond) // statements are held meanwhile
	if err := sb.Promote(ctx); err != nil {
		t.Fatal(err)
	}
	promotedAt := time.Now()
	time.Sleep(3 * time.Second)

	// The old primary comes back still a primary: it is fenced.
	if err := p1.Start(ctx); err != nil {
		t.Fatal(err)
	}
	oldRows := rowsOn(t, p1)
	time.Sleep(2 * time.Second)
	stopWriters()

	var resumed time.Duration = -1
	total := 0
	for w := range results {
		res := &results[w]
		total += len(res.acked)
		for _, f := range res.failures {
			if f.After(killedAt) {
				t.Errorf("writer %d: a statement started %s after the old primary's processes were gone failed: %v", w, f.Sub(killedAt), res.errs)
			}
		}
		for _, at := range res.lastAck {
			if at.After(promotedAt) {
				if d := at.Sub(promotedAt); resumed < 0 || d < resumed {
					resumed = d
				}
				break
			}
		}
		if len(res.errs) > 0 {
			t.Logf("writer %d: %d errors, in flight at the kill: %v", w, len(res.errs), res.errs)
		}
	}
	t.Logf("failover: %d writes acknowledged by %d writers over 2 proxies; first write acknowledged %s after the promotion", total, writers, resumed)
	if resumed < 0 || resumed > 2*time.Second {
		t.Fatalf("writes resumed %s after the promotion (goal: within 2s)", resumed)
	}
	// Every acknowledged write is on the new primary (or pg0).
	checkAcked(t, admin, results)
	// Both proxies follow the promoted standby, at main's epoch.
	checkFollowed(t, sb, p1, 1, pa, pb)
	// SHOW CLUSTERS: pg1's primary row is the promoted standby, epoch 1,
	// the old primary fenced.
	cols, rows := showRows(t, connect(t, adminDSN(pb, "boss")), "SHOW CLUSTERS")
	var primaryRow []string
	for _, r := range rows {
		if r[0] == "pg1" && r[6] == "primary" {
			primaryRow = r
		}
	}
	if len(cols) != 14 || primaryRow == nil || primaryRow[7] != fmt.Sprintf("127.0.0.1:%d", sb.Port) || primaryRow[12] != "1" || primaryRow[13] != fmt.Sprintf("127.0.0.1:%d", p1.Port) {
		t.Errorf("SHOW CLUSTERS %v: pg1's primary row %v", cols, primaryRow)
	}
	if e, f := hostMetric(t, pa.srv, "shardgate_host_primary_epoch", sb.Port), hostMetric(t, pa.srv, "shardgate_host_fenced", p1.Port); e != 1 || f != 1 {
		t.Errorf("metrics: primary epoch %v, old primary fenced %v", e, f)
	}
	if n := rowsOn(t, p1); n != oldRows {
		t.Fatalf("the old primary restarted as a primary got writes: %d rows, then %d", oldRows, n)
	}
	var epoch int64
	var host string
	mc := connect(t, env.Clusters[0].DSN("shop"))
	if err := mc.QueryRow(ctx, "SELECT host, epoch FROM shardgate.primaries WHERE cluster = 'pg1'").Scan(&host, &epoch); err != nil {
		t.Fatal(err)
	}
	t.Logf("main records pg1's primary %s at epoch %d; the old primary, restarted as a primary, kept %d rows", host, epoch, oldRows)
}

// startWriters runs n writers, spread over proxies, each inserting
// customers of ids of its own and logging those acknowledged, until
// the function returned is called.
func startWriters(t *testing.T, n int, proxies ...*testProxy) ([]writeResult, func()) {
	results := make([]writeResult, n)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < n; w++ {
		proxy := proxies[w%len(proxies)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := &results[w]
			c := connect(t, proxy.dsn())
			for i := int64(1); ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id := int64(w)*1_000_000 + i
				start := time.Now()
				_, err := c.Exec(context.Background(), "INSERT INTO customers VALUES ($1, 'w')", id)
				if err == nil {
					res.acked = append(res.acked, id)
					res.lastAck = append(res.lastAck, time.Now())
					continue
				}
				res.failures = append(res.failures, start)
				res.errs = append(res.errs, fmt.Sprintf("%s: %v", sqlstate(err), err))
				if c.IsClosed() {
					c = connect(t, proxy.dsn())
				}
			}
		}()
	}
	return results, func() {
		close(stop)
		wg.Wait()
	}
}

// checkAcked checks that every acknowledged id is there, once.
func checkAcked(t *testing.T, c *pgx.Conn, results []writeResult) {
	t.Helper()
	for w := range results {
		for _, id := range results[w].acked {
			var n int
			if err := c.QueryRow(context.Background(), "SELECT count(*) FROM customers WHERE id = $1", id).Scan(&n); err != nil || n != 1 {
				t.Fatalf("acknowledged id %d: %d rows, %v", id, n, err)
			}
		}
	}
}

// TestSwitchoverUnderLoad: SWITCHOVER pg1 TO its standby under a write
// load, through the admin console: no write fails, every acknowledged
// write is on the new primary, and the pause is measured.
func TestSwitchoverUnderLoad(t *testing.T) {
	ctx := context.Background()
	p1 := startStandby(t, env.Clusters[1], testenv.StandbyOptions{})
	if err := p1.Promote(ctx); err != nil {
		t.Fatal(err)
	}
	sb := startStandby(t, p1, testenv.StandbyOptions{})
	users := func(c *Config) {
		c.Users = []auth.User{{Name: "app", Password: "x"}, {Name: "boss", Password: "x", Admin: true}}
	}
	yaml := failoverTopology(p1, sb, "10s") + adminUsers
	pa := startProxy(t, yaml, users)
	admin := setupShop(t, pa)
	t.Cleanup(func() {
		_ = env.Clusters[0].Exec(context.Background(), "shop", "DELETE FROM shardgate.primaries WHERE cluster = 'pg1'")
	})
	results, stopWriters := startWriters(t, 4, pa)
	// Another writer straight on the old primary stands for a proxy that
	// has not followed the switchover yet: what it was told committed
	// must be on the new primary (the old one is fenced before the
	// promotion; before that fence, its writes after the promotion were
	// lost).
	if err := p1.Exec(ctx, "shop", "CREATE TABLE fence_probe (id int PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	stopDirect := directWriter(t, p1.DSN("shop"))
	time.Sleep(time.Second)
	console := connect(t, adminDSN(pa, "boss"))
	var inRec bool
	if err := connect(t, sb.DSN("shop")).QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&inRec); err != nil || !inRec {
		t.Fatalf("the standby: in recovery %v, %v", inRec, err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(sb.LogFile)
			t.Logf("standby log:\n%s", b)
		}
	})
	// Once (showRows runs a command twice, in both protocols).
	var row [4]string
	if err := console.QueryRow(ctx, fmt.Sprintf("SWITCHOVER pg1 TO 127.0.0.1:%d", sb.Port), pgx.QueryExecModeSimpleProtocol).Scan(&row[0], &row[1], &row[2], &row[3]); err != nil {
		t.Fatalf("SWITCHOVER: %v", err)
	}
	rows := [][]string{row[:]}
	time.Sleep(time.Second)
	stopWriters()
	acked := stopDirect()
	var onNew int
	if err := connect(t, sb.DSN("shop")).QueryRow(ctx, "SELECT count(*) FROM fence_probe WHERE id = ANY($1)", acked).Scan(&onNew); err != nil {
		t.Fatal(err)
	}
	if onNew != len(acked) {
		t.Errorf("the direct writer on the old primary was told %d writes committed; the new primary has %d of them", len(acked), onNew)
	}
	t.Logf("direct writer on the old primary: %d writes acknowledged, all on the new primary: %v", len(acked), onNew == len(acked))
	if rows[0][1] != fmt.Sprintf("127.0.0.1:%d", sb.Port) || rows[0][2] != "1" {
		t.Fatalf("SWITCHOVER answered %v", rows)
	}
	total := 0
	for w, res := range results {
		total += len(res.acked)
		if len(res.errs) > 0 {
			t.Errorf("writer %d: %d failed writes: %v", w, len(res.errs), res.errs)
		}
	}
	checkAcked(t, admin, results)
	oldRows := rowsOn(t, p1)
	t.Logf("switchover: %d writes by 4 writers, 0 failed; writes held %s ms (goal 500 ms); the old primary kept %d rows", total, rows[0][3], oldRows)
	var ms float64
	fmt.Sscan(rows[0][3], &ms)
	if ms > 2000 {
		t.Fatalf("writes held %.1f ms", ms)
	}
	if rs := pa.srv.cur.Load().replicas["pg1"]; rs.Primary().Host() != fmt.Sprintf("127.0.0.1:%d", sb.Port) {
		t.Fatalf("pg1's writes go to %s", rs.Primary().Host())
	}
}

// rowsOn counts the customers rows on c itself.
func rowsOn(t *testing.T, c *testenv.Cluster) int {
	t.Helper()
	conn := connect(t, c.DSN("shop"))
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM customers").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// directWriter inserts increasing ids into fence_probe over a connection
// straight to dsn, reconnecting after each error, until stopped; stop
// returns the ids whose INSERT was acknowledged.
func directWriter(t *testing.T, dsn string) func() []int32 {
	t.Helper()
	var acked []int32
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		var conn *pgx.Conn
		defer func() {
			if conn != nil {
				conn.Close(context.Background())
			}
		}()
		for id := int32(1); ; id++ {
			select {
			case <-done:
				return
			default:
			}
			if conn == nil {
				c, err := pgx.Connect(context.Background(), dsn)
				if err != nil {
					time.Sleep(5 * time.Millisecond)
					continue
				}
				conn = c
			}
			if _, err := conn.Exec(context.Background(), "INSERT INTO fence_probe VALUES ($1)", id); err != nil {
				conn.Close(context.Background())
				conn = nil
				time.Sleep(5 * time.Millisecond)
				continue
			}
			acked = append(acked, id)
		}
	}()
	return func() []int32 {
		close(done)
		<-finished
		return acked
	}
}
