package main

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/shardgate/shardgate/examples/ecommerce"
)

// TestStatusPrintsTheConsole runs `shardgate status` against a served
// proxy: the admin user's console answers, in tables.
func TestStatusPrintsTheConsole(t *testing.T) {
	s := serveExample(t, "proxy:\n  auth:\n    users:\n      app: { password: x }\n      ops: { password: y, admin: true }\n")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out bytes.Buffer
	dsn := "postgres://ops:y@" + s.addr + "/shardgate?sslmode=disable"
	if err := printStatus(ctx, &out, dsn, statusCommands); err != nil {
		t.Fatalf("status: %v\n%s", err, out.String())
	}
	text := out.String()
	for _, want := range []string{"== SHOW VERSION", "shardgate " + version, "== SHOW POOLS", "cluster  mode", "pg0", "pg1", "== SHOW STATS"} {
		if !strings.Contains(text, want) {
			t.Errorf("status output lacks %q:\n%s", want, text)
		}
	}
	if err := printStatus(ctx, &out, "postgres://app:x@"+s.addr+"/shardgate?sslmode=disable", []string{"SHOW POOLS"}); err == nil || !strings.Contains(err.Error(), "28000") {
		t.Errorf("status as a non-admin user: %v, want 28000", err)
	}
	// status queries: SHOW QUERIES of the costliest fingerprints.
	app := pgxConnect(t, "postgres://app:x@"+s.addr+"/"+ecommerce.Database+"?sslmode=disable")
	for i := 0; i < 3; i++ {
		if _, err := app.Exec(ctx, "SELECT 40 + 2 AS answer", pgx.QueryExecModeSimpleProtocol); err != nil {
			t.Fatal(err)
		}
	}
	stdout, stderr, err := run("status", "--dsn", dsn, "queries", "--limit", "5", "--like", "%answer%")
	if err != nil {
		t.Fatalf("status queries: %v %s", err, stderr)
	}
	if !strings.Contains(stdout, "== SHOW QUERIES ORDER BY total_time DESC LIMIT 5 LIKE '%answer%'") ||
		!strings.Contains(stdout, "SELECT $1 + $2 AS answer  3 ") || strings.Contains(stdout, "40 + 2") {
		t.Errorf("status queries:\n%s", stdout)
	}
}

func TestServeLogFormat(t *testing.T) {
	for _, f := range []string{"text", "json"} {
		if l, err := newLogger(f, "info"); err != nil || l == nil {
			t.Errorf("--log-format %s: %v", f, err)
		}
	}
	if _, err := newLogger("xml", "info"); err == nil || !strings.Contains(err.Error(), "text or json") {
		t.Errorf("--log-format xml: %v", err)
	}
	// Client connections are logged at debug: --log-level debug shows
	// them, the default info does not.
	for level, enabled := range map[string]bool{"debug": true, "info": false, "warn": false} {
		l, err := newLogger("text", level)
		if err != nil || l.Enabled(context.Background(), slog.LevelDebug) != enabled {
			t.Errorf("--log-level %s: debug enabled %v, want %v (%v)", level, err == nil && !enabled, enabled, err)
		}
	}
	if _, err := newLogger("text", "loud"); err == nil || !strings.Contains(err.Error(), "--log-level") {
		t.Errorf("--log-level loud: %v", err)
	}
}
