package proxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/shardgate/shardgate/auth"
	"github.com/shardgate/shardgate/internal/proxytest"
)

// identityDB is the database of the per-role tests, apart from shop: its
// tables are owned by sg_app.
const identityDB = "ident"

// identityRoles are the roles of the per-role tests and their passwords:
// sg_ro may only read orders, sg_app owns the tables, sg_su is a
// superuser, sg_salt has a verifier of another salt on each cluster.
var identityRoles = map[string]string{"sg_ro": "ro pw", "sg_app": "app pw", "sg_su": "su pw", "sg_salt": "salt pw"}

// identityFixture makes database ident on every cluster: the roles, with
// the same SCRAM verifier on every cluster (set on pg0, copied to the
// others) except sg_salt's; pg_hba asking them for scram-sha-256; the
// tables, owned by sg_app, with orders readable by sg_ro and sg_salt. It
// returns each role's verifier on pg0.
func identityFixture(t testing.TB) map[string]string {
	t.Helper()
	ctx := context.Background()
	verifiers := map[string]string{}
	for i, c := range env.Clusters {
		if err := c.Exec(ctx, "", "DROP DATABASE IF EXISTS "+identityDB+" WITH (FORCE)"); err != nil {
			t.Fatal(err)
		}
		if err := c.Exec(ctx, "", "CREATE DATABASE "+identityDB); err != nil {
			t.Fatal(err)
		}
		for role, pw := range identityRoles {
			attrs := "LOGIN"
			if role == "sg_su" {
				attrs = "LOGIN SUPERUSER"
			}
			secret := pw
			if v, ok := verifiers[role]; ok && i > 0 && role != "sg_salt" {
				secret = v
			}
			sql := fmt.Sprintf(`SET password_encryption = 'scram-sha-256';
DO $$BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '%[1]s') THEN CREATE ROLE %[1]s; END IF; END$$;
ALTER ROLE %[1]s %[2]s PASSWORD '%[3]s'`, role, attrs, secret)
			if err := c.Exec(ctx, "", sql); err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				conn, err := c.Conn(ctx, "")
				if err != nil {
					t.Fatal(err)
				}
				var v string
				err = conn.QueryRow(ctx, "SELECT rolpassword FROM pg_authid WHERE rolname = $1", role).Scan(&v)
				conn.Close(ctx)
				if err != nil {
					t.Fatal(err)
				}
				verifiers[role] = v
			}
		}
		if err := c.RequirePassword(ctx, "sg_ro", "sg_app", "sg_su", "sg_salt"); err != nil {
			t.Fatal(err)
		}
		if err := c.Exec(ctx, identityDB, `GRANT CREATE ON SCHEMA public TO sg_app;
SET ROLE sg_app;
CREATE TABLE customers (id bigint PRIMARY KEY, name text);
CREATE TABLE orders (id bigint PRIMARY KEY, customer_id bigint NOT NULL, total numeric);
CREATE TABLE secrets (id bigint PRIMARY KEY, secret text);
CREATE SEQUENCE orders_id_seq START 1000;
RESET ROLE;
GRANT SELECT ON orders TO sg_ro, sg_salt`); err != nil {
			t.Fatal(err)
		}
	}
	return verifiers
}

// identityTopology routes customers and orders by customer over pg0 and
// pg1; secrets live in main (pg0).
func identityTopology() string {
	return proxytest.Topology(identityDB, `groups:
  main:
    unsharded: true
    cluster: pg0
    tables: [secrets]
    sequences: [orders_id_seq]
  by_customer:
    index: { name: by_customer, column: customer_id, type: bigint, function: xxhash }
    shards: { "-80": pg0, "80-": pg1 }
    tables:
      customers: { column: id }
      orders: { sequence: { column: id, name: orders_id_seq } }
`, env.Clusters...)
}

