package vschema

import (
	"encoding/hex"
	"math"
	"testing"

	"github.com/shardgate/shardgate/keyexpr"
)

// The golden vectors pin where every stored row lives. They were computed
// once with this package and checked against an independent XXH64
// implementation written from the specification; changing any of them
// re-routes existing data, so a failure here is a bug, not a reason to
// update the table.
var golden = []struct {
	name      string
	key       Key
	canonical string // hex
	keyspace  string // hex
}{
	{"int 0", IntegerKey(0), "0000000000000000", "34c96acdcadb1bbb"},
	{"int 1", IntegerKey(1), "0000000000000001", "9f1ffc793b8a47da"},
	{"int -1", IntegerKey(-1), "ffffffffffffffff", "85d136adb773c6c9"},
	{"int 42", IntegerKey(42), "000000000000002a", "a2c396223f8bdbdf"},
	{"int min", IntegerKey(math.MinInt64), "8000000000000000", "a7299a58d03a1d0c"},
	{"int max", IntegerKey(math.MaxInt64), "7fffffffffffffff", "043de1bbaf341994"},
	{"text empty", TextKey(""), "", "ef46db3751d8e999"},
	{"text abc", TextKey("abc"), "616263", "44bc2cf5ad770999"},
	{"text Ünïcødé", TextKey("Ünïcødé"), "c39c6ec3af63c3b864c3a9", "dfb1149bd2c01d0d"},
	{"text 日本", TextKey("日本"), "e697a5e69cac", "80c2e40b8486afab"},
	{"text abc-12", TextKey("abc-12"), "6162632d3132", "f2fc8adc5142d781"},
	{"text long", TextKey("the quick brown fox jumps over the lazy dog"),
		"74686520717569636b2062726f776e20666f78206a756d7073206f76657220746865206c617a7920646f67", "ed714233c5a9a792"},
	{"uuid", UUIDKey(mustUUID("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11")), "a0eebc999c0b4ef8bb6d6bb9bd380a11", "2be0e46a4e11f685"},
	{"uuid nil", UUIDKey([16]byte{}), "00000000000000000000000000000000", "af09f71516247c32"},
	{"uuid max", UUIDKey(mustUUID("ffffffff-ffff-ffff-ffff-ffffffffffff")), "ffffffffffffffffffffffffffffffff", "a721445d6a57c444"},
}

func mustUUID(s string) [16]byte {
	u, err := keyexpr.ParseUUID(s)
	if err != nil {
		panic(err)
	}
	return u
}

func TestGoldenKeys(t *testing.T) {
	for _, g := range golden {
		if got := hex.EncodeToString(CanonicalBytes(g.key)); got != g.canonical {
			t.Errorf("%s: CanonicalBytes = %s, want %s", g.name, got, g.canonical)
		}
		id := KeyspaceID(g.key)
		if got := hex.EncodeToString(id[:]); got != g.keyspace {
			t.Errorf("%s: KeyspaceID = %s, want %s", g.name, got, g.keyspace)
		}
	}
}

// TestGoldenThroughIndexes reaches the golden keys the way the proxy and
// workflows do: from text forms and row values, through index
// expressions and type conversion. Every spelling of a value must give
// the same keyspace id.
func TestGoldenThroughIndexes(t *testing.T) {
	bigint := &Index{Name: "b", Column: "id", Type: Bigint}
	smallint := &Index{Name: "s", Column: "id", Type: Smallint}
	text := &Index{Name: "t", Column: "sku", Type: Text}
	lower := &Index{Name: "l", Expr: keyexpr.MustParse("lower(sku)"), Type: Text}
	uuid := &Index{Name: "u", Column: "id", Type: UUID}
	tests := []struct {
		ix       *Index
		value    keyexpr.Value
		keyspace string
	}{
		{bigint, keyexpr.Int(0), "34c96acdcadb1bbb"},
		{bigint, keyexpr.Text("0"), "34c96acdcadb1bbb"},
		{bigint, keyexpr.Text(" -0 "), "34c96acdcadb1bbb"},
		{smallint, keyexpr.Int(1), "9f1ffc793b8a47da"}, // smallint and bigint 1 live together
		{bigint, keyexpr.Text("-1"), "85d136adb773c6c9"},
		{bigint, keyexpr.Text("0x2A"), "a2c396223f8bdbdf"},
		{bigint, keyexpr.Text("-9223372036854775808"), "a7299a58d03a1d0c"},
		{bigint, keyexpr.Text("9223372036854775807"), "043de1bbaf341994"},
		{text, keyexpr.Text(""), "ef46db3751d8e999"},
		{text, keyexpr.Text("Ünïcødé"), "dfb1149bd2c01d0d"},
		{text, keyexpr.Text("日本"), "80c2e40b8486afab"},
		{lower, keyexpr.Text("AbC-12"), "f2fc8adc5142d781"},
		{lower, keyexpr.Text("abc-12"), "f2fc8adc5142d781"},
		{lower, keyexpr.Text("ABC"), "44bc2cf5ad770999"},
		{uuid, keyexpr.Text("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"), "2be0e46a4e11f685"},
		{uuid, keyexpr.Text("A0EEBC999C0B4EF8BB6D6BB9BD380A11"), "2be0e46a4e11f685"},
		{uuid, keyexpr.Text("{a0eebc99-9c0b4ef8-bb6d6bb9-bd380a11}"), "2be0e46a4e11f685"},
	}
	for _, tc := range tests {
		env := func(col string) (keyexpr.Value, bool) { return tc.value, true }
		k, err := tc.ix.KeyFromColumns(env)
		if err != nil {
			t.Errorf("%s(%v): %v", tc.ix, tc.value, err)
			continue
		}
		id := KeyspaceID(k)
		if got := hex.EncodeToString(id[:]); got != tc.keyspace {
			t.Errorf("%s(%v): keyspace id %s, want %s", tc.ix, tc.value, got, tc.keyspace)
		}
	}
}
