package proxy

import (
	"context"
	"errors"
	"github.com/shardgate/shardgate/workflows"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/shardgate/shardgate/admin"
	"github.com/shardgate/shardgate/auth"
	"github.com/shardgate/shardgate/internal/proxytest"
)

// adminUsers lists app (a plain user) and boss (an admin).
const adminUsers = `proxy:
  auth:
    users:
      app: { password: x }
      boss: { password: x, admin: true }
`

// startAdminProxy serves the shop topology with adminUsers from a file,
// so that RELOAD has something to read.
func startAdminProxy(t *testing.T, extra string) (*testProxy, string) {
	t.Helper()
	yaml := shopTopology(adminUsers + extra)
	file := filepath.Join(t.TempDir(), "topology.yaml")
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startProxy(t, yaml, func(c *Config) {
		c.TopologyFile = file
		c.Users = []auth.User{{Name: "app", Password: "x"}, {Name: "boss", Password: "x", Admin: true}}
	})
	return p, file
}

func adminDSN(p *testProxy, user string) string { return proxytest.DSN(p.addr, user, admin.Database) }

// showRows runs a console command with pgx's extended protocol and with the
// simple protocol and checks both give the same rows.
func showRows(t *testing.T, c *pgx.Conn, cmd string) (cols []string, rows [][]string) {
	t.Helper()
	run := func(mode pgx.QueryExecMode) ([]string, [][]string) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		r, err := c.Query(ctx, cmd, mode)
		if err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
		defer r.Close()
		var names []string
		for _, f := range r.FieldDescriptions() {
			names = append(names, f.Name)
		}
		var out [][]string
		for r.Next() {
			var row []string
			for _, v := range r.RawValues() {
				if v == nil {
					row = append(row, "NULL")
				} else {
					row = append(row, string(v))
				}
			}
			out = append(out, row)
		}
		if err := r.Err(); err != nil {
			t.Fatalf("%s (%v): %v", cmd, mode, err)
		}
		if tag := r.CommandTag().String(); !strings.HasPrefix(tag, "SHOW") && !strings.HasPrefix(tag, strings.Fields(strings.ToUpper(cmd))[0]) {
			t.Errorf("%s: tag %q", cmd, tag)
		}
		return names, out
	}
	cols, rows = run(pgx.QueryExecModeCacheStatement)
	simpleCols, _ := run(pgx.QueryExecModeSimpleProtocol)
	if strings.Join(cols, ",") != strings.Join(simpleCols, ",") {
		t.Errorf("%s: extended columns %v, simple %v", cmd, cols, simpleCols)
	}
	return cols, rows
}

