package proxy

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/shardgate/shardgate/auth"
)

// Settings changed inside a DO block, a SQL function or a procedure —
// where the proxy cannot see the set_config — stay with the session that
// made them (as in Postgres) and never reach the next client of the
// pooled connection: a pool of one connection, two users.
func TestUnseenSettingsStayWithTheirSession(t *testing.T) {
	p := startProxy(t, shopTopology(""), func(c *Config) {
		c.PoolSize = 1
		withAuth(auth.Trust, auth.User{Name: "app"}, auth.User{Name: "other"})(c)
	})
	setupShop(t, p)
	createRole(t, "sg_unseen")
	for _, c := range env.Clusters {
		if err := c.Exec(context.Background(), "shop", `CREATE SCHEMA IF NOT EXISTS sg_evil;
			CREATE OR REPLACE FUNCTION sg_evil.set_it(n text, v text) RETURNS text LANGUAGE sql AS $$ SELECT set_config(n, v, false) $$;
			CREATE OR REPLACE PROCEDURE sg_evil.set_proc(n text, v text) LANGUAGE plpgsql AS $$ BEGIN PERFORM set_config(n, v, false); END $$;
			DROP TABLE IF EXISTS sg_evil.wants, sg_evil.trig_t, sg_evil.def_t, sg_evil.late_t, sg_evil.gen_t;
			CREATE TABLE sg_evil.late_t (x int);
			CREATE TABLE sg_evil.wants (n text, v text);
			INSERT INTO sg_evil.wants VALUES ('application_name', 'x');
			CREATE OR REPLACE FUNCTION sg_evil.set_wanted() RETURNS text LANGUAGE sql AS $$ SELECT set_config(n, v, false) FROM sg_evil.wants $$;
			CREATE OR REPLACE FUNCTION sg_evil.set_trig() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM sg_evil.set_wanted(); RETURN NEW; END $$;
			CREATE TABLE sg_evil.trig_t (x int);
			CREATE TRIGGER set_it BEFORE INSERT ON sg_evil.trig_t FOR EACH ROW EXECUTE FUNCTION sg_evil.set_trig();
			CREATE OR REPLACE VIEW sg_evil.set_v AS SELECT sg_evil.set_wanted() AS done;
			CREATE TABLE sg_evil.def_t (x int, done text DEFAULT sg_evil.set_wanted());
			CREATE OR REPLACE FUNCTION sg_evil.set_wanted_imm(x int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$ BEGIN PERFORM sg_evil.set_wanted(); RETURN x; END $$;
			CREATE TABLE sg_evil.gen_t (x int, g int GENERATED ALWAYS AS (sg_evil.set_wanted_imm(x)) STORED);
			GRANT USAGE ON SCHEMA sg_evil TO PUBLIC;
			GRANT ALL ON ALL TABLES IN SCHEMA sg_evil TO PUBLIC`); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	a := connect(t, p.dsnAs("app", "shop"))
	b := connect(t, p.dsnAs("other", "shop"))
	show := func(c *pgx.Conn, name string) string {
		if name == "role" {
			return queryString(t, c, "SELECT current_user::text")
		}
		return queryString(t, c, "SELECT current_setting($1)", name)
	}
	settings := []struct{ name, value, shown string }{
		{"search_path", "sg_evil, public", "sg_evil, public"},
		{"role", "sg_unseen", "sg_unseen"},
		{"default_transaction_read_only", "on", "on"},
		{"statement_timeout", "4321ms", "4321ms"},
	}
	// The relation ways run code the statement does not show: what
	// sg_evil.set_wanted sets is written into sg_evil.wants first, by a
	// plain UPDATE (pre).
	ways := []struct{ name, pre, sql string }{
		{"DO", "", "DO $$BEGIN PERFORM set_config('%s', '%s', false); END$$"},
		{"SQL function", "", "SELECT sg_evil.set_it('%s', '%s')"},
		{"procedure", "", "CALL sg_evil.set_proc('%s', '%s')"},
		{"trigger on INSERT", "UPDATE sg_evil.wants SET n = '%s', v = '%s'", "INSERT INTO sg_evil.trig_t VALUES (1)"},
		{"view calling a function", "UPDATE sg_evil.wants SET n = '%s', v = '%s'", "SELECT done FROM sg_evil.set_v"},
		{"column default", "UPDATE sg_evil.wants SET n = '%s', v = '%s'", "INSERT INTO sg_evil.def_t (x) VALUES (1)"},
		{"generated column", "UPDATE sg_evil.wants SET n = '%s', v = '%s'", "INSERT INTO sg_evil.gen_t (x) VALUES (1)"},
	}
	modes := []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeExec}
	for _, s := range settings {
		own := show(b, s.name)
		for _, w := range ways {
			for _, mode := range modes {
				for _, inTx := range []bool{false, true} {
					what := fmt.Sprintf("%s from a %s (%v, in a transaction: %v)", s.name, w.name, mode, inTx)
					if inTx {
						mustExec(t, a, "BEGIN")
					}
					sql := fmt.Sprintf(w.sql, s.name, s.value)
					if w.pre != "" {
						mustExec(t, a, fmt.Sprintf(w.pre, s.name, s.value))
						sql = w.sql
					}
					if _, err := a.Exec(ctx, sql, mode); err != nil {
						t.Fatalf("%s: %v", what, err)
					}
					if inTx {
						mustExec(t, a, "COMMIT")
					}
					if got := show(b, s.name); got != own {
						t.Fatalf("%s reached another client: %s, not its own %s", what, got, own)
					}
					if got := show(a, s.name); got != s.shown {
						t.Fatalf("%s: the session that made it sees %s, not %s", what, got, s.shown)
					}
					mustExec(t, a, "RESET "+s.name)
					if got, want := show(a, s.name), show(b, s.name); got != want {
						t.Fatalf("%s: after RESET the session sees %s, not %s", what, got, want)
					}
				}
			}
		}
	}

	// The cases above passed with the catalog of relations that run code
	// read (not only while it was being read, when every statement
	// naming a relation is checked): it names the tables with triggers,
	// and not the plain ones.
	names := readCodeCatalog(t, p, a)
	for k, want := range map[string]bool{"sg_evil\x00trig_t": true, "trig_t": true, "sg_evil\x00set_v": true, "sg_evil\x00def_t": true, "sg_evil\x00gen_t": true, "sg_evil\x00wants": false, "wants": false, "customers": false} {
		if names[k] != want {
			t.Errorf("catalog of relations that run code: %q is %v, want %v", k, names[k], want)
		}
	}

	// A trigger created through the proxy: the catalog is read again.
	if names["sg_evil\x00late_t"] {
		t.Fatal("sg_evil.late_t runs code before it has a trigger")
	}
	mustExec(t, a, "CREATE TRIGGER set_it BEFORE INSERT ON sg_evil.late_t FOR EACH ROW EXECUTE FUNCTION sg_evil.set_trig()")
	if names := readCodeCatalog(t, p, a); !names["sg_evil\x00late_t"] {
		t.Fatal("a trigger created through the proxy is not in the catalog of relations that run code")
	}
	own := show(b, "statement_timeout")
	mustExec(t, a, "UPDATE sg_evil.wants SET n = 'statement_timeout', v = '4321ms'")
	mustExec(t, a, "INSERT INTO sg_evil.late_t VALUES (1)")
	if got := show(b, "statement_timeout"); got != own {
		t.Fatalf("statement_timeout from a trigger created through the proxy reached another client: %s, not %s", got, own)
	}
	mustExec(t, a, "RESET statement_timeout")

	// A transaction rolled back takes its settings with it, as in Postgres.
	mustExec(t, a, "BEGIN")
	mustExec(t, a, "DO $$BEGIN PERFORM set_config('statement_timeout', '4321ms', false); END$$")
	mustExec(t, a, "ROLLBACK")
	if got, want := show(a, "statement_timeout"), show(b, "statement_timeout"); got != want {
		t.Fatalf("a rolled-back DO block's setting stayed: %s, not %s", got, want)
	}

	// The other client's INSERT is not diverted into a table of the
	// schema a DO block put first on the search_path.
	mustExec(t, b, "CREATE TABLE IF NOT EXISTS sg_evil.countries (code text, name text)")
	mustExec(t, a, "DO $$BEGIN PERFORM set_config('search_path', 'sg_evil, public', false); END$$")
	mustExec(t, b, "INSERT INTO countries (code, name) VALUES ('zz', 'Unseenland')")
	var diverted int
	if err := b.QueryRow(ctx, "SELECT count(*) FROM sg_evil.countries").Scan(&diverted); err != nil {
		t.Fatal(err)
	}
	mustExec(t, b, "DELETE FROM countries WHERE code = 'zz'")
	if diverted != 0 {
		t.Fatalf("another client's INSERT went into sg_evil.countries")
	}
}

