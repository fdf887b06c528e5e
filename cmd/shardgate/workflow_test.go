package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/testenv"
)

// workflowFixture creates databases prefix_main, prefix_t0 and prefix_t1
// on the shared cluster, public.orders with rows rows in main (and, with
// targetSQL, run on t0 and t1), and writes topology.yaml (orders in main)
// and next.yaml (orders in by_customer). It returns both files' paths and
// the databases by cluster name.
func workflowFixture(t *testing.T, prefix string, rows int, targetSQL string) (from, to string, dbs map[string]string) {
	t.Helper()
	pg := testenv.Shared(t).Clusters[0]
	ctx := context.Background()
	dbs = map[string]string{}
	for _, c := range []string{"main", "t0", "t1"} {
		db := prefix + "_" + c
		_ = pg.Exec(ctx, "", "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)")
		if err := pg.Exec(ctx, "", "CREATE DATABASE "+db); err != nil {
			t.Fatal(err)
		}
		dbs[c] = db
		t.Cleanup(func() { _ = pg.Exec(ctx, "", "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)") })
	}
	if err := pg.Exec(ctx, dbs["main"], fmt.Sprintf(`CREATE TABLE orders (id bigint PRIMARY KEY, customer_id bigint NOT NULL, note text);
		INSERT INTO orders SELECT g, g %% 31, 'n' FROM generate_series(1, %d) g`, rows)); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"t0", "t1"} {
		if targetSQL != "" {
			if err := pg.Exec(ctx, dbs[c], targetSQL); err != nil {
				t.Fatal(err)
			}
		}
	}
	yaml := "version: 1\nclusters:\n"
	for _, c := range []string{"main", "t0", "t1"} {
		yaml += fmt.Sprintf("  %s: { dsn: %q }\n", c, pg.DSN(dbs[c]))
	}
	yaml += "groups:\n  main: { unsharded: true, cluster: main }\n  by_customer:\n" +
		"    index: { name: by_customer, column: customer_id, type: bigint, function: xxhash }\n" +
		"    shards: { \"-80\": t0, \"80-\": t1 }\n    tables: { customers: { column: id } }\n"
	dir := t.TempDir()
	from, to = filepath.Join(dir, "topology.yaml"), filepath.Join(dir, "next.yaml")
	os.WriteFile(from, []byte(yaml), 0o644)
	os.WriteFile(to, []byte(strings.Replace(yaml, "customers: { column: id } }", "customers: { column: id }, orders: {} }", 1)), 0o644)
	return from, to, dbs
}

// TestWorkflowCommands drives a MoveTables through the command line:
// create (dry run, then for real), run, status --json, vdiff, cancel, list.
func TestWorkflowCommands(t *testing.T) {
	from, to, _ := workflowFixture(t, "cliwf", 500, "")
	ctx := context.Background()
	create := []string{"workflow", "create", "movetables", "--topology", from, "--to", to, "--group", "by_customer", "--tables", "orders", "--chunk-rows", "100"}
	out, _, err := run(append(create, "--dry-run", "--snapshot-max", "2s", "--copy-parallel", "3")...)
	if err != nil || !strings.Contains(out, "copy public.orders from main to t0, t1") || strings.Contains(out, "created workflow") ||
		!strings.Contains(out, "copy snapshot held at most 2s per copy cycle, the stream catching up between cycles; 3 table(s) of a source copied at once") {
		t.Fatalf("dry run: %v\n%s", err, out)
	}
	out, _, err = run(create...)
	if err != nil || !strings.Contains(out, "created workflow 1;") {
		t.Fatalf("create: %v\n%s", err, out)
	}

	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		root := newRoot()
		root.SetArgs([]string{"workflow", "run", "1", "--topology", from})
		root.SetOut(&bytes.Buffer{})
		root.SetErr(&bytes.Buffer{})
		done <- root.ExecuteContext(runCtx)
	}()
	var st struct {
		Phase  string
		Tables []struct {
			RowsCopied int64 `json:"rows_copied"`
		}
	}
	for deadline := time.Now().Add(time.Minute); st.Phase != "streaming"; time.Sleep(100 * time.Millisecond) {
		out, _, err := run("workflow", "status", "1", "--json", "--topology", from)
		if err != nil || time.Now().After(deadline) {
			t.Fatalf("status: %v %s", err, out)
		}
		if err := json.Unmarshal([]byte(out), &st); err != nil {
			t.Fatal(err)
		}
	}
	stop()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
	if len(st.Tables) != 1 || st.Tables[0].RowsCopied != 500 {
		t.Fatalf("status: %+v", st)
	}
	out, _, err = run("workflow", "vdiff", "1", "--topology", from)
	if err != nil || !strings.Contains(out, "public.orders on t0:") || !strings.Contains(out, "0 missing, 0 extra, 0 mismatched") {
		t.Fatalf("vdiff: %v\n%s", err, out)
	}
	if out, _, err = run("workflow", "cancel", "1", "--topology", from); err != nil {
		t.Fatalf("cancel: %v %s", err, out)
	}
	out, _, err = run("workflow", "list", "--topology", from)
	if err != nil || !strings.HasPrefix(out, "1\tmovetables\tcancelled") {
		t.Fatalf("list: %v\n%s", err, out)
	}
	if _, _, err := run("workflow", "status", "7", "--topology", from); err == nil || !strings.Contains(err.Error(), "no such workflow") {
		t.Fatalf("unknown id: %v", err)
	}
}
