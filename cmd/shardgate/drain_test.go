package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/shardgate/shardgate/examples/ecommerce"
	"github.com/shardgate/shardgate/internal/testenv"
)

// runMainEnv makes the test binary run main (see TestMain).
const runMainEnv = "SHARDGATE_TEST_RUN_MAIN"

// TestServeDrainsOnSIGTERM runs `shardgate serve` as a real process and
// sends it SIGTERM: an idle client is told FATAL 57P01 (before, the
// connection was just closed: "unexpected EOF"), a client in a transaction
// finishes and commits it and then gets 57P01, and the process exits 0.
func TestServeDrainsOnSIGTERM(t *testing.T) {
	env := testenv.Shared(t)
	dsns := map[string]string{}
	for _, c := range env.Clusters {
		dsns[c.Name] = c.DSN(ecommerce.Database)
	}
	yaml, err := ecommerce.TopologyFor(dsns)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "topology.yaml")
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()

	logs := &logBuffer{}
	cmd := exec.Command(os.Args[0], "serve", "--topology", file, "--listen", addr)
	cmd.Env = append(os.Environ(), runMainEnv+"=1")
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var waitErr error
	exited := make(chan struct{})
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	waitLog(t, logs, "shardgate listening")

	dsn := fmt.Sprintf("postgres://postgres@%s/%s?sslmode=disable", addr, ecommerce.Database)
	ctx := context.Background()
	idle := pgxConnect(t, dsn)
	busy := pgxConnect(t, dsn)
	for _, sql := range []string{"BEGIN", "SELECT 1"} {
		if _, err := busy.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // the signal's handling
	if _, err := idle.Exec(ctx, "SELECT 1"); sqlstate(err) != "57P01" {
		t.Fatalf("idle client after SIGTERM: want 57P01, got %v", err)
	}
	for _, sql := range []string{"SELECT 2", "COMMIT"} {
		if _, err := busy.Exec(ctx, sql); err != nil {
			t.Fatalf("%s while draining: %v", sql, err)
		}
	}
	time.Sleep(200 * time.Millisecond)
	if _, err := busy.Exec(ctx, "SELECT 1"); sqlstate(err) != "57P01" {
		t.Fatalf("client after its COMMIT: want 57P01, got %v", err)
	}
	select {
	case <-exited:
		if waitErr != nil {
			t.Fatalf("shardgate serve exited with %v; log:\n%s", waitErr, logs)
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("shardgate serve still running after the drain; log:\n%s", logs)
	}
	if !strings.Contains(logs.String(), "drained") {
		t.Errorf("no drained line in the log:\n%s", logs)
	}
}

func pgxConnect(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func waitLog(t *testing.T, logs *logBuffer, line string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(logs.String(), line) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in the log:\n%s", line, logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func sqlstate(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}
