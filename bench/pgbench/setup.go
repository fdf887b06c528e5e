package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/jackc/pgx/v5"

	"github.com/shardgate/shardgate/bench/internal/benchkit"
	"github.com/shardgate/shardgate/internal/testenv"
)

// accountsPerScale is pgbench's number of pgbench_accounts rows per scale unit.
const accountsPerScale = 100000

// keyspaceID is shardgate's keyspace id of a bigint key under `function:
// xxhash`: XXH64 (seed 0) of the 8-byte big-endian two's complement of the
// int64. Computed here independently of the proxy, so the harness checks
// the proxy's routing instead of trusting it.
func keyspaceID(key int64) uint64 {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(key))
	return xxhash.Sum64(b[:])
}

// shardOf returns 0 for the shard "-80" (keyspace ids whose first byte is
// below 0x80) and 1 for "80-".
func shardOf(key int64) int {
	if keyspaceID(key)>>56 < 0x80 {
		return 0
	}
	return 1
}

var shardNames = [2]string{"-80", "80-"}

// initData loads pgbench's tables into every cluster (in parallel), removes
// from B and C the accounts the other one owns, and warms the caches.
func (h *harness) initData(ctx context.Context) error {
	cl := h.env.Clusters
	errs := make([]error, len(cl))
	var wg sync.WaitGroup
	t0 := time.Now()
	for i, c := range cl {
		wg.Add(1)
		go func() {
			defer wg.Done()
			logPath := filepath.Join(h.tmp, "init-"+c.Name+".log")
			out, err := benchkit.RunCmd(ctx, 10*time.Minute, logPath, pgbenchEnv(), h.pgbench,
				"-i", "-s", strconv.Itoa(h.cfg.scale), "-q", "-h", "127.0.0.1", "-p", strconv.Itoa(c.Port), "-U", "postgres", "bench")
			if err != nil {
				errs[i] = fmt.Errorf("pgbench -i on %s: %w\n%s", c.Name, err, benchkit.LastLines(out, 10))
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	h.logf("pgbench -i -s %d done on %d cluster(s) in %s", h.cfg.scale, len(cl), time.Since(t0).Round(time.Second))
	if contains(h.cfg.targets, tRole) {
		if err := createBenchRole(ctx, cl[0]); err != nil {
			return err
		}
	}

	if len(cl) >= 3 {
		rows := int64(h.cfg.scale) * accountsPerScale
		kept := make([]int64, 2)
		for i := 0; i < 2; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				kept[i], errs[i] = trimToShard(ctx, cl[1+i], i, rows)
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return err
		}
		h.shardRows = kept
		h.logf("pgbench_accounts split: %d rows on B (%s), %d on C (%s)", kept[0], shardNames[0], kept[1], shardNames[1])
	}

	for _, c := range cl {
		if err := prewarm(ctx, c); err != nil {
			return err
		}
	}
	return nil
}

// trimToShard deletes from c's pgbench_accounts every row whose aid does not
// map to shard keep, and returns how many rows remain.
func trimToShard(ctx context.Context, c *testenv.Cluster, keep int, rows int64) (int64, error) {
	var foreign []int64
	for aid := int64(1); aid <= rows; aid++ {
		if shardOf(aid) != keep {
			foreign = append(foreign, aid)
		}
	}
	conn, err := c.Conn(ctx, "bench")
	if err != nil {
		return 0, err
	}
	defer conn.Close(context.Background())
	fail := func(what string, err error) (int64, error) {
		return 0, fmt.Errorf("%s: trim pgbench_accounts to shard %s: %s: %w", c.Name, shardNames[keep], what, err)
	}
	if _, err := conn.Exec(ctx, "CREATE TEMP TABLE bench_foreign_aids (aid int NOT NULL)"); err != nil {
		return fail("create temp table", err)
	}
	n, err := conn.CopyFrom(ctx, pgx.Identifier{"bench_foreign_aids"}, []string{"aid"},
		pgx.CopyFromSlice(len(foreign), func(i int) ([]any, error) { return []any{foreign[i]}, nil }))
	if err != nil {
		return fail("copy", err)
	}
	if n != int64(len(foreign)) {
		return fail("copy", fmt.Errorf("copied %d rows, want %d", n, len(foreign)))
	}
	tag, err := conn.Exec(ctx, "DELETE FROM pgbench_accounts a USING bench_foreign_aids f WHERE a.aid = f.aid")
	if err != nil {
		return fail("delete", err)
	}
	if tag.RowsAffected() != int64(len(foreign)) {
		return fail("delete", fmt.Errorf("deleted %d rows, want %d", tag.RowsAffected(), len(foreign)))
	}
	if _, err := conn.Exec(ctx, "VACUUM ANALYZE pgbench_accounts"); err != nil {
		return fail("vacuum", err)
	}
	var left int64
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pgbench_accounts").Scan(&left); err != nil {
		return fail("count", err)
	}
	if left != rows-int64(len(foreign)) {
		return fail("count", fmt.Errorf("%d rows left, want %d", left, rows-int64(len(foreign))))
	}
	return left, nil
}

// prewarm loads pgbench_accounts and its primary key into shared buffers
// (pg_prewarm), or at least into the OS cache, so that the first measured
// target does not pay for a cold cache.
func prewarm(ctx context.Context, c *testenv.Cluster) error {
	conn, err := c.Conn(ctx, "bench")
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_prewarm"); err == nil {
		if _, err := conn.Exec(ctx, "SELECT pg_prewarm('pgbench_accounts'), pg_prewarm('pgbench_accounts_pkey')"); err == nil {
			return nil
		}
	}
	_, err = conn.Exec(ctx, "SELECT count(*) FROM pgbench_accounts")
	if err != nil {
		return fmt.Errorf("%s: warm the cache: %w", c.Name, err)
	}
	return nil
}

