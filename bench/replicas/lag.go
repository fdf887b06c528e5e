package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/shardgate/shardgate/bench/internal/benchkit"
	"github.com/shardgate/shardgate/internal/testenv"
)

// After the runs: standby 2 is given recovery_min_apply_delay = 5s (over
// max_lag) and a write made on the primary: it must be skipped while it
// lags, and taken back once the delay is gone; then standby 1 is killed
// (kill -9 of its postmaster) under pgbench -S lanes with the replica
// target: only the reads running on it may fail.

func note(f string, a ...any) { log.Printf("replicas: "+f, a...) }

// lagPhase is what the delayed standby's phase saw.
type lagPhase struct {
	lagging, back       time.Duration // from the write (the reset) to SHOW CLUSTERS' state
	during, after       []int64       // per host: transactions of the runs while lagging, and once back
	tpsDuring, tpsAfter string
}

// hostState is SHOW CLUSTERS' state of the host on port.
func hostState(ctx context.Context, proxyPort, port int) (string, error) {
	rows, err := benchkit.ConsoleRows(ctx, consoleDSN(proxyPort), "SHOW CLUSTERS")
	if err != nil {
		return "", err
	}
	for _, r := range rows {
		if r[7] == fmt.Sprintf("127.0.0.1:%d", port) {
			return r[8], nil
		}
	}
	return "", nil
}

