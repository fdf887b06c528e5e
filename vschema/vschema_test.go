package vschema

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/shardgate/shardgate/keyexpr"
	"github.com/shardgate/shardgate/sqlerr"
	"github.com/shardgate/shardgate/topology"
)

const testTopology = `version: 1
clusters:
  pg0: { dsn: "postgres://postgres@127.0.0.1:5441/shop" }
  pg1: { dsn: "postgres://postgres@127.0.0.1:5442/shop" }
  pg2: { dsn: "postgres://postgres@127.0.0.1:5443/shop" }
groups:
  main:
    unsharded: true
    cluster: pg0
    tables: [settings]
    sequences: [customers_id_seq, orders_id_seq]
  by_customer:
    index: { name: by_customer, column: customer_id, type: bigint, function: xxhash }
    shards: { "-80": pg0, "80-": pg1 }
    tables:
      customers: { column: id, sequence: { column: id, name: customers_id_seq } }
      orders:    { sequence: { column: id, name: orders_id_seq } }
      items:     {}
    reference: [countries]
    secondary_indexes:
      orders_by_id: { table: orders, column: id, type: bigint, state: active }
      orders_by_email: { table: orders, column: email, type: text }
  catalog:
    index: { name: by_sku, expression: "lower(sku)", type: text, function: xxhash }
    shards: { "c0-": pg1, "-40": pg0, "40-80": pg0, "80c2e40b8486afab-c0": pg1, "80-80c2e40b8486afab": pg2 }
    tables: { products: {}, audit.Product_Log: {} }
  by_region:
    index: { name: by_region, column: region_id, type: integer, function: range }
    shards:
      - { to: 0, cluster: pg2 }
      - { from: 0, to: 100, cluster: pg0 }
      - { from: 100, to: 200, cluster: pg1 }
    tables: { stores: {} }
  by_tenant:
    index: { name: by_tenant, column: tenant_id, type: bigint, function: modulo }
    shards: [pg0, pg1, pg2]
    tables: { tenants: { column: id } }
`

