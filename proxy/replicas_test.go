package proxy

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/shardgate/shardgate/auth"
	"github.com/shardgate/shardgate/internal/proxytest"
	"github.com/shardgate/shardgate/internal/testenv"
)

// Reads on standbys (replicas.go, standbys.go, backend/replicas.go),
// against real streaming standbys of the test clusters.

// startStandby starts a standby of c for the test.
func startStandby(t *testing.T, c *testenv.Cluster, opts testenv.StandbyOptions) *testenv.Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := c.StartStandby(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	return s
}

// replicaTopology is the shop topology with standbys: replicas[i] are
// pg<i>'s.
func replicaTopology(maxLag string, replicas ...[]*testenv.Cluster) string {
	var b strings.Builder
	b.WriteString("version: 1\nclusters:\n")
	for i, c := range env.Clusters {
		fmt.Fprintf(&b, "  pg%d:\n    dsn: %q\n", i, c.DSN("shop"))
		if i < len(replicas) && len(replicas[i]) > 0 {
			b.WriteString("    replicas:\n")
			for _, s := range replicas[i] {
				fmt.Fprintf(&b, "      - %q\n", s.DSN("shop"))
			}
			if maxLag != "" {
				fmt.Fprintf(&b, "    max_lag: %s\n", maxLag)
			}
		}
	}
	groups := shopTopology("")
	return b.String() + groups[strings.Index(groups, "groups:"):]
}

