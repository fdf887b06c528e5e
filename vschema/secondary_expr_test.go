package vschema

import (
	"testing"

	"github.com/shardgate/shardgate/topology"
)

// TestExpressionSecondaryIndex: an index on lower(email) has a lookup
// table with the value column "value", computes its value in the owner's
// SQL (qualified or not), names itself lower(email) in messages and
// depends on email only.
func TestExpressionSecondaryIndex(t *testing.T) {
	topo, err := topology.Parse("t.yaml", []byte(`version: 1
clusters:
  pg0: { dsn: "postgres://localhost/a" }
groups:
  main: { unsharded: true, cluster: pg0 }
  g:
    index: { column: customer_id, type: bigint, function: xxhash }
    shards: { "-": pg0 }
    tables: { users: {} }
    secondary_indexes:
      users_by_email: { table: users, expression: "LOWER( email )", type: text, unique: true }
`))
	if err != nil {
		t.Fatal(err)
	}
	v, err := Build(topo)
	if err != nil {
		t.Fatal(err)
	}
	si := v.SecondaryIndexes()[0]
	if si.Column != ExpressionColumn || si.Lookup.KeyColumn != ExpressionColumn || si.Label() != "lower(email)" ||
		si.Source("") != "lower(email)" || si.Source("u") != "lower(u.email)" || !si.Reads("email") || si.Reads("name") {
		t.Errorf("column %s, lookup key %s, label %s, source %s / %s, reads email %v, name %v", si.Column, si.Lookup.KeyColumn,
			si.Label(), si.Source(""), si.Source("u"), si.Reads("email"), si.Reads("name"))
	}
}