func buildTest(t *testing.T) *VSchema {
	t.Helper()
	topo, err := topology.Parse("test.yaml", []byte(testTopology))
	if err != nil {
		t.Fatal(err)
	}
	v, err := Build(topo)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestTableLookup(t *testing.T) {
	v := buildTest(t)
	tests := []struct {
		schema, name string
		group        string
		named, ref   bool
		keyColumns   []string
	}{
		{"", "orders", "by_customer", true, false, []string{"customer_id"}},
		{"public", "customers", "by_customer", true, false, []string{"id"}},
		{"", "countries", "by_customer", true, true, nil},
		{"", "settings", "main", true, false, nil},
		{"", "no_such_table", "main", false, false, nil},
		{"other", "orders", "main", false, false, nil},
		{"", "Orders", "main", false, false, nil}, // a quoted "Orders" is another table
		{"", "products", "catalog", true, false, []string{"sku"}},
		{"audit", "product_log", "catalog", true, false, []string{"sku"}},
		{"", "tenants", "by_tenant", true, false, []string{"id"}},
	}
	for _, tc := range tests {
		tb := v.Table(tc.schema, tc.name)
		if tb == nil || tb.Group.Name != tc.group || tb.Named != tc.named || tb.Reference != tc.ref || !slices.Equal(tb.KeyColumns(), tc.keyColumns) {
			t.Errorf("Table(%q, %q) = %+v, want group %s named %v reference %v key %v", tc.schema, tc.name, tb, tc.group, tc.named, tc.ref, tc.keyColumns)
		}
	}
	if s := v.Table("", "orders").Sequence; s == nil || s.Column != "id" || s.Sequence.Name != "orders_id_seq" {
		t.Errorf("orders sequence = %+v", s)
	}
	if v.Main() != v.Group("main") || len(v.Groups()) != 5 || v.Group("nope") != nil || len(v.Clusters()) != 3 || v.Topology() == nil {
		t.Errorf("accessors wrong")
	}
	if got := len(v.Tables()); got != 9 {
		t.Errorf("Tables() has %d entries, want 9", got)
	}
	si := v.Table("", "orders").SecondaryIndexes
	if len(si) != 2 || si[0].Name != "orders_by_id" || !si[0].Active || si[1].Active || si[1].Type != Text || len(v.SecondaryIndexes()) != 2 {
		t.Errorf("secondary indexes = %+v", si)
	}
}

func TestClusters(t *testing.T) {
	v := buildTest(t)
	if got := v.ClustersOf("catalog"); !slices.Equal(got, []string{"pg0", "pg2", "pg1"}) {
		t.Errorf("ClustersOf(catalog) = %v", got)
	}
	if got := v.ClustersOf("main"); !slices.Equal(got, []string{"pg0"}) {
		t.Errorf("ClustersOf(main) = %v", got)
	}
	if v.ClustersOf("nope") != nil {
		t.Errorf("unknown group has clusters")
	}
	var names []string
	for _, s := range v.Group("catalog").ShardsOnCluster("pg0") {
		names = append(names, s.Name)
	}
	if !slices.Equal(names, []string{"-40", "40-80"}) {
		t.Errorf("ShardsOnCluster(pg0) = %v", names)
	}
}

func TestShardFor(t *testing.T) {
	v := buildTest(t)
	tests := []struct {
		group string
		key   Key
		shard string
	}{
		// xxhash: keyspace ids from the golden vectors.
		{"by_customer", IntegerKey(0), "-80"},                                         // 34c9...
		{"by_customer", IntegerKey(1), "80-"},                                         // 9f1f...
		{"by_customer", IntegerKey(-1), "80-"},                                        // 85d1...
		{"by_customer", IntegerKey(math.MaxInt64), "-80"},                             // 043d...
		{"catalog", TextKey("abc"), "40-80"},                                          // 44bc...
		{"catalog", TextKey(""), "c0-"},                                               // ef46...
		{"catalog", TextKey("日本"), "80c2e40b8486afab-c0"},                             // 80c2e40b8486afab: a range's start is inclusive
		{"catalog", UUIDKey(mustUUID("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11")), "-40"}, // 2be0...
		{"catalog", IntegerKey(0), "-40"},                                             // 34c9...
		{"catalog", IntegerKey(-1), "80c2e40b8486afab-c0"},                            // 85d1...
		{"catalog", TextKey("Ünïcødé"), "c0-"},                                        // dfb1...
		// range: half-open, the first range unbounded below.
		{"by_region", IntegerKey(math.MinInt64), "-0"},
		{"by_region", IntegerKey(-1), "-0"},
		{"by_region", IntegerKey(0), "0-100"},
		{"by_region", IntegerKey(99), "0-100"},
		{"by_region", IntegerKey(100), "100-200"},
		{"by_region", IntegerKey(199), "100-200"},
		// modulo: ((v % n) + n) % n.
		{"by_tenant", IntegerKey(0), "0"},
		{"by_tenant", IntegerKey(5), "2"},
		{"by_tenant", IntegerKey(-1), "2"},
		{"by_tenant", IntegerKey(-3), "0"},
		{"by_tenant", IntegerKey(math.MinInt64), "1"},
		{"by_tenant", IntegerKey(math.MaxInt64), "1"},
		// unsharded: one shard owns everything.
		{"main", IntegerKey(7), "-"},
	}
	for _, tc := range tests {
		s, err := v.Group(tc.group).ShardFor(tc.key)
		if err != nil {
			t.Errorf("%s.ShardFor(%v): %v", tc.group, tc.key, err)
			continue
		}
		if s.Name != tc.shard {
			t.Errorf("%s.ShardFor(%v) = %s, want %s", tc.group, tc.key, s.Name, tc.shard)
		}
		if g := v.Group(tc.group); g.Shards[s.Index] != s {
			t.Errorf("%s: shard %s has index %d", tc.group, s.Name, s.Index)
		}
	}

	_, err := v.Group("by_region").ShardFor(IntegerKey(200))
	if code := sqlerr.Code(err); code != sqlerr.CheckViolation || err.(*sqlerr.Error).Message != `no shard of index "by_region" covers key 200` {
		t.Errorf("uncovered key: %v", err)
	}
	if _, err := v.Group("by_tenant").ShardFor(TextKey("x")); err == nil {
		t.Errorf("modulo accepted a text key")
	}
	if _, err := v.Group("by_customer").ShardFor(Key{}); err == nil {
		t.Errorf("xxhash accepted an invalid key")
	}
}

func TestKeyConversion(t *testing.T) {
	v := buildTest(t)
	customers := v.Table("", "customers")
	k, err := customers.KeyFromColumns(func(col string) (keyexpr.Value, bool) {
		return keyexpr.Text("12"), col == "id"
	})
	if err != nil || k != IntegerKey(12) {
		t.Errorf("customers key = %v, %v", k, err)
	}
	_, err = customers.KeyFromColumns(func(col string) (keyexpr.Value, bool) { return keyexpr.Int(1), col == "customer_id" })
	var mc *keyexpr.MissingColumnError
	if !errors.As(err, &mc) || mc.Column != "id" {
		t.Errorf("missing key column: %v", err)
	}
	if _, err := v.Table("", "countries").KeyFromColumns(nil); err == nil {
		t.Errorf("a reference table has no key")
	}

	bigint := v.Group("by_customer").Index
	integer := v.Group("by_region").Index
	sku := v.Group("catalog").Index
	uuid := &Index{Name: "u", Column: "id", Type: UUID}
	varchar := &Index{Name: "v", Column: "c", Type: Varchar}
	two := &Index{Name: "two", Expr: keyexpr.MustParse("a || b"), Type: Text}
	tests := []struct {
		name string
		fn   func() (Key, error)
		want Key
		code string
		msg  string
	}{
		{"text to bigint", func() (Key, error) { return bigint.KeyFromText(" 42") }, IntegerKey(42), "", ""},
		{"bad bigint", func() (Key, error) { return bigint.KeyFromText("abc") }, Key{}, "22P02", `invalid input syntax for type bigint: "abc"`},
		{"bigint overflow", func() (Key, error) { return bigint.KeyFromText("9223372036854775808") }, Key{}, "22003", `value "9223372036854775808" is out of range for type bigint`},
		{"integer overflow text", func() (Key, error) { return integer.KeyFromText("3000000000") }, Key{}, "22003", `value "3000000000" is out of range for type integer`},
		{"integer overflow int", func() (Key, error) { return integer.KeyFromValue(keyexpr.Int(3000000000)) }, Key{}, "22003", "integer out of range"},
		{"null", func() (Key, error) { return bigint.KeyFromValue(keyexpr.Null()) }, Key{}, "22004", `shard key of index "by_customer" must not be null`},
		{"expression null", func() (Key, error) {
			return sku.KeyFromColumns(func(string) (keyexpr.Value, bool) { return keyexpr.Null(), true })
		}, Key{}, "22004", `shard key of index "by_sku" must not be null`},
		{"expression from text", func() (Key, error) { return sku.KeyFromText("AbC-12") }, TextKey("abc-12"), "", ""},
		{"expression result", func() (Key, error) { return sku.KeyFromValue(keyexpr.Text("AbC-12")) }, TextKey("AbC-12"), "", ""},
		{"int to text", func() (Key, error) { return varchar.KeyFromValue(keyexpr.Int(-12)) }, TextKey("-12"), "", ""},
		{"bad utf8", func() (Key, error) { return varchar.KeyFromText("a\xff") }, Key{}, "22021", `invalid byte sequence for encoding "UTF8"`},
		{"uuid", func() (Key, error) { return uuid.KeyFromText("{A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11}") }, UUIDKey(mustUUID("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11")), "", ""},
		{"bad uuid", func() (Key, error) { return uuid.KeyFromText("a0eebc99") }, Key{}, "22P02", `invalid input syntax for type uuid: "a0eebc99"`},
		{"int uuid", func() (Key, error) { return uuid.KeyFromValue(keyexpr.Int(1)) }, Key{}, "22P02", `invalid input syntax for type uuid: "1"`},
		{"two columns", func() (Key, error) { return two.KeyFromText("x") }, Key{}, "0A000", `index "two" reads 2 columns; its key cannot be computed from one value`},
		{"secondary", func() (Key, error) {
			return v.SecondaryIndexes()[0].KeyFromValue(keyexpr.Text("7"))
		}, IntegerKey(7), "", ""},
	}
	for _, tc := range tests {
		got, err := tc.fn()
		if tc.code == "" {
			if err != nil || got != tc.want {
				t.Errorf("%s: %v, %v; want %v", tc.name, got, err, tc.want)
			}
			continue
		}
		e, ok := sqlerr.As(err)
		if !ok || e.Code != tc.code || e.Message != tc.msg {
			t.Errorf("%s: error %v, want %s %q", tc.name, err, tc.code, tc.msg)
		}
	}
}

func TestKeyStrings(t *testing.T) {
	for k, want := range map[Key]string{
		IntegerKey(-5):           "-5",
		TextKey("it's"):          "'it''s'",
		UUIDKey([16]byte{15: 1}): "'00000000-0000-0000-0000-000000000001'",
		{}:                       "<invalid key>",
	} {
		if got := k.String(); got != want {
			t.Errorf("%#v.String() = %s, want %s", k, got, want)
		}
	}
	if ix := (&Index{Name: "by_sku", Expr: keyexpr.MustParse("LOWER(sku)")}); ix.String() != "by_sku(lower(sku))" {
		t.Errorf("index string = %s", ix)
	}
}

func TestBuildRefusesUnroutable(t *testing.T) {
	topo := &topology.Topology{
		Clusters: []*topology.Cluster{{Name: "pg0"}},
		Groups:   []*topology.Group{{Name: "other", Unsharded: true, Cluster: "pg0"}},
	}
	if _, err := Build(topo); err == nil {
		t.Error("Build accepted a topology without a main group")
	}
	topo.Groups = append(topo.Groups, &topology.Group{Name: "main", Unsharded: true, Cluster: "pg9"})
	if _, err := Build(topo); err == nil {
		t.Error("Build accepted an unknown cluster")
	}
}

func TestLookupTable(t *testing.T) {
	v := buildTest(t)
	si := v.SecondaryIndexes()[0]
	lt := v.Table("", si.Name)
	if lt != si.Lookup || lt.LookupOf != si || !lt.Sharded() || lt.KeyColumn != si.Column || si.KeyColumn() != "customer_id" || si.KeyType() != Bigint {
		t.Fatalf("lookup table of %s = %+v", si.Name, lt)
	}
	owner := si.Group
	if !slices.Equal(lt.Group.Clusters, owner.Clusters) || len(lt.Group.Shards) != len(owner.Shards) {
		t.Errorf("lookup group %+v does not share the shards of %s", lt.Group, owner.Name)
	}
	// Sharded by the xxhash of the value: the shard of value 7 is the one
	// the owner group would give key 7.
	k, err := si.KeyFromValue(keyexpr.Text("7"))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := lt.Group.ShardFor(k)
	b, _ := owner.ShardFor(k)
	if a.Name != b.Name {
		t.Errorf("value 7 on %s, key 7 on %s", a.Name, b.Name)
	}
	if slices.Contains(v.Tables(), lt) || v.Group(si.Name) != nil {
		t.Errorf("the lookup table is not among the topology's tables or groups")
	}
}
