package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/examples/ecommerce"
	"github.com/shardgate/shardgate/internal/testenv"
)

// TestDemoLoad runs `shardgate demo load` (docker-compose.yml's loader)
// twice against the example topology over the test clusters, in a database
// of its own: the customers are spread over both clusters, each reference
// table is whole on each, and the second run replaces the data instead of
// adding to it.
func TestDemoLoad(t *testing.T) {
	env := testenv.Shared(t)
	ctx := context.Background()
	const db = "loadtest"
	dsns := map[string]string{}
	for _, c := range env.Clusters {
		_ = c.Exec(ctx, "postgres", "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)")
		if err := c.Exec(ctx, "postgres", "CREATE DATABASE "+db); err != nil {
			t.Fatal(err)
		}
		dsns[c.Name] = c.DSN(db)
	}
	yaml, err := ecommerce.TopologyFor(dsns)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "topology.yaml")
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	for round := 0; round < 2; round++ {
		out, stderr, err := run("demo", "load", "--topology", file, "--customers", "40")
		if err != nil || !strings.Contains(out, "customers") {
			t.Fatalf("demo load: %q %q %v", out, stderr, err)
		}
		total := 0
		for _, c := range env.Clusters {
			conn, err := c.Conn(ctx, db)
			if err != nil {
				t.Fatal(err)
			}
			var customers, countries int
			if err := conn.QueryRow(ctx, "SELECT (SELECT count(*) FROM customers), (SELECT count(*) FROM countries)").Scan(&customers, &countries); err != nil {
				t.Fatal(err)
			}
			conn.Close(ctx)
			if customers == 0 || countries == 0 {
				t.Fatalf("round %d: %s holds %d customers, %d countries", round, c.Name, customers, countries)
			}
			total += customers
		}
		if total != 40 {
			t.Fatalf("round %d: %d customers over the clusters, want 40", round, total)
		}
	}
	if _, _, err := run("demo", "load"); err == nil {
		t.Fatal("demo load without --topology accepted")
	}
}