// waitReplay waits until every standby replayed its primary's WAL.
func waitReplay(t *testing.T, standbys ...*testenv.Cluster) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, s := range standbys {
		if err := s.WaitReplay(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// ports runs n single-row reads and counts the server ports that
// answered.
func ports(t *testing.T, c *pgx.Conn, n int, sql string, args ...any) map[int]int {
	t.Helper()
	got := map[int]int{}
	for i := 0; i < n; i++ {
		var port int
		if err := c.QueryRow(context.Background(), sql, args...).Scan(&port); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		got[port]++
	}
	return got
}

func TestReplicaReads(t *testing.T) {
	s0a := startStandby(t, env.Clusters[0], testenv.StandbyOptions{})
	s0b := startStandby(t, env.Clusters[0], testenv.StandbyOptions{})
	s1 := startStandby(t, env.Clusters[1], testenv.StandbyOptions{})
	p := startProxy(t, replicaTopology("", []*testenv.Cluster{s0a, s0b}, []*testenv.Cluster{s1}), nil)
	admin := setupShop(t, p)
	for i := 1; i <= 20; i++ {
		mustExec(t, admin, "INSERT INTO customers VALUES ($1, $2)", i, fmt.Sprint("c", i))
	}
	waitReplay(t, s0a, s0b, s1)
	ctx := context.Background()

	c := connect(t, p.dsn())
	var target string
	if err := c.QueryRow(ctx, "SHOW shardgate.target").Scan(&target); err != nil || target != "primary" {
		t.Fatalf("default target %q, %v", target, err)
	}
	mustExec(t, c, "SET shardgate.target = replica")
	if err := c.QueryRow(ctx, "SHOW shardgate.target").Scan(&target); err != nil || target != "replica" {
		t.Fatalf("target after SET %q, %v", target, err)
	}
	pg0, pg1 := env.Clusters[0].Port, env.Clusters[1].Port
	// customers 1 and 2 live on different shards; which is which does
	// not matter: reads of each go to that shard's standbys only.
	onStandbys := map[int]bool{s0a.Port: true, s0b.Port: true, s1.Port: true}
	all := map[int]int{}
	for id := 1; id <= 20; id++ {
		for port, n := range ports(t, c, 2, "SELECT inet_server_port() FROM customers WHERE id = $1", id) {
			all[port] += n
		}
	}
	t.Logf("reads per server port under replica: %v (primaries %d, %d; standbys %d, %d, %d)", all, pg0, pg1, s0a.Port, s0b.Port, s1.Port)
	for port := range all {
		if !onStandbys[port] {
			t.Fatalf("a read under shardgate.target = replica ran on port %d, not a standby: %v", port, all)
		}
	}
	if all[s0a.Port] == 0 || all[s0b.Port] == 0 || all[s1.Port] == 0 {
		t.Fatalf("reads did not spread over every standby: %v", all)
	}
	// Across shards: each shard's standby answers, the rows are all there.
	var n int
	if err := c.QueryRow(ctx, "SELECT count(*) FROM customers").Scan(&n); err != nil || n != 20 {
		t.Fatalf("cross-shard count on standbys: %d, %v", n, err)
	}
	// A transaction stays on the host it began on.
	tx, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var first int
	for i := 0; i < 6; i++ {
		var port int
		if err := tx.QueryRow(ctx, "SELECT inet_server_port() FROM customers WHERE id = 1").Scan(&port); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = port
		} else if port != first {
			t.Fatalf("a transaction's reads moved from port %d to %d", first, port)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	// Writes are refused as a standby refuses them, before any runs.
	for _, w := range []string{
		"INSERT INTO customers VALUES (100, 'x')",
		"UPDATE customers SET name = 'y' WHERE id = 1",
		"CREATE TABLE nope (id int)",
		"SELECT * FROM customers WHERE id = 1 FOR UPDATE",
	} {
		if _, err := c.Exec(ctx, w); sqlstate(err) != "25006" {
			t.Errorf("%s under replica: %v, want 25006", w, err)
		}
	}
	// Bad values are refused; RESET goes back to the default.
	if _, err := c.Exec(ctx, "SET shardgate.target = 'standby'"); sqlstate(err) != "22023" {
		t.Errorf("bad value: %v, want 22023", err)
	}
	mustExec(t, c, "RESET shardgate.target")
	if got := ports(t, c, 4, "SELECT inet_server_port() FROM customers WHERE id = 1"); len(got) != 1 || (got[pg0] == 0 && got[pg1] == 0) {
		t.Fatalf("reads after RESET went to %v, want a primary", got)
	}
	mustExec(t, c, "INSERT INTO customers VALUES (21, 'c21')") // writable again
	// SET LOCAL lasts one transaction.
	tx, err = c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "SET LOCAL shardgate.target = replica"); err != nil {
		t.Fatal(err)
	}
	var port int
	if err := tx.QueryRow(ctx, "SELECT inet_server_port() FROM customers WHERE id = 2").Scan(&port); err != nil || !onStandbys[port] {
		t.Fatalf("SET LOCAL replica read on %d, %v", port, err)
	}
	if _, err := tx.Exec(ctx, "INSERT INTO customers VALUES (22, 'c22')"); sqlstate(err) != "25006" {
		t.Fatalf("write under SET LOCAL replica: %v", err)
	}
	_ = tx.Rollback(ctx)
	if err := c.QueryRow(ctx, "SHOW shardgate.target").Scan(&target); err != nil || target != "primary" {
		t.Fatalf("target after the SET LOCAL transaction %q, %v", target, err)
	}

	// The user's way: the start-up options (PGOPTIONS).
	oc := connect(t, p.dsn()+"&options="+"-c%20shardgate.target%3Dreplica")
	for port := range ports(t, oc, 6, "SELECT inet_server_port() FROM customers WHERE id = 3") {
		if !onStandbys[port] {
			t.Fatalf("a read of a session started with -c shardgate.target=replica ran on port %d", port)
		}
	}
}

func TestReplicaLagAndFailure(t *testing.T) {
	fast := startStandby(t, env.Clusters[0], testenv.StandbyOptions{})
	slow := startStandby(t, env.Clusters[0], testenv.StandbyOptions{ApplyDelay: 3 * time.Second})
	p := startProxy(t, replicaTopology("1s", []*testenv.Cluster{fast, slow})+adminUsers, func(c *Config) {
		c.Users = []auth.User{{Name: "app", Password: "x"}, {Name: "boss", Password: "x", Admin: true}}
	})
	admin := setupShop(t, p)
	console := connect(t, adminDSN(p, "boss"))
	// hostState is SHOW CLUSTERS' state and bans of the host on port.
	hostState := func(port int) (state, bans string) {
		_, rows := showRows(t, console, "SHOW CLUSTERS")
		for _, r := range rows {
			if r[7] == fmt.Sprintf("127.0.0.1:%d", port) {
				return r[8], r[11]
			}
		}
		t.Fatalf("SHOW CLUSTERS has no row for port %d: %v", port, rows)
		return "", ""
	}
	mustExec(t, admin, "INSERT INTO settings VALUES ('k', 'v')")
	waitReplay(t, fast, slow)
	rs := p.srv.cur.Load().replicas["pg0"]
	slowState := func() bool { return rs.Standbys()[1].State().OverLag }
	waitFor(t, "the delayed standby to catch up", 30*time.Second, func() bool { st := rs.Standbys()[1].State(); return st.Checked && !st.OverLag })

	c := connect(t, p.dsn())
	mustExec(t, c, "SET shardgate.target = replica")
	const read = "SELECT inet_server_port() FROM settings WHERE k = 'k'"
	if got := ports(t, c, 10, read); got[fast.Port] == 0 || got[slow.Port] == 0 {
		t.Fatalf("both standbys in time, reads went to %v", got)
	}
	// A write makes the delayed standby lag: it is skipped, then taken back.
	mustExec(t, admin, "UPDATE settings SET v = 'w'")
	waitFor(t, "the delayed standby over max_lag", 30*time.Second, slowState)
	if got := ports(t, c, 10, read); got[slow.Port] != 0 {
		t.Fatalf("reads went to the lagging standby: %v", got)
	}
	if state, _ := hostState(slow.Port); state != "lagging" {
		t.Errorf("SHOW CLUSTERS shows the lagging standby %s", state)
	}
	waitFor(t, "the delayed standby back within max_lag", 30*time.Second, func() bool { return !slowState() })
	if got := ports(t, c, 10, read); got[slow.Port] == 0 {
		t.Fatalf("the caught-up standby was not taken back: %v", got)
	}

	// A standby stopped under read load: its in-flight reads fail, the
	// later ones succeed on the other (no longer delayed: the proxy's own
	// writes to main would keep it behind).
	if err := slow.Exec(context.Background(), "", "ALTER SYSTEM SET recovery_min_apply_delay = 0"); err != nil {
		t.Fatal(err)
	}
	if err := slow.Exec(context.Background(), "", "SELECT pg_reload_conf()"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the formerly delayed standby within max_lag", 30*time.Second, func() bool { return !slowState() })
	var wg sync.WaitGroup
	errs := make([]error, 2)
	lands := make([]int, 2)
	for i := range errs {
		cc := connect(t, p.dsn())
		mustExec(t, cc, "SET shardgate.target = replica")
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = cc.QueryRow(context.Background(), "SELECT inet_server_port() FROM settings, pg_sleep(3) WHERE k = 'k'").Scan(&lands[i])
		}()
	}
	waitFor(t, "two reads running on the standbys", 30*time.Second, func() bool {
		return rs.Standbys()[0].Pool.Busy() == 1 && rs.Standbys()[1].Pool.Busy() == 1
	})
	if err := fast.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	failed := 0
	for i, err := range errs {
		if err != nil {
			failed++
			t.Logf("in-flight read %d: %v", i, err)
		} else if lands[i] != slow.Port {
			t.Fatalf("read %d succeeded on port %d", i, lands[i])
		}
	}
	if failed != 1 {
		t.Fatalf("%d in-flight reads failed, want the one on the stopped standby: %v", failed, errs)
	}
	if got := ports(t, c, 10, read); got[slow.Port] != 10 {
		t.Fatalf("reads after the standby stopped: %v", got)
	}
	if st := rs.Standbys()[0].State(); st.Bans == 0 {
		t.Fatalf("the stopped standby was not banned: %+v", st)
	}
	if state, bans := hostState(fast.Port); state != "banned" && state != "down" || bans == "0" {
		t.Errorf("SHOW CLUSTERS shows the stopped standby %s with %s bans", state, bans)
	}
	if got := hostMetric(t, p.srv, "shardgate_host_bans_total", fast.Port); got < 1 {
		t.Errorf("shardgate_host_bans_total of the stopped standby = %v", got)
	}
	if got := hostMetric(t, p.srv, "shardgate_host_up", slow.Port); got != 1 {
		t.Errorf("shardgate_host_up of the running standby = %v", got)
	}
	_, servers := showRows(t, console, "SHOW SERVERS")
	if !hasRow(servers, 7, "standby") {
		t.Errorf("SHOW SERVERS shows no standby connection: %v", servers)
	}
}

func TestReplicaReload(t *testing.T) {
	s := startStandby(t, env.Clusters[1], testenv.StandbyOptions{})
	p := startProxy(t, replicaTopology(""), nil)
	admin := setupShop(t, p)
	mustExec(t, admin, "INSERT INTO customers SELECT g, 'c' FROM generate_series(1, 10) g")
	waitReplay(t, s)
	c := connect(t, p.dsn())
	mustExec(t, c, "SET shardgate.target = replica")
	ctx := context.Background()
	if _, err := c.Exec(ctx, "SELECT count(*) FROM customers"); sqlstate(err) != "57P03" || !strings.Contains(err.Error(), "cluster pg0") {
		t.Fatalf("replica reads without replicas: %v, want 57P03 naming the cluster", err)
	}
	mustExec(t, c, "SET shardgate.target = prefer_replica")
	var n int
	if err := c.QueryRow(ctx, "SELECT count(*) FROM customers").Scan(&n); err != nil || n != 10 {
		t.Fatalf("prefer_replica without replicas: %d, %v", n, err)
	}
	reload := func(yaml string) {
		t.Helper()
		topo, err := parseTopo(yaml)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.srv.Reload(topo); err != nil {
			t.Fatal(err)
		}
	}
	reload(replicaTopology("", nil, []*testenv.Cluster{s}))
	rs := p.srv.cur.Load().replicas["pg1"]
	if rs == nil {
		t.Fatal("the reload added no standby")
	}
	waitFor(t, "the new standby checked", 30*time.Second, func() bool { return rs.Standbys()[0].State().Up })
	mustExec(t, c, "SET shardgate.target = replica")
	// pg1's shard reads on its standby; pg0 has none.
	var port int
	found := false
	for id := 1; id <= 10 && !found; id++ {
		err := c.QueryRow(ctx, "SELECT inet_server_port() FROM customers WHERE id = $1", id).Scan(&port)
		switch {
		case err == nil && port == s.Port:
			found = true
		case err == nil:
			t.Fatalf("read on port %d", port)
		case sqlstate(err) != "57P03":
			t.Fatal(err)
		}
	}
	if !found {
		t.Fatal("no read reached the standby added by the reload")
	}
	// proxy.reads.target and a user's target are new sessions' defaults.
	reload(replicaTopology("") + "proxy:\n  reads: { target: prefer_replica }\n  auth:\n    users:\n      app: { password: x }\n      ops: { password: x, target: replica }\n")
	for user, want := range map[string]string{"app": "prefer_replica", "ops": "replica"} {
		var got string
		if err := connect(t, proxytest.DSN(p.addr, user, "shop")).QueryRow(ctx, "SHOW shardgate.target").Scan(&got); err != nil || got != want {
			t.Errorf("user %s: default target %q, %v; want %s", user, got, err, want)
		}
	}
	if p.srv.cur.Load().replicas["pg1"] != nil {
		t.Fatal("the reload did not remove the standby")
	}
	waitFor(t, "the removed standby's checker to stop", 30*time.Second, func() bool { return rs.Standbys()[0].Pool.Busy() == 0 })
	if _, err := c.Exec(ctx, "SELECT count(*) FROM customers"); sqlstate(err) != "57P03" {
		t.Fatalf("replica reads after the standby was removed: %v", err)
	}
}

// hostMetric is the value of a per-host metric for the host on port.
func hostMetric(t *testing.T, srv *Server, name string, port int) float64 {
	t.Helper()
	mfs, err := srv.metrics.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	host := fmt.Sprintf("127.0.0.1:%d", port)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "host" && l.GetValue() == host {
					if m.Counter != nil {
						return m.Counter.GetValue()
					}
					return m.Gauge.GetValue()
				}
			}
		}
	}
	t.Fatalf("no %s for %s", name, host)
	return 0
}