// startIdentityProxy serves ident with scram-sha-256: sg_ro and sg_salt
// listed with their verifiers (SCRAM pass-through), sg_app with its
// plain-text password, sg_su not listed (looked up in main's pg_authid).
func startIdentityProxy(t testing.TB, verifiers map[string]string, mods ...func(*Config)) *testProxy {
	return startProxy(t, identityTopology(), func(c *Config) {
		c.AuthMethod = auth.SCRAM
		c.AuthQuery = true
		c.Users = []auth.User{{Name: "sg_ro", Password: verifiers["sg_ro"]}, {Name: "sg_app", Password: identityRoles["sg_app"]},
			{Name: "sg_salt", Password: verifiers["sg_salt"]}, {Name: "sg_admin", Password: "adm", Admin: true}}
		for _, m := range mods {
			m(c)
		}
	})
}

// connectAs connects as role with its password to addr (the proxy, or a
// cluster itself).
func connectAs(t testing.TB, addr, role string) *pgx.Conn {
	t.Helper()
	dsn := fmt.Sprintf("postgres://%s:%s@%s/%s?sslmode=disable", role, url.PathEscape(identityRoles[role]), addr, identityDB)
	return proxytest.Connect(t, dsn)
}

// outcome runs sql and says what came of it: its SQLSTATE, or "ok" and
// the first column of the first row.
func outcome(c *pgx.Conn, mode pgx.QueryExecMode, sql string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rows, err := c.Query(ctx, sql, mode)
	if err != nil {
		return sqlstateOr(err)
	}
	first := ""
	if rows.Next() {
		if vs, err := rows.Values(); err == nil && len(vs) > 0 {
			first = fmt.Sprint(vs[0])
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return sqlstateOr(err)
	}
	return "ok " + first
}

func sqlstateOr(err error) string {
	if s := sqlstate(err); s != "" {
		return s
	}
	return err.Error()
}

var modes = map[string]pgx.QueryExecMode{"simple": pgx.QueryExecModeSimpleProtocol, "extended": pgx.QueryExecModeCacheStatement}

// TestClientRolesOnEveryShard is issue 20's table: through the proxy, sg_ro
// (SELECT on orders only), sg_app (owner of the tables) and sg_su (a
// superuser) each get what the same statement gets on plain Postgres, in
// both protocols, on every shard: current_user and session_user are
// theirs, a scatter read, a write on both shards (two-phase commit), COPY,
// a cursor and a read over intermediate results, and 42501 where Postgres
// refuses. sg_ro and sg_salt log in by SCRAM pass-through, sg_app with its
// password, sg_su looked up on main; a verifier of another salt on pg1 is
// refused with 28000 naming pg1. Before, every client ran as the DSN's
// superuser: sg_ro's INSERT, DROP TABLE and pg_authid read succeeded.
func TestClientRolesOnEveryShard(t *testing.T) {
	verifiers := identityFixture(t)
	p := startIdentityProxy(t, verifiers)
	ctx := context.Background()
	app := connectAs(t, p.addr, "sg_app")
	// Customers 1..8 spread over both shards.
	mustExec(t, app, "INSERT INTO orders (id, customer_id, total) VALUES (1, 1, 10), (2, 2, 20), (3, 3, 30), (4, 4, 40), (5, 5, 50), (6, 6, 60), (7, 7, 70), (8, 8, 80)")
	mustExec(t, app, "INSERT INTO customers (id, name) VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd'), (5, 'e'), (6, 'f'), (7, 'g'), (8, 'h')")
	mustExec(t, app, "INSERT INTO secrets (id, secret) VALUES (1, 'hidden')")
	for _, c := range env.Clusters {
		var n int
		conn := proxytest.Connect(t, c.DSN(identityDB))
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM orders").Scan(&n); err != nil || n == 0 {
			t.Fatalf("%s holds %d orders (%v): the fixture must spread over both shards", c.Name, n, err)
		}
	}

	// Each statement, and what plain Postgres answers each role.
	type want map[string]string
	cases := []struct {
		sql  string
		want want // by role; "" in the table: the role is not asked
	}{
		{"SELECT current_user || '/' || session_user", want{"sg_ro": "ok sg_ro/sg_ro", "sg_app": "ok sg_app/sg_app", "sg_su": "ok sg_su/sg_su"}},
		{"SELECT count(*) FROM orders", want{"sg_ro": "ok 8", "sg_app": "ok 8", "sg_su": "ok 8"}},
		{"SELECT id FROM orders ORDER BY id DESC LIMIT 1", want{"sg_ro": "ok 8", "sg_app": "ok 8", "sg_su": "ok 8"}},
		{"SELECT count(*) FROM customers", want{"sg_ro": "42501", "sg_app": "ok 8", "sg_su": "ok 8"}},
		{"SELECT secret FROM secrets", want{"sg_ro": "42501", "sg_app": "ok hidden", "sg_su": "ok hidden"}},
		// Over intermediate results: a join not on the shard key pulls
		// customers into the coordinator, as the client.
		{"SELECT count(*) FROM orders o JOIN customers c ON c.name = 'a' AND c.id = o.id", want{"sg_ro": "42501", "sg_app": "ok 1", "sg_su": "ok 1"}},
		{"SELECT string_agg(o.id::text, ',' ORDER BY o.id) FROM orders o JOIN secrets s ON s.id = o.id", want{"sg_ro": "42501", "sg_app": "ok 1", "sg_su": "ok 1"}},
		{"SELECT string_agg(id::text, ',' ORDER BY id) FROM orders", want{"sg_ro": "ok 1,2,3,4,5,6,7,8", "sg_app": "ok 1,2,3,4,5,6,7,8", "sg_su": "ok 1,2,3,4,5,6,7,8"}},
		{"INSERT INTO orders (id, customer_id, total) VALUES (100, 1, 1), (101, 2, 1), (102, 3, 1), (103, 4, 1)", want{"sg_ro": "42501"}},
		{"UPDATE orders SET total = total WHERE id > 0", want{"sg_ro": "42501", "sg_app": "ok ", "sg_su": "ok "}},
		{"DROP TABLE orders", want{"sg_ro": "42501"}},
		{"SELECT count(*) FROM pg_authid", want{"sg_ro": "42501", "sg_app": "42501"}},
		{"COPY (SELECT 1) TO PROGRAM 'id > /dev/null'", want{"sg_ro": "42501", "sg_app": "42501"}},
	}
	for mode, m := range modes {
		for _, role := range []string{"sg_ro", "sg_app", "sg_su"} {
			via := connectAs(t, p.addr, role)
			for _, c := range cases {
				w, ok := c.want[role]
				if !ok {
					continue
				}
				if got := outcome(via, m, c.sql); got != w {
					t.Errorf("%s, %s: %s\n  through the proxy: %s\n  want (plain Postgres): %s", mode, role, c.sql, got, w)
				}
			}
		}
	}
	// Plain Postgres, on each shard, answers sg_ro as the table says.
	for _, cl := range env.Clusters {
		direct := connectAs(t, fmt.Sprintf("127.0.0.1:%d", cl.Port), "sg_ro")
		for _, sql := range []string{"SELECT count(*) FROM customers", "INSERT INTO orders VALUES (100, 1, 1)", "DROP TABLE orders", "SELECT count(*) FROM pg_authid"} {
			if got := outcome(direct, pgx.QueryExecModeSimpleProtocol, sql); got != "42501" {
				t.Errorf("plain Postgres on %s, sg_ro: %s: %s, want 42501", cl.Name, sql, got)
			}
		}
	}

	// A write on both shards in a transaction commits in two phases, as
	// sg_app; sg_ro's is refused on the first shard it reaches.
	for mode, m := range modes {
		base := map[string]int{"simple": 200, "extended": 300}[mode]
		tx, err := app.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 8; i++ {
			if _, err := tx.Exec(ctx, "INSERT INTO orders (id, customer_id, total) VALUES ($1, $2, 1)", m, base+i, i+1); err != nil {
				t.Fatalf("%s: insert: %v", mode, err)
			}
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatalf("%s: two-phase commit as sg_app: %v", mode, err)
		}
		ro := connectAs(t, p.addr, "sg_ro")
		rtx, _ := ro.Begin(ctx)
		_, err = rtx.Exec(ctx, "INSERT INTO orders (id, customer_id, total) VALUES ($1, 1, 1)", m, base+50)
		if sqlstate(err) != "42501" {
			t.Fatalf("%s: sg_ro's insert in a transaction: %v", mode, err)
		}
		_ = rtx.Rollback(ctx)
	}
	for _, cl := range env.Clusters {
		conn := proxytest.Connect(t, cl.DSN(identityDB))
		var owners string
		if err := conn.QueryRow(ctx, "SELECT count(*)::text FROM pg_prepared_xacts").Scan(&owners); err != nil || owners != "0" {
			t.Fatalf("%s: prepared transactions left: %s (%v)", cl.Name, owners, err)
		}
	}

	// COPY FROM STDIN across both shards: sg_app's lands, sg_ro's is 42501.
	var rows [][]any
	for i := int64(0); i < 8; i++ {
		rows = append(rows, []any{400 + i, i + 1, 1})
	}
	if n, err := app.CopyFrom(ctx, pgx.Identifier{"orders"}, []string{"id", "customer_id", "total"}, pgx.CopyFromRows(rows)); err != nil || n != 8 {
		t.Fatalf("COPY as sg_app: %d, %v", n, err)
	}
	// The two-phase writes and the COPY reached both shards.
	for _, cl := range env.Clusters {
		conn := proxytest.Connect(t, cl.DSN(identityDB))
		for _, r := range [][2]int{{200, 207}, {300, 307}, {400, 407}} {
			var n int
			if err := conn.QueryRow(ctx, "SELECT count(*) FROM orders WHERE id BETWEEN $1 AND $2", r[0], r[1]).Scan(&n); err != nil || n == 0 {
				t.Fatalf("%s holds %d of orders %d..%d (%v): the write did not span both shards", cl.Name, n, r[0], r[1], err)
			}
		}
	}
	ro := connectAs(t, p.addr, "sg_ro")
	if _, err := ro.CopyFrom(ctx, pgx.Identifier{"orders"}, []string{"id", "customer_id", "total"}, pgx.CopyFromRows([][]any{{int64(500), int64(1), 1}})); sqlstate(err) != "42501" {
		t.Fatalf("COPY as sg_ro: want 42501, got %v", err)
	}
	if _, err := ro.Exec(ctx, "COPY orders TO STDOUT", pgx.QueryExecModeSimpleProtocol); err != nil {
		t.Fatalf("COPY TO as sg_ro (granted): %v", err)
	}
	if _, err := ro.Exec(ctx, "COPY customers TO STDOUT", pgx.QueryExecModeSimpleProtocol); sqlstate(err) != "42501" {
		t.Fatalf("COPY customers TO as sg_ro: want 42501, got %v", err)
	}

	// Cursors: sg_ro may declare one over orders (merged from both shards),
	// not over customers.
	for mode, m := range modes {
		tx, err := ro.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, "DECLARE c CURSOR FOR SELECT id FROM orders ORDER BY id", m); err != nil {
			t.Fatalf("%s: DECLARE over orders as sg_ro: %v", mode, err)
		}
		var first int64
		// A merged cursor is fetched with a simple query (cursors.md).
		if err := tx.QueryRow(ctx, "FETCH 1 FROM c", pgx.QueryExecModeSimpleProtocol).Scan(&first); err != nil || first != 1 {
			t.Fatalf("%s: FETCH: %d, %v", mode, first, err)
		}
		if _, err := tx.Exec(ctx, "DECLARE d CURSOR FOR SELECT id FROM customers", m); sqlstate(err) != "42501" {
			t.Fatalf("%s: DECLARE over customers as sg_ro: want 42501, got %v", mode, err)
		}
		_ = tx.Rollback(ctx)
	}

	// A role whose verifier on pg1 has another salt: pg0 alone works, a
	// read that needs pg1 is refused, naming pg1, with 28000.
	salt := connectAs(t, p.addr, "sg_salt")
	if got := outcome(salt, pgx.QueryExecModeSimpleProtocol, "SELECT current_user"); got != "ok sg_salt" {
		t.Fatalf("sg_salt on main: %s", got)
	}
	_, err := salt.Exec(ctx, "SELECT count(*) FROM orders", pgx.QueryExecModeSimpleProtocol)
	if sqlstate(err) != "28000" || !strings.Contains(err.Error(), "pg1") || !strings.Contains(err.Error(), "differs") {
		t.Fatalf("sg_salt on pg1: want 28000 naming pg1, got %v", err)
	}

	// Sequence values come from the proxy's blocks: only a role that may
	// use the sequence gets them, as from nextval itself.
	for mode, m := range modes {
		for role, want := range map[string]string{"sg_ro": "42501", "sg_app": "ok 10", "sg_su": "ok 10"} {
			c := connectAs(t, p.addr, role)
			if got := outcome(c, m, "SELECT nextval('orders_id_seq')"); !strings.HasPrefix(got, want) {
				t.Errorf("%s, %s: nextval: %s, want %s...", mode, role, got, want)
			}
		}
	}
	if got := outcome(ro, pgx.QueryExecModeSimpleProtocol, "INSERT INTO orders (customer_id, total) VALUES (1, 1), (2, 1)"); got != "42501" {
		t.Errorf("sg_ro's INSERT drawing ids: %s", got)
	}

	// SHOW POOLS has a row per role and cluster. The console's admin is a
	// proxy user only: no role of that name exists on the clusters, and
	// the console never logs in to them as it.
	con := proxytest.Connect(t, fmt.Sprintf("postgres://sg_admin:adm@%s/shardgate?sslmode=disable", p.addr))
	_, pools := showRows(t, con, "SHOW POOLS")
	seen := map[string]bool{}
	for _, r := range pools {
		seen[r[0]+"/"+r[9]] = true
	}
	for _, k := range []string{"pg0/sg_ro", "pg1/sg_ro", "pg0/sg_app", "pg1/sg_app", "pg0/sg_su", "pg1/sg_su"} {
		if !seen[k] {
			t.Errorf("SHOW POOLS has no row %s: %v", k, pools)
		}
	}
	if seen["pg0/sg_admin"] || seen["pg1/sg_admin"] {
		t.Errorf("the console logged in to a cluster as its admin: %v", pools)
	}
	// SHOW SERVERS names each connection's role, the one the cluster's
	// pg_stat_activity gives its backend.
	cols, servers := showRows(t, con, "SHOW SERVERS")
	if len(cols) != 8 || cols[5] != "user" {
		t.Fatalf("SHOW SERVERS columns %v", cols)
	}
	users := map[string]bool{}
	for _, r := range servers {
		var name string
		for i, cl := range env.Clusters[:2] {
			if r[0] != fmt.Sprintf("pg%d", i) {
				continue
			}
			d := connect(t, cl.DSN(identityDB))
			if err := d.QueryRow(context.Background(), "SELECT usename FROM pg_stat_activity WHERE pid = $1", r[1]).Scan(&name); err != nil {
				t.Fatalf("%v: %v", r, err)
			}
		}
		if name != r[5] {
			t.Errorf("SHOW SERVERS %v: pg_stat_activity says %q", r, name)
		}
		users[r[0]+"/"+r[5]] = true
	}
	for _, k := range []string{"pg0/sg_ro", "pg1/sg_ro", "pg0/sg_app", "pg1/sg_app"} {
		if !users[k] {
			t.Errorf("SHOW SERVERS has no connection %s: %v", k, servers)
		}
	}
}