// --- pgbouncer ---------------------------------------------------------------

var bouncerVersionRE = regexp.MustCompile(`(?i)pgbouncer\s+(\d+)\.(\d+)(\.\d+)?`)

// startPgbouncer starts pgbouncer in transaction mode in front of cluster A.
// Errors are the target's, not the run's.
func (h *harness) startPgbouncer(ctx context.Context, t *target) error {
	bin, err := exec.LookPath("pgbouncer")
	if err != nil {
		for _, p := range []string{"/usr/sbin/pgbouncer", "/usr/local/sbin/pgbouncer"} {
			if _, serr := os.Stat(p); serr == nil {
				bin, err = p, nil
				break
			}
		}
	}
	if err != nil {
		return fmt.Errorf("pgbouncer is not installed (apt-get install pgbouncer)")
	}
	out, _ := benchkit.RunCmd(ctx, 10*time.Second, "", nil, bin, "--version")
	m := bouncerVersionRE.FindStringSubmatch(out)
	if m == nil {
		return fmt.Errorf("cannot tell pgbouncer's version from %q", strings.TrimSpace(out))
	}
	h.bouncerVersion = m[1] + "." + m[2] + m[3]
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	// Protocol-level prepared statements in transaction mode arrived in 1.21
	// (max_prepared_statements).
	h.bouncerPrepared = major > 1 || (major == 1 && minor >= 21)

	cred, uid, gid, err := benchkit.PostgresCredential()
	if err != nil {
		return err
	}
	dir := filepath.Join(h.tmp, "pgbouncer")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	port, err := benchkit.FreePort()
	if err != nil {
		return err
	}
	t.port = port
	a := h.env.Clusters[0]
	var ini strings.Builder
	fmt.Fprintf(&ini, `;; written by bench/pgbench
[databases]
bench = host=127.0.0.1 port=%d dbname=bench user=postgres

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = trust
auth_file = %s
pool_mode = transaction
default_pool_size = %d
max_client_conn = %d
logfile = %s
pidfile = %s
admin_users = postgres
ignore_startup_parameters = extra_float_digits
`, a.Port, port, filepath.Join(dir, "userlist.txt"), h.cfg.poolSize, 200+max(h.cfg.idle, h.cfg.storm), filepath.Join(dir, "pgbouncer.log"), filepath.Join(dir, "pgbouncer.pid"))
	if h.bouncerPrepared {
		ini.WriteString("max_prepared_statements = 200\n")
	}
	files := map[string]string{
		"pgbouncer.ini": ini.String(),
		"userlist.txt":  `"postgres" ""` + "\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			return err
		}
	}
	if cred != nil {
		for _, p := range []string{dir, filepath.Join(dir, "pgbouncer.ini"), filepath.Join(dir, "userlist.txt")} {
			if err := os.Chown(p, uid, gid); err != nil {
				return err
			}
		}
	}
	p, err := benchkit.StartProc("pgbouncer", filepath.Join(dir, "stderr.log"), cred, bin, filepath.Join(dir, "pgbouncer.ini"))
	if err != nil {
		return err
	}
	h.procs = append(h.procs, p)
	t.proc = p
	if err := benchkit.WaitPort(ctx, port, p, 20*time.Second); err != nil {
		return err
	}
	t.desc = fmt.Sprintf("pgbouncer %s, pool_mode = transaction, default_pool_size = %d, in front of A", h.bouncerVersion, h.cfg.poolSize)
	return nil
}

