package proxy

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/shardgate/shardgate/internal/proxytest"
	"github.com/shardgate/shardgate/twopc"
)

// gsiWriterProxy makes gs_orders and its lookup tables (as the DSN's
// user) and the role sg_writer, which may read and write gs_orders and use
// its sequence but has no right on the lookup tables, and serves shop to
// sessions running as their own roles (trust: the clusters trust
// sg_writer).
func gsiWriterProxy(t *testing.T, mods ...func(*Config)) *testProxy {
	t.Helper()
	setupGSI(t, startProxy(t, gsiTopology(), nil)).Close(context.Background())
	if err := createRoles(env, "sg_writer"); err != nil {
		t.Fatal(err)
	}
	for i, cl := range env.Clusters {
		seq := ""
		if i == 0 {
			seq = "GRANT USAGE ON SEQUENCE gs_orders_id_seq TO sg_writer;"
		}
		if err := cl.Exec(context.Background(), "shop", seq+`GRANT SELECT, INSERT, UPDATE, DELETE ON gs_orders TO sg_writer;
REVOKE ALL ON gs_orders_by_id, gs_orders_by_note FROM sg_writer, PUBLIC`); err != nil {
			t.Fatal(err)
		}
	}
	return startProxy(t, gsiTopology(), func(c *Config) {
		c.Identity = IdentityClient
		for _, m := range mods {
			m(c)
		}
	})
}

