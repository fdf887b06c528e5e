package ecommerce

import (
	"context"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"gopkg.in/yaml.v3"

	"github.com/shardgate/shardgate/internal/testenv"
)

// topologyFile mirrors the YAML shape of docs/topology.md, strictly (unknown keys
// are errors), so a typo in topology.yaml fails here even before the
// topology package loads it.
type topologyFile struct {
	Version  int `yaml:"version"`
	Clusters map[string]struct {
		DSN string `yaml:"dsn"`
	} `yaml:"clusters"`
	Groups map[string]struct {
		Unsharded bool     `yaml:"unsharded"`
		Cluster   string   `yaml:"cluster"`
		Sequences []string `yaml:"sequences"`
		Index     *struct {
			Name       string `yaml:"name"`
			Column     string `yaml:"column"`
			Expression string `yaml:"expression"`
			Type       string `yaml:"type"`
			Function   string `yaml:"function"`
		} `yaml:"index"`
		Shards map[string]string `yaml:"shards"`
		Tables map[string]struct {
			Column   string `yaml:"column"`
			Sequence *struct {
				Column string `yaml:"column"`
				Name   string `yaml:"name"`
			} `yaml:"sequence"`
		} `yaml:"tables"`
		Reference        []string `yaml:"reference"`
		SecondaryIndexes map[string]struct {
			Table      string `yaml:"table"`
			Column     string `yaml:"column"`
			Expression string `yaml:"expression"`
			Type       string `yaml:"type"`
			State      string `yaml:"state"`
			Unique     bool   `yaml:"unique"`
		} `yaml:"secondary_indexes"`
	} `yaml:"groups"`
}

func parseTopology(t *testing.T, text string) topologyFile {
	t.Helper()
	var f topologyFile
	dec := yaml.NewDecoder(strings.NewReader(text))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		t.Fatalf("topology.yaml: %v", err)
	}
	return f
}

func TestTopologyYAML(t *testing.T) {
	f := parseTopology(t, TopologyYAML)
	if f.Version != 1 {
		t.Errorf("version %d", f.Version)
	}
	for name, dsn := range map[string]string{
		"pg0": "postgres://postgres@127.0.0.1:5441/shop",
		"pg1": "postgres://postgres@127.0.0.1:5442/shop",
	} {
		if f.Clusters[name].DSN != dsn {
			t.Errorf("cluster %s dsn %q, want %q", name, f.Clusters[name].DSN, dsn)
		}
	}
	if len(f.Clusters) != 2 || len(f.Groups) != 3 {
		t.Fatalf("%d clusters, %d groups; want 2 and 3", len(f.Clusters), len(f.Groups))
	}

	main := f.Groups["main"]
	if !main.Unsharded || main.Cluster != "pg0" || main.Index != nil {
		t.Errorf("main group: %+v", main)
	}
	var seqs []string
	for _, s := range Sequences() {
		seqs = append(seqs, s)
	}
	sort.Strings(seqs)
	got := append([]string(nil), main.Sequences...)
	sort.Strings(got)
	if !reflect.DeepEqual(got, seqs) {
		t.Errorf("main sequences %v, want %v", main.Sequences, seqs)
	}

	bc := f.Groups["by_customer"]
	if bc.Index == nil || *bc.Index != (struct {
		Name       string `yaml:"name"`
		Column     string `yaml:"column"`
		Expression string `yaml:"expression"`
		Type       string `yaml:"type"`
		Function   string `yaml:"function"`
	}{Name: "by_customer", Column: "customer_id", Type: "bigint", Function: "xxhash"}) {
		t.Errorf("by_customer index: %+v", bc.Index)
	}
	wantShards := map[string]string{"-80": "pg0", "80-": "pg1"}
	if !reflect.DeepEqual(bc.Shards, wantShards) {
		t.Errorf("by_customer shards %v", bc.Shards)
	}
	if c := bc.Tables["customers"]; c.Column != "id" || c.Sequence == nil || c.Sequence.Name != "customers_id_seq" || c.Sequence.Column != "id" {
		t.Errorf("customers: %+v", c)
	}
	for table, seq := range map[string]string{"orders": "orders_id_seq", "items": "items_id_seq"} {
		if s := bc.Tables[table].Sequence; s == nil || s.Name != seq || s.Column != "id" {
			t.Errorf("%s sequence: %+v", table, s)
		}
	}
	if a, ok := bc.Tables["addresses"]; !ok || a.Sequence != nil || a.Column != "" {
		t.Errorf("addresses: %+v (present %v)", a, ok)
	}
	if !reflect.DeepEqual(bc.Reference, []string{"countries", "currencies"}) {
		t.Errorf("reference %v", bc.Reference)
	}
	if gsi := bc.SecondaryIndexes["orders_by_id"]; gsi.Table != "orders" || gsi.Column != "id" || gsi.Type != "bigint" || gsi.State != "backfilling" || !gsi.Unique {
		t.Errorf("orders_by_id: %+v", gsi)
	}

	cat := f.Groups["catalog"]
	if cat.Index == nil || cat.Index.Name != "by_sku" || cat.Index.Expression != "lower(sku)" || cat.Index.Column != "" ||
		cat.Index.Type != "text" || cat.Index.Function != "xxhash" {
		t.Errorf("catalog index: %+v", cat.Index)
	}
	if !reflect.DeepEqual(cat.Shards, wantShards) {
		t.Errorf("catalog shards %v", cat.Shards)
	}
	if s := cat.Tables["products"].Sequence; s == nil || s.Name != "products_id_seq" {
		t.Errorf("products sequence: %+v", s)
	}

	// Every generated table is declared by exactly one group (the GSI table
	// through its secondary index).
	declared := map[string]string{}
	for gname, g := range f.Groups {
		var names []string
		for table := range g.Tables {
			names = append(names, table)
		}
		names = append(names, g.Reference...)
		for gsi := range g.SecondaryIndexes {
			names = append(names, gsi)
		}
		for _, n := range names {
			if prev, dup := declared[n]; dup {
				t.Errorf("table %s in groups %s and %s", n, prev, gname)
			}
			declared[n] = gname
		}
	}
	for _, table := range Tables() {
		if declared[table] == "" {
			t.Errorf("generated table %s is not in topology.yaml", table)
		}
	}
}