// TestRowLevelSecurityThroughProxy: a policy on orders
// (customer_id = current_setting('app.customer')::bigint) holds through the
// proxy on every shard and in both protocols: sg_ro sees exactly the rows
// of its customer, as on plain Postgres; the owner (not forced) sees all.
// Before, every client ran as the superuser, which bypasses row security.
func TestRowLevelSecurityThroughProxy(t *testing.T) {
	verifiers := identityFixture(t)
	for _, c := range env.Clusters {
		if err := c.Exec(context.Background(), identityDB, `ALTER TABLE orders ENABLE ROW LEVEL SECURITY;
CREATE POLICY by_customer ON orders FOR SELECT USING (customer_id = current_setting('app.customer')::bigint)`); err != nil {
			t.Fatal(err)
		}
	}
	p := startIdentityProxy(t, verifiers)
	app := connectAs(t, p.addr, "sg_app")
	var values []string
	for i := 1; i <= 16; i++ {
		values = append(values, fmt.Sprintf("(%d, %d, %d)", i, i%4, i))
	}
	mustExec(t, app, "INSERT INTO orders (id, customer_id, total) VALUES "+strings.Join(values, ", "))
	// Before any session set app.customer (a backend that had it set keeps
	// an empty placeholder after RESET ALL, pooled or not).
	if got := outcome(connectAs(t, p.addr, "sg_ro"), pgx.QueryExecModeSimpleProtocol, "SELECT count(*) FROM orders"); got != "42704" {
		t.Errorf("without app.customer: %s, want 42704 (as plain Postgres)", got)
	}
	for mode, m := range modes {
		ro := connectAs(t, p.addr, "sg_ro")
		mustExec(t, ro, "SET app.customer = '3'")
		if got := outcome(ro, m, "SELECT string_agg(id::text, ',' ORDER BY id) FROM orders"); got != "ok 3,7,11,15" {
			t.Errorf("%s: sg_ro with app.customer 3: %s", mode, got)
		}
		if got := outcome(ro, m, "SELECT count(*) FROM orders WHERE customer_id = 1"); got != "ok 0" {
			t.Errorf("%s: sg_ro asking for customer 1: %s", mode, got)
		}
		if got := outcome(app, m, "SELECT count(*) FROM orders"); got != "ok 16" {
			t.Errorf("%s: the owner: %s", mode, got)
		}
	}
	// Plain Postgres, shard by shard, agrees.
	total := 0
	for _, cl := range env.Clusters {
		direct := connectAs(t, fmt.Sprintf("127.0.0.1:%d", cl.Port), "sg_ro")
		mustExec(t, direct, "SET app.customer = '3'")
		var n int
		if err := direct.QueryRow(context.Background(), "SELECT count(*) FROM orders").Scan(&n); err != nil {
			t.Fatal(err)
		}
		total += n
	}
	if total != 4 {
		t.Fatalf("plain Postgres: %d rows of customer 3, want 4", total)
	}
}