// waitState waits (up to a minute) until the host on port shows want.
func waitState(ctx context.Context, proxyPort, port int, want string) (time.Duration, error) {
	start := time.Now()
	for {
		st, err := hostState(ctx, proxyPort, port)
		if err != nil {
			return 0, err
		}
		if st == want {
			return time.Since(start), nil
		}
		if time.Since(start) > time.Minute {
			return 0, fmt.Errorf("the standby on port %d is %q after a minute, not %q", port, st, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func setDelay(ctx context.Context, c *testenv.Cluster, delay string) error {
	if err := c.Exec(ctx, "", "ALTER SYSTEM SET recovery_min_apply_delay = '"+delay+"'"); err != nil {
		return err
	}
	return c.Exec(ctx, "", "SELECT pg_reload_conf()")
}

// replicaRun is one pgbench -S run with the replica target: its tps and
// each host's transactions.
func replicaRun(ctx context.Context, hosts []host, pgbench string, port, clients, secs int) (string, []int64, error) {
	before, err := commits(ctx, hosts)
	if err != nil {
		return "", nil, err
	}
	envv := append(benchkit.ChildEnv(), "PGOPTIONS=-c shardgate.target=replica")
	out, err := benchkit.RunCmd(ctx, time.Duration(secs+60)*time.Second, "", envv, pgbench, "-S", "-n", "-c", fmt.Sprint(clients), "-j", "2",
		"-T", fmt.Sprint(secs), "-M", "prepared", fmt.Sprintf("postgres://postgres@127.0.0.1:%d/bench?sslmode=disable", port))
	if err != nil {
		return "", nil, fmt.Errorf("pgbench: %v: %s", err, benchkit.LastLines(out, 8))
	}
	time.Sleep(11 * time.Second) // idle backends flush their statistics within 10 s
	after, err := commits(ctx, hosts)
	if err != nil {
		return "", nil, err
	}
	d := make([]int64, len(hosts))
	for i := range hosts {
		d[i] = after[i] - before[i]
	}
	return tps(out), d, nil
}

func lag(ctx context.Context, hosts []host, pgbench string, port, clients, secs int) (*lagPhase, error) {
	r := &lagPhase{}
	slow := hosts[2].c
	note("standby 2: recovery_min_apply_delay = 5s, then a write on the primary")
	if err := setDelay(ctx, slow, "5s"); err != nil {
		return nil, err
	}
	if err := hosts[0].c.Exec(ctx, "bench", "UPDATE pgbench_branches SET bbalance = bbalance WHERE bid = 1"); err != nil {
		return nil, err
	}
	var err error
	if r.lagging, err = waitState(ctx, port, slow.Port, "lagging"); err != nil {
		return nil, err
	}
	// The proxy's own writes to main (the primary here) keep the delayed
	// standby behind while the delay lasts.
	if r.tpsDuring, r.during, err = replicaRun(ctx, hosts, pgbench, port, clients, secs); err != nil {
		return nil, err
	}
	note("standby 2: delay reset")
	if err := setDelay(ctx, slow, "0"); err != nil {
		return nil, err
	}
	if r.back, err = waitState(ctx, port, slow.Port, "up"); err != nil {
		return nil, err
	}
	if r.tpsAfter, r.after, err = replicaRun(ctx, hosts, pgbench, port, clients, secs); err != nil {
		return nil, err
	}
	return r, nil
}

// killPhase is what the kill of standby 1 under read lanes saw.
type killPhase struct {
	lanes, runs    int
	reads, after   int
	errors, flight int
	messages       []string
}

// killStandby runs read lanes (pgbench -S's select, the replica target)
// and kills standby 1 a third of the way.
func killStandby(ctx context.Context, hosts []host, pgbench, tmp string, port, clients, secs int) (*killPhase, error) {
	dir := filepath.Join(tmp, "kill")
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, err
	}
	l, err := testenv.StartLanes(ctx, testenv.LanesOptions{Pgbench: pgbench, Dir: dir, Lanes: clients,
		Duration: time.Duration(secs) * time.Second,
		DSNs:     []string{fmt.Sprintf("postgres://postgres@127.0.0.1:%d/bench?sslmode=disable", port)},
		Script:   "\\set n :n + 1\n\\set aid random(1, 100000)\nSELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n",
		Env:      []string{"PGOPTIONS=-c shardgate.target=replica"}, Args: []string{"-M", "prepared"}})
	if err != nil {
		return nil, err
	}
	time.Sleep(time.Duration(secs) * time.Second / 3)
	note("kill -9 of standby 1 under %d read lanes", clients)
	if err := hosts[1].c.Kill9(); err != nil {
		return nil, err
	}
	killedAt := time.Now()
	res, err := l.Wait()
	if err != nil {
		return nil, err
	}
	r := &killPhase{lanes: clients, runs: res.Runs, reads: len(res.Txns), errors: len(res.Errors)}
	for _, tx := range res.Txns {
		if tx.Start.After(killedAt) {
			r.after++
		}
	}
	for _, e := range res.Errors {
		if e.BeganBefore(killedAt) {
			r.flight++
		}
		r.messages = append(r.messages, e.Message)
	}
	return r, nil
}

func (r *lagPhase) markdown(b *strings.Builder) {
	b.WriteString("\nStandby 2 given `recovery_min_apply_delay = 5s`, then one write on the primary (`max_lag: 2s`): ")
	fmt.Fprintf(b, "`SHOW CLUSTERS` showed it `lagging` %s after the write; delay reset to 0, `up` again %s after. ", r.lagging.Round(time.Millisecond), r.back.Round(time.Millisecond))
	b.WriteString("A `pgbench -S -M prepared` run with the replica target in each state:\n\n")
	b.WriteString("| standby 2 | tps | primary | standby 1 | standby 2 |\n| --- | --- | --- | --- | --- |\n")
	row := func(state, t string, d []int64) {
		fmt.Fprintf(b, "| %s | %s | %d | %d | %d |\n", state, t, d[0], d[1], d[2])
	}
	row("lagging (delay 5s)", r.tpsDuring, r.during)
	row("taken back (delay 0)", r.tpsAfter, r.after)
}

func (r *killPhase) markdown(b *strings.Builder) {
	fmt.Fprintf(b, "\nStandby 1 killed (`kill -9` of its postmaster) a third of the way through %d read lanes "+
		"(testenv.StartLanes: single-client pgbench, pgbench -S's select, `-M prepared`, the replica target, started "+
		"again after an error): %d reads acknowledged, %d of them begun after the kill; %d runs ended in an error, "+
		"%d of them for a read begun before the standby's processes were gone.", r.lanes, r.reads, r.after, r.errors, r.flight)
	if len(r.messages) > 0 {
		fmt.Fprintf(b, " First error: `%s`.", strings.SplitN(r.messages[0], ";", 2)[0])
	}
	b.WriteString("\n")
}