// TestGSIEntriesAsServiceIdentity: a role with rights on the owner table
// only inserts, updates the indexed column, deletes and reads through the
// indexes, in both protocols and in a transaction over both shards; the
// lookup tables stay the (value, key) projection of the owner rows, and a
// rolled-back transaction leaves no entry. Before, the entries were
// written on the role's own connections: 42501 on gs_orders_by_id.
func TestGSIEntriesAsServiceIdentity(t *testing.T) {
	p := gsiWriterProxy(t)
	c := connect(t, proxytest.DSN(p.addr, "sg_writer", "shop"))
	ctx := context.Background()
	var who string
	if err := c.QueryRow(ctx, "SELECT current_user").Scan(&who); err != nil || who != "sg_writer" {
		t.Fatalf("current_user %q, %v", who, err)
	}
	if _, err := c.Exec(ctx, "SELECT * FROM gs_orders_by_id"); sqlstate(err) != "42501" {
		t.Fatalf("sg_writer reading the lookup table itself: want 42501, got %v", err)
	}
	for name, mode := range modes {
		base := int64(100)
		if name == "extended" {
			base = 200
		}
		run := func(sql string, args ...any) {
			t.Helper()
			if _, err := c.Exec(ctx, sql, append([]any{mode}, args...)...); err != nil {
				t.Fatalf("%s %s: %v", name, sql, err)
			}
		}
		for i := int64(0); i < 6; i++ {
			run("INSERT INTO gs_orders (id, customer_id, note) VALUES ($1, $2, $3)", base+i, base+i, name)
		}
		run("UPDATE gs_orders SET note = 'moved' WHERE id = $1", base+1)
		run("DELETE FROM gs_orders WHERE id = $1", base+2)
		run("BEGIN")
		run("INSERT INTO gs_orders (id, customer_id, note) VALUES ($1, $2, 'tx'), ($3, $4, 'tx')", base+10, base+10, base+11, base+11)
		var n int
		if err := c.QueryRow(ctx, "SELECT count(*) FROM gs_orders WHERE note = 'tx' AND id >= $1 AND id < $2", mode, base, base+100).Scan(&n); err != nil || n != 2 {
			t.Fatalf("%s: read through the index in the transaction: %d rows, %v", name, n, err)
		}
		run("COMMIT")
		var note string
		if err := c.QueryRow(ctx, "SELECT note FROM gs_orders WHERE id = $1", mode, base+1).Scan(&note); err != nil || note != "moved" {
			t.Fatalf("%s: read through gs_orders_by_id: %q, %v", name, note, err)
		}
		if err := c.QueryRow(ctx, "SELECT count(*) FROM gs_orders WHERE note = $1", mode, name).Scan(&n); err != nil || n != 4 {
			t.Fatalf("%s: read through gs_orders_by_note: %d, %v", name, n, err)
		}
		run("BEGIN")
		run("INSERT INTO gs_orders (id, customer_id, note) VALUES ($1, $2, 'gone'), ($3, $4, 'gone')", base+20, base+20, base+21, base+21)
		run("SAVEPOINT s")
		run("DELETE FROM gs_orders WHERE id = $1", base+3)
		run("ROLLBACK TO SAVEPOINT s")
		run("ROLLBACK")
	}
	for _, sql := range []string{"UPDATE gs_orders SET customer_id = 7777 WHERE id = 104", // moves the row (shard key)
		"INSERT INTO gs_orders (id, customer_id, note) SELECT id + 1000, customer_id, 'sel' FROM gs_orders WHERE id = 105"} {
		if _, err := c.Exec(ctx, sql, pgx.QueryExecModeSimpleProtocol); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	if _, err := c.CopyFrom(ctx, pgx.Identifier{"gs_orders"}, []string{"id", "customer_id", "note"},
		pgx.CopyFromRows([][]any{{int64(300), int64(300), "copy"}, {int64(301), int64(301), "copy"}})); err != nil {
		t.Fatalf("COPY FROM: %v", err)
	}
	if n := checkLookups(t, p); n != 2*(6-1+2)+3 {
		t.Errorf("%d owner rows, want %d", n, 2*(6-1+2)+3)
	}
	// The owner's read stays the role's: one with no right on gs_orders is
	// refused there, after the lookup ran as the service identity.
	if err := createRoles(env, "sg_nobody"); err != nil {
		t.Fatal(err)
	}
	nobody := connect(t, proxytest.DSN(p.addr, "sg_nobody", "shop"))
	var pe *pgconn.PgError
	if _, err := nobody.Exec(ctx, "SELECT * FROM gs_orders WHERE id = 101", pgx.QueryExecModeSimpleProtocol); !errors.As(err, &pe) ||
		pe.Code != "42501" || pe.Message != "permission denied for table gs_orders" {
		t.Fatalf("sg_nobody reading through the index: want 42501 on gs_orders, got %v", err)
	}
	// TRUNCATE of the owner truncates its lookup tables, which needs no
	// grant on them either.
	if err := grantAll("GRANT TRUNCATE ON gs_orders TO sg_writer"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, "TRUNCATE gs_orders", pgx.QueryExecModeSimpleProtocol); err != nil {
		t.Fatalf("TRUNCATE: %v", err)
	}
	if n := checkLookups(t, p); n != 0 {
		t.Errorf("%d owner rows after TRUNCATE", n)
	}
}

// grantAll runs sql on shop on every cluster.
func grantAll(sql string) error {
	for _, cl := range env.Clusters {
		if err := cl.Exec(context.Background(), "shop", sql); err != nil {
			return err
		}
	}
	return nil
}

// TestGSIServiceTwoPhaseRecovery: the service identity's participant is
// in the two-phase commit: a proxy that dies after the decision leaves it
// prepared under a name of its own (gid#gsi@cluster), and recovery
// commits it with the others. Before, the entries were the role's (42501).
func TestGSIServiceTwoPhaseRecovery(t *testing.T) {
	// Only the Recover below resolves: no periodic pass, no pass when a
	// pool is reachable again, no background retry of COMMIT PREPARED
	// commits a part first (which made the count short under load:
	// "committed 2").
	p := gsiWriterProxy(t, func(c *Config) {
		c.RecoverEvery = -1
		c.twopcTune = func(tc *twopc.Config) { tc.RetryBackoff = time.Hour }
	})
	c := connect(t, proxytest.DSN(p.addr, "sg_writer", "shop"))
	ctx := context.Background()
	p.srv.twopc.coord.SetHooks(twopc.Hooks{AfterDecision: func(string) error { return errCrash }})
	_, err := c.Exec(ctx, "INSERT INTO gs_orders (id, customer_id, note) VALUES (1, 1, 'a'), (2, 2, 'b'), (3, 3, 'c')", pgx.QueryExecModeSimpleProtocol)
	if sqlstate(err) != "57P01" {
		t.Fatalf("failpoint: want 57P01, got %v", err)
	}
	gsiParts := 0
	for _, cl := range env.Clusters {
		gsiParts += count(t, cl.DSN("shop"), "SELECT count(*) FROM pg_prepared_xacts WHERE gid LIKE 'shardgate\\_%#gsi@%'")
	}
	if gsiParts == 0 {
		t.Fatal("no prepared transaction of the service identity's participant")
	}
	p.srv.twopc.coord.SetHooks(twopc.Hooks{})
	committed, rolledBack, err := p.srv.Recover(ctx)
	if err != nil || committed < gsiParts+1 || rolledBack != 0 {
		t.Fatalf("recovery: committed %d, rolled back %d, %v", committed, rolledBack, err)
	}
	if n := preparedCount(t); n != 0 {
		t.Fatalf("%d transactions still prepared", n)
	}
	if n := checkLookups(t, p); n != 3 {
		t.Errorf("%d owner rows, want 3", n)
	}
}

// TestGSIServicePoolOfOne: with one connection per cluster, the service
// connection beside the session's own would wait for itself: it is
// refused at once with 53300, not after max_wait.
func TestGSIServicePoolOfOne(t *testing.T) {
	p := gsiWriterProxy(t, func(c *Config) { c.PoolSize, c.MaxWait = 1, 30*time.Second })
	c := connect(t, proxytest.DSN(p.addr, "sg_writer", "shop"))
	start := time.Now()
	_, err := c.Exec(context.Background(), "INSERT INTO gs_orders (id, customer_id, note) VALUES (1, 1, 'a')", pgx.QueryExecModeSimpleProtocol)
	if sqlstate(err) != "53300" || !strings.Contains(err.Error(), "service identity") {
		t.Fatalf("want 53300 naming the service identity, got %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("refused after %s: it waited", d)
	}
}

// gsiProxyWithRole is gsiWriterProxy with one more role, given grants on
// every cluster.
func gsiProxyWithRole(t *testing.T, role, grants string) *testProxy {
	t.Helper()
	p := gsiWriterProxy(t)
	if err := createRoles(env, role); err != nil {
		t.Fatal(err)
	}
	if err := grantAll(grants); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestGSILookupRightsFollowSetRole: whether the session may read a lookup
// table itself is the current role's. sg_gsiboss may read the lookup
// tables and is a member of sg_writer, which may not; after SET ROLE
// sg_writer a read through the index answers what sg_writer's read of
// gs_orders answers on plain Postgres (the rows: it may read gs_orders),
// and so after SET LOCAL ROLE in a transaction, RESET ROLE and SET
// SESSION AUTHORIZATION (by a superuser). Before, the rights sg_gsiboss
// had were cached for the session: the read ran on sg_writer's own
// connection, 42501 on gs_orders_by_id.
func TestGSILookupRightsFollowSetRole(t *testing.T) {
	p := gsiProxyWithRole(t, "sg_gsiboss", "GRANT sg_writer TO sg_gsiboss; GRANT SELECT ON gs_orders, gs_orders_by_id, gs_orders_by_note TO sg_gsiboss")
	ctx := context.Background()
	w := connect(t, proxytest.DSN(p.addr, "sg_writer", "shop"))
	for i := int64(1); i <= 4; i++ {
		mustExec(t, w, "INSERT INTO gs_orders (id, customer_id, note) VALUES ($1, $1, 'role')", i)
	}
	// Plain Postgres: sg_writer reads gs_orders on each shard.
	plain := 0
	for _, cl := range env.Clusters[:2] {
		d := connect(t, cl.DSN("shop"))
		mustExec(t, d, "SET ROLE sg_writer")
		var n int
		if err := d.QueryRow(ctx, "SELECT count(*) FROM gs_orders WHERE note = 'role'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		plain += n
	}
	if plain != 4 {
		t.Fatalf("plain Postgres: sg_writer counts %d rows", plain)
	}
	boss := connect(t, proxytest.DSN(p.addr, "sg_gsiboss", "shop"))
	su := connect(t, proxytest.DSN(p.addr, "postgres", "shop"))
	read := func(c *pgx.Conn, stage string) {
		t.Helper()
		for name, mode := range modes {
			var n int
			if err := c.QueryRow(ctx, "SELECT count(*) FROM gs_orders WHERE note = 'role'", mode).Scan(&n); err != nil || n != plain {
				t.Errorf("%s, %s: %d rows, %v; want %d (plain Postgres)", stage, name, n, err, plain)
			}
			if err := c.QueryRow(ctx, "SELECT count(*) FROM gs_orders WHERE id = 3", mode).Scan(&n); err != nil || n != 1 {
				t.Errorf("%s, %s, by id: %d rows, %v", stage, name, n, err)
			}
		}
	}
	read(boss, "sg_gsiboss")
	mustExec(t, boss, "SET ROLE sg_writer")
	read(boss, "after SET ROLE sg_writer")
	mustExec(t, boss, "RESET ROLE")
	read(boss, "after RESET ROLE")
	mustExec(t, boss, "BEGIN")
	mustExec(t, boss, "SET LOCAL ROLE sg_writer")
	read(boss, "after SET LOCAL ROLE sg_writer")
	mustExec(t, boss, "COMMIT")
	read(boss, "after the transaction")
	read(su, "superuser")
	mustExec(t, su, "SET SESSION AUTHORIZATION sg_writer")
	read(su, "after SET SESSION AUTHORIZATION sg_writer")
}

// TestGSILookupInClientSnapshot: inside a REPEATABLE READ or
// SERIALIZABLE transaction a read through an index is exact or refused.
// A role granted SELECT on the lookup tables reads them in its own
// transaction: rows other sessions insert or delete after the first read
// change not the second, as plain Postgres's two reads of one transaction
// (checked on pg0); the reads are point reads through gs_orders_by_id.
// sg_writer, which may not read them (the read would run
// as the service identity, outside the snapshot), is refused with 0A000,
// and so is the reader once its transaction wrote entries of its own (the
// read would run on the transaction's service connection); in READ
// COMMITTED both read. Before, every read ran: sg_writer's and the
// reader's after its writes on service connections outside the snapshot.
func TestGSILookupInClientSnapshot(t *testing.T) {
	p := gsiProxyWithRole(t, "sg_gsireader", "GRANT SELECT, INSERT ON gs_orders, gs_orders_by_id, gs_orders_by_note TO sg_gsireader")
	ctx := context.Background()
	if err := env.Clusters[0].Exec(ctx, "shop", "GRANT USAGE ON SEQUENCE gs_orders_id_seq TO sg_gsireader"); err != nil {
		t.Fatal(err)
	}
	other := connect(t, proxytest.DSN(p.addr, "postgres", "shop"))
	next := int64(1)
	reset := func() int64 {
		mustExec(t, other, "DELETE FROM gs_orders WHERE note = 'snap'")
		for i := 0; i < 4; i++ {
			mustExec(t, other, "INSERT INTO gs_orders (id, customer_id, note) VALUES ($1, $1, 'snap')", next)
			next++
		}
		return next - 4
	}
	// ids reads each id of the test through gs_orders_by_id.
	ids := func(c *pgx.Conn, mode pgx.QueryExecMode) (string, error) {
		var got []int64
		for id := int64(1); id < next+8; id++ {
			var n int
			if err := c.QueryRow(ctx, "SELECT count(*) FROM gs_orders WHERE id = $1 AND note = 'snap'", mode, id).Scan(&n); err != nil {
				return "", err
			}
			if n > 0 {
				got = append(got, id)
			}
		}
		return fmt.Sprint(got), nil
	}
	// Plain Postgres, one cluster: two reads of one transaction agree.
	d := connect(t, env.Clusters[0].DSN("shop"))
	o := connect(t, env.Clusters[0].DSN("shop"))
	mustExec(t, d, "DROP TABLE IF EXISTS plain_snap")
	mustExec(t, d, "CREATE TABLE plain_snap (id bigint, note text)")
	mustExec(t, d, "INSERT INTO plain_snap VALUES (1, 'snap'), (2, 'snap'), (3, 'snap')")
	mustExec(t, d, "BEGIN ISOLATION LEVEL REPEATABLE READ")
	var a, b int
	if err := d.QueryRow(ctx, "SELECT count(*) FROM plain_snap WHERE note = 'snap'").Scan(&a); err != nil {
		t.Fatal(err)
	}
	mustExec(t, o, "DELETE FROM plain_snap WHERE id = 1")
	mustExec(t, o, "INSERT INTO plain_snap VALUES (4, 'snap'), (5, 'snap')")
	if err := d.QueryRow(ctx, "SELECT count(*) FROM plain_snap WHERE note = 'snap'").Scan(&b); err != nil || a != b {
		t.Fatalf("plain Postgres: %d then %d rows, %v", a, b, err)
	}
	mustExec(t, d, "ROLLBACK")
	mustExec(t, d, "DROP TABLE plain_snap")

	writer := connect(t, proxytest.DSN(p.addr, "sg_writer", "shop"))
	reader := connect(t, proxytest.DSN(p.addr, "sg_gsireader", "shop"))
	for _, level := range []string{"REPEATABLE READ", "SERIALIZABLE"} {
		for name, mode := range modes {
			stage := level + ", " + name
			first := reset()
			mustExec(t, reader, "BEGIN ISOLATION LEVEL "+level)
			before, err := ids(reader, mode)
			if err != nil {
				t.Fatalf("%s: %v", stage, err)
			}
			// Rows on both shards come and go after the snapshot.
			mustExec(t, other, "DELETE FROM gs_orders WHERE id IN ($1, $2)", first, first+1)
			mustExec(t, other, "INSERT INTO gs_orders (id, customer_id, note) VALUES ($1, $1, 'snap'), ($2, $2, 'snap')", next, next+1)
			next += 2
			if got, err := ids(reader, mode); err != nil || got != before {
				t.Errorf("%s: second read %s, first %s, %v", stage, got, before, err)
			}
			if _, err := reader.Exec(ctx, "INSERT INTO gs_orders (id, customer_id, note) VALUES ($1, $1, 'snap')", mode, next); err != nil {
				t.Fatalf("%s: %v", stage, err)
			}
			next++
			if _, err := ids(reader, mode); sqlstate(err) != "0A000" {
				t.Errorf("%s: the reader's read after its own entries: want 0A000, got %v", stage, err)
			}
			mustExec(t, reader, "ROLLBACK")

			reset()
			mustExec(t, writer, "BEGIN ISOLATION LEVEL "+level)
			if _, err := ids(writer, mode); sqlstate(err) != "0A000" {
				t.Errorf("%s: sg_writer's read: want 0A000, got %v", stage, err)
			}
			mustExec(t, writer, "ROLLBACK")
		}
	}
	for name, mode := range modes {
		for _, c := range []*pgx.Conn{writer, reader} {
			reset()
			mustExec(t, c, "BEGIN")
			if got, err := ids(c, mode); err != nil || strings.Count(got, " ") != 3 {
				t.Errorf("READ COMMITTED, %s: %s, %v", name, got, err)
			}
			mustExec(t, c, "COMMIT")
		}
	}
}