// TestSetRoleAsClient: under per-role sessions SET ROLE and SET SESSION
// AUTHORIZATION are the client role's to make, checked by Postgres on every
// shard, tracked and replayed like any setting, and undone on connections
// lent to the next session: a superuser that became sg_ro reads nothing
// sg_ro may not, back as itself after RESET ROLE; sg_ro may not become
// sg_app (42501, as on plain Postgres); a connection sg_su used while
// authorized as sg_ro serves sg_su's next session as sg_su.
func TestSetRoleAsClient(t *testing.T) {
	verifiers := identityFixture(t)
	p := startIdentityProxy(t, verifiers)
	su := connectAs(t, p.addr, "sg_su")
	for mode, m := range modes {
		mustExec(t, su, "SET ROLE sg_ro")
		if got := outcome(su, m, "SELECT count(*) FROM customers"); got != "42501" {
			t.Errorf("%s: sg_su as sg_ro reading customers: %s", mode, got)
		}
		if got := outcome(su, m, "SELECT count(*) FROM orders"); got != "ok 0" {
			t.Errorf("%s: sg_su as sg_ro reading orders: %s", mode, got)
		}
		mustExec(t, su, "RESET ROLE")
		if got := outcome(su, m, "SELECT count(*) FROM customers"); got != "ok 0" {
			t.Errorf("%s: sg_su after RESET ROLE: %s", mode, got)
		}
	}
	ro := connectAs(t, p.addr, "sg_ro")
	if _, err := ro.Exec(context.Background(), "SET ROLE sg_app"); sqlstate(err) != "42501" {
		t.Errorf("sg_ro SET ROLE sg_app: want 42501, got %v", err)
	}
	mustExec(t, su, "SET SESSION AUTHORIZATION sg_ro")
	if got := outcome(su, pgx.QueryExecModeSimpleProtocol, "SELECT session_user || '/' || current_user FROM orders UNION ALL SELECT session_user || '/' || current_user LIMIT 1"); got != "ok sg_ro/sg_ro" {
		t.Errorf("after SET SESSION AUTHORIZATION: %s", got)
	}
	su.Close(context.Background())
	next := connectAs(t, p.addr, "sg_su")
	if got := outcome(next, pgx.QueryExecModeSimpleProtocol, "SELECT count(*) FROM customers"); got != "ok 0" {
		t.Errorf("sg_su's next session: %s, want its own rights", got)
	}
	if got := outcome(next, pgx.QueryExecModeSimpleProtocol, "SELECT session_user || '/' || current_user"); got != "ok sg_su/sg_su" {
		t.Errorf("sg_su's next session: %s", got)
	}
}

