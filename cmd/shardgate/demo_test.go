package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/shardgate/shardgate/internal/testenv"
	"github.com/shardgate/shardgate/topology"
)

// TestDemoInterruptExitsZero runs `shardgate demo` (scaled down: 20
// customers, free ports) as a real process: it says that it resets its
// data and where its topology file is, serves metrics, logs a reload of
// that file, and on SIGINT stops the proxy and its clusters and exits 0
// — the status `make demo` sees. Before, the clusters' signal handler
// exited 130 and make printed "Error 130".
func TestDemoInterruptExitsZero(t *testing.T) {
	dir := demoDir(t)
	d := startDemo(t, dir, "20")
	cmd, out, logs, exited := d.cmd, d.out, d.logs, d.exited
	topoFile := filepath.Join(dir, "topology.yaml")
	for _, want := range []string{"it is reset on every start", "topology: " + topoFile} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in the demo's output:\n%s", want, out)
		}
	}
	m := regexp.MustCompile(`metrics: (http://\S+/metrics)`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no metrics address in the demo's output:\n%s", out)
	}
	resp, err := http.Get(m[1])
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "go_goroutines") {
		t.Errorf("GET %s: %s\n%s", m[1], resp.Status, body)
	}

	yaml, err := os.ReadFile(topoFile)
	if err != nil {
		t.Fatal(err)
	}
	// pg1 is reached over TLS, verified against the CA the demo made in
	// its directory; a scatter read goes through it.
	topo, err := topology.Load(topoFile)
	if err != nil {
		t.Fatal(err)
	}
	if dsn := topo.Cluster("pg1").DSN; !strings.Contains(dsn, "sslmode=verify-full") || !strings.Contains(dsn, "sslrootcert="+url.QueryEscape(filepath.Join(dir, "ca.crt"))) {
		t.Errorf("pg1 is not reached with verify-full and the demo's CA: %s", dsn)
	}
	if a := regexp.MustCompile(`serving the example on (\S+)`).FindStringSubmatch(out.String()); a == nil {
		t.Errorf("no proxy address in the demo's output:\n%s", out)
	} else {
		c, err := pgx.Connect(context.Background(), "postgres://postgres@"+a[1]+"/shop?sslmode=disable")
		if err != nil {
			t.Fatal(err)
		}
		var n int
		if err := c.QueryRow(context.Background(), "SELECT count(*) FROM customers").Scan(&n); err != nil || n != 20 {
			t.Errorf("customers through the proxy: %d, %v", n, err)
		}
		c.Close(context.Background())
	}
	tmp := topoFile + ".tmp"
	if err := os.WriteFile(tmp, append(yaml, "# edited\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, topoFile); err != nil {
		t.Fatal(err)
	}
	waitDemo(t, logs, logs, exited, "topology reloaded")

	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(60 * time.Second):
		t.Fatalf("demo still running 60s after SIGINT; output:\n%s\nlog:\n%s", out, logs)
	}
	if waitErr := d.waitErr; waitErr != nil {
		t.Fatalf("demo exited with %v after SIGINT (want status 0); output:\n%s\nlog:\n%s", waitErr, out, logs)
	}
	if !strings.Contains(out.String(), "stopped") {
		t.Errorf("the demo did not say it stopped its clusters:\n%s", out)
	}
	for _, c := range []string{"pg0", "pg1"} {
		if _, err := os.Stat(filepath.Join(dir, c, "data", "postmaster.pid")); err == nil {
			t.Errorf("cluster %s still running after the demo exited", c)
		}
	}
}

// demoDir is a directory for the demo's clusters, removed at the end.
func demoDir(t *testing.T) string {
	testenv.Shared(t) // PostgreSQL is there (or the test is skipped)
	// Not t.TempDir (0700): as root the clusters run as postgres, which
	// must be able to enter the directory.
	dir, err := os.MkdirTemp("", "shardgate-demo-test-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// demoRun is a `shardgate demo` process.
type demoRun struct {
	cmd       *exec.Cmd
	out, logs *logBuffer
	exited    chan struct{}
	waitErr   error // once exited is closed
}

// startDemo runs `shardgate demo` in dir (free ports, customers
// customers, flags added) and waits until it serves.
func startDemo(t *testing.T, dir, customers string, flags ...string) *demoRun {
	d := &demoRun{out: &logBuffer{}, logs: &logBuffer{}, exited: make(chan struct{})}
	args := append([]string{"demo", "--dir", dir, "--customers", customers,
		"--ports", "0,0", "--listen", "127.0.0.1:0", "--metrics", "127.0.0.1:0"}, flags...)
	d.cmd = exec.Command(os.Args[0], args...)
	d.cmd.Env = append(os.Environ(), runMainEnv+"=1")
	d.cmd.Stderr = d.logs
	stdout, err := d.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_, _ = io.Copy(d.out, bufio.NewReader(stdout))
		d.waitErr = d.cmd.Wait()
		close(d.exited)
	}()
	t.Cleanup(func() {
		_ = d.cmd.Process.Kill()
		<-d.exited
	})
	waitDemo(t, d.out, d.logs, d.exited, "Ctrl-C stops")
	return d
}

// waitDemo waits for line in buf while the demo runs; initdb of two
// clusters on a busy machine may take a while.
func waitDemo(t *testing.T, buf, logs *logBuffer, exited <-chan struct{}, line string) {
	t.Helper()
	deadline := time.After(3 * time.Minute)
	for !strings.Contains(buf.String(), line) {
		select {
		case <-exited:
			t.Fatalf("demo exited before %q; log:\n%s", line, logs)
		case <-deadline:
			t.Fatalf("no %q after 3 minutes; log:\n%s", line, logs)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
