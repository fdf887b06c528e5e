package proxy

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/shardgate/shardgate/internal/proxytest"
)

// gxTopology: gx_users sharded by customer_id, with a unique index on the
// expression lower(email).
func gxTopology() string {
	return proxytest.Topology("shop", `groups:
  main: { unsharded: true, cluster: pg0 }
  by_customer:
    index: { name: by_customer, column: customer_id, type: bigint, function: xxhash }
    shards: { "-80": pg0, "80-": pg1 }
    tables: { gx_users: {} }
    secondary_indexes:
      gx_users_by_email: { table: gx_users, expression: "lower(email)", type: text, unique: true, state: active }
`, env.Clusters...)
}

// gxExact fails unless gx_users_by_email holds exactly the (lower(email),
// customer_id) pairs of gx_users; it returns the number of entries.
func gxExact(t *testing.T) int {
	t.Helper()
	ctx := context.Background()
	owner, lookup := map[string]int{}, map[string]int{}
	for _, cl := range env.Clusters {
		d := connect(t, cl.DSN("shop"))
		for q, m := range map[string]map[string]int{
			"SELECT lower(email) || '|' || customer_id FROM gx_users WHERE email IS NOT NULL": owner,
			"SELECT value || '|' || customer_id FROM gx_users_by_email":                       lookup,
		} {
			rows, err := d.Query(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			pairs, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range pairs {
				m[p]++
			}
		}
	}
	if fmt.Sprint(owner) != fmt.Sprint(lookup) {
		t.Errorf("lookup %v, owner projection %v", lookup, owner)
	}
	return len(lookup)
}

// TestGSIExpression: a unique index on lower(email) is maintained by
// INSERT, UPDATE of email and DELETE (the values computed by Postgres in
// the statement), answers WHERE lower(email) = v through a Lookup in both
// protocols, rejects a duplicate on another shard with the 23505 a
// Postgres unique index on lower(email) gives (same message, detail,
// constraint), refuses COPY, and backfill and verify handle it.
func TestGSIExpression(t *testing.T) {
	p := startProxy(t, gxTopology(), nil)
	c := connect(t, p.dsn())
	ctx := context.Background()
	for _, s := range []string{
		"DROP TABLE IF EXISTS gx_users",
		"CREATE TABLE gx_users (customer_id bigint NOT NULL, id bigint NOT NULL, email text, name text, PRIMARY KEY (customer_id, id))",
	} {
		mustExec(t, c, s, simple)
	}
	// The oracle: one Postgres with the unique index of the same name.
	o := connect(t, env.Clusters[0].DSN("shop"))
	for _, s := range []string{
		"DROP SCHEMA IF EXISTS gx_oracle CASCADE", "CREATE SCHEMA gx_oracle",
		"CREATE TABLE gx_oracle.gx_users (customer_id bigint NOT NULL, id bigint NOT NULL, email text, name text, PRIMARY KEY (customer_id, id))",
		"CREATE UNIQUE INDEX gx_users_by_email ON gx_oracle.gx_users (lower(email))",
	} {
		mustExec(t, o, s)
	}
	t.Cleanup(func() { _, _ = o.Exec(context.Background(), "DROP SCHEMA IF EXISTS gx_oracle CASCADE") })
	other := keyOn(t, p, 1, false)
	both := func(sql string) (proxyErr, oracleErr error) {
		_, proxyErr = c.Exec(ctx, sql, simple)
		_, oracleErr = o.Exec(ctx, strings.Replace(sql, "gx_users", "gx_oracle.gx_users", 1))
		return
	}
	for _, sql := range []string{
		"INSERT INTO gx_users (customer_id, id, email, name) VALUES (1, 1, 'Ann@X.com', 'ann'), (1, 2, NULL, 'nobody')",
		fmt.Sprintf("INSERT INTO gx_users (customer_id, id, email, name) VALUES (%d, 3, 'Cy@X.com', 'cy')", other),
	} {
		if pe, oe := both(sql); pe != nil || oe != nil {
			t.Fatalf("%s: %v / oracle %v", sql, pe, oe)
		}
	}
	for _, sql := range []string{
		fmt.Sprintf("INSERT INTO gx_users (customer_id, id, email, name) VALUES (%d, 4, 'ann@x.COM', 'again')", other),
		"UPDATE gx_users SET email = 'CY@x.com' WHERE customer_id = 1 AND id = 1",
	} {
		pErr, oErr := both(sql)
		sameError(t, sql, pErr, oErr)
	}
	if n := gxExact(t); n != 2 {
		t.Errorf("%d entries, want 2", n)
	}
	// Reads through the index, both protocols.
	var plan []string
	rows, err := c.Query(ctx, "EXPLAIN (ROUTE) SELECT name FROM gx_users WHERE lower(email) = 'ann@x.com'", simple)
	if err == nil {
		plan, err = pgx.CollectRows(rows, pgx.RowTo[string])
	}
	if err != nil || len(plan) == 0 || !strings.HasPrefix(plan[0], "Lookup gx_users_by_email(lower(email)) IN ('ann@x.com')") {
		t.Fatalf("EXPLAIN: %v %q", err, plan)
	}
	var name string
	if err := c.QueryRow(ctx, "SELECT name FROM gx_users WHERE lower(email) = 'ann@x.com'", simple).Scan(&name); err != nil || name != "ann" {
		t.Fatalf("simple: %q %v", name, err)
	}
	if err := c.QueryRow(ctx, "SELECT name FROM gx_users u WHERE lower(u.email) = $1", "cy@x.com").Scan(&name); err != nil || name != "cy" {
		t.Fatalf("extended: %q %v", name, err)
	}
	// The value moves with email; a name change keeps it.
	mustExec(t, c, "UPDATE gx_users SET email = 'Bob@X.com' WHERE customer_id = 1 AND id = 1", simple)
	mustExec(t, c, "UPDATE gx_users SET name = 'bob' WHERE lower(email) = 'bob@x.com'", simple)
	mustExec(t, c, fmt.Sprintf("INSERT INTO gx_users (customer_id, id, email, name) VALUES (%d, 4, 'ann@x.COM', 'again')", other), simple)
	mustExec(t, c, "DELETE FROM gx_users WHERE lower(email) = 'cy@x.com'", simple)
	if n := gxExact(t); n != 2 {
		t.Errorf("%d entries, want 2 (bob, ann)", n)
	}
	_, err = c.Exec(ctx, "COPY gx_users FROM STDIN", simple)
	wantPgError(t, err, "0A000", "gx_users_by_email on lower(email)")

	// Verify repairs a lost entry; a backfill after the lookup table was
	// emptied writes them all again.
	topo := proxytest.Parse(t, gxTopology())
	for _, cl := range env.Clusters {
		mustExec(t, connect(t, cl.DSN("shop")), "DELETE FROM gx_users_by_email WHERE value = 'bob@x.com'")
	}
	missing := verifyRepair(t, topo, "gx_users_by_email", "bob@x.com")
	if n := gxExact(t); n != 2 || missing != 1 {
		t.Errorf("after verify --repair: %d entries, want 2; %d missing bob@x.com reported", n, missing)
	}
	backfillAgain(t, topo, "gx_users_by_email", 1)
	if n := gxExact(t); n != 2 {
		t.Errorf("after the backfill: %d entries, want 2", n)
	}
}
