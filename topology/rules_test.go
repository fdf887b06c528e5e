package topology

import (
	"strings"
	"testing"
)

// header is prepended to group-level cases; their own lines start at 7.
const header = `version: 1
clusters:
  pg0: { dsn: "postgres://h:5432/db" }
  pg1: { dsn: "postgres://h:5433/db" }
groups:
  main: { unsharded: true, cluster: pg0, tables: [settings], sequences: [s1] }
`

// TestRules pins one diagnostic (or a few) per validation rule. Cases
// whose yaml is indented are groups appended to header; the others are
// whole files. Only errors are compared; TestWarnings covers the
// rest.
func TestRules(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want []string
	}{
		{"yaml syntax", "version: 1\nclusters: [\n", []string{`2:1: did not find expected node content`}},
		{"empty file", "", []string{`1:1: empty topology file (expected version: 1, clusters: and groups:)`}},
		{"not a mapping", "- a\n", []string{`1:1: the topology must be a mapping, not a list`}},
		{"version 2", "version: 2\nclusters: {pg0: {dsn: 'postgres://h/db'}}\ngroups: {main: {unsharded: true, cluster: pg0}}\n",
			[]string{`1:10: unsupported version 2 (this shardgate reads version 1)`}},
		{"version string", "version: '1'\nclusters: {pg0: {dsn: 'postgres://h/db'}}\ngroups: {main: {unsharded: true, cluster: pg0}}\n",
			[]string{`1:10: version must be an integer, not "1"`}},
		{"missing sections", "version: 1\n", []string{
			`1:1: the topology needs clusters:`,
			`1:1: the topology needs groups:`}},
		{"unknown top-level key", "version: 1\nclusters: {pg0: {dsn: 'postgres://h/db'}}\ngroups: {main: {unsharded: true, cluster: pg0}}\ngroup: {}\nfoo: 1\n", []string{
			`4:1: unknown key "group" in the topology (did you mean "groups"?)`,
			`5:1: unknown key "foo" in the topology (expected version, clusters, groups, proxy)`}},
		{"duplicate key", "version: 1\nclusters: {pg0: {dsn: 'postgres://h/db'}}\ngroups: {main: {unsharded: true, cluster: pg0}}\nversion: 1\n",
			[]string{`4:1: duplicate key "version" in the topology (first at line 1)`}},
		{"bad dsn", "version: 1\nclusters:\n  a: {dsn: 'mysql://h/db'}\n  b: {dsn: 'postgres://u:pw@h:99999/db'}\n  c: {}\n  d: [x]\ngroups: {main: {unsharded: true, cluster: a}}\n", []string{
			`3:12: invalid dsn "mysql://h/db": expected a postgres:// or postgresql:// URL`,
			`4:12: invalid dsn "postgres://u:xxxxx@h:99999/db": bad port "99999"`,
			`5:3: cluster "c" needs dsn:`,
			`6:6: cluster must be a mapping, not a list`}},
		{"missing main", "version: 1\nclusters: {pg0: {dsn: 'postgres://h/db'}}\ngroups:\n  other: {unsharded: true, cluster: pg0}\n",
			[]string{`3:1: missing main group (every topology needs an unsharded group named main, holding sequences and every table not named elsewhere)`}},
		{"main sharded", "version: 1\nclusters: {pg0: {dsn: 'postgres://h/db'}}\ngroups:\n  main: {cluster: pg0}\n", []string{
			`4:3: group main must be unsharded (add unsharded: true)`,
			`4:3: sharded group "main" (or set unsharded: true) needs index:`,
			`4:3: sharded group "main" needs shards:`,
			`4:10: cluster: is only for unsharded groups; a sharded group places its shards with shards:`}},
		{"unsharded group keys", `  legacy:
    unsharded: yes
    index: {}
    sequences: [s2]
    tables: {a: {}}
`, []string{
			`8:16: unsharded must be true or false, not "yes"`}},
		{"unsharded group with index", `  legacy:
    unsharded: true
    cluster: pg1
    index: { column: a, type: bigint, function: xxhash }
    sequences: [s2]
    tables: {a: {}}
`, []string{
			`10:5: index: is not allowed in an unsharded group`,
			`11:5: sequences: belong to the main group, not to group "legacy"`,
			`12:13: tables of an unsharded group must be a list, not a mapping`}},
		{"unknown cluster", `  g:
    index: { column: id, type: bigint, function: xxhash }
    shards: { "-": pgx }
`, []string{`9:20: unknown cluster "pgx" (defined: pg0, pg1)`}},
		{"bad key ranges", `  g:
    index: { column: id, type: bigint, function: xxhash }
    shards:
      "-8": pg0
      "8g-": pg0
      "80": pg0
      "-80-c0": pg0
      "c0-40": pg0
      "-": pg1
`, []string{
			`10:7: invalid key range "-8": "8" is not a whole number of bytes (use an even number of hex digits)`,
			`11:7: invalid key range "8g-": "8g" is not hex`,
			`12:7: invalid key range "80": expected start-end in hex, such as "-80", "80-c0" or "c0-"`,
			`13:7: invalid key range "-80-c0": expected start-end in hex, such as "-80", "80-c0" or "c0-"`,
			`14:7: key range "c0-40" is empty: its start is not below its end`}},
		{"key range gaps", `  g:
    index: { column: id, type: bigint, function: xxhash }
    shards:
      "40-80": pg0
      "c0-e0": pg1
`, []string{
			`10:7: key ranges leave a gap between the start of the keyspace and 40`,
			`11:7: key ranges leave a gap between 80 and c0`,
			`11:7: key ranges leave a gap between e0 and the end of the keyspace`}},
		{"key range overlaps", `  g:
    index: { column: id, type: bigint, function: xxhash }
    shards:
      "-80": pg0
      "40-c0": pg1
      "c0-": pg0
      "8000-": pg1
`, []string{
			`11:7: key range "40-c0" overlaps "-80" between 40 and 80`,
			`12:7: key range "c0-" overlaps "8000-" between c0 and the end of the keyspace`,
			`13:7: key range "8000-" overlaps "40-c0" between 8000 and c0`}},
		{"xxhash shards as list", `  g:
    index: { column: id, type: bigint, function: xxhash }
    shards: [pg0, pg1]
`, []string{`9:13: shards of an xxhash index must be a mapping of key ranges to clusters, such as "-80": pg0`}},
		{"no shards", `  g:
    index: { column: id, type: bigint, function: xxhash }
    shards: {}
`, []string{`9:5: group "g" needs at least one shard`}},
		{"range problems", `  g:
    index: { column: id, type: smallint, function: range }
    shards:
      - { from: 0, to: 100, cluster: pg0 }
      - { from: 150, to: 200, cluster: pg1 }
      - { from: 180, to: 300, cluster: pg0 }
      - { from: 50, to: 60, cluster: pg0 }
      - { to: 400, cluster: pg0 }
      - { from: 400, cluster: pg0 }
      - { from: 500, to: 500, cluster: pg0 }
      - { from: 600, to: 40000, cluster: pg1 }
`, []string{
			`11:9: ranges leave a gap between 100 and 150`,
			`12:9: range "180-300" overlaps "150-200" between 180 and 200`,
			`13:9: range "50-60" comes after "180-300": ranges must be sorted by from`,
			`14:9: only the first range may omit from:`,
			`15:9: only the last range may omit to:`,
			`16:9: range "500-500" is empty: from must be below to`,
			`17:9: ranges leave a gap between 500 and 600`,
			`17:26: to: 40000 is out of range for type smallint`}},
		{"range needs integers", `  g:
    index: { column: id, type: text, function: range }
    shards: [{ cluster: pg0 }]
  h:
    index: { column: id, type: uuid, function: modulo }
    shards: [pg0]
`, []string{
			`8:48: function range needs an integer key type (bigint, integer or smallint), not text`,
			`11:48: function modulo needs an integer key type (bigint, integer or smallint), not uuid`}},
		{"range shard keys", `  g:
    index: { column: id, type: bigint, function: range }
    shards:
      - { from: 0, to: '10', clustr: pg0 }
`, []string{
			`10:24: to must be an integer, not "10"`,
			`10:30: unknown key "clustr" in range shard (did you mean "cluster"?)`}},
		{"shard_key_update value", `  g:
    index: { column: id, type: bigint, function: xxhash }
    shards: { "-": pg0 }
    tables:
      t: { shard_key_update: move }
`, []string{`11:30: unknown shard_key_update "move" (expected refuse or move_row)`}},
		{"modulo unknown cluster", `  g:
    index: { column: id, type: bigint, function: modulo }
    shards: [pg0, pg7]
`, []string{`9:19: unknown cluster "pg7" (defined: pg0, pg1)`}},
		{"column and expression", `  g:
    index: { column: id, expression: "lower(id)", type: text, function: xxhash }
    shards: { "-": pg0 }
  h:
    index: { type: text, function: xxhash }
    shards: { "-": pg1 }
`, []string{
			`8:26: index has both column: and expression:; set exactly one`,
			`11:12: index needs column: or expression:`}},
		{"bad type and function", `  g:
    index: { column: id, type: numeric, function: xxhas }
    shards: { "-": pg0 }
  h:
    index: { column: id, type: BIGINT, function: hash }
    shards: { "-": pg1 }
`, []string{
			`8:32: unknown type "numeric" (expected bigint, integer, smallint, text, varchar or uuid)`,
			`8:51: unknown function "xxhas" (did you mean "xxhash"?)`,
			`11:50: unknown function "hash" (did you mean "xxhash"?)`}},
		{"missing index fields", `  g:
    index: { column: id }
    shards: { "-": pg0 }
`, []string{
			`8:12: index needs type:`,
			`8:12: index needs function:`}},
		{"expression errors", `  g:
    index: { expression: "lower(sku) + 1", type: text, function: xxhash }
    shards: { "-": pg0 }
  h:
    index:
      expression: |
        upper(md5(sku))
      type: text
      function: xxhash
    shards: { "-": pg1 }
  i:
    index: { expression: "lower(", type: text, function: xxhash }
    shards: { "-": pg1 }
  j:
    index: { expression: 'lower(sku) || ''x'' || md5(sku)', type: text, function: xxhash }
    shards: { "-": pg1 }
  k:
    index: { expression: 'md5(sku) || ''x''', type: text, function: xxhash }
    shards: { "-": pg1 }
  l:
    index: { expression: lower(sku) || sha256(sku), type: text, function: xxhash }
    shards: { "-": pg1 }
  m:
    index: { expression: 42, type: bigint, function: xxhash }
    shards: { "-": pg1 }
`, []string{
			`8:38: unsupported operator "+" in index expression (supported: lower, upper, left, right, substr, substring, btrim, trim, casts, ||)`,
			`12:19: unsupported function "md5" in index expression (supported: lower, upper, left, right, substr, substring, btrim, trim, casts, ||)`,
			`18:33: invalid index expression: syntax error at end of input`,
			`21:26: unsupported function "md5" in index expression (supported: lower, upper, left, right, substr, substring, btrim, trim, casts, ||)`,
			`24:27: unsupported function "md5" in index expression (supported: lower, upper, left, right, substr, substring, btrim, trim, casts, ||)`,
			`27:40: unsupported function "sha256" in index expression (supported: lower, upper, left, right, substr, substring, btrim, trim, casts, ||)`,
			`30:26: index expression 42 reads no column, so every row would have the same key`}},
		{"table in two groups", `  g:
    index: { column: id, type: bigint, function: xxhash }
    shards: { "-": pg0 }
    tables: { orders: {}, Orders: {}, items: {}, settings: {} }
    reference: [countries, items]
  h:
    index: { column: id, type: bigint, function: xxhash }
    shards: { "-": pg1 }
    tables: { public.orders: {} }
    reference: [countries, '"Countries"']
`, []string{
			`10:27: table public.orders is listed twice in group "g" (first at line 10)`,
			`10:50: table public.settings is already in group "main" (line 6); a table belongs to one group`,
			`11:28: table public.items is both a member and a reference table of group "g" (line 10)`,
			`15:15: table public.orders is already in group "g" (line 10); a table belongs to one group`,
			`16:17: reference table public.countries is already a reference table of group "g" (line 11); a reference table belongs to one group`}},
		{"main table elsewhere", `  g:
    index: { column: id, type: bigint, function: xxhash }
    shards: { "-": pg0 }
    reference: [settings]
`, []string{`10:17: table public.settings is already in group "main" (line 6); a table belongs to one group`}},
		{"bad names", `  g:
    index: { column: "1d", type: bigint, function: xxhash }
    shards: { "-": pg0 }
    tables: { "a.b.c": {}, "my table": {}, '"Quoted"': {} }
`, []string{
			`8:22: invalid name "1d": "1d" is not an identifier (quote it with double quotes)`,
			`10:15: invalid name "a.b.c": expected name or schema.name`,
			`10:28: invalid name "my table": "my table" is not an identifier (quote it with double quotes)`}},
		{"secondary indexes", `  g:
    index: { column: id, type: bigint, function: xxhash }
    shards: { "-": pg0 }
    tables: { orders: {} }
    secondary_indexes:
      by_email: { table: customers, column: email, type: text }
      by_id: { table: orders, column: id, type: bigint, state: building }
      by_x: { table: orders }
      by_y: { table: orders, columns: [a, b], type: text, unique: maybe }
      by_z: { table: orders, expression: "lower(x)", type: text }
      orders: { table: orders, column: note, type: text, ignore_nulls: false }
`, []string{
			`12:26: secondary index "by_email" names table public.customers, which is not a member table of group "g"`,
			`13:64: unknown state "building" (expected backfilling or active)`,
			`14:7: secondary index "by_x" needs column: (or expression:)`,
			`14:7: secondary index "by_x" needs type:`,
			`15:67: unique must be true or false, not "maybe"`,
			`17:7: secondary index "orders" would create its lookup table public.orders, which group "g" already names (line 10)`}},
		{"secondary index expressions", `  g:
    index: { column: customer_id, type: bigint, function: xxhash }
    shards: { "-": pg0 }
    tables: { orders: {} }
    secondary_indexes:
      by_a: { table: orders, column: a, expression: "lower(a)", type: text }
      by_b: { table: orders, expression: "lower(", type: text }
      by_c: { table: orders, expression: "lower('x')", type: text }
      by_d: { table: orders, expression: "lower(email)", type: text, unique: true }
`, []string{
			`12:41: secondary index "by_a" has both column: and expression:; give one`,
			`13:49: invalid index expression: syntax error at end of input`,
			`14:42: index expression lower('x') reads no column, so every row would have the same value`}},
		{"secondary index columns", `  g:
    index: { column: customer_id, type: bigint, function: xxhash }
    shards: { "-": pg0 }
    tables: { orders: {} }
    secondary_indexes:
      by_a: { table: orders, columns: [a], type: text }
      by_b: { table: orders, columns: [a, b], column: a, type: text }
      by_c: { table: orders, columns: [a, a], type: text }
      by_d: { table: orders, columns: [a, b], type: [text] }
      by_e: { table: orders, columns: [a, b], type: [text, blob] }
      by_f: { table: orders, column: a, type: [text, text] }
      by_g: { table: orders, columns: [a, b], type: [bigint, uuid], unique: true }
`, []string{
			`12:39: secondary index "by_a": columns: needs two or more columns (one column: use column:)`,
			`13:30: secondary index "by_b" has columns: and column: or expression:; give one`,
			`14:43: secondary index "by_c": column a is listed twice`,
			`15:53: secondary index "by_d": 1 types for 2 columns; give one type per column, or one for all`,
			`16:60: unknown type "blob" (expected bigint, integer, smallint, text, varchar or uuid)`,
			`17:47: secondary index "by_f": a list of types needs columns: (one per column)`}},
		{"secondary index on a range group", `  g:
    index: { column: id, type: bigint, function: range }
    shards: [{ from: 0, to: 100, cluster: pg0 }]
    tables: { orders: {} }
    secondary_indexes: { by_x: { table: orders, column: x, type: text } }
`, []string{
			`11:5: secondary_indexes: need a group sharded by xxhash (their lookup tables share its shards); group "g" uses range`}},
		{"sequences", `  g:
    index: { expression: "lower(sku)", type: text, function: xxhash }
    shards: { "-": pg0 }
    sequences: [s1]
    tables:
      a: { sequence: { column: id, name: s1 } }
      b: { sequence: { column: id, name: s9 } }
      c: { sequence: { name: s1 } }
      d: { column: x }
`, []string{
			`10:5: sequences: belong to the main group, not to group "g"`,
			`13:42: sequence public.s9 is not listed in the main group's sequences:`,
			`14:22: sequence needs column:`,
			`15:12: column: applies only to a column index; index "g" is an expression`}},
		{"duplicate names", `  g:
    index: { name: same, column: id, type: bigint, function: xxhash }
    shards: { "-": pg0 }
    tables: { a: {} }
    secondary_indexes: { gsi: { table: a, column: x, type: text } }
  h:
    index: { name: same, column: id, type: bigint, function: xxhash }
    shards: { "-": pg1 }
    tables: { b: {} }
    secondary_indexes: { gsi: { table: b, column: x, type: text } }
`, []string{
			`13:12: index name "same" is already used by group "g"`,
			`16:26: secondary index name "gsi" is already used in group "g"`}},
		{"wrong kinds", `  g:
    index: by_id
    shards: { "-": [pg0] }
    tables: [a]
    reference: a
`, []string{
			`8:12: index must be a mapping, not "by_id"`,
			`10:13: tables of a sharded group must be a mapping, not a list`,
			`11:16: reference must be a list, not "a"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := tc.yaml
			if strings.HasPrefix(src, "  ") {
				src = header + src
			}
			checkErrors(t, src, tc.want)
		})
	}
}