var createTable = regexp.MustCompile(`(?i)CREATE TABLE IF NOT EXISTS (\w+)`)

func TestSchemaSections(t *testing.T) {
	if got := SchemaGroups(); !reflect.DeepEqual(got, []string{"by_customer", "catalog"}) {
		t.Fatalf("SchemaGroups() = %v", got)
	}
	f := parseTopology(t, TopologyYAML)
	total := 0
	for _, group := range SchemaGroups() {
		ddl := GroupSchema(group)
		if !strings.HasPrefix(ddl, "-- @group "+group+"\n") {
			t.Errorf("section %s starts with %q", group, ddl[:min(len(ddl), 40)])
		}
		// The tables created by a section are exactly the group's tables,
		// reference tables and GSI tables.
		var created, want []string
		for _, m := range createTable.FindAllStringSubmatch(ddl, -1) {
			created = append(created, m[1])
		}
		g := f.Groups[group]
		for table := range g.Tables {
			want = append(want, table)
		}
		want = append(want, g.Reference...)
		for gsi := range g.SecondaryIndexes {
			want = append(want, gsi)
		}
		sort.Strings(created)
		sort.Strings(want)
		if !reflect.DeepEqual(created, want) {
			t.Errorf("section %s creates %v; the group has %v", group, created, want)
		}
		total += len(ddl)
	}
	header := groupMarker.FindStringIndex(SchemaSQL)[0] // the file's leading comment
	if total+header != len(SchemaSQL) {
		t.Errorf("header and sections cover %d of %d bytes", total+header, len(SchemaSQL))
	}
	if GroupSchema("main") != MainSchemaSQL || GroupSchema("nope") != "" {
		t.Error("GroupSchema(main/unknown)")
	}
	if strings.Contains(SchemaSQL, "CREATE SEQUENCE") || !strings.Contains(MainSchemaSQL, "CREATE SEQUENCE IF NOT EXISTS orders_id_seq") {
		t.Error("sequences must be in schema_main.sql only")
	}
}

func TestTopologyFor(t *testing.T) {
	out, err := TopologyFor(map[string]string{"pg1": "postgres://postgres@127.0.0.1:40001/shop?sslmode=disable"})
	if err != nil {
		t.Fatal(err)
	}
	f := parseTopology(t, out)
	if f.Clusters["pg1"].DSN != "postgres://postgres@127.0.0.1:40001/shop?sslmode=disable" ||
		f.Clusters["pg0"].DSN != "postgres://postgres@127.0.0.1:5441/shop" {
		t.Errorf("clusters after TopologyFor: %+v", f.Clusters)
	}
	if strings.Count(out, "\n") != strings.Count(TopologyYAML, "\n") {
		t.Error("TopologyFor changed more than the DSNs")
	}
	if _, err := TopologyFor(map[string]string{"pg9": "x"}); err == nil {
		t.Error("TopologyFor accepted an unknown cluster")
	}
}