// TestReplicaSessionPooling: under session pooling a session started with
// shardgate.target = replica holds standby connections from its start-up
// on, and reads there; switching the target to the primary and back
// exchanges the held connections between transactions (and SET LOCAL
// inside one, for the clusters it had not touched); a session pinned by a
// temporary table is refused with 0A000 saying why.
func TestReplicaSessionPooling(t *testing.T) {
	s0 := startStandby(t, env.Clusters[0], testenv.StandbyOptions{})
	s1 := startStandby(t, env.Clusters[1], testenv.StandbyOptions{})
	p := startProxy(t, replicaTopology("", []*testenv.Cluster{s0}, []*testenv.Cluster{s1}), func(c *Config) { c.PoolMode = PoolSession })
	admin := setupShop(t, p)
	mustExec(t, admin, "INSERT INTO customers SELECT g, 'c' FROM generate_series(1, 10) g")
	waitReplay(t, s0, s1)
	onStandbys := map[int]bool{s0.Port: true, s1.Port: true}
	c := connect(t, p.dsn()+"&options=-c%20shardgate.target%3Dreplica")
	reads := func(wantStandby bool) {
		t.Helper()
		for id := 1; id <= 10; id++ {
			for port := range ports(t, c, 2, "SELECT inet_server_port() FROM customers WHERE id = $1", id) {
				if onStandbys[port] != wantStandby {
					t.Fatalf("session-pooled read (want a standby: %t) on port %d", wantStandby, port)
				}
			}
		}
	}
	reads(true)
	mustExec(t, c, "SET shardgate.target = 'primary'")
	reads(false)
	mustExec(t, c, "INSERT INTO customers VALUES (11, 'c11')")
	mustExec(t, c, "SET shardgate.target = replica")
	reads(true)
	ctx := context.Background()
	mustExec(t, c, "BEGIN")
	mustExec(t, c, "SET LOCAL shardgate.target = 'primary'")
	var port int
	if err := c.QueryRow(ctx, "SELECT inet_server_port() FROM customers WHERE id = 1").Scan(&port); err != nil || onStandbys[port] {
		t.Fatalf("SET LOCAL primary in a session-pooled transaction: port %d, %v", port, err)
	}
	mustExec(t, c, "COMMIT")
	reads(true)

	// A temporary table lives on the primary's connection: the session
	// keeps it, and a replica read is refused, saying why.
	mustExec(t, c, "SET shardgate.target = 'primary'")
	mustExec(t, c, "CREATE TEMP TABLE scratch (id int)")
	mustExec(t, c, "SET shardgate.target = replica")
	_, err := c.Exec(ctx, "SELECT count(*) FROM customers")
	if sqlstate(err) != "0A000" || !strings.Contains(err.Error(), "holds a connection to the primary") {
		t.Fatalf("replica read of a session pinned to the primary by a temporary table: %v, want 0A000", err)
	}
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || !strings.Contains(pe.Detail, "temporary tables") {
		t.Fatalf("the refusal does not say why: %+v", pe)
	}
}

