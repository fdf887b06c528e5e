package testenv

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// portFree reports whether nothing listens on 127.0.0.1:port.
func portFree(port int) bool {
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

func eventually(d time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

func TestClusters(t *testing.T) {
	t.Parallel()
	if skipRequested() {
		t.Skip(SkipEnv + "=1")
	}
	ctx := testCtx(t)
	t0 := time.Now()
	env, err := Start(ctx, Options{
		N:         3,
		Databases: []string{"shop"},
		Settings:  map[string]string{"work_mem": "8MB"},
		Log:       tbWriter{t},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Stop()
	t.Logf("3 clusters started in %s", time.Since(t0).Round(time.Millisecond))

	if len(env.Clusters) != 3 {
		t.Fatalf("got %d clusters", len(env.Clusters))
	}
	ports := map[int]bool{}
	for i, c := range env.Clusters {
		if want := fmt.Sprintf("pg%d", i); c.Name != want {
			t.Errorf("cluster %d is named %q, want %q", i, c.Name, want)
		}
		if ports[c.Port] {
			t.Errorf("port %d used twice", c.Port)
		}
		ports[c.Port] = true
		if want := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/shop?sslmode=disable", c.Port); c.DSN("shop") != want {
			t.Errorf("DSN = %q, want %q", c.DSN("shop"), want)
		}
		if _, err := os.Stat(filepath.Join(c.DataDir, fmt.Sprintf(".s.PGSQL.%d", c.Port))); err != nil {
			t.Errorf("%s: no Unix socket in the data directory: %v", c.Name, err)
		}
	}

	// Write and read a row on every cluster, and check the settings took.
	var wg sync.WaitGroup
	for i, c := range env.Clusters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Several statements in one Exec (simple protocol).
			if err := c.Exec(ctx, "shop", `CREATE TABLE t (id int PRIMARY KEY, v text);
				INSERT INTO t VALUES (1, 'on `+c.Name+`')`); err != nil {
				t.Error(err)
				return
			}
			if err := c.Exec(ctx, "shop", "INSERT INTO t VALUES ($1, $2)", 2, "ünïcode "+strconv.Itoa(i)); err != nil {
				t.Error(err)
				return
			}
			conn, err := c.Conn(ctx, "shop")
			if err != nil {
				t.Error(err)
				return
			}
			defer conn.Close(ctx)
			var v string
			if err := conn.QueryRow(ctx, "SELECT v FROM t WHERE id = 1").Scan(&v); err != nil || v != "on "+c.Name {
				t.Errorf("%s: read back %q, %v", c.Name, v, err)
			}
			show := func(name string) string {
				var s string
				if err := conn.QueryRow(ctx, "SHOW "+name).Scan(&s); err != nil {
					t.Errorf("%s: SHOW %s: %v", c.Name, name, err)
				}
				return s
			}
			if s := show("wal_level"); s != "logical" {
				t.Errorf("%s: wal_level = %q, want logical", c.Name, s)
			}
			if n, _ := strconv.Atoi(show("max_prepared_transactions")); n <= 0 {
				t.Errorf("%s: max_prepared_transactions = %d, want > 0", c.Name, n)
			}
			for name, want := range map[string]string{
				"listen_addresses": "127.0.0.1",
				"fsync":            "off",
				"shared_buffers":   "32MB",
				"max_connections":  "200",
				"work_mem":         "8MB", // from Options.Settings
				"server_encoding":  "UTF8",
			} {
				if got := show(name); got != want {
					t.Errorf("%s: %s = %q, want %q", c.Name, name, got, want)
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}

	// Take pg1 down and bring it back on the same port; its data survives.
	c := env.Clusters[1]
	port := c.Port
	if err := c.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Stop(ctx); err != nil { // stopping twice is harmless
		t.Fatal(err)
	}
	if err := c.Exec(ctx, "shop", "SELECT 1"); err == nil {
		t.Fatal("a stopped cluster accepted a query")
	}
	if !portFree(port) {
		t.Errorf("port %d still busy after Cluster.Stop", port)
	}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if c.Port != port {
		t.Fatalf("restarted on port %d, want %d", c.Port, port)
	}
	if err := c.Exec(ctx, "shop", "DELETE FROM t WHERE id = 2 AND v LIKE 'ünïcode%'"); err != nil {
		t.Fatal(err)
	}

	// Stop removes everything and frees the ports; a second Stop is a no-op.
	if err := env.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := env.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if _, err := os.Stat(env.BaseDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("base dir %s still there after Stop (%v)", env.BaseDir, err)
	}
	for p := range ports {
		if !portFree(p) {
			t.Errorf("port %d still busy after Stop", p)
		}
	}
}

// TestKeptBaseDir covers the demo's use: a kept directory on a fixed port is
// reused (data survives), and a server left running by a process that died
// is stopped and started afresh.
func TestKeptBaseDir(t *testing.T) {
	t.Parallel()
	if skipRequested() {
		t.Skip(SkipEnv + "=1")
	}
	ctx := testCtx(t)
	// Not t.TempDir(): when root runs the tests, the server runs as postgres,
	// which cannot enter a 0700 directory of root's.
	parent, err := os.MkdirTemp("", "shardgate-kept-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(parent) })
	if err := os.Chmod(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(parent, "demo")
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{N: 1, Ports: []int{port}, BaseDir: base, Databases: []string{"shop"}, Log: tbWriter{t}}

	env, err := Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if env.Clusters[0].Port != port {
		t.Fatalf("port %d, want %d", env.Clusters[0].Port, port)
	}
	if err := env.Clusters[0].Exec(ctx, "shop", "CREATE TABLE kept (x int); INSERT INTO kept VALUES (42)"); err != nil {
		env.Stop()
		t.Fatal(err)
	}
	if err := env.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(base, "pg0", "data", "PG_VERSION")); err != nil {
		t.Fatalf("kept base dir was not kept: %v", err)
	}

	// Second run reuses the directory. Then pretend this process died
	// without stopping it: dismiss the watchdog and forget the Env.
	t1 := time.Now()
	env2, err := Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("restart of a kept cluster took %s", time.Since(t1).Round(time.Millisecond))
	env2.watchdog.dismiss()
	if err := env2.Clusters[0].Exec(ctx, "shop", "INSERT INTO kept SELECT x + 1 FROM kept"); err != nil {
		t.Fatal(err)
	}

	// Third run finds that server still running, replaces it, keeps the data.
	env3, err := Start(ctx, opts)
	if err != nil {
		env2.Stop()
		t.Fatal(err)
	}
	defer env3.Stop()
	conn, err := env3.Clusters[0].Conn(ctx, "shop")
	if err != nil {
		t.Fatal(err)
	}
	var n int
	err = conn.QueryRow(ctx, "SELECT count(*) FROM kept").Scan(&n)
	conn.Close(ctx)
	if err != nil || n != 2 {
		t.Fatalf("kept rows: %d, %v; want 2", n, err)
	}
	if err := env3.Stop(); err != nil {
		t.Fatal(err)
	}
	if !portFree(port) {
		t.Errorf("port %d still busy after Stop", port)
	}

	// A fixed port that is taken: Start fails, and says why from the server log.
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if env4, err := Start(ctx, opts); err == nil {
		env4.Stop()
		t.Fatal("Start succeeded on a taken port")
	} else if msg := err.Error(); !strings.Contains(msg, "tail of") || !strings.Contains(msg, "could not bind") {
		t.Errorf("error does not show the server log's reason:\n%s", msg)
	} else {
		t.Logf("expected failure:\n%s", msg)
	}
}

// TestWatchdog runs a child test process that starts a cluster and exits
// without calling Stop, as a panicking or timed-out test would. The
// watchdog must stop the server and remove the directory.
func TestWatchdog(t *testing.T) {
	t.Parallel()
	if skipRequested() {
		t.Skip(SkipEnv + "=1")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcessDies$", "-test.v")
	cmd.Env = append(os.Environ(), "SHARDGATE_TESTENV_HELPER=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var port int
	var dir string
	var lines []string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if f := strings.Fields(sc.Text()); len(f) == 3 && f[0] == "READY" {
			port, _ = strconv.Atoi(f[1])
			dir = f[2]
		}
	}
	err = cmd.Wait()
	if port == 0 {
		t.Fatalf("helper did not start a cluster (%v):\n%s", err, strings.Join(lines, "\n"))
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Fatalf("helper exited with %v, want status 3", err)
	}
	if !eventually(20*time.Second, func() bool {
		_, err := os.Stat(dir)
		return errors.Is(err, os.ErrNotExist) && portFree(port)
	}) {
		_, err := os.Stat(dir)
		t.Fatalf("after the process died: dir %s stat=%v, port %d free=%v", dir, err, port, portFree(port))
	}
}

// TestHelperProcessDies is TestWatchdog's child, not a test of its own.
func TestHelperProcessDies(t *testing.T) {
	if os.Getenv("SHARDGATE_TESTENV_HELPER") != "1" {
		t.Skip("helper process for TestWatchdog")
	}
	env, err := Start(context.Background(), Options{N: 1})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("READY %d %s\n", env.Clusters[0].Port, env.BaseDir)
	os.Exit(3) // no Stop, no deferred cleanup
}

func TestFindBinaries(t *testing.T) {
	notFound := func(string) (string, error) { return "", exec.ErrNotFound }
	lib := t.TempDir()
	mk := func(dir string, names ...string) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			if err := os.WriteFile(filepath.Join(dir, n), []byte("#!/bin/sh\n"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}

	// Nothing anywhere: the error says how to install.
	_, err := findBinaries(notFound, lib)
	if !errors.Is(err, ErrNoBinaries) {
		t.Fatalf("err = %v, want ErrNoBinaries", err)
	}
	const want = "PostgreSQL server binaries (initdb, pg_ctl, postgres) not found; on Debian/Ubuntu: apt-get install postgresql; on macOS: brew install postgresql@15; or put their directory on PATH"
	if err.Error() != want {
		t.Errorf("message:\n%s\nwant:\n%s", err, want)
	}

	// The highest complete version under the lib root wins.
	mk(filepath.Join(lib, "9.6", "bin"), "initdb", "pg_ctl", "postgres")
	mk(filepath.Join(lib, "15", "bin"), "initdb", "pg_ctl", "postgres")
	mk(filepath.Join(lib, "16", "bin"), "psql") // client only
	got, err := findBinaries(notFound, lib)
	if err != nil || got != filepath.Join(lib, "15", "bin") {
		t.Errorf("got %q, %v; want the 15 dir", got, err)
	}

	// pg_config pointing at a client-only dir is ignored; PATH is the last resort.
	client, server := t.TempDir(), t.TempDir()
	mk(client, "psql")
	mk(server, "initdb", "pg_ctl", "postgres")
	mk(client, "pg_config")
	if err := os.WriteFile(filepath.Join(client, "pg_config"), []byte("#!/bin/sh\necho "+client+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	look := func(name string) (string, error) {
		switch name {
		case "pg_config":
			return filepath.Join(client, "pg_config"), nil
		case "initdb":
			return filepath.Join(server, "initdb"), nil
		}
		return "", exec.ErrNotFound
	}
	if got, err := findBinaries(look, ""); err != nil || got != server {
		t.Errorf("got %q, %v; want %q", got, err, server)
	}

	// The real machine: found, or the documented error.
	if dir, err := FindBinaries(); err == nil {
		t.Logf("server binaries in %s", dir)
	} else if !errors.Is(err, ErrNoBinaries) {
		t.Errorf("FindBinaries: %v", err)
	}
}

func TestVersionLess(t *testing.T) {
	for _, c := range []struct {
		a, b string
		less bool
	}{{"9.6", "15", true}, {"15", "16", true}, {"16", "15", false}, {"10", "9.6", false}, {"abc", "9", true}} {
		if got := versionLess(c.a, c.b); got != c.less {
			t.Errorf("versionLess(%q, %q) = %v", c.a, c.b, got)
		}
	}
}