// TestServerPasswordWhereSaltsDiffer: a role whose verifier has another
// salt on pg1, which SCRAM pass-through refuses there, logs in to every
// cluster with its server_password, as itself. Before, server_password did
// not exist (and every client ran as the DSN's user).
func TestServerPasswordWhereSaltsDiffer(t *testing.T) {
	verifiers := identityFixture(t)
	p := startIdentityProxy(t, verifiers, func(c *Config) {
		for i := range c.Users {
			if c.Users[i].Name == "sg_salt" {
				c.Users[i].ServerPassword = identityRoles["sg_salt"]
			}
		}
	})
	salt := connectAs(t, p.addr, "sg_salt")
	for mode, m := range modes {
		if got := outcome(salt, m, "SELECT count(*) FROM orders"); got != "ok 0" {
			t.Errorf("%s: sg_salt's scatter read: %s", mode, got)
		}
		if got := outcome(salt, m, "SELECT count(*) FROM customers"); got != "42501" {
			t.Errorf("%s: sg_salt reading customers: %s, want 42501", mode, got)
		}
	}
}

// TestIdentityWarnings: the set-ups where clients do not run as their own
// roles (identity service, the default under trust), or where the proxy
// logs in as them without a secret (trust with identity client), are
// logged loudly at start; md5 and scram-sha-256 default to identity client
// without a warning. Before, there was no identity to warn about.
func TestIdentityWarnings(t *testing.T) {
	for _, c := range []struct {
		method auth.Method
		id     Identity
		want   string
	}{
		{auth.Trust, "", "EVERY CLIENT RUNS AS THE CLUSTER DSNs' USER"},
		{auth.SCRAM, IdentityService, "EVERY CLIENT RUNS AS THE CLUSTER DSNs' USER"},
		{auth.Trust, IdentityClient, "for local demos only"},
		{auth.SCRAM, "", ""},
	} {
		var log strings.Builder
		cfg := Config{AuthMethod: c.method, Identity: c.id, Logger: slog.New(slog.NewTextHandler(&log, nil))}
		if c.method != auth.Trust {
			cfg.Users = []auth.User{{Name: "app", Password: "x"}}
		}
		srv, err := NewServer(cfg, proxytest.Parse(t, shopTopology("")))
		if err != nil {
			t.Fatal(err)
		}
		got := log.String()
		srv.Close()
		if c.want != "" && !strings.Contains(got, c.want) || c.want == "" && strings.Contains(got, "level=WARN") {
			t.Errorf("%s/%q: log %q, want %q", c.method, c.id, got, c.want)
		}
		if wantID := identityOf(c.id, c.method); srv.live.Load().identity != wantID {
			t.Errorf("%s/%q: identity %s, want %s", c.method, c.id, srv.live.Load().identity, wantID)
		}
	}
}