// TestReplicaTargetWithoutStandbys: with proxy.reads.target = replica and
// no standby anywhere, sessions still start (start-up reads no rows) and
// their reads fail with 57P03 naming the cluster, their writes with 25006.
func TestReplicaTargetWithoutStandbys(t *testing.T) {
	p := startProxy(t, replicaTopology("")+"proxy:\n  reads: { target: replica }\n", nil)
	c := connect(t, p.dsn())
	ctx := context.Background()
	if _, err := c.Exec(ctx, "SELECT 1 FROM customers"); sqlstate(err) != "57P03" || !strings.Contains(err.Error(), "no replica can serve reads") {
		t.Fatalf("read without standbys: %v, want 57P03", err)
	}
	if _, err := c.Exec(ctx, "DELETE FROM customers WHERE id = -1"); sqlstate(err) != "25006" {
		t.Fatalf("write under replica: %v, want 25006", err)
	}
}

// TestReplicaReadOnlyTransactions: with proxy.reads.read_only_transactions
// = replica, a transaction declared READ ONLY (BEGIN READ ONLY, START
// TRANSACTION READ ONLY, SET TRANSACTION READ ONLY, and its AND CHAIN
// successor) of a session whose target is the primary reads on standbys
// and refuses writes with 25006; other transactions and statements stay
// on the primaries; a user's read_only_transactions: primary keeps them
// there.
func TestReplicaReadOnlyTransactions(t *testing.T) {
	s0 := startStandby(t, env.Clusters[0], testenv.StandbyOptions{})
	s1 := startStandby(t, env.Clusters[1], testenv.StandbyOptions{})
	p := startProxy(t, replicaTopology("", []*testenv.Cluster{s0}, []*testenv.Cluster{s1})+
		"proxy:\n  reads: { read_only_transactions: replica }\n  auth:\n    users:\n      app: { password: x }\n      ops: { password: x, read_only_transactions: primary }\n", nil)
	admin := setupShop(t, p)
	mustExec(t, admin, "INSERT INTO customers SELECT g, 'c' FROM generate_series(1, 10) g")
	waitReplay(t, s0, s1)
	ctx := context.Background()
	onStandbys := map[int]bool{s0.Port: true, s1.Port: true}
	read := func(c *pgx.Conn, id int) int {
		t.Helper()
		var port int
		if err := c.QueryRow(ctx, "SELECT inet_server_port() FROM customers WHERE id = $1", id).Scan(&port); err != nil {
			t.Fatal(err)
		}
		return port
	}
	inTx := func(c *pgx.Conn, begin []string, end string) []int {
		t.Helper()
		for _, s := range begin {
			mustExec(t, c, s)
		}
		var got []int
		for id := 1; id <= 4; id++ {
			got = append(got, read(c, id))
		}
		mustExec(t, c, end)
		return got
	}
	c := connect(t, p.dsn())
	for _, begin := range [][]string{{"BEGIN READ ONLY"}, {"START TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY"}, {"BEGIN", "SET TRANSACTION READ ONLY"}} {
		for _, port := range inTx(c, begin, "COMMIT") {
			if !onStandbys[port] {
				t.Fatalf("%v: a read ran on port %d, not a standby", begin, port)
			}
		}
	}
	for _, begin := range [][]string{{"BEGIN"}, {"BEGIN READ WRITE"}, {"BEGIN READ ONLY", "SET TRANSACTION READ WRITE"}} {
		for _, port := range inTx(c, begin, "COMMIT") {
			if onStandbys[port] {
				t.Fatalf("%v: a read ran on standby port %d", begin, port)
			}
		}
	}
	if port := read(c, 1); onStandbys[port] {
		t.Fatalf("a read outside a transaction ran on standby port %d", port)
	}
	// SET LOCAL shardgate.target as a transaction's first statement
	// applies to every cluster, main's (where the SET runs) included.
	for _, port := range inTx(c, []string{"BEGIN", "SET LOCAL shardgate.target = replica"}, "COMMIT") {
		if !onStandbys[port] {
			t.Fatalf("BEGIN; SET LOCAL shardgate.target = replica: a read ran on port %d, not a standby", port)
		}
	}
	mustExec(t, c, "BEGIN READ ONLY")
	_, err := c.Exec(ctx, "INSERT INTO customers VALUES (100, 'x')")
	if sqlstate(err) != "25006" || !strings.Contains(err.Error(), "read-only transaction") {
		t.Fatalf("a write in a READ ONLY transaction: %v, want 25006", err)
	}
	mustExec(t, c, "ROLLBACK")
	// AND CHAIN: the next transaction is READ ONLY too.
	mustExec(t, c, "BEGIN READ ONLY")
	mustExec(t, c, "COMMIT AND CHAIN")
	if port := read(c, 2); !onStandbys[port] {
		t.Fatalf("a read after COMMIT AND CHAIN ran on port %d, not a standby", port)
	}
	mustExec(t, c, "COMMIT")
	mustExec(t, c, "INSERT INTO customers VALUES (11, 'c11')") // the primary still writes

	ops := connect(t, proxytest.DSN(p.addr, "ops", "shop"))
	for _, port := range inTx(ops, []string{"BEGIN READ ONLY"}, "COMMIT") {
		if onStandbys[port] {
			t.Fatalf("user ops (read_only_transactions: primary): a READ ONLY transaction read on standby port %d", port)
		}
	}
}