// TestSchemaAndDataLoad applies every DDL file (twice: it is idempotent) to
// one real database and COPYs the whole Small() data set into it, to prove
// schema and generator agree (types, NOT NULLs, keys, checks). It is not a
// sharded load: routing rows to shards is the vschema package's business.
func TestSchemaAndDataLoad(t *testing.T) {
	env := testenv.ForTest(t, testenv.Options{N: 1, Databases: []string{Database}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := env.Clusters[0]
	for range 2 {
		if err := c.Exec(ctx, Database, GroupSchema("main")); err != nil {
			t.Fatal(err)
		}
		for _, g := range SchemaGroups() {
			if err := c.Exec(ctx, Database, GroupSchema(g)); err != nil {
				t.Fatalf("group %s: %v", g, err)
			}
		}
	}

	conn, err := c.Conn(ctx, Database)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows := map[string][][]any{}
	st, err := Generate(Small(), func(table string, _ []string, row []any) error {
		rows[table] = append(rows[table], row)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, table := range Tables() {
		n, err := conn.CopyFrom(ctx, pgx.Identifier{table}, Columns(table), pgx.CopyFromRows(rows[table]))
		if err != nil {
			t.Fatalf("COPY %s: %v", table, err)
		}
		if n != st.Rows[table] {
			t.Errorf("COPY %s: %d rows, want %d", table, n, st.Rows[table])
		}
	}
	if _, err := conn.Exec(ctx, st.SetvalSQL()); err != nil {
		t.Fatal(err)
	}

	one := func(sql string) string {
		t.Helper()
		var s string
		if err := conn.QueryRow(ctx, sql).Scan(&s); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return s
	}
	checks := map[string]string{
		// Sequences continue after the loaded ids.
		"SELECT nextval('orders_id_seq')::text": strconv.FormatInt(st.MaxID["orders_id_seq"]+1, 10),
		// Referential integrity, as SQL sees it.
		"SELECT count(*)::text FROM items i LEFT JOIN orders o ON o.customer_id = i.customer_id AND o.id = i.order_id WHERE o.id IS NULL": "0",
		"SELECT count(*)::text FROM orders o JOIN (SELECT customer_id, order_id, sum(qty * price) s FROM items GROUP BY 1, 2) i " +
			"ON i.customer_id = o.customer_id AND i.order_id = o.id WHERE i.s <> o.total": "0",
		"SELECT count(*)::text FROM items i LEFT JOIN products p ON p.sku = i.sku WHERE p.sku IS NULL":            "0",
		"SELECT count(*)::text FROM orders_by_id g LEFT JOIN orders o USING (id, customer_id) WHERE o.id IS NULL": "0",
		// Mixed-case SKUs: lower(sku) is what the catalog is sharded by.
		"SELECT count(*)::text FROM products WHERE sku = lower(sku) OR sku = upper(sku)": "0",
		// Text survives as UTF-8.
		"SELECT name FROM countries WHERE code = 'CI'": "Côte d’Ivoire",
	}
	for sql, want := range checks {
		if got := one(sql); got != want {
			t.Errorf("%s = %q, want %q", sql, got, want)
		}
	}
	// The unique index on lower(sku) refuses a SKU differing only in case.
	var sku string
	if err := conn.QueryRow(ctx, "SELECT sku FROM products WHERE id = 42").Scan(&sku); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "INSERT INTO products (id, sku, name, price) VALUES (100000, $1, 'dup', 1)", strings.ToLower(sku)); err == nil {
		t.Errorf("a second product with lower(sku) = %q was accepted", strings.ToLower(sku))
	}
}

// TestTopology4IsTopologyResharded: topology-4.yaml is topology.yaml with
// four more clusters (two databases on each server) and by_customer's
// shards split in half onto them; nothing else differs, so a reshard
// --to it moves by_customer only. Topology4For swaps its DSNs.
func TestTopology4IsTopologyResharded(t *testing.T) {
	var two, four map[string]any
	if err := yaml.Unmarshal([]byte(TopologyYAML), &two); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal([]byte(Topology4YAML), &four); err != nil {
		t.Fatal(err)
	}
	clusters := four["clusters"].(map[string]any)
	for name, dsn := range map[string]string{
		"pg2": "postgres://postgres@127.0.0.1:5441/shop_2", "pg3": "postgres://postgres@127.0.0.1:5441/shop_3",
		"pg4": "postgres://postgres@127.0.0.1:5442/shop_4", "pg5": "postgres://postgres@127.0.0.1:5442/shop_5",
	} {
		if got := clusters[name].(map[string]any)["dsn"]; got != dsn {
			t.Errorf("cluster %s: dsn %v, want %s", name, got, dsn)
		}
		delete(clusters, name)
	}
	byCustomer := func(m map[string]any) map[string]any {
		return m["groups"].(map[string]any)["by_customer"].(map[string]any)
	}
	want := map[string]any{"-40": "pg2", "40-80": "pg3", "80-c0": "pg4", "c0-": "pg5"}
	if got := byCustomer(four)["shards"]; !reflect.DeepEqual(got, want) {
		t.Errorf("by_customer's shards in topology-4.yaml: %v, want %v", got, want)
	}
	delete(byCustomer(four), "shards")
	delete(byCustomer(two), "shards")
	if !reflect.DeepEqual(two, four) {
		t.Errorf("topology-4.yaml differs from topology.yaml beyond by_customer's shards and the new clusters:\n%v\n%v", two, four)
	}
	out, err := Topology4For(map[string]string{"pg2": "postgres://x@h:1/a"})
	if err != nil || !strings.Contains(out, `pg2: { dsn: "postgres://x@h:1/a" }`) || !strings.Contains(out, `pg3: { dsn: "postgres://postgres@127.0.0.1:5441/shop_3" }`) {
		t.Errorf("Topology4For: %v\n%s", err, out)
	}
}