// refusal is an error's SQLSTATE and message, or "ok".
func refusal(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code + " " + pe.Message
	}
	if err != nil {
		return err.Error()
	}
	return "ok"
}

// TestSequencePrivilegeOrder: an INSERT whose id comes from main's
// sequence is refused as Postgres refuses it: naming the table when the
// role may not insert into it (Postgres checks the table before it runs
// the column default's nextval), naming the sequence when it may insert
// but not draw, for the login role and for the role SET ROLE made current
// (and the login's again after RESET ROLE), in both protocols, for INSERT
// ... VALUES and COPY. Plain Postgres is asked the same on pg0, with a
// table whose id defaults to nextval of the same sequence. Before, sg_ro's
// INSERT was refused naming public.orders_id_seq, and sg_su's after SET
// ROLE sg_ro drew values as sg_su and inserted.
func TestSequencePrivilegeOrder(t *testing.T) {
	verifiers := identityFixture(t)
	ctx := context.Background()
	if err := env.Clusters[0].Exec(ctx, identityDB, `SET ROLE sg_app;
CREATE TABLE plain_orders (id bigint PRIMARY KEY DEFAULT nextval('orders_id_seq'), customer_id bigint NOT NULL, total numeric)`); err != nil {
		t.Fatal(err)
	}
	p := startIdentityProxy(t, verifiers)
	plain := connectAs(t, fmt.Sprintf("127.0.0.1:%d", env.Clusters[0].Port), "sg_ro")
	ro := connectAs(t, p.addr, "sg_ro")
	su := connectAs(t, p.addr, "sg_su")
	// want is what plain Postgres answers sg_ro, with orders for plain_orders.
	want := func(sql string) string {
		t.Helper()
		_, err := plain.Exec(ctx, strings.ReplaceAll(sql, "orders", "plain_orders"), pgx.QueryExecModeSimpleProtocol)
		return strings.ReplaceAll(refusal(err), "plain_orders", "orders")
	}
	copyIn := func(c *pgx.Conn, table string) error {
		_, err := c.CopyFrom(ctx, pgx.Identifier{table}, []string{"customer_id", "total"}, pgx.CopyFromRows([][]any{{int64(5), 1}}))
		return err
	}
	check := func(stage string, wantOK bool) {
		t.Helper()
		for _, sql := range []string{"INSERT INTO orders (customer_id, total) VALUES (1, 2)", "INSERT INTO orders (customer_id, total) VALUES (1, 2), (2, 3)"} {
			w := want(sql)
			if wantOK != (w == "ok") {
				t.Fatalf("%s: plain Postgres answers %s", stage, w)
			}
			for name, mode := range modes {
				_, err := ro.Exec(ctx, sql, mode)
				if got := refusal(err); got != w {
					t.Errorf("%s, %s, sg_ro: %s\n  through the proxy: %s\n  want (plain Postgres): %s", stage, name, sql, got, w)
				}
				mustExec(t, su, "SET ROLE sg_ro")
				_, err = su.Exec(ctx, sql, mode)
				if got := refusal(err); got != w {
					t.Errorf("%s, %s, sg_su as sg_ro: %s\n  through the proxy: %s\n  want (plain Postgres): %s", stage, name, sql, got, w)
				}
				mustExec(t, su, "RESET ROLE")
				if _, err := su.Exec(ctx, sql, mode); err != nil {
					t.Errorf("%s, %s, sg_su after RESET ROLE: %v", stage, name, err)
				}
			}
		}
		w := strings.ReplaceAll(refusal(copyIn(plain, "plain_orders")), "plain_orders", "orders")
		if got := refusal(copyIn(ro, "orders")); got != w {
			t.Errorf("%s, COPY, sg_ro: through the proxy: %s, want (plain Postgres): %s", stage, got, w)
		}
	}
	check("no grant", false)
	for _, cl := range env.Clusters {
		if err := cl.Exec(ctx, identityDB, "GRANT INSERT ON orders TO sg_ro"); err != nil {
			t.Fatal(err)
		}
	}
	if err := env.Clusters[0].Exec(ctx, identityDB, "GRANT INSERT ON plain_orders TO sg_ro"); err != nil {
		t.Fatal(err)
	}
	check("INSERT granted", false)
	if err := env.Clusters[0].Exec(ctx, identityDB, "GRANT USAGE ON SEQUENCE orders_id_seq TO sg_ro"); err != nil {
		t.Fatal(err)
	}
	check("INSERT and USAGE granted", true)
}