// TestReplicaPauseHoldsStandbys: PAUSE pg0 in the admin console holds
// the reads going to pg0's standby as well as the primary's statements
// (SHOW POOLS and SHOW CLUSTERS show the standby paused); RESUME lets
// them run, on the standby.
func TestReplicaPauseHoldsStandbys(t *testing.T) {
	s0 := startStandby(t, env.Clusters[0], testenv.StandbyOptions{})
	p := startProxy(t, replicaTopology("", []*testenv.Cluster{s0}), func(c *Config) {
		c.Users = []auth.User{{Name: "app", Password: "x"}, {Name: "boss", Password: "x", Admin: true}}
	})
	admin := setupShop(t, p)
	mustExec(t, admin, "INSERT INTO settings VALUES ('k', 'v')")
	waitReplay(t, s0)
	ctx := context.Background()
	c := connect(t, p.dsn()+"&options=-c%20shardgate.target%3Dreplica")
	const read = "SELECT inet_server_port() FROM settings WHERE k = 'k'"
	if got := ports(t, c, 1, read); got[s0.Port] != 1 {
		t.Fatalf("read before PAUSE: %v, want the standby %d", got, s0.Port)
	}
	con := connect(t, adminDSN(p, "boss"))
	if _, err := con.Exec(ctx, "PAUSE pg0"); err != nil {
		t.Fatalf("PAUSE: %v", err)
	}
	cols, rows := showRows(t, con, "SHOW POOLS LIKE 'pg0'")
	if len(cols) != 12 || cols[10] != "role" || cols[11] != "host" {
		t.Fatalf("SHOW POOLS columns %v", cols)
	}
	standbyHost := fmt.Sprintf("127.0.0.1:%d", s0.Port)
	var standbyPaused bool
	for _, r := range rows {
		if r[8] != "true" {
			t.Errorf("SHOW POOLS while pg0 is paused: a row not paused: %v", r)
		}
		standbyPaused = standbyPaused || r[10] == "standby" && r[11] == standbyHost
	}
	if !standbyPaused {
		t.Errorf("SHOW POOLS shows no row of the standby %s: %v", standbyHost, rows)
	}
	_, rows = showRows(t, con, "SHOW CLUSTERS")
	for _, r := range rows {
		if r[0] == "pg0" && r[2] != "paused" {
			t.Errorf("SHOW CLUSTERS while pg0 is paused: %v", r)
		}
	}
	done := make(chan error, 1)
	var port int
	go func() { done <- c.QueryRow(ctx, read).Scan(&port) }()
	select {
	case err := <-done:
		t.Fatalf("a standby read of the paused cluster ran (port %d, %v)", port, err)
	case <-time.After(500 * time.Millisecond):
	}
	if _, err := con.Exec(ctx, "RESUME pg0"); err != nil {
		t.Fatalf("RESUME: %v", err)
	}
	select {
	case err := <-done:
		if err != nil || port != s0.Port {
			t.Fatalf("the held read after RESUME: port %d, %v; want the standby %d", port, err, s0.Port)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the held read did not run after RESUME")
	}
}