func TestAdminConsoleAnswersEveryShow(t *testing.T) {
	p, _ := startAdminProxy(t, "")
	app := setupShop(t, p)
	ctx := context.Background()
	for _, q := range []string{"SELECT * FROM customers WHERE id = 1", "SELECT count(*) FROM orders", "SELECT 1", "BEGIN"} {
		if _, err := app.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	con := connect(t, adminDSN(p, "boss"))
	want := map[string]string{
		"CLIENTS":      "client_id,user,database,address,tls,connected_at,state,transaction_age,prepared_statements",
		"SERVERS":      "cluster,backend_pid,state,age,client_id,user,host,role",
		"POOLS":        "cluster,mode,size,open,active,idle,waiting,max_wait,paused,user,role,host",
		"STATS":        "group,cluster,route,statements,errors,transactions,bytes_received,bytes_sent,avg_ms,p99_ms",
		"CLUSTERS":     "cluster,dsn,health,version,last_error,last_error_at,role,host,state,lag_bytes,lag,bans,epoch,fenced",
		"SHARDS":       "group,shard,cluster,tables,rows_estimate",
		"TOPOLOGY":     "group,table,role,key,function,clusters,revision,file,origin",
		"PREPARED":     "client_id,user,prepared_statements",
		"TRANSACTIONS": "kind,id,cluster,age,state",
		"PLAN_CACHE":   "entries,bytes,hits,misses",
		"GSI":          "group,name,table,column,type,state,origin,backfill,rows_done,rows_total,rows_per_sec,eta_seconds,last_error",
		"WORKFLOWS":    "id,kind,group,state,tables,rows_copied,rows_total,lag_bytes,updated_at,error,traffic,switches,last_switch,last_pause_ms,last_held",
		"PROXIES":      "id,addr,pid,started_at,heartbeat_at,live,revision,acked",
		"VERSION":      "version",
		"CONFIG":       "key,value",
		"QUERIES":      "id,query,calls,errors,error_classes,total_ms,mean_ms,max_ms,p99_ms,rows,shards,mean_shards,max_shards,routes,plan_cache_hits,pool_wait_ms,last_call",
	}
	got := map[string][][]string{}
	for name, cols := range want {
		c, rows := showRows(t, con, "SHOW "+strings.ToLower(name))
		if strings.Join(c, ",") != cols {
			t.Errorf("SHOW %s columns %v, want %s", name, c, cols)
		}
		got[name] = rows
	}
	appID := app.PgConn().PID()
	if rows := got["CLIENTS"]; len(rows) != 1 || rows[0][0] != itoa(appID) || rows[0][1] != "app" || rows[0][6] != "idle in transaction" || rows[0][7] == "NULL" {
		t.Errorf("SHOW CLIENTS: %v (want app, %d, idle in transaction)", rows, appID)
	}
	if rows := got["TRANSACTIONS"]; len(rows) != 1 || rows[0][0] != "client" || rows[0][1] != itoa(appID) {
		t.Errorf("SHOW TRANSACTIONS: %v", rows)
	}
	if rows := got["POOLS"]; len(rows) != 2 || rows[0][0] != "pg0" || rows[0][2] != "5" || rows[1][0] != "pg1" {
		t.Errorf("SHOW POOLS: %v", rows)
	}
	if rows := got["CLUSTERS"]; len(rows) != 2 || rows[0][2] != "up" || !strings.HasPrefix(rows[0][3], "15") {
		t.Errorf("SHOW CLUSTERS: %v", rows)
	}
	if rows := got["SHARDS"]; len(rows) != 5 || rows[0][0] != "main" || rows[1][1] != "-80" || rows[2][1] != "80-" {
		t.Errorf("SHOW SHARDS: %v", rows)
	}
	if rows := got["PLAN_CACHE"]; len(rows) != 1 || rows[0][0] == "0" || rows[0][3] == "0" {
		t.Errorf("SHOW PLAN_CACHE: %v", rows)
	}
	if rows := got["VERSION"]; len(rows) != 1 || !strings.HasPrefix(rows[0][0], "shardgate ") {
		t.Errorf("SHOW VERSION: %v", rows)
	}
	if rows := got["WORKFLOWS"]; len(rows) != 0 {
		t.Errorf("SHOW WORKFLOWS: %v", rows)
	}
	// A workflow recorded in main (as `shardgate workflow create` does).
	store, err := workflows.OpenStore(ctx, env.Clusters[0].DSN("shop"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	mainConn := connect(t, env.Clusters[0].DSN("shop"))
	mustExec(t, mainConn, `INSERT INTO shardgate.workflows (id, kind, spec, phase) VALUES (424242, 'movetables', '{"group": "by_customer"}', 'copying')`)
	mustExec(t, mainConn, `INSERT INTO shardgate.workflow_tables (workflow_id, source, table_name, rows_copied, rows_total) VALUES (424242, 'pg0', 'public.payments', 10, 40)`)
	t.Cleanup(func() {
		_, _ = mainConn.Exec(context.Background(), "DELETE FROM shardgate.workflows WHERE id = 424242")
	})
	if _, rows := showRows(t, con, "SHOW WORKFLOWS"); len(rows) != 1 || strings.Join(rows[0][:7], ",") != "424242,movetables,by_customer,copying,public.payments,10,40" {
		t.Errorf("SHOW WORKFLOWS with one recorded: %v", rows)
	}
	// WORKFLOW commands reach the workflows in main: a switch of a
	// workflow still copying is refused, reads alone are not supported.
	for cmd, code := range map[string]string{"WORKFLOW SWITCH 424242 DRY_RUN": "55000", "workflow switch 424242 reads_only": "0A000",
		"WORKFLOW COMPLETE 424242": "55000", "WORKFLOW SWITCH x": "22023", "WORKFLOW PAUSE 1": "42601"} {
		if _, err := con.Exec(ctx, cmd); sqlstate(err) != code {
			t.Errorf("%s: %v, want %s", cmd, err, code)
		}
	}
	families := scrape(t, p)
	// The dashboard's workflow panel names gauges the proxy exports for it.
	if exprs := checkDashboard(t, families, func(name string) bool { return strings.HasPrefix(name, workflowMetricPrefix) }); exprs < 3 {
		t.Errorf("the dashboard has %d queries of the workflow gauges, want its progress, lag and switch", exprs)
	}
	for name, want := range map[string]float64{"shardgate_workflow_rows_copied": 10, "shardgate_workflow_rows_total": 40} {
		got := -1.0
		for _, m := range families[name].GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "id" && l.GetValue() == "424242" {
					got = m.GetGauge().GetValue()
				}
			}
		}
		if got != want {
			t.Errorf("%s of the recorded workflow: %v, want %v", name, got, want)
		}
	}
	stats := map[string][]string{}
	for _, r := range got["STATS"] {
		stats[r[0]+"/"+r[1]+"/"+r[2]] = r
	}
	if r := stats["by_customer/*/single"]; r == nil || r[3] != "1" {
		t.Errorf("SHOW STATS by_customer/single: %v (all: %v)", r, got["STATS"])
	}
	if r := stats["by_customer/*/merge"]; r == nil || r[3] != "1" {
		t.Errorf("SHOW STATS by_customer/merge: %v", r)
	}
	if r := stats["*/*/*"]; r == nil || r[3] == "0" || r[6] == "0" || r[7] == "0" {
		t.Errorf("SHOW STATS total: %v", r)
	}
	if r := stats["*/*/merge"]; r == nil || r[8] == "NULL" || r[9] == "NULL" {
		t.Errorf("SHOW STATS */merge has no latency: %v", r)
	}
	// Per cluster: the merged count ran on both clusters, the point read
	// on customer 1's.
	for _, cl := range []string{"pg0", "pg1"} {
		if r := stats["*/"+cl+"/merge"]; r == nil || r[3] != "1" || r[8] == "NULL" || r[9] == "NULL" {
			t.Errorf("SHOW STATS */%s/merge: %v", cl, r)
		}
	}
	// A single-cluster statement counts on exactly one cluster.
	perCluster := 0
	for _, cl := range []string{"pg0", "pg1"} {
		if r := stats["*/"+cl+"/single"]; r != nil {
			n, _ := strconv.Atoi(r[3])
			perCluster += n
		}
	}
	if r := stats["*/*/single"]; r == nil || r[3] != strconv.Itoa(perCluster) {
		t.Errorf("SHOW STATS: single-cluster statements %v, per cluster %d in all", r, perCluster)
	}
	servers := 0
	for _, r := range got["SERVERS"] {
		if r[4] == itoa(appID) {
			servers++
		}
	}
	if servers != 0 {
		// BEGIN alone leases nothing yet: transactions open lazily.
		t.Errorf("SHOW SERVERS: %d connections serve client %d before it ran a statement in its transaction", servers, appID)
	}
	if _, err := app.Exec(ctx, "SELECT * FROM customers WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	if _, rows := showRows(t, con, "SHOW SERVERS"); !hasRow(rows, 4, itoa(appID)) {
		t.Errorf("SHOW SERVERS: no connection serves client %d in its transaction: %v", appID, rows)
	}
	if _, rows := showRows(t, con, "SHOW POOLS LIKE 'pg_'"); len(rows) != 2 {
		t.Errorf("SHOW POOLS LIKE 'pg_': %v", rows)
	}
	if _, rows := showRows(t, con, "show topology like 'by\\_%'"); len(rows) == 0 || hasRow(rows, 0, "main") {
		t.Errorf("SHOW TOPOLOGY LIKE 'by\\_%%': %v", rows)
	}
}

func itoa(n uint32) string { return strconv.FormatUint(uint64(n), 10) }

func hasRow(rows [][]string, col int, v string) bool {
	for _, r := range rows {
		if r[col] == v {
			return true
		}
	}
	return false
}

func TestAdminConsoleRefusals(t *testing.T) {
	p, _ := startAdminProxy(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := pgx.Connect(ctx, adminDSN(p, "app")); sqlstate(err) != "28000" {
		t.Errorf("non-admin user on the console: %v, want 28000", err)
	}
	con := connect(t, adminDSN(p, "boss"))
	for cmd, code := range map[string]string{
		"SELECT 1":          "42601",
		"SHOW nothing":      "0A000",
		"SHOW POOLS extra":  "42601",
		"KILL":              "42601",
		"KILL 12345":        "42704",
		"PAUSE nocluster":   "42704",
		"RELOAD LIKE 'x'":   "42601",
		"SHOW POOLS; BOGUS": "42601",
	} {
		for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
			_, err := con.Exec(ctx, cmd, mode)
			if sqlstate(err) != code {
				t.Errorf("%q (%v): %v, want %s", cmd, mode, err, code)
			}
			if (code == "42601" || code == "0A000") && !strings.Contains(hint(err), "SHOW POOLS") {
				t.Errorf("%q: no list of commands in the hint: %v", cmd, err)
			}
		}
	}
	// The console still answers after errors.
	if _, rows := showRows(t, con, "SHOW VERSION"); len(rows) != 1 {
		t.Errorf("SHOW VERSION after errors: %v", rows)
	}
}

func hint(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Hint
	}
	return ""
}

