// Command replicas measures reads on standbys (issue 21): pgbench -S
// through `shardgate serve` over one cluster with two streaming
// standbys, once with the sessions' default target (the primary) and
// once with PGOPTIONS='-c shardgate.target=replica', per query mode, and
// counts the transactions each host ran (pg_stat_database.xact_commit of
// the database, before and after each run); then a standby delayed
// past max_lag (skipped, taken back) and a standby killed under read
// lanes (lag.go).
//
//	bash bench/run.sh -scenario replicas [-T 10] [-c 8] [-write-doc]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/shardgate/shardgate/bench/internal/benchkit"
	"github.com/shardgate/shardgate/internal/testenv"
)

const section = "## Reads on standbys (issue 21)"

func main() {
	repo := flag.String("repo", "", "the shardgate repository (default: found from the working directory)")
	doc := flag.String("doc", "", "the document -write-doc updates (default: REPO/docs/benchmarks.md)")
	write := flag.Bool("write-doc", false, "put the report into the document's "+section+" section")
	secs := flag.Int("T", 10, "seconds per pgbench run")
	clients := flag.Int("c", 8, "pgbench clients")
	scale := flag.Int("s", 5, "pgbench scale")
	flag.Parse()
	if err := benchkit.DocPaths(repo, doc); err != nil {
		log.Fatal(err)
	}
	if err := run(*repo, *doc, *write, *secs, *clients, *scale); err != nil {
		log.Fatal(err)
	}
}

type host struct {
	name string
	c    *testenv.Cluster
}

func run(repo, doc string, write bool, secs, clients, scale int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	logf := func(f string, a ...any) { log.Printf("replicas: "+f, a...) }
	tmp, err := os.MkdirTemp("", "shardgate-bench-replicas-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	env, err := testenv.Start(ctx, testenv.Options{N: 1, Databases: []string{"bench"},
		Settings: map[string]string{"max_connections": "100", "shared_buffers": "128MB"}})
	if err != nil {
		return err
	}
	defer env.Stop()
	release := env.StopOnSignal()
	defer release()
	bin, err := testenv.FindBinaries()
	if err != nil {
		return err
	}
	pgbench := filepath.Join(bin, "pgbench")
	if _, err := os.Stat(pgbench); err != nil {
		if pgbench, err = exec.LookPath("pgbench"); err != nil {
			return errors.New("pgbench not found (Debian: apt-get install postgresql-contrib)")
		}
	}
	primary := env.Clusters[0]
	logf("pgbench -i -s %d on the primary", scale)
	if out, err := benchkit.RunCmd(ctx, 10*time.Minute, "", nil, pgbench, "-i", "-s", fmt.Sprint(scale), "-q", "-n", primary.DSN("bench")); err != nil {
		return fmt.Errorf("pgbench -i: %v: %s", err, benchkit.LastLines(out, 5))
	}
	hosts := []host{{"primary", primary}}
	for i := 1; i <= 2; i++ {
		s, err := primary.StartStandby(ctx, testenv.StandbyOptions{})
		if err != nil {
			return err
		}
		if err := s.WaitReplay(ctx); err != nil {
			return err
		}
		hosts = append(hosts, host{fmt.Sprintf("standby %d", i), s})
	}
	topo := filepath.Join(tmp, "replicas.yaml")
	yaml := fmt.Sprintf(`version: 1
clusters:
  pg0:
    dsn: %q
    replicas: [%q, %q]
    max_lag: 2s
groups:
  main: { unsharded: true, cluster: pg0 }
proxy:
  pool: { size: 16 }
  auth:
    users:
      postgres: { password: x, admin: true }
`, primary.DSN("bench"), hosts[1].c.DSN("bench"), hosts[2].c.DSN("bench"))
	if err := os.WriteFile(topo, []byte(yaml), 0o644); err != nil {
		return err
	}
	sg, err := benchkit.BuildShardgate(ctx, repo, tmp)
	if err != nil {
		return err
	}
	port, err := benchkit.FreePort()
	if err != nil {
		return err
	}
	proc, err := benchkit.StartShardgate(ctx, benchkit.Shardgate{Name: "shardgate", Bin: sg, Topology: topo, Port: port,
		LogPath: filepath.Join(tmp, "shardgate.log")})
	if err != nil {
		return err
	}
	defer proc.Stop(10 * time.Second)
	time.Sleep(2 * time.Second) // the health checker's first rounds

	var rows []string
	for _, mode := range []string{"simple", "prepared"} {
		for _, target := range []string{"", "replica"} {
			before, err := commits(ctx, hosts)
			if err != nil {
				return err
			}
			envv := benchkit.ChildEnv()
			label := "default (primary)"
			if target != "" {
				envv = append(envv, "PGOPTIONS=-c shardgate.target="+target)
				label = "`PGOPTIONS='-c shardgate.target=" + target + "'`"
			}
			args := []string{"-S", "-n", "-c", fmt.Sprint(clients), "-j", "2", "-T", fmt.Sprint(secs), "-M", mode,
				fmt.Sprintf("postgres://postgres@127.0.0.1:%d/bench?sslmode=disable", port)}
			logf("pgbench %s (target %s)", strings.Join(args, " "), label)
			out, err := benchkit.RunCmd(ctx, time.Duration(secs+60)*time.Second, "", envv, pgbench, args...)
			if err != nil {
				return fmt.Errorf("pgbench: %v: %s", err, benchkit.LastLines(out, 8))
			}
			time.Sleep(11 * time.Second) // idle backends flush their statistics within 10 s
			after, err := commits(ctx, hosts)
			if err != nil {
				return err
			}
			cells := []string{mode, label, tps(out), failed(out)}
			for i := range hosts {
				cells = append(cells, fmt.Sprint(after[i]-before[i]))
			}
			rows = append(rows, "| "+strings.Join(cells, " | ")+" |")
		}
	}
	var b strings.Builder
	b.WriteString(section + "\n\n")
	fmt.Fprintf(&b, "`%s` on %s; %s; shardgate %s. One cluster from internal/testenv with two streaming standbys "+
		"(pg_basebackup -R, asynchronous), `pgbench -i -s %d` on the primary; `shardgate serve` with `replicas:` for the "+
		"cluster, `max_lag: 2s`, pool size 16. Each row: `pgbench -S -n -c %d -j 2 -T %d -M MODE` through the proxy; "+
		"the host columns are the transactions `pg_stat_database.xact_commit` counted on each host during the run "+
		"(the primary's few dozen under `replica` are the proxy's health checks, about one a second; on the standbys the checks did not show in `xact_commit`, as the default rows' zeros show). 1-minute load average at the end: %s.\n\n",
		invoked(), time.Now().UTC().Format("2006-01-02 15:04 UTC"), benchkit.Machine(), benchkit.GitDescribe(repo),
		scale, clients, secs, benchkit.LoadAvg())
	b.WriteString("| mode | target | tps | failed | primary | standby 1 | standby 2 |\n| --- | --- | --- | --- | --- | --- | --- |\n")
	b.WriteString(strings.Join(rows, "\n") + "\n")
	hostRows, err := showClusters(ctx, port)
	if err != nil {
		return err
	}
	b.WriteString("\n`SHOW CLUSTERS` after the runs:\n\n| role | host | state | lag_bytes | bans |\n| --- | --- | --- | --- | --- |\n")
	b.WriteString(hostRows)
	lp, err := lag(ctx, hosts, pgbench, port, clients, secs)
	if err != nil {
		return err
	}
	lp.markdown(&b)
	kp, err := killStandby(ctx, hosts, pgbench, tmp, port, clients, secs)
	if err != nil {
		return err
	}
	kp.markdown(&b)
	return benchkit.Publish(b.String(), write, doc, logf)
}

