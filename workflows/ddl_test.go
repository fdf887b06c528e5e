package workflows

import (
	"strings"
	"testing"
)

// TestParseDDL: what the stream follows (and the form the targets run),
// what it cannot follow, and what is no concern of a workflow.
func TestParseDDL(t *testing.T) {
	for _, c := range []struct {
		sql, what, target string
		refuse, narrows   bool
	}{
		{sql: "ALTER TABLE orders ADD COLUMN note text", what: "ALTER TABLE ... ADD COLUMN", target: "ADD COLUMN IF NOT EXISTS note"},
		{sql: "ALTER TABLE s.orders ADD COLUMN n int NOT NULL DEFAULT 0", what: "ALTER TABLE ... ADD COLUMN", target: "IF NOT EXISTS n int NOT NULL DEFAULT 0"},
		{sql: "ALTER TABLE orders ADD COLUMN n int NOT NULL", what: "ALTER TABLE ... ADD COLUMN", target: "IF NOT EXISTS n int NOT NULL", narrows: true},
		{sql: "ALTER TABLE orders ADD COLUMN at timestamptz DEFAULT now()", what: "ALTER TABLE ... ADD COLUMN with a non-constant default", refuse: true},
		{sql: "ALTER TABLE orders ADD COLUMN n bigserial", what: "ALTER TABLE ... ADD COLUMN with a non-constant default (serial)", refuse: true},
		{sql: "ALTER TABLE orders ADD COLUMN n int UNIQUE", what: "ALTER TABLE ... ADD COLUMN with UNIQUE", refuse: true},
		{sql: "ALTER TABLE orders DROP COLUMN note", what: "ALTER TABLE ... DROP COLUMN", target: "DROP IF EXISTS note", narrows: true},
		{sql: "ALTER TABLE orders ALTER COLUMN qty SET DEFAULT 5", what: "ALTER TABLE ... ALTER COLUMN ... SET DEFAULT", target: "SET DEFAULT 5"},
		{sql: "ALTER TABLE orders ALTER COLUMN qty DROP DEFAULT", what: "ALTER TABLE ... ALTER COLUMN ... DROP DEFAULT", target: "DROP DEFAULT"},
		{sql: "ALTER TABLE orders ALTER COLUMN qty SET NOT NULL", what: "ALTER TABLE ... ALTER COLUMN ... SET NOT NULL", target: "SET NOT NULL", narrows: true},
		{sql: "ALTER TABLE orders ALTER COLUMN qty DROP NOT NULL", what: "ALTER TABLE ... ALTER COLUMN ... DROP NOT NULL", target: "DROP NOT NULL"},
		{sql: "ALTER TABLE orders ADD CONSTRAINT pos CHECK (qty >= 0)", what: "ALTER TABLE ... ADD CONSTRAINT ... CHECK", target: "CHECK", narrows: true},
		{sql: "ALTER TABLE orders ADD CONSTRAINT u UNIQUE (qty)", what: "ALTER TABLE ... ADD CONSTRAINT (other than CHECK)", refuse: true, narrows: true},
		{sql: "ALTER TABLE orders DROP CONSTRAINT pos", what: "ALTER TABLE ... DROP CONSTRAINT", target: "DROP CONSTRAINT IF EXISTS pos"},
		{sql: "ALTER TABLE orders ALTER COLUMN qty TYPE bigint", what: "ALTER TABLE ... ALTER COLUMN ... TYPE", refuse: true},
		{sql: "ALTER TABLE orders ADD COLUMN a int, ALTER COLUMN qty TYPE bigint", what: "ALTER TABLE ... ALTER COLUMN ... TYPE", refuse: true},
		{sql: "ALTER TABLE orders RENAME COLUMN qty TO q", what: "ALTER TABLE ... RENAME", refuse: true},
		{sql: "ALTER TABLE orders RENAME TO o", what: "ALTER TABLE ... RENAME", refuse: true},
		{sql: "ALTER TABLE orders SET SCHEMA other", what: "ALTER TABLE ... SET SCHEMA", refuse: true},
		{sql: "DROP TABLE orders", what: "DROP TABLE", refuse: true},
		{sql: "TRUNCATE orders", what: "TRUNCATE", narrows: true},
		{sql: "CREATE INDEX orders_q ON orders (qty)", what: "CREATE INDEX", target: "CREATE INDEX IF NOT EXISTS orders_q"},
		{sql: "CREATE UNIQUE INDEX orders_q ON orders (qty)", what: "CREATE INDEX", target: "IF NOT EXISTS", narrows: true},
		{sql: "CREATE INDEX ON orders (qty)", what: "CREATE INDEX", target: "CREATE INDEX ON", narrows: true},
		{sql: "CREATE INDEX CONCURRENTLY orders_q ON orders (qty)", what: "CREATE INDEX CONCURRENTLY", refuse: true},
		{sql: "DROP INDEX orders_q", what: "DROP INDEX", target: "DROP INDEX IF EXISTS orders_q"},
	} {
		d, err := ParseDDL(c.sql)
		if err != nil || d == nil {
			t.Errorf("%s: %v %v", c.sql, d, err)
			continue
		}
		if d.What != c.what || d.Refuse != c.refuse || d.Narrows != c.narrows || !strings.Contains(d.Target, c.target) || c.refuse && d.Target != "" {
			t.Errorf("%s: got %q refuse %v narrows %v target %q", c.sql, d.What, d.Refuse, d.Narrows, d.Target)
		}
	}
	for _, sql := range []string{"CREATE TABLE x (a int)", "ALTER INDEX i RENAME TO j", "SELECT 1", "CREATE SEQUENCE s"} {
		if d, err := ParseDDL(sql); d != nil || err != nil {
			t.Errorf("%s: %+v %v", sql, d, err)
		}
	}
	d, _ := ParseDDL("ALTER TABLE sales.orders DROP COLUMN note")
	if len(d.Tables) != 1 || d.Tables[0].String() != "sales.orders" || d.display[0] != "sales.orders" {
		t.Errorf("tables %v %v", d.Tables, d.display)
	}
}