func TestAdminConsoleKillAndReload(t *testing.T) {
	p, file := startAdminProxy(t, "")
	ctx := context.Background()
	app := setupShop(t, p)
	con := connect(t, adminDSN(p, "boss"))
	if _, err := app.Exec(ctx, "BEGIN"); err != nil {
		t.Fatal(err)
	}
	if _, err := app.Exec(ctx, "INSERT INTO customers (id, name) VALUES (7, 'x')"); err != nil {
		t.Fatal(err)
	}
	if _, err := con.Exec(ctx, "KILL "+itoa(app.PgConn().PID()), pgx.QueryExecModeSimpleProtocol); err != nil {
		t.Fatalf("KILL: %v", err)
	}
	_, err := app.Exec(ctx, "SELECT 1")
	if code := sqlstate(err); code != "57P01" && !app.PgConn().IsClosed() {
		t.Errorf("killed client's next statement: %v, want 57P01 or a closed connection", err)
	}
	if n := count(t, p.dsn(), "SELECT count(*) FROM customers WHERE id = 7"); n != 0 {
		t.Errorf("the killed client's transaction was not rolled back: %d rows", n)
	}
	// RELOAD reads the file: a new admin user appears, the revision grows.
	yaml, _ := os.ReadFile(file)
	edited := strings.Replace(string(yaml), "boss: { password: x, admin: true }", "boss: { password: x, admin: true }\n      ops: { password: y, admin: true }", 1)
	if err := os.WriteFile(file, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	if tag, err := con.Exec(ctx, "RELOAD"); err != nil || tag.String() != "RELOAD" {
		t.Fatalf("RELOAD: %v %v", tag, err)
	}
	if _, rows := showRows(t, con, "SHOW TOPOLOGY"); rows[0][6] != "2" || rows[0][7] != "test.yaml" && rows[0][7] != file {
		t.Errorf("SHOW TOPOLOGY after RELOAD: revision %s file %s", rows[0][6], rows[0][7])
	}
	connect(t, adminDSN(p, "ops")).Close(ctx)
	if err := os.WriteFile(file, []byte("version: 1\nclusters: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := con.Exec(ctx, "RELOAD"); sqlstate(err) != "F0000" {
		t.Errorf("RELOAD of a broken file: %v, want F0000", err)
	}
}

// TestAdminPauseRestartResume pauses pg0 under a pgbench run, restarts
// it, resumes it: pgbench must see no error at all.
func TestAdminPauseRestartResume(t *testing.T) {
	pgbench := clientBinary(t, "pgbench")
	p, _ := startAdminProxy(t, "")
	ctx := context.Background()
	app := setupShop(t, p)
	mustExec(t, app, "DROP TABLE IF EXISTS pausecheck")
	mustExec(t, app, "CREATE TABLE pausecheck (id int PRIMARY KEY, n int NOT NULL)")
	mustExec(t, app, "INSERT INTO pausecheck SELECT g, 0 FROM generate_series(1, 100) g")
	script := filepath.Join(t.TempDir(), "pause.sql")
	if err := os.WriteFile(script, []byte(`\set k random(1, 100)
BEGIN;
UPDATE pausecheck SET n = n + 1 WHERE id = :k;
SELECT n FROM pausecheck WHERE id = :k;
SELECT count(*) FROM orders;
END;
`), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(pgbench, "-n", "-c", "4", "-j", "2", "-T", "8", "-f", script, proxytest.DSN(p.addr, "app", "shop"))
	cmd.Env = append(os.Environ(), "PGPASSWORD=x")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	con := connect(t, adminDSN(p, "boss"))
	time.Sleep(2 * time.Second)
	start := time.Now()
	if _, err := con.Exec(ctx, "PAUSE pg0"); err != nil {
		t.Fatalf("PAUSE: %v", err)
	}
	t.Logf("PAUSE took %v", time.Since(start))
	restart, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := env.Clusters[0].Stop(restart); err != nil {
		t.Fatal(err)
	}
	if err := env.Clusters[0].Start(restart); err != nil {
		t.Fatal(err)
	}
	_, rows := showRows(t, con, "SHOW POOLS LIKE 'pg0'")
	if len(rows) != 1 || rows[0][8] != "true" || rows[0][6] == "0" || rows[0][3] != "0" {
		t.Errorf("SHOW POOLS while paused: %v (want paused, clients waiting, no connection open)", rows)
	}
	if _, err := con.Exec(ctx, "RESUME pg0"); err != nil {
		t.Fatalf("RESUME: %v", err)
	}
	err := cmd.Wait()
	t.Logf("pgbench:\n%s", out.String())
	if err != nil {
		t.Fatalf("pgbench failed: %v", err)
	}
	if !strings.Contains(out.String(), "number of failed transactions: 0 ") || strings.Contains(out.String(), "aborted") {
		t.Errorf("pgbench saw errors")
	}
	var n int
	if err := app.QueryRow(ctx, "SELECT sum(n) FROM pausecheck").Scan(&n); err != nil || n == 0 {
		t.Errorf("pausecheck: %d, %v", n, err)
	}
}