// readCodeCatalog waits until the proxy has read its catalog of relations
// that run code (a statement naming a relation starts the read) and
// returns it.
func readCodeCatalog(t *testing.T, p *testProxy, c *pgx.Conn) map[string]bool {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if names := p.srv.cur.Load().code.names.Load(); names != nil {
			return *names
		}
		mustExec(t, c, "SELECT 1 FROM sg_evil.wants")
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("the catalog of relations that run code was not read in 20s")
	return nil
}

// TestCodeRelationCreatedDirectly: a trigger created on the clusters
// directly, not through the proxy, is in the catalog of relations that
// run code within Config.CodeRefresh (500ms here) with no DDL through the
// proxy and no RELOAD, and from then on the setting it makes stays with
// its session, as for one created through the proxy (pool of one, two
// clients). Before, the catalog was read again only after DDL through the
// proxy or a RELOAD: the wait timed out and statement_timeout reached the
// other client.
func TestCodeRelationCreatedDirectly(t *testing.T) {
	const bound = 500 * time.Millisecond
	p := startProxy(t, shopTopology(""), func(c *Config) {
		c.PoolSize, c.CodeRefresh = 1, bound
		withAuth(auth.Trust, auth.User{Name: "app"}, auth.User{Name: "other"})(c)
	})
	setupShop(t, p)
	for _, c := range env.Clusters {
		if err := c.Exec(context.Background(), "shop", `CREATE SCHEMA IF NOT EXISTS sg_direct;
			DROP TABLE IF EXISTS sg_direct.t;
			CREATE TABLE sg_direct.t (x int);
			CREATE OR REPLACE FUNCTION sg_direct.set_trig() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM set_config('statement_timeout', '4321ms', false); RETURN NEW; END $$;
			GRANT USAGE ON SCHEMA sg_direct TO PUBLIC;
			GRANT ALL ON ALL TABLES IN SCHEMA sg_direct TO PUBLIC`); err != nil {
			t.Fatal(err)
		}
	}
	a := connect(t, p.dsnAs("app", "shop"))
	b := connect(t, p.dsnAs("other", "shop"))
	catalog := func() map[string]bool {
		if names := p.srv.cur.Load().code.names.Load(); names != nil {
			return *names
		}
		return nil
	}
	// The catalog is read, without sg_direct.t.
	deadline := time.Now().Add(20 * time.Second)
	for catalog() == nil && time.Now().Before(deadline) {
		mustExec(t, a, "SELECT 1 FROM sg_direct.t")
		time.Sleep(20 * time.Millisecond)
	}
	if names := catalog(); names == nil || names["sg_direct\x00t"] {
		t.Fatalf("catalog before the trigger: %v", names)
	}
	for _, c := range env.Clusters {
		if err := c.Exec(context.Background(), "shop", "CREATE TRIGGER set_it BEFORE INSERT ON sg_direct.t FOR EACH ROW EXECUTE FUNCTION sg_direct.set_trig()"); err != nil {
			t.Fatal(err)
		}
	}
	created := time.Now()
	for !catalog()["sg_direct\x00t"] {
		if time.Since(created) > 20*time.Second {
			t.Fatal("a trigger created on the clusters directly is not in the catalog after 20s")
		}
		mustExec(t, a, "SELECT 1 FROM sg_direct.t")
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("in the catalog %s after it was created (bound %s)", time.Since(created).Round(time.Millisecond), bound)
	own := queryString(t, b, "SELECT current_setting('statement_timeout')")
	mustExec(t, a, "INSERT INTO sg_direct.t VALUES (1)")
	if got := queryString(t, b, "SELECT current_setting('statement_timeout')"); got != own {
		t.Fatalf("statement_timeout from a trigger created directly reached another client: %s, not %s", got, own)
	}
	if got := queryString(t, a, "SELECT current_setting('statement_timeout')"); got != "4321ms" {
		t.Fatalf("the session that ran the trigger sees statement_timeout %s", got)
	}
}