// --- shardgate -----------------------------------------------------------------

// buildShardgate builds ./cmd/shardgate into the temporary directory, or
// records why it cannot.
func (h *harness) buildShardgate(ctx context.Context) {
	if h.cfg.shardgateBin != "" {
		h.shardgateBin = h.cfg.shardgateBin
		return
	}
	t0 := time.Now()
	bin, err := benchkit.BuildShardgate(ctx, h.cfg.repo, h.tmp)
	if err != nil {
		h.shardgateErr = err
		return
	}
	h.logf("built shardgate in %s", time.Since(t0).Round(time.Second))
	h.shardgateBin = bin
}

// topologyYAML returns the topology file of target one or two.
func (h *harness) topologyYAML(name string, listen string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Written by bench/pgbench for the %s target.\nversion: 1\n", name)
	fmt.Fprintf(&b, "proxy:\n  listen: %q\n  pool: { mode: transaction, size: %d }\n", listen, h.cfg.poolSize)
	cl := h.env.Clusters
	if name == tNoStats {
		b.WriteString("  query_stats: { max: 0 }\n")
	}
	if name == tRole {
		fmt.Fprintf(&b, "  auth:\n    method: scram-sha-256\n    identity: client\n    users:\n      %s: { password: %q }\n", roleUser, rolePassword)
	}
	if name != tTwo {
		fmt.Fprintf(&b, "clusters:\n  pg0: { dsn: %q }   # A\n", cl[0].DSN("bench"))
		b.WriteString("groups:\n  main:\n    unsharded: true\n    cluster: pg0\n")
		return b.String()
	}
	fmt.Fprintf(&b, "clusters:\n  pg0: { dsn: %q }   # B\n  pg1: { dsn: %q }   # C\n", cl[1].DSN("bench"), cl[2].DSN("bench"))
	b.WriteString(`groups:
  main:
    unsharded: true
    cluster: pg0
  accounts:
    index: { name: by_aid, column: aid, type: bigint, function: xxhash }
    shards:
      "-80": pg0
      "80-": pg1
    tables:
      pgbench_accounts: {}
`)
	return b.String()
}

