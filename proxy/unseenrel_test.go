package proxy

import (
	"context"
	"testing"
	"time"

	"github.com/shardgate/shardgate/backend"
)

// The catalog of relations that run code names every kind of relation
// whose reading or writing may run a function of the user's, and no
// plain table: built-in defaults, checks, indexes, enums and foreign keys
// between plain tables stay out (a point read of them is never checked).
func TestCodeRelationsCatalog(t *testing.T) {
	c := env.Clusters[0]
	if err := c.Exec(context.Background(), "shop", `DROP SCHEMA IF EXISTS sg_code CASCADE;
		CREATE SCHEMA sg_code;
		CREATE FUNCTION sg_code.f() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$;
		CREATE FUNCTION sg_code.imm(int) RETURNS int LANGUAGE sql IMMUTABLE AS $$ SELECT $1 $$;
		CREATE FUNCTION sg_code.trig() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$;
		CREATE TYPE sg_code.mood AS ENUM ('ok', 'sad');
		CREATE DOMAIN sg_code.pos AS int CHECK (VALUE > 0);
		CREATE TABLE sg_code.plain_t (x serial PRIMARY KEY, y text DEFAULT 'a' CHECK (y <> ''), m sg_code.mood, z int GENERATED ALWAYS AS (x + 1) STORED);
		CREATE INDEX ON sg_code.plain_t (lower(y));
		CREATE TABLE sg_code.plain_ref (x int REFERENCES sg_code.plain_t ON DELETE CASCADE);
		CREATE TABLE sg_code.trig_t (x int);
		CREATE TRIGGER t AFTER TRUNCATE ON sg_code.trig_t EXECUTE FUNCTION sg_code.trig();
		CREATE TABLE sg_code.rule_t (x int);
		CREATE RULE r AS ON INSERT TO sg_code.rule_t DO ALSO NOTIFY sg_code;
		CREATE TABLE sg_code.rls_t (x int);
		ALTER TABLE sg_code.rls_t ENABLE ROW LEVEL SECURITY;
		CREATE TABLE sg_code.def_t (x int DEFAULT sg_code.f());
		CREATE TABLE sg_code.gen_t (x int, g int GENERATED ALWAYS AS (sg_code.imm(x)) STORED);
		CREATE TABLE sg_code.chk_t (x int CHECK (sg_code.imm(x) > 0));
		CREATE TABLE sg_code.idx_t (x int);
		CREATE INDEX ON sg_code.idx_t (sg_code.imm(x));
		CREATE TABLE sg_code.dom_t (x sg_code.pos);
		CREATE VIEW sg_code.v AS SELECT 1 AS one;
		CREATE TABLE sg_code.part_p (x int) PARTITION BY RANGE (x);
		CREATE TABLE sg_code.part_c PARTITION OF sg_code.part_p FOR VALUES FROM (0) TO (10);
		CREATE TRIGGER t BEFORE INSERT ON sg_code.part_c FOR EACH ROW EXECUTE FUNCTION sg_code.trig();
		CREATE TABLE sg_code.fk_parent (x int PRIMARY KEY);
		CREATE TABLE sg_code.fk_child (x int REFERENCES sg_code.fk_parent ON DELETE CASCADE);
		CREATE TRIGGER t BEFORE DELETE ON sg_code.fk_child FOR EACH ROW EXECUTE FUNCTION sg_code.trig()`); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Exec(context.Background(), "shop", "DROP SCHEMA sg_code CASCADE") })
	p := backend.NewPool(c.Name, c.DSN("shop"), 1, 5*time.Second, 5*time.Second, time.Minute)
	defer p.Close()
	names := map[string]bool{}
	if err := readCodeRelations(p, names); err != nil {
		t.Fatal(err)
	}
	for rel, want := range map[string]bool{
		"plain_t": false, "plain_ref": false, "pg_class": false, "tables": false,
		"trig_t": true, "rule_t": true, "rls_t": true, "def_t": true, "gen_t": true, "chk_t": true,
		"idx_t": true, "dom_t": true, "v": true, "part_p": true, "part_c": true, "fk_parent": true, "fk_child": true,
		"pg_settings": true, // UPDATE pg_settings runs set_config (a rule)
	} {
		schema := "sg_code"
		switch rel {
		case "pg_class", "pg_settings":
			schema = "pg_catalog"
		case "tables":
			schema = "information_schema"
		}
		if names[schema+"\x00"+rel] != want || names[rel] != want {
			t.Errorf("%s.%s runs code: %v (by name alone %v), want %v", schema, rel, names[schema+"\x00"+rel], names[rel], want)
		}
	}
}