// TestDecideDDL: a workflow holding the table refuses during its copy,
// the kinds it cannot follow, and nothing concerns a table it does not
// hold.
func TestDecideDDL(t *testing.T) {
	row := func(phase, done, tables string) [][]byte {
		return [][]byte{[]byte("3"), []byte("reshard"), []byte(phase), []byte("source"), []byte("{}"), []byte(done), []byte(tables)}
	}
	add, _ := ParseDDL("ALTER TABLE orders ADD COLUMN note text")
	if msg, err := add.Decide([][][]byte{row("streaming", "true", "public.items")}); msg != nil || err != nil {
		t.Errorf("another table: %s %v", msg, err)
	}
	if msg, err := add.Decide([][][]byte{row("streaming", "true", "public.items\npublic.orders")}); err != nil || !strings.Contains(string(msg), `"tables":["public.orders"]`) {
		t.Errorf("streaming: %s %v", msg, err)
	}
	if _, err := add.Decide([][][]byte{row("stopped", "false", "public.orders")}); err == nil || !strings.Contains(err.Error(), `table "orders" is in workflow wf-3 (reshard, stopped): ALTER TABLE ... ADD COLUMN cannot run while the workflow copies`) {
		t.Errorf("copy stopped: %v", err)
	}
	ren, _ := ParseDDL("ALTER TABLE orders RENAME TO o")
	if _, err := ren.Decide([][][]byte{row("copying", "false", "public.orders")}); err == nil || !strings.Contains(err.Error(), "ALTER TABLE ... RENAME cannot follow the stream; complete or cancel it first") {
		t.Errorf("rename: %v", err)
	}
	tr, _ := ParseDDL("TRUNCATE orders")
	if _, err := tr.Decide([][][]byte{row("created", "false", "public.orders")}); err == nil {
		t.Error("TRUNCATE before the copy accepted")
	}
}