func invoked() string {
	if s := os.Getenv("BENCH_INVOKED_AS"); s != "" {
		return s
	}
	return "bench/replicas"
}

// commits reads each host's xact_commit of database bench.
func commits(ctx context.Context, hosts []host) ([]int64, error) {
	var out []int64
	for _, h := range hosts {
		conn, err := pgx.Connect(ctx, h.c.DSN("postgres"))
		if err != nil {
			return nil, err
		}
		var n int64
		// A snapshot of the statistics as of now, not of this transaction's start.
		_, _ = conn.Exec(ctx, "SELECT pg_stat_clear_snapshot()")
		err = conn.QueryRow(ctx, "SELECT xact_commit FROM pg_stat_database WHERE datname = 'bench'").Scan(&n)
		conn.Close(ctx)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", h.name, err)
		}
		out = append(out, n)
	}
	return out, nil
}

// consoleDSN is the proxy's admin console.
func consoleDSN(port int) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/shardgate?sslmode=disable", port)
}

// showClusters is the admin console's view of the hosts, as table rows.
func showClusters(ctx context.Context, port int) (string, error) {
	rows, err := benchkit.ConsoleRows(ctx, consoleDSN(port), "SHOW CLUSTERS")
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", r[6], r[7], r[8], r[9], r[11])
	}
	return b.String(), nil
}

var tpsLine = regexp.MustCompile(`tps = ([0-9.]+) \(without initial connection time\)`)
var failedLine = regexp.MustCompile(`number of failed transactions: ([0-9]+)`)

func tps(out string) string {
	if m := tpsLine.FindStringSubmatch(out); m != nil {
		return m[1]
	}
	return "?"
}

func failed(out string) string {
	if m := failedLine.FindStringSubmatch(out); m != nil {
		return m[1]
	}
	return "0"
}