// startShardgate writes the target's topology, validates it, starts
// `shardgate serve` and checks its routing with a few point reads. Errors
// are the target's, not the run's.
func (h *harness) startShardgate(ctx context.Context, t *target) error {
	if h.shardgateErr != nil {
		return h.shardgateErr
	}
	port, err := benchkit.FreePort()
	if err != nil {
		return err
	}
	t.port = port
	listen := fmt.Sprintf("127.0.0.1:%d", port)
	file := filepath.Join(h.tmp, strings.TrimPrefix(t.name, "shardgate-")+".yaml")
	if err := os.WriteFile(file, []byte(h.topologyYAML(t.name, listen)), 0o644); err != nil {
		return err
	}
	var args []string
	// Two proxies run at once: give each its own metrics port, if the
	// binary has a metrics listener at all.
	help, _ := benchkit.RunCmd(ctx, 10*time.Second, "", nil, h.shardgateBin, "serve", "--help")
	if t.name == tBase {
		help, _ = benchkit.RunCmd(ctx, 10*time.Second, "", nil, h.cfg.baselineBin, "serve", "--help")
	}
	if strings.Contains(help, "--metrics") {
		mport, err := benchkit.FreePort()
		if err != nil {
			return err
		}
		args = append(args, "--metrics", fmt.Sprintf("127.0.0.1:%d", mport))
		if strings.Contains(help, "--pprof") { // profiles are off unless asked for
			args = append(args, "--pprof")
		}
		t.debug = mport
	}
	bin := h.shardgateBin
	if t.name == tBase {
		bin = h.cfg.baselineBin
	}
	p, err := benchkit.StartShardgate(ctx, benchkit.Shardgate{
		Name: t.name, Bin: bin, Topology: file, Port: port,
		LogPath: filepath.Join(h.tmp, t.name+".log"), Args: args,
	})
	if err != nil {
		return err
	}
	h.procs = append(h.procs, p)
	t.proc = p
	note, err := routingCheck(ctx, port, t.user(), int64(h.cfg.scale)*accountsPerScale, t.name == tTwo)
	if err != nil {
		return fmt.Errorf("routing check through %s failed: %w", t.name, err)
	}
	t.check = note
	return nil
}

// routingCheck reads a sample of accounts through the proxy with the simple
// protocol. On the two-cluster setup every aid exists on exactly one
// cluster, so a misrouted read finds no row.
func routingCheck(ctx context.Context, port int, user string, rows int64, sharded bool) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	login := user
	if user == roleUser {
		login += ":" + rolePassword
	}
	cfg, err := pgx.ParseConfig(fmt.Sprintf("postgres://%s@127.0.0.1:%d/bench?sslmode=disable&connect_timeout=10", login, port))
	if err != nil {
		return "", err
	}
	cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return "", err
	}
	defer conn.Close(context.Background())
	rng := rand.New(rand.NewPCG(1, 2))
	aids := []int64{1, rows}
	for len(aids) < 40 {
		aids = append(aids, 1+rng.Int64N(rows))
	}
	var perShard [2]int
	for _, aid := range aids {
		var got int64
		err := conn.QueryRow(ctx, fmt.Sprintf("SELECT aid FROM pgbench_accounts WHERE aid = %d", aid)).Scan(&got)
		if errors.Is(err, pgx.ErrNoRows) {
			return "", fmt.Errorf("aid %d (keyspace id %016x, shard %s) not found: misrouted", aid, keyspaceID(aid), shardNames[shardOf(aid)])
		}
		if err != nil {
			return "", fmt.Errorf("SELECT aid %d: %w", aid, err)
		}
		if got != aid {
			return "", fmt.Errorf("SELECT aid %d returned aid %d", aid, got)
		}
		perShard[shardOf(aid)]++
	}
	if !sharded {
		return fmt.Sprintf("%d point reads correct", len(aids)), nil
	}
	return fmt.Sprintf("%d point reads correct (%d keys of shard -80, %d of 80-)", len(aids), perShard[0], perShard[1]), nil
}

// createBenchRole makes target tRole's role on cluster A: it logs in with
// its password and may read and write pgbench's tables, nothing more.
func createBenchRole(ctx context.Context, c *testenv.Cluster) error {
	conn, err := c.Conn(ctx, "bench")
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	for _, sql := range []string{
		fmt.Sprintf("CREATE ROLE %s LOGIN PASSWORD '%s'", roleUser, rolePassword),
		"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO " + roleUser,
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			return fmt.Errorf("%s: %w", sql, err)
		}
	}
	return nil
}
